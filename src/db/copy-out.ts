import { escapeLiteral } from 'pg';

/**
 * A page of a list read as bytes. node-postgres decodes every ordinary result value into a JS string
 * (UTF-8 → UTF-16: a two-byte string as soon as the page holds one character beyond Latin-1), which the
 * response then encodes back to UTF-8; but it hands the rows of a `COPY … TO STDOUT` to the running query
 * object as the message's bytes. So a page is read as
 *   COPY (select count(*)::int, max(id), string_agg(json, ',') from (<page>) page) TO STDOUT (FORMAT binary)
 * one CopyData message for the whole page (one message per record cost more in per-message objects and
 * garbage collection than the conversions it saved), and its text is kept as a Buffer, outside the JS heap.
 *
 * Binary COPY layout (PostgreSQL docs, "COPY", Binary Format): an 11-byte signature, an int32 of flags and an
 * int32 header-extension length (0) before the first row; each row an int16 field count then, per field, an
 * int32 length (-1 for null) and that many bytes; an int16 -1 after the last row. PostgreSQL sends one
 * CopyData message per row, the header with the first.
 */

const HEADER = 19;

export interface CopiedPage {
  /** The records' JSON texts joined by commas. */
  text: Buffer;
  n: number;
  lastId: number;
}

/** The node-postgres connection knex hands out (its `query` takes a submittable: an object with `submit`). */
interface PgConnection {
  query(submittable: object): unknown;
}

/** node-postgres's query protocol (a "submittable") for one simple-query string whose last statement is the page's COPY. */
class CopyPageQuery {
  private page = Buffer.alloc(0);
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

  /** One CopyData message: the page's row (after the header), or the trailer. */
  private row(chunk: Buffer): void {
    let at = 0;
    if (!this.headerSeen) {
      at = HEADER;
      this.headerSeen = true;
    }
    const fields = chunk.readInt16BE(at);
    if (fields === -1) return;
    if (fields !== 3 || chunk.readInt32BE(at + 2) !== 4) throw new Error('copy-out: expected a row of (int4 n, int4 last id, text)');
    this.n = chunk.readInt32BE(at + 6);
    const idLength = chunk.readInt32BE(at + 10);
    if (idLength === -1) return; // no rows: max(id) and string_agg are null
    if (idLength !== 4) throw new Error('copy-out: expected an int4 id');
    this.lastId = chunk.readInt32BE(at + 14);
    const length = chunk.readInt32BE(at + 18);
    const start = at + 22;
    if (start + length !== chunk.length) throw new Error('copy-out: a row split over messages');
    // Copied at once: node-postgres reuses the memory the chunk points into for later messages.
    this.page = Buffer.from(chunk.subarray(start, start + length));
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
    if (this.error) return this.done(this.error);
    this.done(undefined, { text: this.page, n: this.n, lastId: this.lastId });
  }

  // The other messages of a simple query (the SET before the COPY): nothing to keep.
  handleRowDescription(): void {}
  handleDataRow(): void {}
  handleCommandComplete(): void {}
  handleEmptyQuery(): void {}
  handlePortalSuspended(): void {}
  handleCopyInResponse(): void {}
}

/** Runs `sql` (simple protocol: no parameters) whose last statement is the page's binary COPY (layout above). */
export function copyPage(connection: unknown, sql: string): Promise<CopiedPage> {
  return new Promise((resolve, reject) => {
    (connection as PgConnection).query(new CopyPageQuery(sql, (error, page) => (error ? reject(error) : resolve(page!))));
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
