/**
 * Deleting a workspace's rows while another workspace holds many: whether a delete reads its own workspace alone.
 *
 * For each kind of database two servers run, each on a database of its own, seeded alike through the API with a
 * small workspace ("own": for each round, an unused customer, an unused channel, a product of three variants and a
 * draft quote of one line naming the product's first variant). The second database ("crowded") also holds another
 * workspace of `--rows` (50,000) customers, products (three variants each), quotes (one line each, naming a variant),
 * orders and visitors, seeded with SQL (bench/lists-seed.ts, bench/quotes-seed.ts) and analyzed; the first ("quiet")
 * holds the same workspace empty. Both servers are restarted once seeded. Then, after two discarded rounds, round
 * after round, the same deletions on each, quiet then crowded (A B A B): `DELETE /api/v1/customers/:id`,
 * `/channels/:id`, `/products/:id`, `/quotes/:id`, one request at a time; printed: min / median / max ms of each on
 * each database, and crowded ÷ quiet of the medians, which is 1 when a delete reads only its own workspace's rows and
 * grows with the other workspace when it reads theirs too (PostgreSQL checks a foreign key on the referencing table
 * by the key's columns: a key without the workspace, or without an index leading with its columns, reads every
 * workspace's rows; migration 20261127030000_references_with_workspace).
 *   node dist/bench/deletes.js [--db postgres,embedded] [--rows 50000] [--rounds 10]
 */
import type { Knex } from 'knex';
import { openPostgres } from '../src/db/database.js';
import { seedCustomers, seedProducts } from './lists-seed.js';
import { seedOrders, seedQuotes } from './quotes-seed.js';
import {
  benchArgs, databasesOption, dbName, freshTarget, loadAverage, median, note, printTable, roundsOption, runBench, signUp, spread, startServe,
  withDataDir, type ChildServer, type DbKind, type Target,
} from './lib.js';

const { values } = benchArgs('deletes.js', {
  db: { type: 'string', default: 'postgres,embedded' },
  rows: { type: 'string', default: '50000' },
  rounds: { type: 'string', default: '10' },
});
const rows = Number(values.rows);
const rounds = roundsOption(values.rounds);
/** Two discarded rounds first. */
const WARMUP = 2;
const items = rounds + WARMUP;

const KINDS = ['customers', 'channels', 'products', 'quotes'] as const;
type Kind = (typeof KINDS)[number];

interface Own {
  server: ChildServer;
  headers: Record<string, string>;
  ids: Record<Kind, number[]>;
  otherEmail: string;
}

async function call(server: ChildServer, headers: Record<string, string>, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(`${server.url}/api/v1${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${path} answered ${res.status}: ${text}`);
  return JSON.parse(text).data;
}

/** Signs up the own workspace and the other one, and creates the own workspace's rows through the API. */
async function ownWorkspace(server: ChildServer): Promise<Own> {
  const other = await signUp(server.url);
  const { cookie } = await signUp(server.url);
  const headers = { cookie, 'content-type': 'application/json' };
  const ids: Record<Kind, number[]> = { customers: [], channels: [], products: [], quotes: [] };
  const customer = (await call(server, headers, 'POST', '/customers', { email: `quoted.${Date.now()}@example.com`, name: 'Quoted' })).customer.id;
  for (let i = 0; i < items; i++) {
    ids.customers.push((await call(server, headers, 'POST', '/customers', { email: `unused.${i}.${Date.now()}@example.com`, name: `Unused ${i}` })).customer.id);
    ids.channels.push((await call(server, headers, 'POST', '/channels', { name: `Unused ${i}` })).channel.id);
    const sku = `DEL-${i}`;
    const variants = ['A', 'B', 'C'].map((v) => ({ sku: `${sku}-${v}`, price: '5.00' }));
    ids.products.push((await call(server, headers, 'POST', '/products', { sku, name: `Thing ${i}`, variants })).product.id);
    const lines = [{ sku: `${sku}-A`, quantity: '1' }];
    ids.quotes.push((await call(server, headers, 'POST', '/quotes', { customer_id: customer, lines })).quote.id);
  }
  return { server, headers, ids, otherEmail: other.email };
}

