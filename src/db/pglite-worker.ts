/**
 * The embedded database's own thread: PGlite is WebAssembly, and a query runs to its end on the thread
 * that calls it. Here it blocks only this thread, while the server's thread keeps answering requests.
 * Requests come from pglite-thread.ts in order and PGlite runs them in that order; one knex connection
 * (knex-pglite's pool of one) keeps each transaction's statements together.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { PGlite, type QueryOptions, type Results } from '@electric-sql/pglite';
import { serialize } from 'pg-protocol';
import type { ThreadRequest, ThreadReply, ThreadOptions, WireError } from './pglite-thread.js';
import { readStatementName, setLocalStatements } from './list-reads.js';
import { parseNamed, queryTextAsBytes, rawReply, readReply, ReplySize, reusePageReply } from './pglite-wire.js';

const port = parentPort!;
const options = workerData as ThreadOptions;
const listeners = new Map<number, Promise<() => Promise<void>>>();
/** Each listener's channel as PostgreSQL names it (unquoted names fold to lower case), for NOTIFYs read off the wire. */
const channels = new Map<number, string>();
const postgresName = (channel: string) => (channel.startsWith('"') && channel.endsWith('"') ? channel.slice(1, -1) : channel.toLowerCase());

const pglite = new PGlite({ dataDir: options.dataDir, ...(options.loadDataDir && { loadDataDir: new Blob([options.loadDataDir]) }) });

/** Every own field of a DatabaseError (code, constraint, detail, …) travels; the class does not. */
function wireError(err: unknown): WireError {
  if (!(err instanceof Error)) return { message: String(err) };
  const fields: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(err)) if (value === undefined || ['string', 'number', 'boolean'].includes(typeof value)) fields[key] = value;
  return { ...fields, name: err.name, message: err.message };
}

/** A statement parsed under a name: its text, its parameters' types and its columns. */
interface Named {
  sql: string;
  types: number[];
  fields: { name: string; dataTypeID: number }[];
}
const named = new Map<string, Named>();
/** Replies of prepared statements: a few rows, mostly. */
const namedReplySize = new ReplySize(4 * 1024);

/** The messages of one call, as one buffer: PGlite takes them in one pass, where its query() makes six. */
function messages(...parts: Buffer[]): Uint8Array {
  return Buffer.concat(parts);
}

/** Protocol messages as PGlite's execProtocol returns them (its own copy of pg-protocol's parser). */
type Message = { name: string } & Record<string, unknown>;

/**
 * A query under a name (preparedQuery, src/db/prepared.ts): parsed once on PGlite's one connection, then only
 * bound and run. PGlite's query() parses and plans every statement again on every call, in WebAssembly; for the
 * large statements of a quote's creation that is most of their time. As PostgreSQL does for a prepared
 * statement, the first runs are planned for their values and later ones reuse a generic plan when it is as good.
 * Values are converted as PGlite's query() converts them (its serializer for each parameter's type), and
 * rows as it parses them, so a statement answers the same with or without a name.
 */
async function namedQuery(name: string, sql: string, params: unknown[] = []): Promise<Results> {
  return pglite.runExclusive(async () => {
    let statement = named.get(name);
    if (statement && statement.sql !== sql) throw new Error(`the prepared statement "${name}" was given another text`);
    if (!statement) {
      const reply = await pglite.execProtocol(messages(serialize.parse({ name, text: sql }), serialize.describe({ type: 'S', name }), serialize.sync()));
      const found = reply.messages as Message[];
      const parameters = found.find((m) => m.name === 'parameterDescription') as { dataTypeIDs: number[] } | undefined;
      const columns = found.find((m) => m.name === 'rowDescription') as { fields: Named['fields'] } | undefined;
      statement = { sql, types: parameters?.dataTypeIDs ?? [], fields: columns?.fields.map(({ name, dataTypeID }) => ({ name, dataTypeID })) ?? [] };
      named.set(name, statement);
    }
    const { types, fields } = statement;
    const values = params.map((value, i) => (value == null ? null : (pglite.serializers[types[i]]?.(value) ?? String(value))));
    // Read off the wire (pglite-wire.ts), each value decoded once: PGlite's own parser decodes every value into a
    // string as part of a protocol message, and each would then be parsed again by its type (a claim of webhook deliveries
    // returns a hundred rows of eight values).
    const reply = await rawReply(pglite, messages(serialize.bind({ statement: name, values }), serialize.execute({}), serialize.sync()), namedReplySize);
    const { rows, affectedRows, notifications } = readReply(pglite, reply, { fields });
    forwardNotifications(notifications);
    return { rows, affectedRows, fields };
  });
}

/**
 * A query whose text columns come back as bytes (pglite-wire.ts), transferred to the server's thread without a
 * copy. `settings` apply to it alone (SET LOCAL; in a transaction of its own, begun and committed in the same pass,
 * when none is open): a list page is then one round trip. PGlite's own listeners do not see this reply: a NOTIFY in
 * it is handed to this thread's listeners here.
 */
