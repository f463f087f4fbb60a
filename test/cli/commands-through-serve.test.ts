import { spawn } from 'node:child_process';
import net from 'node:net';
import fs from 'node:fs';
import path from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import test from 'ava';
import { controlSocketPath, sendCommand, serveCommands, type CommandRequest, type CommandStreams } from '../../src/db/control-socket.js';
import { Client } from '../helpers/client.js';
import { freePort, migratedDataDir, runCli, startServe, tempDir, type CliResult } from '../helpers/cli.js';

// The embedded database's control socket: while `quoting serve` holds DATA_DIR, the other commands
// run inside it. These tests use PGlite whatever the backend under test (the socket exists only there).

/** Output with the values that differ from run to run (generated password, keys) masked. */
const masked = (res: CliResult) => ({
  code: res.code,
  stdout: res.stdout.replace(/(Password:\s+)\S+/g, '$1…').replace(/(pk|sk)_live_\S+/g, '$1_live_…'),
  stderr: res.stderr,
});

/** The commands an operator runs, in order; each gives the same output and exit code alone and through serve. */
const script: string[][] = [
  ['workspace', 'create', '--name', 'Acme', '--owner-email', 'a@b.co'],
  ['workspace', 'create', '--name', 'Again', '--owner-email', 'a@b.co'], // taken: exit 1
  ['rotate-keys', '--workspace', 'acme'],
  ['rotate-keys', '--workspace', 'no-such-workspace'], // exit 1
  ['webhooks', 'resend', '--workspace', 'acme', '--status', 'dead'],
  ['webhooks', 'resend', '12345'], // unknown: exit 1 after its summary line
  ['webhooks', 'resend', '--workspace', 'nope', '--status', 'failed'],
  ['webhooks', 'resend', '--workspace', 'acme', '--status', 'lost'], // bad value: exit 1 naming it
  ['migrate', '--status'],
  ['migrate'],
  ['worker'],
  ['user', 'set-password', '--email', 'a@b.co'],
];

test('while serve runs, workspace create, rotate-keys, webhooks resend, migrate, worker, user set-password give the same output and exit codes as alone', async (t) => {
  t.timeout(10 * 60_000); // a dozen PGlite starts on a busy machine
  const [alone, served] = await Promise.all([migratedDataDir(t), migratedDataDir(t)]);
  const [expected, server] = await Promise.all([
    (async () => {
      const results = [];
      for (const args of script) results.push(masked(await runCli(args, { env: { DATA_DIR: alone } })));
      return results;
    })(),
    startServe(t, ['--port', String(await freePort())], { env: { DATA_DIR: served } }),
  ]);
  t.deepEqual(expected.map((r) => r.code), [0, 1, 0, 1, 0, 1, 1, 1, 0, 0, 0, 0], JSON.stringify(expected, null, 1));

  const actual = [];
  for (const args of script) actual.push(masked(await runCli(args, { env: { DATA_DIR: served } })));
  // Only the worker differs: `serve` delivers itself, so it has nothing to do (and, off a terminal, says nothing).
  const worker = script.findIndex((args) => args[0] === 'worker');
  t.deepEqual(actual[worker], { code: 0, stdout: '', stderr: '' });
  t.deepEqual(actual.filter((_, i) => i !== worker), expected.filter((_, i) => i !== worker));

  // They ran in the server's database: the workspace exists there and its keys work over HTTP.
  const login = await new Client(server.url).post('/api/v1/auth/login', { email: 'a@b.co', password: 'wrong password' });
  t.is(login.status, 401);
  const rotated = await runCli(['rotate-keys', '--workspace', 'acme'], { env: { DATA_DIR: served } });
  const secret = /^Secret key: (sk_live_\S+)/m.exec(rotated.stdout)![1];
  const key = await new Client(server.url).get('/api/v1/auth/key', { headers: { authorization: `Bearer ${secret}` } });
  t.is(key.status, 200);
  t.is(key.body.data.workspace.slug, 'acme');
  t.false(fs.existsSync(path.join(served, 'pglite.lock')));
  t.deepEqual(await server.stop(), { code: 0, signal: null });
});

