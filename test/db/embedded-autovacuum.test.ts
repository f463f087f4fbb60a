import test from 'ava';
import { maintainTables } from '../../src/db/maintenance.js';
import { freshPglite, type TestDatabase } from '../helpers/database.js';

// The embedded database's own autovacuum (src/db/maintenance.ts): PGlite whichever database the suite runs on, since
// on PostgreSQL autovacuum does this work and `quoting serve` does not run it.
let database: TestDatabase;
test.before(async () => {
  database = await freshPglite();
});
test.after.always(() => database?.close());

const stats = async (table: string) =>
  (await database.knex.raw(`select n_dead_tup::int as dead, vacuum_count::int as vacuums, analyze_count::int as analyzes from pg_stat_user_tables where relname = ?`, [table])).rows[0];

/** A new table of `rows` rows, each then rewritten once: due for a vacuum. */
async function churned(name: string, rows = 500): Promise<void> {
  const { knex } = database;
  await knex.raw(`create table ${name} (id int primary key, v text)`);
  await knex.raw(`insert into ${name} select g, 'x' from generate_series(1, ${rows}) g`);
  await knex.raw(`update ${name} set v = v || 'y'`);
}

/** An `idle()` for maintainTables that says when it is first asked, and answers `answer`. */
function watchedIdle(answer: Promise<void>): { idle: () => Promise<void>; asked: Promise<void> } {
  let asked!: () => void;
  const first = new Promise<void>((resolve) => (asked = resolve));
  return { idle: () => (asked(), answer), asked: first };
}

test.serial('a table with dead rows is vacuumed and analyzed; once done, it is not due again', async (t) => {
  const { knex } = database;
  await churned('churn', 1000);
  await knex.raw(`update churn set v = v || 'z'`);
  await knex.raw(`create table quiet (id int primary key)`);

  const done = await maintainTables(knex);
  const churn = done.find((d) => d.table === 'public.churn');
  t.truthy(churn, JSON.stringify(done));
  t.true(churn!.vacuumed);
  t.true(churn!.analyzed);
  t.false(done.some((d) => d.table === 'public.quiet'), 'a table without changes is left alone');
  const after = await stats('churn');
  t.is(after.dead, 0);
  t.is(after.vacuums, 1);
  t.is(after.analyzes, 1);

  const again = await maintainTables(knex);
  t.false(again.some((d) => d.table === 'public.churn'), JSON.stringify(again));
  t.is((await stats('churn')).vacuums, 1);
});

test.serial('a table with autovacuum_enabled = false is left alone, as autovacuum leaves it', async (t) => {
  const { knex } = database;
  await churned('opted_out', 1000);
  await knex.raw('alter table opted_out set (autovacuum_enabled = false)');
  await churned('opted_in', 1000);
  const done = await maintainTables(knex);
  t.false(done.some((d) => d.table === 'public.opted_out'), JSON.stringify(done));
  t.true(done.some((d) => d.table === 'public.opted_in'), JSON.stringify(done));
  t.is((await stats('opted_out')).vacuums, 0);
});

test.serial('each statement waits for a moment without requests', async (t) => {
  const { knex } = database;
  await churned('busy');
  let open!: () => void;
  const { idle, asked } = watchedIdle(new Promise<void>((resolve) => (open = resolve)));
  const pass = maintainTables(knex, idle);
  await asked;
  // The pass is waiting: the database is free, and nothing has been vacuumed yet.
  t.is((await stats('busy')).vacuums, 0);
  open();
  const done = await pass;
  t.true(done.some((d) => d.table === 'public.busy' && d.vacuumed));
  t.is((await stats('busy')).vacuums, 1);
});

test.serial('a pass stopped while it waits for a quiet moment starts no statement', async (t) => {
  const { knex } = database;
  await churned('stopped');
  const stop = new AbortController();
  // Never quiet: only the stop ends the wait.
  const { idle, asked } = watchedIdle(new Promise<void>(() => {}));
  const pass = maintainTables(knex, idle, stop.signal);
  await asked;
  stop.abort();
  t.deepEqual(await pass, []);
  t.is((await stats('stopped')).vacuums, 0);
});
