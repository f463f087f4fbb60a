/**
 * PGlite in a worker thread (pglite-worker.ts), behind the few methods knex-pglite and the server call:
 * query, exec, listen, dumpDataDir, close. A query on the embedded database then does not hold the
 * server's event loop for its duration (a page of a long list takes a while), so
 * other requests, timers and webhook deliveries run meanwhile.
 *
 * Order is kept: messages on a port arrive in the order sent and the worker hands them to PGlite in that
 * order, which runs them one at a time. knex's connections are sessions over it (PgliteSessions below): one
 * session's transaction at a time, with other sessions' reads run inside it.
 */
import { Worker } from 'node:worker_threads';
import type { Results } from '@electric-sql/pglite';
import { log } from '../log.js';

export interface ThreadOptions {
  /** A directory, or nothing for a database in memory. */
  dataDir?: string;
  /** A data directory as dumpDataDir made it, to start from (tests start from a migrated snapshot). */
  loadDataDir?: Uint8Array<ArrayBuffer>;
}

type Operation =
  | { op: 'query'; sql: string; params?: unknown[]; options?: Record<string, unknown> }
  | { op: 'exec'; sql: string }
  | { op: 'listen'; channel: string; listenId: number }
  | { op: 'unlisten'; listenId: number }
  | { op: 'dump'; compression?: 'auto' | 'gzip' | 'none' }
  | { op: 'close' };

/** A call, answered by a reply with its id; or a list page's reply buffer handed back, unanswered (`giveBackBytes`). */
export type ThreadRequest = ({ id: number } & Operation) | { op: 'reuse'; buffer: ArrayBuffer };

export type WireError = { message: string; name?: string } & Record<string, unknown>;

export type ThreadReply =
  | { type: 'ready' }
  | { type: 'failed'; error: WireError }
  | { type: 'reply'; id: number; ok: true; value: unknown }
  | { type: 'reply'; id: number; ok: false; error: WireError }
  | { type: 'notify'; listenId: number; payload: string };

/** The database's own error, with the fields callers read (code, constraint, detail, …). */
function fromWire(error: WireError): Error {
  const err = new Error(error.message);
  Object.assign(err, error);
  return err;
}

export class PgliteThread {
  closed = false;
  readonly waitReady: Promise<void>;
  private readonly worker: Worker;
  private readonly pending = new Map<number, { resolve: (value: unknown) => void; reject: (err: Error) => void }>();
  private readonly listeners = new Map<number, (payload: string) => void>();
  private nextId = 1;
  private started = false;
  private stopped?: Error;

  constructor(options: ThreadOptions = {}) {
    // The .js beside this file: tsc compiles both into the same folder.
    this.worker = new Worker(new URL('./pglite-worker.js', import.meta.url), { workerData: options });
    let ready!: () => void;
    let failed!: (err: Error) => void;
    this.waitReady = new Promise<void>((resolve, reject) => ((ready = resolve), (failed = reject)));
    this.waitReady.catch(() => undefined); // a failed start is reported to whoever awaits it
    this.worker.on('message', (reply: ThreadReply) => {
      if (reply.type === 'ready') return ready();
      if (reply.type === 'failed') return failed(fromWire(reply.error));
      if (reply.type === 'notify') return this.listeners.get(reply.listenId)?.(reply.payload);
      const call = this.pending.get(reply.id);
      if (!call) return;
      this.pending.delete(reply.id);
      this.holdProcess();
      if (reply.ok) call.resolve(reply.value);
      else call.reject(fromWire(reply.error));
    });
    const stop = (err: Error) => {
      if (!this.closed) log.error('the embedded database thread stopped', { error: err.message });
      this.closed = true;
      // The message says "PGlite is closed", which isDatabaseUnavailable (errors.ts) reads as a 503.
      this.stopped ??= new Error(`PGlite is closed (its thread stopped: ${err.message})`);
      failed(this.stopped);
      for (const call of this.pending.values()) call.reject(this.stopped);
      this.pending.clear();
    };
    this.worker.on('error', stop);
    this.worker.on('exit', (code) => stop(new Error(`exit ${code}`)));
    this.holdProcess();
  }

