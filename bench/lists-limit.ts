/**
 * The limit of lists.js: PostgreSQL (through `pg`) or a PGlite returning a list's JSON texts, stored as text in a
 * table of their own, as one `string_agg` value and in pages, read as bytes as the app reads its pages (a binary
 * COPY of a page's rows on PostgreSQL, src/db/copy-out.ts; a page's `string_agg` off PGlite's wire,
 * src/db/pglite-wire.ts). In a process
 * of its own: in the benchmark's, the read shared a heap full of received bodies, and its collections, with the
 * client's work. Forked with an IPC channel by lists.js; not meant to be run by hand.
 *
 * IPC, from the benchmark: {type: 'open', url?} (PostgreSQL at `url`, else an in-memory PGlite) → {type: 'opened'};
 * {type: 'store', list, file} (the texts, a JSON array of strings, read from `file`) → {type: 'stored'};
 * {type: 'read', list, pageRows, check} → {type: 'read', one, paged, bytes, sha256?} (the time of the text read as one
 * value, and in pages of `pageRows`, each alone, its length, and with `check` its digest);
 * {type: 'close'} → {type: 'closed'}. Any failure → {type: 'failed', error}. Its first message is {type: 'ready'}.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import pg from 'pg';
import { PGlite } from '@electric-sql/pglite';
import { copyRows, inlineSql, type LentText } from '../src/db/copy-out.js';
import { queryTextAsBytes, reusePageReply } from '../src/db/pglite-wire.js';

/** A page of a list's texts: joined by commas, as bytes lent as the app's are (db/chunk-pool.ts, pglite-wire.ts); how many, and the last `n`. */
interface Page {
  text: LentText;
  n: number;
  last: number;
}

interface Store {
  store(list: string, texts: string[]): Promise<void>;
  /** The texts after `after` in order of `n`, `rows` of them at most (null: all), read as bytes as the app's pages are. */
  page(list: string, after: number, rows: number | null): Promise<Page>;
  close(): Promise<void>;
}

const CREATE = 'create table bench_limit (list text, n int, json text, primary key (list, n))';

/**
 * The texts in order of `n`, as the primary key's index yields them, joined as they come: `string_agg(json, ','
 * order by n)` sorts its input first (PostgreSQL 15 always does), work the app's pages do not do (src/db/keyset.ts),
 * and a limit that does more than the app flatters it. The digest the benchmark checks on every read proves the
 * order. `$1` the list, `$2` the last `n` before the page, `$3` its size (null: no limit). On PGlite, as the app's
 * embedded pages are read (src/db/keyset.ts).
 */
const PAGE = `select count(*)::int as n, max(n) as last, string_agg(json, ',') as json
  from (select n, json from bench_limit where list = $1 and n > $2 order by n limit $3) page`;

/** On PostgreSQL: a page as its rows (`n`, text) in order, as the app's pages are read; `$3` its size. */
const PG_PAGE = 'select n, json from bench_limit where list = $1 and n > $2 order by n limit $3';
/** And the whole list as one row (its last `n`, the texts joined in order). */
const PG_ONE = `select max(n), string_agg(json, ',') from (select n, json from bench_limit where list = $1 and n > $2 order by n) page`;

async function postgres(url: string): Promise<Store> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(CREATE);
  return {
    async store(list, texts) {
      await client.query('delete from bench_limit where list = $1', [list]);
      await client.query(`insert into bench_limit select $1, n, t from unnest($2::text[]) with ordinality as u(t, n)`, [list, texts]);
      await client.query('analyze bench_limit');
    },
    async page(list, after, rows) {
      // As the app reads its pages on PostgreSQL (src/db/copy-out.ts): the texts as bytes through a binary COPY, not
      // decoded into JS strings by pg, work the app does not do; a page as its rows, joined as they arrive, and the
      // whole list as one value. COPY takes no parameters: the values written in, as the app's are (`inlineSql`).
      const sql = inlineSql({ sql: rows === null ? PG_ONE : PG_PAGE, bindings: [list, after, rows] });
      const { text, n, lastId } = await copyRows(client, `copy (${sql}) to stdout (format binary)`);
      return { text, n, last: lastId };
    },
    close: () => client.end(),
  };
}

