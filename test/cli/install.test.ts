import { execFileSync, spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import test, { type ExecutionContext } from 'ava';
import { cliEnv, tempDir } from '../helpers/cli.js';
import { testWhen } from '../helpers/skip.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const script = path.join(root, 'install.sh');

function has(tool: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${tool}`]).status === 0;
}

/** As root, the runs that must work without root are made as this user; otherwise this process is unprivileged already. */
const unprivileged = process.getuid?.() === 0 ? 'nobody' : undefined;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A directory every user may read (mkdtemp makes them 0700). */
function sharedDir(t: ExecutionContext): string {
  const dir = tempDir(t, 'quoting-install-');
  fs.chmodSync(dir, 0o755);
  return dir;
}

/**
 * The source tree as install.sh reads it, copied where an unprivileged user can read it: the checkout itself may be
 * in a folder no one else may enter (root's home, a fresh `mktemp -d`).
 */
let readableTree: string | undefined;
function readableCheckout(): string {
  if (!readableTree) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quoting-checkout-'));
    process.once('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
    for (const part of ['package.json', 'package-lock.json', 'tsconfig.json', 'bin', 'src', 'migrations', 'templates', 'public', 'README.md', 'docs', 'install.sh']) {
      fs.cpSync(path.join(root, part), path.join(dir, part), { recursive: true });
    }
    execFileSync('chmod', ['-R', 'a+rX', dir]);
    readableTree = dir;
  }
  return readableTree;
}

/** Runs install.sh (asynchronously: a build takes a minute, and the test runner must hear from this process meanwhile). */
function install(args: string[], options: { user?: string; path?: string; env?: Record<string, string> } = {}): Promise<Run> {
  const command = options.user ? ['runuser', '-u', options.user, '--', 'bash', path.join(readableCheckout(), 'install.sh'), ...args] : ['bash', script, ...args];
  return runAsync(command, cliEnv({ ...(options.path ? { PATH: options.path } : {}), ...options.env }));
}

function runAsync(command: string[], env: NodeJS.ProcessEnv): Promise<Run> {
  const child = spawn(command[0], command.slice(1), { env, cwd: '/', stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Executables written into a directory every user may read, to put first on PATH. */
function stubs(t: ExecutionContext, scripts: Record<string, string>): string {
  const dir = sharedDir(t);
  for (const [name, body] of Object.entries(scripts)) fs.writeFileSync(path.join(dir, name), `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  return dir;
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
    // Open to every user, as / is: the wrapper test runs the staged program as an unprivileged user.
    fs.chmodSync(stage, 0o755);
    const first = await install(['--root', stage, '--domain', 'quotes.example.com', '--with-postgres']);
    return { stage, first };
  })();
  void t;
  return staged;
}

/** A copy of the staged install for a test that changes it. */
async function stagedCopy(t: ExecutionContext): Promise<string> {
  const { stage: original, first } = await stagedInstall(t);
  if (first.code !== 0) throw new Error(`the staged install failed: ${first.stderr}`);
  const stage = path.join(tempDir(t), 'root');
  fs.cpSync(original, stage, { recursive: true, preserveTimestamps: true });
  return stage;
}

const BACKUP_REFUSED =
  '--backup expects a cron expression of 5 fields (minute hour day-of-month month day-of-week) with numbers, *, */N, lists and ranges, such as "0 3 * * *"; a day of the month or of the week, not both';

/** install.sh's reading of a cron expression as a timer's OnCalendar (sourced: it only defines its functions), or null. */
function calendarOf(schedule: string): string | null {
  const result = spawnSync('bash', ['-c', 'script=$1 schedule=$2 && set -- && source "$script" && cron_to_calendar "$schedule"', 'bash', script, schedule], { encoding: 'utf8' });
  return result.status === 0 ? result.stdout.trim() : null;
}

test('--backup reads a cron expression as a timer does: fields, steps, lists, ranges and weekdays; refuses what a timer would read otherwise', (t) => {
  const read: [string, string][] = [
    ['0 3 * * *', '*-*-* 3:0:00'],
    ['*/15 * * * *', '*-*-* *:0/15:00'],
    ['30 2 * * 1-5', 'Mon..Fri *-*-* 2:30:00'],
    ['0 3 * * 0,6', 'Sun,Sat *-*-* 3:0:00'],
    ['0 3 * * 7', 'Sun *-*-* 3:0:00'],
    ['05 */6 1,15 1-3 *', '*-1..3-1,15 0/6:5:00'],
  ];
  for (const [schedule, calendar] of read) {
    t.is(calendarOf(schedule), calendar, schedule);
    if (has('systemd-analyze')) t.is(spawnSync('systemd-analyze', ['calendar', calendar]).status, 0, `systemd reads ${calendar}`);
  }
  // Without systemd, on PostgreSQL: a cron entry with the expression as it is (sourced, one step, into a staging root).
  const stage = tempDir(t);
  const cron = spawnSync(
    'bash',
    ['-c', 'script=$1 && set -- --root "$2" --backup "15 4 * * *" && source "$script" && systemd_running() { return 1; } && database_url=postgres://db node_bin=/usr/bin/node && write_backup_units', 'bash', script, stage],
    { encoding: 'utf8' },
  );
  t.is(cron.status, 0, cron.stderr);
  const entry = fs.readFileSync(path.join(stage, 'etc/cron.d/quoting-backup'), 'utf8');
  t.regex(entry, /^QUOTING_ENV_FILE=\/etc\/quoting\/quoting\.env$/m);
  t.regex(entry, /^15 4 \* \* \* quoting \/usr\/bin\/node \/opt\/quoting\/bin\/quoting backup$/m);
  for (const schedule of ['*/2 * * * * *', '0 3 * *', '0 3 * * MON', '1-5/2 * * * *', '60 * * * *', '0 24 * * *', '0 3 0 * *', '0 3 1 * 1', '5-1 * * * *', '*/0 * * * *', '0 3 * * */2']) {
    t.is(calendarOf(schedule), null, schedule);
  }
});

