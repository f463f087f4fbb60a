import { Conflict, Unauthorized } from '../errors.js';
import type { Role, User, Workspace } from '../accounts.js';
import type { Access } from '../access.js';

/**
 * How an endpoint is authenticated:
 * - `none`: open.
 * - `session:any`: any valid session (logout), even of a locked workspace.
 * - `session:user`: a signed-in user, with or without a workspace.
 * - `session`: a signed-in user of a workspace; `session:owner` also requires the owner role.
 * - `public`: `Authorization: Public <pk_live_…>`; `public|query` also accepts `?key=`.
 * - `secret`: `Authorization: Bearer <sk_live_…>`.
 * - `key`: either of the two header forms, each with its own kind of key.
 * - `migrate`, `admin`: the ops credentials.
 */
export type AuthKind =
  | 'none'
  | 'session:any'
  | 'session:user'
  | 'session'
  | 'session:owner'
  | 'public'
  | 'public|query'
  | 'secret'
  | 'key'
  | 'migrate'
  | 'admin';

/** The caller of an endpoint as the authenticator (src/server/authenticate.ts) resolved it; handlers get it as `auth`. */
export class Principal {
  constructor(
    private readonly _user: User | null,
    private readonly _workspace: Workspace | null,
    readonly sessionId: number | null = null,
    /** Which key authenticated the call, for key-authenticated endpoints. */
    readonly keyType: 'public' | 'secret' | null = null,
    /** WEBHOOKS_ENABLED, carried into the access value services receive. */
    private readonly events = true,
  ) {}

  static readonly anonymous = new Principal(null, null);

  private _access?: Access;

  /** The caller as services see it (409 without a workspace). */
  get access(): Access {
    if (this._access) return this._access;
    const workspaceId = this.workspace.id;
    const role = this._user?.role ?? null;
    const via = this.keyType ?? 'session';
    this._access = {
      workspaceId,
      userId: this._user?.id ?? null,
      role,
      via,
      actor: via === 'session' ? 'user' : 'api',
      channels: via === 'session' && role !== 'owner' ? 'roles' : 'all',
      events: this.events,
    };
    return this._access;
  }

  get user(): User {
    if (!this._user) throw new Unauthorized();
    return this._user;
  }

  get workspace(): Workspace {
    if (!this._workspace) throw new Conflict('No workspace yet.');
    return this._workspace;
  }

  get maybeWorkspace(): Workspace | null {
    return this._workspace;
  }

  get role(): Role | null {
    return this._user?.role ?? null;
  }
}
