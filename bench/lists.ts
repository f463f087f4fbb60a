/**
 * Unpaginated list endpoints at size: `GET /api/v1/customers` (1k, 10k, 50k rows) and `GET /api/v1/products`
 * (1k, 10k products × 3 variants; 50k × 3 with --products-50k) on the real app (`node bin/quoting serve` over a
 * fresh migrated PostgreSQL database, rows seeded with one INSERT … SELECT generate_series per table).
 * For each size: latency of N sequential requests after a warm-up, response size, and the server's RSS
 * (sampled from /proc/<pid>/status in a worker thread, plus VmHWM), against the same SQL run in this process
 * through knex/pg (the service function itself) and its database-side execution time (EXPLAIN ANALYZE).
 *   node dist/bench/lists.js [--runs 5] [--warmup 1] [--customers 1000,10000,50000] [--products 1000,10000]
 *                            [--products-50k] [--sample-ms 10]
 */
import { parseArgs } from 'node:util';
import pg from 'pg';
import type { Knex } from 'knex';
import { openPostgres } from '../src/db/database.js';
import { listCustomers } from '../src/customers/service.js';
import { listProducts } from '../src/products/service.js';
import { seedCustomers, seedProducts, VARIANTS_PER_PRODUCT } from './lists-seed.js';
import { freshPostgresUrl, median, note, onCleanup, printTable, runBench, signUp, startQuoting, type ChildServer } from './lib.js';
import { MB, mb, readStatus, resetPeak, startSampler } from './rss.js';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '5' },
    warmup: { type: 'string', default: '1' },
    customers: { type: 'string', default: '1000,10000,50000' },
    products: { type: 'string', default: '1000,10000' },
    'products-50k': { type: 'boolean', default: false },
    'sample-ms': { type: 'string', default: '10' },
  },
});
const runs = Number(values.runs);
const warmup = Number(values.warmup);
const sampleMs = Number(values['sample-ms']);
const sizes = (list: string) => list.split(',').filter(Boolean).map(Number).sort((a, b) => a - b);
const customerSizes = sizes(values.customers);
const productSizes = sizes(values.products);
if (values['products-50k'] && !productSizes.includes(50_000)) productSizes.push(50_000);

const TARGETS = {
  products: { rows: 10_000, ms: 1000 },
  customers: { rows: 50_000, ms: 1500 },
  rssGrowthMb: 150,
};

const msText = (value: number) => (value >= 100 ? `${value.toFixed(0)} ms` : `${value.toFixed(1)} ms`);
const k = (n: number) => (n >= 1000 ? `${n / 1000}k` : String(n));

// ---------------------------------------------------------------- measuring one list

interface Endpoint {
  name: 'customers' | 'products';
  path: string;
  /** The service function the route calls, run in this process through knex/pg: same SQL, same transfer. */
  raw(knex: Knex, workspaceId: number): Promise<string>;
  /** Reads the same rows without building JSON ($1 = workspace id): the scan part of the database time. */
  scanSql: string;
  /** Checks the parsed `data` of the first answer. */
  check(data: Record<string, unknown>, rows: number): void;
}

interface Result {
  rows: number;
  bytes: number;
  api: number[];
  ttfb: number[];
  raw: number[];
  db: number[];
  rssBefore: number;
  rssPeak: number;
  hwm: number | null;
  /** VmHWM after the first request (the warm-up) minus RSS before: one request's own footprint. */
  firstHwm: number | null;
  rssAfter: number;
  samples: number;
  plan: string;
  sameBody: boolean;
  /** Whether the body has characters beyond Latin-1, which makes V8 hold it as a two-byte string. */
  twoByte: boolean;
  /** Median EXPLAIN ANALYZE time of scanSql. */
  scan: number;
}

async function timed<T>(fn: () => Promise<T>): Promise<[number, T]> {
  const started = performance.now();
  const value = await fn();
  return [performance.now() - started, value];
}

