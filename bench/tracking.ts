/**
 * Visitor tracking on PostgreSQL:
 * 1. Event ingest: req/s and p99 of `POST /api/v1/track/event` on `quoting serve` with the rate cap raised out
 *    of the way (TRACK_RATE_PER_MINUTE=1e9: the counter still counts, nothing is refused), against a bare koa
 *    app in its own process doing the same INSERT without auth or validation (bench/track-baseline.ts), and the
 *    same bare app with the counter in its statement; then the app with the default cap (1200/min) in force.
 *    Alternated A B C D per round, `--rounds` (3), min/median/max.
 * 2. Recommendations and category interest over `--events` (1,000,000) stored events of `--visitors` (100,000)
 *    visitors and `--products` (5,000) products: latency p50/p99/max of `--requests` (300) sequential requests
 *    per kind with random visitors and SKUs, and the plans (EXPLAIN ANALYZE) of the queries one request makes.
 * 3. The tag script's size, plain and gzipped.
 *   node dist/bench/tracking.js [--duration 10] [--warmup 2] [--connections 50] [--rounds 3] [--events 1000000] [--skip-ingest] [--skip-reads]
 */
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { gzipSync } from 'node:zlib';
import autocannon from 'autocannon';
import knexFactory, { type Knex } from 'knex';
import pg from 'pg';
import { freshPostgresUrl, median, note, percentile, printTable, runBench, startChild, startQuoting, type ChildServer } from './lib.js';
import { recommend, categoryInterest } from '../src/tracking/recommendations.js';
import { systemAccess } from '../src/access.js';

const { values } = parseArgs({
  options: {
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
  },
});
const duration = Number(values.duration);
const warmup = Number(values.warmup);
const connections = Number(values.connections);
const rounds = Number(values.rounds);
const EVENTS = Number(values.events);
const VISITORS = Number(values.visitors);
const PRODUCTS = Number(values.products);
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

async function ingest(databaseUrl: string): Promise<Shop> {
  const raised = await startQuoting(databaseUrl, { TRACK_RATE_PER_MINUTE: '1000000000' });
  const capped = await startQuoting(databaseUrl);
  const shop = await signUpShop(raised.url, 'Ingest Shop');
  const cappedShop = await signUpShop(capped.url, 'Capped Shop');
  // The sku resolves to a product, as on a product page.
  const admin = knexFactory({ client: 'pg', connection: databaseUrl, pool: { min: 0, max: 1 } });
  try {
    await admin('products').insert({ workspace_id: shop.id, sku: 'DESK-1', name: 'Oak desk', category: 'desks' });
  } finally {
    await admin.destroy();
  }
  const baselineScript = fileURLToPath(new URL('./track-baseline.js', import.meta.url));
  const env = { ...process.env, DATABASE_URL: databaseUrl, WORKSPACE_ID: String(shop.id) };
  const bare = await startChild([baselineScript], env, 'bare tracking koa');
  const bareCounter = await startChild([baselineScript], { ...env, BARE_COUNTER: '1' }, 'bare tracking koa with counter');

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
    `POST /api/v1/track/event (${eventBody.length}-byte body): ${rounds} rounds of ${duration} s each after ${warmup} s warm-up, ${connections} connections; min / median / max`,
    [['server', 'req/s', 'p99 ms'], ...variants.map((v) => [v.name, stats(results.get(v.name)!.rps), stats(results.get(v.name)!.p99)])],
  );
  const med = (name: string) => median(results.get(name)!.rps);
  note(`\nratio B / A (median req/s): ${(med(variants[1].name) / med(variants[0].name)).toFixed(3)}  (target >= 0.5)`);
  note(`ratio C / A, the counter's cost in the database alone: ${(med(variants[2].name) / med(variants[0].name)).toFixed(3)}`);
  const d = results.get(variants[3].name)!;
  note(`cap in force: accepted per round ${d.accepted.join(', ')}; refused per round ${d.refused.join(', ')}`);

  const check = knexFactory({ client: 'pg', connection: databaseUrl, pool: { min: 0, max: 1 } });
  try {
    const { rows } = await check.raw(
      `select max(n)::int as most, count(*)::int as windows from (select count(*) as n from track_events where workspace_id = ? group by date_trunc('minute', received_at)) w`,
      [cappedShop.id],
    );
    note(`cap in force: at most ${rows[0].most} events stored in any one-minute window (over ${rows[0].windows} windows; cap 1200)`);
  } finally {
    await check.destroy();
  }
  return shop;
}

/** 1M events, 100k visitors, 5k products (every 20th archived) in one workspace, by generate_series. */
async function seed(knex: Knex, workspaceId: number): Promise<void> {
  const started = performance.now();
  await knex.raw(
    `insert into products (workspace_id, sku, name, category, brand, status)
     select ?, 'P' || i, 'Product ' || i, 'cat-' || (i % 50), 'brand-' || (i % 20), case when i % 20 = 0 then 'archived' else 'active' end
       from generate_series(1, ?) i`,
    [workspaceId, PRODUCTS],
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
    [workspaceId, VISITORS, first, EVENTS, PRODUCTS],
  );
  // Autovacuum does this by itself on an insert-only table (autovacuum_vacuum_insert_threshold); done here
  // so the reads are measured in the state a live table is in, not right after a bulk load.
  await knex.raw('vacuum analyze products');
  await knex.raw('vacuum analyze track_events');
  note(`seeded ${EVENTS} events, ${VISITORS} visitors, ${PRODUCTS} products in ${((performance.now() - started) / 1000).toFixed(1)} s`);
}