test('while serve runs: usage errors exit 2 on the caller side, a failure exits 1 with its one error line, a relative DATA_DIR works', async (t) => {
  t.timeout(5 * 60_000);
  const dataDir = await migratedDataDir(t);
  const server = await startServe(t, ['--port', String(await freePort())], { env: { DATA_DIR: dataDir } });
  const env = { DATA_DIR: dataDir };
  const [missing, resend, both, unknown] = await Promise.all([
    runCli(['rotate-keys'], { env }),
    runCli(['webhooks', 'resend'], { env }),
    runCli(['webhooks', 'resend', '1', '--status', 'dead'], { env }),
    runCli(['migrate', '--bogus'], { env }),
  ]);
  for (const res of [missing, resend, both, unknown]) {
    t.is(res.code, 2, res.stderr);
    t.is(res.stdout, '');
    t.is(res.errorLines.length, 1, res.stderr);
  }
  t.regex(missing.errorLines[0], /^error: required option '--workspace <slug>' not specified/);
  t.regex(resend.errorLines[0], /^error: give delivery ids, or --workspace <slug> with --status dead\|failed/);
  t.regex(both.errorLines[0], /^error: give either delivery ids or --status/);

  const failing = await runCli(['rotate-keys', '--workspace', 'no-such-workspace'], { env });
  t.is(failing.code, 1);
  t.is(failing.stdout, '');
  t.is(failing.stderr, 'error: no workspace with slug "no-such-workspace"\n');

  // DATA_DIR relative to the caller's directory.
  const relative = await runCli(['migrate', '--status'], { env: { DATA_DIR: path.basename(dataDir) }, cwd: path.dirname(dataDir) });
  t.is(relative.code, 0, relative.stderr);
  t.regex(relative.stdout, /Pending \(0\):/);
  t.deepEqual(await server.stop(), { code: 0, signal: null });
});

test('the socket is DATA_DIR/quoting.sock, mode 0600, in a DATA_DIR of mode 0700; it goes when serve stops', async (t) => {
  const dataDir = path.join(tempDir(t), 'fresh');
  const server = await startServe(t, ['--port', String(await freePort())], { env: { DATA_DIR: dataDir } });
  const socket = path.join(dataDir, 'quoting.sock');
  const stat = fs.statSync(socket);
  t.true(stat.isSocket());
  t.is(stat.mode & 0o777, 0o600);
  t.is(fs.statSync(dataDir).mode & 0o777, 0o700);
  t.is(stat.uid, process.getuid!());
  t.deepEqual(await server.stop('SIGINT'), { code: 0, signal: null });
  t.false(fs.existsSync(socket));
});

test('a holder without a control socket (another command, or an older version) still gets the lock error, saying what to do', async (t) => {
  const dataDir = await migratedDataDir(t);
  const holder = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)']);
  t.teardown(() => holder.kill('SIGKILL'));
  fs.writeFileSync(path.join(dataDir, 'quoting.lock'), `${holder.pid} worker --watch`);
  const res = await runCli(['migrate', '--status'], { env: { DATA_DIR: dataDir } });
  t.is(res.code, 1);
  t.is(res.errorLines.length, 1, res.stderr);
  t.regex(res.errorLines[0], new RegExp(`^error: The embedded database in .* is in use by process ${holder.pid} \\(quoting worker --watch\\)\\. That process does not take commands through .*quoting\\.sock`));
  t.regex(res.errorLines[0], /wait for it to finish or stop it, then run this again; or set DATABASE_URL/);
});

// ---------------------------------------------------------------------------------------------
// The protocol, in this process

async function collect(stream: PassThrough): Promise<string> {
  let text = '';
  stream.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
  await new Promise((resolve) => stream.once('end', resolve));
  return text;
}

const request = (argv: string[], tty = false): CommandRequest => ({
  argv,
  cwd: '/somewhere',
  env: { WEBHOOKS_ENABLED: '0', ADMIN_API_KEY: 'not-for-the-server', CI: 'true' },
  stdout: { isTTY: tty, columns: tty ? 123 : undefined },
  stderr: { isTTY: false },
});

