import type { Knex } from 'knex';
import type { Db } from './database.js';
import { textsList, type ListQuery } from './list-query.js';
import { LIST_READ_SETTINGS, LIST_READ_SQL } from './list-reads.js';
import { copyRows, inlineSql, type LentText } from './copy-out.js';
import { giveBackBytes } from './pglite-thread.js';
import { assertTenancy } from './tenancy.js';

/** Rows per page when a list is streamed from PostgreSQL. */
export const PAGE_ROWS = 5000;

/**
 * Rows per page on the embedded database. PGlite runs one statement at a time, so every other request
 * (`/healthz` included) waits for the page being read, and a page is also a round trip to PGlite's thread:
 * smaller pages keep other requests waiting less, larger ones make a long list faster (bench/embedded.ts and
 * bench/lists.ts weigh the two).
 */
export const EMBEDDED_PAGE_ROWS = 2000;

/**
 * A page of a list: the records' JSON texts joined by commas, as text or as its UTF-8 bytes (in one buffer, or in
 * chunks lent by db/chunk-pool.ts, to be given back once written).
 */
export type JsonPage = string | Buffer | LentText;

/**
 * A list as JSON text, in keyset pages: each page is one query for the next PAGE_ROWS rows by id, turned
 * into `j1,j2,…` by the SQL text expression `json` (over the row; the stored `api_json` for the big
 * lists). However long the list, the server holds one page at a time, and a connection only while it
 * reads one (a slow client never holds one). `base` builds the filtered, workspace-scoped query afresh
 * for each page.
 *
 * A page's texts are joined in the order the page query yields them, by id (its ORDER BY ... LIMIT feeds the
 * aggregate directly, with nothing between them that could reorder rows). Not `string_agg(j, ',' order by id)`:
 * PostgreSQL before 16 sorts an ordered aggregate's input even when it arrives sorted, a large share of a long
 * list's time in the database (see productText for the variants' own aggregate).
 *
 * Each page runs with the list settings (LIST_READ_SETTINGS, list-reads.ts), bitmap scans off among them: before a
 * table has statistics (a fresh import) the planner guesses a few hundred rows for `workspace_id = ? and id > ?` and
 * fetches every remaining row of the workspace through a bitmap, then sorts them for the first page, quadratic over
 * the list; the ordered index scan reads only the page's rows.
 *
 * On PostgreSQL through node-postgres a page is one round trip, the page query's rows (id, text) through
 * `COPY … TO STDOUT (FORMAT binary)`, joined as they arrive and kept as bytes (db/copy-out.ts): node-postgres decodes every
 * ordinary result into a JS string, which the response then encodes back, most of a long list's server time and
 * memory. The setting goes in the same simple query, local to its implicit transaction: one round trip instead
 * of four (begin, set, select, commit).
 */
export async function* jsonPages(db: Db, base: () => Knex.QueryBuilder, idColumn: string, json: string): AsyncGenerator<JsonPage> {
  const postgres = db.client.config.client === 'pg';
  const copy = postgres && !db.isTransaction;
  const rows = postgres ? PAGE_ROWS : EMBEDDED_PAGE_ROWS;
  let after = 0;
  for (;;) {
    const page = () => base().where(idColumn, '>', after).orderBy(idColumn).limit(rows);
    const { text, n, lastId } = copy
      ? await copiedPage(db, page().select(db.raw(`${idColumn}::int as id`), db.raw(`(${json})::text as j`)))
      : await aggregatedPage(db, page, idColumn, json, { after, rows });
    if (!n) return;
    yield text;
    if (n < rows) return;
    after = lastId;
  }
}

/** A list (see ListQuery) as JSON pages. */
export function listPages(db: Db, list: ListQuery): AsyncGenerator<JsonPage> {
  return jsonPages(db, list.base, list.idColumn, list.json);
}

/**
 * A whole list, unfiltered: the texts kept beside its table (db/list-query.ts `textsList`), read in the same pages.
 * PostgreSQL finds a text in those narrow rows without walking the table's other columns, and reads no page that
 * holds them. A filtered list reads its table, where the filtered columns are.
 */
export function textPages(db: Db, texts: string, workspaceId: number): AsyncGenerator<JsonPage> {
  return listPages(db, textsList(db, texts, workspaceId));
}

/** The page through COPY, in one round trip: its rows (id, text) in order, joined by copy-out.ts as they arrive. */
async function copiedPage(db: Db, query: Knex.QueryBuilder): Promise<{ text: LentText; n: number; lastId: number }> {
  const native = query.toSQL().toNative();
  assertTenancy(native.sql); // sent around knex, so around its check too; its text before the values are written in
  const sql = `${LIST_READ_SQL}; copy (${inlineSql(native)}) to stdout (format binary)`;
  const connection = await db.client.acquireConnection();
  try {
    return await copyRows(connection, sql);
  } finally {
    await db.client.releaseConnection(connection);
  }
}

/**
 * The page as one `string_agg` value, with the list settings for it: on the embedded database, and inside a
 * transaction. On the embedded database it is one round trip to PGlite's thread (settings, statement and
 * transaction together) and its text arrives as bytes (db/pglite-wire.ts), sent on as they are, as COPY's are on
 * PostgreSQL, and the buffer they arrived in goes back to the thread for a later page once they are sent
 * (db/pglite-thread.ts `giveBackBytes`). Outside a transaction the page names its place, `keyset: { after, rows }`: PGlite's thread, finding them as the statement's last two values,
 * reads the next page while this one is sent (pglite-worker.ts, readAheads).
 */
async function aggregatedPage(
  db: Db,
  page: () => Knex.QueryBuilder,
  idColumn: string,
  json: string,
  { after, rows }: { after: number; rows: number },
): Promise<{ text: JsonPage; n: number; lastId: number }> {
  const aggregate = (q: Db) => q.from(page().select(`${idColumn} as id`, q.raw(`${json} as j`)).as('page')).select(q.raw(`string_agg(j::text, ',') as json, max(id) as last_id, count(*)::int as n`));
  const keyset = db.isTransaction ? {} : { keyset: { after, rows } };
  const [row] =
    db.client.config.client === 'pg'
      ? await db.transaction(async (trx) => {
          await trx.raw(LIST_READ_SQL);
          return aggregate(trx);
        })
      : await aggregate(db).options({ textAsBytes: true, settings: LIST_READ_SETTINGS, ...keyset });
  // From PGlite's thread, bytes lent: its reply buffer goes back to the thread once the page is sent.
  const text: JsonPage = Buffer.isBuffer(row.json) ? { chunks: [row.json], giveBack: giveBackBytes } : row.json;
  return { text, n: row.n, lastId: row.last_id };
}
