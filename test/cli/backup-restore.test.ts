import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import test, { type ExecutionContext } from 'ava';
import knexFactory from 'knex';
import { writeAtomically } from '../../src/ops/backup.js';
import { freePort, migratedDataDir, newDataDir, runCli, scratchPostgres, startServe, tempDir, usingPostgres } from '../helpers/cli.js';
import { embeddedTest, postgresTest } from '../helpers/skip.js';
import { Client } from '../helpers/client.js';
import { PATIENCE_MS } from '../helpers/patience.js';

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
  t.is(fs.statSync(target.DATA_DIR).mode & 0o777, 0o700, 'the DATA_DIR restore creates is private');
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

  // A dump cut short: pg_restore's complaint, on one line, and nothing changed.
  const cut = path.join(tempDir(t), 'cut.dump');
  const whole = fs.readFileSync(file);
  fs.writeFileSync(cut, whole.subarray(0, Math.floor(whole.length / 2)));
  const damaged = await runCli(['restore', cut, '--force'], { env: source, timeoutMs: 180_000 });
  t.is(damaged.code, 1);
  t.is(damaged.errorLines.length, 1, damaged.stderr);
  t.regex(damaged.errorLines[0], /^error: pg_restore failed: /);
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

test('the partial backup file is there, empty and 0600, before the dump writes its first byte; it takes the name at the end', async (t) => {
  const dir = tempDir(t);
  const file = path.join(dir, 'quoting.backup');
  let seen: { mode: number; size: number } | undefined;
  const bytes = await writeAtomically(file, async (tmp) => {
    const stat = fs.statSync(tmp);
    seen = { mode: stat.mode & 0o777, size: stat.size };
    t.false(fs.existsSync(file), 'the name is not taken while the dump runs');
    fs.appendFileSync(tmp, 'a dump');
  });
  t.deepEqual(seen, { mode: 0o600, size: 0 });
  t.is(bytes, 6);
  t.is(fs.statSync(file).mode & 0o777, 0o600);
  t.deepEqual(fs.readdirSync(dir), ['quoting.backup']);
});

/** Resolves once `probe` returns a value, polling; a hang guard of PATIENCE_MS. */
async function eventually<T>(probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + PATIENCE_MS;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('gave up waiting');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

postgresTest('while pg_dump runs, the file it writes is already 0600', async (t) => {
  t.timeout(600_000);
  const url = await scratchPostgres(t, { migrated: true });
  const dir = tempDir(t);
  const file = path.join(dir, 'quoting.dump');
  // A transaction holding a table exclusively makes pg_dump wait at that table, its output file open, until it ends.
  const holder = knexFactory({ client: 'pg', connection: url, pool: { min: 0, max: 2 } });
  const trx = await holder.transaction();
  t.teardown(async () => {
    await trx.rollback().catch(() => undefined);
    await holder.destroy();
  });
  await trx.raw('lock table customers in access exclusive mode');
  const backup = runCli(['backup', '--out', file], { env: { DATABASE_URL: url }, timeoutMs: 180_000 });
  let partial: Array<{ name: string; mode: number }>;
  try {
    await eventually(async () => {
      const { rows } = await holder.raw(`select 1 from pg_stat_activity where application_name = 'pg_dump' and wait_event_type = 'Lock'`);
      return rows.length ? true : undefined;
    });
    partial = fs
      .readdirSync(dir)
      .filter((name) => name !== 'quoting.dump')
      .map((name) => ({ name, mode: fs.statSync(path.join(dir, name)).mode & 0o777 }));
  } finally {
    await trx.rollback();
  }
  t.is(partial.length, 1, 'one partial file while pg_dump runs');
  t.is(partial[0]?.mode, 0o600, 'the partial dump is private from its first byte');
  const result = await backup;
  t.is(result.code, 0, result.stderr);
  t.is(fs.statSync(file).mode & 0o777, 0o600);
  t.deepEqual(fs.readdirSync(dir), ['quoting.dump']);
});

/** A gzipped tar of `files` (name -> contents), made by tar(1) as a person would make a wrong file. */
function tarball(t: ExecutionContext, files: Record<string, Buffer | string>, gzip = true): string {
  const dir = tempDir(t);
  for (const [name, contents] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, 'in', name)), { recursive: true });
    fs.writeFileSync(path.join(dir, 'in', name), contents);
  }
  const out = path.join(dir, gzip ? 'archive.tar.gz' : 'archive.tar');
  const made = spawnSync('tar', [gzip ? '-czf' : '-cf', out, '-C', path.join(dir, 'in'), '.']);
  if (made.status !== 0) throw new Error(`tar: ${made.stderr}`);
  return out;
}

test('restore of a damaged or foreign file: one error line saying what the file is not, exit 1, and no DATA_DIR left behind', async (t) => {
  t.timeout(600_000);
  const dir = tempDir(t);
  const noise = Buffer.alloc(200_000, 'quoting ');
  // Looks like a data directory, but cut short, or whole but not a database.
  const lookalike = fs.readFileSync(tarball(t, { PG_VERSION: '17\n', 'global/pg_control': noise, 'base/1/1259': noise }));
  const cases: Array<[string, Buffer, RegExp]> = [
    ['cut-short.backup', lookalike.subarray(0, Math.floor(lookalike.length / 2)), /is not a complete backup: it is cut short \(its gzip data ends early\); use the whole file$/],
    ['not-gzip.backup', Buffer.from('just some notes\n'), /is not a backup made by 'quoting backup'$/],
    ['other.tar.gz', fs.readFileSync(tarball(t, { 'notes.txt': 'hello\n', 'photos/cat.jpg': noise })), /is not a backup made by 'quoting backup': its tar archive holds no embedded database/],
    ['plain.tar', fs.readFileSync(tarball(t, { 'notes.txt': 'hello\n' }, false)), /is not a backup made by 'quoting backup'$/],
    ['text.gz', zlib.gzipSync('just some notes\n'), /is not a backup made by 'quoting backup': it is gzip-compressed but holds no tar archive$/],
    ['damaged.gz', Buffer.concat([Buffer.from([0x1f, 0x8b, 0x08, 0]), noise]), /is not a readable backup: its gzip data is damaged/],
    ['lookalike.tar.gz', lookalike, /is not a backup this version of quoting can restore: the embedded database in it does not start$/],
  ];
  for (const [name, contents, expected] of cases) {
    const file = path.join(dir, name);
    fs.writeFileSync(file, contents);
    const dataDir = newDataDir(t);
    const result = await runCli(['restore', file], { env: { DATA_DIR: dataDir }, timeoutMs: 180_000 });
    t.is(result.code, 1, name);
    t.is(result.stdout, '', name);
    t.is(result.errorLines.length, 1, `${name}: ${result.stderr}`);
    t.true(result.errorLines[0].startsWith(`error: ${file} `), result.errorLines[0]);
    t.regex(result.errorLines[0], expected, name);
    t.notRegex(result.stderr, /PGlite|Z_BUF_ERROR|\n\s+at /, name);
    t.false(fs.existsSync(dataDir), `${name}: no DATA_DIR is left behind`);
  }
});
