import type { Context } from 'koa';
import type { Knex } from 'knex';
import { Conflict, Forbidden, PaymentRequired, Unauthorized } from '../errors.js';
import { lockReason } from '../workspaces/model.js';
import type { Workspace } from '../accounts.js';
import { resolveSession, SESSION_COOKIE } from '../auth/sessions.js';
import { findByPublicKey, findBySecretKey } from '../workspaces/service.js';
import { safeEqual, sha256 } from '../crypto.js';
import type { Config } from '../config.js';
import type { SessionCache } from '../auth/session-cache.js';
import { Principal, type AuthKind } from '../http/principal.js';
import { assertSameSite } from '../http/same-site.js';

/** Resolves an endpoint's auth kind to the caller: a session from the cookie, a key from Authorization, or an ops credential. */
export function authenticator(db: Knex, config: Config, sessionCache: SessionCache | null = null) {
  const appOrigin = new URL(config.APP_URL).origin;
  return async function authenticate(ctx: Context, kind: AuthKind): Promise<Principal> {
    switch (kind) {
      case 'none':
        return Principal.anonymous;
      case 'session:any':
      case 'session:user':
      case 'session':
      case 'session:owner': {
        assertSameSite(ctx, appOrigin);
        const session = await resolveSession(db, sessionCookie(ctx), sessionCache ?? undefined);
        if (!session) throw new Unauthorized('Not signed in.');
        const principal = new Principal(session.user, session.workspace, session.id, null, config.WEBHOOKS_ENABLED);
        if (kind === 'session:any') return principal;
        if (kind !== 'session:user' && !session.workspace) throw new Conflict('No workspace yet.');
        assertUnlocked(session.workspace);
        if (kind === 'session:owner' && principal.role !== 'owner') throw new Forbidden('Only a workspace owner may do this.');
        return principal;
      }
      case 'public':
      case 'public|query': {
        const key = credentialOf(ctx, 'Public') ?? (kind === 'public|query' && !ctx.get('authorization') ? queryKey(ctx) : undefined);
        if (!key) throw new Unauthorized('A public key is required: send "Authorization: Public <key>".');
        return keyPrincipal(db, config, 'Public', key, sessionCache);
      }
      case 'secret': {
        const key = credentialOf(ctx, 'Bearer');
        if (!key) throw new Unauthorized('A secret key is required: send "Authorization: Bearer <key>".');
        return keyPrincipal(db, config, 'Bearer', key);
      }
      case 'key': {
        const scheme = /^\s*public\b/i.test(ctx.get('authorization')) ? 'Public' : 'Bearer';
        const key = credentialOf(ctx, scheme);
        if (!key) throw new Unauthorized('A key is required: send "Authorization: Public <public key>" or "Authorization: Bearer <secret key>".');
        return keyPrincipal(db, config, scheme, key, sessionCache);
      }
      case 'migrate':
        checkOpsCredential(config.MIGRATE_TOKEN, ctx.get('x-migrate-token') || queryString(ctx, 'token'), 'MIGRATE_TOKEN', 'migrate token');
        return Principal.anonymous;
      case 'admin':
        checkOpsCredential(config.ADMIN_API_KEY, ctx.get('x-admin-key') || queryString(ctx, 'key'), 'ADMIN_API_KEY', 'admin key');
        return Principal.anonymous;
    }
  };
}

/** `Public` takes only a pk_live_ key and `Bearer` only an sk_live_ key: mixing them up is 401. */
async function keyPrincipal(db: Knex, config: Config, scheme: 'Public' | 'Bearer', key: string, cache: SessionCache | null = null): Promise<Principal> {
  const isPublic = scheme === 'Public';
  const workspace = isPublic
    ? key.startsWith('pk_live_') ? await workspaceOfPublicKey(db, key, cache) : null
    : key.startsWith('sk_live_') ? await findBySecretKey(db, key) : null;
  if (!workspace) throw new Unauthorized(isPublic ? 'Invalid public key.' : 'Invalid secret key.');
  assertUnlocked(workspace);
  return new Principal(null, workspace, null, isPublic ? 'public' : 'secret', config.WEBHOOKS_ENABLED);
}

/**
 * The workspace of a public key: from the cache, or from the database (then cached). Every browser event
 * carries the public key, so this spares ingest a round trip; a rotation, suspension or reactivation
 * evicts the entry in every process (`authChanged`). The map is keyed by the key's hash, so looking a
 * guess up compares no key text. Unknown keys are not cached: each costs its query.
 */
async function workspaceOfPublicKey(db: Knex, key: string, cache: SessionCache | null): Promise<Workspace | null> {
  if (!cache) return findByPublicKey(db, key);
  const hash = sha256(key);
  const cached = cache.workspaceOfKey(hash);
  if (cached) return cached;
  const readAt = cache.generation;
  const workspace = await findByPublicKey(db, key);
  if (workspace) cache.setWorkspaceOfKey(hash, workspace, readAt);
  return workspace;
}

const SESSION_COOKIE_VALUE = new RegExp(`(?:^|;) *${SESSION_COOKIE}=([^;]*)`);

/**
 * The session cookie's value, read from the Cookie header as koa's `ctx.cookies.get()` reads it (the same
 * pattern; a quoted value unquoted), without building koa's Cookies object on every authenticated request.
 */
function sessionCookie(ctx: Context): string | undefined {
  const value = SESSION_COOKIE_VALUE.exec(ctx.headers.cookie ?? '')?.[1];
  return value?.[0] === '"' ? value.slice(1, -1) : value;
}

function assertUnlocked(workspace: Workspace | null): void {
  const reason = workspace && lockReason(workspace);
  if (reason) throw new PaymentRequired(`${reason} The workspace is locked.`);
}

/** The credential after `scheme` in the Authorization header; another scheme (the prefixes mixed up) is 401. */
function credentialOf(ctx: Context, scheme: 'Public' | 'Bearer'): string | undefined {
  const header = ctx.get('authorization').trim();
  if (!header) return undefined;
  const [given, credential] = header.split(/\s+/, 2);
  if (given.toLowerCase() !== scheme.toLowerCase() || !credential) {
    throw new Unauthorized(`Wrong authorization scheme: this endpoint takes "Authorization: ${scheme} <key>".`);
  }
  return credential;
}

function queryKey(ctx: Context): string | undefined {
  return queryString(ctx, 'key') || undefined;
}

function queryString(ctx: Context, name: string): string {
  const value = ctx.query[name];
  return typeof value === 'string' ? value : '';
}

function checkOpsCredential(expected: string | undefined, given: string, variable: string, what: string): void {
  if (!expected) throw new Forbidden(`This endpoint is disabled: set ${variable} to enable it.`);
  if (!given || !safeEqual(given, expected)) throw new Unauthorized(`Invalid or missing ${what}.`);
}
