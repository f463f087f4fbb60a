import type { Knex } from 'knex';
import type { Db } from './database.js';

/** Rows per page when a list is streamed. */
export const PAGE_ROWS = 1000;

/**
 * A list as JSON text, in keyset pages that the database renders: each page is one query for the
 * next PAGE_ROWS rows by id, turned into `j1,j2,…` by the SQL expression `json` (over the row).
 * However long the list, the server holds one page at a time. `base` builds the filtered,
 * workspace-scoped query afresh for each page.
 */
export async function* jsonPages(db: Db, base: () => Knex.QueryBuilder, idColumn: string, json: string): AsyncGenerator<string> {
  let after = 0;
  for (;;) {
    const page = base().where(idColumn, '>', after).orderBy(idColumn).limit(PAGE_ROWS).select(`${idColumn} as id`, db.raw(`${json} as j`));
    const [row] = await db
      .from(page.as('page'))
      .select(db.raw(`string_agg(j::text, ',' order by id) as json, max(id) as last_id, count(*)::int as n`));
    if (!row.n) return;
    yield row.json;
    if (row.n < PAGE_ROWS) return;
    after = row.last_id;
  }
}