async function bytesQuery(sql: string, params: unknown[] | undefined, settings: Record<string, string> = {}, prepare = false): Promise<{ value: unknown; transfer: ArrayBuffer[] }> {
  const { buffer, notifications, ...result } = await pglite.runExclusive(async () => {
    const set = setLocalStatements(settings);
    const own = set.length > 0 && !pglite.isInTransaction();
    // Parsed under a name outside a transaction only: a text that fails to parse would abort one.
    const statement = prepare && !pglite.isInTransaction() ? await parsedName(sql) : undefined;
    return queryTextAsBytes(pglite, sql, params, { ...(own ? { before: ['begin', ...set].join('; '), after: 'commit' } : { before: set.join('; ') }), statement });
  });
  forwardNotifications(notifications);
  return { value: result, transfer: [buffer] };
}

/** How many texts `prepare` parses under a name at most; past it, a new text is parsed on every run. */
const MAX_PARSED_READS = 200;
/** The names `prepare` texts were parsed under (null: a text that could not be, run unnamed). */
const parsedReads = new Map<string, string | null>();

/**
 * The name a read's text is parsed under on PGlite's one connection, parsing it the first time: from then on it is
 * only bound and run, and PostgreSQL plans it as a prepared statement (the first runs for their values, then one
 * generic plan when it is as good), every time under the settings it runs with (a plan is made, and kept, under them).
 * Parsing and planning run in WebAssembly, a large share of a list page's time in the database.
 */
async function parsedName(sql: string): Promise<string | undefined> {
  const known = parsedReads.get(sql);
  if (known !== undefined) return known ?? undefined;
  if (parsedReads.size >= MAX_PARSED_READS) return undefined;
  const name = readStatementName(sql);
  try {
    await parseNamed(pglite, name, sql);
    parsedReads.set(sql, name);
    return name;
  } catch {
    parsedReads.set(sql, null); // run unnamed, where its error, if it has one, reaches the caller
    return undefined;
  }
}

/**
 * A statement of another knex connection while a transaction is open (pglite-thread.ts PgliteSessions): run inside
 * that transaction, in a savepoint made read-only and rolled back after, all in one pass nothing else can enter. A
 * write fails there (SQLSTATE 25006) and its session waits for the transaction to end; nothing it did outlives the
 * savepoint. With no transaction open any longer, it runs as any statement does.
 */
async function interleavedQuery(request: PageRequest): Promise<Answer> {
  const { interleave: _, ...options } = request.options ?? {};
  const textAsBytes = options.textAsBytes === true;
  const inside = await pglite.runExclusive(async () => {
    if (!pglite.isInTransaction()) return null;
    const before = ['savepoint quoting_read', 'set local transaction_read_only = on', ...setLocalStatements((options.settings as Record<string, string> | undefined) ?? {})];
    return queryTextAsBytes(pglite, request.sql, request.params, { before: before.join('; '), after: 'rollback to savepoint quoting_read; release savepoint quoting_read', textAsBytes });
  });
  if (!inside) return run({ ...request, options: Object.keys(options).length ? options : undefined });
  const { buffer, notifications: _none, ...result } = inside; // read-only: it sent no NOTIFY
  if (textAsBytes) return { value: result, transfer: [buffer] };
  reusePageReply(buffer); // every value decoded: nothing reads the buffer
  return { value: result };
}

/**
 * List pages read ahead. A list's page is a `textAsBytes` query naming its place, `keyset: { after, rows }`
 * (src/db/keyset.ts): the id after which it starts and its row count, which are its last two values (checked here, on
 * the values sent), and its row holds the page's `n` and `last_id`. Once a full page
 * has been sent, the same statement is run for the page after it, so that PGlite reads on while the server's thread
 * writes this page to its socket and asks for the next one, instead of waiting for that request (a round trip a
 * page, and any write the server's thread was in the middle of). The request that asks for it gets that
 * reply. Reads ahead stay valid across other list pages, which write nothing; any other request drops them all before
 * it runs, so a page is never older than a statement that came before its request. At most four are kept (four lists
 * streaming at once); a list whose client went away leaves one, dropped at the next such request or when a fifth comes.
 */
type Answer = { value: unknown; transfer?: ArrayBuffer[] };
const readAheads = new Map<string, Promise<Answer>>();
const READ_AHEAD_MOST = 4;

type PageRequest = Extract<ThreadRequest, { op: 'query' }>;
interface Keyset {
  after: unknown;
  rows: unknown;
}

/** A list page whose last two values are the place it names. */
function isPage(request: ThreadRequest): request is PageRequest & { options: { keyset: Keyset } } {
  if (request.op !== 'query' || request.options?.textAsBytes !== true) return false;
  const keyset = request.options.keyset as Keyset | undefined;
  const params = request.params ?? [];
  return keyset !== undefined && params.at(-2) === keyset.after && params.at(-1) === keyset.rows;
}
const pageKey = (sql: string, params: unknown[], settings: unknown) => JSON.stringify([sql, params, settings ?? null]);

