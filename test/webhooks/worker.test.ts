import { spawn } from 'node:child_process';
import os from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import test, { type ExecutionContext } from 'ava';
import type { Knex } from 'knex';
import { signUpOwner, startApp, uniqueEmail, type TestApp } from '../helpers/app.js';
import { bin, cliEnv, migratedDataDir, postgresTest, runCli, startServe, usingPostgres, type CliResult } from '../helpers/cli.js';
import { Client } from '../helpers/client.js';
import { startReceiver } from '../helpers/receiver.js';
import { loadConfig } from '../../src/config.js';
import { openDatabase, openPostgres } from '../../src/db/database.js';
import { WEBHOOK_CHANNEL } from '../../src/events/outbox.js';
import { DeliveryWorker, workerSettings } from '../../src/webhooks/worker.js';
import { PATIENCE_MS } from '../helpers/patience.js';
import { acrossWorkspaces, usingPooler } from '../helpers/database.js';

const ALLOW_LOOPBACK = { OUTBOUND_ALLOWED_CIDRS: '127.0.0.0/8' };
const SUMMARY = /^Attempted (\d+) deliver(?:y|ies): (\d+) succeeded, (\d+) failed \(will retry\), (\d+) dead\.(?: Failures: .+\.)?$/m;

type Receiver = Awaited<ReturnType<typeof startReceiver>>;

async function receiverFor(t: ExecutionContext) {
  const receiver = await startReceiver();
  const timers = new Set<NodeJS.Timeout>();
  let held: (() => void)[] = [];
  t.teardown(async () => {
    for (const timer of timers) clearTimeout(timer);
    await receiver.close();
  });
  return Object.assign(receiver, {
    /** A delayed answer that teardown cancels. */
    later(ms: number, fn: () => void) {
      const timer = setTimeout(() => {
        timers.delete(timer);
        fn();
      }, ms);
      timers.add(timer);
    },
    /** From now on, requests are answered 200 only at `release()`: the test, not the clock, decides when an attempt ends. */
    hold() {
      held = [];
      receiver.respondWith((_req, res) => held.push(() => res.end('ok')));
    },
    /** Answers every held request, and the next ones at once. */
    release() {
      receiver.respondWith((_req, res) => res.end('ok'));
      for (const answer of held.splice(0)) answer();
    },
  });
}

async function pgApp(t: ExecutionContext): Promise<TestApp> {
  const app = await startApp(ALLOW_LOOPBACK);
  t.teardown(() => app.close());
  return app;
}

/** `quoting worker` once against the app's database. */
function worker(app: TestApp, env: Record<string, string> = {}): Promise<CliResult> {
  return runCli(['worker'], { env: { DATABASE_URL: app.database.url!, ...ALLOW_LOOPBACK, ...env } });
}

function summaryOf(result: CliResult): { claimed: number; succeeded: number; failed: number; dead: number } {
  const match = SUMMARY.exec(result.stdout);
  if (!match) throw new Error(`no summary in ${JSON.stringify(result.stdout)} (stderr ${JSON.stringify(result.stderr)})`);
  const [claimed, succeeded, failed, dead] = match.slice(1).map(Number);
  return { claimed, succeeded, failed, dead };
}

/** A subscription (all events) on the receiver, whose secret the receiver then verifies. */
async function subscribe(client: Client, receiver: Receiver, path = '/hook'): Promise<number> {
  const res = await client.post('/api/v1/webhooks', { url: `${receiver.url}${path}` });
  if (res.status !== 201) throw new Error(`subscription: ${res.status} ${res.text}`);
  receiver.secrets.push(res.body.data.subscription.signing_secret);
  return res.body.data.subscription.id;
}

async function createCustomers(client: Client, count: number): Promise<void> {
  await Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const res = await client.post('/api/v1/customers', { email: uniqueEmail(`c${i}`), name: `Customer ${i}` });
      if (res.status !== 201) throw new Error(`customer: ${res.status} ${res.text}`);
    }),
  );
}

/** `count` events of the workspace straight in SQL, each with one delivery per subscription of the workspace. */
async function seedDeliveries(db: Knex, workspaceId: number, prefix: string, count: number): Promise<void> {
  await db.raw(
    `insert into events (id, workspace_id, type, data)
     select 'evt_' || ? || lpad(g::text, 26 - length(?), '0'), ?, 'customer.created', json_build_object('customer', json_build_object('id', g))
     from generate_series(1, ?) g`,
    [prefix, prefix, workspaceId, count],
  );
  await db.raw(
    `insert into webhook_deliveries (workspace_id, subscription_id, event_id, event_type)
     select e.workspace_id, s.id, e.id, e.type from events e join webhook_subscriptions s on s.workspace_id = e.workspace_id
     where e.workspace_id = ? and e.id like ?`,
    [workspaceId, `evt_${prefix}%`],
  );
}

/** Delivery key as a receiver dedupes: event id + the subscription (told apart by the secret that verified). */
const keyOf = (r: Receiver['received'][number]) => `${r.headers['service-event-id']}|${r.verifiedWith.join(',')}`;

