import path from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { PGlite } from '@electric-sql/pglite';
import { freePort, migratedBackend, migrationNames, runCli, scratchPostgres, tempDir, usingPostgres, type CliResult } from '../helpers/cli.js';
import { startSmtp } from '../helpers/smtp.js';
import { openDatabase } from '../../src/db/database.js';
import { describeDatabase, postgresTooOld } from '../../src/ops/doctor/database.js';

interface Check {
  id: string;
  status: 'ok' | 'warn' | 'fail';
  message: string;
  fix: string | null;
}

async function doctor(env: Record<string, string>): Promise<CliResult & { checks: Map<string, Check> }> {
  const result = await runCli(['doctor', '--json'], { env, timeoutMs: 180_000 });
  let parsed: { checks: Check[] };
  try {
    parsed = JSON.parse(result.stdout);
  } catch {
    throw new Error(`doctor printed no JSON: ${result.stdout} ${result.stderr}`);
  }
  return { ...result, checks: new Map(parsed.checks.map((c) => [c.id, c])) };
}

/** The failed checks with their messages, for an assertion's message. */
const failed = (checks: Map<string, Check>) =>
  [...checks.values()].filter((c) => c.status === 'fail').map((c) => `${c.id}: ${c.message}`).join('; ');

/** Every check reports ok, warn or fail, and each warn or fail says how to fix it. */
function wellFormed(t: ExecutionContext, checks: Map<string, Check>): void {
  t.deepEqual([...checks.keys()].sort(), ['app_url', 'backups', 'configuration', 'data_dir', 'database', 'disk', 'migrations', 'node', 'pooler', 'signup', 'smtp', 'stripe', 'trust_proxy', 'webhook_backlog', 'worker']);
  for (const check of checks.values()) {
    t.true(['ok', 'warn', 'fail'].includes(check.status));
    if (check.status !== 'ok') t.truthy(check.fix, `${check.id} has a fix`);
    t.false(/\n/.test(check.message + (check.fix ?? '')), `${check.id} is one line`);
  }
}

/** Runs SQL on the backend the CLI uses (a PGlite data directory is opened, and released, here). */
async function onBackend(env: Record<string, string>, sql: string, bindings: unknown[] = []): Promise<any[]> {
  const database = await openDatabase({ databaseUrl: env.DATABASE_URL, dataDir: env.DATA_DIR ?? '' });
  try {
    return (await database.knex.raw(sql, bindings as any[])).rows;
  } finally {
    await database.close();
  }
}

// The live check runs on this machine's PostgreSQL (15, which passes); an older server cannot be run here, so the
// judgement is checked on the version numbers PostgreSQL reports.
test('PostgreSQL older than 15 is named as too old; 15 and later pass', (t) => {
  t.is(postgresTooOld(140011, 'PostgreSQL 14.11'), 'PostgreSQL 14.11 is older than PostgreSQL 15, which Quoting needs');
  t.is(postgresTooOld(150000, 'PostgreSQL 15.0'), null);
  t.is(postgresTooOld(170004, 'PostgreSQL 17.4'), null);
});

test('the database is named without its password, a Unix socket as the directory it is in', (t) => {
  t.is(describeDatabase('postgres://quoting:secret@127.0.0.1:5432/quoting', '/d'), 'PostgreSQL at 127.0.0.1:5432/quoting');
  t.is(describeDatabase('postgres://quoting:secret@db.internal/quoting', '/d'), 'PostgreSQL at db.internal:5432/quoting');
  t.is(describeDatabase('postgres://quoting:secret@%2Fvar%2Frun%2Fpostgresql/quoting', '/d'), 'PostgreSQL through the socket in /var/run/postgresql, database quoting');
  t.is(describeDatabase('postgres:///quoting?host=/var/run/postgresql', '/d'), 'PostgreSQL through the socket in /var/run/postgresql, database quoting');
  t.is(describeDatabase('postgres://quoting@db%zz/quoting', '/d'), 'PostgreSQL at db%zz:5432/quoting', 'a host that does not decode, as given');
  t.is(describeDatabase(undefined, '/var/lib/quoting'), 'embedded PGlite in /var/lib/quoting');
});

