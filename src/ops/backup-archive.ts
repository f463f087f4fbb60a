import fs from 'node:fs';
import zlib from 'node:zlib';

/** A file `quoting restore` will not load, with one line saying what it is not. */
export class NotABackup extends Error {}

const BLOCK = 512;

/**
 * Reads an embedded backup (PGlite's gzipped tar of its data directory) to its end before anything is
 * restored: a file cut short, damaged, or holding some other archive is named as such here, instead of
 * failing inside PGlite (an unhandled zlib error, "PGlite failed to initialize properly"). One pass, a
 * block at a time: memory stays small whatever the size of the backup.
 */
export async function checkEmbeddedBackup(file: string): Promise<void> {
  const names = new Set<string>();
  let pending: Buffer = Buffer.alloc(0);
  let skip = 0;
  let current = '';
  let headers = 0;
  let ended = false;
  const input = fs.createReadStream(file);
  const gunzip = zlib.createGunzip();
  input.once('error', (err) => gunzip.destroy(err));
  try {
    for await (const chunk of input.pipe(gunzip) as AsyncIterable<Buffer>) {
      const buffer = pending.length ? Buffer.concat([pending, chunk]) : chunk;
      let at = 0;
      while (!ended) {
        const skipped = Math.min(skip, buffer.length - at);
        skip -= skipped;
        at += skipped;
        if (skip > 0 || buffer.length - at < BLOCK) break;
        const header = buffer.subarray(at, at + BLOCK);
        at += BLOCK;
        if (header.every((byte) => byte === 0)) {
          ended = true; // the end-of-archive blocks; what follows is padding
          break;
        }
        if (!validHeader(header)) throw new NotABackup(headers === 0 ? 'it is gzip-compressed but holds no tar archive' : 'the tar archive in it is damaged');
        headers++;
        current = entryName(header);
        names.add(current);
        const size = octal(header.subarray(124, 136));
        if (Number.isNaN(size)) throw new NotABackup('the tar archive in it is damaged');
        skip = Math.ceil(size / BLOCK) * BLOCK;
      }
      pending = ended ? Buffer.alloc(0) : Buffer.from(buffer.subarray(at));
    }
  } catch (err) {
    if (err instanceof NotABackup) throw new NotABackup(`${file} is not a backup made by 'quoting backup': ${err.message}`);
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'Z_BUF_ERROR') throw new NotABackup(`${file} is not a complete backup: it is cut short (its gzip data ends early); use the whole file`);
    if (e.code?.startsWith('Z_')) throw new NotABackup(`${file} is not a readable backup: its gzip data is damaged (${e.message})`);
    throw err;
  } finally {
    input.destroy();
    gunzip.destroy();
  }
  if (headers === 0) throw new NotABackup(`${file} is not a backup made by 'quoting backup': it is gzip-compressed but holds no tar archive`);
  if (skip > 0 || pending.length > 0) throw new NotABackup(`${file} is not a complete backup: its tar archive ends in the middle of ${current}`);
  if (!names.has('PG_VERSION') || !names.has('global/pg_control')) {
    throw new NotABackup(`${file} is not a backup made by 'quoting backup': its tar archive holds no embedded database (no PG_VERSION and global/pg_control)`);
  }
}

/** A tar header's checksum: the sum of its bytes, the checksum field counted as spaces. */
function validHeader(header: Buffer): boolean {
  const stored = octal(header.subarray(148, 156));
  if (Number.isNaN(stored)) return false;
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : header[i];
  return sum === stored;
}

function octal(field: Buffer): number {
  const text = field.toString('latin1').replace(/\0.*$/s, '').trim();
  return /^[0-7]+$/.test(text) ? parseInt(text, 8) : NaN;
}

/** The entry's path (ustar prefix included), without a leading `/` or `./`, as PGlite writes and reads it. */
function entryName(header: Buffer): string {
  const field = (start: number, length: number) => header.toString('utf8', start, start + length).replace(/\0.*$/s, '');
  const ustar = header.toString('latin1', 257, 262) === 'ustar';
  const prefix = ustar ? field(345, 155) : '';
  return (prefix ? `${prefix}/${field(0, 100)}` : field(0, 100)).replace(/^(\.?\/)+/, '').replace(/\/$/, '');
}
