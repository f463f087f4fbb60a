import { AsyncLocalStorage } from 'node:async_hooks';
import fs from 'node:fs';
import path from 'node:path';
import { parseEnv } from 'node:util';
import { ConfigError, loadConfig, type Config } from '../config.js';
import { embeddedDatabaseExists, openDatabase, type Database, type EmbeddedOptions, type PostgresOptions } from '../db/database.js';
import { migrateLatest, migrationStatus } from '../db/migrations.js';
import { log, setLogLevel } from '../log.js';

/**
 * A command run inside `quoting serve` for another process (through the control socket of the
 * embedded database): the server's open database and settings, and the caller's directory and
 * terminal. Carried by AsyncLocalStorage so that commands read it through the same functions
 * (commandConfig, withDatabase, commandPath, callerEnv) whether they run alone or in the server,
 * and several callers can be served at once.
 */
export interface ServedCommand {
  database: Database;
  /** The server's settings (its env file applied): the command acts on the server's instance, as configured there. */
  env: NodeJS.ProcessEnv;
  /** The env file the server read, if any (where a fix says to change a setting). */
  envFile?: string;
  /** The caller's variables that say how to show output (CALLER_VARIABLES in db/control-socket.ts). */
  caller: Record<string, string>;
  cwd: string;
  serverPid: number;
  /** The file argument the caller opened and streams as stdin, with its size (the server opens no path of the caller's). */
  input?: { file: string; size: number };
}

const served = new AsyncLocalStorage<ServedCommand>();
let servedNow = 0;

/**
 * Runs a command for another process. Once run, an AsyncLocalStorage keeps Node's promise hooks on for the whole
 * process: every promise the server makes afterwards costs more (webhook deliveries included). So the
 * storage is disabled again when the last command being served ends.
 */
export async function runServed<T>(context: ServedCommand, fn: () => Promise<T>): Promise<T> {
  servedNow++;
  try {
    return await served.run(context, fn);
  } finally {
    if (--servedNow === 0) served.disable();
  }
}

/** Set while the command runs inside `quoting serve` for another process. */
export function servedCommand(): ServedCommand | undefined {
  return served.getStore();
}

/** The settings a command reads: its own process's, or the server's when served. */
export function commandEnv(): NodeJS.ProcessEnv {
  return served.getStore()?.env ?? process.env;
}

/** The variables of whoever typed the command (CI, LOG_LEVEL...): this process's, or the caller's when served. */
export function callerEnv(): NodeJS.ProcessEnv {
  return served.getStore()?.caller ?? process.env;
}

/** A path the operator typed, resolved against the directory the command was typed in. */
export function commandPath(file: string): string {
  return path.resolve(served.getStore()?.cwd ?? process.cwd(), file);
}

/** Loads the env file (if any) and the configuration, once per command. */
export function commandConfig(opts: Record<string, unknown>): Config {
  const context = served.getStore();
  // The server's settings, as loaded when it started; the log level is the server's too.
  if (context) return loadConfig(context.env);
  loadEnvFile(opts);
  const config = loadConfig();
  setLogLevel(config.LOG_LEVEL);
  return config;
}

/** Reads `--env-file` (or QUOTING_ENV_FILE) into process.env; returns its path, if any. Served commands use the server's (ServedCommand.envFile). */
export function loadEnvFile(opts: Record<string, unknown>): string | undefined {
  if (served.getStore()) return undefined;
  const envFile = (opts.envFile as string | undefined) ?? process.env.QUOTING_ENV_FILE;
  if (envFile) {
    // Read here rather than by process.loadEnvFile, which on Node 20 exits the process when the file is missing.
    let text: string;
    try {
      text = fs.readFileSync(envFile, 'utf8');
    } catch (err) {
      throw new ConfigError(`cannot read env file ${envFile}: ${(err as Error).message}`);
    }
    // The real environment (and flags such as serve --port) wins over the file, as with node --env-file.
    for (const [key, value] of Object.entries(parseEnv(text))) process.env[key] ??= value;
  }
  return envFile;
}

/**
 * `needsSchema`: the command reads or writes tables, so the schema must be up to date first (see ensureSchema).
 * `pool`: PostgreSQL settings for this command's connections; the pool holds at most DATABASE_POOL_MAX, else
 * `pool.poolMax`, else 2 (a one-shot command runs one statement at a time).
 * `create`: the command may create the embedded database where there is none (migrate, workspace create); any
 * other command stops, naming the directory, rather than work on a new empty database (a mistyped DATA_DIR).
 * Inside `quoting serve` the command gets the server's open database (migrated when it started) and
 * must not close it.
 */
export async function withDatabase<T>(
  config: Config,
  fn: (database: Database) => Promise<T>,
  options: { needsSchema?: boolean; pool?: PostgresOptions; create?: boolean } & EmbeddedOptions = {},
): Promise<T> {
  const context = served.getStore();
  if (context) return fn(context.database);
  if (!config.DATABASE_URL && !options.create && !embeddedDatabaseExists(config.DATA_DIR)) {
    throw new Error(
      `there is no embedded database in ${path.resolve(config.DATA_DIR)}: set DATA_DIR to the directory that holds it (or DATABASE_URL for PostgreSQL), or run 'quoting migrate' to create one there`,
    );
  }
  const poolMax = config.DATABASE_POOL_MAX ?? options.pool?.poolMax ?? 2;
  const database = await openDatabase({
    databaseUrl: config.DATABASE_URL,
    dataDir: config.DATA_DIR,
    ...options.pool,
    poolMax,
    pooler: config.DATABASE_POOLER,
    listenUrl: config.DATABASE_LISTEN_URL,
    keepDirMode: options.keepDirMode,
  });
  try {
    if (options.needsSchema) await ensureSchema(database, false);
    return await fn(database);
  } finally {
    await database.close();
  }
}

/** The embedded database migrates itself; PostgreSQL, shared with other processes, only when asked. */
export async function ensureSchema(database: Database, migrate: boolean): Promise<void> {
  if (database.kind === 'postgres' && !migrate) {
    const { pending } = await migrationStatus(database.knex);
    if (pending.length > 0) {
      throw new Error(
        `${pending.length} migration(s) pending (${pending.join(', ')}); run 'quoting migrate' first, or start with 'quoting serve --migrate'`,
      );
    }
    return;
  }
  const applied = await migrateLatest(database.knex);
  if (applied.length) log.info('migrations applied', { applied });
}