/** Node types and relations of an EXPLAIN (FORMAT JSON) plan, outermost first. */
function planSummary(plan: Record<string, unknown>): string {
  const parts: string[] = [];
  const walk = (node: Record<string, unknown>, depth: number) => {
    const relation = node['Relation Name'] ? ` on ${node['Relation Name']}` : '';
    const index = node['Index Name'] ? ` using ${node['Index Name']}` : '';
    const loops = Number(node['Actual Loops'] ?? 1) > 1 ? ` ×${node['Actual Loops']}` : '';
    const sub = node['Subplan Name'] ? `${node['Subplan Name']}: ` : '';
    parts.push(`${'  '.repeat(depth)}${sub}${node['Node Type']}${relation}${index}${loops}`);
    for (const child of (node.Plans as Record<string, unknown>[] | undefined) ?? []) walk(child, depth + 1);
  };
  walk(plan, 0);
  return parts.join('\n');
}

async function measure(
  endpoint: Endpoint,
  rows: number,
  ctx: { databaseUrl: string; cookie: string; workspaceId: number; knex: Knex; pgClient: pg.Client },
): Promise<Result> {
  // A fresh server per measurement, so each RSS baseline is an idle, warmed-up server of its own.
  const app: ChildServer = await startQuoting(ctx.databaseUrl);
  try {
    const pid = app.child.pid!;
    const url = `${app.url}/api/v1/${endpoint.path}`;
    const headers = { cookie: ctx.cookie };
    const ws = await fetch(`${app.url}/api/v1/workspace`, { headers }); // fills the session cache, loads the auth path
    if (ws.status !== 200) throw new Error(`GET /api/v1/workspace answered ${ws.status}`);
    await ws.arrayBuffer();

    // The SQL the service runs (one query per page), captured once, for EXPLAIN ANALYZE (database-side execution time, no transfer).
    const captured: { sql: string; bindings: unknown[] }[] = [];
    const onQuery = (q: { sql: string; bindings: unknown[] }) => captured.push(q);
    ctx.knex.on('query', onQuery);
    const rawBody = await endpoint.raw(ctx.knex, ctx.workspaceId);
    ctx.knex.off('query', onQuery);
    if (!captured.length) throw new Error(`${endpoint.name}: no query captured`);
    const explainOne = async ({ sql, bindings }: { sql: string; bindings: unknown[] }) => {
      const { rows: [row] } = await ctx.pgClient.query(`explain (analyze, timing off, format json) ${sql}`, bindings as unknown[]);
      return (row['QUERY PLAN'] as { Plan: Record<string, unknown>; 'Execution Time': number }[])[0];
    };
    /** The plan of the first page, and the execution time of every page added up. */
    const explain = async () => {
      const plans = [];
      for (const query of captured) plans.push(await explainOne(query));
      return { Plan: plans[0].Plan, 'Execution Time': plans.reduce((sum, p) => sum + p['Execution Time'], 0) };
    };
    const plan = `${planSummary((await explain()).Plan)} (×${captured.length} pages)`;
    const scanTimes: number[] = [];
    for (let i = 0; i < 3; i++) {
      const { rows: [row] } = await ctx.pgClient.query(`explain (analyze, timing off, format json) ${endpoint.scanSql}`, [ctx.workspaceId]);
      scanTimes.push((row['QUERY PLAN'] as { 'Execution Time': number }[])[0]['Execution Time']);
    }

    await new Promise((resolve) => setTimeout(resolve, 200));
    const rssBefore = readStatus(pid, 'VmRSS');
    const hwmReset = resetPeak(pid);
    const sampler = await startSampler(pid, sampleMs);

    const result: Result = { rows, bytes: 0, api: [], ttfb: [], raw: [], db: [], rssBefore, rssPeak: 0, hwm: null, firstHwm: null, rssAfter: 0, samples: 0, plan, sameBody: false, twoByte: false, scan: median(scanTimes) };
    for (let i = 0; i < warmup + runs; i++) {
      const started = performance.now();
      const res = await fetch(url, { headers });
      const ttfb = performance.now() - started;
      const body = Buffer.from(await res.arrayBuffer());
      const total = performance.now() - started;
      if (res.status !== 200) throw new Error(`GET ${url} answered ${res.status}: ${body.toString().slice(0, 300)}`);
      const [rawMs] = await timed(() => endpoint.raw(ctx.knex, ctx.workspaceId));
      const dbMs = (await explain())['Execution Time'];
      if (i === 0) {
        if (hwmReset) result.firstHwm = readStatus(pid, 'VmHWM');
        result.bytes = body.length;
        result.twoByte = /[^\u0000-\u00ff]/.test(body.toString());
        result.sameBody = body.equals(Buffer.from(`{"version":"v1","data":{${JSON.stringify(endpoint.name)}:${rawBody}}}`));
        endpoint.check(JSON.parse(body.toString()).data, rows);
      }
      if (i < warmup) continue;
      result.api.push(total);
      result.ttfb.push(ttfb);
      result.raw.push(rawMs);
      result.db.push(dbMs);
    }

    const sampled = await sampler.stop();
    result.rssPeak = sampled.peak;
    result.samples = sampled.samples;
    result.hwm = hwmReset ? readStatus(pid, 'VmHWM') : null;
    result.rssAfter = readStatus(pid, 'VmRSS');
    return result;
  } finally {
    await app.stop();
  }
}

