import type { Context } from 'koa';
import type { Db } from '../db/database.js';
import type { User, Workspace } from '../accounts.js';
import { randomToken, sha256 } from '../crypto.js';
import { batchedLookup } from '../db/batched.js';
import { preparedQuery } from '../db/prepared.js';
import type { ResolvedSession, SessionCache } from './session-cache.js';
import { authChanged } from '../workspaces/auth-changes.js';

export const SESSION_COOKIE = 'quoting_session';
export const SESSION_DAYS = 14;
const SESSION_MS = SESSION_DAYS * 24 * 60 * 60 * 1000;

/** Creates a session for the user and returns its token; only the token's hash is stored. */
export async function createSession(db: Db, userId: number): Promise<string> {
  const token = randomToken(32);
  await db('sessions').insert({ token_hash: sha256(token), user_id: userId, expires_at: new Date(Date.now() + SESSION_MS) });
  return token;
}

/**
 * The session of a cookie token: from the cache, or read with the other misses of the moment (one query
 * for their sessions, users and workspaces). What was read is cached only if nothing was evicted while it
 * was being read: the read may have seen the session before a logout or a revocation that committed then.
 */
export async function resolveSession(db: Db, token: string | undefined, cache?: SessionCache): Promise<ResolvedSession | null> {
  if (!token || token.length > 200) return null;
  const tokenHash = sha256(token);
  const cached = cache?.get(tokenHash);
  if (cached) return cached;
  const readAt = cache?.generation ?? 0;
  const session = (await loadSession(db, tokenHash)) ?? null;
  if (session) cache?.set(tokenHash, session, readAt);
  return session;
}

/**
 * One statement through the unique token_hash index for a batch of tokens, prepared once per connection (every batch of
 * cache misses runs it). Expiry is checked against the statement's time, not now(): on the embedded database a read
 * may run inside another session's open transaction (db/pglite-worker.ts), whose now() is when that one began.
 */
const sessionsByTokenHash = preparedQuery<SessionRow>('quoting_sessions_by_token_hashes', `
  /* all workspaces: a session is found by its token, and gives its workspace */
  select s.token_hash, s.id as session_id, s.expires_at,
         u.id as user_id, u.email, u.name as user_name, u.workspace_id, u.role, u.created_at as user_created_at, u.updated_at as user_updated_at,
         w.name as ws_name, w.slug, w.status, w.trial_ends_at, w.public_key, w.time_zone, w.created_at as ws_created_at, w.updated_at as ws_updated_at
  from sessions s join users u on u.id = s.user_id left join workspaces w on w.id = u.workspace_id
  where s.token_hash = any(:hashes::text[]) and s.expires_at > statement_timestamp()`);

interface SessionRow {
  token_hash: string;
  session_id: number;
  expires_at: Date;
  user_id: number;
  email: string;
  user_name: string;
  workspace_id: number | null;
  role: User['role'];
  user_created_at: Date;
  user_updated_at: Date;
  ws_name: string;
  slug: string;
  status: Workspace['status'];
  trial_ends_at: Date | null;
  public_key: string;
  time_zone: string | null;
  ws_created_at: Date;
  ws_updated_at: Date;
}

/** Concurrent cache misses share one query (see db/batched.ts); each gets the row of its own token hash. */
const loadSession = batchedLookup(async (db, tokenHashes) => {
  const sessions = new Map<string, ResolvedSession>();
  for (const row of await sessionsByTokenHash(db, { hashes: tokenHashes })) sessions.set(row.token_hash, sessionOf(row));
  return sessions;
});

function sessionOf(row: SessionRow): ResolvedSession {
  return {
    id: row.session_id,
    expiresAt: row.expires_at,
    user: serialisedOnce({
      id: row.user_id,
      email: row.email,
      name: row.user_name,
      workspace_id: row.workspace_id,
      role: row.role,
      created_at: row.user_created_at,
      updated_at: row.user_updated_at,
    }),
    workspace:
      row.workspace_id === null
        ? null
        : serialisedOnce({
            id: row.workspace_id,
            name: row.ws_name,
            slug: row.slug,
            status: row.status,
            trial_ends_at: row.trial_ends_at,
            public_key: row.public_key,
            time_zone: row.time_zone,
            created_at: row.ws_created_at,
            updated_at: row.ws_updated_at,
          }),
  };
}

/**
 * A cached session's user and workspace are answered as they are on many requests (`/auth/me`): their
 * JSON form is made on the first, and reused (`JSON.stringify` of the four dates is most of the cost of
 * serialising that answer). They are frozen, so that form cannot go stale.
 */
function serialisedOnce<T extends object>(value: T): T {
  let json: Record<string, unknown> | undefined;
  Object.defineProperty(value, 'toJSON', { value: () => (json ??= jsonForm(value)) });
  return Object.freeze(value);
}

/** The object as JSON.stringify sees it: dates as their ISO text. */
function jsonForm(value: object): Record<string, unknown> {
  const form: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(value)) form[key] = field instanceof Date ? field.toJSON() : field;
  return form;
}

export async function deleteSession(db: Db, sessionId: number): Promise<void> {
  await db('sessions').where({ id: sessionId }).delete();
  await authChanged(db, { sessionId });
}

export async function deleteUserSessions(db: Db, userId: number): Promise<void> {
  await db('sessions').where({ user_id: userId }).delete();
  await authChanged(db, { userId });
}

/** How many other live sessions the user has (other browsers, other devices). */
export async function otherSessionCount(db: Db, userId: number, sessionId: number): Promise<number> {
  const row = await db('sessions').where({ user_id: userId }).whereNot({ id: sessionId }).where('expires_at', '>', db.raw('statement_timestamp()')).first(db.raw('count(*)::int as n'));
  return (row as { n: number }).n;
}

/** Signs the user out everywhere but here (`sessionId`); returns how many sessions ended. */
export async function endOtherSessions(db: Db, userId: number, sessionId: number): Promise<number> {
  const ended = await db('sessions').where({ user_id: userId }).whereNot({ id: sessionId }).delete().returning('id');
  await authChanged(db, { userId });
  return ended.length;
}

/** HttpOnly, SameSite=Lax, 14 days; Secure when the request came over HTTPS (also behind a trusted proxy). */
export function setSessionCookie(ctx: Context, token: string): void {
  ctx.cookies.set(SESSION_COOKIE, token, {
    httpOnly: true,
    sameSite: 'lax',
    secure: ctx.secure,
    maxAge: SESSION_MS,
    path: '/',
    overwrite: true,
  });
}

export function clearSessionCookie(ctx: Context): void {
  ctx.cookies.set(SESSION_COOKIE, null, { httpOnly: true, sameSite: 'lax', secure: ctx.secure, path: '/', overwrite: true });
}
