/**
 * What a quote line costs the database, and how much of it is its two foreign keys (to its quote, and to its variant).
 *
 * bench/quotes.ts finds the 50-line creation more than 1.5 times as slow as the 1-line one on the embedded default,
 * and the one SQL statement doing the same work just as slow: the cost of a line is the database's own. This finds
 * where it goes. On a fresh migrated database of each kind, one workspace with `--variants` variants and a quote:
 * statements inserting 1 and 50 lines (`--lines`) of that quote, each statement its own transaction, into
 *   keyed:   quote_lines itself, whose keys PostgreSQL checks for every line inserted (a query on `quotes` and one on
 *            `variants`, each locking the row it finds: the triggers of migration 20261127030000);
 *   unkeyed: a copy of quote_lines made with `like quote_lines including all` (the same columns, defaults, checks and
 *            indexes; a copy never takes the foreign keys).
 * `--statements` (200) statements of each size per table and round, keyed and unkeyed alternating (A B A B) for
 * `--rounds` (5) rounds after one discarded; µs per statement min / median / max, and per extra line from the
 * medians: (t50 − t1) / 49. On the embedded default the statements go through the same PGlite thread and knex as the
 * app's.
 *   node dist/bench/line-keys.js [--db postgres,embedded] [--rounds 5] [--statements 200] [--lines 1,50] [--variants 60]
 */
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { openPostgres } from '../src/db/database.js';
import { seedProducts } from './lists-seed.js';
import { benchArgs, databasesOption, dbName, freshTarget, loadAverage, median, note, printTable, roundsOption, runBench, spread, withDataDir, type DbKind } from './lib.js';

const { values } = benchArgs('line-keys.js', {
  db: { type: 'string', default: 'postgres,embedded' },
  rounds: { type: 'string', default: '5' },
  statements: { type: 'string', default: '200' },
  lines: { type: 'string', default: '1,50' },
  variants: { type: 'string', default: '60' },
});
const rounds = roundsOption(values.rounds);
const statements = Number(values.statements);
const [few, many] = values.lines.split(',').map(Number);
if (!(few >= 1 && many > few)) throw new Error('--lines: two line counts, the smaller first (1,50)');
const variantCount = Number(values.variants);
if (!(variantCount >= many)) throw new Error(`--variants: at least as many as the larger line count (${many})`);

const TABLES = { keyed: 'quote_lines', unkeyed: 'quote_lines_unkeyed' } as const;
type Table = keyof typeof TABLES;

/** A workspace with its variants (three a product) and one quote; the unkeyed copy of quote_lines. */
async function prepare(knex: Knex): Promise<{ workspaceId: number; quoteId: number }> {
  const token = randomBytes(8).toString('hex');
  const [{ id: workspaceId }] = (
    await knex.raw(`insert into workspaces (name, slug, public_key, secret_key_hash) values ('Line keys', ?, ?, ?) returning id`, [`line-keys-${token}`, `pk-${token}`, `sk-${token}`])
  ).rows;
  await seedProducts(knex, workspaceId, 1, Math.ceil(variantCount / 3), false);
  const [{ id: quoteId }] = (await knex.raw(`insert into quotes (workspace_id, quote_number, public_token) values (?, 'Q-LINE-KEYS', ?) returning id`, [workspaceId, `line-keys-${token}`])).rows;
  await knex.raw(`create table ${TABLES.unkeyed} (like quote_lines including all)`);
  const keys = await knex.raw(`select count(*)::int as n from pg_constraint where contype = 'f' and conrelid = ?::regclass`, [TABLES.unkeyed]);
  if (keys.rows[0].n !== 0) throw new Error(`${TABLES.unkeyed} has foreign keys`);
  return { workspaceId, quoteId };
}

/** µs per statement: `statements` statements of `lines` lines each, one after the other. */
async function insertLines(knex: Knex, table: Table, lines: number, ids: { workspaceId: number; quoteId: number }): Promise<number> {
  const sql = `insert into ${TABLES[table]} (workspace_id, quote_id, variant_id, sku, description, quantity, price, line_total)
    select ?, ?, v.id, v.sku, v.name, 1, coalesce(v.price, 0), coalesce(v.price, 0) from variants v where v.workspace_id = ? order by v.id limit ?`;
  const started = performance.now();
  for (let i = 0; i < statements; i++) await knex.raw(sql, [ids.workspaceId, ids.quoteId, ids.workspaceId, lines]);
  return ((performance.now() - started) / statements) * 1000;
}

async function measure(knex: Knex, kind: DbKind): Promise<(string | number)[][]> {
  const ids = await prepare(knex);
  const times = { keyed: { few: [] as number[], many: [] as number[] }, unkeyed: { few: [] as number[], many: [] as number[] } };
  for (let round = 0; round <= rounds; round++) {
    for (const table of ['keyed', 'unkeyed'] as const) {
      const a = await insertLines(knex, table, few, ids);
      const b = await insertLines(knex, table, many, ids);
      if (round === 0) continue; // warm-up
      times[table].few.push(a);
      times[table].many.push(b);
    }
  }
  const perLine = (table: Table) => (median(times[table].many) - median(times[table].few)) / (many - few);
  const share = 1 - perLine('unkeyed') / perLine('keyed');
  note(`${dbName(kind)}: the two keys are ${(share * 100).toFixed(0)}% of a line's cost (per extra line ${perLine('keyed').toFixed(1)} µs keyed, ${perLine('unkeyed').toFixed(1)} unkeyed)`);
  return (['keyed', 'unkeyed'] as const).map((table) => [
    dbName(kind),
    `${table} (${TABLES[table]})`,
    spread(times[table].few, 0),
    spread(times[table].many, 0),
    perLine(table).toFixed(1),
    (median(times[table].many) / median(times[table].few)).toFixed(2),
  ]);
}

runBench(async () => {
  const load = loadAverage();
  const table: (string | number)[][] = [];
  for (const kind of databasesOption(values.db)) {
    const target = await freshTarget(kind);
    if (target.kind === 'embedded') table.push(...(await withDataDir(target.dataDir, ({ knex }) => measure(knex, kind))));
    else {
      const database = openPostgres(target.url, 1);
      table.push(...(await measure(database.knex, kind).finally(() => database.close())));
    }
  }
  printTable(
    `Lines inserted by one statement (its own transaction), into quote_lines and into a copy without its foreign keys; ${rounds} rounds of ${statements} statements each, alternating; µs a statement min / median / max`,
    [['database', 'table', `${few} line${few === 1 ? '' : 's'}`, `${many} lines`, 'µs per extra line', `${many} ÷ ${few}`], ...table],
  );
  note(`load average at start ${load}, at end ${loadAverage()}`);
});
