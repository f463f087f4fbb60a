import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { bin, cliEnv, freePort, migratedBackend, migratedDataDir, runImportCli as runCli, startServe, tempDir, usingPostgres, type CliResult } from '../helpers/cli.js';
import { embeddedTest, testWhen } from '../helpers/skip.js';

/**
 * `quoting import products|orders <file|->` as an operator runs it: plain output without a terminal,
 * --json, standard input, exit codes, and the ink view in a real pseudo-terminal (script(1)).
 */

const products =
  'product_sku,name,brand,variant_sku,variant_name,price,attr:size\n' +
  'TEE,"Tee, classic",Acme,TEE-S,Small,12.50,S\n' +
  'TEE,,,TEE-M,Medium,12.50,M\n' +
  'MUG,Mug,,MUG-1,,8,\n';

const withErrors = 'product_sku,name,variant_sku,price\nLAMP,Lamp,LAMP-1,9.999\nLAMP,Lamp,LAMP-2,10\nDESK,Desk,DESK-1,-3\n';

const orders =
  'order_number,external_source,currency,customer_email,customer_name,sku,quantity,price\n' +
  '1001,shop,EUR,ann@example.com,Ann,TEE-S,2,12.50\n' +
  '1001,shop,,,,MUG-1,1,8\n' +
  '1002,shop,USD,bob@example.com,Bob,MUG-1,3,8\n';

/** A workspace `acme` on the backend under test, or in `backend` (a PGlite DATA_DIR for the tests of quoting serve's socket). */
async function setUp(t: ExecutionContext, backend?: Record<string, string>) {
  const env = backend ?? (await migratedBackend(t));
  const created = await runCli(['workspace', 'create', '--name', 'Acme', '--owner-email', 'owner@acme.test', '--slug', 'acme'], { env });
  if (created.code !== 0) throw new Error(created.stderr);
  const dir = tempDir(t, 'quoting-import-');
  const file = (name: string, text: string) => {
    const full = path.join(dir, name);
    fs.writeFileSync(full, text);
    return full;
  };
  return { env, file, dir };
}

/** The summary with its elapsed time masked ("in 0.4 s" -> "in … s"). */
const withoutTime = (text: string) => text.replace(/ in \d+(\.\d)? s\b/g, ' in … s');

/** Runs the CLI with `input` on its standard input. */
function runWithInput(args: string[], input: string, env: Record<string, string>): Promise<CliResult> {
  const child = spawn(process.execPath, [bin, ...args], { cwd: os.tmpdir(), env: cliEnv(env), stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  child.stdin.end(input);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr, errorLines: stderr.split('\n').filter(Boolean) }));
  });
}

test('plain mode: summary on stdout, progress on stderr; a re-import is unchanged; --json; exit 1 with failed rows', async (t) => {
  const { env, file } = await setUp(t);
  const csv = file('products.csv', products);
  const first = await runCli(['import', 'products', csv, '--workspace', 'acme'], { env });
  t.is(first.code, 0, first.stderr);
  t.regex(first.stdout.trim(), /^3 rows read from the products file in \d+\.\d s: 3 created, 0 updated, 0 unchanged \(rows\), 0 rows failed\.$/);
  t.regex(first.stderr, /^progress: 3 rows \(100 %\), 0 failed, \d+ rows\/s$/m);

  const again = await runCli(['import', 'products', csv, '--workspace', 'acme', '--json'], { env });
  t.is(again.code, 0, again.stderr);
  t.deepEqual(JSON.parse(again.stdout), { rows: 3, created: 0, updated: 0, unchanged: 3, failed: 0, skipped: 0, notes: [], errors: [] });

  const bad = file('bad.csv', withErrors);
  const dry = await runCli(['import', 'products', bad, '--workspace', 'acme', '--dry-run'], { env });
  t.is(dry.code, 1);
  t.deepEqual(withoutTime(dry.stdout).trim().split('\n'), [
    'Dry run (nothing written): 3 rows read from the products file in … s: 1 created, 0 updated, 0 unchanged (rows), 2 rows failed.',
    '  line 2, price: must have at most 2 decimal places.',
    '  line 4, price: must be zero or more.',
  ]);
  const abort = await runCli(['import', 'products', bad, '--workspace', 'acme', '--on-error', 'abort', '--json'], { env });
  t.is(abort.code, 1);
  t.like(JSON.parse(abort.stdout), { rows: 3, created: 1, failed: 2 });
  // Said to a person, an aborted import wrote nothing, and says no more than that about what it would have written.
  const aborted = await runCli(['import', 'products', bad, '--workspace', 'acme', '--on-error', 'abort'], { env });
  t.is(aborted.code, 1);
  t.deepEqual(withoutTime(aborted.stdout).trim().split('\n'), [
    'Nothing was imported: 2 of 3 rows read from the products file in … s failed (--on-error abort).',
    '  line 2, price: must have at most 2 decimal places.',
    '  line 4, price: must be zero or more.',
  ]);
  t.deepEqual(aborted.errorLines.filter((line) => !line.startsWith('progress: ')), ['error: 2 of 3 rows failed; nothing was written']);
  // Neither the dry run nor the aborted import wrote LAMP-2: it is still new.
  const skip = await runCli(['import', 'products', bad, '--workspace', 'acme', '--json'], { env });
  t.is(skip.code, 1);
  t.like(JSON.parse(skip.stdout), { rows: 3, created: 1, failed: 2 });
});

