/**
 * One statement on PGlite with its text columns kept as their UTF-8 bytes: the reply read straight from
 * the wire, as PostgreSQL sent it. PGlite's query() (and even its execProtocolRaw) runs every reply through
 * its JavaScript protocol parser, which decodes each text value into a JS string; for a list page (one
 * large value) that decoding, and the encoding back to bytes when the page is sent, cost more than the
 * database's own work. Here the reply is collected through execProtocolRawStream, which hands over the bytes unparsed, and walked once.
 *
 * Used by the embedded database's thread (pglite-worker.ts) for list pages (text kept as bytes) and for prepared
 * statements (every value decoded, once), and by bench/lists.ts for its limit, so that it reads PGlite as the app does.
 */
import { serialize } from 'pg-protocol';

/** The parts of PGlite this uses. */
export interface RawPglite {
  execProtocolRawStream(message: Uint8Array, options: { onRawData: (chunk: Uint8Array) => void }): Promise<void>;
  parsers: Record<number, (text: string, typeId: number) => unknown>;
}

/**
 * The size of the last reply of a kind: the next one of that kind is read into a buffer that large (grown if need be),
 * one given back (`reuse`) when there is one that large. List pages give their buffers back once sent (the server's
 * thread returns them: pglite-worker.ts), so that a long list reuses a few instead of allocating one per page: fresh
 * memory costs more to write than memory reused, and every buffer dropped is work for the collector on both threads.
 */
export class ReplySize {
  private readonly spare: ArrayBuffer[] = [];

  constructor(
    private readonly least: number,
    public last = least,
  ) {}

  saw(size: number): void {
    this.last = Math.max(size, this.least);
  }

  /** A buffer for the next reply: a spare one if large enough. Its own ArrayBuffer, never a slice of Node's shared pool. */
  take(): Buffer {
    const spare = this.spare.pop();
    if (spare && spare.byteLength >= this.last) return Buffer.from(spare);
    return Buffer.allocUnsafeSlow(this.last);
  }

  /** A reply's buffer whose values are no longer read: kept for a later reply (a few at most). */
  reuse(buffer: ArrayBuffer): void {
    if (this.spare.length < 4) this.spare.push(buffer);
  }
}

/** List pages: hundreds of kilobytes each. Their buffers come back through `reusePageReply`. */
const pageSize = new ReplySize(64 * 1024);

/** A list page's reply buffer (queryTextAsBytes), given back once its text has been sent. */
export const reusePageReply = (buffer: ArrayBuffer) => pageSize.reuse(buffer);

/** PostgreSQL's `text` type: its values stay bytes. */
const TEXT_OID = 25;

export interface BytesResult {
  rows: Record<string, unknown>[];
  fields: { name: string; dataTypeID: number }[];
  affectedRows: number;
  /** The one buffer every byte value is a view of: transfer it, and the values travel without a copy. */
  buffer: ArrayBuffer;
  /** NOTIFYs that arrived with the reply, for the caller's listeners (PGlite's own never see this reply). */
  notifications: { channel: string; payload: string }[];
}

/**
 * Values in PostgreSQL's text format, for a statement whose parameter types the server infers: what knex binds
 * (numbers, strings, booleans, dates, arrays, bytes; JSON for other objects).
 */
function textValue(value: unknown): string | null {
  if (value == null) return null;
  if (value instanceof Date) return value.toISOString();
  // A Buffer reaches PGlite's thread as a plain Uint8Array.
  if (value instanceof Uint8Array) return `\\x${Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('hex')}`;
  if (Array.isArray(value)) return `{${value.map((item) => (item == null ? 'NULL' : Array.isArray(item) ? textValue(item) : `"${textValue(item)!.replace(/[\\"]/g, '\\$&')}"`)).join(',')}}`;
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/**
 * Runs `sql` with `params` in one pass (parse, bind, describe, execute, sync): `text` values as bytes (unless
 * `textAsBytes` is false), the rest as PGlite parses them; `statement`, the name `sql` was parsed under (parseNamed),
 * to run it without parsing it again. `before` and `after` are statements without values sent in
 * the same pass (BEGIN and SET LOCAL, COMMIT): the first error of any of them is thrown.
 */
export async function queryTextAsBytes(
  pglite: RawPglite,
  sql: string,
  params: unknown[] = [],
  around: { before?: string; after?: string; textAsBytes?: boolean; statement?: string } = {},
): Promise<BytesResult> {
  const message = Buffer.concat([
    ...(around.before ? [serialize.query(around.before)] : []),
    // A statement already parsed under a name (`statement`) is only bound: neither parsed nor planned again.
    ...(around.statement ? [] : [serialize.parse({ text: sql })]),
    serialize.bind({ statement: around.statement, values: params.map(textValue) }),
    serialize.describe({ type: 'P' }),
    serialize.execute({}),
    serialize.sync(),
    ...(around.after ? [serialize.query(around.after)] : []),
  ]);
  return readReply(pglite, await rawReply(pglite, message, pageSize), { textAsBytes: around.textAsBytes ?? true });
}

/** Parses `sql` under `name` on PGlite's connection, in a pass of its own; its error (a text that does not parse) is thrown. */
export async function parseNamed(pglite: RawPglite, name: string, sql: string): Promise<void> {
  readReply(pglite, await rawReply(pglite, Buffer.concat([serialize.parse({ name, text: sql }), serialize.sync()]), parseReplySize), {});
}