function local(stdin: Readable, signal = new AbortController().signal) {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  return { io: { stdin, stdout, stderr, signal }, out: collect(stdout), err: collect(stderr), stdout, stderr };
}

test('protocol: the request arrives whole (settings left out), stdin is pulled through (large input included), output and the exit code come back', async (t) => {
  const dir = tempDir(t);
  let seen: { request: CommandRequest; tty?: boolean; columns?: number } | undefined;
  const stop = await serveCommands(dir, async (req, streams: CommandStreams) => {
    seen = { request: req, tty: streams.stdout.isTTY, columns: streams.stdout.columns };
    let bytes = 0;
    let text = '';
    for await (const chunk of streams.stdin) {
      bytes += (chunk as Buffer).length;
      if (text.length < 20) text += (chunk as Buffer).toString('utf8');
    }
    streams.stdout.write(`read ${bytes} bytes starting ${text.slice(0, 5)}\n`);
    streams.stderr.write('warning on stderr\n');
    return 3;
  });
  t.teardown(() => stop(0));
  const input = 'hello' + 'x'.repeat(3 * 1024 * 1024);
  const streams = local(Readable.from([Buffer.from(input)]));
  const code = await sendCommand(dir, request(['import', 'products', '-'], true), streams.io);
  streams.stdout.end();
  streams.stderr.end();
  t.is(code, 3);
  t.is(await streams.out, `read ${input.length} bytes starting hello\n`);
  t.is(await streams.err, 'warning on stderr\n');
  t.deepEqual(seen?.request.argv, ['import', 'products', '-']);
  t.is(seen?.request.cwd, '/somewhere');
  t.deepEqual(seen?.request.env, { CI: 'true' }, 'the server takes how to show output from the caller, never a setting');
  t.is(seen?.tty, true, 'stdout is a TTY on the server side as the caller reported');
  t.is(seen?.columns, 123);
});

test('protocol: a command that never reads stdin leaves it alone; an abort from the caller reaches the command', async (t) => {
  const dir = tempDir(t);
  const stop = await serveCommands(dir, async (_req, streams) => {
    streams.stdout.write('waiting\n');
    await new Promise((resolve) => streams.signal.addEventListener('abort', resolve, { once: true }));
    streams.stdout.write('aborted\n');
    return 130;
  });
  t.teardown(() => stop(0));
  let read = false;
  const stdin = new Readable({ read: () => void (read = true) });
  const abort = new AbortController();
  const streams = local(stdin, abort.signal);
  streams.stdout.on('data', () => abort.abort()); // Ctrl-C once the command is under way
  const code = await sendCommand(dir, request(['worker', '--watch']), streams.io);
  streams.stdout.end();
  streams.stderr.end();
  t.is(code, 130);
  t.is(await streams.out, 'waiting\naborted\n');
  t.false(read, 'stdin was never read');
});

test('protocol: no server (no socket, or a dead server\'s file) resolves null, so the caller runs the command itself', async (t) => {
  const dir = tempDir(t);
  t.is(await sendCommand(dir, request(['migrate']), local(Readable.from([])).io), null);
  fs.writeFileSync(controlSocketPath(dir), '');
  t.is(await sendCommand(dir, request(['migrate']), local(Readable.from([])).io), null);
});

test('protocol: a server that goes away mid-command is an error for the caller, not an exit code', async (t) => {
  const dir = tempDir(t);
  let stop: (graceMs?: number) => Promise<void> = async () => {};
  stop = await serveCommands(dir, async () => {
    await stop(0);
    return 0;
  });
  const error = await t.throwsAsync(sendCommand(dir, request(['migrate']), local(Readable.from([])).io));
  t.regex(error!.message, /the server stopped before the command finished/);
});

test('serve sent through the socket by hand is refused with one line (exit 1)', async (t) => {
  const { runProgram } = await import('../../src/cli/index.js');
  const { runServed } = await import('../../src/cli/context.js');
  const streams = local(Readable.from([]));
  const code = await runServed({ database: {} as never, env: {}, caller: {}, cwd: '/', serverPid: 4242 }, () => runProgram(['serve', '--port', '0'], streams.io));
  streams.stdout.end();
  streams.stderr.end();
  t.is(code, 1);
  t.is(await streams.out, '');
  t.is(await streams.err, "error: 'quoting serve' cannot run inside the server (process 4242) that already holds this DATA_DIR\n");
});

