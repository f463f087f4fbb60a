/**
 * From the embedded database to PostgreSQL: `DATABASE_URL=… quoting restore FILE` with a backup of the embedded
 * database. The backup is started in memory, both databases are migrated to this version's schema, and every
 * table's rows are copied as PostgreSQL itself renders them (row_to_json, carried as text and read back with
 * json_populate_recordset: numerics, timestamps to the microsecond and json arrive exact). The tables' triggers,
 * which keep derived columns and tables (api_json, the *_texts tables), are off during the copy since those are
 * copied too. Every sequence is then set where the embedded one stood, so new ids follow on; quote numbers
 * (quote_numbers) and keys are rows and carry on with the rest. All in one transaction: on an error nothing changed.
 */
import fs from 'node:fs';
import type { Knex } from 'knex';
import { openPglite, openPostgres, type Database } from '../db/database.js';
import { migrateLatest, migrationStatus } from '../db/migrations.js';
import { assertPostgresVersion } from '../db/postgres-version.js';
import { startPgliteThread } from '../db/pglite-thread.js';
import { holdsData, NotEmpty } from './backup.js';
import { checkEmbeddedBackup } from './backup-archive.js';

/** Tables of the migrator itself: each database keeps its own. */
const MIGRATOR_TABLES = new Set(['knex_migrations', 'knex_migrations_lock']);

/** Rows per round trip: a product's row (its JSON texts included) is a few KB. */
const BATCH = 500;

export interface Moved {
  tables: number;
  rows: number;
}

export async function restoreEmbeddedIntoPostgres(file: string, databaseUrl: string, options: { force: boolean; describe: string }): Promise<Moved> {
  const target = openPostgres(databaseUrl, 2);
  let source: Database | undefined;
  try {
    // A target that holds data ends it before anything is read; a backup that does not open, before PostgreSQL is
    // changed; one too old for the migrations (migrateLatest asks first), before anything is migrated there.
    if ((await holdsData(target.knex)) && !options.force) throw new NotEmpty(`${options.describe} holds data`);
    source = await openBackup(file);
    await assertPostgresVersion(target.knex);
    await migrateLatest(source.knex);
    await migrateLatest(target.knex);
    const [from, to] = await Promise.all([migrationStatus(source.knex), migrationStatus(target.knex)]);
    if (from.applied.join() !== to.applied.join()) {
      throw new Error(`${options.describe} has migrations this backup lacks (${to.applied.filter((m) => !from.applied.includes(m)).join(', ')}): restore it with the version of quoting that migrated that database`);
    }
    const tables = await tablesInOrder(target.knex);
    await checkSameColumns(source.knex, target.knex, tables);
    const copied = source;
    let rows = 0;
    await target.knex.transaction(async (trx) => {
      if (options.force) await trx.raw(`/* all workspaces: the move empties the target whole */ truncate table ${tables.map(quoted).join(', ')} restart identity cascade`);
      for (const table of tables) {
        await trx.raw(`alter table ${quoted(table)} disable trigger user`);
        rows += await copyTable(copied.knex, trx, table);
        await trx.raw(`alter table ${quoted(table)} enable trigger user`);
      }
      await copySequences(copied.knex, trx);
    });
    return { tables: tables.length, rows };
  } finally {
    await source?.close();
    await target.close();
  }
}

/** The backup, unpacked into memory: the file on disk is left as it is, and nothing is written beside it. */
async function openBackup(file: string): Promise<Database> {
  // A file cut short, damaged or not a backup is named by what it is not, before PGlite tries to start on it.
  await checkEmbeddedBackup(file);
  const bytes = new Uint8Array(fs.readFileSync(file));
  let pglite;
  try {
    pglite = await startPgliteThread({ loadDataDir: bytes });
  } catch (err) {
    throw new Error(`${file} could not be opened as a backup of the embedded database (${(err as Error).message.split('\n')[0]})`);
  }
  return openPglite(pglite);
}

