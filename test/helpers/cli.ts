import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ExecutionContext } from 'ava';
import knexFactory from 'knex';
import { configSchema } from '../../src/config.js';
import { openPostgres } from '../../src/db/database.js';
import { migrateLatest } from '../../src/db/migrations.js';
import { usingPooler, usingPostgres, withDatabase } from './database.js';
import { PATIENCE_MS } from './patience.js';

export { usingPostgres };
export { postgresTest } from './skip.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
export const bin = path.join(root, 'bin', 'quoting');

/** The compiled migrations, by the name they are tracked under. */
export const migrationNames = fs
  .readdirSync(path.join(root, 'dist', 'migrations'))
  .filter((file) => file.endsWith('.js'))
  .sort()
  .map((file) => file.replace(/\.js$/, ''));

/**
 * The environment of a spawned CLI: this one minus every setting of the program (so neither the
 * test runner's DATABASE_URL nor an env file leaks in), with LOG_LEVEL=warn, plus `extra`.
 */
export function cliEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const key of [...Object.keys(configSchema.shape), 'TEST_DATABASE_URL', 'QUOTING_ENV_FILE']) delete env[key];
  for (const key of Object.keys(env)) if (key.startsWith('npm_')) delete env[key];
  env.LOG_LEVEL = 'warn';
  // Databases of this run are reached through a transaction pooler (TEST_POOLER): so are the CLI's.
  if (usingPooler) env.DATABASE_POOLER = 'transaction';
  for (const [key, value] of Object.entries(extra)) {
    if (value === undefined) delete env[key];
    else env[key] = value;
  }
  // And LISTEN goes to PostgreSQL itself, as README's Scaling recommends (test/cli/pooler.test.ts runs without it).
  if (usingPooler && env.DATABASE_URL && !('DATABASE_LISTEN_URL' in extra)) {
    const direct = new URL(env.DATABASE_URL);
    const base = new URL(process.env.TEST_DATABASE_URL!);
    direct.hostname = base.hostname;
    direct.port = base.port;
    env.DATABASE_LISTEN_URL = direct.toString();
  }
  return env;
}

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** stderr split into its non-empty lines. */
  errorLines: string[];
}

export interface CliOptions {
  /** Added to cliEnv(); undefined removes a variable. */
  env?: Record<string, string | undefined>;
  /** Defaults to the temp directory, so a missing DATA_DIR never lands in the repository. */
  cwd?: string;
  timeoutMs?: number;
  /** Written to the command's stdin (otherwise stdin is closed). */
  input?: string;
  /** The launcher to run: this checkout's bin/quoting unless given (a copy of the program elsewhere). */
  bin?: string;
}

function spawnCli(args: string[], options: CliOptions): ChildProcess {
  // As the launcher's shebang does: `--` keeps Node 20 from taking the program's own --env-file (nodejs/node#54232).
  return spawn(process.execPath, ['--', options.bin ?? bin, ...args], {
    cwd: options.cwd ?? os.tmpdir(),
    env: cliEnv(options.env),
    stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
  });
}

/** runCli for imports, which read whole files: a hang guard of 180 s, since the machine may be busy (nothing measures time). */
export const runImportCli = (args: string[], options: CliOptions = {}) => runCli(args, { timeoutMs: 180_000, ...options });

/** Runs `quoting <args>` to completion; killed (code null) after `timeoutMs` (a hang guard, PATIENCE_MS by default). */
export function runCli(args: string[], options: CliOptions = {}): Promise<CliResult> {
  const child = spawnCli(args, options);
  if (options.input !== undefined) child.stdin!.end(options.input);
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? PATIENCE_MS);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, errorLines: stderr.split('\n').filter((line) => line.trim() !== '') });
    });
  });
}

