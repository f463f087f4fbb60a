import type { Knex } from 'knex';
import { usesTransactionPooler, type Db } from './database.js';
import { PoolerMismatch } from './pooler.js';
import { assertTenancy } from './tenancy.js';

/** Values of a prepared statement: by the names its text uses (`:name`), or in the order of its `?`, as knex's bindings. */
export type PreparedValues = Record<string, Knex.Value> | readonly Knex.Value[];

/**
 * A hot statement of constant text, run as a named prepared statement: each connection parses it once and, after
 * a few runs, plans it once, not on every call. On PostgreSQL, outside a transaction it is sent on a pooled
 * connection without knex's query building, runner and events (for `GET /auth/me` without a cached session those
 * are most of the server's CPU per request); inside one it goes through knex, named all the same. On the embedded
 * database the name travels with the query to PGlite's thread (src/db/pglite-worker.ts), where parsing and planning
 * run in WebAssembly and would take most of the time of a quote's creation statements. The one way this code
 * prepares a statement.
 *
 * `sql` takes its values as knex's raw bindings do: `:name` with an object, `?` with an array. knex itself turns
 * them into `$n` once (on the first call), so the text means exactly what it means to knex.
 *
 * Behind a transaction pooler (DATABASE_POOLER=transaction) it is sent unnamed: a named statement would live on a
 * server connection the pooler hands to other clients. Without the setting, the errors such a pooler causes
 * ("already exists", "does not exist") are thrown as PoolerMismatch, which names the setting.
 */
export function preparedQuery<Row>(name: string, sql: string): (db: Db, values: PreparedValues) => Promise<Row[]> {
  let compiled: { text: string; order: (string | number)[] } | undefined;
  return async (db, values) => {
    const client = db.client as PgClient;
    if (client.config.client !== 'pg') return (await db.raw(sql, values as Knex.RawBinding).options({ name })).rows;
    if (usesTransactionPooler(db)) return (await db.raw(sql, values as Knex.RawBinding)).rows;
    if (db.isTransaction) return (await db.raw(sql, values as Knex.RawBinding).options({ name }).catch(poolerMismatch(name))).rows;
    compiled ??= compile(db, sql, values);
    // The pool's own acquire and release: a connection that broke is marked by knex and not handed out again.
    const connection = await client.acquireConnection();
    try {
      const ordered = compiled.order.map((key) => (values as Record<string | number, Knex.Value>)[key]);
      return (await connection.query({ name, text: compiled.text, values: ordered }).catch(poolerMismatch(name))).rows as Row[];
    } finally {
      await client.releaseConnection(connection);
    }
  };
}

/** A named statement's error that only a transaction pooler causes, rethrown as PoolerMismatch; any other as it was. */
function poolerMismatch(name: string) {
  return (err: unknown): never => {
    const code = (err as { code?: string }).code;
    // 42P05 duplicate_prepared_statement, 26000 invalid_sql_statement_name: of our own names, never otherwise.
    if ((code === '42P05' || code === '26000') && String((err as Error).message).includes(name)) throw new PoolerMismatch(`prepared statement "${name}" ${code === '42P05' ? 'already exists' : 'does not exist'} on the server connection`);
    throw err;
  };
}

/**
 * The statement's `$n` text and, for each `$n`, the key of its value (a name, or a position): knex compiles it with
 * each value standing for its own key.
 */
function compile(db: Db, sql: string, values: PreparedValues): { text: string; order: (string | number)[] } {
  assertTenancy(sql); // sent around knex, so around its check too
  const keys = Array.isArray(values) ? values.map((_, i) => i) : Object.fromEntries(Object.keys(values).map((key) => [key, key]));
  const native = db.raw(sql, keys as Knex.RawBinding).toSQL().toNative();
  return { text: native.sql, order: native.bindings as (string | number)[] };
}

/** The parts of knex's client this uses (not in knex's public typings). */
interface PgClient {
  config: { client?: unknown };
  acquireConnection(): Promise<{ query(config: { name: string; text: string; values: unknown[] }): Promise<{ rows: unknown[] }> }>;
  releaseConnection(connection: unknown): Promise<void>;
}
