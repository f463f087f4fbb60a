import fs from 'node:fs';
import path from 'node:path';
import knexFactory, { type Knex } from 'knex';
import { log } from '../log.js';
import { controlSocketPath } from './control-socket.js';
import { makeDataDirPrivate, privateUmask, tightenModes } from './data-dir.js';
import { PgliteThread, startPgliteThread } from './pglite-thread.js';
import { detectTransactionPooler, PoolerMismatch } from './pooler.js';
import { guardTenancy } from './tenancy.js';

export type Db = Knex | Knex.Transaction;

export interface Database {
  knex: Knex;
  kind: 'postgres' | 'pglite';
  /**
   * LISTENs on a channel (notifications sent inside a transaction arrive after it commits).
   * `onState(false)` says notifications may be missed until `onState(true)`; returns the way to stop.
   */
  listen(channel: string, onMessage: (payload: string) => void, onState?: (up: boolean) => void): () => Promise<void>;
  /**
   * Whether `listen` hears other processes. Not behind a transaction pooler without DATABASE_LISTEN_URL: LISTEN
   * needs a session of its own, which such a pooler does not give; `listen` then does nothing and callers poll.
   */
  hears: boolean;
  /** The embedded database only: a consistent copy of its data directory (a gzipped tar), taken between queries. */
  dumpDataDir?: () => Promise<Blob>;
  close(): Promise<void>;
}

/** knex's own messages go through our logger: one line, no stack. */
const knexLog = {
  // A failed connect is also thrown to the caller, which reports it (the CLI's one error line, a 503 and its log
  // entry): a warning as well would only say it twice.
  warn: (message: unknown) => (/^Acquire connection error/.test(String(message)) ? log.debug : log.warn)(`knex: ${firstLine(message)}`),
  error: (message: unknown) => log.error(`knex: ${firstLine(message)}`),
  deprecate: (message: unknown) => log.debug(`knex: ${firstLine(message)}`),
  debug: (message: unknown) => log.debug(`knex: ${firstLine(message)}`),
};

/** knex passes errors with their stack ("Acquire connection error: Error: …\n    at …"). */
function firstLine(message: unknown): string {
  return String(message).split('\n')[0];
}

export class DataDirInUse extends Error {}

export interface PostgresOptions {
  /** Connections this process opens at most (opened as needed, closed after 30 s idle). */
  poolMax?: number;
  /**
   * Commits of this pool return before their WAL is flushed (`synchronous_commit = off` for its sessions). Only
   * for writes that PostgreSQL losing the last few hundred milliseconds of after a crash may undo harmlessly:
   * the delivery worker's (see src/webhooks/worker.ts).
   */
  asyncCommit?: boolean;
  /**
   * `transaction`: the URL is a transaction-mode pooler (DATABASE_POOLER). Statements are sent unnamed (prepared.ts),
   * no session setting is made (asyncCommit is dropped), and LISTEN goes to `listenUrl` or nowhere.
   */
  pooler?: 'transaction' | 'none';
  /** A direct connection for LISTEN (DATABASE_LISTEN_URL); only read with `pooler`. */
  listenUrl?: string;
}

export interface EmbeddedOptions {
  /** Leaves an existing DATA_DIR's mode as found (`quoting doctor` reports one open to others instead of closing it unseen). */
  keepDirMode?: boolean;
}

/** PostgreSQL when a URL is given, otherwise the embedded PGlite in `dataDir`. */
export async function openDatabase(
  options: { databaseUrl?: string; dataDir: string } & PostgresOptions & EmbeddedOptions,
): Promise<Database> {
  if (options.databaseUrl) {
    // DATABASE_POOLER unset (`none` says there is no pooler): a transaction pooler would break named statements and LISTEN.
    if (options.pooler === undefined) {
      const evidence = await detectTransactionPooler(options.databaseUrl).catch(() => null); // unreachable: opening says so
      if (evidence) throw new PoolerMismatch(evidence);
    }
    return openPostgres(options.databaseUrl, options);
  }
  return openEmbedded(options.dataDir, options);
}

