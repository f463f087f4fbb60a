import fs from 'node:fs';
import path from 'node:path';
import test from 'ava';
import { PGlite } from '@electric-sql/pglite';
import { openPglite, openPostgres } from '../../src/db/database.js';
import { migrateLatest, migrationStatus } from '../../src/db/migrations.js';
import { startApp } from '../helpers/app.js';
import { useApp } from '../helpers/fixture.js';
import { Client } from '../helpers/client.js';
import { freePort, migrationNames, newDataDir, postgresTest, runCli, scratchPostgres, startServe, usingPostgres } from '../helpers/cli.js';

// ---------------------------------------------------------------------------------------------
// The migrator

test('migrations are the compiled files of migrations/, tracked by file name and applied once', async (t) => {
  const sources = fs
    .readdirSync(new URL('../../../migrations/', import.meta.url))
    .filter((file) => file.endsWith('.ts'))
    .map((file) => file.replace(/\.ts$/, ''))
    .sort();
  t.deepEqual(migrationNames, sources, 'every migration source is compiled and picked up, in file-name order');

  // An empty database, migrated over HTTP by POST /api/v1/migrate.
  const database = usingPostgres ? openPostgres(await scratchPostgres(t, { migrated: false }), 2) : await openPglite(new PGlite());
  const app = await startApp({ MIGRATE_TOKEN: 'tok' }, database);
  t.teardown(() => app.close());
  t.deepEqual(await migrationStatus(app.db), { applied: [], pending: migrationNames });

  const res = await app.client().post('/api/v1/migrate', undefined, { headers: { 'x-migrate-token': 'tok' } });
  t.is(res.status, 200, res.text);
  t.deepEqual(res.body.data, { migrations: { applied: migrationNames } });
  t.deepEqual(await migrationStatus(app.db), { applied: migrationNames, pending: [] });
  t.deepEqual(await migrateLatest(app.db), [], 'a re-run applies nothing');
  t.deepEqual((await app.client().post('/api/v1/migrate?token=tok')).body.data.migrations.applied, []);
  const rows = await app.db('knex_migrations').orderBy('id').select('name', 'batch');
  t.deepEqual(rows.map((row) => row.name), migrationNames, 'the applied file names are recorded');
  t.true(rows.every((row) => row.batch === 1));
});

// ---------------------------------------------------------------------------------------------
// quoting migrate, on the backend under test (a fresh PGlite DATA_DIR, or an empty scratch PostgreSQL database)

test('quoting migrate --status lists pending migrations, migrate applies them, a re-run has nothing to do', async (t) => {
  const backend = usingPostgres ? { DATABASE_URL: await scratchPostgres(t, { migrated: false }) } : { DATA_DIR: newDataDir(t) };
  const list = (names: string[]) => names.map((name) => `  ${name}\n`).join('');

  const before = await runCli(['migrate', '--status'], { env: backend });
  t.is(before.code, 0, before.stderr);
  t.is(before.stdout, `Applied (0):\nPending (${migrationNames.length}):\n${list(migrationNames)}`);

  const applied = await runCli(['migrate'], { env: backend });
  t.is(applied.code, 0, applied.stderr);
  t.is(applied.stdout, migrationNames.map((name) => `Applied ${name}\n`).join(''));

  const again = await runCli(['migrate'], { env: backend });
  t.is(again.code, 0, again.stderr);
  t.is(again.stdout, 'Nothing to migrate: the database is up to date.\n');

  const after = await runCli(['migrate', '--status'], { env: backend });
  t.is(after.code, 0, after.stderr);
  t.is(after.stdout, `Applied (${migrationNames.length}):\n${list(migrationNames)}Pending (0):\n`);
});

// ---------------------------------------------------------------------------------------------
// quoting serve and pending migrations

