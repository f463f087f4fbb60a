import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import knexFactory, { type Knex } from 'knex';
import { openPglite, openPostgres, type Database } from '../../src/db/database.js';
import { migrateLatest } from '../../src/db/migrations.js';
import { startPgliteThread } from '../../src/db/pglite-thread.js';
import { PATIENCE_MS } from './patience.js';
import { startPgbouncer, type Pgbouncer } from './pgbouncer.js';

const migrationsDir = fileURLToPath(new URL('../../migrations/', import.meta.url));

/** Changes whenever a migration changes, so cached snapshots and templates are rebuilt. */
function migrationsHash(): string {
  const hash = crypto.createHash('sha256');
  for (const file of fs.readdirSync(migrationsDir).filter((f) => f.endsWith('.js')).sort()) {
    hash.update(file).update(fs.readFileSync(path.join(migrationsDir, file)));
  }
  return hash.digest('hex').slice(0, 16);
}

export const usingPostgres = Boolean(process.env.TEST_DATABASE_URL);

/**
 * TEST_POOLER=transaction (with TEST_DATABASE_URL): each test file's database is reached through a PgBouncer of its
 * own in transaction mode, opened with DATABASE_POOLER=transaction, and the CLI it spawns gets the same setting.
 */
export const usingPooler = usingPostgres && process.env.TEST_POOLER === 'transaction';

let pooler: Promise<Pgbouncer> | undefined;
/** This test process's PgBouncer (TEST_POOLER), started on first use. */
export function testPooler(): Promise<Pgbouncer> {
  // Test files run many processes and pools at once: a pool that large checks the transaction mode, not pool limits.
  pooler ??= startPgbouncer(process.env.TEST_DATABASE_URL!, { poolSize: 50 });
  return pooler;
}

export interface TestDatabase extends Database {
  /** A connection string for other processes (PostgreSQL only). */
  url?: string;
}

/** A fresh, migrated database for one test file: in-memory PGlite, or PostgreSQL with TEST_DATABASE_URL. */
export async function freshDatabase(): Promise<TestDatabase> {
  return patient(usingPostgres ? await freshPostgres(process.env.TEST_DATABASE_URL!) : await freshPglite());
}

/**
 * A request waiting for a pooled connection fails after knex's acquire timeout (10 s on PostgreSQL,
 * 60 s on PGlite's single connection) and the app answers 503; on a loaded machine the queue can
 * last that long. Tests wait as long as PATIENCE_MS instead.
 */
function patient(database: TestDatabase): TestDatabase {
  const pool = (database.knex.client as { pool?: { acquireTimeoutMillis: number } }).pool;
  if (pool) pool.acquireTimeoutMillis = PATIENCE_MS;
  return database;
}

/**
 * A fresh, migrated embedded database whichever database the suite runs on (for what only the embedded database does).
 * Migrating PGlite takes seconds; a migrated data directory is cached and loaded instead.
 */
export async function freshPglite(): Promise<TestDatabase> {
  const cacheDir = path.join(os.tmpdir(), 'quoting-test-cache');
  const snapshot = path.join(cacheDir, `pglite-${migrationsHash()}.tar.gz`);
  if (!fs.existsSync(snapshot)) {
    const pglite = await startPgliteThread();
    const db = await openPglite(pglite);
    await migrateLatest(db.knex);
    const dump = await pglite.dumpDataDir('gzip');
    await db.close();
    fs.mkdirSync(cacheDir, { recursive: true });
    const tmp = `${snapshot}.${process.pid}.${crypto.randomUUID()}`;
    fs.writeFileSync(tmp, Buffer.from(await dump.arrayBuffer()));
    fs.renameSync(tmp, snapshot);
  }
  // In its own thread, as `quoting serve` runs it.
  return openPglite(await startPgliteThread({ loadDataDir: new Uint8Array(fs.readFileSync(snapshot)) }));
}

/** Each test file gets its own database, copied from a migrated template. */
async function freshPostgres(baseUrl: string): Promise<TestDatabase> {
  const admin = knexFactory({ client: 'pg', connection: baseUrl, pool: { min: 1, max: 1 } });
  const template = `quoting_tpl_${migrationsHash()}`;
  const name = `quoting_t_${crypto.randomBytes(6).toString('hex')}`;
  try {
    await admin.raw('select pg_advisory_lock(727201)');
    const exists = await admin('pg_database').where({ datname: template }).first('datname');
    if (!exists) {
      await admin.raw('create database ??', [template]);
      const db = openPostgres(withDatabase(baseUrl, template), 1);
      try {
        await migrateLatest(db.knex);
      } catch (err) {
        await db.close();
        await admin.raw('drop database if exists ??', [template]);
        throw err;
      }
      await db.close();
    }
    await admin.raw('create database ?? template ??', [name, template]);
    await admin.raw('select pg_advisory_unlock(727201)');
  } finally {
    await admin.destroy();
  }
  const direct = withDatabase(baseUrl, name);
  const url = usingPooler ? (await testPooler()).through(direct) : direct;
  const db = openPostgres(url, usingPooler ? { poolMax: 10, pooler: 'transaction' } : 10);
  return {
    ...db,
    url,
    close: async () => {
      await db.close();
      const cleanup = knexFactory({ client: 'pg', connection: baseUrl, pool: { min: 0, max: 1 } });
      try {
        await cleanup.raw('drop database if exists ?? with (force)', [name]);
      } finally {
        await cleanup.destroy();
      }
    },
  };
}

export function withDatabase(url: string, name: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${name}`;
  return parsed.toString();
}

/** What the database answers a statement: null when it took it, else the error's code and constraint. */
export async function refusal(knex: Knex, sql: string, bindings: unknown[]): Promise<{ code: string; constraint: string } | null> {
  try {
    await knex.raw(sql, bindings as Knex.RawBinding[]);
    return null;
  } catch (err) {
    const { code, constraint } = err as { code: string; constraint: string };
    return { code, constraint };
  }
}

/**
 * `knex` for a test's own statements: each may read or set up rows of any workspace (the mark of src/db/tenancy.ts,
 * as a query context, on every statement it builds). The app keeps the knex it was given, checked.
 */
export function acrossWorkspaces(knex: Knex): Knex {
  const context = { allWorkspaces: 'a test reads and sets up rows of any workspace' };
  const mark = <T>(query: T): T => (query as { queryContext(context: object): T }).queryContext(context);
  return new Proxy(knex, {
    apply: (target, self, args) => mark(Reflect.apply(target, self, args)),
    get(target, property) {
      const value = Reflect.get(target, property, target);
      if (property === 'raw') return (...args: Parameters<Knex['raw']>) => mark(target.raw(...args));
      if (property === 'transaction') {
        return (...args: unknown[]) => {
          const [callback] = args;
          if (typeof callback === 'function') return target.transaction((trx) => callback(acrossWorkspaces(trx)), ...(args.slice(1) as []));
          return (target.transaction as (...a: unknown[]) => Promise<Knex.Transaction>)(...args).then((trx) => acrossWorkspaces(trx));
        };
      }
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
