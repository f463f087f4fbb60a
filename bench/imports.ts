/**
 * CSV imports on the real app (`node bin/quoting serve`): `--rows` (50,000) product rows (realistic widths,
 * 3 variants per product) and `--rows` order items (3 items per order, a customer per 3 orders), posted as
 * raw text/csv to `POST /api/v1/products/import` and `/orders/import`.
 *
 * PostgreSQL, alternating rounds (`--rounds`, 3), each kind in turn: COPY of the same file into a plain table of
 * text columns (the server reading the same CSV, nothing else); the floor: (a) csv-parse alone reading the file
 * in this process with the import's own options, and (b) the database alone doing the same writes, set-based: in
 * one transaction, COPY of the file into a temporary staging table, then INSERT ... SELECT into the real tables
 * of a fresh workspace, indexes and triggers included (products and variants; resp. customers, orders, items and
 * their events); then the import into a fresh workspace, then the re-import of the same file (every row
 * unchanged). Ratios are per round (import ÷ COPY, import ÷ (a + b)), min / median / max. The server's RSS is
 * sampled during each import (growth = peak − RSS before the request). PGlite: the same imports, reported.
 *   node dist/bench/imports.js [--rows 50000] [--rounds 3] [--pglite-rounds 1] [--sample-ms 10]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { parse } from 'csv-parse';
import knexFactory, { type Knex } from 'knex';
import { csvOptions } from '../src/imports/csv.js';
import { itemJsonText } from '../src/orders/service.js';
import { orderCsv, productCsv } from './imports-data.js';
import { postImport } from './post-import.js';
import { mb, MB } from './rss.js';
import { benchArgs, fmt, freshPostgresUrl, note, onCleanup, printTable, spread, runBench, signUp, startEmbedded, startQuoting, loadAverage } from './lib.js';

const { values } = benchArgs('imports.js', {
  rows: { type: 'string', default: '50000' },
  rounds: { type: 'string', default: '3' },
  'pglite-rounds': { type: 'string', default: '1' },
  'sample-ms': { type: 'string', default: '10' },
});
const rows = Number(values.rows);
const rounds = Number(values.rounds);
const pgliteRounds = Number(values['pglite-rounds']);
const sampleMs = Number(values['sample-ms']);
const TARGETS = { vsCopy: 5, seconds: 5, rssGrowthMb: 100 };

/** (a) csv-parse alone: the file read and parsed record by record as the import reads it, nothing else. */
async function parseAlone(file: string): Promise<number> {
  const started = performance.now();
  let records = 0;
  await pipeline(fs.createReadStream(file), parse(csvOptions(',')), async (source: AsyncIterable<string[]>) => {
    for await (const _record of source) records++;
  });
  const ms = performance.now() - started;
  if (records !== rows + 1) throw new Error(`csv-parse read ${records} records, expected ${rows + 1}`);
  return ms;
}

/** The staging tables' columns: the files' columns in order, typed as the real tables type them. */
const stagingColumns = {
  products: 'product_sku text, name text, type text, status text, brand text, category text, description text, variant_sku text, variant_name text, price numeric, size text, color text',
  orders: 'order_number text, external_id text, external_source text, status text, currency text, customer_email text, customer_name text, channel_id int, placed_at timestamptz, sku text, description text, quantity numeric, price numeric',
};

/**
 * (b) the database's floor for the same writes: one transaction, the file copied into a staging table and
 * written set-based into a fresh workspace's real tables (the same upserts, so the same indexes, constraints and
 * stored-JSON triggers). Orders also get their `customer.created` and `order.created` events with the same bodies.
 */