/** `options` as a number is the pool size alone (the tests' and benchmarks' short form). */
export function openPostgres(connectionString: string, options: PostgresOptions | number = {}): Database {
  const { poolMax = 10, asyncCommit = false, pooler, listenUrl } = typeof options === 'number' ? { poolMax: options } : options;
  const pooled = pooler === 'transaction';
  const listenTo = pooled ? listenUrl : connectionString;
  const knex = knexFactory({
    client: 'pg',
    connection: { connectionString, application_name: 'quoting' },
    // Read by usesTransactionPooler (knex keeps its config on the client, transactions' clients included).
    ...({ quotingPooler: pooled ? 'transaction' : undefined } as object),
    pool: {
      min: 0,
      max: poolMax,
      // A session setting would stay on the server connection for whichever client the pooler hands it to next.
      ...(asyncCommit && !pooled
        ? {
            afterCreate: (connection: import('pg').Client, done: (err: Error | null, connection: import('pg').Client) => void) =>
              void connection.query('set synchronous_commit = off').then(() => done(null, connection), (err: Error) => done(err, connection)),
          }
        : {}),
    },
    acquireConnectionTimeout: 10_000,
    log: knexLog,
  });
  guardTenancy(knex);
  return {
    knex,
    kind: 'postgres',
    hears: listenTo !== undefined,
    listen: (channel, onMessage, onState) => (listenTo === undefined ? async () => {} : listenPostgres(listenTo, channel, onMessage, onState)),
    close: () => knex.destroy(),
  };
}

/** Whether `db` goes through a transaction-mode pooler (DATABASE_POOLER=transaction): nothing may outlive a transaction. */
export function usesTransactionPooler(db: Db): boolean {
  return (db.client as { config: { quotingPooler?: string } }).config.quotingPooler === 'transaction';
}

/** A dedicated connection that LISTENs, reconnecting after a second when it drops. */
function listenPostgres(connectionString: string, channel: string, onMessage: (payload: string) => void, onState: (up: boolean) => void = () => {}): () => Promise<void> {
  let stopped = false;
  let client: import('pg').Client | undefined;
  let retry: NodeJS.Timeout | undefined;
  const connect = async () => {
    const { default: pg } = await import('pg');
    const next = new pg.Client({ connectionString, application_name: `quoting-listen-${channel}` });
    next.on('notification', (message) => onMessage(message.payload ?? ''));
    next.on('error', () => reconnect());
    next.on('end', () => reconnect());
    client = next;
    await next.connect();
    if (stopped) return void (await next.end());
    await next.query(`LISTEN "${channel.replace(/"/g, '')}"`);
    onState(true);
  };
  const reconnect = () => {
    onState(false);
    if (stopped || retry) return;
    retry = setTimeout(() => {
      retry = undefined;
      connect().catch(() => reconnect());
    }, 1000);
  };
  onState(false);
  connect().catch(() => reconnect());
  return async () => {
    stopped = true;
    if (retry) clearTimeout(retry);
    await client?.end().catch(() => undefined);
  };
}

interface ClosablePglite {
  closed: boolean;
  close(): Promise<void>;
  listen(channel: string, callback: (payload: string) => void): Promise<() => Promise<void>>;
  dumpDataDir(compression?: 'auto' | 'gzip' | 'none'): Promise<Blob>;
}

/**
 * knex's client for PGlite in its own thread: a pool of sessions over the one database (pglite-thread.ts
 * PgliteSessions), so that statements outside a transaction need not wait for all of one (knex-pglite's own client
 * has one connection, which a transaction holds from BEGIN to COMMIT). Closing a session closes nothing: the database
 * is closed with the Database.
 */
async function threadClient(): Promise<Knex.Config['client']> {
  const { default: ClientPgLite } = await import('knex-pglite');
  class ClientPgliteSessions extends (ClientPgLite as unknown as new (config: Knex.Config) => object) {
    declare pglite: PgliteThread;
    getPoolSettings(poolConfig: object) {
      return (ClientPgLite.prototype as unknown as { getPoolSettings(c: object): object }).getPoolSettings.call(this, { ...poolConfig, min: 0, max: EMBEDDED_SESSIONS });
    }
    async _acquireOnlyConnection() {
      await this.pglite.waitReady;
      return this.pglite.session();
    }
    async destroyRawConnection() {}
  }
  return ClientPgliteSessions as unknown as Knex.Config['client'];
}

/** knex connections over the embedded database's thread: each statement is one message to it, so more cost nothing. */
const EMBEDDED_SESSIONS = 10;

