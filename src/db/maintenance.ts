import type { Knex } from 'knex';
import { errorFields, log } from '../log.js';
import { pause, repeatUntilAborted } from '../repeat.js';

/**
 * Autovacuum's work, done by `quoting serve` on the embedded database, where nothing else would do it. PGlite runs
 * PostgreSQL as one single-user backend, without the autovacuum launcher: a table of 20,000 rows updated five times
 * and left idle for two minutes still had all of a vacuum's work waiting (20,030 dead rows, 99,850 dead item
 * identifiers with their index entries, no page marked all-visible). Left so, the space of deleted and updated rows
 * is not reused by inserts (they find room through the free space map, which VACUUM keeps), so tables whose rows are
 * deleted or rewritten grow for ever (tracking events purged by retention, delivery rows updated twice each), the
 * index entries of dead rows pile up, and the planner has no statistics but those imports gather.
 *
 * Every minute, the tables autovacuum would take, chosen by its own settings and formulas (threshold + scale factor ×
 * the table's rows, for dead rows, rows inserted since the last vacuum, rows changed since the last analyze, and the
 * age of the table's oldest unfrozen transaction id), catalogs included, each get VACUUM, ANALYZE or both, one table
 * per statement. A table with `autovacuum_enabled = false` is left alone, as autovacuum leaves it, but for the vacuum
 * that keeps its transaction ids from wrapping around. A statement holds PGlite's one connection while it runs (seconds
 * for a large table just rewritten, milliseconds for one with little to do), so each waits until no request is being handled, for at most IDLE_WAIT_MS, before it starts.
 *
 * The counters are PostgreSQL's statistics, which PGlite keeps while it runs; rows changed before a start that the
 * statistics did not survive count again once their table changes enough.
 */

/** How often the tables are checked, as autovacuum_naptime's default. */
const MAINTENANCE_EVERY_MS = 60_000;
/** The longest a statement waits for a moment without requests: past it, it runs anyway (the growth must stop). */
const IDLE_WAIT_MS = 60_000;

export interface Maintained {
  table: string;
  vacuumed: boolean;
  analyzed: boolean;
  ms: number;
}

/** Autovacuum's thresholds (PostgreSQL's settings, as autovacuum reads them), per table, for the due ones. */
const DUE_TABLES = `
  with setting as (
    select current_setting('autovacuum_vacuum_threshold')::float8 as vt, current_setting('autovacuum_vacuum_scale_factor')::float8 as vs,
      current_setting('autovacuum_vacuum_insert_threshold')::float8 as it, current_setting('autovacuum_vacuum_insert_scale_factor')::float8 as iscale,
      current_setting('autovacuum_analyze_threshold')::float8 as at, current_setting('autovacuum_analyze_scale_factor')::float8 as ascale,
      current_setting('autovacuum_freeze_max_age')::float8 as freeze_age
  ), tables as (
    select format('%I.%I', n.nspname, c.relname) as name, greatest(c.reltuples, 0) as n, age(c.relfrozenxid) as xid_age,
      coalesce(s.n_dead_tup, 0) as dead, coalesce(s.n_ins_since_vacuum, 0) as inserted, coalesce(s.n_mod_since_analyze, 0) as changed,
      n.nspname <> 'pg_catalog' as analyzable,
      coalesce((select o.option_value::bool from pg_options_to_table(c.reloptions) o where o.option_name = 'autovacuum_enabled'), true) as enabled
    from pg_class c join pg_namespace n on n.oid = c.relnamespace left join pg_stat_all_tables s on s.relid = c.oid
    where c.relkind in ('r', 'm') and c.relpersistence = 'p' and n.nspname not in ('pg_toast', 'information_schema')
  ), due as (
    select name, (enabled and (dead > vt + vs * n or inserted > it + iscale * n)) or xid_age > freeze_age as vacuum,
      enabled and analyzable and changed > at + ascale * n as analyze
    from tables, setting
  )
  -- "analyze" is a reserved word: the column is named through its table.
  select * from due where vacuum or due.analyze order by name`;

/**
 * One pass: every due table vacuumed, analyzed, or both (catalogs are only vacuumed: their statistics are not what our
 * queries' plans read), one statement each, each after `idle()` (or IDLE_WAIT_MS). Returns what was done; a table
 * that fails is logged and skipped. Once `signal` aborts, no further statement starts.
 */
export async function maintainTables(db: Knex, idle: () => Promise<void> = async () => {}, signal?: AbortSignal): Promise<Maintained[]> {
  // PostgreSQL hands a backend's counts to the statistics at most once a second, at the end of a transaction: asked
  // for now, they are there for the next statement.
  await db.raw('select pg_stat_force_next_flush()');
  const { rows } = await db.raw(DUE_TABLES);
  const done: Maintained[] = [];
  for (const { name, vacuum, analyze } of rows as { name: string; vacuum: boolean; analyze: boolean }[]) {
    await Promise.race([idle(), pause(IDLE_WAIT_MS, signal)]);
    if (signal?.aborted) break;
    const started = performance.now();
    const statement = vacuum ? `vacuum${analyze ? ' (analyze)' : ''} ${name}` : `analyze ${name}`;
    try {
      await db.raw(statement);
    } catch (err) {
      log.warn('table maintenance failed', { table: name, ...errorFields(err) });
      continue;
    }
    done.push({ table: name, vacuumed: vacuum, analyzed: analyze, ms: Math.round(performance.now() - started) });
  }
  const what = (d: Maintained) => [d.vacuumed && 'vacuum', d.analyzed && 'analyze'].filter(Boolean).join(' and ');
  if (done.length) log.info('tables maintained', { tables: done.map((d) => `${d.table}: ${what(d)}, ${d.ms} ms`) });
  return done;
}

/**
 * Runs a pass every MAINTENANCE_EVERY_MS until `signal` aborts (the first after one interval, not at start: a start
 * is busy enough); resolves once the statement under way, if any, has finished, so the caller may then close the
 * database. Failures are logged, not thrown.
 */
export function keepMaintainingTables(db: Knex, signal: AbortSignal, idle?: () => Promise<void>): Promise<void> {
  return repeatUntilAborted('table maintenance failed', MAINTENANCE_EVERY_MS, signal, () => maintainTables(db, idle, signal), { now: false });
}