async function databaseFloor(db: Knex, kind: 'products' | 'orders', file: string): Promise<number> {
  const tag = `${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2)}`;
  const [{ id: workspace }] = await db('workspaces').insert({ name: 'floor', slug: `floor-${tag}`, public_key: `pk-${tag}`, secret_key_hash: `sk-${tag}` }).returning('id');
  const started = performance.now();
  await db.transaction(async (trx) => {
    await trx.raw(`create temporary table staging (${stagingColumns[kind]}) on commit drop`);
    await trx.raw(`copy staging from '${file}' with (format csv, header true)`);
    if (kind === 'products') {
      const { rowCount } = await trx.raw(
        `with p as (
           insert into products (workspace_id, sku, name, type, status, brand, category, description)
           select distinct on (product_sku) ?, product_sku, name, type, status, brand, category, description from staging order by product_sku
           on conflict (workspace_id, sku) do update set name = excluded.name, type = excluded.type, status = excluded.status,
             brand = excluded.brand, category = excluded.category, description = excluded.description, updated_at = now()
           returning id, sku)
         insert into variants (workspace_id, product_id, sku, name, price, attributes)
         select ?, p.id, s.variant_sku, s.variant_name, s.price, json_build_object('size', s.size, 'color', s.color)
           from staging s join p on p.sku = s.product_sku
         on conflict (workspace_id, sku) do update set name = excluded.name, price = excluded.price, attributes = excluded.attributes, updated_at = now()`,
        [workspace, workspace],
      );
      if (rowCount !== rows) throw new Error(`the floor wrote ${rowCount} variants, expected ${rows}`);
      return;
    }
    await trx.raw(
      `with c as (
         insert into customers (workspace_id, email, name)
         select distinct on (customer_email) ?, customer_email, customer_name from staging order by customer_email
         on conflict (workspace_id, email) do update set name = excluded.name, updated_at = now()
           where excluded.name is not null and customers.name is distinct from excluded.name
         returning id, email, api_json),
       e as (
         insert into events (id, workspace_id, type, data)
         select 'evt_' || upper(substr(md5(random()::text), 1, 26)), ?, 'customer.created', ('{"customer":' || c.api_json || '}')::json from c),
       o as (
         insert into orders (workspace_id, external_source, external_id, order_number, status, currency, customer_id, channel_id, placed_at, subtotal, total)
         select ?, s.external_source, coalesce(s.external_id, s.order_number), min(s.order_number), min(s.status), min(s.currency), min(c.id),
                min(s.channel_id), min(s.placed_at), sum(round(s.quantity * s.price, 2)), sum(round(s.quantity * s.price, 2))
           from staging s join c on c.email = s.customer_email
          group by s.external_source, coalesce(s.external_id, s.order_number)
         on conflict (workspace_id, external_source, external_id) do update set order_number = excluded.order_number, status = excluded.status,
           currency = excluded.currency, customer_id = excluded.customer_id, channel_id = excluded.channel_id, placed_at = excluded.placed_at,
           subtotal = excluded.subtotal, total = excluded.subtotal - orders.discount_amount + orders.tax_amount, updated_at = now()
         returning id, external_source, external_id)
       insert into order_items (workspace_id, order_id, sku, description, quantity, price, line_total)
       select ?, o.id, s.sku, s.description, s.quantity, s.price, round(s.quantity * s.price, 2)
         from staging s join o on o.external_source = s.external_source and o.external_id = coalesce(s.external_id, s.order_number)`,
      [workspace, workspace, workspace, workspace],
    );
    const { rowCount } = await trx.raw(
      `insert into events (id, workspace_id, type, data)
       select 'evt_' || upper(substr(md5(random()::text), 1, 26)), o.workspace_id, 'order.created',
              ('{"order":' || o.api_json || ',"items":[' || coalesce((
                 select string_agg(${itemJsonText('i')}, ',' order by i.id) from order_items i
                  where i.order_id = o.id and i.workspace_id = o.workspace_id), '') || ']}')::json
         from orders o where o.workspace_id = ? order by o.id`,
      [workspace],
    );
    if (rowCount !== Math.ceil(rows / 3)) throw new Error(`the floor wrote ${rowCount} order events, expected ${Math.ceil(rows / 3)}`);
  });
  return performance.now() - started;
}