// ---------------------------------------------------------------- the endpoints

const customersEndpoint: Endpoint = {
  name: 'customers',
  path: 'customers',
  raw: (knex, workspaceId) => collect(listCustomers(knex, workspaceId, {})),
  scanSql: 'select count(c.*) from customers c where c.workspace_id = $1',
  check(data, rows) {
    const list = data.customers as unknown[];
    if (!Array.isArray(list) || list.length !== rows) throw new Error(`customers: expected ${rows} rows, got ${Array.isArray(list) ? list.length : typeof list}`);
  },
};

/** The JSON array text the API streams, from the same service function. */
async function collect(pages: AsyncIterable<string>): Promise<string> {
  const parts: string[] = [];
  for await (const page of pages) parts.push(page);
  return `[${parts.join(',')}]`;
}

async function productsEndpoint(): Promise<Endpoint | string> {
  return {
    name: 'products',
    path: 'products',
    raw: (knex, workspaceId) => collect(listProducts(knex, workspaceId, {})),
    scanSql: 'select count(p.*), count(v.*) from products p left join variants v on v.product_id = p.id and v.workspace_id = p.workspace_id where p.workspace_id = $1',
    check(data, rows) {
      const products = data.products as { variants?: unknown[] }[];
      if (!Array.isArray(products) || products.length !== rows) throw new Error(`products: expected ${rows} rows, got ${Array.isArray(products) ? products.length : typeof products}`);
      const variants = products.reduce((n, p) => n + (Array.isArray(p.variants) ? p.variants.length : 0), 0);
      if (variants !== rows * VARIANTS_PER_PRODUCT) throw new Error(`products: expected ${rows * VARIANTS_PER_PRODUCT} embedded variants, got ${variants}`);
    },
  };
}

// ---------------------------------------------------------------- report

