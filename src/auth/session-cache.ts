import type { Database } from '../db/database.js';
import type { User, Workspace } from '../accounts.js';
import { AUTH_CHANNEL, hearAuthChanges, type AuthScope } from '../workspaces/auth-changes.js';

/** A session as a request resolves it: who, in which workspace, until when. */
export interface ResolvedSession {
  id: number;
  expiresAt: Date;
  user: User;
  workspace: Workspace | null;
}

/**
 * Resolved sessions by token hash, and workspaces by the hash of their public key, so that an
 * authenticated request (a session, or a browser event with the public key) needs no database round
 * trip. The service that changes a session, a user or a workspace (its keys, its status) calls
 * `authChanged` (workspaces/auth-changes.ts): once the change commits, the entry goes in this process,
 * and a NOTIFY evicts it in every other server process. The TTL is the backstop for a process that
 * missed a notification.
 */
export class SessionCache {
  private readonly entries = new Map<string, { session: ResolvedSession; until: number }>();
  private readonly publicKeys = new Map<string, { workspace: Workspace; until: number }>();
  /**
   * Counts evictions. A session or public key read from the database before an eviction is not cached
   * after it: the read may have seen it as it was before the change (a logout or a rotation committing
   * while it ran).
   */
  private evictions = 0;
  /** Set while changes from other processes cannot be heard: nothing is cached or served from cache. */
  bypass = false;

  constructor(
    private readonly ttlMs = 30_000,
    private readonly maxEntries = 10_000,
  ) {}

  get(tokenHash: string): ResolvedSession | undefined {
    const entry = this.bypass ? undefined : this.entries.get(tokenHash);
    if (!entry) return undefined;
    const now = Date.now();
    if (entry.until <= now || entry.session.expiresAt.getTime() <= now) {
      this.entries.delete(tokenHash);
      return undefined;
    }
    return entry.session;
  }

  /** Taken before reading from the database, and given back to `set` or `setWorkspaceOfKey`. */
  get generation(): number {
    return this.evictions;
  }

  /** Caches what the database said of the session, unless something was evicted since `readAt`. */
  set(tokenHash: string, session: ResolvedSession, readAt: number): void {
    if (this.ttlMs <= 0 || this.bypass || readAt !== this.evictions) return;
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(tokenHash, { session, until: Date.now() + this.ttlMs });
  }

  /** The workspace of a public key (by the key's hash), while cached. */
  workspaceOfKey(keyHash: string): Workspace | undefined {
    const entry = this.bypass ? undefined : this.publicKeys.get(keyHash);
    if (!entry) return undefined;
    if (entry.until <= Date.now()) {
      this.publicKeys.delete(keyHash);
      return undefined;
    }
    return entry.workspace;
  }

  /** Caches what the database said of the key, unless something was evicted since `readAt`. */
  setWorkspaceOfKey(keyHash: string, workspace: Workspace, readAt: number): void {
    if (this.ttlMs <= 0 || this.bypass || readAt !== this.evictions) return;
    if (this.publicKeys.size >= this.maxEntries) this.publicKeys.delete(this.publicKeys.keys().next().value!);
    this.publicKeys.set(keyHash, { workspace, until: Date.now() + this.ttlMs });
  }

  evict(scope: AuthScope): void {
    this.evictions++;
    if (scope === 'all' || 'workspaceId' in scope) {
      for (const [hash, { workspace }] of this.publicKeys) if (scope === 'all' || workspace.id === scope.workspaceId) this.publicKeys.delete(hash);
    }
    if (scope === 'all') return this.entries.clear();
    for (const [hash, { session }] of this.entries) {
      if (
        ('sessionId' in scope && session.id === scope.sessionId) ||
        ('userId' in scope && session.user.id === scope.userId) ||
        ('workspaceId' in scope && session.workspace?.id === scope.workspaceId)
      ) {
        this.entries.delete(hash);
      }
    }
  }
}

/**
 * How long a resolved session is served from cache without reading the database again, at most. Where other
 * processes' changes cannot be heard (behind a transaction pooler without DATABASE_LISTEN_URL), every cached entry is
 * re-read once this old: a logout or key rotation made elsewhere takes effect here within that bound.
 */
export const UNHEARD_SESSION_CACHE_SECONDS = 5;

export function sessionCacheSeconds(config: { SESSION_CACHE_SECONDS: number }, database: Pick<Database, 'hears'>): number {
  return database.hears ? config.SESSION_CACHE_SECONDS : Math.min(config.SESSION_CACHE_SECONDS, UNHEARD_SESSION_CACHE_SECONDS);
}

/** Evicts what this process's own changes make stale, as they commit; returns the way to stop. */
export function followOwnAuthChanges(cache: SessionCache): () => void {
  return hearAuthChanges((scope) => cache.evict(scope));
}

/**
 * Evicts what changes make stale: this process's own, and those other processes announce by NOTIFY.
 * While the listening connection is down, the cache is emptied and bypassed, so nothing stale is served.
 */
export function listenForAuthChanges(database: Database, cache: SessionCache): () => Promise<void> {
  const stopFollowing = followOwnAuthChanges(cache);
  // Nothing to hear: the cache's shorter lifetime (sessionCacheSeconds) is the bound instead.
  if (!database.hears) return async () => stopFollowing();
  const stopListening = database.listen(
    AUTH_CHANNEL,
    (payload) => {
      try {
        cache.evict(JSON.parse(payload || '"all"') as AuthScope);
      } catch {
        cache.evict('all');
      }
    },
    (up) => {
      cache.bypass = !up;
      if (!up) cache.evict('all');
    },
  );
  return async () => {
    stopFollowing();
    await stopListening();
  };
}