runBench(async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quoting-bench-imports-'));
  fs.chmodSync(dir, 0o755); // the PostgreSQL server reads the files for COPY
  onCleanup(async () => fs.rmSync(dir, { recursive: true, force: true }));
  const files = { products: path.join(dir, 'products.csv'), orders: path.join(dir, 'orders.csv') };
  fs.writeFileSync(files.products, productCsv(rows));
  fs.writeFileSync(files.orders, orderCsv(rows));
  for (const file of Object.values(files)) fs.chmodSync(file, 0o644);
  note(`files: products ${mb(fs.statSync(files.products).size)}, orders ${mb(fs.statSync(files.orders).size)} (${rows} rows each)`);
  note(`load average before: ${loadAverage()}`);

  // ---------------------------------------------------------------- PostgreSQL
  const url = await freshPostgresUrl();
  const server = await startQuoting(url);
  const db = knexFactory({ client: 'pg', connection: url, pool: { min: 1, max: 1 } });
  onCleanup(() => db.destroy());
  const results: Record<string, { copy: number[]; parse: number[]; floor: number[]; first: number[]; again: number[]; rss: number[]; againRss: number[] }> = {};
  for (let round = 1; round <= rounds; round++) {
    const account = await signUp(server.url);
    for (const kind of ['products', 'orders'] as const) {
      const r = (results[kind] ??= { copy: [], parse: [], floor: [], first: [], again: [], rss: [], againRss: [] });
      await db.raw(`drop table if exists bench_copy_${kind}`);
      await db.raw(`create table bench_copy_${kind} (${stagingColumns[kind]})`);
      const started = performance.now();
      await db.raw(`copy bench_copy_${kind} from '${files[kind]}' with (format csv, header true)`);
      r.copy.push(performance.now() - started);
      r.parse.push(await parseAlone(files[kind]));
      r.floor.push(await databaseFloor(db, kind, files[kind]));
      const first = await postImport(server, account.cookie, kind, files[kind], sampleMs);
      r.first.push(first.ms);
      r.rss.push(first.rssGrowth);
      const again = await postImport(server, account.cookie, kind, files[kind], sampleMs);
      r.again.push(again.ms);
      r.againRss.push(again.rssGrowth);
      note(
        `round ${round} ${kind}: COPY ${fmt(r.copy.at(-1)!)} ms, csv-parse ${fmt(r.parse.at(-1)!)} ms, database floor ${fmt(r.floor.at(-1)!)} ms, ` +
          `import ${fmt(first.ms)} ms ${JSON.stringify(first.report)} (RSS +${fmt(first.rssGrowth / MB)} MB), re-import ${fmt(again.ms)} ms ${JSON.stringify(again.report)}`,
      );
    }
    await db.raw('drop table if exists bench_copy_products, bench_copy_orders');
  }
  const ratios = (app: number[], base: number[]) => app.map((v, i) => v / base[i]);
  printTable(`PostgreSQL, ${rows} rows, ${rounds} rounds (min / median / max)`, [
    ['', 'COPY ms', '(a) csv-parse ms', '(b) db floor ms', 'import ms', 'import ÷ COPY', 'import ÷ (a + b)', 're-import ms', 'RSS growth MB (max)', 're-import RSS MB (max)'],
    ...(['products', 'orders'] as const).map((kind) => {
      const r = results[kind];
      const floor = r.parse.map((v, i) => v + r.floor[i]);
      return [
        kind, spread(r.copy), spread(r.parse), spread(r.floor), spread(r.first), spread(ratios(r.first, r.copy)), spread(ratios(r.first, floor)),
        spread(r.again), fmt(Math.max(...r.rss) / MB), fmt(Math.max(...r.againRss) / MB),
      ];
    }),
  ]);
  note(`targets: import ≤ ${TARGETS.vsCopy}× COPY and under ${TARGETS.seconds} s; RSS growth < ${TARGETS.rssGrowthMb} MB; re-import ≤ first import`);
  note(`load average after the PostgreSQL rounds: ${loadAverage()}`);
  await server.stop();

  // ---------------------------------------------------------------- PGlite
  if (pgliteRounds < 1) return;
  // A new data directory, migrated by the server as it starts.
  const embedded = await startEmbedded(path.join(dir, 'pglite'));
  const pglite: typeof results = {};
  for (let round = 1; round <= pgliteRounds; round++) {
    const account = await signUp(embedded.url);
    for (const kind of ['products', 'orders'] as const) {
      const r = (pglite[kind] ??= { copy: [], parse: [], floor: [], first: [], again: [], rss: [], againRss: [] });
      const first = await postImport(embedded, account.cookie, kind, files[kind], sampleMs);
      const again = await postImport(embedded, account.cookie, kind, files[kind], sampleMs);
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
      return [kind, spread(r.first), spread(r.again), fmt(Math.max(...r.rss) / MB), fmt(Math.max(...r.againRss) / MB)];
    }),
  ]);
  note(`load average after: ${loadAverage()}`);
  await embedded.stop();
});
