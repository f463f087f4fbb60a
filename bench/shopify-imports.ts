/**
 * Shopify exports against the service's own CSV columns, on the real app (`node bin/quoting serve`): a `--rows`
 * (50,000) row Shopify product export (products_export.csv: 1 to 8 variants per product through Option1/Option2
 * Value, a product's later rows with Title and the product's columns empty, Body (HTML) with commas, quotes and line
 * breaks, drafts, variants without a SKU, a few image-only rows) and the same catalogue in the own product columns;
 * a `--rows` line-item Shopify orders export (orders_export.csv, all its columns; 1 to 4 items per order) and the
 * same orders in the own order columns (shopify-imports-data.ts). Each file is posted as raw text/csv to
 * `POST /api/v1/products/import` or `/orders/import`, into a fresh workspace every time, alternating own, Shopify,
 * own, Shopify, for `--rounds` rounds on PostgreSQL and `--pglite-rounds` on the embedded database. Reported: the
 * ratio Shopify ÷ own per round (min / median / max), each side's time, the ratio of the server's CPU time (all its
 * threads; the steadier figure on a shared machine), and the server's RSS growth during each
 * import (peak − RSS before the request) and over the run. Targets: ≤ 1.3 ×, RSS growth < 100 MB. After the first
 * round, the two workspaces of each kind are checked to hold the same records (GET /products, /orders).
 *   node dist/bench/shopify-imports.js [--rows 50000] [--rounds 5] [--pglite-rounds 1] [--db postgres,embedded] [--kinds products,orders] [--sample-ms 10]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { mb, MB, readStatus } from './rss.js';
import { postImport } from './post-import.js';
import { orderFiles, productFiles } from './shopify-imports-data.js';
import {
  benchArgs, databasesOption, dbName, fmt, freshTarget, loadAverage, note, onCleanup, printTable, roundsOption, runBench, signUp, spread, startServe,
  type ChildServer, type DbKind,
} from './lib.js';

const { values } = benchArgs('shopify-imports.js', {
  rows: { type: 'string', default: '50000' },
  rounds: { type: 'string', default: '5' },
  'pglite-rounds': { type: 'string', default: '1' },
  db: { type: 'string', default: 'postgres,embedded' },
  kinds: { type: 'string', default: 'products,orders' },
  'sample-ms': { type: 'string', default: '10' },
});
const rows = Number(values.rows);
/** PostgreSQL rounds: at least 3 (min / median / max); the embedded database's are slower, and 1 is allowed. */
const roundsOf = (kind: DbKind) => (kind === 'postgres' ? roundsOption(values.rounds) : Number(values['pglite-rounds']));
const sampleMs = Number(values['sample-ms']);
const kinds = values.kinds.split(',').map((k) => k.trim()) as ('products' | 'orders')[];
for (const kind of kinds) if (kind !== 'products' && kind !== 'orders') throw new Error(`--kinds: "${kind}" is neither products nor orders`);
const TARGETS = { ratio: 1.3, rssGrowthMb: 100 };

type Report = Record<string, number>;

/**
 * Keys that differ between two workspaces holding the same records (ids, times), and an order's discount, tax and
 * total, which only the Shopify export gives.
 */
const unlike = new Set(['id', 'product_id', 'customer_id', 'created_at', 'updated_at', 'discount_amount', 'tax_amount', 'total']);
const comparable = (value: unknown): unknown =>
  Array.isArray(value)
    ? value.map(comparable)
    : value && typeof value === 'object'
      ? Object.fromEntries(Object.entries(value).filter(([key]) => !unlike.has(key)).map(([key, v]) => [key, comparable(v)]))
      : value;

/** Both workspaces' lists (every record, ordered by id) hold the same records: the two files say the same. */
async function checkSameRecords(server: ChildServer, kind: 'products' | 'orders', own: string, shopify: string): Promise<void> {
  const list = async (cookie: string) => {
    const res = await fetch(`${server.url}/api/v1/${kind}`, { headers: { cookie } });
    if (res.status !== 200) throw new Error(`GET /${kind} answered ${res.status}`);
    return comparable((await res.json()).data[kind]) as unknown[];
  };
  const [a, b] = [await list(own), await list(shopify)];
  const differ = a.findIndex((record, i) => JSON.stringify(record) !== JSON.stringify(b[i]));
  if (a.length !== b.length || differ !== -1) {
    throw new Error(`${kind}: the own file stored ${a.length}, the Shopify export ${b.length}; first difference: ${JSON.stringify(a[differ])} against ${JSON.stringify(b[differ])}`);
  }
  note(`${kind}: both workspaces hold the same ${a.length} records (ids, times and the orders' discount, tax and total aside)`);
}

interface Side {
  ms: number[];
  /** The server's CPU time (all its threads), steadier than wall time on a shared machine. */
  cpu: number[];
  rss: number[];
  report?: Report;
  /** The session of the workspace the last import went into. */
  cookie?: string;
}

