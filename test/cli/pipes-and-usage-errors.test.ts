import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import test from 'ava';
import type { Command } from 'commander';
import { ConfigError, loadConfig } from '../../src/config.js';
import { buildProgram, runProgram } from '../../src/cli/index.js';
import type { CommandIo } from '../../src/cli/io.js';
import { bin, cliEnv, freePort, migratedBackend, migratedDataDir, runCli, startServe, tempDir } from '../helpers/cli.js';
import { embeddedTest } from '../helpers/skip.js';
import { PATIENCE_MS } from '../helpers/patience.js';

interface Ended {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `script` in bash with `quoting` as a shell function for the CLI under test (its output as the shell sees it). */
function shell(script: string, env: Record<string, string | undefined> = {}): Promise<Ended> {
  const child = spawn('bash', ['-c', `quoting() { "${process.execPath}" -- "${bin}" "$@"; }\n${script}`], { cwd: os.tmpdir(), env: cliEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), PATIENCE_MS);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/**
 * `quoting <args>` with its stdout on a pipe that nobody reads any more: a FIFO opened for writing while a
 * reader held it, the reader then closed. Every write fails with EPIPE, from the first, whatever the timing.
 * The shell exits with the command's status; its stderr is the command's.
 */
function withReaderGone(args: string[], env: Record<string, string | undefined> = {}): Promise<Ended> {
  const quoted = args.map((arg) => `'${arg.replace(/'/g, `'\\''`)}'`).join(' ');
  return shell(`set -e; f=$(mktemp -u); mkfifo "$f"; exec 3<>"$f"; exec 4>"$f"; exec 3<&-; rm "$f"\nquoting ${quoted} >&4 4>&-`, env);
}

const noStack = (stderr: string) => !/EPIPE|Unhandled|\n\s+at /.test(stderr);

// ---------------------------------------------------------------------------------------------
// A closed stdout ends a command quietly, with the status a shell gives a SIGPIPE.

test('`quoting doctor | head -1`: the first line, then a quiet end; never an unhandled EPIPE', async (t) => {
  const dataDir = path.join(tempDir(t), 'none');
  for (let run = 0; run < 3; run++) {
    const result = await shell('quoting doctor | head -1; exit "${PIPESTATUS[0]}"', { DATA_DIR: dataDir });
    t.regex(result.stdout, /^ok {4}Configuration .*\n$/, result.stderr);
    t.is(result.stderr, '', 'nothing on stderr');
    // 0 when doctor had written everything before head left, 141 when it met the closed pipe.
    t.true(result.code === 0 || result.code === 141, `exit ${result.code}`);
  }
});

test('a reader gone before the first line: doctor and --help end at once with 141 and nothing on stderr', async (t) => {
  const dataDir = path.join(tempDir(t), 'none');
  for (const args of [['doctor'], ['doctor', '--json'], ['--help'], ['import', '--help']]) {
    const result = await withReaderGone(args, { DATA_DIR: dataDir });
    t.is(result.code, 141, `${args.join(' ')}: ${result.stderr}`);
    t.is(result.stderr, '', args.join(' '));
  }
  t.false(fs.existsSync(dataDir), 'doctor created nothing');
});

test('a command that runs until stopped (worker --watch) stops as on Ctrl-C when its reader goes: exit 141, the database closed', async (t) => {
  t.timeout(600_000);
  const backend = await migratedBackend(t);
  const result = await withReaderGone(['worker', '--watch'], backend);
  t.is(result.code, 141, result.stderr);
  t.true(noStack(result.stderr), result.stderr);
  if (backend.DATA_DIR) t.false(fs.existsSync(path.join(backend.DATA_DIR, 'quoting.lock')), 'the embedded database was closed and its lock released');
});

embeddedTest('a command run inside quoting serve for a caller whose reader has gone: the caller exits 141, the server serves on', async (t) => {
  t.timeout(600_000);
  const env = { DATA_DIR: await migratedDataDir(t) };
  const server = await startServe(t, ['--port', String(await freePort())], { env });
  for (const args of [['doctor'], ['migrate', '--status']]) {
    const result = await withReaderGone(args, env);
    t.is(result.code, 141, `${args.join(' ')}: ${result.stderr}`);
    t.true(noStack(result.stderr), result.stderr);
  }
  t.is((await fetch(`${server.url}/healthz`)).status, 200);
  t.is((await server.stop()).code, 0);
});

test('stderr closed too (`2>&1 | head -0`): usage errors end quietly', async (t) => {
  for (const args of [['frobnicate'], ['rotate-keys']]) {
    const result = await shell(`quoting ${args.join(' ')} 2>&1 | head -0; exit "\${PIPESTATUS[0]}"`);
    t.true(result.code === 2 || result.code === 141, `${args.join(' ')}: exit ${result.code}`);
    t.is(result.stderr, '');
  }
});

// ---------------------------------------------------------------------------------------------
// SMTP_URL is checked with the other settings.

test('an SMTP_URL without a host (smtp:/bad) is an invalid setting named as SMTP_URL, its value not shown', (t) => {
  for (const bad of ['smtp:/bad', 'smtp://', 'smtps:mail.example.com', 'smtp://:587']) {
    const error = t.throws(() => loadConfig({ SMTP_URL: bad }), { instanceOf: ConfigError }, bad)!;
    t.deepEqual((error as ConfigError).problems.map((p) => p.variable), ['SMTP_URL'], bad);
    t.regex(error.message, /^SMTP_URL expects an SMTP URL such as smtp:\/\/user:pass@mail\.example\.com:587 \(the value is not shown/, bad);
  }
  t.is(loadConfig({ SMTP_URL: 'smtp://user:pass@mail.example.com:587' }).SMTP_URL, 'smtp://user:pass@mail.example.com:587');
  t.is(loadConfig({ SMTP_URL: 'smtps://mail.example.com' }).SMTP_URL, 'smtps://mail.example.com');
});

test('quoting doctor fails the configuration check on SMTP_URL=smtp:/bad, naming the variable; serve refuses to start', async (t) => {
  const dataDir = path.join(tempDir(t), 'none');
  const doctor = await runCli(['doctor', '--json'], { env: { DATA_DIR: dataDir, SMTP_URL: 'smtp:/bad' } });
  t.is(doctor.code, 1, doctor.stderr);
  const checks = new Map((JSON.parse(doctor.stdout) as { checks: { id: string; status: string; message: string }[] }).checks.map((c) => [c.id, c]));
  t.is(checks.get('configuration')!.status, 'fail');
  t.regex(checks.get('configuration')!.message, /^SMTP_URL expects an SMTP URL/);
  t.is(checks.get('smtp')!.message, 'not checked: SMTP_URL is invalid');
  t.deepEqual(doctor.errorLines, ['error: 1 check failed: configuration']);

  const serve = await runCli(['serve', '--port', '0'], { env: { DATA_DIR: dataDir, SMTP_URL: 'smtp:/bad' } });
  t.is(serve.code, 1);
  t.regex(serve.errorLines[0], /^error: SMTP_URL expects an SMTP URL/);
  t.false(fs.existsSync(dataDir));
});

// ---------------------------------------------------------------------------------------------
// A usage error points to the help of the command that was mistyped.

function collectingIo(): { io: CommandIo; err: () => string } {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let err = '';
  stdout.resume();
  stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  return { io: { stdin: new PassThrough(), stdout, stderr, signal: new AbortController().signal }, err: () => err };
}

function commandPaths(command: Command, prefix: string[] = []): string[][] {
  return command.commands.flatMap((sub) => [[...prefix, sub.name()], ...commandPaths(sub, [...prefix, sub.name()])]);
}

test('every command and subcommand: a usage error is one line ending with that command\'s --help (exit 2)', async (t) => {
  const paths = commandPaths(buildProgram(collectingIo().io));
  t.true(paths.length >= 10, `${paths.length} commands`);
  for (const words of paths) {
    const { io, err } = collectingIo();
    const code = await runProgram([...words, '--no-such-option'], io);
    t.is(code, 2, words.join(' '));
    // One line; commander may find a missing required option before the unknown one.
    t.regex(err(), /^error: [^\n]+\n$/, words.join(' '));
    t.true(err().endsWith(` (see 'quoting ${words.join(' ')} --help')\n`), err());
  }
});

test('usage errors from the shell: a subcommand\'s point to its help, the program\'s to quoting --help', async (t) => {
  const cases: [string[], string][] = [
    [['import', 'things', 'x.csv', '--workspace', 'acme'], "(see 'quoting import --help')"],
    [['import', 'products', 'x.csv'], "(see 'quoting import --help')"],
    [['workspace', 'create', '--name', 'Acme'], "(see 'quoting workspace create --help')"],
    [['webhooks', 'resend'], "(see 'quoting webhooks resend --help')"],
    [['serve', '--port', 'eighty'], "(see 'quoting serve --help')"],
    [['user', 'frobnicate'], "(see 'quoting user --help')"],
    [['frobnicate'], "(see 'quoting --help')"],
  ];
  const results = await Promise.all(cases.map(([args]) => runCli(args, { env: { DATA_DIR: path.join(tempDir(t), 'none') } })));
  results.forEach((result, i) => {
    const [args, pointer] = cases[i];
    t.is(result.code, 2, args.join(' '));
    t.is(result.errorLines.length, 1, result.stderr);
    t.true(result.errorLines[0].startsWith('error: ') && result.errorLines[0].endsWith(pointer), result.errorLines[0]);
  });
});