test('--help works without root, prints Usage and exits 0', async (t) => {
  const result = await install(['--help'], { user: unprivileged });
  t.is(result.code, 0, result.stderr);
  t.regex(result.stdout, /^Usage: install\.sh \[options\]/);
  t.regex(result.stdout, /--with-postgres/);
  const unknown = await install(['--bogus']);
  t.is(unknown.code, 2);
  t.is(unknown.stderr, 'install.sh: unknown option --bogus (see install.sh --help)\n');
  for (const [args, message] of [
    [['--domain', 'https://quotes.example.com'], '--domain expects a host name such as quotes.example.com'],
    [['--domain', 'quotes.example.com', '--url', 'https://other.example.com'], '--domain sets APP_URL to https://quotes.example.com: leave out --url'],
    [['--signup', 'maybe'], '--signup expects open or closed'],
    [['--memory-max', 'lots'], '--memory-max expects a size such as 1G or 768M (or infinity)'],
    [['--restore', '/backup.dump'], '--restore goes with --with-postgres'],
    [['--backup', '0 3 * *'], BACKUP_REFUSED],
    [['--backup=0 3 1 * 1'], BACKUP_REFUSED],
  ]) {
    const refused = await install(args as string[]);
    t.is(refused.code, 2, (args as string[]).join(' '));
    t.is(refused.stderr, `install.sh: ${message}\n`);
  }
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

test('--root writes the program, a 0640 env file with generated secrets and sign-up closed, hardened units with a memory ceiling, the worker timer and the Caddy site; a re-run changes nothing', async (t) => {
  t.timeout(900_000);
  const { stage, first } = await stagedInstall(t);
  t.is(first.code, 0, first.stderr + first.stdout);
  t.regex(first.stdout, /skipped \(--root\): useradd --system/);
  t.false(/systemctl (?!.*skipped)/.test(first.stdout.split('\n').filter((l) => !l.includes('skipped (--root)')).join('\n')), 'no systemctl outside of skipped lines');

  const env = envOf(stage);
  t.is(env.APP_URL, 'https://quotes.example.com');
  t.is(env.TRUST_PROXY, '1', 'https behind a proxy on loopback');
  t.is(env.HOST, '127.0.0.1');
  t.is(env.SIGNUP, 'closed');
  t.is(env.DATA_DIR, '/var/lib/quoting');
  t.regex(env.MIGRATE_TOKEN, /^[0-9a-f]{64}$/);
  t.regex(env.ADMIN_API_KEY, /^[0-9a-f]{64}$/);
  t.not(env.MIGRATE_TOKEN, env.ADMIN_API_KEY);
  t.regex(env.DATABASE_URL, /^postgres:\/\/quoting:[0-9a-f]{64}@127\.0\.0\.1:5432\/quoting$/);
  t.is(fs.statSync(path.join(stage, 'etc/quoting/quoting.env')).mode & 0o777, 0o640);
  t.is(fs.statSync(path.join(stage, 'etc/quoting')).mode & 0o777, 0o750);
  t.is(fs.statSync(path.join(stage, 'var/lib/quoting')).mode & 0o777, 0o750);

  const unit = fs.readFileSync(path.join(stage, 'etc/systemd/system/quoting.service'), 'utf8');
  for (const line of ['User=quoting', 'EnvironmentFile=/etc/quoting/quoting.env', 'NoNewPrivileges=yes', 'ProtectSystem=strict', 'ReadWritePaths=/var/lib/quoting', 'Restart=on-failure', 'MemoryMax=1G', 'WantedBy=multi-user.target']) {
    t.true(unit.split('\n').includes(line), `quoting.service has ${line}`);
  }
  t.regex(unit, /^ExecStart=\/\S+\/node \/opt\/quoting\/bin\/quoting serve$/m);
  const worker = fs.readFileSync(path.join(stage, 'etc/systemd/system/quoting-worker.service'), 'utf8');
  t.regex(worker, /^Type=oneshot$/m);
  t.regex(worker, /^ExecStart=\/\S+\/node \/opt\/quoting\/bin\/quoting worker$/m);
  t.regex(worker, /^ProtectSystem=strict$/m);
  t.regex(worker, /^MemoryMax=1G$/m);
  t.regex(fs.readFileSync(path.join(stage, 'etc/systemd/system/quoting-worker.timer'), 'utf8'), /^OnCalendar=\*-\*-\* \*:\*:00$/m);
  t.false(fs.existsSync(path.join(stage, 'etc/cron.d/quoting')));
  t.regex(fs.readFileSync(path.join(stage, 'usr/local/bin/quoting'), 'utf8'), /QUOTING_ENV_FILE=\/etc\/quoting\/quoting\.env/);
  t.regex(first.stdout, /skipped \(--root\): apt-get install caddy/);
  t.is(fs.readFileSync(path.join(stage, 'etc/caddy/Caddyfile'), 'utf8').split('\n').filter((l) => l && !l.startsWith('#')).join('\n'), 'import quoting.caddy');
  t.regex(fs.readFileSync(path.join(stage, 'etc/caddy/quoting.caddy'), 'utf8'), /^quotes\.example\.com \{\n\treverse_proxy 127\.0\.0\.1:3000\n\}$/m);

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

// Validated where it was written, started nowhere: `caddy validate` reads the files and provisions nothing outside.
(has('caddy') ? test : test.skip)(
  `the Caddy site passes caddy validate${has('caddy') ? '' : ' (skipped: caddy is not installed; apt-get install caddy, as .ci/run does)'}`,
  async (t) => {
    t.timeout(900_000);
    const { stage, first } = await stagedInstall(t);
    t.is(first.code, 0);
    const home = tempDir(t);
    const caddyfile = path.join(stage, 'etc/caddy/Caddyfile');
    const result = spawnSync('caddy', ['validate', '--config', caddyfile, '--adapter', 'caddyfile'], { cwd: '/', env: { ...process.env, HOME: home, XDG_DATA_HOME: home, XDG_CONFIG_HOME: home }, encoding: 'utf8' });
    t.is(result.status, 0, result.stderr);
    t.regex(result.stdout + result.stderr, /Valid configuration/);
    t.regex(result.stderr, /enabling automatic HTTP->HTTPS redirects/);

    // The check does fail: a site block that does not parse is refused.
    const broken = path.join(tempDir(t), 'Caddyfile');
    fs.writeFileSync(broken, fs.readFileSync(path.join(stage, 'etc/caddy/quoting.caddy'), 'utf8').replace('reverse_proxy', 'reverse_proxi'));
    const refused = spawnSync('caddy', ['validate', '--config', broken, '--adapter', 'caddyfile'], { cwd: '/', env: { ...process.env, HOME: home, XDG_DATA_HOME: home, XDG_CONFIG_HOME: home }, encoding: 'utf8' });
    t.not(refused.status, 0);
  },
);

test('--dry-run prints each step and changes nothing, on a fresh root and on an installed one', async (t) => {
  t.timeout(900_000);
  const empty = tempDir(t);
  const fresh = await install(['--dry-run', '--root', empty, '--with-postgres', '--domain', 'quotes.example.com']);
  t.is(fresh.code, 0, fresh.stderr);
  for (const step of ['==> Checking the system', '==> Checking Node.js', '==> Creating the quoting system user', '==> Installing the program in /opt/quoting', '==> Writing /etc/quoting/quoting.env', '==> Writing systemd units', '==> Writing the Caddy site for https://quotes.example.com', '==> Applying database migrations', '==> Starting quoting.service', '==> Checking the installation (quoting doctor)']) {
    t.true(fresh.stdout.includes(step), step);
  }
  t.regex(fresh.stdout, /would build .* \(npm ci, which compiles TypeScript; npm prune --omit=dev\)/);
  t.regex(fresh.stdout, /would write \/etc\/quoting\/quoting\.env \(mode 0640, root:quoting\)/);
  t.regex(fresh.stdout, /would write \/etc\/systemd\/system\/quoting-worker\.timer/);
  t.regex(fresh.stdout, /would write \/etc\/caddy\/quoting\.caddy/);
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

/** What a real (not staged) install would create; a dry run must leave every one of them as it was. */
const SYSTEM_PATHS = ['/opt/quoting', '/etc/quoting', '/var/lib/quoting', '/usr/local/bin/quoting', '/etc/systemd/system/quoting.service', '/etc/caddy/quoting.caddy'];
const systemState = () => SYSTEM_PATHS.map((file) => `${file}: ${fs.existsSync(file) ? fs.statSync(file).mtimeMs : 'absent'}`);

test('--dry-run without root and without --root: an unprivileged user sees every step of a real install, and nothing changes', async (t) => {
  t.timeout(300_000);
  const before = systemState();
  const result = await install(['--dry-run', '--with-postgres', '--domain', 'quotes.example.com'], { user: unprivileged });
  t.is(result.code, 0, result.stderr + result.stdout);
  t.regex(result.stdout, /not root: a real run needs root/);
  t.regex(result.stdout, /==> Creating the quoting system user\n {4}(would run: useradd --system .* quoting|already there)\n/);
  t.regex(result.stdout, /would write \/etc\/quoting\/quoting\.env \(mode 0640, root:quoting\)/);
  t.regex(result.stdout, /would write \/etc\/caddy\/quoting\.caddy/);
  t.regex(result.stdout, /would create the role and database quoting/);
  t.regex(result.stdout, /would run: quoting doctor/);
  t.deepEqual(systemState(), before);
});

// This machine runs PostgreSQL 15 or later: the distributions that ship older ones are played by stubs of the two
// commands install.sh asks, pg_lsclusters (what is installed) and apt-cache (what apt would install).
test('--with-postgres stops before it changes anything when PostgreSQL is older than 15, and says what to install', async (t) => {
  t.timeout(300_000);
  const ubuntu2204 = stubs(t, {
    pg_lsclusters: 'exit 0',
    'apt-cache': 'printf "postgresql:\\n  Installed: (none)\\n  Candidate: 14+238\\n  Version table:\\n     14+238 500\\n"',
  });
  const old = await install(['--dry-run', '--with-postgres'], { user: unprivileged, path: `${ubuntu2204}:${process.env.PATH}` });
  t.is(old.code, 1, old.stdout);
  t.deepEqual(old.stderr.split('\n').filter(Boolean), [
    "install.sh: this distribution's PostgreSQL is 14 (apt-cache policy postgresql), and Quoting needs 15 or later. Nothing was changed. Add PostgreSQL's own apt repository (PGDG: https://www.postgresql.org/download/linux/) and install postgresql-15 or later (apt-get install postgresql-16), then re-run.",
  ]);
  t.false(/would (run|write|create|build)/.test(old.stdout), `nothing planned before the stop:\n${old.stdout}`);
  t.deepEqual(old.stdout.split('\n').filter((l) => l.startsWith('==>')), ['==> Checking the system', '==> Checking PostgreSQL (15 or later)']);

  const cluster14 = stubs(t, { pg_lsclusters: 'echo "14 main 5432 online postgres /var/lib/postgresql/14/main /var/log/postgresql/postgresql-14-main.log"' });
  const installed = await install(['--dry-run', '--with-postgres'], { user: unprivileged, path: `${cluster14}:${process.env.PATH}` });
  t.is(installed.code, 1, installed.stdout);
  t.deepEqual(installed.stderr.split('\n').filter(Boolean), [
    'install.sh: the PostgreSQL cluster on port 5432 is 14 (pg_lsclusters), and Quoting needs 15 or later. Nothing was changed. Install postgresql-15 or later (from PGDG, https://www.postgresql.org/download/linux/, where the distribution has none) and move the cluster to it with pg_upgradecluster 14 main, then re-run.',
  ]);

  const debian12 = stubs(t, { pg_lsclusters: 'exit 0', 'apt-cache': 'printf "postgresql:\\n  Installed: (none)\\n  Candidate: 15+248+deb12u2\\n"' });
  const fine = await install(['--dry-run', '--with-postgres'], { user: unprivileged, path: `${debian12}:${process.env.PATH}` });
  t.is(fine.code, 0, fine.stderr);
  t.regex(fine.stdout, /^ {4}PostgreSQL 15 \(apt-cache policy postgresql\)$/m);
  t.regex(fine.stdout, /would run: env DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql/);
});

test('the database password reaches psql on standard input, never on a command line (where ps shows it)', (t) => {
  // runuser stands in for the real one here: it records what ps would show (its arguments) and what it was sent.
  const log = sharedDir(t);
  const bin = stubs(t, { runuser: `printf '%s\\n' "$*" >> "${log}/argv"; cat >> "${log}/stdin"` });
  const password = crypto.randomBytes(32).toString('hex');
  // Sourced with the options of a staged dry run, so that an install.sh that would run its steps when sourced
  // changes nothing here either.
  const result = spawnSync('bash', ['-c', 'script=$1 password=$2 && set -- --dry-run --root "$3" && source "$script" && db_password=$password && create_role', 'bash', script, password, tempDir(t)], {
    env: { ...cliEnv(), PATH: `${bin}:${process.env.PATH}` },
    stdio: ['ignore', 'pipe', 'pipe'],
    encoding: 'utf8',
  });
  t.is(result.status, 0, result.stderr);
  const argv = fs.readFileSync(path.join(log, 'argv'), 'utf8');
  t.regex(argv, /^-u postgres -- psql /m);
  t.false(argv.includes(password), `no password among the arguments:\n${argv}`);
  t.true(fs.readFileSync(path.join(log, 'stdin'), 'utf8').includes(`create role quoting login password '${password}';`));
});

test('--with-postgres over an install on the embedded database stops before changing anything and says how to move the data; --restore moves it', async (t) => {
  t.timeout(900_000);
  const stage = await stagedCopy(t);
  // The staged install as it was before --with-postgres: the embedded database, holding a workspace.
  const envFile = path.join(stage, 'etc/quoting/quoting.env');
  fs.writeFileSync(envFile, fs.readFileSync(envFile, 'utf8').replace(/^DATABASE_URL=.*\n/m, ''));
  for (const unit of ['quoting-worker.service', 'quoting-worker.timer']) fs.rmSync(path.join(stage, 'etc/systemd/system', unit));
  const dataDir = path.join(stage, 'var/lib/quoting');
  const created = spawnSync(process.execPath, [path.join(stage, 'opt/quoting/bin/quoting'), 'workspace', 'create', '--name', 'Acme', '--owner-email', 'owner@acme.test'], {
    env: cliEnv({ DATA_DIR: dataDir }),
    encoding: 'utf8',
  });
  t.is(created.status, 0, created.stderr);
  t.true(fs.existsSync(path.join(dataDir, 'pglite')));

  const before = snapshot(stage);
  const refused = await install(['--root', stage, '--with-postgres']);
  t.is(refused.code, 1, refused.stdout);
  const message = refused.stderr.trim().split('\n');
  t.is(message[0], 'install.sh: /var/lib/quoting holds the embedded database this server runs on; with --with-postgres the service would start on a new, empty PostgreSQL database. Nothing was changed. To move the data across:');
  t.deepEqual(message.slice(1, 4), [
    '  sudo systemctl stop quoting',
    '  sudo quoting backup --out /var/lib/quoting/embedded.backup',
    '  sudo bash install.sh --with-postgres --restore /var/lib/quoting/embedded.backup',
  ]);
  t.regex(message.slice(4).join(' '), /DATABASE_URL=… quoting restore/);
  t.deepEqual(snapshot(stage), before, 'nothing changed');

  const missing = await install(['--root', stage, '--with-postgres', '--restore', '/nonexistent/embedded.backup']);
  t.is(missing.code, 1);
  t.is(missing.stderr, 'install.sh: --restore: no such file /nonexistent/embedded.backup\n');
  t.deepEqual(snapshot(stage), before, 'nothing changed');

  const backup = path.join(tempDir(t), 'embedded.backup');
  fs.writeFileSync(backup, 'staged: never read\n');
  const moved = await install(['--root', stage, '--with-postgres', '--restore', backup]);
  t.is(moved.code, 0, moved.stderr);
  t.regex(moved.stdout, new RegExp(`skipped \\(--root\\): quoting restore ${backup} into the new PostgreSQL database`));
  t.regex(envOf(stage).DATABASE_URL, /^postgres:\/\/quoting:[0-9a-f]{64}@127\.0\.0\.1:5432\/quoting$/);
  t.true(fs.existsSync(path.join(stage, 'etc/systemd/system/quoting-worker.timer')));

  // Once on PostgreSQL, --restore is refused: the data is there already (quoting restore --force replaces it).
  const again = await install(['--root', stage, '--with-postgres', '--restore', backup]);
  t.is(again.code, 1);
  t.regex(again.stderr, /^install\.sh: --restore: this install already runs on PostgreSQL/);
});

test('--worker cron writes a cron entry instead of the timer; --signup and --memory-max change a re-run, which keeps them; --uninstall keeps settings, data and the Caddy site, --purge removes them', async (t) => {
  t.timeout(900_000);
  const stage = await stagedCopy(t);
  const secrets = envOf(stage);

  const cron = await install(['--root', stage, '--worker', 'cron']);
  t.is(cron.code, 0, cron.stderr);
  t.false(fs.existsSync(path.join(stage, 'etc/systemd/system/quoting-worker.timer')));
  t.false(fs.existsSync(path.join(stage, 'etc/systemd/system/quoting-worker.service')));
  const entry = fs.readFileSync(path.join(stage, 'etc/cron.d/quoting'), 'utf8');
  t.regex(entry, /^QUOTING_ENV_FILE=\/etc\/quoting\/quoting\.env$/m);
  t.regex(entry, /^\* \* \* \* \* quoting \/\S+\/node \/opt\/quoting\/bin\/quoting worker$/m);
  t.deepEqual(envOf(stage), secrets);

  const unit = () => fs.readFileSync(path.join(stage, 'etc/systemd/system/quoting.service'), 'utf8');
  const opened = await install(['--root', stage, '--signup', 'open', '--memory-max', '768M']);
  t.is(opened.code, 0, opened.stderr);
  t.deepEqual(envOf(stage), { ...secrets, SIGNUP: 'open' });
  t.regex(unit(), /^MemoryMax=768M$/m);
  const kept = await install(['--root', stage]);
  t.is(kept.code, 0, kept.stderr);
  t.is(envOf(stage).SIGNUP, 'open');
  t.regex(unit(), /^MemoryMax=768M$/m, 'a re-run without --memory-max keeps the ceiling');
  t.true(fs.existsSync(path.join(stage, 'etc/cron.d/quoting')), 'a re-run without --worker keeps the cron entry');
  t.false(fs.existsSync(path.join(stage, 'etc/systemd/system/quoting-worker.timer')));

  const uninstall = await install(['--root', stage, '--uninstall']);
  t.is(uninstall.code, 0, uninstall.stderr);
  for (const gone of ['opt/quoting', 'usr/local/bin/quoting', 'etc/cron.d/quoting', 'etc/systemd/system/quoting.service']) t.false(fs.existsSync(path.join(stage, gone)), gone);
  t.deepEqual(envOf(stage), { ...secrets, SIGNUP: 'open' }, 'settings kept');
  t.true(fs.existsSync(path.join(stage, 'var/lib/quoting')), 'data kept');
  t.true(fs.existsSync(path.join(stage, 'etc/caddy/quoting.caddy')), 'the Caddy site kept');

  const purge = await install(['--root', stage, '--uninstall', '--purge']);
  t.is(purge.code, 0, purge.stderr);
  t.false(fs.existsSync(path.join(stage, 'etc/quoting')));
  t.false(fs.existsSync(path.join(stage, 'var/lib/quoting')));
  t.false(fs.existsSync(path.join(stage, 'etc/caddy/quoting.caddy')));
  t.false(/^import quoting\.caddy$/m.test(fs.readFileSync(path.join(stage, 'etc/caddy/Caddyfile'), 'utf8')), 'the Caddyfile no longer imports the site');
});

test('--backup on PostgreSQL writes BACKUP_SCHEDULE and a hardened timer running quoting backup; on the embedded database serve runs it (no unit); --backup off removes it; --uninstall removes the units', async (t) => {
  t.timeout(900_000);
  const stage = await stagedCopy(t);
  const units = path.join(stage, 'etc/systemd/system');
  const secrets = envOf(stage);

  const scheduled = await install(['--root', stage, '--backup', '30 2 * * 1-5']);
  t.is(scheduled.code, 0, scheduled.stderr);
  t.deepEqual(envOf(stage), { ...secrets, BACKUP_SCHEDULE: '30 2 * * 1-5' });
  const service = fs.readFileSync(path.join(units, 'quoting-backup.service'), 'utf8');
  t.regex(service, /^Type=oneshot$/m);
  t.regex(service, /^ExecStart=\/\S+\/node \/opt\/quoting\/bin\/quoting backup$/m);
  for (const line of ['User=quoting', 'EnvironmentFile=/etc/quoting/quoting.env', 'ProtectSystem=strict', 'ReadWritePaths=/var/lib/quoting', 'TimeoutStartSec=6h']) {
    t.true(service.split('\n').includes(line), `quoting-backup.service has ${line}`);
  }
  const timer = fs.readFileSync(path.join(units, 'quoting-backup.timer'), 'utf8');
  t.regex(timer, /^OnCalendar=Mon\.\.Fri \*-\*-\* 2:30:00$/m);
  t.regex(timer, /^Persistent=true$/m);
  t.regex(scheduled.stdout, /skipped \(--root\): systemctl enable --now quoting-backup\.timer/);
  if (has('systemd-analyze')) {
    for (const unit of ['quoting-backup.service', 'quoting-backup.timer']) {
      const verified = spawnSync('systemd-analyze', ['verify', unit], { cwd: units, encoding: 'utf8' });
      t.is(verified.status, 0, `${unit}: ${verified.stderr}`);
    }
  }

  // A re-run keeps the schedule and its timer; another --backup replaces both.
  const kept = await install(['--root', stage]);
  t.is(kept.code, 0, kept.stderr);
  t.is(envOf(stage).BACKUP_SCHEDULE, '30 2 * * 1-5');
  t.true(fs.existsSync(path.join(units, 'quoting-backup.timer')));
  const daily = await install(['--root', stage, '--backup=0 3 * * *']);
  t.is(daily.code, 0, daily.stderr);
  t.is(envOf(stage).BACKUP_SCHEDULE, '0 3 * * *');
  t.regex(fs.readFileSync(path.join(units, 'quoting-backup.timer'), 'utf8'), /^OnCalendar=\*-\*-\* 3:0:00$/m);

  // A schedule with seconds, written by hand, is refused on PostgreSQL before anything changes.
  const envFile = path.join(stage, 'etc/quoting/quoting.env');
  const before = fs.readFileSync(envFile, 'utf8');
  fs.writeFileSync(envFile, before.replace(/^BACKUP_SCHEDULE=.*$/m, 'BACKUP_SCHEDULE=*/2 * * * * *'));
  const handEdited = await install(['--root', stage]);
  t.is(handEdited.code, 1);
  t.regex(handEdited.stderr, /^install\.sh: BACKUP_SCHEDULE=\*\/2 \* \* \* \* \* in \/etc\/quoting\/quoting\.env cannot be run by a timer on PostgreSQL/);
  fs.writeFileSync(envFile, before);

  const off = await install(['--root', stage, '--backup', 'off']);
  t.is(off.code, 0, off.stderr);
  t.is(envOf(stage).BACKUP_SCHEDULE, '', 'blank: unset');
  t.false(fs.existsSync(path.join(units, 'quoting-backup.timer')));
  t.false(fs.existsSync(path.join(units, 'quoting-backup.service')));

  // The embedded database: the schedule is quoting serve's, and no unit is written.
  fs.writeFileSync(envFile, fs.readFileSync(envFile, 'utf8').replace(/^DATABASE_URL=.*\n/m, ''));
  const embedded = await install(['--root', stage, '--backup', '*/30 * * * *']);
  t.is(embedded.code, 0, embedded.stderr);
  t.is(envOf(stage).BACKUP_SCHEDULE, '*/30 * * * *');
  t.regex(embedded.stdout, /embedded database: quoting serve runs the backups \(\*\/30 \* \* \* \*\) itself/);
  t.false(fs.existsSync(path.join(units, 'quoting-backup.timer')));

  fs.writeFileSync(envFile, `${fs.readFileSync(envFile, 'utf8')}DATABASE_URL=${secrets.DATABASE_URL}\n`);
  t.is((await install(['--root', stage])).code, 0);
  t.true(fs.existsSync(path.join(units, 'quoting-backup.timer')), 'back on PostgreSQL, the timer runs it');
  const uninstall = await install(['--root', stage, '--uninstall']);
  t.is(uninstall.code, 0, uninstall.stderr);
  for (const unit of ['quoting-backup.timer', 'quoting-backup.service']) t.false(fs.existsSync(path.join(units, unit)), unit);
  t.is(envOf(stage).BACKUP_SCHEDULE, '*/30 * * * *', 'settings kept');
});

// The wrapper switches to the service user, which needs root; `nobody` plays the quoting user (no user is created).
(unprivileged ? test : test.skip)(
  `the quoting command runs as the service user with the installed settings, and imports a file only its caller may read${unprivileged ? '' : ' (skipped: needs root, to switch users)'}`,
  async (t) => {
    t.timeout(900_000);
    const { stage, first } = await stagedInstall(t);
    t.is(first.code, 0);
    const place = sharedDir(t);
    const dataDir = path.join(place, 'data');
    fs.mkdirSync(dataDir, { mode: 0o700 });
    execFileSync('chown', ['nobody', dataDir]);
    const envFile = path.join(place, 'quoting.env');
    fs.writeFileSync(envFile, `DATA_DIR=${dataDir}\nLOG_LEVEL=warn\n`, { mode: 0o644 });
    const wrapper = path.join(place, 'quoting');
    const installed = fs.readFileSync(path.join(stage, 'usr/local/bin/quoting'), 'utf8');
    t.regex(installed, /runuser -u quoting /);
    fs.writeFileSync(wrapper, installed.replaceAll('runuser -u quoting ', 'runuser -u nobody ').replaceAll('/etc/quoting/quoting.env', envFile).replaceAll('/opt/quoting/', `${stage}/opt/quoting/`), { mode: 0o755 });
    const quoting = (...args: string[]) => spawnSync(wrapper, args, { cwd: '/', env: cliEnv(), encoding: 'utf8', timeout: 300_000 });

    const created = quoting('workspace', 'create', '--name', 'Acme', '--owner-email', 'owner@acme.test', '--slug', 'acme');
    t.is(created.status, 0, created.stderr);
    t.is(fs.statSync(path.join(dataDir, 'pglite')).uid, Number(execFileSync('id', ['-u', 'nobody'], { encoding: 'utf8' })), 'the database belongs to the service user');

    // In a folder of root's alone, as ~/catalogue.csv is for `sudo quoting import products ~/catalogue.csv`.
    const home = tempDir(t);
    const catalogue = path.join(home, 'catalogue.csv');
    fs.writeFileSync(catalogue, 'product_sku,name,variant_sku,price\nTEE,Tee,TEE-S,12.50\nMUG,Mug,MUG-1,8\n', { mode: 0o600 });
    const imported = quoting('import', 'products', catalogue, '--workspace', 'acme', '--json');
    t.is(imported.status, 0, imported.stderr);
    t.like(JSON.parse(imported.stdout), { rows: 2, created: 2, failed: 0 });
    const again = quoting('import', 'products', '--workspace=acme', '--json', catalogue);
    t.is(again.status, 0, again.stderr);
    t.like(JSON.parse(again.stdout), { rows: 2, unchanged: 2 });

    const missing = quoting('import', 'products', path.join(home, 'nope.csv'), '--workspace', 'acme');
    t.is(missing.status, 1);
    t.is(missing.stderr, `error: cannot read ${path.join(home, 'nope.csv')}: no such file\n`);
    const directory = quoting('import', 'products', home, '--workspace', 'acme');
    t.is(directory.status, 1);
    t.is(directory.stderr, `error: cannot read ${home}: it is a directory\n`);
  },
);

/** The backups `--update` took into the staged BACKUP_DIR (its default, DATA_DIR/backups). */
const updateBackups = (stage: string) => {
  const dir = path.join(stage, 'var/lib/quoting/backups');
  return fs.existsSync(dir) ? fs.readdirSync(dir).filter((name) => /^quoting-before-update-\d{4}-\d{2}-\d{2}T\d{6}Z(-\d+)?\.backup$/.test(name)).sort() : [];
};

test('--update on a root without an install stops before changing anything and says to install first; it takes no settings', async (t) => {
  const empty = tempDir(t);
  const refused = await install(['--update', '--root', empty]);
  t.is(refused.code, 1, refused.stdout);
  t.is(refused.stderr, 'install.sh: --update: Quoting is not installed here (no /opt/quoting or /etc/quoting/quoting.env). Nothing was changed. Install it first: sudo bash install.sh (README: Install on a server)\n');
  t.deepEqual(fs.readdirSync(empty), []);
  for (const args of [['--update', '--signup', 'open'], ['--update', '--with-postgres'], ['--update', '--port', '8080'], ['--update', '--uninstall']]) {
    const usage = await install(args);
    t.is(usage.code, 2, args.join(' '));
    t.regex(usage.stderr, /^install\.sh: --update (keeps the settings|and --uninstall do not go together)/);
  }
});

test('--update --dry-run on an installed root prints the backup, migration, restart and doctor steps and changes nothing', async (t) => {
  t.timeout(900_000);
  const { stage, first } = await stagedInstall(t);
  t.is(first.code, 0);
  const before = snapshot(stage);
  const dry = await install(['--update', '--dry-run', '--root', stage]);
  t.is(dry.code, 0, dry.stderr);
  const steps = dry.stdout.split('\n').filter((line) => line.startsWith('==>'));
  t.deepEqual(steps.map((line) => line.replace(/\d{4}-\d{2}-\d{2}T\d{6}Z/, 'TIME')), [
    '==> Checking the system',
    '==> Checking the install to update',
    '==> Checking Node.js (>= 20.19)',
    '==> Creating the quoting system user',
    '==> Creating /etc/quoting and /var/lib/quoting',
    '==> Installing the program in /opt/quoting',
    '==> Writing /etc/quoting/quoting.env',
    '==> Writing /usr/local/bin/quoting',
    '==> Writing systemd units',
    '==> Backing up the database to /var/lib/quoting/backups/quoting-before-update-TIME.backup',
    '==> Applying database migrations',
    '==> Starting quoting.service',
    '==> Checking the installation (quoting doctor)',
  ]);
  t.regex(dry.stdout, /would run: env .* backup --out \S+\/var\/lib\/quoting\/backups\/quoting-before-update-/);
  t.regex(dry.stdout, /would run: quoting doctor/);
  t.deepEqual(snapshot(stage), before, 'nothing changed');
});

test('quoting update, staged twice: a backup before each, the new code built and its migration applied, settings byte for byte kept; a failing migration, or a failing doctor, prints the rollback naming the backup', async (t) => {
  t.timeout(1_800_000);
  const stage = await stagedCopy(t);
  // The staged install on the embedded database (its PostgreSQL is not there), holding a workspace.
  const envFile = path.join(stage, 'etc/quoting/quoting.env');
  fs.writeFileSync(envFile, fs.readFileSync(envFile, 'utf8').replace(/^DATABASE_URL=.*\n/m, ''));
  for (const unit of ['quoting-worker.service', 'quoting-worker.timer']) fs.rmSync(path.join(stage, 'etc/systemd/system', unit));
  const dataDir = path.join(stage, 'var/lib/quoting');
  const quoting = path.join(stage, 'opt/quoting/bin/quoting');
  const cli = (...args: string[]) => spawnSync(process.execPath, [quoting, ...args], { env: cliEnv({ DATA_DIR: dataDir }), encoding: 'utf8' });
  const created = cli('workspace', 'create', '--name', 'Acme', '--owner-email', 'owner@acme.test', '--slug', 'acme');
  t.is(created.status, 0, created.stderr);
  const settings = fs.readFileSync(envFile);
  const settingsMode = fs.statSync(envFile).mode;

  // The installed program has no sources: an update from it needs --from, and without it nothing changes.
  const before = snapshot(stage);
  const noSource = await runAsync([process.execPath, quoting, 'update', '--root', stage], cliEnv());
  t.is(noSource.code, 1);
  t.regex(noSource.stderr, /^install\.sh: --update needs the new source: give --from TARBALL_OR_DIR/m);
  t.deepEqual(snapshot(stage), before, 'nothing changed');

  // The new version: this checkout with one more migration.
  const tree = path.join(sharedDir(t), 'quoting');
  fs.cpSync(readableCheckout(), tree, { recursive: true });
  fs.writeFileSync(
    path.join(tree, 'migrations/20991231000000_update_check.ts'),
    "import type { Knex } from 'knex';\n\nexport async function up(knex: Knex): Promise<void> {\n  await knex.schema.createTable('update_check', (table) => {\n    table.integer('id');\n  });\n}\n\nexport async function down(knex: Knex): Promise<void> {\n  await knex.schema.dropTable('update_check');\n}\n",
  );
  const update = () => runAsync([process.execPath, quoting, 'update', '--root', stage, '--from', tree], cliEnv());

  const first = await update();
  t.is(first.code, 0, first.stderr + first.stdout);
  t.regex(first.stdout, new RegExp(`^Running: bash ${stage}/opt/quoting/install\\.sh --update --from ${tree} --root ${stage}$`, 'm'));
  t.deepEqual(updateBackups(stage).length, 1, first.stdout);
  const [firstBackup] = updateBackups(stage);
  t.regex(first.stdout, new RegExp(`^==> Backing up the database to /var/lib/quoting/backups/${firstBackup}$`, 'm'));
  t.regex(first.stdout, /^Applied 20991231000000_update_check$/m);
  t.regex(first.stdout, /the previous program is kept in \/opt\/quoting\.previous/);
  t.regex(first.stdout, /skipped \(--root\): systemctl restart quoting\.service/);
  t.regex(first.stdout, /^ok {4}Configuration/m, 'the doctor ran');
  t.true(fs.existsSync(path.join(stage, 'opt/quoting/dist/migrations/20991231000000_update_check.js')), 'the new code is in place');
  t.false(fs.existsSync(path.join(stage, 'opt/quoting.previous/dist/migrations/20991231000000_update_check.js')), 'the previous code is kept beside it');
  t.true(fs.existsSync(path.join(stage, 'opt/quoting.previous/bin/quoting')));
  t.deepEqual(fs.readFileSync(envFile), settings, 'the settings are kept byte for byte');
  t.is(fs.statSync(envFile).mode, settingsMode);
  const status = cli('migrate', '--status');
  t.is(status.status, 0, status.stderr);
  t.regex(status.stdout, /^Pending \(0\):$/m);
  t.regex(status.stdout, /^ {2}20991231000000_update_check$/m);
  const listed = cli('workspace', 'list', '--json');
  t.is(listed.status, 0, listed.stderr);
  t.like(JSON.parse(listed.stdout), [{ slug: 'acme' }], 'the data is kept');

  // Again from the same source: nothing to build, but a backup all the same, and nothing to migrate.
  const second = await update();
  t.is(second.code, 0, second.stderr + second.stdout);
  t.regex(second.stdout, /already built from this source/);
  t.regex(second.stdout, /^Nothing to migrate: the database is up to date\.$/m);
  const backups = updateBackups(stage);
  t.is(backups.length, 2, backups.join(', '));
  t.regex(second.stdout, new RegExp(`^==> Backing up the database to /var/lib/quoting/backups/${backups.find((name) => name !== firstBackup)}$`, 'm'));
  t.deepEqual(fs.readFileSync(envFile), settings, 'the settings are kept byte for byte');

  // A version whose migration fails (put straight into the installed program: no third build): install.sh --update
  // stops non-zero, the service not started, and says how to roll back with the backup it took.
  fs.writeFileSync(path.join(stage, 'opt/quoting/dist/migrations/20991231000001_fails.js'), "export async function up() { throw new Error('this migration fails on purpose'); }\nexport async function down() {}\n");
  const failed = await install(['--update', '--root', stage, '--from', tree]);
  t.is(failed.code, 1, failed.stdout);
  const third = updateBackups(stage).find((name) => !backups.includes(name));
  t.truthy(third, 'a third backup was taken');
  t.regex(failed.stderr, /this migration fails on purpose/);
  const rollback = failed.stderr.slice(failed.stderr.indexOf('install.sh: the migration failed')).trim().split('\n');
  t.deepEqual(rollback, [
    'install.sh: the migration failed (above); the service is not started.',
    'To roll back to the version and the data of before the update:',
    '  sudo systemctl stop quoting',
    `  sudo quoting restore --force /var/lib/quoting/backups/${third}`,
    '  sudo systemctl start quoting',
    'Or fix the cause and run the update again (it takes a new backup first).',
  ]);
  t.false(/systemctl restart/.test(failed.stdout), 'nothing is started after a failed migration');
  t.deepEqual(fs.readFileSync(envFile), settings);

  // The rollback works with that backup: the previous program back (here: without the failing migration), then
  // the restore.
  fs.rmSync(path.join(stage, 'opt/quoting/dist/migrations/20991231000001_fails.js'));
  const restored = cli('restore', '--force', path.join(dataDir, 'backups', third!));
  t.is(restored.status, 0, restored.stderr);
  t.like(JSON.parse(cli('workspace', 'list', '--json').stdout), [{ slug: 'acme' }]);

  // An update whose doctor finds a failure (a mail server that refuses: a port nothing listens on) stops non-zero
  // after migrating, and says how to roll back with the backup it took.
  const port = await new Promise<number>((resolve) => {
    const probe = net.createServer().listen(0, '127.0.0.1', () => {
      const { port: free } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(free));
    });
  });
  fs.appendFileSync(envFile, `SMTP_URL=smtp://127.0.0.1:${port}\n`);
  const taken = updateBackups(stage);
  const unhealthy = await install(['--update', '--root', stage, '--from', tree]);
  t.is(unhealthy.code, 1, unhealthy.stdout);
  const fourth = updateBackups(stage).find((name) => !taken.includes(name));
  t.truthy(fourth, 'a fourth backup was taken');
  t.regex(unhealthy.stdout + unhealthy.stderr, /fail +Mail \(SMTP\)/);
  t.deepEqual(unhealthy.stderr.slice(unhealthy.stderr.indexOf('install.sh: quoting doctor found')).trim().split('\n'), [
    'install.sh: quoting doctor found a failure (above) after the update.',
    'To roll back to the version and the data of before the update:',
    '  sudo systemctl stop quoting',
    `  sudo quoting restore --force /var/lib/quoting/backups/${fourth}`,
    '  sudo systemctl start quoting',
    'Or fix the cause and run the update again (it takes a new backup first).',
  ]);
});
