import type { Knex } from 'knex';
import type { Db } from './database.js';

/** Values of a prepared statement, by the names its text uses (`:name`, as knex's named bindings). */
export type PreparedValues = Record<string, Knex.Value>;

/**
 * A hot statement of constant text, run on PostgreSQL as a named prepared statement: each connection
 * parses and plans it once, not on every call. Outside a transaction it is sent on a pooled connection
 * without knex's query building, runner and events (for `GET /auth/me` without a cached session those
 * were most of the server's CPU per request); inside one it goes through knex, named all the same. On
 * the embedded database it is an ordinary query. The one way this code prepares a statement.
 *
 * `sql` names its values `:name`, as knex's named bindings; knex itself turns them into `$n` once (on
 * the first call, from the names given), so the text means exactly what it means to knex.
 */
export function preparedQuery<Row>(name: string, sql: string): (db: Db, values: PreparedValues) => Promise<Row[]> {
  let compiled: { text: string; order: string[] } | undefined;
  return async (db, values) => {
    const client = db.client as PgClient;
    if (client.config.client !== 'pg') return (await db.raw(sql, values)).rows;
    if (db.isTransaction) return (await db.raw(sql, values).options({ name })).rows;
    compiled ??= compile(db, sql, values);
    // The pool's own acquire and release: a connection that broke is marked by knex and not handed out again.
    const connection = await client.acquireConnection();
    try {
      return (await connection.query({ name, text: compiled.text, values: compiled.order.map((key) => values[key]) })).rows as Row[];
    } finally {
      await client.releaseConnection(connection);
    }
  };
}

/** The statement's `$n` text and, for each `$n`, the name of its value: knex compiles it with each value standing for its own name. */
function compile(db: Db, sql: string, values: PreparedValues): { text: string; order: string[] } {
  const names = Object.fromEntries(Object.keys(values).map((key) => [key, key]));
  const native = db.raw(sql, names).toSQL().toNative();
  return { text: native.sql, order: native.bindings as string[] };
}

/** The parts of knex's client this uses (not in knex's public typings). */
interface PgClient {
  config: { client?: unknown };
  acquireConnection(): Promise<{ query(config: { name: string; text: string; values: unknown[] }): Promise<{ rows: unknown[] }> }>;
  releaseConnection(connection: unknown): Promise<void>;
}