async function embedded(): Promise<Store> {
  const db = new PGlite();
  await db.query(CREATE);
  return {
    async store(list, texts) {
      await db.query('delete from bench_limit where list = $1', [list]);
      await db.query(`insert into bench_limit select $1, n, t from json_array_elements_text($2::json) with ordinality as u(t, n)`, [list, JSON.stringify(texts)]);
      await db.query('analyze bench_limit');
    },
    async page(list, after, rows) {
      // Bytes off the wire, not decoded into a string: PGlite's query() decodes every text value in JavaScript,
      // which is not the database's work and which the app's list pages do not pay either (src/db/pglite-wire.ts).
      const [row] = (await queryTextAsBytes(db, PAGE, [list, after, rows])).rows as { n: number; last: number | null; json: Buffer | null }[];
      // Its reply buffer reused for a later page once given back, as the app's are.
      return { text: { chunks: row.json ? [row.json] : [], giveBack: (chunk) => reusePageReply(chunk.buffer as ArrayBuffer) }, n: row.n, last: row.last ?? after };
    },
    close: () => db.close(),
  };
}

/**
 * One read of the list, either way, timed alone: as one value, and in pages of the app's size (`pageRows`) one after
 * another, as the app's pages are read but nothing else done meanwhile. Which is faster depends on the list's size
 * and the database (one value of 50 MB costs PGlite more than its pages do). Its bytes are counted, and a page's lent
 * chunks given back as soon as they are, as the app gives them back once written; with `check`, the pages are kept
 * and their digest taken after the timing.
 */
async function read(list: string, pageRows: number | null, check: boolean): Promise<{ ms: number; bytes: number; sha256?: string }> {
  const started = performance.now();
  const pages: LentText[] = [];
  let bytes = 0;
  for (let after = 0; ; ) {
    const page = await store!.page(list, after, pageRows);
    if (page.n > 0) {
      bytes += (bytes > 0 ? 1 : 0) + textBytes(page.text);
      if (check) pages.push(page.text);
      else giveBack(page.text);
    }
    if (pageRows === null || page.n < pageRows) break;
    after = page.last;
  }
  const ms = performance.now() - started;
  if (!check) return { ms, bytes };
  const hash = createHash('sha256');
  pages.forEach((text, i) => {
    if (i > 0) hash.update(',');
    for (const chunk of text.chunks) hash.update(chunk);
    giveBack(text);
  });
  return { ms, bytes, sha256: hash.digest('hex') };
}

const textBytes = (text: LentText) => text.chunks.reduce((sum, chunk) => sum + chunk.length, 0);
const giveBack = (text: LentText) => text.chunks.forEach((chunk) => text.giveBack(chunk));

type Message =
  | { type: 'open'; url?: string }
  | { type: 'store'; list: string; file: string }
  | { type: 'read'; list: string; pageRows: number; check: boolean }
  | { type: 'close' };

let store: Store | undefined;
let reads = 0;

async function handle(message: Message): Promise<Record<string, unknown>> {
  switch (message.type) {
    case 'open':
      store = message.url ? await postgres(message.url) : await embedded();
      return { type: 'opened' };
    case 'store':
      await store!.store(message.list, JSON.parse(fs.readFileSync(message.file, 'utf8')) as string[]);
      return { type: 'stored' };
    case 'read': {
      // The two ways take turns going first, so that neither always finds the other's pages in the cache.
      const { list, pageRows, check } = message;
      let one, paged;
      if (reads++ % 2 === 0) {
        one = await read(list, null, check);
        paged = await read(list, pageRows, check);
      } else {
        paged = await read(list, pageRows, check);
        one = await read(list, null, check);
      }
      if (one.bytes !== paged.bytes || one.sha256 !== paged.sha256) throw new Error(`${list}: its pages differ from its one value`);
      return { type: 'read', one: one.ms, paged: paged.ms, bytes: one.bytes, sha256: one.sha256 };
    }
    case 'close':
      await store?.close();
      store = undefined;
      return { type: 'closed' };
  }
}

// One message at a time, in order: the benchmark waits for each answer before it sends the next.
process.on('message', (message: Message) => {
  handle(message).then(
    (reply) => process.send!(reply),
    (err: Error) => process.send!({ type: 'failed', error: err.message }),
  );
});
process.on('disconnect', () => process.exit(0));
process.on('SIGTERM', () => process.exit(0));
process.send!({ type: 'ready' });
