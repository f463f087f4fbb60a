import type { Knex } from 'knex';
import type { Db } from './database.js';
import { settingRead } from './prepared.js';
import type { ListQuery } from './list-query.js';
import { LIST_READ_SETTINGS, LIST_READ_SQL, setLocal } from './list-reads.js';
import type { CompiledSql } from './statement-shapes.js';

/** Rows on a page of the app's HTML lists (the spec's page size for them). */
export const NUMBERED_PAGE_SIZE = 50;

/**
 * One numbered page of a list, newest first. `pages` is at least 1 (an empty list has one empty page); a `page`
 * past the end has no rows, and the page showing it decides what to say.
 */
export interface NumberedPage<T> {
  rows: T[];
  total: number;
  page: number;
  size: number;
  pages: number;
}

/**
 * Where a page starts when it was reached by a link from its neighbour: below the id of the previous page's last row
 * (`before`, the next link) or above the next page's first (`after`, the previous link).
 */
export interface PageCursor {
  before?: number;
  after?: number;
}

/**
 * Page `page` of a list: `size` rows by id descending, after the (page - 1) * size newest, and the count of the whole
 * filtered list. `json` is a row's SQL JSON expression, selected as objects (cast to json: text or json alike).
 * `base` builds the filtered, workspace-scoped query afresh (with `scoped()`, as keyset.ts's lists do), for the rows
 * and for the count. `total`, when given, reads the count instead (a list whose counts are kept, where counting its
 * rows would read them all). On a pool the two statements run side by side (the embedded database queues them on
 * its one connection); in a transaction one after the other, its one connection running a statement at a time. A
 * page number below 1, or none, counts as 1.
 */
export async function numberedPage<T>(
  db: Db,
  base: () => Knex.QueryBuilder,
  opts: { idColumn: string; json: string; page: number; size?: number; total?: () => Promise<number> },
): Promise<NumberedPage<T>> {
  const size = opts.size ?? NUMBERED_PAGE_SIZE;
  const page = pageNumber(opts.page, size);
  const rows = () => pageRows<T>(db, pageRowsQuery(db, base, { ...opts, skip: pageSkip(page, size), size }));
  const count = opts.total ?? (async () => ((await base().first(db.raw('count(*)::int as n')))?.n as number | undefined) ?? 0);
  const [found, total] = db.isTransaction ? [await rows(), await count()] : await Promise.all([rows(), count()]);
  return { rows: found, total, page, size, pages: Math.max(1, Math.ceil(total / size)) };
}

/**
 * The select of a page's rows, each its `json` text: newest first, or, after the previous link's cursor (`after`),
 * oldest first (the caller reverses them). A cursor reads the page by id from where the link says it starts, however
 * deep: no rows are skipped. A page number alone skips the `skip` rows before it (pageSkip) by id (see below).
 * `json` is written for the page's rows alone, outside the select that finds them, so skipped rows are never rendered.
 *
 * `firstId`, when given, is the list's own select of the id `skip` rows below its newest (none when the list is
 * shorter): a list that keeps counts by id range finds it from them, however deep, where the default walks the
 * skipped rows' ids.
 */
export function pageRowsQuery(
  db: Db,
  base: () => Knex.QueryBuilder,
  opts: { idColumn: string; json: string; skip: number; size?: number; cursor?: PageCursor; firstId?: (skip: number) => Knex.QueryBuilder },
): Knex.QueryBuilder {
  const size = opts.size ?? NUMBERED_PAGE_SIZE;
  const { before, after } = opts.cursor ?? {};
  const { skip } = opts;
  // A page number without its cursor: the skipped rows are counted by their ids alone (an index-only scan when the
  // filters allow), and the page read from the first id after them, as its cursor would.
  const firstId = opts.firstId ?? ((k: number) => base().select(opts.idColumn).orderBy(opts.idColumn, 'desc').offset(k).limit(1, { skipBinding: true }));
  const query = before !== undefined ? base().where(opts.idColumn, '<', before).orderBy(opts.idColumn, 'desc')
    : after !== undefined ? base().where(opts.idColumn, '>', after).orderBy(opts.idColumn, 'asc')
    : skip === 0 ? base().orderBy(opts.idColumn, 'desc')
    : base().where(opts.idColumn, '<=', firstId(skip)).orderBy(opts.idColumn, 'desc');
  const alias = opts.idColumn.split('.')[0];
  return db.select(db.raw(`(${opts.json})::text as json`)).from(query.limit(size, { skipBinding: true }).select(`${alias}.*`).as(alias));
}