/** The other workspace's rows: `rows` of each list, a line per quote naming a variant, a visitor per customer. */
async function crowd(knex: Knex, email: string): Promise<void> {
  const ws: number = (await knex.raw('/* all workspaces: the bench reads its own rows */ select workspace_id from users where email = ?', [email])).rows[0].workspace_id;
  await seedCustomers(knex, ws, 1, rows, false);
  await seedProducts(knex, ws, 1, rows, false);
  await seedQuotes(knex, ws, 1, rows, 2025, false);
  await seedOrders(knex, ws, 1, rows, false);
  await knex.raw(
    `insert into quote_lines (workspace_id, quote_id, variant_id, sku, description, quantity, price, line_total)
     select ?, q.id, v.id, v.sku, 'Seeded line', 1, v.price, v.price
     from (select id, row_number() over (order by id) n from quotes where workspace_id = ?) q
     join (select id, sku, coalesce(price, 1) price, row_number() over (order by id) n from variants where workspace_id = ?) v using (n)`,
    [ws, ws, ws],
  );
  await knex.raw(`insert into visitors (workspace_id, visitor_id, customer_id) select ?, 'seeded-' || id, id from customers where workspace_id = ?`, [ws, ws]);
  await knex.raw('analyze');
}

/** The server is restarted after seeding, the quiet one too, so that both measure a server started on its data. */
async function seeded(target: Target, crowded: boolean): Promise<Own> {
  const first = await startServe(target);
  const own = await ownWorkspace(first);
  await first.stop(); // one process may hold the embedded database
  if (crowded) {
    const started = performance.now();
    if (target.kind === 'embedded') await withDataDir(target.dataDir, ({ knex }) => crowd(knex, own.otherEmail));
    else {
      const database = openPostgres(target.url, 2);
      await crowd(database.knex, own.otherEmail).finally(() => database.close());
    }
    note(`${dbName(target.kind)}: the other workspace seeded with ${rows} of each in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  }
  const server = await startServe(target);
  // Sessions live in the database: the cookie holds across the restart.
  return { ...own, server };
}

async function timedDelete(own: Own, kind: Kind, round: number): Promise<number> {
  const started = performance.now();
  await call(own.server, own.headers, 'DELETE', `/${kind}/${own.ids[kind][round]}`);
  return performance.now() - started;
}

async function measure(kind: DbKind): Promise<(string | number)[][]> {
  const quiet = await seeded(await freshTarget(kind), false);
  const crowded = await seeded(await freshTarget(kind), true);
  const times = Object.fromEntries(KINDS.map((k) => [k, { quiet: [] as number[], crowded: [] as number[] }])) as Record<Kind, { quiet: number[]; crowded: number[] }>;
  for (let round = 0; round < items; round++) {
    for (const k of KINDS) {
      const a = await timedDelete(quiet, k, round);
      const b = await timedDelete(crowded, k, round);
      if (round < WARMUP) continue;
      times[k].quiet.push(a);
      times[k].crowded.push(b);
    }
  }
  return KINDS.map((k) => [dbName(kind), `DELETE /${k}/:id`, spread(times[k].quiet), spread(times[k].crowded), (median(times[k].crowded) / median(times[k].quiet)).toFixed(2)]);
}

runBench(async () => {
  const load = loadAverage();
  const table: (string | number)[][] = [];
  for (const kind of databasesOption(values.db)) table.push(...(await measure(kind)));
  printTable(`Deletes of one workspace's rows, another workspace empty (quiet) or holding ${rows} of each (crowded); ${rounds} rounds alternating, ms min / median / max`, [
    ['database', 'request', 'quiet', 'crowded', 'crowded ÷ quiet'],
    ...table,
  ]);
  note(`load average at start ${load}, at end ${loadAverage()}`);
});
