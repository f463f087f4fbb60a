import { ConfigError, loadConfig, type Config } from '../config.js';
import { openDatabase, type Database } from '../db/database.js';
import { setLogLevel } from '../log.js';

/** Loads the env file (if any) and the configuration, once per command. */
export function commandConfig(opts: Record<string, unknown>): Config {
  const envFile = (opts.envFile as string | undefined) ?? process.env.QUOTING_ENV_FILE;
  if (envFile) {
    try {
      process.loadEnvFile(envFile);
    } catch (err) {
      throw new ConfigError(`cannot read env file ${envFile}: ${(err as Error).message}`);
    }
  }
  const config = loadConfig();
  setLogLevel(config.LOG_LEVEL);
  return config;
}

export async function withDatabase<T>(config: Config, fn: (database: Database) => Promise<T>): Promise<T> {
  const database = await openDatabase({ databaseUrl: config.DATABASE_URL, dataDir: config.DATA_DIR, poolMax: 2 });
  try {
    return await fn(database);
  } finally {
    await database.close();
  }
}
