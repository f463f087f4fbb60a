/**
 * Buffers of CHUNK bytes for the pages of long lists (db/copy-out.ts), lent and given back once their bytes have been
 * written (src/http/api.ts), so that a list of 50 MB reuses a few megabytes instead of allocating 50.
 *
 * Why not fresh buffers: V8 counts every buffer's memory as external to its heap and, every 64 MB or so of it,
 * marks the whole heap (the app's code, schemas and caches) to find the dead ones; fresh memory also costs more to
 * write the first time than memory reused, its pages being mapped in one by one. For long lists those collections
 * are a large share of the server's CPU time.
 *
 * A chunk is lent once until it is given back (a second give-back, or a buffer not lent here, is ignored), and at
 * most KEPT are kept: enough for the pages in flight of a few long lists at once (16 MB); more are left to the
 * collector. Only a chunk whose bytes are no longer needed may be given back: after its write's callback, without an
 * error (a failed write's buffer may still be referenced, and is left to the collector).
 */

export const CHUNK = 64 * 1024;
const KEPT = 256;

const free: Buffer[] = [];
const lent = new WeakSet<ArrayBufferLike>();

/** A chunk to write into: all CHUNK bytes are the borrower's until it gives it back. */
export function takeChunk(): Buffer {
  const chunk = free.pop() ?? Buffer.allocUnsafe(CHUNK); // CHUNK is over Buffer's pool size: an ArrayBuffer of its own
  lent.add(chunk.buffer);
  return chunk;
}

/** Gives back a chunk taken here, or a view of its first bytes (a page's last chunk is sent as one). */
export function giveBack(chunk: Buffer): void {
  if (!lent.delete(chunk.buffer)) return;
  if (free.length < KEPT) free.push(chunk.byteLength === CHUNK ? chunk : Buffer.from(chunk.buffer, 0, CHUNK));
}
