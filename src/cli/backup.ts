import fs from 'node:fs';
import path from 'node:path';
import { DataDirInUse } from '../db/database.js';
import { backupKind, dumpEmbedded, holdsData, NotEmpty, pgDump, pgRestore, restoreEmbedded, writeAtomically } from '../ops/backup.js';
import { describeDatabase } from '../ops/doctor/index.js';
import { BackupBusy, BackupFailed, recordBackupFailure, runScheduledBackup } from '../ops/scheduled-backup.js';
import { commandConfig, commandPath, withDatabase } from './context.js';
import { say, type CommandIo } from './io.js';

function size(bytes: number): string {
  return bytes >= 1024 * 1024 ? `${(bytes / (1024 * 1024)).toFixed(1)} MB` : `${Math.max(1, Math.round(bytes / 1024))} KB`;
}

/** `quoting backup --out <file>`: a consistent copy of the database; without --out, a scheduled backup into BACKUP_DIR. */
export async function backupCommand(opts: Record<string, unknown>, io: CommandIo): Promise<void> {
  const config = commandConfig(opts);
  if (opts.out === undefined) return scheduledBackup(config, io);
  const out = commandPath(String(opts.out));
  if (!fs.existsSync(path.dirname(out))) throw new Error(`--out: the directory ${path.dirname(out)} does not exist`);
  const where = describeDatabase(config.DATABASE_URL, config.DATA_DIR);
  let bytes: number;
  if (config.DATABASE_URL) {
    bytes = await writeAtomically(out, (tmp) => pgDump(config.DATABASE_URL!, tmp, io.signal));
  } else {
    if (!fs.existsSync(path.join(path.resolve(config.DATA_DIR), 'pglite'))) throw new Error(`there is no embedded database in ${path.resolve(config.DATA_DIR)} to back up (check DATA_DIR)`);
    bytes = await withDatabase(config, (database) => writeAtomically(out, (tmp) => dumpEmbedded(database, tmp)));
  }
  say(io.stdout, `Backed up ${where} to ${out} (${size(bytes)}).`);
}

/** What the installer's timer runs: the file named by its time, the oldest beyond BACKUP_KEEP removed, the outcome recorded. */
async function scheduledBackup(config: ReturnType<typeof commandConfig>, io: CommandIo): Promise<void> {
  const where = describeDatabase(config.DATABASE_URL, config.DATA_DIR);
  let done;
  try {
    if (!config.DATABASE_URL && !fs.existsSync(path.join(path.resolve(config.DATA_DIR), 'pglite'))) throw new Error(`there is no embedded database in ${path.resolve(config.DATA_DIR)} to back up (check DATA_DIR)`);
    done = await withDatabase(config, (database) => runScheduledBackup(config, database, io.signal));
  } catch (err) {
    // One that failed before it began (the database unreachable) is recorded too, for doctor.
    if (err instanceof BackupFailed || err instanceof BackupBusy) throw err;
    throw new Error(`backup failed: ${recordBackupFailure(config, err)}`, { cause: err });
  }
  const removed = done.removed.length ? `; removed ${done.removed.length} older (BACKUP_KEEP=${config.BACKUP_KEEP})` : '';
  say(io.stdout, `Backed up ${where} to ${done.file} (${size(done.bytes)})${removed}.`);
}

/** `quoting restore <file> [--force]`: into an empty database, or with --force over one that holds data. */
export async function restoreCommand(file: string, opts: Record<string, unknown>, io: CommandIo): Promise<void> {
  const config = commandConfig(opts);
  const force = Boolean(opts.force);
  const source = commandPath(file);
  if (!fs.existsSync(source)) throw new Error(`no such backup file: ${source}`);
  const kind = backupKind(source);
  const where = describeDatabase(config.DATABASE_URL, config.DATA_DIR);
  const refuse = (what: string) =>
    new Error(`${what}; restore into an empty database, or pass --force to replace it${config.DATABASE_URL ? '' : ' (the replaced data directory is kept beside it)'}`);
  if (config.DATABASE_URL) {
    if (kind !== 'postgres') {
      // The way from the embedded database to PostgreSQL (src/ops/embedded-to-postgres.ts).
      const { restoreEmbeddedIntoPostgres } = await import('../ops/embedded-to-postgres.js');
      try {
        const moved = await restoreEmbeddedIntoPostgres(source, config.DATABASE_URL, { force, describe: where });
        say(io.stdout, `Restored ${source} (a backup of the embedded database) into ${where}: ${moved.rows} rows in ${moved.tables} tables; new ids and quote numbers follow on from it.`);
      } catch (err) {
        if (err instanceof NotEmpty) throw refuse(err.message);
        throw err;
      }
      return;
    }
    const used = await withDatabase(config, ({ knex }) => holdsData(knex));
    if (used && !force) throw refuse(`${where} holds data`);
    await pgRestore(config.DATABASE_URL, source, io.signal);
    say(io.stdout, `Restored ${source} into ${where}.`);
    return;
  }
  if (kind !== 'pglite') throw new Error(`${source} is a PostgreSQL backup (pg_dump): restore it with DATABASE_URL set`);
  try {
    const { replaced } = await restoreEmbedded(config.DATA_DIR, source, force);
    say(io.stdout, `Restored ${source} into ${where}.${replaced ? ` The data it replaced is in ${replaced}.` : ''}`);
  } catch (err) {
    if (err instanceof NotEmpty) throw refuse(err.message);
    if (err instanceof DataDirInUse) throw new Error(`${err.message.split('. ')[0]}: stop it first (systemctl stop quoting), restore, then start it again`);
    throw err;
  }
}