function countBy<T>(items: T[], key: (item: T) => string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const item of items) counts.set(key(item), (counts.get(key(item)) ?? 0) + 1);
  return counts;
}

async function until(what: string, check: () => Promise<boolean>, ms = PATIENCE_MS): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

postgresTest('quoting worker delivers one batch of WEBHOOK_WORKER_BATCH, prints a summary, and is silent when nothing is due', async (t) => {
  const app = await pgApp(t);
  const receiver = await receiverFor(t);
  const owner = await signUpOwner(app);
  await subscribe(owner.client, receiver);
  await createCustomers(owner.client, 5);

  const first = await worker(app, { WEBHOOK_WORKER_BATCH: '3' });
  t.is(first.code, 0, first.stderr);
  t.deepEqual(summaryOf(first), { claimed: 3, succeeded: 3, failed: 0, dead: 0 });
  t.is(first.stderr, '');
  t.is(receiver.received.length, 3);
  t.true(receiver.received.every((r) => r.verifiedWith.length === 1 && r.headers['service-attempt'] === '1'));
  t.is((await app.db('webhook_deliveries').where({ status: 'succeeded' }).count({ n: '*' }))[0].n, '3');

  const second = await worker(app, { WEBHOOK_WORKER_BATCH: '3' });
  t.is(second.code, 0, second.stderr);
  t.deepEqual(summaryOf(second), { claimed: 2, succeeded: 2, failed: 0, dead: 0 });

  const third = await worker(app, { WEBHOOK_WORKER_BATCH: '3' });
  t.is(third.code, 0, third.stderr);
  t.is(third.stdout, '', 'silent when nothing is due (cron mails any output)');
  t.is(receiver.received.length, 5);
  t.is(new Set(receiver.received.map(keyOf)).size, 5);
  const rows = await app.db('webhook_deliveries').select('status', 'attempts', 'claim_token', 'lease_expires_at', 'delivered_at', 'last_status_code');
  t.true(rows.every((r) => r.status === 'succeeded' && r.attempts === 1 && r.claim_token === null && r.lease_expires_at === null && r.delivered_at && r.last_status_code === 200));
});

postgresTest('overlapping workers (processes, and instances on separate pools) deliver 2 × 1000 deliveries exactly once', async (t) => {
  const app = await pgApp(t);
  const receiver = await receiverFor(t);
  // Answers are held until two workers hold claims at once, so that the runs surely overlap.
  let held: (() => void)[] | null = null;
  receiver.respondWith((_req, res) => (held ? held.push(() => res.end('ok')) : receiver.later(2, () => res.end('ok'))));
  const overlapping = async <T>(work: () => Promise<T>): Promise<T> => {
    held = [];
    const done = work();
    let claimants = 0;
    try {
      await until('two workers holding claims at once', async () => {
        const { rows } = await app.db.raw('select count(distinct claim_token)::int as n from webhook_deliveries where claim_token is not null');
        claimants = rows[0].n;
        return claimants >= 2;
      });
    } finally {
      const release = held;
      held = null;
      for (const answer of release) answer();
    }
    t.true(claimants >= 2);
    return done;
  };
  const owner = await signUpOwner(app);
  await subscribe(owner.client, receiver, '/a');
  await subscribe(owner.client, receiver, '/b');

  // Two `quoting worker` processes, each run again and again until it finds nothing due.
  await seedDeliveries(app.db, owner.workspace.id, 'P', 500);
  const lane = async () => {
    let claimed = 0;
    for (let run = 0; run < 40; run++) {
      // Answers may be held until the other process has started: a busy machine takes its time.
      const result = await worker(app, { WEBHOOK_WORKER_BATCH: '100', WEBHOOK_TIMEOUT_SECONDS: '300' });
      if (result.code !== 0) throw new Error(`worker exited ${result.code}: ${result.stderr}`);
      if (result.stdout === '') return claimed;
      const summary = summaryOf(result);
      if (summary.succeeded !== summary.claimed) throw new Error(result.stdout);
      claimed += summary.claimed;
    }
    throw new Error('the queue never emptied');
  };
  const processes = await overlapping(() => Promise.all([lane(), lane()]));
  t.log('claimed by each process lane', processes);
  t.is(processes[0] + processes[1], 1000);
  t.true(processes.every((n) => n > 0), 'both processes took part');

  // Four DeliveryWorker instances, each on its own pool, looping concurrently.
  await seedDeliveries(app.db, owner.workspace.id, 'W', 500);
  const settings = workerSettings(loadConfig({ ...ALLOW_LOOPBACK, WEBHOOK_WORKER_BATCH: '50', WEBHOOK_TIMEOUT_SECONDS: '300' }));
  const instance = async () => {
    const database = openPostgres(app.database.url!, { poolMax: 2, pooler: usingPooler ? 'transaction' : undefined });
    const delivering = new DeliveryWorker(database.knex, settings);
    try {
      let claimed = 0;
      for (let summary = await delivering.runOnce(); summary.claimed > 0; summary = await delivering.runOnce()) {
        t.is(summary.succeeded, summary.claimed);
        claimed += summary.claimed;
      }
      return claimed;
    } finally {
      delivering.close();
      await database.close();
    }
  };
  const instances = await overlapping(() => Promise.all([instance(), instance(), instance(), instance()]));
  t.log('claimed by each instance', instances);
  t.is(instances.reduce((a, b) => a + b, 0), 1000);

  t.is(receiver.received.length, 2000);
  t.true(receiver.received.every((r) => r.verifiedWith.length === 1));
  const counts = countBy(receiver.received, keyOf);
  t.is(counts.size, 2000);
  t.deepEqual([...counts.values()].filter((n) => n !== 1), []);
  t.true(receiver.received.every((r) => r.headers['service-attempt'] === '1'));
  const rows = await app.db('webhook_deliveries').select('status', 'attempts').count({ n: '*' }).groupBy('status', 'attempts');
  t.deepEqual(rows, [{ status: 'succeeded', attempts: 1, n: '2000' }]);
});