test('orders from standard input; usage errors exit 2; a missing file is one line naming it', async (t) => {
  const { env, dir } = await setUp(t);
  const first = await runWithInput(['import', 'orders', '-', '--workspace', 'acme', '--json'], orders, env);
  t.is(first.code, 0, first.stderr);
  t.deepEqual(JSON.parse(first.stdout), { rows: 3, created: 2, updated: 0, unchanged: 0, failed: 0, skipped: 0, notes: [], errors: [] });
  const again = await runWithInput(['import', 'orders', '-', '--workspace', 'acme'], orders, env);
  t.is(again.code, 0, again.stderr);
  t.regex(again.stdout.trim(), /^3 rows read from the orders file in \d+\.\d s: 0 created, 0 updated, 2 unchanged \(orders\), 0 rows failed\.$/);

  const missing = path.join(dir, 'nope.csv');
  const gone = await runCli(['import', 'orders', missing, '--workspace', 'acme'], { env });
  t.is(gone.code, 1);
  t.deepEqual(gone.errorLines, [`error: cannot read ${missing}: no such file`]);
  const directory = await runCli(['import', 'orders', dir, '--workspace', 'acme'], { env });
  t.deepEqual(directory.errorLines, [`error: cannot read ${dir}: it is a directory`]);
  const noWorkspace = await runCli(['import', 'orders', missing, '--workspace', 'nope', '--on-error', 'abort'], { env });
  t.is(noWorkspace.code, 1);

  for (const args of [['import', 'things', 'x.csv', '--workspace', 'acme'], ['import', 'orders', 'x.csv', '--workspace', 'acme', '--on-error', 'maybe'], ['import', 'orders', 'x.csv']]) {
    const usage = await runCli(args, { env });
    t.is(usage.code, 2, args.join(' '));
    t.is(usage.errorLines.length, 1);
  }
  const header = await runWithInput(['import', 'orders', '-', '--workspace', 'acme'], 'sku,quantity\nA,1\n', env);
  t.is(header.code, 1);
  t.deepEqual(header.errorLines, ['error: The CSV has no price column (required for an order import).']);
});

const terminalTest = testWhen(spawnSync('script', ['--version']).status === 0, 'needs script(1) from util-linux for a pseudo-terminal');

/** Runs `quoting <args>` in a pseudo-terminal 120 columns wide; the screen without escape sequences, and as written. */
async function onTerminal(args: string, env: Record<string, string | undefined>): Promise<{ code: number | null; screen: string; raw: string }> {
  const command = `stty cols 120 rows 40; exec ${process.execPath} ${bin} ${args}`;
  const result = await new Promise<{ code: number | null; out: string }>((resolve, reject) => {
    const child = spawn('script', ['-qefc', command, '/dev/null'], { cwd: os.tmpdir(), env: cliEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (out += c));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, out }));
  });
  // eslint-disable-next-line no-control-regex
  return { code: result.code, screen: result.out.replace(/\u001b\[[0-9;?]*[A-Za-z]/g, '').replace(/\r/g, ''), raw: result.out };
}

