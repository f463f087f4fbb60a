/**
 * CSV imports on the real app (`node bin/quoting serve`): `--rows` (50,000) product rows (realistic widths,
 * 3 variants per product) and `--rows` order items (3 items per order, a customer per 3 orders), posted as
 * raw text/csv to `POST /api/v1/products/import` and `/orders/import`.
 *
 * PostgreSQL, alternating rounds (`--rounds`, 3): COPY of the same file into a plain table of text columns
 * (the baseline: the server reading the same CSV, nothing else), then the import into a fresh workspace,
 * then the re-import of the same file (every row unchanged). The server's RSS is sampled during each import
 * (growth = peak − RSS before the request). PGlite: the same imports, reported (no COPY baseline there).
 *   node dist/bench/imports.js [--rows 50000] [--rounds 3] [--pglite-rounds 1] [--sample-ms 10]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import knexFactory from 'knex';
import { orderCsv, productCsv } from './imports-data.js';
import { mb, MB, readStatus, startSampler } from './rss.js';
import { freshPostgresUrl, median, note, onCleanup, printTable, runBench, signUp, startEmbedded, startQuoting, type ChildServer } from './lib.js';

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '50000' },
    rounds: { type: 'string', default: '3' },
    'pglite-rounds': { type: 'string', default: '1' },
    'sample-ms': { type: 'string', default: '10' },
  },
});
const rows = Number(values.rows);
const rounds = Number(values.rounds);
const pgliteRounds = Number(values['pglite-rounds']);
const sampleMs = Number(values['sample-ms']);
const TARGETS = { vsCopy: 5, seconds: 5, rssGrowthMb: 100 };

interface Measured {
  ms: number;
  rssGrowth: number;
  report: Record<string, number>;
}

async function postImport(server: ChildServer, cookie: string, kind: string, file: string): Promise<Measured> {
  const pid = server.child.pid!;
  const before = readStatus(pid, 'VmRSS');
  const sampler = await startSampler(pid, sampleMs);
  const started = performance.now();
  const res = await fetch(`${server.url}/api/v1/${kind}/import`, {
    method: 'POST',
    headers: { cookie, 'content-type': 'text/csv' },
    body: fs.createReadStream(file) as unknown as BodyInit,
    duplex: 'half',
  } as RequestInit);
  const text = await res.text();
  const ms = performance.now() - started;
  const { peak } = await sampler.stop();
  if (res.status !== 200) throw new Error(`${kind} import answered ${res.status}: ${text.slice(0, 300)}`);
  const { errors, ...report } = JSON.parse(text).data.import;
  if (errors.length) throw new Error(`${kind} import had row errors: ${JSON.stringify(errors.slice(0, 3))}`);
  return { ms, rssGrowth: peak - before, report };
}

const loadavg = () => fs.readFileSync('/proc/loadavg', 'utf8').trim();

const fmt = (value: number) => (value >= 100 ? value.toFixed(0) : value.toFixed(1));
const stats = (samples: number[]) => `${fmt(Math.min(...samples))} / ${fmt(median(samples))} / ${fmt(Math.max(...samples))}`;

runBench(async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quoting-bench-imports-'));
  fs.chmodSync(dir, 0o755); // the PostgreSQL server reads the files for COPY
  onCleanup(async () => fs.rmSync(dir, { recursive: true, force: true }));
  const files = { products: path.join(dir, 'products.csv'), orders: path.join(dir, 'orders.csv') };
  fs.writeFileSync(files.products, productCsv(rows));
  fs.writeFileSync(files.orders, orderCsv(rows));
  for (const file of Object.values(files)) fs.chmodSync(file, 0o644);
  note(`files: products ${mb(fs.statSync(files.products).size)}, orders ${mb(fs.statSync(files.orders).size)} (${rows} rows each)`);
  note(`/proc/loadavg before: ${loadavg()}`);

  // ---------------------------------------------------------------- PostgreSQL
  const url = await freshPostgresUrl();
  const server = await startQuoting(url);
  const db = knexFactory({ client: 'pg', connection: url, pool: { min: 1, max: 1 } });
  onCleanup(() => db.destroy());
  const columns = {
    products: 'product_sku text, name text, type text, status text, brand text, category text, description text, variant_sku text, variant_name text, price numeric, size text, color text',
    orders: 'order_number text, external_id text, external_source text, status text, currency text, customer_email text, customer_name text, channel_id int, placed_at timestamptz, sku text, description text, quantity numeric, price numeric',
  };
  const results: Record<string, { copy: number[]; first: number[]; again: number[]; rss: number[]; againRss: number[] }> = {};
  for (let round = 1; round <= rounds; round++) {
    const account = await signUp(server.url);
    for (const kind of ['products', 'orders'] as const) {
      const r = (results[kind] ??= { copy: [], first: [], again: [], rss: [], againRss: [] });
      await db.raw(`drop table if exists bench_copy_${kind}`);
      await db.raw(`create table bench_copy_${kind} (${columns[kind]})`);
      const started = performance.now();
      await db.raw(`copy bench_copy_${kind} from '${files[kind]}' with (format csv, header true)`);
      r.copy.push(performance.now() - started);
      const first = await postImport(server, account.cookie, kind, files[kind]);
      r.first.push(first.ms);
      r.rss.push(first.rssGrowth);
      const again = await postImport(server, account.cookie, kind, files[kind]);
      r.again.push(again.ms);
      r.againRss.push(again.rssGrowth);
      note(`round ${round} ${kind}: COPY ${fmt(r.copy.at(-1)!)} ms, import ${fmt(first.ms)} ms ${JSON.stringify(first.report)}, re-import ${fmt(again.ms)} ms ${JSON.stringify(again.report)}`);
    }
    await db.raw('drop table if exists bench_copy_products, bench_copy_orders');
  }
  printTable(`PostgreSQL, ${rows} rows, ${rounds} rounds (min / median / max)`, [
    ['', 'COPY ms', 'import ms', 'import ÷ COPY (median)', 're-import ms', 'RSS growth MB (max)', 're-import RSS MB (max)'],
    ...(['products', 'orders'] as const).map((kind) => {
      const r = results[kind];
      return [kind, stats(r.copy), stats(r.first), (median(r.first) / median(r.copy)).toFixed(1), stats(r.again), fmt(Math.max(...r.rss) / MB), fmt(Math.max(...r.againRss) / MB)];
    }),
  ]);
  note(`targets: import ≤ ${TARGETS.vsCopy}× COPY and under ${TARGETS.seconds} s; RSS growth < ${TARGETS.rssGrowthMb} MB; re-import ≤ first import`);
  note(`/proc/loadavg after the PostgreSQL rounds: ${loadavg()}`);
  await server.stop();

  // ---------------------------------------------------------------- PGlite
  // A new data directory, migrated by the server as it starts.
  const embedded = await startEmbedded(path.join(dir, 'pglite'));
  const pglite: typeof results = {};
  for (let round = 1; round <= pgliteRounds; round++) {
    const account = await signUp(embedded.url);
    for (const kind of ['products', 'orders'] as const) {
      const r = (pglite[kind] ??= { copy: [], first: [], again: [], rss: [], againRss: [] });
      const first = await postImport(embedded, account.cookie, kind, files[kind]);
      const again = await postImport(embedded, account.cookie, kind, files[kind]);
      r.first.push(first.ms);
      r.again.push(again.ms);
      r.rss.push(first.rssGrowth);
      r.againRss.push(again.rssGrowth);
      note(`PGlite round ${round} ${kind}: import ${fmt(first.ms)} ms, re-import ${fmt(again.ms)} ms`);
    }
  }
  printTable(`PGlite (embedded), ${rows} rows, ${pgliteRounds} round(s) (min / median / max)`, [
    ['', 'import ms', 're-import ms', 'RSS growth MB (max)', 're-import RSS MB (max)'],
    ...(['products', 'orders'] as const).map((kind) => {
      const r = pglite[kind];
      return [kind, stats(r.first), stats(r.again), fmt(Math.max(...r.rss) / MB), fmt(Math.max(...r.againRss) / MB)];
    }),
  ]);
  note(`/proc/loadavg after: ${loadavg()}`);
  await embedded.stop();
});
