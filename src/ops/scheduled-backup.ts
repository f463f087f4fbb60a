/**
 * Scheduled backups (README, Scheduled backups): a backup into BACKUP_DIR under a name with its UTC time, the oldest
 * beyond BACKUP_KEEP removed, and the outcome recorded for `quoting doctor` (DATA_DIR/last-backup.json) and /metrics
 * (ops_counters). `quoting serve` runs it on BACKUP_SCHEDULE on the embedded database; `quoting backup` without
 * --out runs it once (the installer's timer on PostgreSQL).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { createTask, type ScheduledTask } from 'node-cron';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import { addCounts } from '../db/ops-counters.js';
import { errorFields, log } from '../log.js';
import { dumpEmbedded, pgDump, writeAtomically } from './backup.js';

/** quoting-2026-11-27T030000Z.backup, or with -2, -3 ... when one of that second exists already. */
const NAME = /^quoting-(\d{4}-\d{2}-\d{2}T\d{6}Z)(?:-(\d{1,4}))?\.backup$/;

/** What the last scheduled backup did, as DATA_DIR/last-backup.json holds it. */
export interface LastBackup {
  /** When it finished (ISO). */
  at: string;
  ok: boolean;
  /** The file written (ok) or being written (failed). */
  file: string;
  bytes?: number;
  /** Why it failed: one line, no secret (the database URL never appears in it). */
  error?: string;
  /** The last one that succeeded, kept across failures. */
  lastSuccess?: { at: string; file: string };
}

export interface BackupDone {
  file: string;
  bytes: number;
  removed: string[];
}

/** Thrown when a backup is asked for while this process runs one already. */
export class BackupBusy extends Error {}

/** A backup that failed, recorded and logged already. */
export class BackupFailed extends Error {}

export const lastBackupFile = (config: Pick<Config, 'DATA_DIR'>): string => path.join(path.resolve(config.DATA_DIR), 'last-backup.json');

export function readLastBackup(config: Pick<Config, 'DATA_DIR'>): LastBackup | undefined {
  try {
    return JSON.parse(fs.readFileSync(lastBackupFile(config), 'utf8')) as LastBackup;
  } catch {
    return undefined;
  }
}

