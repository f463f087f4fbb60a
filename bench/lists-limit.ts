/**
 * The limit of lists.js: PostgreSQL (through `pg`) or a PGlite returning a list's JSON texts, stored as text in a
 * table of their own, as one `string_agg` value (READ), read as bytes as the app reads its pages (a binary COPY on
 * PostgreSQL, src/db/copy-out.ts; the reply off PGlite's wire, src/db/pglite-wire.ts). In a process of its own: in the
 * benchmark's, the read shared a heap full of received bodies, and its collections, with the client's work. Forked
 * with an IPC channel by lists.js; not meant to be run by hand.
 *
 * IPC, from the benchmark: {type: 'open', url?} (PostgreSQL at `url`, else an in-memory PGlite) → {type: 'opened'};
 * {type: 'store', list, file} (the texts, a JSON array of strings, read from `file`) → {type: 'stored'};
 * {type: 'read', list} → {type: 'read', ms, sha256} (the time of the read alone, and the digest of the text);
 * {type: 'close'} → {type: 'closed'}. Any failure → {type: 'failed', error}. Its first message is {type: 'ready'}.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import pg, { escapeLiteral } from 'pg';
import { PGlite } from '@electric-sql/pglite';
import { copyPage } from '../src/db/copy-out.js';
import { queryTextAsBytes } from '../src/db/pglite-wire.js';

interface Store {
  store(list: string, texts: string[]): Promise<void>;
  /** The text, as bytes: as the app's pages read it. */
  read(list: string): Promise<Buffer>;
  close(): Promise<void>;
}

const CREATE = 'create table bench_limit (list text, n int, json text, primary key (list, n))';
/**
 * The list's texts in order of `n`, as the primary key's index yields them, joined as they come (READ):
 * `string_agg(json, ',' order by n)` sorts its input first (PostgreSQL 15 always does), work the app's pages do not
 * do (src/db/pages.ts), and a limit that does more than the app flatters it. The digest the benchmark checks on every
 * read proves the order.
 */
const READ_PAGE = `select n, json from bench_limit where list = $1 order by n`;
const READ = `select string_agg(json, ',') as json from (${READ_PAGE}) texts`;

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
    async read(list) {
      // As the app reads its pages on PostgreSQL (src/db/copy-out.ts): the text as bytes through a binary COPY, not
      // decoded into a JS string by pg, work the app does not do.
      const page = `select count(*)::int, max(n), string_agg(json, ',') from (${READ_PAGE.replace('$1', escapeLiteral(list))}) page`;
      return (await copyPage(client, `copy (${page}) to stdout (format binary)`)).text;
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
    async read(list) {
      // Bytes off the wire, not decoded into a string: PGlite's query() decodes every text value in JavaScript,
      // which is not the database's work and which the app's list pages do not pay either (src/db/pglite-wire.ts).
      const { rows } = await queryTextAsBytes(db, READ, [list]);
      return rows[0].json as Buffer;
    },
    close: () => db.close(),
  };
}

type Message = { type: 'open'; url?: string } | { type: 'store'; list: string; file: string } | { type: 'read'; list: string } | { type: 'close' };

let store: Store | undefined;

async function handle(message: Message): Promise<Record<string, unknown>> {
  switch (message.type) {
    case 'open':
      store = message.url ? await postgres(message.url) : await embedded();
      return { type: 'opened' };
    case 'store':
      await store!.store(message.list, JSON.parse(fs.readFileSync(message.file, 'utf8')) as string[]);
      return { type: 'stored' };
    case 'read': {
      const started = performance.now();
      const text = await store!.read(message.list);
      const ms = performance.now() - started;
      return { type: 'read', ms, sha256: createHash('sha256').update(text).digest('hex') };
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
