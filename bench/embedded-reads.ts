/**
 * Where an embedded list's time goes in PGlite's thread, apart from threads, sockets and HTTP. For each list, the
 * app's page queries (src/db/pages.ts: 2,000 rows by id, their texts joined by `string_agg`, bitmap scans off, the
 * reply read off the wire as the thread reads it, src/db/pglite-wire.ts) are run on three tables of one PGlite, on a
 * data directory seeded as bench/lists.ts seeds it (without statistics):
 *   A: the list's own table, as the app reads it (its text the last of its columns: added by a migration);
 *   B: a copy of that table with the text third, after id and workspace_id (the same rows, the same width);
 *   C: the texts alone, with id and workspace_id (the shape of bench/lists.ts's limit, on the same data directory).
 * B and C are vacuumed and analyzed copies; A is as the app has it. Rounds alternate A B C; min / median / max, and
 * the ratios of the medians. A ÷ C is how far the app's reads alone are from the limit's; A ÷ B what the text's place
 * in the row costs (PostgreSQL walks every column before it to find it).
 *   node dist/bench/embedded-reads.js [--rows 50000] [--rounds 9] [--lists quotes,orders,customers,products]
 */
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { EMBEDDED_PAGE_ROWS } from '../src/db/pages.js';
import { queryTextAsBytes } from '../src/db/pglite-wire.js';
import { seedCustomers, seedProducts } from './lists-seed.js';
import { seedOrders, seedQuotes } from './quotes-seed.js';
import { benchArgs, median, note, printTable, spread, runBench, signUp, startEmbedded, tempDataDir, withDataDir } from './lib.js';

const { values } = benchArgs('embedded-reads.js', {
  rows: { type: 'string', default: '50000' },
  rounds: { type: 'string', default: '9' },
  lists: { type: 'string', default: 'quotes,orders,customers,products' },
});
const rows = Number(values.rows);
const rounds = Math.max(3, Number(values.rounds));

/** Each list's table and the column its pages join (src/<area>/service.ts). */
const TEXT_OF: Record<string, string> = { quotes: 'api_json', orders: 'api_json', customers: 'api_json', products: 'list_json' };


/** Reads a whole list in the app's pages; returns ms and bytes. */
async function readList(db: PGlite, table: string, column: string, workspaceId: number): Promise<{ ms: number; bytes: number }> {
  const sql = `select string_agg(j::text, ',') as json, max(id) as last_id, count(*)::int as n
    from (select id, ${column} as j from ${table} where workspace_id = $1 and id > $2 order by id limit ${EMBEDDED_PAGE_ROWS}) page`;
  const started = performance.now();
  let after = 0;
  let bytes = 0;
  for (;;) {
    const { rows: [page] } = await queryTextAsBytes(db, sql, [workspaceId, after], { before: 'begin; set local enable_bitmapscan = off', after: 'commit' });
    if (!page.n) break;
    bytes += (page.json as Buffer).length;
    after = page.last_id as number;
    if ((page.n as number) < EMBEDDED_PAGE_ROWS) break;
  }
  return { ms: performance.now() - started, bytes };
}

runBench(async () => {
  const dataDir = tempDataDir('reads');
  const server = await startEmbedded(dataDir);
  const { email } = await signUp(server.url);
  await server.stop();
  const workspaceId = await withDataDir(dataDir, async ({ knex }) => {
    const id: number = (await knex.raw('select workspace_id from users where email = ?', [email])).rows[0].workspace_id;
    for (const table of ['customers', 'products', 'variants', 'quotes', 'orders']) await knex.raw(`alter table ${table} set (autovacuum_enabled = false)`);
    const started = performance.now();
    await seedCustomers(knex, id, 1, rows, false);
    await seedProducts(knex, id, 1, rows, false);
    await seedQuotes(knex, id, 1, rows, 2025, false);
    await seedOrders(knex, id, 1, rows, false);
    note(`seeded ${rows} of each in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    return id;
  });

  const db = new PGlite(path.join(dataDir, 'pglite'));
  const table: (string | number)[][] = [];
  for (const list of values.lists.split(',').filter(Boolean)) {
    const column = TEXT_OF[list];
    const columns: string[] = (await db.query<{ attname: string }>(
      `select attname from pg_attribute where attrelid = '${list}'::regclass and attnum > 0 and not attisdropped order by attnum`,
    )).rows.map((r) => r.attname);
    const rest = columns.filter((c) => !['id', 'workspace_id', column].includes(c));
    await db.exec(`create table bench_third as select id, workspace_id, ${column}, ${rest.join(', ')} from ${list};
      create index on bench_third (workspace_id, id);
      create table bench_texts as select id, workspace_id, ${column} from ${list};
      create index on bench_texts (workspace_id, id);`);
    for (const copy of ['bench_third', 'bench_texts']) await db.exec(`vacuum analyze ${copy}`); // VACUUM: one per statement
    const times: Record<'a' | 'b' | 'c', number[]> = { a: [], b: [], c: [] };
    let bytes = 0;
    for (let round = 0; round <= rounds; round++) {
      // Round 0 warms the buffers (and sets the app table's hint bits, as its first list does) and is not counted.
      const a = await readList(db, list, column, workspaceId);
      const b = await readList(db, 'bench_third', column, workspaceId);
      const c = await readList(db, 'bench_texts', column, workspaceId);
      if (a.bytes !== b.bytes || a.bytes !== c.bytes) throw new Error(`${list}: the three tables gave different texts`);
      bytes = a.bytes;
      if (round === 0) continue;
      times.a.push(a.ms);
      times.b.push(b.ms);
      times.c.push(c.ms);
    }
    const sizes = (await db.query<{ a: string; b: string; c: string }>(
      `select pg_relation_size('${list}') a, pg_relation_size('bench_third') b, pg_relation_size('bench_texts') c`,
    )).rows[0];
    await db.exec('drop table bench_third; drop table bench_texts');
    const mb = (n: number | string) => `${(Number(n) / 1e6).toFixed(1)} MB`;
    table.push([
      list, `${columns.indexOf(column) + 1} of ${columns.length}`, mb(bytes), `${mb(sizes.a)} / ${mb(sizes.b)} / ${mb(sizes.c)}`,
      spread(times.a), spread(times.b), spread(times.c),
      (median(times.a) / median(times.b)).toFixed(2), (median(times.a) / median(times.c)).toFixed(2),
    ]);
  }
  await db.close();
  printTable(`PGlite page reads of ${rows}-row lists, ${rounds} alternated rounds; ms min / median / max`, [
    ['list', 'text column', 'texts', 'heap A / B / C', 'A: the app\'s table', 'B: text third', 'C: texts alone', 'A ÷ B', 'A ÷ C'],
    ...table,
  ]);
});