async function reads(databaseUrl: string): Promise<void> {
  const server = await startQuoting(databaseUrl);
  const shop = await signUpShop(server.url, 'Reco Shop');
  const knex = knexFactory({ client: 'pg', connection: databaseUrl, pool: { min: 0, max: 2 } });
  try {
    await seed(knex, shop.id);
    const pick = (n: number) => 1 + Math.floor(Math.random() * n);
    const kinds: [string, () => string][] = [
      ['recommendations?visitor_id=', () => `/api/v1/public/recommendations?visitor_id=v${pick(VISITORS) - 1}`],
      ['recommendations?visitor_id=&sku=', () => `/api/v1/public/recommendations?visitor_id=v${pick(VISITORS) - 1}&sku=P${pick(PRODUCTS)}`],
      ['recommendations (no visitor, no sku)', () => '/api/v1/public/recommendations'],
      ['categories/interest?visitor_id=', () => `/api/v1/public/categories/interest?visitor_id=v${pick(VISITORS) - 1}`],
      ['categories/interest (workspace)', () => '/api/v1/public/categories/interest'],
    ];
    const headers = { authorization: `Public ${shop.publicKey}` };
    const rows: (string | number)[][] = [['request', 'p50 ms', 'p99 ms', 'max ms', 'results (median)']];
    for (const [name, path] of kinds) {
      for (let i = 0; i < 20; i++) await (await fetch(server.url + path(), { headers })).text();
      const times: number[] = [];
      const sizes: number[] = [];
      for (let i = 0; i < REQUESTS; i++) {
        const started = performance.now();
        const res = await fetch(server.url + path(), { headers });
        const body = (await res.json()) as { data: Record<string, unknown[]> };
        times.push(performance.now() - started);
        if (res.status !== 200) throw new Error(`${name}: ${res.status} ${JSON.stringify(body)}`);
        sizes.push(Object.values(body.data)[0].length);
      }
      rows.push([name, percentile(times, 50).toFixed(1), percentile(times, 99).toFixed(1), Math.max(...times).toFixed(1), median(sizes)]);
    }
    printTable(`Public reads over ${EVENTS} events: ${REQUESTS} sequential requests each (random visitors and SKUs), one keep-alive client, after 20 discarded`, rows);

    // The plans of the queries one request makes, captured from the service functions themselves.
    const captured: { sql: string; bindings: readonly unknown[] }[] = [];
    knex.on('query', (q: { sql: string; bindings?: readonly unknown[] }) => captured.push({ sql: q.sql, bindings: q.bindings ?? [] }));
    const access = systemAccess(shop.id, { events: false });
    await recommend(knex, access, { visitor_id: 'v4242', sku: 'P17', limit: 10 });
    await recommend(knex, access, { visitor_id: 'v4242', limit: 10 });
    await recommend(knex, access, { limit: 10 }); // the popular tier: the workspace's views, then which of them are active
    await categoryInterest(knex, access, { visitor_id: 'v4242' });
    await categoryInterest(knex, access, {});
    knex.removeAllListeners('query');
    // The captured text has pg's $n placeholders: explained through pg itself.
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      const seen = new Set<string>();
      for (const q of captured) {
        if (seen.has(q.sql)) continue;
        seen.add(q.sql);
        const { rows: plan } = await client.query(`explain (analyze, buffers, costs off) ${q.sql}`, q.bindings as unknown[]);
        note(`\n-- ${q.sql.replace(/\s+/g, ' ').slice(0, 160)}…`);
        for (const line of plan) note(line['QUERY PLAN']);
      }
    } finally {
      await client.end();
    }
  } finally {
    await knex.destroy();
  }
}

async function tagSize(url: string, slug: string): Promise<void> {
  const res = await fetch(`${url}/tag/${slug}.js`);
  const text = await res.text();
  if (res.status !== 200) throw new Error(`tag: ${res.status}`);
  note(`\ntag script /tag/${slug}.js: ${Buffer.byteLength(text)} bytes, ${gzipSync(text, { level: 9 }).length} bytes gzipped (level 9), ${gzipSync(text).length} at the default level (target < 3072)`);
}

runBench(async () => {
  // Figures from a busy machine mean less: the load is printed with them.
  const load = () => os.loadavg().map((l) => l.toFixed(1)).join(' ');
  note(`${os.cpus().length} CPUs, load average ${load()} at the start`);
  process.once('beforeExit', () => note(`load average ${load()} at the end`));
  const databaseUrl = await freshPostgresUrl();
  if (!values['skip-ingest']) await ingest(databaseUrl);
  if (!values['skip-reads']) await reads(databaseUrl);
  const server = await startQuoting(databaseUrl);
  const shop = await signUpShop(server.url, 'Tag Shop');
  await tagSize(server.url, shop.slug);
});
