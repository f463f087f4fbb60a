import type { Knex } from 'knex';
import type { Db } from './database.js';

/**
 * A hot read of constant text, run on PostgreSQL as a named prepared statement on a pooled connection:
 * parsed and planned once per connection, and sent without knex's query building, runner and events
 * (for `GET /auth/me` without a cached session those were most of the server's CPU per request).
 * Inside a transaction, and on the embedded database, it goes through knex as any other query.
 * `sql` takes its values as `?`, in order, and has no other `?` (no jsonb `?` operators).
 */
export function preparedQuery<Row>(name: string, sql: string): (db: Db, values: Knex.Value[]) => Promise<Row[]> {
  let n = 0;
  const text = sql.replace(/\?/g, () => `$${++n}`);
  return async (db, values) => {
    const client = db.client as PgClient;
    if (db.isTransaction || client.config.client !== 'pg') return (await db.raw(sql, values)).rows;
    // The pool's own acquire and release: a connection that broke is marked by knex and not handed out again.
    const connection = await client.acquireConnection();
    try {
      return (await connection.query({ name, text, values })).rows as Row[];
    } finally {
      await client.releaseConnection(connection);
    }
  };
}

/** The parts of knex's client this uses (not in knex's public typings). */
interface PgClient {
  config: { client?: unknown };
  acquireConnection(): Promise<{ query(config: { name: string; text: string; values: unknown[] }): Promise<{ rows: unknown[] }> }>;
  releaseConnection(connection: unknown): Promise<void>;
}