/** Wraps a PGlite instance (in memory or on disk, in this thread or its own: pglite-thread.ts) in knex. */
export async function openPglite(pglite: ClosablePglite, onClose: () => void = () => {}): Promise<Database> {
  const ClientPgLite = pglite instanceof PgliteThread ? await threadClient() : (await import('knex-pglite')).default;
  const knex = knexFactory({ client: ClientPgLite, dialect: 'postgres', connection: () => ({ pglite }) as object, log: knexLog });
  guardTenancy(knex);
  return {
    knex,
    kind: 'pglite',
    hears: true,
    listen: (channel, onMessage, onState = () => {}) => {
      const stop = pglite.listen(channel, onMessage).then((unlisten) => (onState(true), unlisten));
      return async () => {
        const unlisten = await stop.catch(() => undefined);
        if (!pglite.closed) await unlisten?.();
      };
    },
    dumpDataDir: () => pglite.dumpDataDir('gzip'),
    close: async () => {
      try {
        await knex.destroy();
        // knex closes PGlite only if it ever connected; an unused instance would keep the process alive.
        if (!pglite.closed) await pglite.close();
      } finally {
        onClose();
      }
    },
  };
}

/** Whether `dataDir` holds an embedded database (PGlite's files are in DATA_DIR/pglite). */
export function embeddedDatabaseExists(dataDir: string): boolean {
  return fs.existsSync(path.join(path.resolve(dataDir), 'pglite'));
}

async function openEmbedded(dataDir: string, options: EmbeddedOptions = {}): Promise<Database> {
  const dir = path.resolve(dataDir);
  // Owner only: the database files, and the control socket that runs commands on them (control-socket.ts).
  privateUmask();
  if (options.keepDirMode) fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  else makeDataDirPrivate(dir);
  const release = lockDataDir(dir);
  const files = path.join(dir, 'pglite');
  try {
    // Its own thread: a long query would otherwise hold every other request for its duration.
    const pglite = await startPgliteThread({ dataDir: files });
    tightenModes(files);
    // Again once closed: files PGlite rewrote meanwhile (its relation-cache file) come back 0644.
    return await openPglite(pglite, () => {
      tightenModes(files);
      release();
    });
  } catch (err) {
    release();
    throw err;
  }
}

/** Lock files this process holds: a lock naming our own pid is stale unless it is one of these. */
const heldHere = new Set<string>();

/**
 * PGlite is single-process: a second process on the same files would corrupt them.
 * The lock file names its holder so the operator knows what to stop.
 */
export function lockDataDir(dir: string): () => void {
  const lockPath = path.join(dir, 'quoting.lock');
  const holder = `${process.pid} ${process.argv.slice(2).join(' ') || 'quoting'}`.trim();
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      fs.writeFileSync(lockPath, holder, { flag: 'wx' });
      heldHere.add(lockPath);
      const release = () => {
        process.removeListener('exit', release);
        heldHere.delete(lockPath);
        try {
          if (fs.readFileSync(lockPath, 'utf8') === holder) fs.unlinkSync(lockPath);
        } catch {
          /* already gone */
        }
      };
      process.once('exit', release);
      return release;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const owner = lockHolder(lockPath);
      if (owner) {
        const serving = fs.existsSync(controlSocketPath(dir));
        throw new DataDirInUse(
          `The embedded database in ${dir} is in use by process ${owner.pid} (quoting ${owner.command}). ` +
            (serving
              ? 'It serves the other quoting commands itself, but not a second server: stop it first, or set DATABASE_URL to use PostgreSQL, which allows several servers.'
              : `That process does not take commands through ${controlSocketPath(dir)} (it is not 'quoting serve', or an older version): ` +
                'wait for it to finish or stop it, then run this again; or set DATABASE_URL to use PostgreSQL, which allows several processes.') +
            ` Lock file: ${lockPath}`,
        );
      }
      fs.rmSync(lockPath, { force: true }); // left behind by a process that died
    }
  }
  throw new DataDirInUse(`Could not lock the embedded database in ${dir}.`);
}

/** The live process holding the embedded database in `dataDir`, if any. */
export function dataDirHolder(dataDir: string): { pid: number; command: string } | null {
  return lockHolder(path.join(path.resolve(dataDir), 'quoting.lock'));
}

function lockHolder(lockPath: string): { pid: number; command: string } | null {
  let text: string;
  try {
    text = fs.readFileSync(lockPath, 'utf8');
  } catch {
    return null;
  }
  const [pidText, ...command] = text.split(' ');
  const pid = Number(pidText);
  // In a container restarted after a crash, the new process often gets the dead one's pid (1).
  const alive = pid === process.pid ? heldHere.has(lockPath) : isAlive(pid);
  return alive ? { pid, command: command.join(' ') } : null;
}

function isAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
