import fs from 'node:fs';
import path from 'node:path';
import knexFactory, { type Knex } from 'knex';
import { log } from '../log.js';

export type Db = Knex | Knex.Transaction;

export interface Database {
  knex: Knex;
  kind: 'postgres' | 'pglite';
  /**
   * LISTENs on a channel (notifications sent inside a transaction arrive after it commits).
   * `onState(false)` says notifications may be missed until `onState(true)`; returns the way to stop.
   */
  listen(channel: string, onMessage: (payload: string) => void, onState?: (up: boolean) => void): () => Promise<void>;
  close(): Promise<void>;
}

/** knex's own messages go through our logger: one line, no stack. */
const knexLog = {
  warn: (message: unknown) => log.warn(`knex: ${firstLine(message)}`),
  error: (message: unknown) => log.error(`knex: ${firstLine(message)}`),
  deprecate: (message: unknown) => log.debug(`knex: ${firstLine(message)}`),
  debug: (message: unknown) => log.debug(`knex: ${firstLine(message)}`),
};

/** knex passes errors with their stack ("Acquire connection error: Error: …\n    at …"). */
function firstLine(message: unknown): string {
  return String(message).split('\n')[0];
}

export class DataDirInUse extends Error {}

/** PostgreSQL when a URL is given, otherwise the embedded PGlite in `dataDir`. */
export async function openDatabase(options: { databaseUrl?: string; dataDir: string; poolMax?: number }): Promise<Database> {
  if (options.databaseUrl) return openPostgres(options.databaseUrl, options.poolMax);
  return openEmbedded(options.dataDir);
}

export function openPostgres(connectionString: string, poolMax = 10): Database {
  const knex = knexFactory({
    client: 'pg',
    connection: { connectionString, application_name: 'quoting' },
    pool: { min: 0, max: poolMax },
    acquireConnectionTimeout: 10_000,
    log: knexLog,
  });
  return { knex, kind: 'postgres', listen: (channel, onMessage, onState) => listenPostgres(connectionString, channel, onMessage, onState), close: () => knex.destroy() };
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
}

/** Wraps a PGlite instance (in memory or on disk) in knex. */
export async function openPglite(pglite: ClosablePglite, onClose: () => void = () => {}): Promise<Database> {
  const { default: ClientPgLite } = await import('knex-pglite');
  const knex = knexFactory({ client: ClientPgLite, dialect: 'postgres', connection: () => ({ pglite }) as object, log: knexLog });
  return {
    knex,
    kind: 'pglite',
    listen: (channel, onMessage, onState = () => {}) => {
      const stop = pglite.listen(channel, onMessage).then((unlisten) => (onState(true), unlisten));
      return async () => {
        const unlisten = await stop.catch(() => undefined);
        if (!pglite.closed) await unlisten?.();
      };
    },
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

async function openEmbedded(dataDir: string): Promise<Database> {
  const dir = path.resolve(dataDir);
  fs.mkdirSync(dir, { recursive: true });
  const release = lockDataDir(dir);
  try {
    const { PGlite } = await import('@electric-sql/pglite');
    const pglite = new PGlite(path.join(dir, 'pglite'));
    await pglite.waitReady;
    return await openPglite(pglite, release);
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
function lockDataDir(dir: string): () => void {
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
      const [pidText, ...command] = fs.readFileSync(lockPath, 'utf8').split(' ');
      const pid = Number(pidText);
      // In a container restarted after a crash, the new process often gets the dead one's pid (1).
      if (pid === process.pid ? heldHere.has(lockPath) : isAlive(pid)) {
        throw new DataDirInUse(
          `The embedded database in ${dir} is in use by process ${pid} (quoting ${command.join(' ')}). ` +
            `Stop that process first, or set DATABASE_URL to use PostgreSQL, which allows several processes. Lock file: ${lockPath}`,
        );
      }
      fs.unlinkSync(lockPath); // left behind by a process that died
    }
  }
  throw new DataDirInUse(`Could not lock the embedded database in ${dir}.`);
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
