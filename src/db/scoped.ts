import type { Knex } from 'knex';
import type { Db } from './database.js';

/**
 * The only way services read or write a tenant table: the query starts already limited to the
 * workspace, so a record of another workspace is simply not found (404, never 403).
 */
export function scoped(db: Db, table: string, workspaceId: number): Knex.QueryBuilder {
  const [name, alias] = table.split(/\s+as\s+/i);
  return db(table).where(`${alias ?? name}.workspace_id`, workspaceId);
}

/**
 * A lateral subquery for a list of ids unnested as `k(id)`: the row of `table` with that id, each found by its own
 * probe, however the statistics stand (the workspace id is a value unknown when planning). Written as
 * `workspace_id = ? and id = any(?)`, it was planned, on a workspace an import is growing, as a scan of all the
 * workspace's rows filtered by the list. Binds the workspace id.
 */
export const scopedById = (table: string) => `select * from ${table} where workspace_id = (select ?::int) and id = k.id limit 1`;

/** Escapes LIKE wildcards so that `q` is a plain substring. */
export function likePattern(q: string): string {
  return `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** Exact-match filters: empty values are ignored, as the spec says for every list. */
export function whereExact(query: Knex.QueryBuilder, filters: Record<string, string | number | undefined>): Knex.QueryBuilder {
  for (const [column, value] of Object.entries(filters)) {
    if (value !== undefined && value !== '') query.where(column, value);
  }
  return query;
}

/** Whether no filter is given: every value empty (ignored, as whereExact and whereSearch ignore them). */
export function unfiltered(filters: object): boolean {
  return Object.values(filters).every((value) => value === undefined || value === '');
}

/** Case-insensitive substring search over several columns; an empty `q` is ignored. */
export function whereSearch(query: Knex.QueryBuilder, columns: string[], q: string | undefined): Knex.QueryBuilder {
  if (!q) return query;
  const pattern = likePattern(q);
  return query.where((w) => {
    for (const column of columns) w.orWhereILike(column, pattern);
  });
}

/** How many rows of each table reference a record, e.g. the quotes and orders of a customer: one query. */
export async function countReferences<T extends string>(
  db: Db,
  workspaceId: number,
  tables: readonly T[],
  column: string,
  id: number,
): Promise<Record<T, number>> {
  const counts = tables.map((table) => `(select count(*)::int from ${table} where workspace_id = ? and ${column} = ?) as ${table}`);
  const { rows } = await db.raw(`select ${counts.join(', ')}`, tables.flatMap(() => [workspaceId, id]));
  return rows[0];
}
