import { spawn } from 'node:child_process';
import os from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ExecutionContext } from 'ava';
import { signUpOwner, startApp, uniqueEmail, type TestApp } from '../helpers/app.js';
import { bin, cliEnv, freePort, migratedDataDir, postgresTest, runCli, startServe, usingPostgres } from '../helpers/cli.js';
import { startReceiver } from '../helpers/receiver.js';
import { embeddedTest } from '../helpers/skip.js';

const ALLOW_LOOPBACK = { OUTBOUND_ALLOWED_CIDRS: '127.0.0.0/8' };

async function setup(t: ExecutionContext, path = '/hook') {
  const app: TestApp = await startApp(ALLOW_LOOPBACK);
  t.teardown(() => app.close());
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  const owner = await signUpOwner(app);
  const res = await owner.client.post('/api/v1/webhooks', { url: `${receiver.url}${path}` });
  if (res.status !== 201) throw new Error(`subscription: ${res.status} ${res.text}`);
  receiver.secrets.push(res.body.data.subscription.signing_secret);
  const env = { DATABASE_URL: app.database.url!, ...ALLOW_LOOPBACK };
  const customers = async (count: number) => {
    for (let i = 0; i < count; i++) {
      const created = await owner.client.post('/api/v1/customers', { email: uniqueEmail(`c${i}`) });
      if (created.status !== 201) throw new Error(`customer: ${created.status}`);
    }
  };
  return { app, receiver, env, customers };
}

postgresTest('three `quoting worker` started at once deliver each row once and all exit 0; the run after is silent', async (t) => {
  t.timeout(300_000);
  const { app, receiver, env, customers } = await setup(t);
  await customers(30);
  const runs = await Promise.all([1, 2, 3].map(() => runCli(['worker'], { env: { ...env, WEBHOOK_WORKER_BATCH: '100' } })));
  for (const run of runs) {
    t.is(run.code, 0, run.stderr);
    t.is(run.stderr, '');
    t.regex(run.stdout, /^(|Attempted \d+ deliver(y|ies): \d+ succeeded, 0 failed \(will retry\), 0 dead\.\n)$/);
  }
  const claimed = runs.reduce((sum, run) => sum + Number(/^Attempted (\d+)/.exec(run.stdout)?.[1] ?? 0), 0);
  t.is(claimed, 30);
  t.is(receiver.received.length, 30);
  t.is(new Set(receiver.received.map((r) => r.headers['service-event-id'])).size, 30, 'each event delivered once');
  t.is(Number((await app.db('webhook_deliveries').where({ status: 'succeeded' }).count({ n: '*' }))[0].n), 30);

  const quiet = await runCli(['worker'], { env });
  t.is(quiet.code, 0);
  t.is(quiet.stdout, '');
  t.is(quiet.stderr, '');
});

postgresTest('the summary line is singular for one delivery and names the failure reasons', async (t) => {
  t.timeout(300_000);
  const { receiver, env, customers } = await setup(t);
  receiver.respondWith((_req, res) => {
    res.statusCode = 503;
    res.end('down for maintenance');
  });
  await customers(1);
  const one = await runCli(['worker'], { env });
  t.is(one.code, 0, one.stderr);
  t.is(one.stdout, 'Attempted 1 delivery: 0 succeeded, 1 failed (will retry), 0 dead. Failures: HTTP 503 (1).\n');

  receiver.respondWith((_req, res) => res.end('ok'));
  await customers(2);
  const two = await runCli(['worker'], { env });
  t.is(two.stdout, 'Attempted 2 deliveries: 2 succeeded, 0 failed (will retry), 0 dead.\n');
});

postgresTest('SIGTERM during a batch: the deliveries in hand finish and are recorded, and the worker exits 0', async (t) => {
  t.timeout(300_000);
  const { app, receiver, env, customers } = await setup(t);
  const held: (() => void)[] = [];
  receiver.respondWith((_req, res) => held.push(() => res.end('ok')));
  await customers(3);
  const child = spawn(process.execPath, [bin, 'worker'], { cwd: os.tmpdir(), env: cliEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  t.teardown(() => void (child.exitCode === null && child.kill('SIGKILL')));

  await receiver.waitFor(3, 30_000);
  child.kill('SIGTERM');
  await sleep(500);
  t.is(child.exitCode, null, 'still finishing its batch');
  for (const answer of held) answer();
  t.is(await exited, 0);
  t.is(stdout, 'Attempted 3 deliveries: 3 succeeded, 0 failed (will retry), 0 dead.\n');
  const rows = await app.db('webhook_deliveries').select('status', 'claim_token', 'attempts');
  t.deepEqual(rows.map((r) => [r.status, r.claim_token, r.attempts]), [['succeeded', null, 1], ['succeeded', null, 1], ['succeeded', null, 1]]);
});

embeddedTest('on the embedded database held by quoting serve, a cron-run worker exits 0 and prints nothing (serve delivers)', async (t) => {
  t.timeout(300_000);
  const env = { DATA_DIR: await migratedDataDir(t) };
  const server = await startServe(t, ['--port', String(await freePort())], { env });
  const run = await runCli(['worker'], { env });
  t.is(run.code, 0, run.stderr);
  t.is(run.stdout, '');
  t.is(run.stderr, '');
  await server.stop();
});