  /**
   * Like PGlite in this thread, an idle database does not keep the process alive; a query under way does.
   * Waiting for the start counts as under way.
   */
  private holdProcess(): void {
    if (this.pending.size > 0 || !this.started) this.worker.ref();
    else this.worker.unref();
  }

  private call<T>(request: Operation): Promise<T> {
    if (this.stopped) return Promise.reject(this.stopped);
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      this.holdProcess();
      this.worker.postMessage({ ...request, id } as ThreadRequest);
    });
  }

  async start(): Promise<this> {
    try {
      await this.waitReady;
    } catch (err) {
      this.closed = true; // the caller reports the failed start
      await this.worker.terminate();
      throw err;
    } finally {
      this.started = true;
      this.holdProcess();
    }
    return this;
  }

  /**
   * PGlite's query(); with the option `textAsBytes: true`, `text` columns arrive as Buffers of their UTF-8 bytes
   * (pglite-wire.ts: for list pages, sent on as they are), and `settings: { name: value }` apply to the statement
   * alone (SET LOCAL, in one round trip: pglite-worker.ts).
   */
  async query<T = Record<string, unknown>>(sql: string, params?: unknown[], options?: Record<string, unknown>): Promise<Results<T>> {
    const result = await this.call<Results<T>>({ op: 'query', sql, params, options });
    if (options?.textAsBytes) for (const row of result.rows as Record<string, unknown>[]) asBuffers(row, this);
    return result;
  }

  /**
   * A connection for knex over this one database (see PgliteSessions): as many as knex's pool asks for, all sharing
   * the thread, one at a time in a transaction.
   */
  session(): PgliteSession {
    return this.sessions.open();
  }

  private readonly sessions = new PgliteSessions(this);

  /** A reply's buffer back to the thread, which reads its next list page into it (pglite-wire.ts ReplySize). */
  reuse(buffer: ArrayBuffer): void {
    if (!this.stopped) this.worker.postMessage({ op: 'reuse', buffer } satisfies ThreadRequest, [buffer]);
  }

  exec(sql: string): Promise<Results[]> {
    return this.call({ op: 'exec', sql });
  }

  async listen(channel: string, callback: (payload: string) => void): Promise<() => Promise<void>> {
    const listenId = this.nextId++;
    this.listeners.set(listenId, callback);
    try {
      await this.call({ op: 'listen', channel, listenId });
    } catch (err) {
      this.listeners.delete(listenId);
      throw err;
    }
    return async () => {
      this.listeners.delete(listenId);
      if (!this.closed) await this.call({ op: 'unlisten', listenId });
    };
  }

  async dumpDataDir(compression?: 'auto' | 'gzip' | 'none'): Promise<Blob> {
    return new Blob([await this.call<ArrayBuffer>({ op: 'dump', compression })]);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    try {
      await this.call({ op: 'close' });
    } finally {
      this.closed = true;
      this.stopped ??= new Error('PGlite is closed');
      await this.worker.terminate();
    }
  }
}

/** The statements that open and close a transaction, as knex sends them (`ROLLBACK TO SAVEPOINT` closes none). */
const opensTransaction = /^\s*(begin|start\s+transaction)\b/i;
const closesTransaction = /^\s*(commit|end|rollback(?!\s+to\b))\b/i;

/**
 * A statement that cannot run inside another's transaction as a read (SQLSTATE class 25: it writes, so the read-only
 * savepoint refused it; it must run outside a transaction, as VACUUM does; the transaction failed, or has just ended):
 * it waits for that transaction to end instead.
 */
const waitsForTransaction = (err: unknown) => typeof (err as { code?: unknown }).code === 'string' && (err as { code: string }).code.startsWith('25');

