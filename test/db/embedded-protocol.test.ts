import test from 'ava';
import type { Knex } from 'knex';
import { openPglite, type Database } from '../../src/db/database.js';
import { startPgliteThread } from '../../src/db/pglite-thread.js';

// The embedded database's list pages are read off the wire with their text kept as bytes (src/db/pglite-wire.ts),
// in one round trip with the page's settings. That path has its own reading of PostgreSQL's replies, so it is
// checked here against PGlite's own query(): on a PGlite in its thread, as `quoting serve` runs it, whichever
// database the rest of the suite runs on.

let database: Database;
test.before(async () => {
  database = await openPglite(await startPgliteThread());
  await database.knex.raw(`create table wire_probe (id serial primary key, label text, n int, amount numeric(12, 2), at timestamptz, flag boolean)`);
  await database.knex.raw(`insert into wire_probe (label, n, amount, at, flag) values ('plain', 1, 1.50, '2026-01-02T03:04:05Z', true), ('ünïcödé ✓ "quoted"', null, null, null, false), (null, 3, 3.00, null, null)`);
});
test.after.always(async () => {
  await database?.close();
});

const bytes = { textAsBytes: true };

test.serial('text columns arrive as their UTF-8 bytes; every other column as PGlite parses it', async (t) => {
  const sql = 'select * from wire_probe where id >= ? order by id';
  const plain = (await database.knex.raw(sql, [1])).rows as Record<string, unknown>[];
  const raw = (await database.knex.raw(sql, [1]).options(bytes)).rows as Record<string, unknown>[];
  t.is(raw.length, 3);
  raw.forEach((row, i) => {
    if (row.label !== null) t.true(Buffer.isBuffer(row.label), `row ${i}: a Buffer`);
    t.deepEqual({ ...row, label: row.label === null ? null : (row.label as Buffer).toString('utf8') }, plain[i], `row ${i}`);
  });
});

test.serial('values bind as PGlite binds them: arrays, dates, bytes, booleans, JSON', async (t) => {
  const sql = `select ?::text[] as tags, ?::int[] as ids, ?::timestamptz as at, ?::bytea as data, ?::boolean as flag, ?::json as doc, ? as label`;
  const values = [['a', 'b "quoted" \\ slash', null, 'comma, here'], [1, 2, 3], new Date(Date.UTC(2026, 1, 3, 4, 5, 6)), Buffer.from([0, 1, 254, 255]), false, JSON.stringify({ a: [1, 'two'] }), 'ünïcödé'] as unknown as Knex.RawBinding[];
  const hex = (row: Record<string, unknown>) => ({ ...row, data: Buffer.from(row.data as Uint8Array).toString('hex') });
  const [plain] = (await database.knex.raw(sql, values)).rows;
  const [raw] = (await database.knex.raw(sql, values).options(bytes)).rows;
  t.deepEqual(hex({ ...raw, label: raw.label.toString() }), hex(plain));
  t.deepEqual(plain.tags, ['a', 'b "quoted" \\ slash', null, 'comma, here']);
});

test.serial('an aggregate of many rows comes back whole, byte for byte', async (t) => {
  await database.knex.raw(`insert into wire_probe (label) select repeat('é', 500) || g from generate_series(1, 3000) g`);
  const sql = `select string_agg(label, ',' order by id) as json, count(*)::int as n from wire_probe where label like 'é%'`;
  const [plain] = (await database.knex.raw(sql)).rows;
  const [raw] = (await database.knex.raw(sql).options(bytes)).rows;
  t.is(raw.n, 3000);
  t.true(raw.json.length > 3_000_000, 'several megabytes, many chunks from PGlite');
  t.is(raw.json.toString('utf8'), plain.json);
});

test.serial('settings apply to the statement alone, and its error is the database error', async (t) => {
  const setting = async (options: object) => (await database.knex.raw(`select current_setting('enable_bitmapscan') as value`).options(options)).rows[0].value.toString();
  t.is(await setting({ ...bytes, settings: { enable_bitmapscan: 'off' } }), 'off');
  t.is(await setting(bytes), 'on', 'not left set after its own transaction');
  const err = await t.throwsAsync(database.knex.raw('select * from wire_probe where nope = ?', [1]).options({ ...bytes, settings: { enable_bitmapscan: 'off' } }));
  t.like(err as unknown as Record<string, unknown>, { code: '42703' });
  t.regex(err!.message, /column "nope" does not exist$/);
  // Its transaction ended with it: the next statements run.
  t.is((await database.knex.raw('select count(*)::int as n from wire_probe where id <= 3')).rows[0].n, 3);
  await t.throwsAsync(database.knex.raw('select 1').options({ ...bytes, settings: { 'x; drop table wire_probe': 'on' } }), { message: /not a setting/ });
});

test.serial('inside a transaction it runs in that transaction, and neither commits nor ends it', async (t) => {
  await t.throwsAsync(
    database.knex.transaction(async (trx) => {
      await trx.raw(`insert into wire_probe (label) values ('uncommitted')`);
      const { rows } = await trx.raw(`select label from wire_probe where label = 'uncommitted'`).options({ ...bytes, settings: { enable_bitmapscan: 'off' } });
      t.is(rows.length, 1, "it sees the transaction's own row");
      t.is((await trx.raw(`select current_setting('enable_bitmapscan') as v`)).rows[0].v, 'off', 'SET LOCAL, for the rest of the transaction');
      throw new Error('roll back');
    }),
    { message: 'roll back' },
  );
  t.is((await database.knex.raw(`select count(*)::int as n from wire_probe where label = 'uncommitted'`)).rows[0].n, 0, 'rolled back: the page did not commit it');
});

test.serial('a NOTIFY that arrives with a page still reaches its listener', async (t) => {
  const received: string[] = [];
  const stop = database.listen('wire_probe_channel', (payload) => received.push(payload));
  // Wait until the listener is registered: a NOTIFY from this session is delivered to it.
  for (let i = 0; i < 100 && received.length === 0; i++) {
    await database.knex.raw(`select pg_notify('wire_probe_channel', 'ping')`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  received.length = 0;
  await database.knex.raw(`select pg_notify('wire_probe_channel', 'from a plain query')`);
  await database.knex.raw(`select pg_notify('wire_probe_channel', 'with bytes')`).options(bytes);
  await database.knex.raw('select 1').options(bytes);
  await database.knex.raw('select 1');
  for (let i = 0; i < 100 && received.length < 2; i++) await new Promise((resolve) => setTimeout(resolve, 20));
  t.deepEqual(received, ['from a plain query', 'with bytes']);
  await stop();
});
