/** Shared pieces of the benchmark scripts: statistics, a table printer, a throwaway database, child servers, forked helpers and workers. */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import type { Knex } from 'knex';
import { openDatabase, type Database } from '../src/db/database.js';
import { migrateLatest } from '../src/db/migrations.js';
import { WEBHOOK_CHANNEL } from '../src/events/outbox.js';

/** The repository root (the scripts run from dist/bench/). */
export const root = fileURLToPath(new URL('../../', import.meta.url));
export const bin = fileURLToPath(new URL('../../bin/quoting', import.meta.url));

// ---------------------------------------------------------------- the machine

/** The 1-, 5- and 15-minute load averages, as every benchmark prints them beside its figures. */
export const loadAverage = () => os.loadavg().map((l) => l.toFixed(2)).join(' ');

const TICK_MS = 10; // USER_HZ is 100 on Linux

/**
 * user + system CPU milliseconds a process has used (with `mainThread`, its main thread alone), from /proc/<pid>/stat;
 * NaN where that cannot be read (the process has ended, or there is no /proc). The fields are counted from the last
 * ')', since the command name before it may hold spaces and parentheses.
 */
export function cpuMs(pid: number | undefined, mainThread = false): number {
  try {
    const stat = fs.readFileSync(mainThread ? `/proc/${pid}/task/${pid}/stat` : `/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
  } catch {
    return NaN;
  }
}

// ---------------------------------------------------------------- statistics

/** Nearest-rank percentile of unsorted samples (q in 0..100). */
export function percentile(samples: number[], q: number): number {
  if (samples.length === 0) return NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.ceil((q / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
}

export const median = (samples: number[]) => percentile(samples, 50);
export const ms = (value: number, digits = 1) => `${value.toFixed(digits)} ms`;
/** A figure as the tables print it by default: whole from 100 up, one decimal below. */
export const fmt = (value: number) => (value >= 100 ? value.toFixed(0) : value.toFixed(1));
/** `min / median / max` of samples, each with `digits` decimals (as fmt prints it without). */
export function spread(samples: number[], digits?: number): string {
  const figure = digits === undefined ? fmt : (value: number) => value.toFixed(digits);
  return `${figure(Math.min(...samples))} / ${figure(median(samples))} / ${figure(Math.max(...samples))}`;
}

// ---------------------------------------------------------------- output

/** Prints rows as an aligned text table; the first row is the header. */
export function printTable(title: string, rows: (string | number)[][]): void {
  const cells = rows.map((row) => row.map(String));
  const widths = cells[0].map((_, i) => Math.max(...cells.map((row) => (row[i] ?? '').length)));
  const line = (row: string[]) => row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join('  ');
  console.log(`\n${title}`);
  console.log(line(cells[0]));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const row of cells.slice(1)) console.log(line(row));
}

export function note(text: string): void {
  console.log(text);
}

// ---------------------------------------------------------------- cleanup

const cleanups: (() => Promise<void>)[] = [];

/** Registers a cleanup step; steps run last-registered first, on success, failure or Ctrl-C. */
export function onCleanup(step: () => Promise<void>): void {
  cleanups.push(step);
}

let cleaning: Promise<void> | undefined;

/** Runs the cleanup steps once, however many times it is called (Ctrl-C and a failing run may race). */
function runCleanups(): Promise<void> {
  cleaning ??= (async () => {
    while (cleanups.length) {
      try {
        await cleanups.pop()!();
      } catch (err) {
        console.error(`cleanup failed: ${(err as Error).message}`);
      }
    }
  })();
  return cleaning;
}

/** Runs a benchmark, always cleans up, and exits by itself (0; 1 on error; 130 on Ctrl-C). */
export function runBench(main: () => Promise<void>): void {
  let interrupted = false;
  process.once('SIGINT', () => {
    interrupted = true;
    console.error('\ninterrupted; cleaning up');
    void runCleanups().then(() => process.exit(130));
  });
  main()
    .catch((err) => {
      if (interrupted) return; // the servers were stopped under it; not a failure worth a stack
      console.error(`benchmark failed: ${(err as Error).stack ?? err}`);
      process.exitCode = 1;
    })
    .then(runCleanups)
    .then(() => {
      if (!interrupted) process.exit();
    });
}

// ---------------------------------------------------------------- options

type BenchOptions = NonNullable<ParseArgsConfig['options']>;

/** The options' lines of a usage text: each with its value's default. */
function optionLines(options: BenchOptions): string[] {
  return Object.entries(options).map(([name, option]) => {
    const value = option.type === 'string' ? ' <value>' : '';
    const fallback = option.default === undefined || option.default === false ? '' : `  (default: ${option.default})`;
    return `  --${name}${value}${fallback}`;
  });
}

/**
 * The script's options, parsed (node:util parseArgs, strict). `--help` prints them with their defaults and exits 0;
 * an unknown option or a missing value says which and prints them too, exit 2 (parseArgs alone threw a stack trace).
 * What the script measures is in bench/README.md and in its opening comment.
 */
export function benchArgs<T extends BenchOptions>(script: string, options: T) {
  const usage = () => [`usage: node dist/bench/${script} [options]   (bench/README.md says what it measures)`, ...optionLines(options), '  --help'].join('\n');
  if (process.argv.slice(2).includes('--help')) {
    console.log(usage());
    process.exit(0);
  }
  try {
    return parseArgs({ options });
  } catch (err) {
    console.error(`${(err as Error).message}\n${usage()}`);
    process.exit(2);
  }
}

// ---------------------------------------------------------------- database

/** The PostgreSQL server to create the throwaway database on. */
export const baseDatabaseUrl =
  process.env.BENCH_DATABASE_URL || process.env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';

/**
 * A fresh, migrated PostgreSQL database (copied from the test suite's migrated template), dropped at cleanup.
 * Returns its connection string for the server process.
 */
export async function freshPostgresUrl(): Promise<string> {
  process.env.TEST_DATABASE_URL = baseDatabaseUrl; // read by the helper when it loads
  const { freshDatabase } = await import('../test/helpers/database.js');
  const database = await freshDatabase();
  onCleanup(() => database.close()); // closes this process's (idle) pool and drops the database, with force
  return database.url!;
}

// ---------------------------------------------------------------- the embedded default

/** The `--rounds` option of a script that alternates baseline and app: a whole number, at least 3 (min / median / max). */
export function roundsOption(text: string): number {
  const rounds = Number(text);
  if (!(Number.isInteger(rounds) && rounds >= 3)) throw new Error('--rounds: at least 3');
  return rounds;
}

/** The databases a script runs on, from its `--db` option (`postgres,embedded`, the default of each script). */
export type DbKind = 'postgres' | 'embedded';

export function databasesOption(text: string): DbKind[] {
  const kinds = text.split(',').map((k) => k.trim()).filter(Boolean);
  for (const kind of kinds) if (kind !== 'postgres' && kind !== 'embedded') throw new Error(`--db: "${kind}" is neither postgres nor embedded`);
  return kinds as DbKind[];
}

export const dbName = (kind: DbKind) => (kind === 'postgres' ? 'PostgreSQL' : 'embedded (PGlite)');

/** An empty directory for an embedded database, removed at cleanup. */
export function tempDataDir(label = 'embedded'): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `quoting-bench-${label}-`));
  onCleanup(async () => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

let template: Promise<string> | undefined;

/**
 * A fresh data directory holding a migrated, empty embedded database, removed at cleanup: a copy of one migrated
 * once per run (migrating takes tens of seconds on a busy machine, copying a fraction of a second).
 */
export async function freshDataDir(label = 'embedded'): Promise<string> {
  template ??= (async () => {
    const dir = tempDataDir('template');
    await withDataDir(dir, async () => {});
    return dir;
  })();
  return copyDataDir(await template, label);
}

/** A copy of a data directory (its server stopped), removed at cleanup: one process may open a data directory. */
export function copyDataDir(source: string, label: string): string {
  const dir = tempDataDir(label);
  fs.cpSync(source, dir, { recursive: true });
  return dir;
}

/**
 * Opens the embedded database in `dataDir` in this process (migrated first), runs `work` on it and closes it.
 * The data directory admits one process: no server may hold it meanwhile.
 */
export async function withDataDir<T>(dataDir: string, work: (database: Database) => Promise<T>): Promise<T> {
  const database = await openDatabase({ dataDir });
  try {
    await migrateLatest(database.knex);
    return await work(database);
  } finally {
    await database.close();
  }
}

// ---------------------------------------------------------------- child servers

export interface ChildServer {
  url: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

/**
 * BENCH_NODE_ARGS: options for the Node of every child a benchmark starts (servers, workers, receivers, baselines),
 * e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile them; not the benchmark's own.
 */
const nodeArgs = process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? [];

/**
 * Starts a server as a child process and waits for it to print its address
 * (`http://host:port` on stdout). Stopped with SIGTERM at cleanup.
 */
export async function startChild(args: string[], env: NodeJS.ProcessEnv, what: string, timeoutMs = 30_000): Promise<ChildServer> {
  const child = spawn(process.execPath, [...nodeArgs, ...args], { cwd: root, env, stdio: ['ignore', 'pipe', 'inherit'] });
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  };
  onCleanup(stop);
  const url = await new Promise<string>((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => reject(new Error(`${what} did not start within ${timeoutMs / 1000} s; output: ${output}`)), timeoutMs);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /http:\/\/[\w.:[\]-]+:\d+/.exec(output);
      if (match) {
        clearTimeout(timer);
        child.stdout!.off('data', onData);
        child.stdout!.resume(); // keep draining whatever else it prints
        resolve(match[0]);
      }
    };
    child.stdout!.on('data', onData);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited early (${signal ?? code}); output: ${output}`));
    });
  });
  return { url, child, stop };
}

/** `quoting serve` (this build's, or `quoting` given) on a free port over the given database, logging warnings and errors only. */
export function startQuoting(databaseUrl: string, extraEnv: NodeJS.ProcessEnv = {}, quoting = bin): Promise<ChildServer> {
  const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn', HOST: '127.0.0.1', ...extraEnv };
  delete env.QUOTING_ENV_FILE;
  delete env.PORT;
  delete env.APP_URL;
  delete env.DATA_DIR;
  return startChild([quoting, 'serve', '--port', '0'], env, `quoting serve${quoting === bin ? '' : ` (${quoting})`}`);
}

/**
 * `quoting serve` (this build's, or `quoting` given) on the embedded database in `dataDir`, on a free port, logging
 * warnings and errors only. A directory not migrated yet is migrated by the server as it starts: minutes on a busy
 * machine, hence the long wait (freshDataDir() gives a migrated one).
 */
export function startEmbedded(dataDir: string, extraEnv: NodeJS.ProcessEnv = {}, quoting = bin): Promise<ChildServer> {
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'warn', HOST: '127.0.0.1', ...extraEnv };
  for (const name of ['QUOTING_ENV_FILE', 'PORT', 'APP_URL', 'DATABASE_URL']) delete env[name];
  return startChild([quoting, 'serve', '--port', '0'], env, `quoting serve (embedded${quoting === bin ? '' : `, ${quoting}`})`, 300_000);
}

/** Where a script's server runs: a PostgreSQL database, or an embedded data directory. */
export type Target = { kind: 'postgres'; url: string } | { kind: 'embedded'; dataDir: string };

/** A fresh, migrated database of that kind (dropped or removed at cleanup). */
export async function freshTarget(kind: DbKind): Promise<Target> {
  return kind === 'postgres' ? { kind, url: await freshPostgresUrl() } : { kind, dataDir: await freshDataDir() };
}

export function startServe(target: Target, extraEnv: NodeJS.ProcessEnv = {}): Promise<ChildServer> {
  return target.kind === 'postgres' ? startQuoting(target.url, extraEnv) : startEmbedded(target.dataDir, extraEnv);
}

// ---------------------------------------------------------------- helper processes and workers

export interface Forked {
  child: ChildProcess;
  /** The next message of this type (listen before triggering it); a `{type: 'failed', error}` from the child rejects it. */
  next<T>(type: string, timeoutMs: number): Promise<T>;
}

/** Forks a bench script with an IPC channel; killed at cleanup. */
export async function forkScript(script: string, what: string, readyType: string): Promise<Forked & { ready: any }> {
  const child = fork(fileURLToPath(new URL(script, import.meta.url)), [], { cwd: root, execArgv: nodeArgs, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  onCleanup(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  });
  const next = <T>(type: string, timeoutMs: number) =>
    new Promise<T>((resolve, reject) => {
      const onMessage = (message: { type: string; error?: string }) => {
        if (message.type !== type && message.type !== 'failed') return;
        done();
        if (message.type === 'failed') reject(new Error(`${what}: ${message.error}`));
        else resolve(message as T);
      };
      const onExit = (code: number | null, signal: string | null) => {
        done();
        reject(new Error(`${what} exited (${signal ?? code}) while waiting for "${type}"`));
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`${what}: no "${type}" within ${timeoutMs / 1000} s`));
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        child.off('message', onMessage);
        child.off('exit', onExit);
      };
      child.on('message', onMessage);
      child.once('exit', onExit);
    });
  const ready = await next<any>(readyType, 30_000);
  return { child, next, ready };
}

export interface Worker {
  child: ChildProcess;
  stop(): Promise<void>;
}

/**
 * `node bin/quoting worker --watch` over the database; resolves once it has printed its banner and its
 * LISTEN connection is up (seen in pg_stat_activity), so the first NOTIFY reaches it.
 */
export async function startWorker(knex: Knex, databaseUrl: string, extraEnv: NodeJS.ProcessEnv): Promise<Worker> {
  const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn', OUTBOUND_ALLOWED_CIDRS: '127.0.0.0/8', ...extraEnv };
  delete env.QUOTING_ENV_FILE;
  const { rows: [{ since }] } = await knex.raw('select clock_timestamp() as since');
  const child = spawn(process.execPath, [...nodeArgs, bin, 'worker', '--watch'], { cwd: root, env, stdio: ['ignore', 'pipe', 'inherit'] });
  let exited = false;
  const exit = new Promise<void>((resolve) => child.once('exit', () => ((exited = true), resolve())));
  const stop = async () => {
    if (exited) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exit;
    clearTimeout(timer);
  };
  onCleanup(stop);
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (exited) throw new Error(`quoting worker exited early; output: ${output}`);
    if (Date.now() > deadline) throw new Error(`quoting worker not listening within 30 s; output: ${output}`);
    if (output.includes('Watching for deliveries')) {
      const { rows: [{ n }] } = await knex.raw(
        `select count(*)::int as n from pg_stat_activity
         where datname = current_database() and application_name = ? and backend_start >= ? and query ilike 'LISTEN%'`,
        [`quoting-listen-${WEBHOOK_CHANNEL}`, since],
      );
      if (n > 0) return { child, stop };
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

// ---------------------------------------------------------------- HTTP

export interface Account {
  email: string;
  password: string;
  cookie: string;
}

/** Signs up a user with a workspace and returns the session cookie (`quoting_session=…`). */
export async function signUp(baseUrl: string): Promise<Account> {
  const email = `bench.${process.pid}.${Date.now()}@example.com`;
  const password = 'correct horse battery staple';
  const res = await fetch(`${baseUrl}/api/v1/auth/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password, name: 'Bench User', workspace_name: 'Bench Co' }),
  });
  const text = await res.text();
  if (res.status !== 201) throw new Error(`signup failed: ${res.status} ${text}`);
  const cookie = res.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .find((pair) => pair.startsWith('quoting_session='));
  if (!cookie) throw new Error('signup set no quoting_session cookie');
  return { email, password, cookie };
}