function quoted(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** The application's tables, each after the tables it references (its foreign keys are checked row by row). */
async function tablesInOrder(knex: Knex): Promise<string[]> {
  const { rows: tables } = await knex.raw(
    `select c.relname as name from pg_class c where c.relnamespace = 'public'::regnamespace and c.relkind in ('r', 'p') and not c.relispartition order by c.relname`,
  );
  const { rows: references } = await knex.raw(
    `select c.conrelid::regclass::text as child, c.confrelid::regclass::text as parent
     from pg_constraint c where c.contype = 'f' and c.connamespace = 'public'::regnamespace and c.conrelid <> c.confrelid`,
  );
  const names = (tables as { name: string }[]).map((t) => t.name).filter((name) => !MIGRATOR_TABLES.has(name));
  const parents = new Map(names.map((name) => [name, new Set<string>()]));
  for (const { child, parent } of references as { child: string; parent: string }[]) parents.get(unquoted(child))?.add(unquoted(parent));
  const ordered: string[] = [];
  const placed = new Set<string>();
  while (ordered.length < names.length) {
    const next = names.filter((name) => !placed.has(name) && [...parents.get(name)!].every((p) => placed.has(p) || !parents.has(p)));
    if (next.length === 0) throw new Error(`the tables' foreign keys form a cycle (${names.filter((n) => !placed.has(n)).join(', ')}): they cannot be copied in order`);
    for (const name of next) {
      ordered.push(name);
      placed.add(name);
    }
  }
  return ordered;
}

/** regclass::text quotes a name only when it must. */
function unquoted(name: string): string {
  return name.startsWith('"') ? name.slice(1, -1).replace(/""/g, '"') : name;
}

async function columnsOf(knex: Knex, table: string): Promise<string[]> {
  const { rows } = await knex.raw(
    `select column_name as name from information_schema.columns where table_schema = 'public' and table_name = ? and is_generated = 'NEVER' order by ordinal_position`,
    [table],
  );
  return (rows as { name: string }[]).map((r) => r.name);
}

/** Migrated by the same code they should match; a column present on one side only would otherwise be lost unseen. */
async function checkSameColumns(source: Knex, target: Knex, tables: string[]): Promise<void> {
  for (const table of tables) {
    const [from, to] = await Promise.all([columnsOf(source, table), columnsOf(target, table)]);
    if ([...from].sort().join() !== [...to].sort().join()) {
      throw new Error(`table ${table} differs between the backup (${from.join(', ')}) and PostgreSQL (${to.join(', ')})`);
    }
  }
}

/** Copies one table in pages by physical position (ctid: the backup is a still copy, so positions hold). Returns its rows. */
async function copyTable(source: Knex, target: Knex.Transaction, table: string): Promise<number> {
  const columns = (await columnsOf(target, table)).map(quoted).join(', ');
  let after = '(0,0)';
  let count = 0;
  for (;;) {
    const { rows } = await source.raw(
      `/* all workspaces: the move copies every row */ select ctid::text as at, row_to_json(t)::text as row from ${quoted(table)} t where ctid > ?::tid order by ctid limit ${BATCH}`,
      [after],
    );
    if (rows.length === 0) return count;
    const page = `[${(rows as { row: string }[]).map((r) => r.row).join(',')}]`;
    await target.raw(`insert into ${quoted(table)} (${columns}) overriding system value select ${columns} from json_populate_recordset(null::${quoted(table)}, ?::json)`, [page]);
    count += rows.length;
    after = rows[rows.length - 1].at;
  }
}

/** Each sequence of the application where the embedded database left it (the migrator's own stays PostgreSQL's). */
async function copySequences(source: Knex, target: Knex.Transaction): Promise<void> {
  const { rows: sequences } = await source.raw(
    `select c.relname as name from pg_class c where c.relnamespace = 'public'::regnamespace and c.relkind = 'S' order by c.relname`,
  );
  for (const { name } of sequences as { name: string }[]) {
    if ([...MIGRATOR_TABLES].some((table) => name.startsWith(`${table}_`))) continue;
    const { rows } = await source.raw(`select last_value::text as last_value, is_called from ${quoted(name)}`);
    await target.raw('select setval(?::regclass, ?::bigint, ?)', [quoted(name), rows[0].last_value, rows[0].is_called]);
  }
}