terminalTest('on a terminal: the ink view shows the bar, rows/s, failed and ETA, then the summary and the first errors', async (t) => {
  const { env, file } = await setUp(t);
  let many = 'product_sku,name,variant_sku,price\n';
  for (let i = 0; i < 3000; i++) many += `P-${i},Product ${i},P-${i}-V,${i % 100 === 7 ? 'oops' : '1.00'}\n`;
  const csv = file('many.csv', many);
  // A person's terminal: no CI variables (the CI system running this test may set them).
  const result = await onTerminal(`import products ${csv} --workspace acme`, { ...env, CI: undefined, CONTINUOUS_INTEGRATION: undefined });
  const screen = result.screen;
  t.is(result.code, 1, screen);
  t.regex(screen, /Importing products into acme/);
  t.regex(screen, /█+░* +\d+ % /);
  t.regex(screen, /\d+ rows · \d+ rows\/s · \d+ failed · ETA /);
  t.regex(screen, /3000 rows read from the products file in \d+(\.\d)? s: 2970 created, 0 updated, 0 unchanged \(rows\), 30 rows failed\./);
  t.regex(screen, /line 9, price: must be a decimal number such as "12.50"\./);
  t.regex(screen, /… and 10 more errors \(--json lists them all\)\./);
  t.notRegex(screen, /progress: /, 'no plain progress lines on a terminal');
});

terminalTest('on a terminal under a CI system (CI=true): plain progress lines, since a CI log keeps only a live view\'s last frame', async (t) => {
  const { env, file } = await setUp(t);
  const csv = file('products.csv', products);
  const result = await onTerminal(`import products ${csv} --workspace acme`, { ...env, CI: 'true' });
  t.is(result.code, 0, result.screen);
  t.regex(result.screen, /^progress: 3 rows \(100 %\), 0 failed, \d+ rows\/s$/m);
  t.regex(result.screen, /3 rows read from the products file in \d+\.\d s: 3 created, 0 updated, 0 unchanged \(rows\), 0 rows failed\./);
  t.notRegex(result.screen, /Importing products into acme/);
});

(usingPostgres ? embeddedTest : terminalTest)('while quoting serve holds the embedded database, the caller\'s terminal and CI variables decide the view', async (t) => {
  const { env, file } = await setUp(t);
  const person = { ...env, CI: undefined, CONTINUOUS_INTEGRATION: undefined };
  const csv = (name: string, sku: string) => file(name, products.replace(/TEE/g, sku));
  const plainLine = /^progress: 3 rows \(100 %\), 0 failed, \d+ rows\/s$/m;

  let server = await startServe(t, ['--port', String(await freePort())], { env: person });
  const live = await onTerminal(`import products ${csv('a.csv', 'CAP')} --workspace acme`, person);
  t.is(live.code, 0, live.screen);
  t.regex(live.screen, /Importing products into acme/);
  t.notRegex(live.screen, /progress: /);
  const underCi = await onTerminal(`import products ${csv('b.csv', 'HAT')} --workspace acme`, { ...env, CI: 'true' });
  t.is(underCi.code, 0, underCi.screen);
  t.regex(underCi.screen, plainLine, 'a CI caller gets plain lines from a server that is not under CI');
  t.notRegex(underCi.screen, /Importing products into acme/);
  t.deepEqual(await server.stop(), { code: 0, signal: null });

  // A server started under CI cannot draw a live view (ink reads CI from its own process): plain lines, not a vanished view.
  server = await startServe(t, ['--port', String(await freePort())], { env: { ...env, CI: 'true' } });
  const fromCiServer = await onTerminal(`import products ${csv('c.csv', 'BAG')} --workspace acme`, person);
  t.is(fromCiServer.code, 0, fromCiServer.screen);
  t.regex(fromCiServer.screen, plainLine);
  t.deepEqual(await server.stop(), { code: 0, signal: null });
});

/** A product file of `count` rows, every line the same length. */
function productRows(count: number): string {
  let text = 'product_sku,name,variant_sku,price\n';
  for (let i = 0; i < count; i++) text += `P-${String(i).padStart(6, '0')},Product,P-${String(i).padStart(6, '0')}-V,1.00\n`;
  return text;
}

terminalTest('on a terminal the bar moves with the rows imported, not with the bytes read ahead of them', async (t) => {
  const { env, file } = await setUp(t);
  const total = 10_000;
  const csv = file('rows.csv', productRows(total));
  const result = await onTerminal(`import products ${csv} --workspace acme`, { ...env, CI: undefined, CONTINUOUS_INTEGRATION: undefined });
  t.is(result.code, 0, result.screen);
  const frames = [...result.screen.matchAll(/ +(\d+) % (\d+) rows · /g)].map((m) => ({ percent: Number(m[1]), rows: Number(m[2]) }));
  const during = frames.filter((f) => f.rows > 0 && f.rows < total);
  t.true(during.length > 0, `a frame while the import ran: ${JSON.stringify(frames)}`);
  for (const frame of frames) t.true(Math.abs(frame.percent - (frame.rows / total) * 100) <= 3, `${frame.percent} % at ${frame.rows} of ${total} rows`);
  t.regex(result.screen, new RegExp(`${total} rows read from the products file in \\d+(\\.\\d)? s: ${total} created`));
});

