import fs from 'node:fs';
import path from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { freePort, migratedDataDir, newDataDir, runCli, scratchPostgres, startServe, tempDir } from './helpers/cli.js';
import { embeddedTest, postgresTest } from './helpers/skip.js';
import { Client } from './helpers/client.js';

const owner = { email: 'owner@backup.test', password: 'correct horse battery' };

/** Signs up over the API and creates a customer: the data a backup must carry. */
async function createData(url: string): Promise<number> {
  const client = new Client(url);
  const signup = await client.post('/api/v1/auth/signup', { ...owner, name: 'Olive', workspace_name: 'Backups Inc' });
  if (signup.status !== 201) throw new Error(`signup: ${signup.status} ${signup.text}`);
  const customer = await client.post('/api/v1/customers', { email: 'kept@customer.test', name: 'Kept Customer' });
  if (customer.status !== 201) throw new Error(`customer: ${customer.status} ${customer.text}`);
  return customer.body.data.customer.id;
}

/** Signs in on a server started on the restored database and reads the customer back. */
async function readBack(t: ExecutionContext, env: Record<string, string>, customerId: number): Promise<void> {
  const server = await startServe(t, ['--port', String(await freePort())], { env });
  const client = new Client(server.url);
  const login = await client.post('/api/v1/auth/login', owner);
  t.is(login.status, 200, login.text);
  const customer = await client.get(`/api/v1/customers/${customerId}`);
  t.is(customer.status, 200, customer.text);
  t.is(customer.body.data.customer.email, 'kept@customer.test');
  t.is(customer.body.data.customer.name, 'Kept Customer');
  await server.stop();
}

embeddedTest('backup and restore on the embedded database: the data survives into a fresh DATA_DIR, and the restored instance serves it', async (t) => {
  t.timeout(600_000);
  const source = { DATA_DIR: await migratedDataDir(t) };
  const server = await startServe(t, ['--port', String(await freePort())], { env: source });
  const customerId = await createData(server.url);
  await server.stop();

  const file = path.join(tempDir(t), 'quoting.backup');
  const backup = await runCli(['backup', '--out', file], { env: source, timeoutMs: 180_000 });
  t.is(backup.code, 0, backup.stderr);
  t.regex(backup.stdout, new RegExp(`^Backed up embedded PGlite in .* to ${file} \\(\\d+(\\.\\d)? [KM]B\\)\\.\\n$`));
  t.is(fs.statSync(file).mode & 0o777, 0o600);
  t.deepEqual(fs.readdirSync(path.dirname(file)), ['quoting.backup'], 'no partial file left');

  const target = { DATA_DIR: newDataDir(t) };
  const restore = await runCli(['restore', file], { env: target, timeoutMs: 180_000 });
  t.is(restore.code, 0, restore.stderr);
  t.regex(restore.stdout, /^Restored .* into embedded PGlite in .*\.\n$/);
  await readBack(t, target, customerId);

  // The source holds data: refused without --force, replaced (and kept aside) with it.
  const refused = await runCli(['restore', file], { env: source, timeoutMs: 180_000 });
  t.is(refused.code, 1);
  t.regex(refused.errorLines[0], /^error: the embedded database in .* holds data; restore into an empty database, or pass --force to replace it/);
  const forced = await runCli(['restore', file, '--force'], { env: source, timeoutMs: 180_000 });
  t.is(forced.code, 0, forced.stderr);
  t.regex(forced.stdout, /The data it replaced is in .*pglite\.replaced-/);
  await readBack(t, source, customerId);
});

postgresTest('backup and restore on PostgreSQL (pg_dump custom format): the data survives into a fresh database, which serves it', async (t) => {
  t.timeout(600_000);
  const source = { DATABASE_URL: await scratchPostgres(t, { migrated: true }) };
  const server = await startServe(t, ['--port', String(await freePort())], { env: source });
  const customerId = await createData(server.url);

  // While the server runs: PostgreSQL takes a consistent snapshot.
  const file = path.join(tempDir(t), 'quoting.dump');
  const backup = await runCli(['backup', '--out', file], { env: source, timeoutMs: 180_000 });
  t.is(backup.code, 0, backup.stderr);
  t.regex(backup.stdout, /^Backed up PostgreSQL at 127\.0\.0\.1:5432\/quoting_cli_\w+ to .*quoting\.dump \(\d+ KB\)\.\n$/);
  t.is(fs.readFileSync(file).subarray(0, 5).toString(), 'PGDMP');
  await server.stop();

  // A fresh, migrated but unused database (what install.sh leaves) counts as empty.
  const target = { DATABASE_URL: await scratchPostgres(t, { migrated: true }) };
  const restore = await runCli(['restore', file], { env: target, timeoutMs: 180_000 });
  t.is(restore.code, 0, restore.stderr);
  await readBack(t, target, customerId);

  const refused = await runCli(['restore', file], { env: source, timeoutMs: 180_000 });
  t.is(refused.code, 1);
  t.regex(refused.errorLines[0], /^error: PostgreSQL at .* holds data; restore into an empty database, or pass --force to replace it$/);
  const forced = await runCli(['restore', file, '--force'], { env: source, timeoutMs: 180_000 });
  t.is(forced.code, 0, forced.stderr);
  await readBack(t, source, customerId);

  const wrongKind = await runCli(['restore', file], { env: { DATA_DIR: newDataDir(t) } });
  t.is(wrongKind.code, 1);
  t.regex(wrongKind.errorLines[0], /is a PostgreSQL backup \(pg_dump\): restore it with DATABASE_URL set$/);
});

postgresTest('backup without pg_dump on the PATH says what to install', async (t) => {
  t.timeout(600_000);
  const env = { DATABASE_URL: await scratchPostgres(t, { migrated: true }), PATH: tempDir(t) };
  const file = path.join(tempDir(t), 'x.dump');
  const result = await runCli(['backup', '--out', file], { env });
  t.is(result.code, 1);
  t.deepEqual(result.errorLines, ['error: pg_dump is not installed: install the PostgreSQL client tools matching your server (apt-get install postgresql-client), then run this again']);
  t.false(fs.existsSync(file));
});

test('restore refuses a file that is not a backup', async (t) => {
  t.timeout(600_000);
  const file = path.join(tempDir(t), 'notes.txt');
  fs.writeFileSync(file, 'hello there');
  const result = await runCli(['restore', file], { env: { DATA_DIR: newDataDir(t) } });
  t.is(result.code, 1);
  t.deepEqual(result.errorLines, [`error: ${file} is not a backup made by 'quoting backup'`]);
});
