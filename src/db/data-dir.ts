import fs from 'node:fs';
import path from 'node:path';
import { isMainThread } from 'node:worker_threads';

/**
 * The embedded database's files hold everything: password hashes, signing secrets, customers. They are
 * for the user that runs quoting alone, whatever state DATA_DIR was found in.
 */

/** Group and others: any of their bits on DATA_DIR lets another local user in. */
const OTHERS = 0o077;

export class DataDirNotPrivate extends Error {}

/** Files this process creates from now on are its user's alone (a process-wide setting; worker threads may not change it). */
export function privateUmask(): void {
  if (isMainThread) process.umask(0o077);
}

/**
 * Creates DATA_DIR 0700, or makes an existing one 0700 when this user owns it; a directory of another
 * user that is open to others is refused, saying how to close it (chmod by its owner, or another DATA_DIR).
 */
export function makeDataDirPrivate(dataDir: string): void {
  const dir = path.resolve(dataDir);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const stat = fs.statSync(dir);
  if (!stat.isDirectory()) throw new DataDirNotPrivate(`DATA_DIR ${dir} is not a directory`);
  if ((stat.mode & OTHERS) === 0) return;
  const uid = process.getuid?.();
  if (uid !== undefined && stat.uid !== uid) {
    throw new DataDirNotPrivate(
      `DATA_DIR ${dir} is open to other users (mode ${octal(stat.mode)}) and belongs to user ${stat.uid}, not to this one (${uid}): ` +
        `run 'chmod 700 ${dir}' as its owner (or run quoting as that user), or set DATA_DIR to a directory of your own`,
    );
  }
  fs.chmodSync(dir, 0o700);
}

/**
 * Takes group and other permissions off every file and directory under `dir`. PGlite writes the files of
 * a new database 0666 whatever the umask (it copies them from its in-memory initdb with their modes), and a
 * few it rewrites 0644; DATA_DIR's own 0700 keeps others out, and this keeps each file private as well.
 */
export function tightenModes(dir: string): void {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return; // removed meanwhile, or not ours to read: nothing to tighten
  }
  for (const entry of entries) {
    if (entry.isSymbolicLink()) continue;
    const file = path.join(dir, entry.name);
    try {
      const { mode } = fs.statSync(file);
      if (mode & OTHERS) fs.chmodSync(file, mode & 0o7700);
    } catch {
      continue; // a file PGlite removed between the listing and here
    }
    if (entry.isDirectory()) tightenModes(file);
  }
}

export function octal(mode: number): string {
  return (mode & 0o777).toString(8).padStart(4, '0');
}