/**
 * The sessions knex's connections are, over one PGlite (a single session of PostgreSQL). A transaction belongs to
 * the session that began it, until it ends; another session's BEGIN waits for that. Another session's statement meanwhile
 * runs inside it as a read (pglite-worker.ts `interleavedQuery`: a savepoint, read-only, rolled back after), so a long
 * transaction (a 50,000-row import) no longer holds every page for its duration; one that writes, or cannot run in a
 * transaction, waits for it to end. Such a read sees the transaction's writes before they commit.
 */
class PgliteSessions {
  /** The session whose transaction is open, if any. */
  owner: PgliteSession | null = null;
  private waiting: (() => void)[] = [];

  constructor(readonly thread: PgliteThread) {}

  open(): PgliteSession {
    return new PgliteSession(this);
  }

  /** Resolves once no transaction is open; the caller checks again (another waiter may have begun one first). */
  idle(): Promise<void> {
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  release(session: PgliteSession): void {
    if (this.owner !== session) return;
    this.owner = null;
    const waiting = this.waiting;
    this.waiting = [];
    for (const wake of waiting) wake();
  }
}

/** One of knex's connections: see PgliteSessions. */
export class PgliteSession {
  constructor(private readonly sessions: PgliteSessions) {}

  get closed(): boolean {
    return this.sessions.thread.closed;
  }

  get waitReady(): Promise<void> {
    return this.sessions.thread.waitReady;
  }

  async query<T = Record<string, unknown>>(sql: string, params?: unknown[], options?: Record<string, unknown>): Promise<Results<T>> {
    const { thread } = this.sessions;
    for (;;) {
      const owner = this.sessions.owner;
      if (owner === this) return this.inTransaction(() => thread.query<T>(sql, params, options), sql);
      if (owner === null) {
        if (!opensTransaction.test(sql)) return thread.query<T>(sql, params, options);
        this.sessions.owner = this;
        return this.inTransaction(() => thread.query<T>(sql, params, options), sql);
      }
      if (!opensTransaction.test(sql)) {
        try {
          return await thread.query<T>(sql, params, { ...options, interleave: true });
        } catch (err) {
          if (!waitsForTransaction(err)) throw err;
        }
      }
      // Checked and waited for in one step: a transaction that ended meanwhile wakes no one, so this runs again at once.
      if (this.sessions.owner !== null) await this.sessions.idle();
    }
  }

  /** A statement of this session's transaction; the transaction is over once its COMMIT or ROLLBACK has run, or BEGIN failed. */
  private async inTransaction<T>(run: () => Promise<T>, sql: string): Promise<T> {
    let ended = closesTransaction.test(sql);
    try {
      return await run();
    } catch (err) {
      if (opensTransaction.test(sql)) ended = true;
      throw err;
    } finally {
      if (ended) this.sessions.release(this);
    }
  }
}

/** The thread each reply buffer of byte values came from, until it is given back. */
const lentBy = new WeakMap<ArrayBufferLike, PgliteThread>();

/** Byte values come through postMessage as plain Uint8Array views of the transferred buffer: Buffers again, no copy. */
function asBuffers(row: Record<string, unknown>, thread: PgliteThread): void {
  for (const [key, value] of Object.entries(row)) {
    if (!(value instanceof Uint8Array)) continue;
    row[key] = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
    lentBy.set(value.buffer, thread);
  }
}

/**
 * Gives a byte value of a `textAsBytes` query back to its thread, once it has been sent and nothing reads it (a list
 * page: src/http/api.ts calls this from its write's callback). Its whole reply buffer goes back, moved (not copied)
 * to the thread: every view of it here is then empty. Anything else, or a second call, is ignored.
 */
export function giveBackBytes(value: Buffer): void {
  const thread = lentBy.get(value.buffer);
  if (!thread) return;
  lentBy.delete(value.buffer);
  thread.reuse(value.buffer as ArrayBuffer);
}

/** PGlite started in its own thread; rejects when it cannot open (the thread is then gone). */
export function startPgliteThread(options: ThreadOptions = {}): Promise<PgliteThread> {
  return new PgliteThread(options).start();
}
