import { execFileSync, spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import test, { type ExecutionContext } from 'ava';
import { cliEnv, tempDir } from './helpers/cli.js';
import { testWhen } from './helpers/skip.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const script = path.join(root, 'install.sh');

function has(tool: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${tool}`]).status === 0;
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs install.sh (asynchronously: a build takes a minute, and the test runner must hear from this process meanwhile). */
function install(args: string[], options: { user?: string; path?: string } = {}): Promise<Run> {
  const command = options.user ? ['runuser', '-u', options.user, '--', 'bash', script, ...args] : ['bash', script, ...args];
  const child = spawn(command[0], command.slice(1), { env: cliEnv(options.path ? { PATH: options.path } : {}), cwd: '/', stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Every file under `dir` (the path, its mode and a hash of its content); the built program counted as one entry per file too. */
function snapshot(dir: string): Map<string, string> {
  const files = new Map<string, string>();
  const walk = (current: string) => {
    for (const entry of fs.readdirSync(current, { withFileTypes: true })) {
      const full = path.join(current, entry.name);
      const stat = fs.lstatSync(full);
      const key = path.relative(dir, full);
      if (entry.isDirectory()) {
        files.set(`${key}/`, (stat.mode & 0o7777).toString(8));
        walk(full);
      } else {
        const content = entry.isSymbolicLink() ? fs.readlinkSync(full) : fs.readFileSync(full);
        files.set(key, `${(stat.mode & 0o7777).toString(8)} ${stat.mtimeMs} ${crypto.createHash('sha256').update(content).digest('hex')}`);
      }
    }
  };
  walk(dir);
  return files;
}

const envOf = (stage: string) =>
  Object.fromEntries(
    fs
      .readFileSync(path.join(stage, 'etc/quoting/quoting.env'), 'utf8')
      .split('\n')
      .filter((line) => /^[A-Z_]+=/.test(line))
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
  );

/** One staged install (building takes a minute), shared by the tests below that only read it or copy it. */
let staged: Promise<{ stage: string; first: Run }> | undefined;
function stagedInstall(t: ExecutionContext): Promise<{ stage: string; first: Run }> {
  staged ??= (async () => {
    const stage = fs.mkdtempSync(path.join(fs.realpathSync(process.env.TMPDIR ?? '/tmp'), 'quoting-stage-'));
    process.once('exit', () => fs.rmSync(stage, { recursive: true, force: true }));
    const first = await install(['--root', stage, '--url', 'https://quotes.example.com', '--with-postgres']);
    return { stage, first };
  })();
  void t;
  return staged;
}

test('--help works without root, prints Usage and exits 0', async (t) => {
  const user = process.getuid?.() === 0 ? 'nobody' : undefined;
  const result = await install(['--help'], { user });
  t.is(result.code, 0, result.stderr);
  t.regex(result.stdout, /^Usage: install\.sh \[options\]/);
  t.regex(result.stdout, /--with-postgres/);
  const unknown = await install(['--bogus']);
  t.is(unknown.code, 2);
  t.is(unknown.stderr, 'install.sh: unknown option --bogus (see install.sh --help)\n');
});

test('an old Node.js stops the installer with one line saying what to install', async (t) => {
  const bin = tempDir(t);
  fs.writeFileSync(path.join(bin, 'node'), '#!/bin/sh\necho 18.19.0\n', { mode: 0o755 });
  const stage = tempDir(t);
  const result = await install(['--root', stage], { path: `${bin}:${process.env.PATH}` });
  t.is(result.code, 1);
  t.deepEqual(result.stderr.split('\n').filter(Boolean), [
    `install.sh: Node.js >= 20.19 is required (found 18.19.0 at ${bin}/node) and this distribution has no new enough package: install Node.js 22 LTS (https://nodejs.org/en/download, or NodeSource), then re-run`,
  ]);
  t.deepEqual(fs.readdirSync(stage), []);
});

testWhen(has('shellcheck'), 'shellcheck is not installed: apt-get install shellcheck')('install.sh is clean under shellcheck', (t) => {
  const result = spawnSync('shellcheck', [script], { encoding: 'utf8' });
  t.is(result.status, 0, result.stdout);
  t.is(result.stdout, '');
});

