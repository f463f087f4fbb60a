/**
 * The comparison server for tracking.js: a bare koa app that authenticates nothing and validates nothing,
 * parses the JSON body with koa-body and runs the app's event INSERT (the same columns, the product looked up
 * by sku, the same per-transaction synchronous_commit=off) through pg, answering 204. With
 * BARE_COUNTER=1 the INSERT also counts the request in the rate window, exactly as the app's statement does
 * (a shard of the window's counter rows, skipping locked ones; never refusing), which isolates what the shared
 * counter costs in the database. Its statements are named (prepared once per connection), as the app's are. Needs
 * WORKSPACE_ID and DATABASE_URL, or DATA_DIR for the embedded default: then the statements go to PGlite in its own
 * thread (src/db/pglite-thread.ts, as the app's do), one at a time (one connection; the fallback's transaction holds
 * it, as knex's pool of one does for the app). Prints its address and runs until SIGTERM. Not meant to be run by hand.
 */
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import Koa from 'koa';
import { koaBody } from 'koa-body';
import pg from 'pg';
import { lockDataDir } from '../src/db/database.js';
import { startPgliteThread } from '../src/db/pglite-thread.js';

type Query = (statement: { name: string; text: string; values: unknown[] } | string, values?: unknown[]) => Promise<{ rows: any[] }>;

/** The one way this app reaches its database: a query, a transaction, the end. */
interface Connection {
  query: Query;
  transaction(work: (query: Query) => Promise<void>): Promise<void>;
  end(): Promise<void>;
}

function postgres(url: string): Connection {
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  return {
    query: (statement, values) => pool.query(statement as string, values),
    async transaction(work) {
      const client = await pool.connect();
      try {
        await client.query('begin');
        await work((statement, values) => client.query(statement as string, values));
        await client.query('commit');
      } finally {
        client.release();
      }
    },
    end: () => pool.end(),
  };
}

async function embedded(dataDir: string): Promise<Connection> {
  const release = lockDataDir(dataDir);
  const thread = await startPgliteThread({ dataDir: path.join(dataDir, 'pglite') });
  let queue: Promise<unknown> = Promise.resolve();
  const exclusive = <T>(work: () => Promise<T>): Promise<T> => {
    const run = queue.then(work);
    queue = run.catch(() => undefined);
    return run;
  };
  const direct: Query = (statement, values) =>
    typeof statement === 'string' ? thread.query(statement, values) : thread.query(statement.text, statement.values);
  return {
    query: (statement, values) => exclusive(() => direct(statement, values)),
    transaction: (work) =>
      exclusive(async () => {
        await thread.query('begin');
        try {
          await work(direct);
          await thread.query('commit');
        } catch (err) {
          await thread.query('rollback');
          throw err;
        }
      }),
    end: async () => {
      await thread.close();
      release();
    },
  };
}

const db = process.env.DATABASE_URL ? postgres(process.env.DATABASE_URL) : await embedded(process.env.DATA_DIR!);
const workspaceId = Number(process.env.WORKSPACE_ID);
const counter = process.env.BARE_COUNTER === '1';

const insert = `
  insert into track_events (workspace_id, visitor_id, type, url, title, referrer, sku, category, properties, product_id, occurred_at)
  select $1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb,
         coalesce((select p.id from products p where p.workspace_id = $1 and p.sku = $7),
                  (select v.product_id from variants v where v.workspace_id = $1 and v.sku = $7)),
         coalesce($10::timestamptz, now())
    from tuning${counter ? ', hit' : ''}
  returning id`;
/** The app's counting (src/tracking/service.ts): a shard of the window with room, skipping (or waiting for) locked ones; never full here. */
const SHARDS = 8;
const counted = (wait: boolean) => `
  with tuning as (select set_config('synchronous_commit', 'off', true)),
  free as (select shard from track_rate_windows
            where workspace_id = $1 and window_start = date_trunc('minute', now()) and count < 1000000000 / ${SHARDS}
            order by (shard + $11) % ${SHARDS} limit 1 for update${wait ? '' : ' skip locked'}),
  hit as (update track_rate_windows w set count = w.count + 1 from free
           where w.workspace_id = $1 and w.window_start = date_trunc('minute', now()) and w.shard = free.shard returning w.shard),
  stored as (${insert})
  select count(*)::int as stored from stored`;
const sql = `with tuning as (select set_config('synchronous_commit', 'off', true)) ${insert}`;

async function store(values: unknown[]): Promise<void> {
  if (!counter) return void (await db.query({ name: 'bare_event', text: sql, values }));
  const start = Math.floor(Math.random() * SHARDS);
  const { rows } = await db.query({ name: 'bare_counted', text: counted(false), values: [...values, start] });
  if (rows[0].stored === 1) return;
  // The window's first event (or every shard locked at once): create the shards, then wait for one.
  await db.transaction(async (query) => {
    await query(
      `insert into track_rate_windows (workspace_id, window_start, shard, count)
       select $1, date_trunc('minute', now()), s, 0 from generate_series(0, ${SHARDS - 1}) s on conflict do nothing`,
      [values[0]],
    );
    await query({ name: 'bare_counted_wait', text: counted(true), values: [...values, start] });
  });
}

const app = new Koa();
app.use(koaBody({ jsonLimit: '2mb' }));
app.use(async (ctx) => {
  const b = (ctx.request.body ?? {}) as Record<string, unknown>;
  await store([
    workspaceId, b.visitor_id, b.type, b.url ?? null, b.title ?? null, b.referrer ?? null, b.sku ?? null, b.category ?? null,
    b.properties == null ? null : JSON.stringify(b.properties), b.occurred_at ?? null,
  ]);
  ctx.status = 204;
});
const server = app.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  console.log(`bare tracking koa listening on http://127.0.0.1:${port}`);
});
server.keepAliveTimeout = 65_000;
process.once('SIGTERM', () => {
  server.close();
  server.closeIdleConnections();
  void db.end().then(() => process.exit(0));
});
