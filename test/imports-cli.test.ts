import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { bin, cliEnv, freePort, migratedBackend, runCli as runCliWithin, startServe, tempDir, usingPostgres, type CliOptions, type CliResult } from './helpers/cli.js';
import { embeddedTest, testWhen } from './helpers/skip.js';

/** Generous: the machine may be busy; nothing here measures time. */
const runCli = (args: string[], options: CliOptions = {}) => runCliWithin(args, { timeoutMs: 180_000, ...options });

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

async function setUp(t: ExecutionContext) {
  const env = await migratedBackend(t);
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
  t.is(first.stdout.trim(), '3 rows read from the products file: 3 created, 0 updated, 0 unchanged (rows), 0 rows failed.');
  t.regex(first.stderr, /^progress: 3 rows \(100 %\), 0 failed, \d+ rows\/s$/m);

  const again = await runCli(['import', 'products', csv, '--workspace', 'acme', '--json'], { env });
  t.is(again.code, 0, again.stderr);
  t.deepEqual(JSON.parse(again.stdout), { rows: 3, created: 0, updated: 0, unchanged: 3, failed: 0, errors: [] });

  const bad = file('bad.csv', withErrors);
  const dry = await runCli(['import', 'products', bad, '--workspace', 'acme', '--dry-run'], { env });
  t.is(dry.code, 1);
  t.deepEqual(dry.stdout.trim().split('\n'), [
    'Dry run (nothing written): 3 rows read from the products file: 1 created, 0 updated, 0 unchanged (rows), 2 rows failed.',
    '  line 2, price: must have at most 2 decimal places.',
    '  line 4, price: must be zero or more.',
  ]);
  const abort = await runCli(['import', 'products', bad, '--workspace', 'acme', '--on-error', 'abort', '--json'], { env });
  t.is(abort.code, 1);
  t.like(JSON.parse(abort.stdout), { rows: 3, created: 1, failed: 2 });
  // Neither the dry run nor the aborted import wrote LAMP-2: it is still new.
  const skip = await runCli(['import', 'products', bad, '--workspace', 'acme', '--json'], { env });
  t.is(skip.code, 1);
  t.like(JSON.parse(skip.stdout), { rows: 3, created: 1, failed: 2 });
});

test('orders from standard input; usage errors exit 2; a missing file is one line naming it', async (t) => {
  const { env, dir } = await setUp(t);
  const first = await runWithInput(['import', 'orders', '-', '--workspace', 'acme', '--json'], orders, env);
  t.is(first.code, 0, first.stderr);
  t.deepEqual(JSON.parse(first.stdout), { rows: 3, created: 2, updated: 0, unchanged: 0, failed: 0, errors: [] });
  const again = await runWithInput(['import', 'orders', '-', '--workspace', 'acme'], orders, env);
  t.is(again.code, 0, again.stderr);
  t.is(again.stdout.trim(), '3 rows read from the orders file: 0 created, 0 updated, 2 unchanged (orders), 0 rows failed.');

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

/** Runs `quoting <args>` in a pseudo-terminal 120 columns wide; the screen without escape sequences. */
async function onTerminal(args: string, env: Record<string, string | undefined>): Promise<{ code: number | null; screen: string }> {
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
  return { code: result.code, screen: result.out.replace(/\u001b\[[0-9;?]*[A-Za-z]/g, '').replace(/\r/g, '') };
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
  t.regex(screen, /3000 rows read from the products file: 2970 created, 0 updated, 0 unchanged \(rows\), 30 rows failed\./);
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
  t.regex(result.screen, /3 rows read from the products file: 3 created, 0 updated, 0 unchanged \(rows\), 0 rows failed\./);
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
