import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import test, { type ExecutionContext } from 'ava';
import { Client } from '../helpers/client.js';
import { freePort, migratedDataDir, runCli, startServe, tempDir, type CliOptions } from '../helpers/cli.js';

// The embedded database's directory: private whatever state it is found in, and never one that follows the current
// directory. These run on PGlite whatever the backend under test (DATA_DIR is the embedded database's).

const root = fileURLToPath(new URL('../../../', import.meta.url));

/** Every file and directory under `dir` (itself included) that group or others may use, with its mode. */
function openToOthers(dir: string): string[] {
  const open: string[] = [];
  const walk = (file: string) => {
    const stat = fs.lstatSync(file);
    if (stat.isSymbolicLink()) return;
    if (stat.mode & 0o077) open.push(`${(stat.mode & 0o777).toString(8)} ${path.relative(dir, file) || '.'}`);
    if (stat.isDirectory()) for (const name of fs.readdirSync(file)) walk(path.join(file, name));
  };
  walk(dir);
  return open;
}

test('an existing 0755 DATA_DIR ends 0700, and no file PGlite writes (pg_wal included) is open to group or others', async (t) => {
  t.timeout(600_000);
  const dataDir = path.join(tempDir(t), 'data');
  fs.mkdirSync(dataDir, { mode: 0o755 });
  fs.chmodSync(dataDir, 0o755);
  const migrated = await runCli(['migrate'], { env: { DATA_DIR: dataDir }, timeoutMs: 300_000 });
  t.is(migrated.code, 0, migrated.stderr);
  t.is(fs.statSync(dataDir).mode & 0o777, 0o700);
  t.true(fs.readdirSync(path.join(dataDir, 'pglite', 'pg_wal')).length > 0);
  t.deepEqual(openToOthers(dataDir), []);

  // A server that wrote data (and so WAL), stopped: still nothing open, the directory found open again included.
  fs.chmodSync(dataDir, 0o755);
  const server = await startServe(t, ['--port', String(await freePort())], { env: { DATA_DIR: dataDir } });
  t.is(fs.statSync(dataDir).mode & 0o777, 0o700);
  const client = new Client(server.url);
  const signup = await client.post('/api/v1/auth/signup', { email: 'owner@modes.test', password: 'correct horse battery', name: 'O', workspace_name: 'Modes' });
  t.is(signup.status, 201, signup.text);
  t.is((await client.post('/api/v1/customers', { email: 'c@modes.test', name: 'A customer' })).status, 201);
  t.deepEqual(await server.stop(), { code: 0, signal: null });
  t.deepEqual(openToOthers(dataDir), []);
});

const asRoot = process.getuid?.() === 0;

(asRoot ? test : test.skip)(
  `a DATA_DIR of another user that is open to others is refused with its fix in one line${asRoot ? '' : ' (skipped: needs root, to give the directory to another user)'}`,
  async (t) => {
    const dataDir = path.join(tempDir(t), 'data');
    fs.mkdirSync(dataDir, { mode: 0o755 });
    fs.chmodSync(dataDir, 0o755);
    fs.chownSync(dataDir, 65534, 65534);
    const result = await runCli(['migrate'], { env: { DATA_DIR: dataDir } });
    t.is(result.code, 1);
    t.deepEqual(result.errorLines, [
      `error: DATA_DIR ${dataDir} is open to other users (mode 0755) and belongs to user 65534, not to this one (0): ` +
        `run 'chmod 700 ${dataDir}' as its owner (or run quoting as that user), or set DATA_DIR to a directory of your own`,
    ]);
    t.is(fs.statSync(dataDir).mode & 0o777, 0o755, 'left as it was');
    t.deepEqual(fs.readdirSync(dataDir), [], 'nothing written into it');
  },
);

test('quoting doctor fails a DATA_DIR open to others, with its fix', async (t) => {
  t.timeout(300_000);
  const dataDir = await migratedDataDir(t);
  fs.chmodSync(dataDir, 0o750);
  const result = await runCli(['doctor', '--json'], { env: { DATA_DIR: dataDir }, timeoutMs: 180_000 });
  t.is(result.code, 1);
  const check = (JSON.parse(result.stdout) as { checks: { id: string; status: string; message: string; fix: string }[] }).checks.find((c) => c.id === 'data_dir')!;
  t.is(check.status, 'fail');
  t.is(check.message, `${dataDir} is open to other users (mode 0750): they could read the database files, secrets and customers included`);
  t.regex(check.fix, new RegExp(`^chmod 700 ${dataDir} as its owner`));
  t.deepEqual(result.errorLines, ['error: 1 check failed: data_dir']);

  fs.chmodSync(dataDir, 0o700);
  const fixed = await runCli(['doctor', '--json'], { env: { DATA_DIR: dataDir }, timeoutMs: 180_000 });
  const after = (JSON.parse(fixed.stdout) as { checks: { id: string; status: string; message: string }[] }).checks.find((c) => c.id === 'data_dir')!;
  t.is(after.status, 'ok', after.message);
  t.regex(after.message, /private \(mode 0700\)/);
});