function report(endpoint: string, results: Result[], extra: string): void {
  printTable(`GET /api/v1/${endpoint}${extra}: ${runs} sequential requests after ${warmup} warm-up, one keep-alive connection, a fresh server per size`, [
    ['rows', 'body', 'API min', 'API p50', 'API max', 'TTFB p50', 'raw p50', 'DB-only p50', 'API / raw', 'API - raw'],
    ...results.map((r) => [
      k(r.rows),
      mb(r.bytes),
      msText(Math.min(...r.api)),
      msText(median(r.api)),
      msText(Math.max(...r.api)),
      msText(median(r.ttfb)),
      msText(median(r.raw)),
      msText(median(r.db)),
      (median(r.api) / median(r.raw)).toFixed(2),
      msText(median(r.api) - median(r.raw)),
    ]),
  ]);
  printTable(`Server RSS during those ${warmup + runs} requests (sampled every ${sampleMs} ms in a worker thread; VmHWM reset before)`, [
    ['rows', 'RSS before', 'peak (sampled)', 'peak (VmHWM)', 'growth', '1st request', 'RSS after', 'growth / body', 'samples'],
    ...results.map((r) => {
      const peak = Math.max(r.rssPeak, r.hwm ?? 0);
      return [
        k(r.rows),
        mb(r.rssBefore),
        mb(r.rssPeak),
        r.hwm === null ? 'n/a' : mb(r.hwm),
        mb(peak - r.rssBefore),
        r.firstHwm === null ? 'n/a' : mb(r.firstHwm - r.rssBefore),
        mb(r.rssAfter),
        `${((peak - r.rssBefore) / r.bytes).toFixed(1)}×`,
        r.samples,
      ];
    }),
  ]);
  const scaling = results.slice(1).map((r, i) => {
    const prev = results[i];
    return `${k(prev.rows)}→${k(r.rows)} (rows ×${r.rows / prev.rows}): API ×${(median(r.api) / median(prev.api)).toFixed(1)}, raw ×${(median(r.raw) / median(prev.raw)).toFixed(1)}, DB-only ×${(median(r.db) / median(prev.db)).toFixed(1)}, RSS growth ×${((Math.max(r.rssPeak, r.hwm ?? 0) - r.rssBefore) / Math.max(1, Math.max(prev.rssPeak, prev.hwm ?? 0) - prev.rssBefore)).toFixed(1)}`;
  });
  if (scaling.length) note(`scaling: ${scaling.join('; ')}`);
  const last = results.at(-1)!;
  note(`per 1k rows at ${k(last.rows)}: API ${msText((median(last.api) * 1000) / last.rows)}, DB-only ${msText((median(last.db) * 1000) / last.rows)}`);
  note(
    `DB-only at ${k(last.rows)}: reading the rows without JSON ${msText(last.scan)}, so building the JSON is ~${msText(median(last.db) - last.scan)} ` +
      `(${((100 * (median(last.db) - last.scan)) / median(last.db)).toFixed(0)}% of it)`,
  );
  note(
    `body text ${last.twoByte ? 'has characters beyond Latin-1: V8 holds it as a two-byte string (2 bytes per character, about 2× the body)' : 'is all Latin-1: V8 holds it as a one-byte string'}`,
  );
  const differing = results.filter((r) => !r.sameBody).map((r) => k(r.rows));
  note(differing.length ? `WARNING: API body differs from the raw service output at ${differing.join(', ')}` : 'API bodies are byte-identical to {"version":"v1","data":{…: <raw service output>}}');
  note(`plan at ${k(results.at(-1)!.rows)}:\n${results.at(-1)!.plan.replace(/^/gm, '  ')}`);
}

function verdict(label: string, ok: boolean | null, detail: string): void {
  note(`${label}: ${detail} -> ${ok === null ? 'NOT MEASURED' : ok ? 'MET' : 'NOT MET'}`);
}

// ---------------------------------------------------------------- main

