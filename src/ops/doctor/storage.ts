import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { octal } from '../../db/data-dir.js';
import { fail, ok, warn, type Check } from './check.js';

const GiB = 1024 ** 3;
const MiB = 1024 ** 2;

/** The directory itself, or the nearest parent that exists (a fresh DATA_DIR is created on first start). */
function nearestExisting(dir: string): string {
  let current = path.resolve(dir);
  while (!fs.existsSync(current) && path.dirname(current) !== current) current = path.dirname(current);
  return current;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Who holds the embedded database: the lock file DATA_DIR/quoting.lock names a pid and its command (`server`: see DoctorContext). */
function lockHolder(dir: string, server?: number): string {
  let text: string;
  try {
    text = fs.readFileSync(path.join(dir, 'quoting.lock'), 'utf8');
  } catch {
    return 'the embedded database is not in use';
  }
  const [pidText, ...command] = text.split(' ');
  const pid = Number(pidText);
  if (pid === process.pid && pid === server) return `the embedded database is held by the server that ran these checks, process ${pid} (quoting ${command.join(' ')})`;
  if (pid === process.pid) return 'no other process holds the embedded database';
  if (Number.isInteger(pid) && pid > 0 && isAlive(pid)) return `the embedded database is held by process ${pid} (quoting ${command.join(' ')})`;
  return `a stale lock of process ${pidText} is left (the next start takes it over)`;
}

export const dataDir: Check = {
  id: 'data_dir',
  title: 'DATA_DIR',
  reads: ['DATA_DIR', 'DATABASE_URL'],
  async run(ctx) {
    const dir = path.resolve(ctx.config.DATA_DIR);
    const embedded = !ctx.config.DATABASE_URL;
    if (!fs.existsSync(dir)) {
      if (!embedded) return ok(`${dir} (unused: the data is in PostgreSQL)`);
      return warn(`${dir} does not exist yet`, `start 'quoting serve' once (it creates it), or create it writable by the user that runs quoting`);
    }
    const probe = path.join(dir, `.doctor-${process.pid}-${crypto.randomBytes(4).toString('hex')}`);
    try {
      fs.writeFileSync(probe, '');
      fs.unlinkSync(probe);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'error';
      if (!embedded) return warn(`${dir} is not writable (${code}); unused while the data is in PostgreSQL`, `chown it to the user that runs quoting, or ignore this`);
      return fail(`${dir} is not writable by this user (${code})`, `chown -R quoting:quoting ${dir} (the user that runs quoting serve)`);
    }
    if (!embedded) return ok(`${dir} is writable (unused: the data is in PostgreSQL)`);
    const { mode } = fs.statSync(dir);
    if (mode & 0o077) {
      return fail(
        `${dir} is open to other users (mode ${octal(mode)}): they could read the database files, secrets and customers included`,
        `chmod 700 ${dir} as its owner (quoting does it itself when it opens the database as that user), then chmod -R go-rwx ${dir}`,
      );
    }
    return ok(`${dir} is writable and private (mode ${octal(mode)}); ${lockHolder(dir, ctx.server)}`);
  },
};

export const diskSpace: Check = {
  id: 'disk',
  title: 'Disk space',
  reads: ['DATA_DIR'],
  async run(ctx) {
    const where = nearestExisting(ctx.config.DATA_DIR);
    const stats = await fs.promises.statfs(where);
    const free = stats.bavail * stats.bsize;
    const share = stats.blocks ? stats.bavail / stats.blocks : 0;
    const text = `${(free / GiB).toFixed(1)} GiB free (${Math.round(share * 100)}%) under ${where}`;
    const fix = `free space on that file system (old backups, logs: journalctl --vacuum-size=200M) or move DATA_DIR to a larger disk`;
    if (free < 256 * MiB) return fail(text, fix);
    if (free < GiB || share < 0.05) return warn(text, fix);
    return ok(text);
  },
};
