import test from 'ava';
import knexFactory from 'knex';
import pg from 'pg';
import { startApp, signUpOwner, uniqueEmail, type TestApp } from '../helpers/app.js';
import { usingPostgres } from '../helpers/database.js';
import { testWhen } from '../helpers/skip.js';
import { isDatabaseUnavailable } from '../../src/errors.js';

// Terminating backends is confined to this file's own database, so other test files never notice.
const terminate = async (db: TestApp['db']): Promise<number[]> =>
  (
    await db.raw(
      // In the select list (a FILTER), so it runs only for the rows the WHERE keeps, never for this connection.
      `select coalesce(array_agg(pid) filter (where pg_terminate_backend(pid)), '{}') as pids from pg_stat_activity
        where application_name = 'quoting' and datname = current_database() and pid <> pg_backend_pid()`,
    )
  ).rows[0].pids;

const serialPostgresTest = testWhen(usingPostgres, 'needs PostgreSQL to terminate server backends: set TEST_DATABASE_URL', { serial: true });

let app: TestApp | undefined;
test.before(async () => {
  if (usingPostgres) app = await startApp();
});
test.after.always(async () => {
  await app?.close();
});

serialPostgresTest('a connection lost in the middle of a transaction is 503, never 500: backends terminated while writes run', async (t) => {
  if (!app) throw new Error('the app did not start');
  const owner = await signUpOwner(app);
  const killer = knexFactory({ client: 'pg', connection: { connectionString: app.database.url, application_name: 'quoting-test-killer' }, pool: { min: 1, max: 1 } });
  t.teardown(() => killer.destroy());

  // Between two terminations a few requests complete, so the app both loses connections mid-work and recovers.
  let running = true;
  const terminated: number[] = [];
  let completed = 0;
  const killing = (async () => {
    while (running) {
      terminated.push(...(await terminate(killer)));
      const target = completed + 3;
      while (running && completed < target) await new Promise((resolve) => setTimeout(resolve, 2));
    }
  })();

  const statuses = new Map<number, number>();
  const failures: string[] = [];
  let sent = 0;
  const writer = async () => {
    while (sent < 600) {
      sent++;
      const email = uniqueEmail('loss');
      const res = sent % 2
        ? await owner.client.post('/api/v1/customers', { email, name: 'Lost Connection', notes: 'x'.repeat(200) })
        : await owner.client.post('/api/v1/quotes', { customer: { email, name: 'Lost Connection' }, lines: [{ description: 'Work', quantity: 2, price: '10.00' }] });
      completed++;
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      if (![200, 201, 503].includes(res.status)) failures.push(`${res.status} ${res.text}`);
    }
  };
  try {
    await Promise.all(Array.from({ length: 8 }, writer));
  } finally {
    running = false;
    await killing;
  }
  t.log('statuses', Object.fromEntries(statuses), 'backends terminated', terminated.length);
  t.true(terminated.length > 0, 'the loop terminated some backends');
  t.true((statuses.get(503) ?? 0) > 0, 'some requests met a terminated backend');
  t.deepEqual(failures, []);

  // Once the database is reachable again, the app serves as before. pg_terminate_backend only signals: the last
  // round's backends may still be ending (and the app's pool may still hold their connections) for a moment, so
  // "again" is once every terminated backend is gone.
  while ((await killer.raw('select count(*)::int as n from pg_stat_activity where pid = any(?)', [terminated])).rows[0].n > 0) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await new Promise((resolve) => setTimeout(resolve, 20)); // the app's pool hears each connection close
  const after = await owner.client.post('/api/v1/customers', { email: uniqueEmail('after'), name: 'Back Again' });
  t.is(after.status, 201, after.text);
});

serialPostgresTest('the errors pg raises for a connection killed mid-transaction are classified as a lost database', async (t) => {
  if (!app) throw new Error('the app did not start');
  const errors: unknown[] = [];

  // The statement running when the backend goes: "terminating connection due to administrator command".
  const client = new pg.Client({ connectionString: app.database.url, application_name: 'quoting' });
  client.on('error', () => undefined);
  await client.connect();
  await client.query('begin');
  await client.query('select 1');
  const pid = (await client.query('select pg_backend_pid() as pid')).rows[0].pid;
  const killed = client.query('select pg_sleep(30)').catch((err: unknown) => err);
  await app.db.raw('select pg_terminate_backend(?)', [pid]);
  errors.push(await killed);
  // The next statement on that client.
  errors.push(await client.query('commit').catch((err: unknown) => err));
  await client.end().catch(() => undefined);

  // Through knex, as the services meet it: the transaction's COMMIT on a connection that is gone.
  const db = knexFactory({ client: 'pg', connection: { connectionString: app.database.url, application_name: 'quoting' }, pool: { min: 0, max: 1 } });
  t.teardown(() => db.destroy());
  errors.push(
    await db
      .transaction(async (trx) => {
        const { rows } = await trx.raw('select pg_backend_pid() as pid');
        await app!.db.raw('select pg_terminate_backend(?)', [rows[0].pid]);
        // Give the client a moment to see the socket close before it sends the next statement.
        await new Promise((resolve) => setTimeout(resolve, 200));
        await trx.raw('select 1').catch(() => undefined);
      })
      .catch((err: unknown) => err),
  );

  t.log(errors.map((err) => (err as Error).message));
  t.is(errors.length, 3);
  for (const err of errors) {
    t.true(err instanceof Error, String(err));
    t.true(isDatabaseUnavailable(err), `not classified: ${(err as Error).message}`);
  }
  t.regex((errors[2] as Error).message, /^COMMIT; - Client has encountered a connection error and is not queryable/);
});