test('quoting worker inside the server: on a terminal it says that serve delivers; off one it says nothing; exit 0 either way', async (t) => {
  const { runProgram } = await import('../../src/cli/index.js');
  const { runServed } = await import('../../src/cli/context.js');
  const run = async (tty: boolean) => {
    const streams = local(Readable.from([]));
    Object.assign(streams.stdout, { isTTY: tty, columns: 80 });
    const code = await runServed({ database: {} as never, env: {}, caller: {}, cwd: '/', serverPid: 4242 }, () => runProgram(['worker', '--watch'], streams.io));
    streams.stdout.end();
    streams.stderr.end();
    return { code, stdout: await streams.out, stderr: await streams.err };
  };
  t.deepEqual(await run(true), {
    code: 0,
    stdout: 'Nothing to do: quoting serve (process 4242) delivers webhooks in-process on the embedded database.\n',
    stderr: '',
  });
  t.deepEqual(await run(false), { code: 0, stdout: '', stderr: '' });
});

// ---------------------------------------------------------------------------------------------
// Whom the CLI talks to, and what it tells them

/** Frames of the control socket (see src/db/control-socket.ts). */
function frame(type: string, payload: string): Buffer {
  const body = Buffer.from(payload);
  const head = Buffer.alloc(5);
  head.write(type, 0, 'latin1');
  head.writeUInt32BE(body.length, 1);
  return Buffer.concat([head, body]);
}

/**
 * A listener of someone else's at DATA_DIR/quoting.sock, beside a lock naming a live process (this one), as a
 * user who can write to DATA_DIR could set up: it records what callers send and answers exit 0.
 */