const parseReplySize = new ReplySize(64);

/**
 * The reply to `message` (protocol messages PGlite runs in one pass), as the bytes PostgreSQL wrote. The chunk PGlite
 * hands over is a view of its memory, reused for the next one: copied at once, into a buffer of the size of the last
 * reply of the same kind (`size`: replies of one kind are alike), grown if need be. Its own ArrayBuffer, never a
 * slice of Node's shared pool: it can be transferred whole to the server's thread, and back.
 */
export async function rawReply(pglite: RawPglite, message: Uint8Array, size: ReplySize): Promise<Buffer> {
  let reply = size.take();
  let length = 0;
  await pglite.execProtocolRawStream(message, {
    onRawData: (chunk) => {
      if (length + chunk.length > reply.length) {
        const bigger = Buffer.allocUnsafeSlow(Math.max(2 * reply.length, length + chunk.length));
        reply.copy(bigger, 0, 0, length);
        reply = bigger;
      }
      reply.set(chunk, length);
      length += chunk.length;
    },
  });
  size.saw(length);
  return reply.subarray(0, length);
}

/**
 * Rows, row count and NOTIFYs of a reply; the first error in it is thrown. `fields` are the columns when the reply
 * describes none (a prepared statement's, described when it was parsed); with `textAsBytes`, `text` values stay views
 * of the reply's buffer, otherwise they are decoded like every other value.
 */
export function readReply(pglite: RawPglite, reply: Buffer, options: { fields?: BytesResult['fields']; textAsBytes?: boolean } = {}): BytesResult {
  const result: BytesResult = { rows: [], fields: options.fields ?? [], affectedRows: 0, buffer: reply.buffer as ArrayBuffer, notifications: [] };
  const textAsBytes = options.textAsBytes ?? false;
  let error: Error | undefined;
  for (let at = 0; at < reply.length; ) {
    const type = String.fromCharCode(reply[at]);
    const end = at + 1 + reply.readInt32BE(at + 1);
    const body = reply.subarray(at + 5, end);
    at = end;
    if (type === 'T') result.fields = rowDescription(body);
    else if (type === 'D') result.rows.push(dataRow(pglite, body, result.fields, textAsBytes));
    else if (type === 'C') result.affectedRows = rowCount(cstring(body, 0).text);
    else if (type === 'E') error ??= databaseError(body);
    else if (type === 'A') {
      const channel = cstring(body, 4);
      result.notifications.push({ channel: channel.text, payload: cstring(body, channel.end).text });
    }
  }
  if (error) throw error;
  return result;
}

function cstring(body: Buffer, start: number): { text: string; end: number } {
  const zero = body.indexOf(0, start);
  return { text: body.toString('utf8', start, zero), end: zero + 1 };
}

/** RowDescription: per column its name, then table oid (4), column number (2), type oid (4), size (2), modifier (4), format (2). */
function rowDescription(body: Buffer): BytesResult['fields'] {
  const fields: BytesResult['fields'] = [];
  let at = 2;
  for (let i = body.readInt16BE(0); i > 0; i--) {
    const name = cstring(body, at);
    fields.push({ name: name.text, dataTypeID: body.readInt32BE(name.end + 6) });
    at = name.end + 18;
  }
  return fields;
}

function dataRow(pglite: RawPglite, body: Buffer, fields: BytesResult['fields'], textAsBytes: boolean): Record<string, unknown> {
  const row: Record<string, unknown> = {};
  let at = 2;
  for (let i = 0, n = body.readInt16BE(0); i < n; i++) {
    const length = body.readInt32BE(at);
    at += 4;
    const { name, dataTypeID } = fields[i];
    if (length < 0) row[name] = null;
    else if (textAsBytes && dataTypeID === TEXT_OID) row[name] = body.subarray(at, at + length);
    else {
      const text = body.toString('utf8', at, at + length);
      row[name] = pglite.parsers[dataTypeID]?.(text, dataTypeID) ?? text;
    }
    at += Math.max(length, 0);
  }
  return row;
}

/** The rows a command touched, from its tag (`INSERT 0 5`, `SELECT 3`, …), as PGlite's query() reads it. */
function rowCount(tag: string): number {
  const words = tag.split(' ');
  return ['INSERT', 'UPDATE', 'DELETE', 'COPY', 'MERGE'].includes(words[0]) ? parseInt(words[words.length - 1], 10) : 0;
}

/** ErrorResponse fields by their protocol codes, named as pg's DatabaseError names them (code, detail, constraint, …). */
const errorFields: Record<string, string> = {
  S: 'severity', C: 'code', D: 'detail', H: 'hint', P: 'position', p: 'internalPosition', q: 'internalQuery', W: 'where',
  s: 'schema', t: 'table', c: 'column', d: 'dataType', n: 'constraint', F: 'file', L: 'line', R: 'routine',
};

function databaseError(body: Buffer): Error {
  const fields: Record<string, string> = {};
  let message = 'unknown database error';
  for (let at = 0; body[at] !== 0 && at < body.length; ) {
    const code = String.fromCharCode(body[at]);
    const value = cstring(body, at + 1);
    if (code === 'M') message = value.text;
    else if (errorFields[code]) fields[errorFields[code]] = value.text;
    at = value.end;
  }
  return Object.assign(new Error(message), fields);
}
