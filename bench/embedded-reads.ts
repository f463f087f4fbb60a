/**
 * Where an embedded list's time goes in PGlite's thread, apart from threads, sockets and HTTP. For each list, the
 * app's page queries (src/db/keyset.ts: 2,000 rows by id, their texts joined by `string_agg`, with the list settings, the
 * reply read off the wire as the thread reads it, src/db/pglite-wire.ts) are run on three tables of one PGlite, on a
 * data directory seeded as bench/lists.ts seeds it (without statistics):
 *   A: the list's own table (its text the last of its columns), as a filtered list reads it, and as an unfiltered
 *      one did before migration 20261126200000;
 *   T: the list's texts table (`quote_texts`, …), as an unfiltered list reads it now, as the app's writes left it;
 *   C: the texts alone, with id and workspace_id (the shape of bench/lists.ts's limit, on the same data directory);
 *   S: T as the server reads it: the app's own pages (src/db/keyset.ts `textPages`) through knex and PGlite's thread
 *      (src/db/pglite-thread.ts), on a copy of the data directory opened as `quoting serve` opens it.
 * Then the cost of one round trip to PGlite's thread as a page makes it, without the page (an empty query), through
 * knex and to the thread directly.
 * C is a vacuumed and analyzed copy; A and T are as the app has them. Rounds alternate A T C S; min / median / max,
 * and the ratios of the medians. T ÷ C is how far an unfiltered list's reads alone are from the limit's; A ÷ C how far
 * they were reading the table itself (PostgreSQL walks every column before the text to find it); S ÷ T what the
 * thread, knex and the page loop add before any socket or HTTP. A, T and C share one PGlite's 128 MB of shared buffers:
 * where the three tables together are larger (products: ~260 MB at 50,000), a round reads pages of each back from its
 * files, so A, T and C of such a list measure partly file reads, which S, on a PGlite of its own, does not.
 *   node dist/bench/embedded-reads.js [--rows 50000] [--rounds 9] [--lists quotes,orders,customers,products]
 */
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { openDatabase, type Database } from '../src/db/database.js';
import { EMBEDDED_PAGE_ROWS, textPages, type JsonPage } from '../src/db/keyset.js';
import { LIST_READ_SETTINGS, setLocal } from '../src/db/list-reads.js';
import type { PgliteThread } from '../src/db/pglite-thread.js';
import { queryTextAsBytes } from '../src/db/pglite-wire.js';
import { SEEDED_TABLES, seedCustomers, seedProducts } from './lists-seed.js';
import { seedOrders, seedQuotes } from './quotes-seed.js';
import { benchArgs, median, note, onCleanup, printTable, spread, runBench, signUp, startEmbedded, tempDataDir, copyDataDir, withDataDir } from './lib.js';

const { values } = benchArgs('embedded-reads.js', {
  rows: { type: 'string', default: '50000' },
  rounds: { type: 'string', default: '9' },
  lists: { type: 'string', default: 'quotes,orders,customers,products' },
});
const rows = Number(values.rows);
const rounds = Math.max(3, Number(values.rounds));

/** Each list's text column in its table, and its texts table (src/<area>/service.ts, migration 20261126200000). */
const TEXT_OF: Record<string, { column: string; texts: string }> = {
  quotes: { column: 'api_json', texts: 'quote_texts' },
  orders: { column: 'api_json', texts: 'order_texts' },
  customers: { column: 'api_json', texts: 'customer_texts' },
  products: { column: 'list_json', texts: 'product_texts' },
};


/** Reads a whole list in the app's pages; returns ms and bytes. */
async function readList(db: PGlite, table: string, column: string, workspaceId: number): Promise<{ ms: number; bytes: number }> {
  const sql = `select string_agg(j::text, ',') as json, max(id) as last_id, count(*)::int as n
    from (select id, ${column} as j from ${table} where workspace_id = $1 and id > $2 order by id limit ${EMBEDDED_PAGE_ROWS}) page`;
  const started = performance.now();
  let after = 0;
  let bytes = 0;
  for (;;) {
    const { rows: [page] } = await queryTextAsBytes(db, sql, [workspaceId, after], { before: `begin; ${setLocal(LIST_READ_SETTINGS)}`, after: 'commit' });
    if (!page.n) break;
    bytes += (page.json as Buffer).length;
    after = page.last_id as number;
    if ((page.n as number) < EMBEDDED_PAGE_ROWS) break;
  }
  return { ms: performance.now() - started, bytes };
}

/** Reads a whole unfiltered list as the server does (textPages through PGlite's thread); returns ms and bytes. */
async function readServed(database: Database, texts: string, workspaceId: number): Promise<{ ms: number; bytes: number }> {
  const started = performance.now();
  let bytes = 0;
  const counted = (page: JsonPage) => (typeof page === 'string' ? Buffer.byteLength(page) : Buffer.isBuffer(page) ? page.length : page.chunks.reduce((n, c) => n + c.length, 0));
  for await (const page of textPages(database.knex, texts, workspaceId)) {
    bytes += counted(page);
    // Given back as the server gives a page back once written.
    if (typeof page === 'object' && !Buffer.isBuffer(page)) for (const chunk of page.chunks) page.giveBack(chunk);
  }
  return { ms: performance.now() - started, bytes };
}

