import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Knex } from 'knex';
import { lockDataDir, openPglite, type Database } from '../db/database.js';
import { checkEmbeddedBackup, NotABackup } from './backup-archive.js';

export type BackupKind = 'pglite' | 'postgres';

/** An embedded backup is PGlite's gzipped data-directory tar; a PostgreSQL one is pg_dump's custom format. */
export function backupKind(file: string): BackupKind {
  if (fs.statSync(file).isDirectory()) throw new NotABackup(`${file} is a directory, not a backup file`);
  const head = Buffer.alloc(5);
  const fd = fs.openSync(file, 'r');
  try {
    fs.readSync(fd, head, 0, 5, 0);
  } finally {
    fs.closeSync(fd);
  }
  if (head[0] === 0x1f && head[1] === 0x8b) return 'pglite';
  if (head.toString('latin1') === 'PGDMP') return 'postgres';
  throw new NotABackup(`${file} is not a backup made by 'quoting backup'`);
}

/** Whether the database already holds accounts or workspaces (a migrated but unused one does not). */
export async function holdsData(knex: Knex): Promise<boolean> {
  const { rows } = await knex.raw(`select to_regclass('public.users') is not null and to_regclass('public.workspaces') is not null as has_tables`);
  if (!rows[0].has_tables) return false;
  const { rows: counts } = await knex.raw(`/* all workspaces: whether the database holds any */ select exists(select 1 from users) or exists(select 1 from workspaces) as used`);
  return Boolean(counts[0].used);
}

/**
 * Writes `file` atomically (a partial file never takes the name), readable by its owner only: it holds password hashes
 * and keys. The partial file is created empty with mode 0600 (exclusively, so nothing planted under its name is
 * followed) before the writer gets it: pg_dump opens an existing file without changing its mode, so no byte of the
 * dump is ever readable by another user, not even while it is being written.
 */
export async function writeAtomically(file: string, write: (tmp: string) => Promise<void>): Promise<number> {
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.${crypto.randomBytes(4).toString('hex')}.partial`);
  fs.closeSync(fs.openSync(tmp, 'wx', 0o600));
  try {
    await write(tmp);
    fs.chmodSync(tmp, 0o600);
    fs.renameSync(tmp, file);
  } catch (err) {
    fs.rmSync(tmp, { force: true });
    throw err;
  }
  return fs.statSync(file).size;
}

/** The embedded database, open (also inside `quoting serve`): a checkpoint, then the data directory as PGlite dumps it between queries. */
export async function dumpEmbedded(database: Database, tmp: string): Promise<void> {
  if (!database.dumpDataDir) throw new Error('this database cannot be dumped as a data directory');
  await database.knex.raw('checkpoint');
  const dump = await database.dumpDataDir();
  await fs.promises.writeFile(tmp, Buffer.from(await dump.arrayBuffer()), { mode: 0o600 });
}

/**
 * Replaces DATA_DIR/pglite by the backup while holding the data directory's lock, so no server can
 * open it halfway. The backup is unpacked and started aside first; a replaced database is kept
 * beside it (pglite.replaced-<time>) rather than deleted.
 */
export async function restoreEmbedded(dataDir: string, file: string, force: boolean): Promise<{ replaced?: string }> {
  // Read whole first: a damaged file is refused before anything is created or locked.
  await checkEmbeddedBackup(file);
  const dir = path.resolve(dataDir);
  // Owner only, as the server makes it: the database files hold password hashes, keys and customers.
  const created = fs.mkdirSync(dir, { recursive: true, mode: 0o700 }) !== undefined;
  const release = lockDataDir(dir);
  const { PGlite } = await import('@electric-sql/pglite');
  const live = path.join(dir, 'pglite');
  const staging = path.join(dir, `pglite.restoring-${process.pid}`);
  try {
    let used = false;
    if (fs.existsSync(live)) {
      const current = await openPglite(new PGlite(live));
      try {
        used = await holdsData(current.knex);
      } finally {
        await current.close();
      }
      if (used && !force) throw new NotEmpty(`the embedded database in ${dir} holds data`);
    }
    fs.rmSync(staging, { recursive: true, force: true });
    const restored = new PGlite(staging, { loadDataDir: new Blob([fs.readFileSync(file)]) });
    try {
      await restored.waitReady;
      await restored.query('select 1');
    } catch {
      // A whole archive of a data directory that still does not start (another PostgreSQL major version, say).
      throw new NotABackup(`${file} is not a backup this version of quoting can restore: the embedded database in it does not start`);
    } finally {
      await restored.close().catch(() => undefined);
    }
    let replaced: string | undefined;
    if (fs.existsSync(live)) {
      if (used) {
        replaced = path.join(dir, `pglite.replaced-${new Date().toISOString().replace(/[:.]/g, '-')}`);
        fs.renameSync(live, replaced);
      } else {
        fs.rmSync(live, { recursive: true, force: true });
      }
    }
    fs.renameSync(staging, live);
    return { replaced };
  } catch (err) {
    fs.rmSync(staging, { recursive: true, force: true });
    release();
    // A failed restore into a new DATA_DIR leaves none behind.
    if (created) fs.rmSync(dir, { recursive: true, force: true });
    throw err;
  } finally {
    release();
  }
}

export class NotEmpty extends Error {}

/** The URL without its password, which travels in PGPASSWORD instead of the process list. */
function connection(databaseUrl: string): { url: string; env: NodeJS.ProcessEnv } {
  const url = new URL(databaseUrl);
  const password = decodeURIComponent(url.password);
  url.password = '';
  return { url: url.toString(), env: { ...process.env, ...(password && { PGPASSWORD: password }) } };
}

/** Runs a PostgreSQL client tool; a missing tool is one line saying what to install. */
function runTool(tool: 'pg_dump' | 'pg_restore', args: string[], env: NodeJS.ProcessEnv, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(tool, args, { env, stdio: ['ignore', 'ignore', 'pipe'], signal });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'ENOENT'
          ? new Error(`${tool} is not installed: install the PostgreSQL client tools matching your server (apt-get install postgresql-client), then run this again`)
          : err,
      ),
    );
    child.once('close', (code) => {
      if (code === 0) resolve();
      else reject(new Error(`${tool} failed: ${stderr.trim().split('\n').slice(-3).join(' ').replace(/\s+/g, ' ') || `exit ${code}`}`));
    });
  });
}

export async function pgDump(databaseUrl: string, tmp: string, signal: AbortSignal): Promise<void> {
  const { url, env } = connection(databaseUrl);
  await runTool('pg_dump', ['--format=custom', `--file=${tmp}`, `--dbname=${url}`], env, signal);
}

/** Replaces every object the backup holds, in one transaction: on an error nothing has changed. */
export async function pgRestore(databaseUrl: string, file: string, signal: AbortSignal): Promise<void> {
  const { url, env } = connection(databaseUrl);
  await runTool('pg_restore', ['--clean', '--if-exists', '--no-owner', '--no-privileges', '--single-transaction', '--exit-on-error', `--dbname=${url}`, file], env, signal);
}