/**
 * The page's rows (their `json` texts, parsed), read as keyset.ts reads its pages, with the list settings
 * (LIST_READ_SETTINGS, list-reads.ts), the statement's alone (listRead). In the caller's transaction they would
 * outlast the page: there the plan is the planner's.
 */
async function pageRows<T>(db: Db, query: Knex.QueryBuilder): Promise<T[]> {
  const rows = await listRead<{ json: string | Buffer }>(db, query);
  return rows.map((r) => JSON.parse(r.json.toString()) as T);
}

/** The list settings with sequential scans off too (listRead `indexOrder`), and as one simple query's text. */
const INDEX_ORDER_SETTINGS: Readonly<Record<string, string>> = { ...LIST_READ_SETTINGS, enable_seqscan: 'off' };
const INDEX_ORDER_SQL = setLocal(INDEX_ORDER_SETTINGS);

/**
 * A list's read: a query's rows under the list settings (LIST_READ_SETTINGS), in one round trip, the statement
 * prepared once per connection so that a page's shape is parsed once and planned under the settings, not on every
 * request: on PostgreSQL by prepared.ts settingRead, on the embedded database by PGlite's thread (pglite-worker.ts
 * `prepare`, with texts as bytes, which may come back as Buffers). Its LIMIT is best written in (`skipBinding`): a
 * generic plan guessing at a LIMIT's value is dearer than the custom plans, so PostgreSQL would plan every run.
 *
 * `indexOrder`: sequential scans off too, for a statement whose reads must follow an index's order to stop early (the
 * planner plans a subquery for all its rows, not for the LIMIT outside it that stops reading them).
 */
export async function listRead<R>(db: Db, query: Knex.QueryBuilder | CompiledSql, also: { indexOrder?: boolean } = {}): Promise<R[]> {
  const compiled = 'native' in query ? query : undefined;
  const statement = compiled ? db.raw(compiled.sql, compiled.bindings as Knex.RawBinding) : (query as Knex.QueryBuilder);
  const rows = async (pending: Knex.Raw | Knex.QueryBuilder): Promise<R[]> => (compiled ? (await pending).rows : await pending);
  if (db.isTransaction) return rows(statement);
  const settings = also.indexOrder ? INDEX_ORDER_SETTINGS : LIST_READ_SETTINGS;
  if (db.client.config.client === 'pg') return settingRead<R>(db, compiled?.native ?? statement.toSQL().toNative(), also.indexOrder ? INDEX_ORDER_SQL : LIST_READ_SQL);
  return rows(statement.options({ textAsBytes: true, settings, prepare: true }));
}

/** numberedPage over an area's list (see ListQuery). */
export function numberedListPage<T>(db: Db, list: ListQuery, page: number, size?: number): Promise<NumberedPage<T>> {
  return numberedPage<T>(db, list.base, { idColumn: list.idColumn, json: list.json, page, size, total: list.total });
}

/** How many rows come before page `page` (read as pageNumber reads it). */
export const pageSkip = (page: number, size = NUMBERED_PAGE_SIZE) => (pageNumber(page, size) - 1) * size;

/**
 * A whole page number of at least 1; a number too large to skip that many rows exactly (past any list) is held at
 * the largest that can, whose page is as empty.
 */
function pageNumber(page: number, size: number): number {
  if (!(page >= 1)) return 1; // NaN too
  return Math.min(Math.floor(page), Math.floor(Number.MAX_SAFE_INTEGER / size));
}