/** Starts `quoting worker`, waits until the receiver holds `inFlight` of its requests, and SIGKILLs it. */
async function killMidBatch(t: ExecutionContext, receiver: Receiver, env: Record<string, string>, inFlight: number): Promise<void> {
  const child = spawn(process.execPath, [bin, 'worker'], { cwd: os.tmpdir(), env: cliEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
  const bound = setTimeout(() => child.kill('SIGKILL'), PATIENCE_MS);
  t.teardown(() => {
    clearTimeout(bound);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  await Promise.race([
    receiver.waitFor(receiver.received.length + inFlight),
    exited.then((r) => Promise.reject(new Error(`the worker exited before it was killed: ${JSON.stringify(r)}`))),
  ]);
  t.true(child.kill('SIGKILL'));
  t.deepEqual(await exited, { code: null, signal: 'SIGKILL' });
}

postgresTest('a worker killed mid-batch loses nothing: the rows are reclaimed after the lease, the interrupted attempt counts', async (t) => {
  const app = await pgApp(t);
  const receiver = await receiverFor(t);
  receiver.hold(); // the first worker is killed with its attempts unanswered
  const owner = await signUpOwner(app);
  await subscribe(owner.client, receiver);
  await createCustomers(owner.client, 4);
  // Long enough for the in-lease check below to run well inside it on a busy machine.
  const env = { DATABASE_URL: app.database.url!, ...ALLOW_LOOPBACK, WEBHOOK_LEASE_SECONDS: '6' };

  await killMidBatch(t, receiver, env, 4);

  const held = await app.db('webhook_deliveries').select('*', app.db.raw('extract(epoch from lease_expires_at - now()) as lease_left'));
  t.is(held.length, 4);
  t.true(held.every((r) => r.status === 'pending' && r.attempts === 1 && r.claim_token !== null && r.lease_expires_at !== null && r.delivered_at === null));
  // While the lease holds, another worker finds nothing to take.
  const leaseLeft = Math.min(...held.map((r) => Number(r.lease_left)));
  if (leaseLeft > 2) {
    const other = new DeliveryWorker(app.db, workerSettings(loadConfig({ ...ALLOW_LOOPBACK, WEBHOOK_LEASE_SECONDS: '6' })));
    t.teardown(() => other.close());
    t.is((await other.runOnce({ housekeeping: false })).claimed, 0);
  } else t.log(`lease had ${leaseLeft} s left; skipped the in-lease check`);

  await until('the lease to expire', async () => (await app.db('webhook_deliveries').where('lease_expires_at', '>', app.db.fn.now()).count({ n: '*' }))[0].n === '0');
  receiver.hold(); // the retries stay in flight until the rows are checked
  const second = runCli(['worker'], { env });
  // (A worker that exits without sending makes this fail at once, with its output.)
  const retries = (
    await Promise.race([receiver.waitFor(8), second.then((r) => Promise.reject(new Error(`the second worker exited early: ${JSON.stringify(r)}`)))])
  ).slice(4);
  // In flight: the row shows the second attempt and why the first did not finish.
  const inFlight = await app.db('webhook_deliveries').select('status', 'attempts', 'last_error');
  t.true(
    inFlight.every((r) => r.status === 'pending' && r.attempts === 2 && r.last_error === 'Attempt 1 was interrupted: the worker stopped before recording its outcome.'),
    JSON.stringify(inFlight),
  );
  receiver.release();
  const result = await second;
  t.is(result.code, 0, result.stderr);
  t.deepEqual(summaryOf(result), { claimed: 4, succeeded: 4, failed: 0, dead: 0 });

  const firsts = receiver.received.slice(0, 4);
  t.true(firsts.every((r) => r.headers['service-attempt'] === '1'));
  t.true(retries.every((r) => r.headers['service-attempt'] === '2' && r.verifiedWith.length === 1));
  t.deepEqual(new Set(retries.map(keyOf)), new Set(firsts.map(keyOf)));
  const rows = await app.db('webhook_deliveries').select('*');
  // Success clears last_error: the interruption shows only while the retry is under way.
  t.true(rows.every((r) => r.status === 'succeeded' && r.attempts === 2 && r.last_error === null && r.claim_token === null && r.delivered_at));
  t.is((await runCli(['worker'], { env })).stdout, '');
});

postgresTest('a delivery whose last allowed attempt was interrupted is dead once the lease expires, not retried', async (t) => {
  const app = await pgApp(t);
  const receiver = await receiverFor(t);
  receiver.hold(); // the worker is killed with its attempts unanswered
  const owner = await signUpOwner(app);
  await subscribe(owner.client, receiver);
  await createCustomers(owner.client, 2);
  const env = { DATABASE_URL: app.database.url!, ...ALLOW_LOOPBACK, WEBHOOK_LEASE_SECONDS: '2', WEBHOOK_MAX_ATTEMPTS: '1' };
  await killMidBatch(t, receiver, env, 2);

  await until('the lease to expire', async () => (await app.db('webhook_deliveries').where('lease_expires_at', '>', app.db.fn.now()).count({ n: '*' }))[0].n === '0');
  const after = await runCli(['worker'], { env });
  t.is(after.code, 0, after.stderr);
  t.is(after.stdout, '');
  t.is(receiver.received.length, 2);
  const rows = await app.db('webhook_deliveries').select('status', 'attempts', 'last_error', 'claim_token', 'lease_expires_at', 'delivered_at');
  t.deepEqual(
    rows,
    Array.from({ length: 2 }, () => ({
      status: 'dead',
      attempts: 1,
      last_error: 'Attempt 1 was interrupted: the worker stopped before recording its outcome.',
      claim_token: null,
      lease_expires_at: null,
      delivered_at: null,
    })),
  );
});

/** On PostgreSQL the latency test runs first and on its own, so that the heavier tests of this file do not slow it. */
function serialPostgresTest(title: string, fn: (t: ExecutionContext) => Promise<void>): void {
  if (usingPostgres) test.serial(title, fn);
  else postgresTest(title, fn);
}

serialPostgresTest('quoting worker --watch delivers a new event within a second of the API call and stops on SIGTERM', async (t) => {
  const app = await pgApp(t);
  const receiver = await receiverFor(t);
  const owner = await signUpOwner(app);
  await subscribe(owner.client, receiver);

  const child = spawn(process.execPath, [bin, 'worker', '--watch'], {
    cwd: os.tmpdir(),
    env: cliEnv({ DATABASE_URL: app.database.url!, ...ALLOW_LOOPBACK }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
  const bound = setTimeout(() => child.kill('SIGKILL'), PATIENCE_MS);
  t.teardown(() => {
    clearTimeout(bound);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  await until('the watcher to start', async () => /^Watching for deliveries/m.test(stdout));
  await until('the watcher to LISTEN', async () => {
    const { rows } = await app.db.raw(`select 1 from pg_stat_activity where datname = current_database() and query like 'LISTEN %'`);
    return rows.length > 0;
  });

  const latencies: number[] = [];
  for (let i = 1; i <= 4; i++) {
    await sleep(150 + i * 100); // the watcher idles between events
    const start = Date.now();
    await createCustomers(owner.client, 1);
    const [got] = (await receiver.waitFor(i)).slice(i - 1);
    latencies.push(got.at - start);
  }
  t.log('POST to arrival (ms)', latencies);
  // Speed is not asserted (a loaded machine is slow); that the watcher LISTENs is checked above.
  t.is(receiver.received.length, 4);
  t.true(receiver.received.every((r) => r.verifiedWith.length === 1));

  // SIGTERM with a delivery in flight: the attempt finishes and is recorded, then the process exits 0.
  receiver.hold();
  await createCustomers(owner.client, 1);
  await receiver.waitFor(5);
  const stopAt = Date.now();
  child.kill('SIGTERM');
  receiver.release();
  const { code, signal } = await exited;
  t.log('stopped in (ms)', Date.now() - stopAt);
  t.deepEqual({ code, signal }, { code: 0, signal: null }, stderr);
  t.is(stderr, '');
  const rows = await app.db('webhook_deliveries').orderBy('id').select('status', 'attempts', 'claim_token');
  t.deepEqual(rows, Array.from({ length: 5 }, () => ({ status: 'succeeded', attempts: 1, claim_token: null })));
});

test('quoting serve on the embedded database delivers webhooks in-process', async (t) => {
  const receiver = await receiverFor(t);
  const dataDir = await migratedDataDir(t);
  const server = await startServe(t, ['--port', '0'], { env: { DATA_DIR: dataDir, ...ALLOW_LOOPBACK } });
  t.teardown(() => server.stop('SIGKILL').then(() => undefined));
  t.regex(server.banner, /embedded PGlite/);
  const client = new Client(server.url);
  const signup = await client.post('/api/v1/auth/signup', { email: uniqueEmail('serve'), password: 'correct horse battery', name: 'Sam', workspace_name: 'Served' });
  t.is(signup.status, 201, signup.text);
  await subscribe(client, receiver);

  const start = Date.now();
  const created = await client.post('/api/v1/customers', { email: 'served@example.com', name: 'Served Customer' });
  t.is(created.status, 201);
  const [got] = await receiver.waitFor(1);
  t.log('POST to arrival (ms)', got.at - start);
  t.is(got.headers['service-event'], 'customer.created');
  t.is(got.verifiedWith.length, 1);
  t.deepEqual(got.body.data, { customer: created.body.data.customer });
  await until('the delivery to be recorded', async () => {
    const list = await client.get(`/api/v1/webhooks/${(await client.get('/api/v1/webhooks')).body.data.subscriptions[0].id}/deliveries`);
    return list.body.data.deliveries[0]?.status === 'succeeded';
  });
  t.deepEqual(await server.stop(), { code: 0, signal: null });
  t.is(receiver.received.length, 1);
});

/**
 * The backend under test for the resend CLI: PostgreSQL (the app in-process, its database for the CLI)
 * or the embedded database (a served data directory; the CLI runs once serve has stopped).
 */
async function resendBackend(t: ExecutionContext, receiver: Receiver) {
  const settings = { ...ALLOW_LOOPBACK, WEBHOOK_MAX_ATTEMPTS: '1' };
  if (usingPostgres) {
    const app = await startApp(settings);
    t.teardown(() => app.close());
    const owner = await signUpOwner(app);
    const env = { DATABASE_URL: app.database.url!, ...settings };
    return {
      client: owner.client,
      slug: owner.workspace.slug as string,
      env,
      /** Every queued delivery has been attempted (and, with one attempt allowed and answers of 500, is dead). */
      drain: async () => t.is((await runCli(['worker'], { env })).code, 0),
      rows: () => app.db('webhook_deliveries').orderBy('id').select('*'),
    };
  }
  const dataDir = await migratedDataDir(t);
  const server = await startServe(t, ['--port', '0'], { env: { DATA_DIR: dataDir, ...settings } });
  const client = new Client(server.url);
  const signup = await client.post('/api/v1/auth/signup', { email: uniqueEmail('resend'), password: 'correct horse battery', name: 'Rae', workspace_name: 'Resent' });
  if (signup.status !== 201) throw new Error(signup.text);
  return {
    client,
    slug: signup.body.data.workspace.slug as string,
    env: { DATA_DIR: dataDir, ...settings },
    drain: async () => {
      await until('serve to attempt every delivery', async () => {
        const subs = (await client.get('/api/v1/webhooks')).body.data.subscriptions as { id: number }[];
        const lists = await Promise.all(subs.map((s) => client.get(`/api/v1/webhooks/${s.id}/deliveries`)));
        return lists.every((l) => l.body.data.deliveries.every((d: { status: string }) => d.status === 'dead'));
      });
      t.deepEqual(await server.stop(), { code: 0, signal: null });
    },
    rows: async () => {
      const database = await openDatabase({ dataDir });
      try {
        return await acrossWorkspaces(database.knex)('webhook_deliveries').orderBy('id').select('*');
      } finally {
        await database.close();
      }
    },
  };
}

test('quoting webhooks resend re-queues by id or by status, and the next worker run delivers', async (t) => {
  const receiver = await receiverFor(t);
  receiver.respondWith((_req, res) => {
    res.statusCode = 500;
    res.end('down');
  });
  const backend = await resendBackend(t, receiver);
  const subA = await subscribe(backend.client, receiver, '/a');
  const subB = await subscribe(backend.client, receiver, '/b');
  await createCustomers(backend.client, 3);
  await backend.drain();
  const dead = await backend.rows();
  t.is(dead.length, 6);
  t.true(dead.every((r) => r.status === 'dead' && r.attempts === 1 && r.last_status_code === 500));
  const resend = (args: string[]) => runCli(['webhooks', 'resend', ...args], { env: backend.env });

  // Usage mistakes: one line naming the problem, nothing re-queued.
  const mistakes: [string[], RegExp][] = [
    [[], /give delivery ids, or --workspace <slug> with --status dead\|failed/],
    [['--workspace', backend.slug], /give delivery ids, or --workspace <slug> with --status/],
    [['--workspace', backend.slug, '--status', 'bogus'], /status: must be dead or failed/],
    [['--workspace', backend.slug, '--status', 'dead', '--since', 'yesterday'], /since: must be a date/],
    [['12', '--status', 'dead'], /not both/],
    [['--workspace', 'no-such-workspace', '--status', 'dead'], /no workspace with slug "no-such-workspace"/],
  ];
  await Promise.all(
    mistakes.map(async ([args, message]) => {
      const result = await resend(args);
      t.not(result.code, 0, args.join(' '));
      t.is(result.errorLines.length, 1, `${args.join(' ')}: ${result.stderr}`);
      t.regex(result.errorLines[0], message);
      t.is(result.stdout, '');
    }),
  );

  const future = await resend(['--workspace', backend.slug, '--status', 'dead', '--since', new Date(Date.now() + 3_600_000).toISOString()]);
  t.is(future.code, 0, future.stderr);
  t.is(future.stdout.trim(), 'Re-queued 0 deliveries.');

  const ofB = dead.filter((r) => r.subscription_id === subB).map((r) => r.id);
  const bySubscription = await resend(['--workspace', backend.slug, '--status', 'dead', '--subscription', String(subB)]);
  t.is(bySubscription.code, 0, bySubscription.stderr);
  t.is(bySubscription.stdout.trim(), `Re-queued 3 deliveries: ${ofB.join(', ')}.`);

  const [firstOfA, ...restOfA] = dead.filter((r) => r.subscription_id === subA).map((r) => r.id);
  // By id; an id that cannot be re-queued is named, and the exit code says so.
  const byId = await resend([String(firstOfA), '999999']);
  t.is(byId.code, 1);
  t.is(byId.stdout.trim(), `Re-queued 1 delivery: ${firstOfA}.`);
  t.deepEqual(byId.errorLines, ['error: not re-queued (unknown, being attempted right now, or their subscription is paused or was deleted): 999999']);

  // Only the rows still dead match a --status dead resend.
  const byStatus = await resend(['--workspace', backend.slug, '--status', 'dead', '--since', new Date(Date.now() - 3_600_000).toISOString()]);
  t.is(byStatus.code, 0, byStatus.stderr);
  t.is(byStatus.stdout.trim(), `Re-queued 2 deliveries: ${restOfA.join(', ')}.`);

  const queued = await backend.rows();
  t.true(
    queued.every((r) => r.status === 'pending' && r.attempts === 0 && r.claim_token === null && new Date(r.next_attempt_at).getTime() <= Date.now()),
    JSON.stringify(queued.map((r) => [r.status, r.attempts])),
  );

  receiver.respondWith((_req, res) => res.end('ok'));
  const before = receiver.received.length;
  const run = await runCli(['worker'], { env: backend.env });
  t.is(run.code, 0, run.stderr);
  t.deepEqual(summaryOf(run), { claimed: 6, succeeded: 6, failed: 0, dead: 0 });
  const again = receiver.received.slice(before);
  t.is(again.length, 6);
  t.true(again.every((r) => r.headers['service-attempt'] === '1'));
  const delivered = await backend.rows();
  t.true(delivered.every((r) => r.status === 'succeeded' && r.attempts === 1 && r.last_error === null));
});

test('a resend of a delivery under attempt leaves it to the worker holding it: no second live worker takes it', async (t) => {
  const app = await startApp(ALLOW_LOOPBACK);
  t.teardown(() => app.close());
  const receiver = await receiverFor(t);
  receiver.hold(); // the first attempt lasts until the resend and the second worker have been tried
  const owner = await signUpOwner(app);
  await subscribe(owner.client, receiver);
  await createCustomers(owner.client, 1);
  const settings = workerSettings(app.config);
  const first = new DeliveryWorker(app.db, settings);
  const second = new DeliveryWorker(app.db, settings);
  t.teardown(() => (first.close(), second.close()));

  const running = first.runOnce();
  const [got] = await receiver.waitFor(1);
  const [row] = await app.db('webhook_deliveries').select('id');
  const resent = await owner.client.post(`/api/v1/webhooks/deliveries/${row.id}/resend`);
  t.is(resent.status, 409, resent.text);
  t.regex(resent.body.error, /being attempted/);
  t.is((await second.runOnce()).claimed, 0);
  receiver.release();
  t.deepEqual(await running, { claimed: 1, succeeded: 1, failed: 0, dead: 0 });
  t.is(receiver.received.length, 1);
  t.is(got.headers['service-attempt'], '1');
  t.like(await app.db('webhook_deliveries').first('status', 'attempts'), { status: 'succeeded', attempts: 1 });
  // Once the attempt is over, the delivery can be resent.
  t.is((await owner.client.post(`/api/v1/webhooks/deliveries/${row.id}/resend`)).status, 200);
});

/** `quoting worker --watch` as a child (LOG_LEVEL=info, so its `deliveries` summaries can be read); SIGKILLed at teardown if still running. */
async function startWatcher(t: ExecutionContext, env: Record<string, string>) {
  const child = spawn(process.execPath, [bin, 'worker', '--watch'], { cwd: os.tmpdir(), env: cliEnv({ LOG_LEVEL: 'info', ...env }), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  await Promise.race([
    until('the watcher to start', async () => /^Watching for deliveries/m.test(stdout)),
    exited.then((r) => Promise.reject(new Error(`the watcher exited early: ${JSON.stringify(r)} ${stderr}`))),
  ]);
  const entries = () => stderr.split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>);
  return {
    child,
    exited,
    entries,
    /** Deliveries this process claimed, from its `deliveries` log lines. */
    claimed: () => entries().filter((e) => e.msg === 'deliveries').reduce((sum, e) => sum + Number(e.claimed), 0),
    async stop() {
      child.kill('SIGTERM');
      return exited;
    },
  };
}

const succeededCount = async (db: Knex) => Number((await db('webhook_deliveries').where({ status: 'succeeded' }).count({ n: '*' }))[0].n);

postgresTest('a watching worker keeps its rows while its receiver is slower than the lease: one POST per event, every row succeeded', async (t) => {
  const app = await pgApp(t);
  const receiver = await receiverFor(t);
  // A batch of 10 over 2 lanes answered after 2 s each takes 10 s: longer than the 6 s lease.
  receiver.respondWith((_req, res) => receiver.later(2000, () => res.end('ok')));
  const owner = await signUpOwner(app);
  await subscribe(owner.client, receiver);
  await seedDeliveries(app.db, owner.workspace.id, 'L', 14);
  const watcher = await startWatcher(t, {
    DATABASE_URL: app.database.url!, ...ALLOW_LOOPBACK,
    WEBHOOK_LEASE_SECONDS: '6', WEBHOOK_TIMEOUT_SECONDS: '30', WEBHOOK_CONCURRENCY: '2', WEBHOOK_WORKER_BATCH: '10',
  });

  await until('every row to be recorded', async () => (await succeededCount(app.db)) === 14);
  // Time for a re-claim of rows already answered to show at the receiver, had there been one.
  await sleep(3000);
  t.deepEqual(await watcher.stop(), { code: 0, signal: null });
  t.deepEqual(watcher.entries().filter((e) => e.level !== 'info'), []);
  t.is(receiver.received.length, 14);
  t.deepEqual([...countBy(receiver.received, keyOf).values()].filter((n) => n !== 1), []);
  t.true(receiver.received.every((r) => r.headers['service-attempt'] === '1' && r.verifiedWith.length === 1));
  const rows = await app.db('webhook_deliveries').select('status', 'attempts').count({ n: '*' }).groupBy('status', 'attempts');
  t.deepEqual(rows, [{ status: 'succeeded', attempts: 1, n: '14' }]);
});

postgresTest('after a SIGKILL only the deliveries in flight are sent again: answered ones were recorded as they came in', async (t) => {
  const app = await pgApp(t);
  const receiver = await receiverFor(t);
  // The first 8 requests are answered at once; later ones are held unanswered (in flight when the worker dies).
  const answered = new Set<string>();
  const unanswered = new Set<string>();
  receiver.respondWith((_req, res, got) => {
    if (answered.size < 8) {
      answered.add(keyOf(got));
      res.end('ok');
    } else unanswered.add(keyOf(got));
  });
  const owner = await signUpOwner(app);
  await subscribe(owner.client, receiver);
  await seedDeliveries(app.db, owner.workspace.id, 'K', 20);
  const env = { DATABASE_URL: app.database.url!, ...ALLOW_LOOPBACK, WEBHOOK_LEASE_SECONDS: '3', WEBHOOK_WORKER_BATCH: '20', WEBHOOK_CONCURRENCY: '4' };

  const child = spawn(process.execPath, [bin, 'worker'], { cwd: os.tmpdir(), env: cliEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  await Promise.race([
    receiver.waitFor(12, PATIENCE_MS),
    exited.then((r) => Promise.reject(new Error(`the worker exited before it was killed: ${JSON.stringify(r)}`))),
  ]);
  t.is(unanswered.size, 4);
  // The 8 answers are written within milliseconds; the wait is generous, and a worker that never writes them fails below.
  await until('the answered deliveries to be recorded', async () => (await succeededCount(app.db)) === 8).catch((err) => t.log(String(err)));
  t.true(child.kill('SIGKILL'));
  t.deepEqual(await exited, { code: null, signal: 'SIGKILL' });
  t.is(await succeededCount(app.db), 8);

  await until('the lease to expire', async () => (await app.db('webhook_deliveries').where('lease_expires_at', '>', app.db.fn.now()).count({ n: '*' }))[0].n === '0');
  receiver.respondWith((_req, res) => res.end('ok'));
  const after = await runCli(['worker'], { env });
  t.is(after.code, 0, after.stderr);
  t.deepEqual(summaryOf(after), { claimed: 12, succeeded: 12, failed: 0, dead: 0 });

  const posts = countBy(receiver.received, keyOf);
  t.is(posts.size, 20);
  t.deepEqual([...answered].map((key) => posts.get(key)), Array(8).fill(1), 'answered before the kill: never sent again');
  t.deepEqual([...unanswered].map((key) => posts.get(key)), Array(4).fill(2), 'in flight at the kill: sent again');
  t.is(receiver.received.length, 24);
  const rows = await app.db('webhook_deliveries').select('status').count({ n: '*' }).groupBy('status');
  t.deepEqual(rows, [{ status: 'succeeded', n: '20' }]);
});

postgresTest('overlapping watching workers with a short lease and slow answers never send a delivery twice', async (t) => {
  const app = await pgApp(t);
  const receiver = await receiverFor(t);
  // A batch of 20 over 2 lanes answered in 0.2–0.8 s takes about 5 s: longer than the 3 s lease.
  let n = 0;
  receiver.respondWith((_req, res) => receiver.later(200 + (n++ % 7) * 100, () => res.end('ok')));
  const owner = await signUpOwner(app);
  await subscribe(owner.client, receiver, '/a');
  await subscribe(owner.client, receiver, '/b');
  const env = {
    DATABASE_URL: app.database.url!, ...ALLOW_LOOPBACK,
    WEBHOOK_LEASE_SECONDS: '3', WEBHOOK_TIMEOUT_SECONDS: '30', WEBHOOK_CONCURRENCY: '2', WEBHOOK_WORKER_BATCH: '20',
  };
  const watchers = await Promise.all([startWatcher(t, env), startWatcher(t, env)]);
  // Both are idle and listening before the work arrives, and both wake on the same NOTIFY.
  await until('both watchers to LISTEN', async () => {
    const { rows } = await app.db.raw(`select count(*)::int as n from pg_stat_activity where datname = current_database() and query like 'LISTEN %'`);
    return rows[0].n >= 2;
  });
  await app.db.transaction(async (trx) => {
    await seedDeliveries(trx, owner.workspace.id, 'O', 60);
    await trx.raw(`select pg_notify(?, '')`, [WEBHOOK_CHANNEL]);
  });

  await until('every row to be recorded', async () => (await succeededCount(app.db)) === 120).catch(async (err) => {
    const rows = await app.db('webhook_deliveries').select('status', 'attempts').count({ n: '*' }).groupBy('status', 'attempts');
    t.log(JSON.stringify(rows), watchers.map((w) => [w.child.exitCode, w.child.signalCode, w.entries().filter((e) => e.level !== 'info')]));
    throw err;
  });
  await sleep(1000);
  for (const watcher of watchers) t.deepEqual(await watcher.stop(), { code: 0, signal: null });
  const claimed = watchers.map((w) => w.claimed());
  t.log('claimed by each watcher', claimed);
  t.is(claimed[0] + claimed[1], 120);
  t.true(claimed.every((c) => c > 0), 'both watchers took part');
  t.is(receiver.received.length, 120);
  t.deepEqual([...countBy(receiver.received, keyOf).values()].filter((c) => c !== 1), []);
  const rows = await app.db('webhook_deliveries').select('status', 'attempts').count({ n: '*' }).groupBy('status', 'attempts');
  t.deepEqual(rows, [{ status: 'succeeded', attempts: 1, n: '120' }]);
});

postgresTest('a watching worker held to one connection (DATABASE_POOL_MAX=1) still delivers every row once: claims, outcomes and renewals take turns', async (t) => {
  const app = await pgApp(t);
  const receiver = await receiverFor(t);
  const owner = await signUpOwner(app);
  await subscribe(owner.client, receiver);
  const env = { DATABASE_URL: app.database.url!, ...ALLOW_LOOPBACK, DATABASE_POOL_MAX: '1', WEBHOOK_WORKER_BATCH: '10', WEBHOOK_CONCURRENCY: '4' };
  const watcher = await startWatcher(t, env);
  await app.db.transaction(async (trx) => {
    await seedDeliveries(trx, owner.workspace.id, 'P', 45);
    await trx.raw(`select pg_notify(?, '')`, [WEBHOOK_CHANNEL]);
  });
  await until('every row to be recorded', async () => (await succeededCount(app.db)) === 45);
  t.deepEqual(await watcher.stop(), { code: 0, signal: null });
  t.is(receiver.received.length, 45);
  t.deepEqual([...countBy(receiver.received, keyOf).values()].filter((c) => c !== 1), []);
  t.throws(() => loadConfig({ DATABASE_POOL_MAX: '0' }), { message: /^DATABASE_POOL_MAX expects a whole number from 1 to 1000/ });
  t.throws(() => loadConfig({ DATABASE_POOL_MAX: 'many' }), { message: /^DATABASE_POOL_MAX expects/ });
});

test('outcomes are written as they come in, not when the batch is over', async (t) => {
  const app = await startApp(ALLOW_LOOPBACK);
  t.teardown(() => app.close());
  const receiver = await receiverFor(t);
  let release = () => {};
  receiver.respondWith((_req, res) => {
    if (receiver.received.length < 4) res.end('ok');
    else release = () => res.end('ok');
  });
  const owner = await signUpOwner(app);
  await subscribe(owner.client, receiver);
  await createCustomers(owner.client, 4);
  const delivering = new DeliveryWorker(app.db, workerSettings(loadConfig({ ...ALLOW_LOOPBACK, WEBHOOK_CONCURRENCY: '1' })));
  t.teardown(() => delivering.close());

  const running = delivering.runOnce();
  await receiver.waitFor(4, PATIENCE_MS);
  // The last attempt is held open: the three answered ones are recorded meanwhile.
  await until('the answered deliveries to be recorded', async () => (await succeededCount(app.db)) === 3);
  t.is(await app.db('webhook_deliveries').where({ status: 'pending' }).whereNotNull('claim_token').count({ n: '*' }).then(([r]) => Number(r.n)), 1);
  release();
  t.deepEqual(await running, { claimed: 4, succeeded: 4, failed: 0, dead: 0 });
  t.is(await succeededCount(app.db), 4);
  t.is(receiver.received.length, 4);
});
