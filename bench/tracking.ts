/**
 * Visitor tracking, on PostgreSQL and on the embedded default (`--db`, both by default), each against its own baseline:
 * 1. Event ingest: req/s and p99 of `POST /api/v1/track/event` on `quoting serve` with the rate cap raised out
 *    of the way (TRACK_RATE_PER_MINUTE=1e9: the counter still counts, nothing is refused), against a bare koa
 *    app in its own process doing the same INSERT without auth or validation (bench/track-baseline.ts), and the
 *    same bare app with the counter in its statement; then the app with the default cap (1200/min) in force.
 *    Alternated A B C D per round, `--rounds` (3), min/median/max.
 * 2. Recommendations and category interest over `--events` (1,000,000) stored events of `--visitors` (100,000)
 *    visitors and `--products` (5,000) products: latency p50/p99/max of `--requests` (300) sequential requests
 *    per kind with random visitors and SKUs, and the plans (EXPLAIN ANALYZE) of the queries one request makes.
 * 3. The tag script's size, plain and gzipped.
 * On the embedded default each server holds a data directory of its own (the embedded database admits one process):
 * the app with the cap raised, the bare app and the bare app with the counter run on copies of one data directory
 * (same workspace, same product), the capped app on another; the bare apps run the statements on PGlite in its own
 * thread, as the app does. The read set is the same, seeded (and its plans explained, PGlite's) in this process
 * while no server holds the directory.
 *   node dist/bench/tracking.js [--db postgres,embedded] [--duration 10] [--warmup 2] [--connections 50] [--rounds 3]
 *                               [--events 1000000] [--skip-ingest] [--skip-reads]
 */
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import autocannon from 'autocannon';
import knexFactory, { type Knex } from 'knex';
import pg from 'pg';
import { PGlite } from '@electric-sql/pglite';
import { openPglite } from '../src/db/database.js';
import {
  benchArgs, databasesOption, dbName, freshDataDir, freshPostgresUrl, median, note, percentile, printTable, runBench, startChild, startEmbedded, startQuoting,
  copyDataDir, withDataDir, loadAverage, type ChildServer,
} from './lib.js';
import { recommend, categoryInterest } from '../src/tracking/recommendations.js';
import { systemAccess } from '../src/access.js';

const { values } = benchArgs('tracking.js', {
  db: { type: 'string', default: 'postgres,embedded' },
  duration: { type: 'string', default: '10' },
  warmup: { type: 'string', default: '2' },
  connections: { type: 'string', default: '50' },
  rounds: { type: 'string', default: '3' },
  events: { type: 'string', default: '1000000' },
  visitors: { type: 'string', default: '100000' },
  products: { type: 'string', default: '5000' },
  requests: { type: 'string', default: '300' },
  'skip-ingest': { type: 'boolean', default: false },
  'skip-reads': { type: 'boolean', default: false },
});
const duration = Number(values.duration);
const warmup = Number(values.warmup);
const connections = Number(values.connections);
const rounds = Number(values.rounds);
/** The read set, the same on both databases. */
const SIZE = { events: Number(values.events), visitors: Number(values.visitors), products: Number(values.products) };
const REQUESTS = Number(values.requests);

interface Shop {
  id: number;
  publicKey: string;
  slug: string;
}