/** The page read ahead for this request, if it is one; any request other than a list page drops every read ahead. */
function readAheadFor(request: ThreadRequest): Promise<Answer> | undefined {
  if (isPage(request)) {
    const key = pageKey(request.sql, request.params ?? [], request.options?.settings);
    const ahead = readAheads.get(key);
    readAheads.delete(key);
    return ahead;
  }
  for (const ahead of readAheads.values()) dropReadAhead(ahead);
  readAheads.clear();
  return undefined;
}

/** After a full page of a list outside a transaction, reads the next one (see readAheads). */
function readNextPage(request: ThreadRequest, value: unknown): void {
  if (!isPage(request) || pglite.isInTransaction()) return;
  const params = request.params ?? [];
  const { rows } = request.options.keyset;
  const row = (value as { rows: { n?: unknown; last_id?: unknown }[] }).rows[0];
  if (!row || row.n !== rows || typeof row.last_id !== 'number') return;
  const next = [...params.slice(0, -2), row.last_id, rows];
  const settings = request.options?.settings as Record<string, string> | undefined;
  if (readAheads.size >= READ_AHEAD_MOST) {
    const [oldest, ahead] = readAheads.entries().next().value!;
    readAheads.delete(oldest);
    dropReadAhead(ahead);
  }
  const key = pageKey(request.sql, next, settings);
  const stale = readAheads.get(key); // the same page of a list whose client went away
  if (stale) dropReadAhead(stale);
  const ahead = bytesQuery(request.sql, next, settings);
  ahead.catch(() => undefined); // its request, if it comes, gets the failure
  readAheads.set(key, ahead);
}

/** A read ahead no request will take: its reply buffer goes back to the pool. */
function dropReadAhead(ahead: Promise<Answer>): void {
  ahead.then(({ transfer }) => transfer?.forEach(reusePageReply), () => undefined);
}

/** NOTIFYs found in a reply read off the wire, which PGlite's own listeners never see, handed to this thread's. */
function forwardNotifications(notifications: { channel: string; payload: string }[]): void {
  for (const { channel, payload } of notifications) {
    for (const [listenId, name] of channels) if (name === channel) port.postMessage({ type: 'notify', listenId, payload } satisfies ThreadReply);
  }
}

async function run(request: Exclude<ThreadRequest, { op: 'reuse' }>): Promise<{ value: unknown; transfer?: ArrayBuffer[] }> {
  switch (request.op) {
    case 'query':
      if (request.options?.interleave) return interleavedQuery(request);
      if (request.options?.textAsBytes) return bytesQuery(request.sql, request.params, request.options.settings as Record<string, string> | undefined, request.options.prepare === true);
      if (typeof request.options?.name === 'string') return { value: await namedQuery(request.options.name, request.sql, request.params) };
      // Without values (BEGIN, COMMIT, SAVEPOINT, SET LOCAL, …) the simple protocol takes one pass through PGlite, the
      // extended one of its query() six; rows and values come out the same.
      if (!request.params?.length && !request.options) return { value: (await pglite.exec(request.sql)).at(-1) ?? { rows: [], fields: [], affectedRows: 0 } };
      return { value: await pglite.query(request.sql, request.params, request.options as QueryOptions | undefined) };
    case 'exec':
      return { value: await pglite.exec(request.sql) };
    case 'listen':
      channels.set(request.listenId, postgresName(request.channel));
      listeners.set(
        request.listenId,
        pglite.listen(request.channel, (payload) => port.postMessage({ type: 'notify', listenId: request.listenId, payload } satisfies ThreadReply)),
      );
      await listeners.get(request.listenId);
      return { value: null };
    case 'unlisten': {
      const unlisten = listeners.get(request.listenId);
      listeners.delete(request.listenId);
      channels.delete(request.listenId);
      if (unlisten && !pglite.closed) await (await unlisten)();
      return { value: null };
    }
    case 'dump': {
      const buffer = await (await pglite.dumpDataDir(request.compression)).arrayBuffer();
      return { value: buffer, transfer: [buffer] };
    }
    case 'close':
      if (!pglite.closed) await pglite.close();
      return { value: null };
  }
}

port.on('message', (request: ThreadRequest) => {
  if (request.op === 'reuse') return reusePageReply(request.buffer);
  (readAheadFor(request) ?? run(request)).then(
    ({ value, transfer }) => {
      port.postMessage({ type: 'reply', id: request.id, ok: true, value } satisfies ThreadReply, transfer);
      readNextPage(request, value);
    },
    (err: unknown) => port.postMessage({ type: 'reply', id: request.id, ok: false, error: wireError(err) } satisfies ThreadReply),
  );
});

pglite.waitReady.then(
  () => port.postMessage({ type: 'ready' } satisfies ThreadReply),
  (err: unknown) => port.postMessage({ type: 'failed', error: wireError(err) } satisfies ThreadReply),
);
