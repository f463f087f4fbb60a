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