async function signUpShop(baseUrl: string, name: string): Promise<Shop> {
  const res = await fetch(`${baseUrl}/api/v1/auth/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: `bench.${process.pid}.${Date.now()}.${name.replace(/\W/g, '')}@example.com`, password: 'correct horse battery staple', name: 'Bench', workspace_name: name }),
  });
  const body = (await res.json()) as { data: { workspace: { id: number; slug: string }; keys: { public_key: string } } };
  if (res.status !== 201) throw new Error(`signup failed: ${res.status} ${JSON.stringify(body)}`);
  return { id: body.data.workspace.id, slug: body.data.workspace.slug, publicKey: body.data.keys.public_key };
}

const eventBody = JSON.stringify({
  visitor_id: 'bench-visitor-1',
  type: 'product_view',
  url: 'https://shop.example/products/oak-desk',
  title: 'Oak desk | Shop',
  referrer: 'https://search.example/?q=desk',
  sku: 'DESK-1',
  properties: { source: 'bench', position: 3 },
});

async function post(url: string, headers: Record<string, string>, seconds: number): Promise<autocannon.Result> {
  return autocannon({ url, method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: eventBody, connections, duration: seconds });
}

const stats = (xs: number[], digits = 0) => [Math.min(...xs), median(xs), Math.max(...xs)].map((x) => x.toFixed(digits)).join(' / ');

const RAISED = { TRACK_RATE_PER_MINUTE: '1000000000' };
const baselineScript = fileURLToPath(new URL('./track-baseline.js', import.meta.url));
/** The sku resolves to a product, as on a product page. */
const addDesk = (knex: Knex, shop: Shop) => knex('products').insert({ workspace_id: shop.id, sku: 'DESK-1', name: 'Oak desk', category: 'desks' });
const startBare = (env: NodeJS.ProcessEnv, shop: Shop, counter: boolean) => {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env, WORKSPACE_ID: String(shop.id), ...(counter ? { BARE_COUNTER: '1' } : {}) };
  if (!env.DATABASE_URL) delete childEnv.DATABASE_URL;
  return startChild([baselineScript], childEnv, `bare tracking koa${counter ? ' with counter' : ''}`, 120_000);
};

interface IngestServers {
  raised: ChildServer;
  capped: ChildServer;
  bare: ChildServer;
  bareCounter: ChildServer;
  shop: Shop;
  cappedShop: Shop;
}

async function ingestPostgres(databaseUrl: string): Promise<void> {
  const raised = await startQuoting(databaseUrl, RAISED);
  const capped = await startQuoting(databaseUrl);
  const shop = await signUpShop(raised.url, 'Ingest Shop');
  const cappedShop = await signUpShop(capped.url, 'Capped Shop');
  const admin = knexFactory({ client: 'pg', connection: databaseUrl, pool: { min: 0, max: 1 } });
  try {
    await addDesk(admin, shop);
  } finally {
    await admin.destroy();
  }
  const bare = await startBare({ DATABASE_URL: databaseUrl }, shop, false);
  const bareCounter = await startBare({ DATABASE_URL: databaseUrl }, shop, true);
  await ingest('PostgreSQL', { raised, capped, bare, bareCounter, shop, cappedShop });
  const check = knexFactory({ client: 'pg', connection: databaseUrl, pool: { min: 0, max: 1 } });
  try {
    await capCheck(check, cappedShop);
  } finally {
    await check.destroy();
  }
  for (const server of [raised, capped, bare, bareCounter]) await server.stop();
}

/** Each server its own data directory: the app (cap raised) and both bare apps on copies of one (same workspace and product). */
async function ingestEmbedded(): Promise<void> {
  const raisedDir = await freshDataDir('track-raised');
  const first = await startEmbedded(raisedDir);
  const shop = await signUpShop(first.url, 'Ingest Shop');
  await first.stop();
  await withDataDir(raisedDir, (database) => addDesk(database.knex, shop));
  const bareDirs = ['track-bare', 'track-bare-counter'].map((label) => copyDataDir(raisedDir, label));
  const cappedDir = await freshDataDir('track-capped');
  const raised = await startEmbedded(raisedDir, RAISED);
  const capped = await startEmbedded(cappedDir);
  const cappedShop = await signUpShop(capped.url, 'Capped Shop');
  const bare = await startBare({ DATA_DIR: bareDirs[0] }, shop, false);
  const bareCounter = await startBare({ DATA_DIR: bareDirs[1] }, shop, true);
  await ingest('embedded (PGlite)', { raised, capped, bare, bareCounter, shop, cappedShop });
  for (const server of [raised, capped, bare, bareCounter]) await server.stop();
  await withDataDir(cappedDir, (database) => capCheck(database.knex, cappedShop));
}

async function capCheck(knex: Knex, cappedShop: Shop): Promise<void> {
  const { rows } = await knex.raw(
    `select max(n)::int as most, count(*)::int as windows from (select count(*) as n from track_events where workspace_id = ? group by date_trunc('minute', received_at)) w`,
    [cappedShop.id],
  );
  note(`cap in force: at most ${rows[0].most} events stored in any one-minute window (over ${rows[0].windows} windows; cap 1200)`);
}

async function ingest(database: string, { raised, capped, bare, bareCounter, shop, cappedShop }: IngestServers): Promise<void> {
  const auth = (key: string) => ({ authorization: `Public ${key}` });
  const variants: { name: string; server: ChildServer; headers: Record<string, string>; refusals: boolean }[] = [
    { name: 'A bare koa: INSERT only (baseline)', server: bare, headers: {}, refusals: false },
    { name: 'B quoting serve, cap raised (1e9/min)', server: raised, headers: auth(shop.publicKey), refusals: false },
    { name: 'C bare koa: INSERT + rate counter', server: bareCounter, headers: {}, refusals: false },
    { name: 'D quoting serve, cap in force (1200/min)', server: capped, headers: auth(cappedShop.publicKey), refusals: true },
  ];
  const results = new Map<string, { rps: number[]; p99: number[]; accepted: number[]; refused: number[] }>();
  for (const v of variants) results.set(v.name, { rps: [], p99: [], accepted: [], refused: [] });
  for (let round = 1; round <= rounds; round++) {
    for (const v of variants) {
      const url = `${v.server.url}${v.server === bare || v.server === bareCounter ? '/' : '/api/v1/track/event'}`;
      if (warmup > 0) await post(url, v.headers, warmup);
      const r = await post(url, v.headers, duration);
      const refused = r.non2xx;
      if (r.errors || (!v.refusals && refused)) throw new Error(`${v.name}: ${r.errors} errors, ${refused} non-2xx in ${r.requests.total}`);
      const entry = results.get(v.name)!;
      entry.rps.push(r.requests.average);
      entry.p99.push(r.latency.p99);
      entry.accepted.push(r['2xx']);
      entry.refused.push(refused);
      note(`round ${round}: ${v.name}: ${r.requests.average.toFixed(0)} req/s, p99 ${r.latency.p99} ms${v.refusals ? `, ${r['2xx']} accepted, ${refused} refused (429)` : ''}`);
    }
  }
  printTable(
    `${database}: POST /api/v1/track/event (${eventBody.length}-byte body): ${rounds} rounds of ${duration} s each after ${warmup} s warm-up, ${connections} connections; min / median / max`,
    [['server', 'req/s', 'p99 ms'], ...variants.map((v) => [v.name, stats(results.get(v.name)!.rps), stats(results.get(v.name)!.p99)])],
  );
  const med = (name: string) => median(results.get(name)!.rps);
  note(`\nratio B / A (median req/s): ${(med(variants[1].name) / med(variants[0].name)).toFixed(3)}  (target >= 0.5)`);
  note(`ratio C / A, the counter's cost in the database alone: ${(med(variants[2].name) / med(variants[0].name)).toFixed(3)}`);
  const d = results.get(variants[3].name)!;
  note(`cap in force: accepted per round ${d.accepted.join(', ')}; refused per round ${d.refused.join(', ')}`);
}

type Size = typeof SIZE;

/** `events` events of `visitors` visitors over `products` products (every 20th archived) in one workspace, by generate_series. */
async function seed(knex: Knex, workspaceId: number, { events, visitors, products }: Size): Promise<void> {
  const started = performance.now();
  await knex.raw(
    `insert into products (workspace_id, sku, name, category, brand, status)
     select ?, 'P' || i, 'Product ' || i, 'cat-' || (i % 50), 'brand-' || (i % 20), case when i % 20 = 0 then 'archived' else 'active' end
       from generate_series(1, ?) i`,
    [workspaceId, products],
  );
  const { rows } = await knex.raw('select min(id)::int as first from products where workspace_id = ?', [workspaceId]);
  const first = rows[0].first as number;
  // Deterministic pseudo-random spread: product popularity skewed towards low numbers (a square law),
  // times over the last 60 days, one in five events a page view with a category and no product. Stored in
  // time order, as ingest stores them.
  await knex.raw(
    `insert into track_events (workspace_id, visitor_id, type, url, sku, category, product_id, occurred_at, received_at)
     select ?, 'v' || (i % ?),
            case when i % 5 = 0 then 'page_view' else 'product_view' end,
            'https://shop.example/' || i,
            case when i % 5 = 0 then null else 'P' || k end,
            case when i % 5 = 0 then 'cat-' || (i % 50) end,
            case when i % 5 = 0 then null else ? + k - 1 end,
            t, t
       from generate_series(1, ?) i
       cross join lateral (select 1 + floor(? * power(((i::bigint * 2654435761) % 1000003) / 1000003.0, 2))::int as k,
                                  now() - ((i::bigint * 104729) % 5184000) * interval '1 second' as t) r
      order by t`,
    [workspaceId, visitors, first, events, products],
  );
  // Autovacuum does this by itself on an insert-only table (autovacuum_vacuum_insert_threshold); done here
  // so the reads are measured in the state a live table is in, not right after a bulk load.
  await knex.raw('vacuum analyze products');
  await knex.raw('vacuum analyze track_events');
  note(`seeded ${events} events, ${visitors} visitors, ${products} products in ${((performance.now() - started) / 1000).toFixed(1)} s`);
}

/** The plans (EXPLAIN ANALYZE, BUFFERS) of the queries one request of each kind makes, captured from the service functions themselves. */
async function plans(knex: Knex, shop: Shop, explain: (sql: string, bindings: unknown[]) => Promise<{ 'QUERY PLAN': string }[]>): Promise<string[]> {
  const captured: { sql: string; bindings: readonly unknown[] }[] = [];
  knex.on('query', (q: { sql: string; bindings?: readonly unknown[] }) => captured.push({ sql: q.sql, bindings: q.bindings ?? [] }));
  const access = systemAccess(shop.id, { events: false });
  await recommend(knex, access, { visitor_id: 'v4242', sku: 'P17', limit: 10 });
  await recommend(knex, access, { visitor_id: 'v4242', limit: 10 });
  await recommend(knex, access, { limit: 10 }); // the popular tier: the workspace's views, then which of them are active
  await categoryInterest(knex, access, { visitor_id: 'v4242' });
  await categoryInterest(knex, access, {});
  knex.removeAllListeners('query');
  // The captured text has $n placeholders: explained through the driver itself.
  const lines: string[] = [];
  const seen = new Set<string>();
  for (const q of captured) {
    if (seen.has(q.sql)) continue;
    seen.add(q.sql);
    lines.push('', `-- ${q.sql.replace(/\s+/g, ' ').slice(0, 160)}…`);
    for (const line of await explain(`explain (analyze, buffers, costs off) ${q.sql}`, [...q.bindings])) lines.push(line['QUERY PLAN']);
  }
  return lines;
}

async function measureReads(database: string, server: ChildServer, shop: Shop, { events, visitors, products }: Size): Promise<void> {
  const pick = (n: number) => 1 + Math.floor(Math.random() * n);
  const kinds: [string, () => string][] = [
    ['recommendations?visitor_id=', () => `/api/v1/public/recommendations?visitor_id=v${pick(visitors) - 1}`],
    ['recommendations?visitor_id=&sku=', () => `/api/v1/public/recommendations?visitor_id=v${pick(visitors) - 1}&sku=P${pick(products)}`],
    ['recommendations (no visitor, no sku)', () => '/api/v1/public/recommendations'],
    ['categories/interest?visitor_id=', () => `/api/v1/public/categories/interest?visitor_id=v${pick(visitors) - 1}`],
    ['categories/interest (workspace)', () => '/api/v1/public/categories/interest'],
  ];
  const headers = { authorization: `Public ${shop.publicKey}` };
  const rows: (string | number)[][] = [['request', 'p50 ms', 'p99 ms', 'max ms', 'results (median)']];
  for (const [name, path] of kinds) {
    for (let i = 0; i < 20; i++) await (await fetch(server.url + path(), { headers })).text();
    const times: number[] = [];
    const counts: number[] = [];
    for (let i = 0; i < REQUESTS; i++) {
      const started = performance.now();
      const res = await fetch(server.url + path(), { headers });
      const body = (await res.json()) as { data: Record<string, unknown[]> };
      times.push(performance.now() - started);
      if (res.status !== 200) throw new Error(`${name}: ${res.status} ${JSON.stringify(body)}`);
      counts.push(Object.values(body.data)[0].length);
    }
    rows.push([name, percentile(times, 50).toFixed(1), percentile(times, 99).toFixed(1), Math.max(...times).toFixed(1), median(counts)]);
  }
  printTable(`${database}: public reads over ${events} events: ${REQUESTS} sequential requests each (random visitors and SKUs), one keep-alive client, after 20 discarded`, rows);
}

async function readsPostgres(databaseUrl: string): Promise<void> {
  const size = SIZE;
  const server = await startQuoting(databaseUrl);
  const shop = await signUpShop(server.url, 'Reco Shop');
  const knex = knexFactory({ client: 'pg', connection: databaseUrl, pool: { min: 0, max: 2 } });
  const client = new pg.Client({ connectionString: databaseUrl });
  try {
    await seed(knex, shop.id, size);
    await measureReads('PostgreSQL', server, shop, size);
    await client.connect();
    for (const line of await plans(knex, shop, async (sql, bindings) => (await client.query(sql, bindings)).rows)) note(line);
  } finally {
    await client.end().catch(() => undefined);
    await knex.destroy();
    await server.stop();
  }
}

/** Seeded and explained in this process (a PGlite on the data directory) while no server holds it; then read through the server. */
async function readsEmbedded(): Promise<void> {
  const size = SIZE;
  const dataDir = await freshDataDir('track-reads');
  let server = await startEmbedded(dataDir);
  const shop = await signUpShop(server.url, 'Reco Shop');
  await server.stop();
  const pglite = new PGlite(path.join(dataDir, 'pglite'));
  const database = await openPglite(pglite);
  let explained: string[];
  try {
    await seed(database.knex, shop.id, size);
    explained = await plans(database.knex, shop, async (sql, bindings) => (await pglite.query<{ 'QUERY PLAN': string }>(sql, bindings)).rows);
  } finally {
    await database.close();
  }
  server = await startEmbedded(dataDir);
  await measureReads('embedded (PGlite)', server, shop, size);
  for (const line of explained) note(line);
  await server.stop();
}

async function tagSize(url: string, slug: string): Promise<void> {
  const res = await fetch(`${url}/tag/${slug}.js`);
  const text = await res.text();
  if (res.status !== 200) throw new Error(`tag: ${res.status}`);
  note(`\ntag script /tag/${slug}.js: ${Buffer.byteLength(text)} bytes, ${gzipSync(text, { level: 9 }).length} bytes gzipped (level 9), ${gzipSync(text).length} at the default level (target < 3072)`);
}

runBench(async () => {
  // Figures from a busy machine mean less: the load is printed with them.
  note(`${os.cpus().length} CPUs, load average ${loadAverage()} at the start`);
  const databases = databasesOption(values.db);
  let databaseUrl = '';
  for (const kind of databases) {
    note(`\n${dbName(kind)}, load average ${loadAverage()}`);
    if (kind === 'postgres') {
      databaseUrl = await freshPostgresUrl();
      if (!values['skip-ingest']) await ingestPostgres(databaseUrl);
      if (!values['skip-reads']) await readsPostgres(databaseUrl);
    } else {
      if (!values['skip-ingest']) await ingestEmbedded();
      if (!values['skip-reads']) await readsEmbedded();
    }
  }
  // The tag is the same text on either database.
  const server = databases[0] === 'embedded' ? await startEmbedded(await freshDataDir('track-tag')) : await startQuoting(databaseUrl);
  const shop = await signUpShop(server.url, 'Tag Shop');
  await tagSize(server.url, shop.slug);
  note(`load average ${loadAverage()} at the end`);
});