/**
 * A copy of the built program in a directory of its own (its node_modules linked), as an install in
 * /opt/quoting is: its default DATA_DIR is the copy's data/, which no other test shares.
 */
function installedCopy(t: ExecutionContext): { app: string; bin: string } {
  const app = path.join(tempDir(t, 'quoting-app-'), 'quoting');
  for (const part of ['bin', 'dist/src', 'dist/migrations', 'templates', 'package.json']) {
    fs.cpSync(path.join(root, part), path.join(app, part), { recursive: true });
  }
  fs.symlinkSync(path.join(root, 'node_modules'), path.join(app, 'node_modules'));
  return { app, bin: path.join(app, 'bin', 'quoting') };
}

/** Runs the copy's `quoting` from `cwd` with DATA_DIR unset. */
function runCopy(bin: string, args: string[], cwd: string, options: CliOptions = {}) {
  return runCli(args, { ...options, cwd, bin, env: { DATA_DIR: undefined, ...options.env } });
}

test('without DATA_DIR a command uses data/ of its own program, not of the current directory; only migrate, workspace create and serve create a database', async (t) => {
  t.timeout(600_000);
  const { app, bin } = installedCopy(t);
  const elsewhere = tempDir(t, 'quoting-elsewhere-');
  const data = path.join(app, 'data');
  fs.writeFileSync(path.join(elsewhere, 'catalogue.csv'), 'product_sku,name,variant_sku,price\nMUG,Mug,MUG-1,12.50\n');
  const missing = `error: there is no embedded database in ${data}: set DATA_DIR to the directory that holds it (or DATABASE_URL for PostgreSQL), or run 'quoting migrate' to create one there`;

  const refused = [
    ['import', 'products', 'catalogue.csv', '--workspace', 'acme'],
    ['worker'],
    ['rotate-keys', '--workspace', 'acme'],
    ['user', 'set-password', '--email', 'owner@acme.test'],
    ['webhooks', 'resend', '--workspace', 'acme', '--status', 'dead'],
  ];
  for (const args of refused) {
    const result = await runCopy(bin, args, elsewhere);
    t.is(result.code, 1, `${args.join(' ')}: ${result.stderr}`);
    t.deepEqual(result.errorLines, [missing], args.join(' '));
  }
  const status = await runCopy(bin, ['migrate', '--status'], elsewhere);
  t.is(status.code, 0, status.stderr);
  t.regex(status.stdout, /^Applied \(0\):\nPending \(\d+\):\n/, 'all pending, said without creating anything');
  t.false(fs.existsSync(data), 'no database created in the program folder');
  t.deepEqual(fs.readdirSync(elsewhere), ['catalogue.csv'], 'nor in the current directory');

  // workspace create may create it: in the program's folder, private; then an import from elsewhere finds it.
  const created = await runCopy(bin, ['workspace', 'create', '--name', 'Acme', '--owner-email', 'owner@acme.test', '--slug', 'acme'], elsewhere, { timeoutMs: 300_000 });
  t.is(created.code, 0, created.stderr);
  t.true(fs.existsSync(path.join(data, 'pglite')));
  t.is(fs.statSync(data).mode & 0o777, 0o700);
  const imported = await runCopy(bin, ['import', 'products', 'catalogue.csv', '--workspace', 'acme', '--json'], elsewhere, { timeoutMs: 300_000 });
  t.is(imported.code, 0, imported.stderr);
  t.is(JSON.parse(imported.stdout).created, 1);
  t.deepEqual(fs.readdirSync(elsewhere), ['catalogue.csv']);

  // An explicit relative DATA_DIR is still the operator's, resolved against the current directory.
  const explicit = await runCopy(bin, ['worker'], elsewhere, { env: { DATA_DIR: 'here' } });
  t.is(explicit.code, 1);
  t.deepEqual(explicit.errorLines, [missing.replace(data, path.join(elsewhere, 'here'))]);
});