test('--root writes the program, a 0640 env file with generated secrets, hardened units and the worker timer; a re-run changes nothing', async (t) => {
  t.timeout(900_000);
  const { stage, first } = await stagedInstall(t);
  t.is(first.code, 0, first.stderr + first.stdout);
  t.regex(first.stdout, /skipped \(--root\): useradd --system/);
  t.false(/systemctl (?!.*skipped)/.test(first.stdout.split('\n').filter((l) => !l.includes('skipped (--root)')).join('\n')), 'no systemctl outside of skipped lines');

  const env = envOf(stage);
  t.is(env.APP_URL, 'https://quotes.example.com');
  t.is(env.TRUST_PROXY, '1', 'https behind a proxy on loopback');
  t.is(env.HOST, '127.0.0.1');
  t.is(env.DATA_DIR, '/var/lib/quoting');
  t.regex(env.MIGRATE_TOKEN, /^[0-9a-f]{64}$/);
  t.regex(env.ADMIN_API_KEY, /^[0-9a-f]{64}$/);
  t.not(env.MIGRATE_TOKEN, env.ADMIN_API_KEY);
  t.regex(env.DATABASE_URL, /^postgres:\/\/quoting:[0-9a-f]{64}@127\.0\.0\.1:5432\/quoting$/);
  t.is(fs.statSync(path.join(stage, 'etc/quoting/quoting.env')).mode & 0o777, 0o640);
  t.is(fs.statSync(path.join(stage, 'etc/quoting')).mode & 0o777, 0o750);
  t.is(fs.statSync(path.join(stage, 'var/lib/quoting')).mode & 0o777, 0o750);

  const unit = fs.readFileSync(path.join(stage, 'etc/systemd/system/quoting.service'), 'utf8');
  for (const line of ['User=quoting', 'EnvironmentFile=/etc/quoting/quoting.env', 'NoNewPrivileges=yes', 'ProtectSystem=strict', 'ReadWritePaths=/var/lib/quoting', 'Restart=on-failure', 'WantedBy=multi-user.target']) {
    t.true(unit.split('\n').includes(line), `quoting.service has ${line}`);
  }
  t.regex(unit, /^ExecStart=\/\S+\/node \/opt\/quoting\/bin\/quoting serve$/m);
  const worker = fs.readFileSync(path.join(stage, 'etc/systemd/system/quoting-worker.service'), 'utf8');
  t.regex(worker, /^Type=oneshot$/m);
  t.regex(worker, /^ExecStart=\/\S+\/node \/opt\/quoting\/bin\/quoting worker$/m);
  t.regex(worker, /^ProtectSystem=strict$/m);
  t.regex(fs.readFileSync(path.join(stage, 'etc/systemd/system/quoting-worker.timer'), 'utf8'), /^OnCalendar=\*-\*-\* \*:\*:00$/m);
  t.false(fs.existsSync(path.join(stage, 'etc/cron.d/quoting')));
  t.regex(fs.readFileSync(path.join(stage, 'usr/local/bin/quoting'), 'utf8'), /QUOTING_ENV_FILE=\/etc\/quoting\/quoting\.env/);

  // The installed tree is built and pruned: it runs without its dev dependencies.
  const program = path.join(stage, 'opt/quoting');
  t.true(fs.existsSync(path.join(program, 'dist/src/cli/index.js')));
  t.false(fs.existsSync(path.join(program, 'node_modules/typescript')), 'dev dependencies pruned');
  t.false(fs.existsSync(path.join(program, 'src')), 'no TypeScript sources');
  const version = execFileSync(process.execPath, [path.join(program, 'bin/quoting'), '--version'], { encoding: 'utf8' });
  t.is(version.trim(), JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).version);
  const doctor = spawnSync(process.execPath, [path.join(program, 'bin/quoting'), 'doctor'], { env: cliEnv({ DATA_DIR: path.join(tempDir(t), 'none') }), encoding: 'utf8' });
  t.is(doctor.status, 0, doctor.stderr);
  t.regex(doctor.stdout, /^ok {4}Configuration/m);

  const before = snapshot(stage);
  const second = await install(['--root', stage]);
  t.is(second.code, 0, second.stderr);
  t.regex(second.stdout, /already built from this source/);
  t.regex(second.stdout, /kept \(settings and secrets unchanged\)/);
  t.deepEqual(snapshot(stage), before, 'the re-run left every file as it was (content, mode and mtime)');
});

