import type { Db } from './database.js';

/**
 * A lookup by key whose concurrent calls share one query. Keys asked for in the same turn of the event
 * loop, or while `maxInFlight` queries are already running, wait together and are read by one query
 * (`any($1)` over an index: one round trip and one statement for up to `maxBatch` keys), whose rows are
 * handed to each caller by key. Under load the server spends its CPU on a statement per batch instead of
 * a statement per request.
 *
 * A call never joins a query that has already been sent: it is read by a query sent after it was made,
 * so it sees every change committed before it (a logout, a revoked key) as a query of its own would.
 * Inside a transaction the key is read at once, on the transaction, alone.
 */
export function batchedLookup<V>(
  run: (db: Db, keys: string[]) => Promise<Map<string, V>>,
  { maxBatch = 100, maxInFlight = 1 }: { maxBatch?: number; maxInFlight?: number } = {},
): (db: Db, key: string) => Promise<V | undefined> {
  const batchers = new WeakMap<Db, Batcher<V>>();
  return (db, key) => {
    if (db.isTransaction) return run(db, [key]).then((found) => found.get(key));
    let batcher = batchers.get(db);
    if (!batcher) batchers.set(db, (batcher = new Batcher(db, run, maxBatch, maxInFlight)));
    return batcher.load(key);
  };
}

interface Waiter<V> {
  resolve(value: V | undefined): void;
  reject(err: unknown): void;
}

class Batcher<V> {
  /** Keys not yet sent, each with every caller waiting for it. */
  private waiting = new Map<string, Waiter<V>[]>();
  private scheduled = false;
  private inFlight = 0;

  constructor(
    private readonly db: Db,
    private readonly run: (db: Db, keys: string[]) => Promise<Map<string, V>>,
    private readonly maxBatch: number,
    private readonly maxInFlight: number,
  ) {}

  load(key: string): Promise<V | undefined> {
    return new Promise((resolve, reject) => {
      const waiters = this.waiting.get(key);
      if (waiters) waiters.push({ resolve, reject });
      else this.waiting.set(key, [{ resolve, reject }]);
      this.schedule();
    });
  }

  /** The next batch goes after the current turn of the event loop, so that the requests read in it join. */
  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.maxInFlight || this.waiting.size === 0) return;
    this.scheduled = true;
    setImmediate(() => this.send());
  }

  private send(): void {
    this.scheduled = false;
    if (this.inFlight >= this.maxInFlight) return; // the query in flight schedules the next when it ends
    let batch = this.waiting;
    if (batch.size <= this.maxBatch) {
      this.waiting = new Map();
    } else {
      batch = new Map();
      for (const [key, waiters] of this.waiting) {
        if (batch.size === this.maxBatch) break;
        batch.set(key, waiters);
        this.waiting.delete(key);
      }
    }
    this.inFlight++;
    this.run(this.db, [...batch.keys()]).then(
      (found) => {
        for (const [key, waiters] of batch) for (const waiter of waiters) waiter.resolve(found.get(key));
      },
      (err: unknown) => {
        for (const waiters of batch.values()) for (const waiter of waiters) waiter.reject(err);
      },
    ).finally(() => {
      this.inFlight--;
      this.schedule();
    });
    this.schedule();
  }
}