runBench(async () => {
  const dataDir = tempDataDir('reads');
  const server = await startEmbedded(dataDir);
  const { email } = await signUp(server.url);
  await server.stop();
  const workspaceId = await withDataDir(dataDir, async ({ knex }) => {
    const id: number = (await knex.raw('/* all workspaces: the bench reads its own rows */ select workspace_id from users where email = ?', [email])).rows[0].workspace_id;
    for (const table of SEEDED_TABLES) await knex.raw(`alter table ${table} set (autovacuum_enabled = false)`);
    const started = performance.now();
    await seedCustomers(knex, id, 1, rows, false);
    await seedProducts(knex, id, 1, rows, false);
    await seedQuotes(knex, id, 1, rows, 2025, false);
    await seedOrders(knex, id, 1, rows, false);
    note(`seeded ${rows} of each in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    return id;
  });

  // S reads a copy, opened as the server opens its data directory: one process may hold a data directory.
  const servedDir = copyDataDir(dataDir, 'reads-served');
  const served = await openDatabase({ dataDir: servedDir });
  onCleanup(() => served.close());
  const db = new PGlite(path.join(dataDir, 'pglite'));
  const table: (string | number)[][] = [];
  for (const list of values.lists.split(',').filter(Boolean)) {
    const { column, texts } = TEXT_OF[list];
    const columns: string[] = (await db.query<{ attname: string }>(
      `select attname from pg_attribute where attrelid = '${list}'::regclass and attnum > 0 and not attisdropped order by attnum`,
    )).rows.map((r) => r.attname);
    await db.exec(`create table bench_texts as select id, workspace_id, ${column} from ${list};
      create index on bench_texts (workspace_id, id);`);
    await db.exec('vacuum analyze bench_texts'); // VACUUM: one per statement
    const times: Record<'a' | 't' | 'c' | 's', number[]> = { a: [], t: [], c: [], s: [] };
    let bytes = 0;
    for (let round = 0; round <= rounds; round++) {
      // Round 0 warms the buffers (and sets the app tables' hint bits, as their first list does) and is not counted.
      const a = await readList(db, list, column, workspaceId);
      const t = await readList(db, texts, 'json', workspaceId);
      const c = await readList(db, 'bench_texts', column, workspaceId);
      const s = await readServed(served, texts, workspaceId);
      if (a.bytes !== t.bytes || a.bytes !== c.bytes || a.bytes !== s.bytes) throw new Error(`${list}: the reads gave different texts`);
      bytes = a.bytes;
      if (round === 0) continue;
      times.a.push(a.ms);
      times.t.push(t.ms);
      times.c.push(c.ms);
      times.s.push(s.ms);
    }
    const sizes = (await db.query<{ a: string; t: string; c: string }>(
      `select pg_relation_size('${list}') a, pg_relation_size('${texts}') t, pg_relation_size('bench_texts') c`,
    )).rows[0];
    await db.exec('drop table bench_texts');
    const mb = (n: number | string) => `${(Number(n) / 1e6).toFixed(1)} MB`;
    table.push([
      list, `${columns.indexOf(column) + 1} of ${columns.length}`, mb(bytes), `${mb(sizes.a)} / ${mb(sizes.t)} / ${mb(sizes.c)}`,
      spread(times.a), spread(times.t), spread(times.c), spread(times.s),
      (median(times.t) / median(times.c)).toFixed(2), (median(times.a) / median(times.c)).toFixed(2), (median(times.s) / median(times.t)).toFixed(2),
    ]);
  }
  await db.close();
  printTable(`PGlite page reads of ${rows}-row lists, ${rounds} alternated rounds; ms min / median / max`, [
    ['list', 'text column in A', 'texts', 'heap A / T / C', 'A: the list\'s table', 'T: its texts table', 'C: texts alone', 'S: T as served', 'T ÷ C', 'A ÷ C', 'S ÷ T'],
    ...table,
  ]);
  // What one page's round trip to PGlite's thread costs, without the page: an empty query sent as a page is (through
  // knex), and the same call made to the thread directly (what knex and its pool add), alternated.
  const thread = (served.knex.client.config.connection as () => { pglite: PgliteThread })().pglite;
  const options = { textAsBytes: true, settings: LIST_READ_SETTINGS };
  const trips: Record<'knex' | 'direct', number[]> = { knex: [], direct: [] };
  for (let round = 0; round < rounds; round++) {
    let started = performance.now();
    for (let i = 0; i < 100; i++) await served.knex.raw('select 1 as x').options(options);
    trips.knex.push((performance.now() - started) / 100);
    started = performance.now();
    for (let i = 0; i < 100; i++) await thread.query('select 1 as x', [], options);
    trips.direct.push((performance.now() - started) / 100);
  }
  note(`a round trip to PGlite's thread as a page makes it (select 1, its settings, 100 in a row), ms: through knex ${spread(trips.knex, 3)}, to the thread directly ${spread(trips.direct, 3)}`);
});