async function impostor(t: import('ava').ExecutionContext, dataDir: string): Promise<{ heard: () => string }> {
  fs.writeFileSync(path.join(dataDir, 'quoting.lock'), `${process.pid} serve`);
  let heard = '';
  const server = net.createServer((socket) => {
    socket.on('data', (chunk) => {
      heard += chunk.toString('latin1');
      socket.end(frame('x', JSON.stringify({ code: 0 })));
    });
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(path.join(dataDir, 'quoting.sock'), resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { heard: () => heard };
}

/** The server's own secrets, as an env file read by both the server and the CLI holds them. */
const secrets = {
  ADMIN_API_KEY: 'admin-key-secret',
  MIGRATE_TOKEN: 'migrate-token-secret',
  SMTP_URL: 'smtp://mailer:smtp-password-secret@mail.example.com:587',
  STRIPE_SECRET_KEY: 'sk_test_stripesecret',
  STRIPE_WEBHOOK_SECRET: 'whsec_signingsecret',
};

test('the CLI sends a running server its command line, directory and terminal, never the settings it read (secrets included)', async (t) => {
  const dataDir = tempDir(t);
  const listener = await impostor(t, dataDir);
  const res = await runCli(['rotate-keys', '--workspace', 'acme'], { env: { DATA_DIR: dataDir, ...secrets, APP_URL: 'https://caller.example.com', CI: 'true' } });
  t.is(res.code, 0, res.stderr);
  const heard = listener.heard();
  const header = JSON.parse(heard.slice(5, 5 + Buffer.from(heard, 'latin1').readUInt32BE(1))) as CommandRequest;
  t.deepEqual(header.argv, ['rotate-keys', '--workspace', 'acme']);
  t.deepEqual(header.env, { CI: 'true', LOG_LEVEL: 'warn' });
  for (const value of [...Object.values(secrets), 'caller.example.com']) t.false(heard.includes(value), `${value} is not sent`);
});

test('the CLI sends nothing through a socket in a DATA_DIR that other users can write to: one line saying why and what to do', async (t) => {
  const dataDir = tempDir(t);
  const listener = await impostor(t, dataDir);
  for (const mode of [0o777, 0o770, 0o1777]) {
    fs.chmodSync(dataDir, mode);
    const res = await runCli(['user', 'set-password', '--email', 'a@b.co', '--password', 'a new password here'], { env: { DATA_DIR: dataDir, ...secrets } });
    t.is(res.code, 1, res.stderr);
    t.is(res.stdout, '');
    t.deepEqual(res.errorLines, [
      `error: refusing to send this command to ${path.join(dataDir, 'quoting.sock')}: other users can write to ${dataDir} (mode ${mode.toString(8).padStart(4, '0')}), ` +
        `so the socket may not be the server's; make it private (chmod 700 ${dataDir}) and restart quoting serve`,
    ]);
  }
  t.is(listener.heard(), '', 'the listener heard nothing');
  fs.chmodSync(dataDir, 0o700);
});

test('the CLI follows no symbolic link in place of the socket', async (t) => {
  const dataDir = tempDir(t);
  const elsewhere = tempDir(t);
  const listener = await impostor(t, elsewhere);
  fs.writeFileSync(path.join(dataDir, 'quoting.lock'), `${process.pid} serve`);
  fs.symlinkSync(path.join(elsewhere, 'quoting.sock'), path.join(dataDir, 'quoting.sock'));
  const res = await runCli(['migrate', '--status'], { env: { DATA_DIR: dataDir } });
  t.is(res.code, 1);
  t.is(res.errorLines.length, 1, res.stderr);
  t.regex(res.errorLines[0], /^error: refusing to send this command to .*quoting\.sock: it is a symbolic link, not the server's socket; /);
  t.is(listener.heard(), '');
});

const root = process.getuid?.() === 0;
(root ? test : test.skip)('the CLI sends nothing when DATA_DIR or the socket belongs to another user (needs root, to give files away)', async (t) => {
  const dataDir = tempDir(t);
  const listener = await impostor(t, dataDir);
  const socket = path.join(dataDir, 'quoting.sock');
  const other = 4321;
  fs.chownSync(dataDir, other, other);
  const dirOwned = await runCli(['migrate', '--status'], { env: { DATA_DIR: dataDir } });
  t.is(dirOwned.code, 1);
  t.deepEqual(dirOwned.errorLines, [`error: refusing to send this command to ${socket}: ${dataDir} belongs to uid ${other}, not to this user (uid 0) or root; run it as the user that runs quoting serve`]);
  fs.chownSync(dataDir, 0, 0);
  fs.lchownSync(socket, other, other);
  const socketOwned = await runCli(['migrate', '--status'], { env: { DATA_DIR: dataDir } });
  t.is(socketOwned.code, 1);
  t.deepEqual(socketOwned.errorLines, [`error: refusing to send this command to ${socket}: it belongs to uid ${other}, not to this user (uid 0) or root; run it as the user that runs quoting serve`]);
  t.is(listener.heard(), '');
});

test('quoting doctor run through the server reports the server\'s settings, env file and lock, not the caller\'s', async (t) => {
  t.timeout(5 * 60_000);
  const dataDir = await migratedDataDir(t);
  const envFile = path.join(tempDir(t), 'quoting.env');
  fs.writeFileSync(envFile, 'APP_URL=https://quotes.example.com\nTRUST_PROXY=1\n');
  const server = await startServe(t, ['--port', String(await freePort())], { env: { DATA_DIR: dataDir, QUOTING_ENV_FILE: envFile } });
  const res = await runCli(['doctor', '--json'], { env: { DATA_DIR: dataDir, APP_URL: 'http://localhost:9999' } });
  const checks = new Map((JSON.parse(res.stdout) as { checks: Array<{ id: string; status: string; message: string; fix: string | null }> }).checks.map((c) => [c.id, c]));
  t.like(checks.get('app_url'), { status: 'ok', message: 'https://quotes.example.com' });
  t.like(checks.get('configuration'), { status: 'ok', message: `every setting is valid (${envFile})` });
  t.regex(checks.get('smtp')!.fix!, new RegExp(`in ${envFile.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`));
  t.like(checks.get('data_dir'), { status: 'ok' });
  t.regex(checks.get('data_dir')!.message, new RegExp(`the embedded database is held by the server that ran these checks, process ${server.pid} \\(quoting serve`));
  t.deepEqual(await server.stop(), { code: 0, signal: null });
});
