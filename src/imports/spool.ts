import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { HttpError } from '../errors.js';
import { MAX_IMPORT_BYTES, TooLarge, type ByteSource } from './csv.js';

/** A source that sends nothing for this long is cut off (the issue of slow uploads holding the server). */
export const IDLE_MS = 30_000;

export interface SpoolOptions {
  /** Epoch ms: the import's window ends here, arriving or not. */
  deadline: number;
  /** The error for a window that ended while the file still arrived. */
  pastDeadline: () => HttpError;
  /** What the source is, for the errors: "the upload", "the import URL". */
  what: string;
  /** The status for a source that went silent or broke off: 408 for a client's body, 502 for an upstream. */
  failureStatus: 408 | 502;
  /**
   * Destroyed when spooling stops early. A request is never destroyed here: its socket carries the answer, and
   * the route drains what is left of it.
   */
  owned?: Readable;
  idleMs?: number;
}

/** A file spooled to a private temporary file: read it as often as needed, then remove it. */
export interface Spooled {
  /** Bytes in the file. */
  size: number;
  read(): fs.ReadStream;
  remove(): Promise<void>;
}

/**
 * Streams the source into a temporary file (mode 0600, in the system's temporary folder) before the import touches
 * the database, so that no transaction or connection waits on a slow client or upstream. The 20 MB cap is counted
 * as the bytes arrive; a window that ends, or a source silent for `idleMs`, stops it at once. On any failure the file
 * is removed and its handle closed.
 */
export async function spool(source: ByteSource, options: SpoolOptions): Promise<Spooled> {
  const file = path.join(os.tmpdir(), `quoting-import-${crypto.randomUUID()}.csv`);
  const handle = await fs.promises.open(file, 'wx', 0o600);
  const remove = () => fs.promises.rm(file, { force: true });
  const iterator: AsyncIterator<Buffer | string> =
    source instanceof Readable ? source.iterator({ destroyOnReturn: false }) : source[Symbol.asyncIterator]();
  const idleMs = options.idleMs ?? IDLE_MS;
  let bytes = 0;
  try {
    for (;;) {
      const next = await arrival(iterator.next(), idleMs, options);
      if (next.done) break;
      const chunk = typeof next.value === 'string' ? Buffer.from(next.value) : next.value;
      bytes += chunk.length;
      if (bytes > MAX_IMPORT_BYTES) throw new TooLarge();
      await handle.write(chunk);
    }
  } catch (err) {
    options.owned?.destroy();
    await handle.close().catch(() => undefined);
    await remove();
    throw err instanceof HttpError ? err : new HttpError(options.failureStatus, `${capitalise(options.what)} broke off: ${(err as Error).message}.`);
  }
  await handle.close();
  return { size: bytes, read: () => fs.createReadStream(file), remove };
}

/** The next chunk, or the window's or the silence's error, whichever comes first. */
function arrival<T>(next: Promise<T>, idleMs: number, options: SpoolOptions): Promise<T> {
  const left = options.deadline - Date.now();
  if (left <= 0) return Promise.reject(options.pastDeadline());
  // The read still pending when a timer wins settles later, into nothing.
  next.catch(() => undefined);
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer =
      left <= idleMs
        ? setTimeout(() => reject(options.pastDeadline()), left)
        : setTimeout(() => reject(new HttpError(options.failureStatus, `${capitalise(options.what)} sent nothing for ${idleMs / 1000} s and was cut off; nothing was imported.`)), idleMs);
  });
  return Promise.race([next, timeout]).finally(() => clearTimeout(timer));
}

const capitalise = (text: string) => text[0].toUpperCase() + text.slice(1);