terminalTest('through quoting serve, the ink view keeps the colours of the caller\'s terminal', async (t) => {
  t.timeout(600_000);
  const { env, file } = await setUp(t, { DATA_DIR: await migratedDataDir(t) });
  const person = { ...env, CI: undefined, CONTINUOUS_INTEGRATION: undefined, NO_COLOR: undefined, FORCE_COLOR: undefined, TERM: 'xterm-256color' };
  // Each colour the view uses opens with an SGR sequence: green for a clean summary, cyan for the bar.
  const green = '\u001b[32m';
  const alone = await onTerminal(`import products ${file('alone.csv', products)} --workspace acme`, person);
  t.is(alone.code, 0, alone.screen);
  t.true(alone.raw.includes(green), 'run alone, the summary is green');

  // A server under a CI system shows plain lines whatever the caller's terminal; this one runs where a person would run it.
  const server = await startServe(t, ['--port', String(await freePort())], { env: { DATA_DIR: env.DATA_DIR, CI: undefined, CONTINUOUS_INTEGRATION: undefined } });
  const served = await onTerminal(`import products ${file('served.csv', products.replace(/TEE/g, 'CAP'))} --workspace acme`, person);
  t.is(served.code, 0, served.screen);
  t.regex(served.screen, /Importing products into acme/);
  t.true(served.raw.includes(green), 'run through the server, the summary is green too');
  const mono = await onTerminal(`import products ${file('mono.csv', products.replace(/TEE/g, 'HAT'))} --workspace acme`, { ...person, NO_COLOR: '1' });
  t.is(mono.code, 0, mono.screen);
  t.false(/\u001b\[3\dm/.test(mono.raw), 'a terminal without colours (NO_COLOR) gets none');
  t.deepEqual(await server.stop(), { code: 0, signal: null });
});

/** Runs `quoting <args>` with `file` open as its fd 3, so that /dev/fd/3 names it in this process and nothing (or something else) in any other. */
function runWithFd3(args: string[], file: string, env: Record<string, string>, cwd: string): Promise<CliResult> {
  const fd = fs.openSync(file, 'r');
  const child = spawn(process.execPath, ['--', bin, ...args], { cwd, env: cliEnv(env), stdio: ['ignore', 'pipe', 'pipe', fd] });
  fs.closeSync(fd);
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (c: string) => (stdout += c));
  child.stderr!.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  const timer = setTimeout(() => child.kill('SIGKILL'), 180_000);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, errorLines: stderr.split('\n').filter(Boolean) });
    });
  });
}

test('through quoting serve, the CLI reads the file itself and streams it: a path only the caller can open, a path relative to the caller\'s directory', async (t) => {
  t.timeout(600_000);
  const { env, file, dir } = await setUp(t, { DATA_DIR: await migratedDataDir(t) });
  const server = await startServe(t, ['--port', String(await freePort())], { env: { DATA_DIR: env.DATA_DIR }, cwd: tempDir(t) });

  // /dev/fd/3 is this process's fd 3: in the server, the same path is one of its own descriptors (or none).
  const byFd = await runWithFd3(['import', 'products', '/dev/fd/3', '--workspace', 'acme', '--json'], file('fd.csv', products), env, os.tmpdir());
  t.is(byFd.code, 0, byFd.stderr);
  t.deepEqual(JSON.parse(byFd.stdout), { rows: 3, created: 3, updated: 0, unchanged: 0, failed: 0, skipped: 0, notes: [], errors: [] });

  // Relative to the caller's directory, which is not the server's.
  file('relative.csv', products.replace(/TEE/g, 'CAP').replace(/MUG/g, 'BOWL'));
  const relative = await runCli(['import', 'products', 'relative.csv', '--workspace', 'acme', '--json'], { env, cwd: dir });
  t.is(relative.code, 0, relative.stderr);
  t.like(JSON.parse(relative.stdout), { rows: 3, created: 3 });

  // A file the caller cannot read is its own one-line error.
  const missing = await runCli(['import', 'products', 'nope.csv', '--workspace', 'acme'], { env, cwd: dir });
  t.is(missing.code, 1);
  t.deepEqual(missing.errorLines, ['error: cannot read nope.csv: no such file']);
  const directory = await runCli(['import', 'products', '.', '--workspace', 'acme'], { env, cwd: dir });
  t.deepEqual(directory.errorLines, ['error: cannot read .: it is a directory']);
  t.deepEqual(await server.stop(), { code: 0, signal: null });
});