test('a fresh migrated install without SMTP, Stripe or a worker run has warnings only (exit 0)', async (t) => {
  t.timeout(300_000);
  const env = await migratedBackend(t);
  const result = await doctor(env);
  t.is(result.code, 0, failed(result.checks));
  wellFormed(t, result.checks);
  t.deepEqual([...result.checks.values()].filter((c) => c.status === 'fail'), []);
  t.is(result.checks.get('database')!.status, 'ok');
  t.regex(result.checks.get('database')!.message, usingPostgres ? /^PostgreSQL at 127\.0\.0\.1:5432\/quoting_cli_\w+ answers/ : /^embedded PGlite in .* answers/);
  t.is(result.checks.get('migrations')!.status, 'ok');
  t.is(result.checks.get('smtp')!.status, 'warn');
  t.is(result.checks.get('stripe')!.status, 'warn');
  t.is(result.checks.get('app_url')!.status, 'warn');
  t.is(result.checks.get('webhook_backlog')!.status, 'ok');
  t.is(result.checks.get('worker')!.status, usingPostgres ? 'warn' : 'ok');
  t.is(result.checks.get('backups')!.status, 'warn');
  t.regex(result.checks.get('backups')!.message, /^BACKUP_SCHEDULE is unset/);
  t.regex(result.checks.get('node')!.message, /^v\d+\.\d+\.\d+$/);
  t.regex(result.checks.get('disk')!.message, /GiB free/);
});

