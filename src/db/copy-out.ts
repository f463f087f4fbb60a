import { escapeLiteral } from 'pg';
import { CHUNK, giveBack, takeChunk } from './chunk-pool.js';

/**
 * A page of a list read as bytes. node-postgres decodes every ordinary result value into a JS string
 * (UTF-8 → UTF-16: a two-byte string as soon as the page holds one character beyond Latin-1), which the
 * response then encodes back to UTF-8; but it hands the rows of a `COPY … TO STDOUT` to the running query
 * object as the message's bytes. So a page is read as
 *   COPY (select id, json from … order by id limit …) TO STDOUT (FORMAT binary)
 * one CopyData message a record, each copied as it arrives, after a comma, into chunks of 64 KB lent by
 * db/chunk-pool.ts (whoever sends the page gives them back).
 *
 * Why a message a record, not the page as one `string_agg` value in one message: node-postgres's
 * protocol parser gathers a message in a buffer of its own, and for a message of megabytes it grows that buffer by
 * doubling, copying what it holds into fresh memory each time, and the page would then be copied out of it once
 * more; those copies, and collecting the memory they leave behind, dominate a long list's server time. Messages of
 * a record each fit the socket's reads, so the parser keeps reusing one buffer of a few socket reads, and every byte
 * is copied once, into the page. Nor does the database join the texts.
 *
 * Why chunks, not one buffer a page: memory fresh from the system costs far more to write the first time than to copy
 * into (its pages are mapped in one by one), and a buffer of megabytes is always fresh: the allocator maps it anew
 * and unmaps it when it is collected. So chunks are kept and lent again (db/chunk-pool.ts).
 *
 * Binary COPY layout (PostgreSQL docs, "COPY", Binary Format): an 11-byte signature, an int32 of flags and an
 * int32 header-extension length (0) before the first row; each row an int16 field count then, per field, an
 * int32 length (-1 for null) and that many bytes; an int16 -1 after the last row. PostgreSQL sends one
 * CopyData message per row, the header with the first.
 */

const HEADER = 19;

/** A page's text in chunks lent by db/chunk-pool.ts: whoever sends it gives each chunk back once it is written. */
export interface LentText {
  readonly chunks: readonly Buffer[];
  giveBack(chunk: Buffer): void;
}

export interface CopiedPage {
  /** The records' JSON texts joined by commas. */
  text: LentText;
  n: number;
  lastId: number;
}

/** The node-postgres connection knex hands out (its `query` takes a submittable: an object with `submit`). */
interface PgConnection {
  query(submittable: object): unknown;
}

/**
 * node-postgres's query protocol (a "submittable") for one simple-query string whose last statement is a binary
 * COPY of rows (int4 id, text json): the texts joined by commas into one buffer, the rows counted, the last id kept.
 */
class CopyRowsQuery {
  private readonly chunks: Buffer[] = [];
  private chunk = takeChunk();
  /** Bytes written into `chunk`. */
  private used = 0;
  private n = 0;
  private lastId = 0;
  private headerSeen = false;
  private error: Error | undefined;

  constructor(
    private readonly text: string,
    private readonly done: (error: Error | undefined, page?: CopiedPage) => void,
  ) {}

  submit(connection: { query(text: string): void }): void {
    connection.query(this.text);
  }

  handleCopyData(message: { chunk: Buffer }): void {
    if (this.error) return;
    try {
      this.row(message.chunk);
    } catch (err) {
      this.error = err as Error;
    }
  }

  /** One CopyData message: a row (the header before the first), or the trailer. */
  private row(chunk: Buffer): void {
    let at = 0;
    if (!this.headerSeen) {
      at = HEADER;
      this.headerSeen = true;
    }
    const fields = chunk.readInt16BE(at);
    if (fields === -1) return;
    if (fields !== 2 || chunk.readInt32BE(at + 2) !== 4) throw new Error('copy-out: expected a row of (int4 id, text)');
    this.lastId = chunk.readInt32BE(at + 6);
    const length = chunk.readInt32BE(at + 10);
    const start = at + 14;
    if (length === -1) throw new Error('copy-out: a null text');
    if (start + length !== chunk.length) throw new Error('copy-out: a row split over messages');
    this.append(chunk, start, length);
    this.n++;
  }

  /** Copied at once, after a comma: node-postgres reuses the memory the message points into for later ones. */
  private append(message: Buffer, start: number, length: number): void {
    if (this.n > 0) {
      if (this.used === CHUNK) this.nextChunk();
      this.chunk[this.used++] = 0x2c; // ','
    }
    for (let end = start + length; start < end; ) {
      if (this.used === CHUNK) this.nextChunk();
      const copied = message.copy(this.chunk, this.used, start, end);
      this.used += copied;
      start += copied;
    }
  }

  private nextChunk(): void {
    this.chunks.push(this.chunk);
    this.chunk = takeChunk();
    this.used = 0;
  }

  handleError(error: Error): void {
    // Reported at once, as node-postgres's own queries do: after a broken connection no ReadyForQuery comes.
    this.error ??= error;
    this.finish();
  }

  handleReadyForQuery(): void {
    this.finish();
  }

  private finished = false;
  private finish(): void {
    if (this.finished) return;
    this.finished = true;
    if (this.used > 0) this.chunks.push(this.chunk.subarray(0, this.used));
    else giveBack(this.chunk);
    if (this.error) {
      this.chunks.forEach(giveBack);
      return this.done(this.error);
    }
    this.done(undefined, { text: { chunks: this.chunks, giveBack }, n: this.n, lastId: this.lastId });
  }

  // The other messages of a simple query (the SET before the COPY): nothing to keep.
  handleRowDescription(): void {}
  handleDataRow(): void {}
  handleCommandComplete(): void {}
  handleEmptyQuery(): void {}
  handlePortalSuspended(): void {}
  handleCopyInResponse(): void {}
}

/**
 * Runs `sql` (simple protocol: no parameters) whose last statement is a binary COPY of rows (int4 id, text json),
 * in the order the page is to be sent.
 */
export function copyRows(connection: unknown, sql: string): Promise<CopiedPage> {
  return new Promise((resolve, reject) => {
    (connection as PgConnection).query(new CopyRowsQuery(sql, (error, page) => (error ? reject(error) : resolve(page!))));
  });
}

/**
 * knex's native SQL (`$1`, `$2`, …) with its bindings written in as literals, for COPY, which takes no
 * parameters. Strings are quoted by node-postgres's escapeLiteral; only strings, finite numbers and booleans
 * are accepted (the list filters are nothing else), so no value can end up unquoted.
 */
export function inlineSql({ sql, bindings }: { sql: string; bindings: readonly unknown[] }): string {
  return sql.replace(/\$(\d+)/g, (_, index: string) => literal(bindings[Number(index) - 1]));
}

function literal(value: unknown): string {
  if (typeof value === 'string') return escapeLiteral(value);
  if (typeof value === 'number' && Number.isFinite(value)) return `(${value})`;
  if (typeof value === 'boolean') return String(value);
  throw new Error(`copy-out: cannot write a ${value === null ? 'null' : typeof value} binding into SQL`);
}