/** Replaced whole (a reader never sees half a file), readable by its owner only. */
function writeLastBackup(config: Pick<Config, 'DATA_DIR'>, state: LastBackup): void {
  const file = lastBackupFile(config);
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.${crypto.randomBytes(4).toString('hex')}.partial`;
  fs.writeFileSync(tmp, `${JSON.stringify(state)}\n`, { mode: 0o600 });
  fs.renameSync(tmp, file);
}

/** A name for a backup finished at `date`, not taken yet in `dir`. */
function freshName(dir: string, date: Date): string {
  const stamp = date.toISOString().replace(/\.\d{3}Z$/, 'Z').replace(/:/g, '');
  for (let n = 1; ; n++) {
    const name = `quoting-${stamp}${n === 1 ? '' : `-${n}`}.backup`;
    if (!fs.existsSync(path.join(dir, name))) return path.join(dir, name);
  }
}

/** The backups in `dir` this program named, oldest first (by the time in the name, then its number). */
export function listBackups(dir: string): string[] {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return [];
  }
  return names
    .map((name) => ({ name, match: NAME.exec(name) }))
    .filter((entry): entry is { name: string; match: RegExpExecArray } => entry.match !== null)
    .sort((a, b) => (a.match[1] < b.match[1] ? -1 : a.match[1] > b.match[1] ? 1 : Number(a.match[2] ?? 1) - Number(b.match[2] ?? 1)))
    .map((entry) => entry.name);
}

/** Removes the oldest backups beyond `keep`; never `written`, nor any file whose name is not a backup's. */
function prune(dir: string, keep: number, written: string): string[] {
  const names = listBackups(dir).filter((name) => name !== path.basename(written));
  const removed = names.slice(0, Math.max(0, names.length - (keep - 1)));
  for (const name of removed) fs.rmSync(path.join(dir, name), { force: true });
  return removed;
}

/** One line of at most 300 characters, with any URL's password masked (a tool may print a connection string). */
function oneLine(err: unknown): string {
  const text = String((err as Error)?.message ?? err).replace(/\s+/g, ' ').trim();
  return text.replace(/(\w+:\/\/[^:/@\s]*:)[^@\s]*@/g, '$1***@').slice(0, 300);
}

let running: Promise<unknown> | undefined;

/**
 * Writes one backup into BACKUP_DIR (a `.partial` file, mode 0600, renamed into place), removes the oldest beyond
 * BACKUP_KEEP, and records the outcome; a failure is recorded and logged, then thrown. One at a time in a process:
 * a second call while one runs throws BackupBusy.
 */
export async function runScheduledBackup(config: Config, database: Database, signal: AbortSignal): Promise<BackupDone> {
  if (running) throw new BackupBusy('a backup is already running (quoting serve runs BACKUP_SCHEDULE): try again once it has finished');
  const work = backUp(config, database, signal);
  running = work;
  try {
    return await work;
  } finally {
    running = undefined;
  }
}

/** Resolves once the backup under way in this process, if any, has ended. */
export async function backupSettled(): Promise<void> {
  await running?.catch(() => undefined);
}

async function backUp(config: Config, database: Database, signal: AbortSignal): Promise<BackupDone> {
  const dir = path.resolve(config.BACKUP_DIR);
  let file = path.join(dir, 'quoting-(not named yet).backup');
  try {
    if (fs.existsSync(dir) && !fs.statSync(dir).isDirectory()) throw new Error(`BACKUP_DIR ${dir} is not a directory`);
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    file = freshName(dir, new Date());
    const bytes = await writeAtomically(file, (tmp) => (database.kind === 'postgres' ? pgDump(config.DATABASE_URL!, tmp, signal) : dumpEmbedded(database, tmp)));
    const removed = prune(dir, config.BACKUP_KEEP, file);
    const at = new Date().toISOString();
    writeLastBackup(config, { at, ok: true, file, bytes, lastSuccess: { at, file } });
    await count(database, 'succeeded');
    log.info('backup written', { file, bytes, removed: removed.length });
    return { file, bytes, removed };
  } catch (err) {
    const error = recordBackupFailure(config, err, file);
    await count(database, 'failed');
    throw new BackupFailed(`backup failed: ${error}`, { cause: err });
  }
}

/** Logs a failed backup and records it for doctor (also one that failed before it began: the database unreachable); answers the line recorded. */
export function recordBackupFailure(config: Config, err: unknown, file = path.join(path.resolve(config.BACKUP_DIR), 'quoting-(not named yet).backup')): string {
  const error = oneLine(err);
  log.error('backup failed', { file, error });
  try {
    writeLastBackup(config, { at: new Date().toISOString(), ok: false, file, error, lastSuccess: readLastBackup(config)?.lastSuccess });
  } catch (stateErr) {
    log.error('the backup outcome could not be recorded', errorFields(stateErr));
  }
  return error;
}

/** Counted for /metrics; a database that cannot take it is logged, never a second failure. */
async function count(database: Database, outcome: 'succeeded' | 'failed'): Promise<void> {
  try {
    await addCounts(database.knex, 'backups', { [outcome]: 1 });
  } catch (err) {
    log.warn('the backup could not be counted for /metrics', errorFields(err));
  }
}

/** A schedule's task, created stopped (to read its next runs) or started; node-cron's own messages go to the log. */
export function cronTask(expression: string, run: () => void): ScheduledTask {
  return createTask(expression, run, {
    name: 'backups',
    logger: {
      info: (message) => log.debug(`schedule: ${message}`),
      warn: (message) => log.warn(`schedule: ${message}`),
      error: (message) => log.error(`schedule: ${String(message)}`),
      debug: (message) => log.debug(`schedule: ${String(message)}`),
    },
  });
}

/** The longest gap between the schedule's next runs, in ms (a weekday schedule's weekend), to judge a backup's age. */
export function longestInterval(expression: string): number {
  const task = cronTask(expression, () => undefined);
  const runs = task.getNextRuns(30).map((d) => d.getTime());
  void task.destroy();
  let longest = 0;
  for (let i = 1; i < runs.length; i++) longest = Math.max(longest, runs[i] - runs[i - 1]);
  return longest;
}

/**
 * Runs a backup at each time of BACKUP_SCHEDULE until the returned stop() is called, which stops the schedule and
 * aborts a backup under way (pg_dump is stopped; the embedded database's dump is waited for), then resolves.
 * A time that comes while a backup still runs is skipped, and logged.
 */
export function scheduleBackups(config: Config, database: Database): () => Promise<void> {
  const stop = new AbortController();
  const task = cronTask(config.BACKUP_SCHEDULE!, () => {
    if (stop.signal.aborted) return;
    if (running) {
      log.warn('backup skipped: the previous one is still running', { schedule: config.BACKUP_SCHEDULE });
      return;
    }
    // Recorded and logged by runScheduledBackup; nothing else to do with the failure here.
    runScheduledBackup(config, database, stop.signal).catch(() => undefined);
  });
  void task.start();
  log.info('scheduled backups', { schedule: config.BACKUP_SCHEDULE, dir: path.resolve(config.BACKUP_DIR), keep: config.BACKUP_KEEP });
  return async () => {
    stop.abort();
    await task.destroy();
    await backupSettled();
  };
}