// ---------------------------------------------------------------- seeded deliveries

/**
 * Seeded webhook traffic for round r: events with ids `evt_<letter><rrr>_<21 digits>` (the 30-character shape of
 * real ids). The letter (U, P, …) is not in the Crockford alphabet of real ids (src/events/outbox.ts), so seeded
 * events never share a prefix with emitted ones, and each benchmark has its own.
 */
export function seededDeliveries(letter: string) {
  const prefix = (round: number) => `evt_${letter}${String(round).padStart(3, '0')}_`;
  return {
    prefix,
    /** N customer.created events shaped as the API emits them (`{customer: {...}}`), no deliveries yet. */
    async seedEvents(knex: Knex, workspaceId: number, round: number, n: number): Promise<void> {
      await knex.raw(
        `insert into events (id, workspace_id, type, data)
         select ? || lpad(i::text, 21, '0'), ?, 'customer.created',
           json_build_object('customer', json_build_object(
             'id', ? * 1000000 + i, 'email', 'bench.r' || ? || '.' || i || '@example.com', 'name', 'Bench Customer ' || i,
             'company', 'Bench Co', 'phone', '+1 555 0100', 'country', 'US', 'notes', null,
             'created_at', iso_time(now()), 'updated_at', iso_time(now())))
         from generate_series(1, ?) i`,
        [prefix(round), workspaceId, round, round, n],
      );
    },
    /** One due delivery per event of the round, and the workers woken, in one transaction (as the outbox's fan-out does). */
    async seedDeliveries(knex: Knex, workspaceId: number, subscriptionId: number, round: number): Promise<void> {
      await knex.transaction(async (trx) => {
        await trx.raw(
          `insert into webhook_deliveries (workspace_id, subscription_id, event_id, event_type)
           select ?, ?, id, type from events where left(id, 9) = ? order by id`,
          [workspaceId, subscriptionId, prefix(round)],
        );
        await trx.raw('select pg_notify(?, ?)', [WEBHOOK_CHANNEL, '']);
      });
    },
  };
}
