/**
 * The comparison server for tracking.js: a bare koa app that authenticates nothing and validates nothing,
 * parses the JSON body with koa-body and runs the app's event INSERT (the same columns, the product looked up
 * by sku, the same per-transaction synchronous_commit=off) through pg, answering 204. With
 * BARE_COUNTER=1 the INSERT also counts the request in the rate window, exactly as the app's statement does
 * (a shard of the window's counter rows, skipping locked ones; never refusing), which isolates what the shared
 * counter costs in the database. Its statements are named (prepared once per connection), as the app's are. Needs DATABASE_URL and
 * WORKSPACE_ID. Prints its address and runs until SIGTERM. Not meant to be run by hand.
 */
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { koaBody } from 'koa-body';
import pg from 'pg';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
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
  if (!counter) return void (await pool.query({ name: 'bare_event', text: sql, values }));
  const start = Math.floor(Math.random() * SHARDS);
  const { rows } = await pool.query({ name: 'bare_counted', text: counted(false), values: [...values, start] });
  if (rows[0].stored === 1) return;
  // The window's first event (or every shard locked at once): create the shards, then wait for one.
  const client = await pool.connect();
  try {
    await client.query('begin');
    await client.query(
      `insert into track_rate_windows (workspace_id, window_start, shard, count)
       select $1, date_trunc('minute', now()), s, 0 from generate_series(0, ${SHARDS - 1}) s on conflict do nothing`,
      [values[0]],
    );
    await client.query({ name: 'bare_counted_wait', text: counted(true), values: [...values, start] });
    await client.query('commit');
  } finally {
    client.release();
  }
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
  void pool.end().then(() => process.exit(0));
});
