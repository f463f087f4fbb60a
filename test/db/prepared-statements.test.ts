import test from 'ava';
import { preparedQuery } from '../../src/db/prepared.js';
import { listRead } from '../../src/db/numbered-pages.js';
import { freshDatabase, type TestDatabase } from '../helpers/database.js';

// A prepared statement must answer exactly as the same text without a name: on PostgreSQL node-postgres prepares
// it, on the embedded database PGlite's thread does (src/db/pglite-worker.ts), with its own conversion of values
// and rows. These run on whichever database the suite runs on (PGlite, or TEST_DATABASE_URL).

let database: TestDatabase;
test.before(async () => {
  database = await freshDatabase();
  await database.knex.raw(`create table prepared_probe (
    id serial primary key, n int, amount numeric(12, 2), label text unique, doc json, tags text[], at timestamptz, flag boolean)`);
});
test.after.always(async () => {
  await database?.close();
});

const insert = preparedQuery<Record<string, unknown>>(
  'test_prepared_insert',
  `insert into prepared_probe (n, amount, label, doc, tags, at, flag) values (?, ?, ?, ?::json, ?::text[], ?, ?) returning *`,
);
const byLabel = preparedQuery<Record<string, unknown>>('test_prepared_by_label', `select * from prepared_probe where label = :label`);

test.serial('a prepared statement answers as the same query without a name, over more runs than plans are made for', async (t) => {
  const knex = database.knex;
  // The first runs are planned for their values; later ones may run a generic plan: ten runs cross that point.
  for (let i = 0; i < 10; i++) {
    const values = [i, `${i}.5`, `label ${i}`, JSON.stringify({ i, list: [1, 'two'] }), ['a', `b${i}`], new Date(Date.UTC(2026, 0, 1 + i)), i % 2 === 0];
    const [prepared] = await insert(knex, values);
    const [plain] = (await knex.raw(`select * from prepared_probe where id = ?`, [prepared.id as number])).rows;
    t.deepEqual(prepared, plain, `run ${i}: the row the prepared statement returned`);
    t.deepEqual(await byLabel(knex, { label: `label ${i}` }), [plain], `run ${i}: the row read back by a prepared statement with named values`);
  }
  const [nulls] = await insert(knex, [null, null, null, null, null, null, null]);
  t.like(nulls, { n: null, amount: null, label: null, doc: null, tags: null, at: null, flag: null });
});

test.serial('inside a transaction: its error is the database error, and the statement still runs after a rollback', async (t) => {
  const knex = database.knex;
  await insert(knex, [1, '1.00', 'taken', '{}', [], null, true]);
  const err = await t.throwsAsync(
    knex.transaction(async (trx) => {
      await insert(trx, [2, '2.00', 'fresh', '{}', [], null, true]);
      await insert(trx, [3, '3.00', 'taken', '{}', [], null, true]);
    }),
  );
  t.like(err as unknown as Record<string, unknown>, { code: '23505', constraint: 'prepared_probe_label_key' });
  t.deepEqual(await byLabel(knex, { label: 'fresh' }), [], 'the transaction was rolled back whole');
  const rows = await knex.transaction((trx) => insert(trx, [4, '4.00', 'after', '{"ok":true}', ['x'], null, false]));
  t.like(rows[0], { n: 4, label: 'after', doc: { ok: true }, tags: ['x'], flag: false });
});

test.serial('a statement that does not parse fails with the database message each time it is run', async (t) => {
  const broken = preparedQuery('test_prepared_broken', `select * from prepared_probe where`);
  for (let i = 0; i < 2; i++) {
    const err = await t.throwsAsync(broken(database.knex, []));
    t.like(err as unknown as Record<string, unknown>, { code: '42601' }, `run ${i}`);
  }
});

test.serial('a NOTIFY sent by a prepared statement outside a transaction reaches its listener, once', async (t) => {
  // On the embedded database a prepared statement's reply is read off the wire (src/db/pglite-wire.ts), where PGlite's
  // own listeners do not look: its thread hands them the NOTIFYs the reply carries.
  const heard: string[] = [];
  const stop = database.listen('test_prepared_channel', (payload) => heard.push(payload));
  t.teardown(stop);
  const sleep = () => new Promise((resolve) => setTimeout(resolve, 20));
  // The listener is up once a plain NOTIFY sent after it is heard (PostgreSQL's listening connection connects on its own).
  for (let i = 0; i < 500 && !heard.includes('ping'); i++) {
    await database.knex.raw(`select pg_notify('test_prepared_channel', 'ping')`);
    await sleep();
  }
  const notify = preparedQuery('test_prepared_notify', `select pg_notify('test_prepared_channel', :payload)`);
  await notify(database.knex, { payload: 'first' });
  await notify(database.knex, { payload: 'second' });
  // NOTIFYs arrive in the order sent: once the plain one after them is heard, each was heard as often as it will be.
  await database.knex.raw(`select pg_notify('test_prepared_channel', 'last')`);
  for (let i = 0; i < 500 && !heard.includes('last'); i++) await sleep();
  t.deepEqual(heard.filter((payload) => payload !== 'ping'), ['first', 'second', 'last']);
});

// A list page's read (listRead): its settings and its statement in one round trip, the statement prepared once
// per connection (SQL's PREPARE on PostgreSQL, a named statement in PGlite's thread).
const settingAndRows = (knex: TestDatabase['knex'], label: string) =>
  listRead<{ setting: string | Buffer; cost: string | Buffer; label: string | Buffer; n: number }>(
    knex,
    knex.select(knex.raw(`current_setting('enable_bitmapscan') as setting`), knex.raw(`current_setting('random_page_cost') as cost`), 'label', 'n').from('prepared_probe').where('label', label).limit(1, { skipBinding: true }),
  );

test.serial('a list read answers as the plain query, with bitmap scans off and cached page reads, over more runs than plans are made for', async (t) => {
  const knex = database.knex;
  await knex('prepared_probe').insert([{ n: 41, label: 'read a' }, { n: 42, label: 'read b' }]);
  for (let i = 0; i < 12; i++) {
    const label = i % 2 === 0 ? 'read a' : 'read b';
    const [row] = await settingAndRows(knex, label);
    t.is(row.setting.toString(), 'off', `run ${i}: the setting holds for the statement`);
    t.is(row.cost.toString(), '1.1', `run ${i}`);
    t.is(row.label.toString(), label, `run ${i}`);
    t.is(row.n, i % 2 === 0 ? 41 : 42, `run ${i}`);
  }
  const [after] = (await knex.raw(`select current_setting('enable_bitmapscan') as setting, current_setting('random_page_cost') as cost`)).rows;
  t.deepEqual({ ...after }, { setting: 'on', cost: '4' }, 'the settings did not outlast the read');
});

test.serial('a list read whose value no context types, and one that fails, answer as the plain query', async (t) => {
  const knex = database.knex;
  const untyped = () => listRead<{ v: string | Buffer }>(knex, knex.select(knex.raw('? as v', ['plain'])));
  for (let i = 0; i < 2; i++) t.is((await untyped())[0].v.toString(), 'plain', `run ${i}`);
  const divide = (by: number) => listRead<{ v: number }>(knex, knex.select(knex.raw('(100 / ?::int)::int as v', [by])));
  t.like((await t.throwsAsync(divide(0))) as unknown as Record<string, unknown>, { code: '22012' });
  t.is((await divide(4))[0].v, 25, 'the statement runs again after its error');
  t.like((await t.throwsAsync(divide(0))) as unknown as Record<string, unknown>, { code: '22012' });
});
