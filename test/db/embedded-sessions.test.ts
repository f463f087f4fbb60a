import test from 'ava';
import { openPglite, type Database } from '../../src/db/database.js';
import { startPgliteThread } from '../../src/db/pglite-thread.js';

// The embedded database is one PostgreSQL session, shared by knex's connections (src/db/pglite-thread.ts
// PgliteSessions). While one connection's transaction is open, another's read runs inside it, read-only and undone
// after; its write, and its own transaction, wait for that transaction to end. Each test holds a transaction open
// until the other connection's statement has answered (or has been seen waiting): a read that waited would never answer,
// and the test would time out. On a PGlite in its thread, as `quoting serve` runs it, whichever database the rest of
// the suite runs on.

let database: Database;
test.before(async () => {
  database = await openPglite(await startPgliteThread());
  await database.knex.raw('create table session_probe (id serial primary key, label text not null)');
});
test.after.always(async () => {
  await database?.close();
});

const labels = async () => (await database.knex('session_probe').orderBy('id').pluck('label')) as string[];

test.serial('a read answers while another connection holds a transaction open, and sees its writes before they commit', async (t) => {
  const db = database.knex;
  await db.transaction(async (trx) => {
    await trx('session_probe').insert({ label: 'in the transaction' });
    const seen = await db.raw('select count(*)::int as n from session_probe');
    t.is(seen.rows[0].n, 1);
    await trx.rollback();
  }).catch(() => undefined);
  t.deepEqual(await labels(), []);
});

test.serial('a write waits for the open transaction to end, and is not part of it', async (t) => {
  const db = database.knex;
  const order: string[] = [];
  let write: Promise<unknown> | undefined;
  await db.transaction(async (trx) => {
    await trx('session_probe').insert({ label: 'rolled back' });
    write = db('session_probe').insert({ label: 'its own' }).then(() => order.push('write'));
    // The transaction goes on meanwhile: its statements are not held behind the waiting write.
    for (let i = 0; i < 5; i++) await trx.raw('select 1');
    order.push('transaction');
    await trx.rollback();
  }).catch(() => undefined);
  await write;
  t.deepEqual(order, ['transaction', 'write']);
  t.deepEqual(await labels(), ['its own']);
  await db('session_probe').delete();
});

test.serial('a failing read fails alone: the transaction it ran in goes on and commits', async (t) => {
  const db = database.knex;
  await db.transaction(async (trx) => {
    await trx('session_probe').insert({ label: 'kept' });
    const err = await t.throwsAsync(db.raw('select 1 / 0'));
    t.regex(err?.message ?? '', /division by zero/);
    await trx('session_probe').insert({ label: 'kept too' });
  });
  t.deepEqual(await labels(), ['kept', 'kept too']);
  await db('session_probe').delete();
});

test.serial("a read's settings and locks end with it; a statement that writes through a function waits", async (t) => {
  const db = database.knex;
  let next: Promise<unknown> | undefined;
  let nextDone = false;
  await db.transaction(async (trx) => {
    await trx.raw('select 1');
    const inside = await db.raw(`select current_setting('transaction_read_only') as ro`).options({ settings: { enable_bitmapscan: 'off' } });
    t.is(inside.rows[0].ro, 'on');
    // nextval() writes: refused read-only, so it waits for the transaction, then runs.
    next = db.raw(`select nextval('session_probe_id_seq') as n`).then((r) => ((nextDone = true), r));
    for (let i = 0; i < 5; i++) await trx.raw('select 1');
    t.false(nextDone);
    const after = await trx.raw(`select current_setting('transaction_read_only') as ro, current_setting('enable_bitmapscan') as bitmap`);
    t.deepEqual(after.rows[0], { ro: 'off', bitmap: 'on' });
    await trx('session_probe').insert({ label: 'written after the reads' });
  });
  t.true(Number((await next as { rows: { n: string }[] }).rows[0].n) > 0);
  t.deepEqual(await labels(), ['written after the reads']);
  await db('session_probe').delete();
});

test.serial("another connection's transaction begins once the open one has ended", async (t) => {
  const db = database.knex;
  const order: string[] = [];
  let second: Promise<unknown> | undefined;
  await db.transaction(async (trx) => {
    await trx('session_probe').insert({ label: 'first' });
    second = db.transaction(async (other) => {
      order.push('second began');
      await other('session_probe').insert({ label: 'second' });
    });
    for (let i = 0; i < 5; i++) await trx.raw('select 1');
    order.push('first ends');
  });
  await second;
  t.deepEqual(order, ['first ends', 'second began']);
  t.deepEqual(await labels(), ['first', 'second']);
});
