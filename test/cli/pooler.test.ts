import { spawn } from 'node:child_process';
import test, { type ExecutionContext } from 'ava';
import knexFactory from 'knex';
import { Client } from '../helpers/client.js';
import { bin, cliEnv, freePort, runCli, scratchPostgres, startServe, usingPostgres } from '../helpers/cli.js';
import { PATIENCE_MS } from '../helpers/patience.js';
import { pgbouncerBinary, startPgbouncer, type Pgbouncer } from '../helpers/pgbouncer.js';
import { startReceiver } from '../helpers/receiver.js';
import { testWhen } from '../helpers/skip.js';
import { UNHEARD_SESSION_CACHE_SECONDS } from '../../src/auth/session-cache.js';

// Part of the PostgreSQL run: .ci/run installs Debian's pgbouncer, so in CI nothing here skips.
const poolerTest = testWhen(
  usingPostgres && Boolean(pgbouncerBinary),
  !usingPostgres ? 'needs PostgreSQL: set TEST_DATABASE_URL' : 'needs pgbouncer: apt-get install pgbouncer',
  { serial: true },
);

let pgbouncer: Pgbouncer | undefined;
test.after.always(async () => pgbouncer?.stop());

/** A migrated scratch database: its direct URL, and the same database through this file's PgBouncer (transaction mode). */
async function database(t: ExecutionContext): Promise<{ direct: string; pooled: string }> {
  pgbouncer ??= await startPgbouncer(process.env.TEST_DATABASE_URL!, { poolSize: 20 });
  const direct = await scratchPostgres(t, { migrated: true });
  return { direct, pooled: pgbouncer.through(direct) };
}