test('PGlite: quoting serve on a new DATA_DIR applies the migrations itself and answers /healthz', async (t) => {
  const dataDir = newDataDir(t);
  const server = await startServe(t, ['--port', String(await freePort())], { env: { DATA_DIR: dataDir, LOG_LEVEL: 'info' } });
  t.regex(server.banner, /\(database: embedded PGlite in /);
  const health = await new Client(server.url).get('/healthz');
  t.is(health.status, 200);
  t.deepEqual(health.body, { status: 'ok' });
  const logged = server.output().stderr.split('\n').filter(Boolean).map((line) => JSON.parse(line) as { msg: string; applied?: string[] });
  t.deepEqual(logged.find((entry) => entry.msg === 'migrations applied')?.applied, migrationNames);
  t.deepEqual(await server.stop(), { code: 0, signal: null });
  t.true(fs.existsSync(path.join(dataDir, 'pglite')));
  t.false(fs.existsSync(path.join(dataDir, 'quoting.lock')));
});

postgresTest('PostgreSQL: quoting serve refuses to start while migrations are pending; serve --migrate applies them and serves', async (t) => {
  const env = { DATABASE_URL: await scratchPostgres(t, { migrated: false }) };
  const refused = await runCli(['serve', '--port', String(await freePort())], { env });
  t.is(refused.code, 1);
  t.is(refused.stdout, '');
  t.is(refused.errorLines.length, 1, refused.stderr);
  t.regex(refused.errorLines[0], new RegExp(`^error: ${migrationNames.length} migration\\(s\\) pending \\(${migrationNames.join(', ')}\\)`));
  t.true(refused.errorLines[0].includes("'quoting migrate'"));
  t.true(refused.errorLines[0].includes('--migrate'));
  const untouched = await runCli(['migrate', '--status'], { env });
  t.regex(untouched.stdout, /^Applied \(0\):/, 'the refusal changed nothing');

  const server = await startServe(t, ['--migrate', '--port', String(await freePort())], { env });
  t.regex(server.banner, /\(database: PostgreSQL\)/);
  const health = await new Client(server.url).get('/healthz');
  t.is(health.status, 200);
  t.deepEqual(health.body, { status: 'ok' });
  t.deepEqual(await server.stop(), { code: 0, signal: null });

  const rerun = await runCli(['migrate'], { env });
  t.is(rerun.code, 0, rerun.stderr);
  t.regex(rerun.stdout, /^Nothing to migrate/);
  // Up to date, plain serve starts; PostgreSQL allows several processes at once.
  const [first, second] = await Promise.all([
    startServe(t, ['--port', String(await freePort())], { env }),
    startServe(t, ['--port', String(await freePort())], { env }),
  ]);
  t.is((await new Client(first.url).get('/healthz')).status, 200);
  t.is((await new Client(second.url).get('/healthz')).status, 200);
  await Promise.all([first.stop(), second.stop()]);
});

// ---------------------------------------------------------------------------------------------
// POST /api/v1/migrate

const { app: enabled } = useApp(test, { env: { MIGRATE_TOKEN: 'tok-s3cret' } });
const { app: disabled } = useApp(test, { env: { MIGRATE_TOKEN: '' } });

test('POST /api/v1/migrate is 403 when MIGRATE_TOKEN is unset, whatever the token', async (t) => {
  for (const headers of [{}, { 'x-migrate-token': 'tok-s3cret' }, { 'x-migrate-token': '' }] as Record<string, string>[]) {
    const res = await disabled.client().post('/api/v1/migrate', undefined, { headers });
    t.is(res.status, 403);
    t.is(typeof res.body.error, 'string');
    t.regex(res.body.error, /MIGRATE_TOKEN/);
    t.is(res.body.data, undefined);
  }
  t.is((await disabled.client().post('/api/v1/migrate?token=tok-s3cret')).status, 403);
});

test('POST /api/v1/migrate is 401 with a wrong or missing token', async (t) => {
  const client = enabled.client();
  const attempts: { headers?: Record<string, string> }[] = [
    {},
    { headers: { 'x-migrate-token': 'wrong' } },
    { headers: { 'x-migrate-token': 'tok-s3cret-and-more' } },
    { headers: { 'x-migrate-token': 'TOK-S3CRET' } },
    { headers: { authorization: 'Bearer tok-s3cret' } },
  ];
  for (const options of attempts) {
    const res = await client.post('/api/v1/migrate', undefined, options);
    t.is(res.status, 401, JSON.stringify(options));
    t.is(typeof res.body.error, 'string');
    t.false(res.text.includes('tok-s3cret'), 'the token is never echoed');
  }
  t.is((await client.post('/api/v1/migrate?token=wrong')).status, 401);
  t.is((await client.post('/api/v1/migrate?token=')).status, 401);
});

test('POST /api/v1/migrate with the token (header or ?token=) answers 200 and applies nothing on an up-to-date database', async (t) => {
  const byHeader = await enabled.client().post('/api/v1/migrate', undefined, { headers: { 'X-Migrate-Token': 'tok-s3cret' } });
  t.is(byHeader.status, 200, byHeader.text);
  t.deepEqual(byHeader.body.data, { migrations: { applied: [] } });
  t.is(byHeader.body.error, undefined);

  const byQuery = await enabled.client().post('/api/v1/migrate?token=tok-s3cret');
  t.is(byQuery.status, 200, byQuery.text);
  t.deepEqual(byQuery.body.data.migrations.applied, []);

  t.deepEqual(await migrationStatus(enabled.db), { applied: migrationNames, pending: [] });
});

test('only POST applies migrations', async (t) => {
  const res = await enabled.client().get('/api/v1/migrate?token=tok-s3cret');
  t.true([404, 405].includes(res.status), String(res.status));
});
