import type { Knex } from 'knex';
import type { Db } from './database.js';
import { scoped } from './scoped.js';

/**
 * A list's rows as both of its forms read them, the streamed JSON list (keyset.ts `listPages`) and the app's numbered
 * page (numbered-pages.ts `numberedListPage`), so that an area defines its filters and its readers' limits once:
 * `base` builds the filtered query afresh, with `scoped()`; `idColumn` orders it; `json` is the SQL expression of a
 * row's API JSON (text or json); `total`, when the list's size is kept elsewhere, reads it (a numbered page's
 * count, where counting `base` would read every row).
 */
export interface ListQuery {
  base: () => Knex.QueryBuilder;
  idColumn: string;
  json: string;
  total?: () => Promise<number>;
}

/**
 * A whole list, unfiltered, from the texts kept beside its table (`quote_texts`, `order_texts`, `customer_texts`,
 * `product_texts`: workspace_id, id and the stored text, kept by the statements that write the table): narrow rows, read without walking the table's other columns.
 */
export function textsList(db: Db, texts: string, workspaceId: number): ListQuery {
  return { base: () => scoped(db, `${texts} as t`, workspaceId), idColumn: 't.id', json: 't.json' };
}

/**
 * How a list's statements are planned, in both forms: bitmap scans off (before a table has statistics, a fresh
 * import, the planner fetches every row of the workspace through a bitmap and sorts them all, where the ordered index
 * scan reads only the rows up to the page's end), and an index's reads of the table priced as the cached reads they
 * are (random_page_cost 1.1, PostgreSQL's advice for storage without seeks): at the default of 4 the planner walks
 * the primary key and filters out most of its rows rather than read a filter's own index (quotes by status).
 */
export const LIST_READ_SETTINGS: Readonly<Record<string, string>> = { enable_bitmapscan: 'off', random_page_cost: '1.1' };

/** Settings as the `set local …` statements that apply them to PostgreSQL's current transaction, joined by `; `. */
export const setLocal = (settings: Readonly<Record<string, string>>): string =>
  Object.entries(settings).map(([name, value]) => `set local ${name} = ${value}`).join('; ');
