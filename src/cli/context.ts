import fs from 'node:fs';
import { parseEnv } from 'node:util';
import { ConfigError, loadConfig, type Config } from '../config.js';
import { openDatabase, type Database } from '../db/database.js';
import { migrateLatest, migrationStatus } from '../db/migrations.js';
import { log, setLogLevel } from '../log.js';

/** Loads the env file (if any) and the configuration, once per command. */
export function commandConfig(opts: Record<string, unknown>): Config {
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
  const config = loadConfig();
  setLogLevel(config.LOG_LEVEL);
  return config;
}

/** `needsSchema`: the command reads or writes tables, so the schema must be up to date first (see ensureSchema). */
export async function withDatabase<T>(
  config: Config,
  fn: (database: Database) => Promise<T>,
  options: { needsSchema?: boolean } = {},
): Promise<T> {
  const database = await openDatabase({ databaseUrl: config.DATABASE_URL, dataDir: config.DATA_DIR, poolMax: 2 });
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