runBench(async () => {
  const startedAt = performance.now();
  const databaseUrl = await freshPostgresUrl();
  const db = openPostgres(databaseUrl, 2);
  onCleanup(() => db.close());
  const pgClient = new pg.Client({ connectionString: databaseUrl, application_name: 'quoting-bench' });
  await pgClient.connect();
  onCleanup(() => pgClient.end());

  // Sign up on a server of its own, then read the workspace id.
  const first = await startQuoting(databaseUrl);
  const { cookie } = await signUp(first.url);
  const wsRes = await fetch(`${first.url}/api/v1/workspace`, { headers: { cookie } });
  const wsBody = (await wsRes.json()) as { data: { workspace: { id: number } } };
  if (wsRes.status !== 200) throw new Error(`GET /api/v1/workspace answered ${wsRes.status}`);
  const workspaceId = wsBody.data.workspace.id;
  const productsProbe = await fetch(`${first.url}/api/v1/products`, { headers: { cookie } });
  const productsProbeBody = await productsProbe.text();
  await first.stop();
  const ctx = { databaseUrl, cookie, workspaceId, knex: db.knex, pgClient };

  // Customers: seeded incrementally (1k, then up to 10k, then up to 50k) in the one workspace.
  const customers: Result[] = [];
  let seeded = 0;
  let seedMs = 0;
  for (const rows of customerSizes) {
    seedMs += (await timed(() => seedCustomers(db.knex, workspaceId, seeded + 1, rows)))[0];
    seeded = rows;
    customers.push(await measure(customersEndpoint, rows, ctx));
  }
  report('customers', customers, '');
  note(`(seeding ${k(seeded)} customers took ${msText(seedMs)})`);

  // Products: only when the endpoint answers a list and the service can be called for the baseline.
  const products: Result[] = [];
  let answersList = false;
  try {
    answersList = productsProbe.status === 200 && Array.isArray((JSON.parse(productsProbeBody) as { data?: { products?: unknown } }).data?.products);
  } catch {
    /* not JSON */
  }
  const productsEp: Endpoint | string = answersList
    ? await productsEndpoint()
    : `GET /api/v1/products answered ${productsProbe.status}: ${productsProbeBody.slice(0, 120)}`;
  if (typeof productsEp === 'string') {
    note(`\nproducts: skipped — ${productsEp}`);
  } else {
    seeded = 0;
    seedMs = 0;
    for (const rows of productSizes) {
      seedMs += (await timed(() => seedProducts(db.knex, workspaceId, seeded + 1, rows)))[0];
      seeded = rows;
      products.push(await measure(productsEp, rows, ctx));
    }
    report('products', products, ` (× ${VARIANTS_PER_PRODUCT} variants each, embedded)`);
    note(`(seeding ${k(seeded)} products and ${k(seeded * VARIANTS_PER_PRODUCT)} variants took ${msText(seedMs)})`);
  }

  console.log('\nTargets');
  const at = (results: Result[], rows: number) => results.find((r) => r.rows === rows);
  const p = at(products, TARGETS.products.rows);
  verdict(`products list (${k(TARGETS.products.rows)} × ${VARIANTS_PER_PRODUCT}) p50 < ${TARGETS.products.ms} ms`, p ? median(p.api) < TARGETS.products.ms : null, p ? msText(median(p.api)) : 'not run');
  const c = at(customers, TARGETS.customers.rows);
  verdict(`customers list (${k(TARGETS.customers.rows)}) p50 < ${TARGETS.customers.ms} ms`, c ? median(c.api) < TARGETS.customers.ms : null, c ? msText(median(c.api)) : 'not run');
  const all = [...customers, ...products];
  const growths = all.map((r) => Math.max(r.rssPeak, r.hwm ?? 0) - r.rssBefore);
  const worst = Math.max(...growths);
  const worstAt = all[growths.indexOf(worst)];
  const worstLabel = worstAt ? `${customers.includes(worstAt) ? 'customers' : 'products'} ${k(worstAt.rows)}` : '';
  verdict(`server RSS growth < ${TARGETS.rssGrowthMb} MB (largest over every size run)`, all.length ? worst < TARGETS.rssGrowthMb * MB : null, `${mb(worst)} (${worstLabel})`);
  note(`\ntotal ${((performance.now() - startedAt) / 1000).toFixed(0)} s`);
});