export interface Server {
  pid: number;
  url: string;
  /** The "listening on" line. */
  banner: string;
  output(): { stdout: string; stderr: string };
  /** Sends `signal` and waits for the exit (SIGKILL after PATIENCE_MS). */
  stop(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts `quoting serve <args>` and waits for its banner; the process is always killed in the test's teardown. */
export async function startServe(t: ExecutionContext, args: string[], options: CliOptions = {}): Promise<Server> {
  const child = spawnCli(['serve', ...args], options);
  let stdout = '';
  let stderr = '';
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('close', (code, signal) => resolve({ code, signal })),
  );
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  const banner = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`quoting serve did not start within ${options.timeoutMs ?? PATIENCE_MS} ms: ${stderr}`)), options.timeoutMs ?? PATIENCE_MS);
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      const line = stdout.split('\n').find((l) => / listening on http:\/\//.test(l));
      if (line) {
        clearTimeout(timer);
        resolve(line);
      }
    });
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`quoting serve exited (${code ?? signal}) before listening: ${stderr.trim()}`));
    });
  });
  return {
    pid: child.pid!,
    url: / listening on (http:\/\/\S+)/.exec(banner)![1],
    banner,
    output: () => ({ stdout, stderr }),
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), PATIENCE_MS);
      const result = await exited;
      clearTimeout(timer);
      return result;
    },
  };
}

/** A port that was free a moment ago. */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A new empty directory, removed after the test. */
export function tempDir(t: ExecutionContext, prefix = 'quoting-cli-'): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A DATA_DIR path that does not exist yet (the CLI creates it), removed after the test. */
export function newDataDir(t: ExecutionContext): string {
  return path.join(tempDir(t), 'data');
}

let template: Promise<string> | undefined;

/** A migrated PGlite data directory, made once per process by `quoting migrate` (a first start takes seconds). */
function migratedTemplate(): Promise<string> {
  template ??= (async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quoting-cli-template-'));
    process.once('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
    // Generous: a first PGlite start takes seconds alone, and far longer on a loaded machine.
    const result = await runCli(['migrate'], { env: { DATA_DIR: dir }, timeoutMs: 300_000 });
    if (result.code !== 0) throw new Error(`could not prepare a migrated data directory: ${result.stderr}`);
    return dir;
  })();
  return template;
}

/** A copy of a migrated PGlite data directory for this test alone. */
export async function migratedDataDir(t: ExecutionContext): Promise<string> {
  const dir = newDataDir(t);
  fs.cpSync(await migratedTemplate(), dir, { recursive: true });
  return dir;
}

/** A new PostgreSQL database on TEST_DATABASE_URL (empty, or migrated), dropped after the test. */
export async function scratchPostgres(t: ExecutionContext, options: { migrated: boolean }): Promise<string> {
  const base = process.env.TEST_DATABASE_URL!;
  const name = `quoting_cli_${crypto.randomBytes(6).toString('hex')}`;
  const admin = knexFactory({ client: 'pg', connection: base, pool: { min: 0, max: 1 } });
  try {
    await admin.raw('create database ??', [name]);
  } finally {
    await admin.destroy();
  }
  t.teardown(async () => {
    const cleanup = knexFactory({ client: 'pg', connection: base, pool: { min: 0, max: 1 } });
    try {
      await cleanup.raw('drop database if exists ?? with (force)', [name]);
    } finally {
      await cleanup.destroy();
    }
  });
  const url = withDatabase(base, name);
  if (options.migrated) {
    const db = openPostgres(url, 1);
    try {
      await migrateLatest(db.knex);
    } finally {
      await db.close();
    }
  }
  return url;
}

/**
 * The database settings for a spawned CLI on the backend under test: a migrated scratch PostgreSQL
 * database with TEST_DATABASE_URL, otherwise a copy of a migrated PGlite data directory.
 */
export async function migratedBackend(t: ExecutionContext): Promise<Record<string, string>> {
  if (usingPostgres) return { DATABASE_URL: await scratchPostgres(t, { migrated: true }) };
  return { DATA_DIR: await migratedDataDir(t) };
}
