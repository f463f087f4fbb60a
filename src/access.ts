/**
 * Who is acting, for whom: the one caller identity every service takes as `(db, access, ...)`.
 * The HTTP authenticator builds it from a session or a key, the CLI with `systemAccess()`, the
 * public quote page with `customerAccess()`. It is a plain value, so services never see HTTP.
 */
export interface Access {
  readonly workspaceId: number;
  /** The signed-in user, or null for keys, the public page and the CLI. */
  readonly userId: number | null;
  readonly role: 'owner' | 'member' | null;
  /** How the caller proved itself. */
  readonly via: 'session' | 'public' | 'secret' | 'page' | 'system';
  /** Who activities name: a user, the customer on the public page, a backend's secret key, the system. */
  readonly actor: 'user' | 'customer' | 'api' | 'system';
  /**
   * Which channels' records the caller sees: `all` (owners, secret keys, the system) or only the
   * channels the user holds a role on (`roles`, members; records with no channel are open to them).
   */
  readonly channels: 'all' | 'roles';
  /** WEBHOOKS_ENABLED, decided by whoever built the value: whether this caller's writes reach the outbox. */
  readonly events: boolean;
}

export type Actor = Access['actor'];

/** The CLI and in-process jobs: the whole workspace, actor `system`. */
export function systemAccess(workspaceId: number, options: { events: boolean }): Access {
  return { workspaceId, userId: null, role: null, via: 'system', actor: 'system', channels: 'all', events: options.events };
}

/** The customer holding a quote's public link: the quote's workspace, actor `customer`. */
export function customerAccess(workspaceId: number, options: { events: boolean }): Access {
  return { workspaceId, userId: null, role: null, via: 'page', actor: 'customer', channels: 'all', events: options.events };
}

/** The user behind an access that needs one (channel roles); keys and the system have none. */
export function userOf(access: Access): number {
  if (access.userId === null) throw new Error(`an access via ${access.via} has no user`);
  return access.userId;
}