runBench(async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quoting-bench-shopify-'));
  onCleanup(async () => fs.rmSync(dir, { recursive: true, force: true }));
  const catalogue = productFiles(rows);
  const orders = orderFiles(rows);
  const files = {
    products: { own: path.join(dir, 'products.csv'), shopify: path.join(dir, 'products_export.csv') },
    orders: { own: path.join(dir, 'orders.csv'), shopify: path.join(dir, 'orders_export.csv') },
  };
  fs.writeFileSync(files.products.own, catalogue.own);
  fs.writeFileSync(files.products.shopify, catalogue.shopify);
  fs.writeFileSync(files.orders.own, orders.own);
  fs.writeFileSync(files.orders.shopify, orders.shopify);
  const size = (file: string) => mb(fs.statSync(file).size);
  note(
    `products: ${catalogue.products} products, ${catalogue.variants} variants; Shopify ${rows} rows (${catalogue.imageRows} image-only) ${size(files.products.shopify)}, own ${catalogue.variants} rows ${size(files.products.own)}`,
  );
  note(`orders: ${orders.orders} orders, ${rows} items, ${orders.customers} customers; Shopify ${size(files.orders.shopify)}, own ${size(files.orders.own)}`);

  for (const db of databasesOption(values.db)) {
    const rounds = roundsOf(db);
    if (rounds < 1) continue;
    note(`\n${dbName(db)}: load average before: ${loadAverage()}`);
    const server = await startServe(await freshTarget(db));
    const pid = server.child.pid!;
    const startRss = readStatus(pid, 'VmRSS');
    const results = { products: { own: { ms: [], cpu: [], rss: [] } as Side, shopify: { ms: [], cpu: [], rss: [] } as Side }, orders: { own: { ms: [], cpu: [], rss: [] } as Side, shopify: { ms: [], cpu: [], rss: [] } as Side } };
    for (let round = 1; round <= rounds; round++) {
      for (const kind of kinds) {
        for (const format of ['own', 'shopify'] as const) {
          const side = results[kind][format];
          const { cookie } = await signUp(server.url);
          const measured = await postImport(server, cookie, kind, files[kind][format], sampleMs);
          side.ms.push(measured.ms);
          side.cpu.push(measured.cpu);
          side.rss.push(measured.rssGrowth);
          side.report = measured.report;
          side.cookie = cookie;
        }
        if (round === 1) await checkSameRecords(server, kind, results[kind].own.cookie!, results[kind].shopify.cookie!);
        const { own, shopify } = results[kind];
        note(
          `round ${round} ${kind}: own ${fmt(own.ms.at(-1)!)} ms, CPU ${fmt(own.cpu.at(-1)!)} ms ${JSON.stringify(own.report)} (RSS +${fmt(own.rss.at(-1)! / MB)} MB), ` +
            `Shopify ${fmt(shopify.ms.at(-1)!)} ms, CPU ${fmt(shopify.cpu.at(-1)!)} ms ${JSON.stringify(shopify.report)} (RSS +${fmt(shopify.rss.at(-1)! / MB)} MB)`,
        );
        // The two files hold the same records: the same rows imported, created and failed (the image rows skipped).
        for (const key of ['rows', 'created', 'failed'] as const) {
          if (own.report![key] !== shopify.report![key]) throw new Error(`${kind}: own ${key} ${own.report![key]}, Shopify ${shopify.report![key]}`);
        }
      }
    }
    const endRss = readStatus(pid, 'VmRSS');
    const row = (kind: 'products' | 'orders') => {
      const { own, shopify } = results[kind];
      const ratios = shopify.ms.map((ms, i) => ms / own.ms[i]);
      const cpuRatios = shopify.cpu.map((cpu, i) => cpu / own.cpu[i]);
      const worstRss = Math.max(...shopify.rss) / MB;
      return [
        kind, spread(own.ms), spread(shopify.ms), spread(ratios, 2), Math.max(...ratios) <= TARGETS.ratio ? 'yes' : 'NO', spread(cpuRatios, 2),
        fmt(Math.max(...own.rss) / MB), fmt(worstRss), worstRss < TARGETS.rssGrowthMb ? 'yes' : 'NO',
      ];
    };
    printTable(`${dbName(db)}, ${rows} rows, ${rounds} round(s), each import into a fresh workspace (min / median / max)`, [
      ['', 'own ms', 'Shopify ms', 'Shopify ÷ own', `≤ ${TARGETS.ratio}`, 'server CPU Shopify ÷ own', 'own RSS growth MB (max)', 'Shopify RSS growth MB (max)', `< ${TARGETS.rssGrowthMb}`],
      ...kinds.map(row),
    ]);
    note(`server RSS: ${mb(startRss)} at start, ${mb(endRss)} after the last import; load average after: ${loadAverage()}`);
    await server.stop();
  }
});