testWhen(has('systemd-analyze'), 'systemd-analyze is not installed')('units pass systemd-analyze verify', async (t) => {
  t.timeout(900_000);
  const { stage, first } = await stagedInstall(t);
  t.is(first.code, 0);
  const units = path.join(stage, 'etc/systemd/system');
  for (const unit of ['quoting.service', 'quoting-worker.service', 'quoting-worker.timer']) {
    const result = spawnSync('systemd-analyze', ['verify', unit], { cwd: units, encoding: 'utf8' });
    t.is(result.status, 0, `${unit}: ${result.stderr}`);
    t.is(result.stderr, '', unit);
  }
});

test('--dry-run prints each step and changes nothing, on a fresh root and on an installed one', async (t) => {
  t.timeout(900_000);
  const empty = tempDir(t);
  const fresh = await install(['--dry-run', '--root', empty, '--with-postgres']);
  t.is(fresh.code, 0, fresh.stderr);
  for (const step of ['==> Checking the system', '==> Checking Node.js', '==> Creating the quoting system user', '==> Installing the program in /opt/quoting', '==> Writing /etc/quoting/quoting.env', '==> Writing systemd units', '==> Applying database migrations', '==> Starting quoting.service', '==> Checking the installation (quoting doctor)']) {
    t.true(fresh.stdout.includes(step), step);
  }
  t.regex(fresh.stdout, /would build .* \(npm ci, which compiles TypeScript; npm prune --omit=dev\)/);
  t.regex(fresh.stdout, /would write \/etc\/quoting\/quoting\.env \(mode 0640, root:quoting\)/);
  t.regex(fresh.stdout, /would write \/etc\/systemd\/system\/quoting-worker\.timer/);
  t.deepEqual(fs.readdirSync(empty), [], 'nothing written');

  // --from: a source tarball (as `git archive` makes it) is unpacked and built instead of this tree.
  const tarball = path.join(tempDir(t), 'quoting.tar.gz');
  execFileSync('git', ['-C', root, 'archive', '--prefix=quoting/', '-o', tarball, 'HEAD']);
  const fromTarball = await install(['--dry-run', '--root', tempDir(t), '--from', tarball]);
  t.is(fromTarball.code, 0, fromTarball.stderr);
  t.regex(fromTarball.stdout, /would build \/\S+\/quoting \(npm ci/);
  t.false(fromTarball.stdout.includes(`would build ${root.replace(/\/$/, '')} `));

  const { stage, first } = await stagedInstall(t);
  t.is(first.code, 0);
  const before = snapshot(stage);
  const again = await install(['--dry-run', '--root', stage]);
  t.is(again.code, 0, again.stderr);
  t.regex(again.stdout, /already built from this source/);
  t.deepEqual(snapshot(stage), before);
});

test('--worker cron writes a cron entry instead of the timer; --uninstall keeps settings and data, --purge removes them', async (t) => {
  t.timeout(900_000);
  const { stage: original, first } = await stagedInstall(t);
  t.is(first.code, 0);
  const stage = path.join(tempDir(t), 'root');
  fs.cpSync(original, stage, { recursive: true, preserveTimestamps: true });
  const secrets = envOf(stage);

  const cron = await install(['--root', stage, '--worker', 'cron']);
  t.is(cron.code, 0, cron.stderr);
  t.false(fs.existsSync(path.join(stage, 'etc/systemd/system/quoting-worker.timer')));
  t.false(fs.existsSync(path.join(stage, 'etc/systemd/system/quoting-worker.service')));
  const entry = fs.readFileSync(path.join(stage, 'etc/cron.d/quoting'), 'utf8');
  t.regex(entry, /^QUOTING_ENV_FILE=\/etc\/quoting\/quoting\.env$/m);
  t.regex(entry, /^\* \* \* \* \* quoting \/\S+\/node \/opt\/quoting\/bin\/quoting worker$/m);
  t.deepEqual(envOf(stage), secrets);

  const uninstall = await install(['--root', stage, '--uninstall']);
  t.is(uninstall.code, 0, uninstall.stderr);
  for (const gone of ['opt/quoting', 'usr/local/bin/quoting', 'etc/cron.d/quoting', 'etc/systemd/system/quoting.service']) t.false(fs.existsSync(path.join(stage, gone)), gone);
  t.deepEqual(envOf(stage), secrets, 'settings kept');
  t.true(fs.existsSync(path.join(stage, 'var/lib/quoting')), 'data kept');

  const purge = await install(['--root', stage, '--uninstall', '--purge']);
  t.is(purge.code, 0, purge.stderr);
  t.false(fs.existsSync(path.join(stage, 'etc/quoting')));
  t.false(fs.existsSync(path.join(stage, 'var/lib/quoting')));
});
