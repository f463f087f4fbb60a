import type { Knex } from 'knex';
import { usesTransactionPooler, type Db } from './database.js';
import { PoolerMismatch } from './pooler.js';
import { assertTenancy } from './tenancy.js';
import { inlineSql } from './copy-out.js';
import { readStatementName } from './list-reads.js';

/** Values of a prepared statement: by the names its text uses (`:name`), or in the order of its `?`, as knex's bindings. */
export type PreparedValues = Record<string, Knex.Value> | readonly Knex.Value[];

/**
 * A hot statement of constant text, run as a named prepared statement: each connection parses it once and, after
 * a few runs, plans it once, not on every call. On PostgreSQL, outside a transaction it is sent on a pooled
 * connection without knex's query building, runner and events (for `GET /auth/me` without a cached session those
 * are most of the server's CPU per request); inside one it goes through knex, named all the same. On the embedded
 * database the name travels with the query to PGlite's thread (src/db/pglite-worker.ts), where parsing and planning
 * run in WebAssembly and would take most of the time of a quote's creation statements. The one way this code
 * prepares a statement of constant text (a list read's text, which its filters shape, is settingRead's).
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

/** How many statements settingRead prepares on one connection at most; past it, a new text runs unprepared. */
const MAX_PREPARED_READS = 200;

/** The statements settingRead has prepared, by connection (a connection that goes takes its own with it). */
const preparedReads = new WeakMap<object, Set<string>>();

/**
 * A read of knex's native SQL on PostgreSQL with a setting of its own (`set local …`, local to the simple query's
 * implicit transaction), in one round trip, its text parsed and planned once per connection: prepared with SQL's
 * PREPARE the first time a connection sees it, then `set local …; execute name(values)`, the values written in as
 * literals (copy-out.ts inlineSql). A protocol-level named statement (preparedQuery) would need a round trip of its
 * own after the setting's. A plan made under the setting stays with the statement (the plan cache does not look at
 * settings), and every run makes its plans under it. Its text is named by its hash: a list page's filters give it
 * one of a few shapes.
 *
 * Behind a transaction pooler, and for a text PostgreSQL cannot prepare (a value whose type nothing gives), the text
 * is sent whole with its values each time, as before.
 */
export async function settingRead<R>(db: Db, native: { sql: string; bindings: readonly unknown[] }, setting: string): Promise<R[]> {
  assertTenancy(native.sql); // sent around knex, so around its check too
  const client = db.client as PgClient;
  const connection = (await client.acquireConnection()) as unknown as SimpleQueryConnection;
  try {
    const name = usesTransactionPooler(db) ? null : await preparedOn(connection, native.sql);
    const statement = name === null ? inlineSql(native) : inlineSql({ sql: `execute ${name}${native.bindings.length ? `(${native.bindings.map((_, i) => `$${i + 1}`).join(', ')})` : ''}`, bindings: native.bindings });
    const results = await connection.query(`${setting}; ${statement}`).catch(name === null ? rethrow : poolerMismatch(name));
    return results[results.length - 1].rows as R[];
  } finally {
    await client.releaseConnection(connection);
  }
}

/** The name `sql` is prepared under on this connection, preparing it if need be; null to send it unprepared. */
async function preparedOn(connection: SimpleQueryConnection, sql: string): Promise<string | null> {
  let prepared = preparedReads.get(connection);
  if (!prepared) preparedReads.set(connection, (prepared = new Set()));
  const name = readName(sql);
  if (prepared.has(name)) return name;
  if (prepared.size >= MAX_PREPARED_READS || unpreparable.has(name)) return null;
  try {
    await connection.query(`prepare ${name} as ${sql}`);
  } catch (err) {
    // 42P18 indeterminate_datatype: a value whose type only its literal gives.
    if ((err as { code?: string }).code !== '42P18') poolerMismatch(name)(err);
    if (unpreparable.size >= 4 * MAX_PREPARED_READS) unpreparable.clear(); // a bound, as readNames'
    unpreparable.add(name);
    return null;
  }
  prepared.add(name);
  return name;
}

/** A read's name, by its text's hash: kept, as hashing a page's text costs more than finding it. */
const readNames = new Map<string, string>();
function readName(sql: string): string {
  let name = readNames.get(sql);
  if (!name) {
    if (readNames.size >= 4 * MAX_PREPARED_READS) readNames.clear(); // a bound, not an eviction policy
    readNames.set(sql, (name = readStatementName(sql)));
  }
  return name;
}

/** Names of texts PostgreSQL could not prepare (see preparedOn). */
const unpreparable = new Set<string>();

const rethrow = (err: unknown): never => {
  throw err;
};

/** The part of a node-postgres connection settingRead uses: a simple query of several statements, a result each. */
interface SimpleQueryConnection {
  query(sql: string): Promise<{ rows: unknown[] }[]>;
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