test('a healthy setup: public https APP_URL behind a proxy, an SMTP server that answers, a worker that ran', async (t) => {
  t.timeout(300_000);
  const env = await migratedBackend(t);
  const smtp = await startSmtp();
  t.teardown(() => smtp.close());
  const settings = { ...env, APP_URL: 'https://quotes.example.com', TRUST_PROXY: '1', SIGNUP: 'closed', SMTP_URL: smtp.url, BACKUP_SCHEDULE: '0 3 * * *', BACKUP_DIR: tempDir(t) };
  const backup = await runCli(['backup'], { env: settings, timeoutMs: 180_000 });
  t.is(backup.code, 0, backup.stderr);
  if (usingPostgres) {
    const worker = await runCli(['worker'], { env: settings });
    t.is(worker.code, 0, worker.stderr);
    t.is(worker.stdout, '', 'nothing due: silent');
  }
  const result = await doctor(settings);
  t.is(result.code, 0, failed(result.checks));
  wellFormed(t, result.checks);
  for (const id of ['configuration', 'node', 'database', 'migrations', 'data_dir', 'disk', 'smtp', 'app_url', 'trust_proxy', 'signup', 'webhook_backlog', 'worker', 'backups']) {
    t.is(result.checks.get(id)!.status, 'ok', `${id}: ${result.checks.get(id)!.message}`);
  }
  t.regex(result.checks.get('smtp')!.message, /^127\.0\.0\.1:\d+ answers/);
  if (usingPostgres) t.regex(result.checks.get('worker')!.message, /^last run \d+ s ago \(once, /);

  const text = await runCli(['doctor'], { env: settings, timeoutMs: 180_000 });
  t.is(text.code, 0);
  t.regex(text.stdout, /^ok {4}Configuration /m);
  t.regex(text.stdout, /^warn {2}Payments \(Stripe\) +STRIPE_SECRET_KEY is unset.*\. Fix: set STRIPE_SECRET_KEY/m);
  t.regex(text.stdout, /^14 ok, 1 warning, 0 failed\.$/m);
});

test('a DATABASE_URL that cannot be reached fails with its fix; an invalid one fails the configuration, naming every bad variable', async (t) => {
  t.timeout(300_000);
  const port = await freePort();
  const unreachable = await doctor({ DATABASE_URL: `postgres://quoting:secret-password@127.0.0.1:${port}/quoting` });
  t.is(unreachable.code, 1);
  wellFormed(t, unreachable.checks);
  const database = unreachable.checks.get('database')!;
  t.is(database.status, 'fail');
  t.regex(database.message, new RegExp(`^cannot reach PostgreSQL at 127\\.0\\.0\\.1:${port}/quoting: .*ECONNREFUSED`));
  t.regex(database.fix!, /check DATABASE_URL/);
  t.false(unreachable.stdout.includes('secret-password'), 'no password in the output');
  t.is(unreachable.checks.get('migrations')!.status, 'warn');
  t.deepEqual(unreachable.errorLines, ['error: 1 check failed: database']);

  const invalid = await doctor({ DATABASE_URL: 'localhost:5432/quoting', PORT: 'eighty', DATA_DIR: tempDir(t) });
  t.is(invalid.code, 1);
  const configuration = invalid.checks.get('configuration')!;
  t.is(configuration.status, 'fail');
  t.regex(configuration.message, /^2 invalid settings: /);
  t.true(configuration.message.includes('DATABASE_URL') && configuration.message.includes('PORT'), configuration.message);
  t.is(invalid.checks.get('database')!.status, 'warn');
  t.regex(invalid.checks.get('database')!.message, /^not checked: DATABASE_URL is invalid/);
  t.is(invalid.checks.get('smtp')!.status, 'warn', 'the other checks still run');
});

test('pending migrations fail on PostgreSQL (serve would refuse to start) and warn on the embedded database', async (t) => {
  t.timeout(300_000);
  const env = usingPostgres ? { DATABASE_URL: await scratchPostgres(t, { migrated: true }) } : await migratedBackend(t);
  const last = migrationNames[migrationNames.length - 1];
  if (usingPostgres) await onBackend(env, 'delete from knex_migrations where name = ?', [last]);
  else {
    const pglite = new PGlite(path.join(env.DATA_DIR, 'pglite'));
    await pglite.query('delete from knex_migrations where name = $1', [last]);
    await pglite.close();
  }
  const result = await doctor(env);
  const migrations = result.checks.get('migrations')!;
  t.regex(migrations.message, new RegExp(`^1 pending \\(${last}\\)`));
  t.regex(migrations.fix!, /^run 'quoting migrate'/);
  if (usingPostgres) {
    t.is(migrations.status, 'fail');
    t.is(result.code, 1);
  } else {
    t.is(migrations.status, 'warn');
    t.is(result.code, 0, result.stderr);
  }
});

test('an SMTP server that does not answer fails the mail check', async (t) => {
  t.timeout(300_000);
  const env = await migratedBackend(t);
  const port = await freePort();
  const result = await doctor({ ...env, SMTP_URL: `smtp://user:hunter22@127.0.0.1:${port}` });
  t.is(result.code, 1);
  const smtp = result.checks.get('smtp')!;
  t.is(smtp.status, 'fail');
  t.regex(smtp.message, new RegExp(`^127\\.0\\.0\\.1:${port} did not answer as an SMTP server should: .*ECONNREFUSED`));
  t.regex(smtp.fix!, /SMTP_URL/);
  t.false(result.stdout.includes('hunter22'));
});

test('a webhook delivery due for an hour (a stopped worker) fails the backlog check', async (t) => {
  t.timeout(300_000);
  const env = await migratedBackend(t);
  const created = await runCli(['workspace', 'create', '--name', 'Backlog', '--owner-email', 'owner@backlog.test'], { env });
  t.is(created.code, 0, created.stderr);
  await onBackend(
    env,
    `with w as (select id from workspaces where slug = 'backlog'),
     s as (insert into webhook_subscriptions (workspace_id, url, signing_secret) select id, 'https://hooks.example.com/x', 'whsec_test' from w returning id, workspace_id),
     e as (insert into events (id, workspace_id, type, data) select 'evt_00000000000000000000000001', id, 'customer.created', '{}' from w returning id)
     insert into webhook_deliveries (workspace_id, subscription_id, event_id, event_type, next_attempt_at)
     select s.workspace_id, s.id, e.id, 'customer.created', now() - interval '1 hour' from s, e`,
  );
  const result = await doctor(env);
  t.is(result.code, 1);
  const backlog = result.checks.get('webhook_backlog')!;
  t.is(backlog.status, 'fail');
  t.is(backlog.message, '1 delivery is due, the oldest for 60 min');
  t.regex(backlog.fix!, usingPostgres ? /worker is not running/ : /quoting serve delivers them/);
});