/** `quoting worker --watch` until the test ends. */
function startWorker(t: ExecutionContext, env: Record<string, string | undefined>): void {
  const child = spawn(process.execPath, ['--', bin, 'worker', '--watch'], { env: cliEnv(env), stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  child.once('exit', (code) => {
    if (code) t.log(`worker exited ${code}: ${stderr}`);
  });
}

poolerTest('without DATABASE_POOLER, serve and worker stop at a transaction pooler with one line naming the setting; doctor says so', async (t) => {
  const { direct, pooled } = await database(t);
  for (const args of [['worker'], ['worker', '--watch'], ['serve', '--port', String(await freePort())]]) {
    const result = await runCli(args, { env: { DATABASE_URL: pooled, DATABASE_POOLER: undefined } });
    t.is(result.code, 1, args.join(' '));
    t.is(result.errorLines.length, 1, result.stderr);
    t.regex(result.errorLines[0], /^error: DATABASE_URL goes through a transaction-mode connection pooler .*set DATABASE_POOLER=transaction/);
    t.notRegex(result.stderr, /\n\s+at /, 'no stack trace');
  }
  const doctor = async (env: Record<string, string | undefined>) => {
    const result = await runCli(['doctor', '--json'], { env: { DATABASE_URL: pooled, DATABASE_POOLER: undefined, ...env }, timeoutMs: 180_000 });
    return JSON.parse(result.stdout).checks.find((c: { id: string }) => c.id === 'pooler') as { status: string; message: string; fix: string | null };
  };
  const unset = await doctor({});
  t.is(unset.status, 'fail');
  t.regex(unset.fix!, /DATABASE_POOLER=transaction/);
  t.like(await doctor({ DATABASE_POOLER: 'transaction' }), { status: 'warn' });
  t.like(await doctor({ DATABASE_POOLER: 'transaction', DATABASE_LISTEN_URL: pooled }), { status: 'fail' });
  t.like(await doctor({ DATABASE_POOLER: 'transaction', DATABASE_LISTEN_URL: direct }), { status: 'ok' });
  t.like(await doctor({ DATABASE_URL: direct }), { status: 'ok' }, 'PostgreSQL itself is no pooler');
  // With the setting the worker runs through the pooler.
  const worker = await runCli(['worker'], { env: { DATABASE_URL: pooled, DATABASE_POOLER: 'transaction' } });
  t.is(worker.code, 0, worker.stderr);
});

poolerTest('two servers and two watching workers behind PgBouncer: every event delivered once; a logout on one server is refused on the other within the bound', async (t) => {
  const { direct, pooled } = await database(t);
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  // An hour of cache: only the bound for processes that cannot LISTEN makes the other server forget the session.
  const env = { DATABASE_URL: pooled, DATABASE_POOLER: 'transaction', SESSION_CACHE_SECONDS: '3600', OUTBOUND_ALLOWED_CIDRS: '127.0.0.1/32' };
  const servers = await Promise.all([0, 1].map(async () => startServe(t, ['--port', String(await freePort())], { env })));
  startWorker(t, env);
  startWorker(t, env);
  const [a, b] = servers.map((server) => new Client(server.url));
  const signup = await a.post('/api/v1/auth/signup', { email: 'pooled@example.com', password: 'correct horse battery', name: 'Pat', workspace_name: 'Pooled' });
  t.is(signup.status, 201, signup.text);
  for (const [name, value] of a.cookies) b.cookies.set(name, value);
  t.is((await a.post('/api/v1/webhooks', { url: `${receiver.url}/hook` })).status, 201);

  // Writes on both servers, each with its event: customers, quotes moved along, one deleted.
  const count = 20;
  const writes = await Promise.all(
    Array.from({ length: count }, (_, i) => [a, b][i % 2].post('/api/v1/customers', { email: `c${i}@example.com`, name: `C ${i}` })),
  );
  t.deepEqual(writes.map((r) => r.status), Array(count).fill(201));
  const quote = await b.post('/api/v1/quotes', { customer: { email: 'q@example.com' }, lines: [{ description: 'Pooled', price: '1.00' }] });
  t.is(quote.status, 201, quote.text);
  t.is((await a.post(`/api/v1/quotes/${quote.body.data.quote.id}/send`, { notify: false })).status, 200);
  t.is((await b.delete(`/api/v1/quotes/${quote.body.data.quote.id}`)).status, 200);
  const list = await a.get('/api/v1/customers?limit=100');
  t.is(list.status, 200);
  t.is(list.body.data.customers.length, count + 1);

  // count customer.created, then customer.created (the quote's new customer), quote.created, quote.sent, quote.deleted.
  const expected = count + 4;
  const admin = knexFactory({ client: 'pg', connection: direct, pool: { min: 0, max: 1 } });
  t.teardown(() => admin.destroy());
  const { rows: events } = await admin.raw('/* all workspaces: the test reads the outbox */ select id, type from events');
  t.is(events.length, expected);
  t.true(events.some((e: { type: string }) => e.type === 'quote.deleted'), 'quote.deleted written through the pooler');
  await receiver.waitFor(expected);
  // Settled: nothing is pending, and the receiver got each event once.
  const deadline = Date.now() + PATIENCE_MS;
  let due = -1;
  while (due !== 0 && Date.now() < deadline) {
    const { rows } = await admin.raw(`/* all workspaces: the queue */ select count(*)::int as n from webhook_deliveries where status <> 'succeeded'`);
    due = rows[0].n;
    if (due) await new Promise((resolve) => setTimeout(resolve, 200));
  }
  t.is(due, 0);
  const ids = receiver.received.map((r) => (r.body as { id: string }).id);
  t.is(ids.length, expected, 'nothing delivered twice');
  t.deepEqual([...ids].sort(), events.map((e: { id: string }) => e.id).sort(), 'nothing lost, nothing twice');

  // The session is cached on both servers; a logout on A is refused on B once the bound has passed.
  t.is((await b.get('/api/v1/auth/me')).status, 200);
  t.is((await a.get('/api/v1/auth/me')).status, 200);
  t.is((await a.post('/api/v1/auth/logout')).status, 200);
  await new Promise((resolve) => setTimeout(resolve, UNHEARD_SESSION_CACHE_SECONDS * 1000 + 200));
  t.is((await b.get('/api/v1/auth/me')).status, 401);
});

poolerTest('with DATABASE_LISTEN_URL, a logout on one server behind PgBouncer reaches the other by LISTEN, though it caches for an hour', async (t) => {
  const { direct, pooled } = await database(t);
  const env = { DATABASE_URL: pooled, DATABASE_POOLER: 'transaction', DATABASE_LISTEN_URL: direct, SESSION_CACHE_SECONDS: '3600' };
  const servers = await Promise.all([0, 1].map(async () => startServe(t, ['--port', String(await freePort())], { env })));
  const [a, b] = servers.map((server) => new Client(server.url));
  t.is((await a.post('/api/v1/auth/signup', { email: 'listen@example.com', password: 'correct horse battery', name: 'Lee', workspace_name: 'Listen' })).status, 201);
  for (const [name, value] of a.cookies) b.cookies.set(name, value);
  t.is((await b.get('/api/v1/auth/me')).status, 200);
  t.is((await b.get('/api/v1/auth/me')).status, 200, 'now from the cache');
  t.is((await a.post('/api/v1/auth/logout')).status, 200);
  // The notification arrives after the logout commits: asked until it has (never for the cache's hour).
  const deadline = Date.now() + PATIENCE_MS;
  let status = (await b.get('/api/v1/auth/me')).status;
  while (status === 200 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    status = (await b.get('/api/v1/auth/me')).status;
  }
  t.is(status, 401);
});
