import fs from 'node:fs';
import path from 'node:path';
import { ConfigError, configSchema, loadConfig, type Config } from '../config.js';
import { DataDirInUse } from '../db/database.js';
import { migrationStatus } from '../db/migrations.js';
import { describeDatabase, runChecks, unreachable, type DatabaseAccess, type Result } from '../ops/doctor/index.js';
import { setLogLevel } from '../log.js';
import { commandEnv, loadEnvFile, servedCommand, withDatabase } from './context.js';
import { say, type CommandIo } from './io.js';

/** `quoting doctor [--json]`: every check with ok, warn or fail and its fix; exit 1 when one fails. */
export async function doctorCommand(opts: Record<string, unknown>, io: CommandIo): Promise<void> {
  // Run inside `quoting serve` for another process, doctor checks the server: its settings, env file and lock.
  const served = servedCommand();
  const envFile = served ? served.envFile : loadEnvFile(opts);
  let configError: string | undefined;
  let invalid = new Set<string>();
  try {
    loadConfig(commandEnv());
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    configError = err.message;
    invalid = new Set(err.problems.map((problem) => problem.variable));
  }
  const { config, invalid: unusable } = usableConfig(invalid);
  setLogLevel('silent');
  const settingsIn = envFile ? `in ${envFile}` : 'in the environment';

  const run = (access: DatabaseAccess) =>
    runChecks({ config, invalid: unusable, configError, settingsIn, env: commandEnv(), server: served?.serverPid, database: async () => access });
  let results: Result[];
  if (unusable.has('DATABASE_URL') || unusable.has('DATA_DIR')) {
    results = await run(unreachable('warn', 'not checked: the database settings are invalid'));
  } else if (!config.DATABASE_URL && !fs.existsSync(path.join(path.resolve(config.DATA_DIR), 'pglite'))) {
    results = await run(unreachable('warn', `no embedded database in ${path.resolve(config.DATA_DIR)} yet`, "start 'quoting serve' (it creates and migrates it), or check DATA_DIR"));
  } else {
    results = await withReachableDatabase(config, run);
  }

  const failed = results.filter((r) => r.status === 'fail');
  const warned = results.filter((r) => r.status === 'warn');
  if (opts.json) {
    say(io.stdout, JSON.stringify({ ok: failed.length === 0, checks: results.map(({ id, title, status, message, fix }) => ({ id, title, status, message, fix: fix ?? null })) }, null, 2));
  } else {
    const width = Math.max(...results.map((r) => r.title.length));
    for (const r of results) say(io.stdout, `${r.status.padEnd(4)}  ${r.title.padEnd(width)}  ${r.message}${r.fix ? `. Fix: ${r.fix}` : ''}`);
    say(io.stdout, `${results.length - failed.length - warned.length} ok, ${warned.length} ${warned.length === 1 ? 'warning' : 'warnings'}, ${failed.length} failed.`);
  }
  if (failed.length) throw new Error(`${failed.length} ${failed.length === 1 ? 'check' : 'checks'} failed: ${failed.map((r) => r.id).join(', ')}`);
}

/** Opens the database once for every check; a database that cannot be opened is a finding, not an error. */
async function withReachableDatabase(config: Config, run: (access: DatabaseAccess) => Promise<Result[]>): Promise<Result[]> {
  let results: Result[] | undefined;
  try {
    // A transaction pooler without DATABASE_POOLER would stop the open: the pooler check reports it instead.
    await withDatabase({ ...config, DATABASE_POOLER: config.DATABASE_POOLER ?? 'none' }, async (database) => {
      let access: DatabaseAccess;
      try {
        const { pending } = await migrationStatus(database.knex);
        access = { ok: true, database, pending };
      } catch (err) {
        access = unreachable('fail', `cannot reach ${describeDatabase(config.DATABASE_URL, config.DATA_DIR)}: ${reason(err)}`);
      }
      results = await run(access);
    }, { keepDirMode: true });
  } catch (err) {
    if (results) throw err;
    if (err instanceof DataDirInUse) return run(unreachable('warn', err.message.split('. ')[0], 'run doctor again once that process has stopped, or where it runs'));
    return run(unreachable('fail', `cannot open ${describeDatabase(config.DATABASE_URL, config.DATA_DIR)}: ${reason(err)}`));
  }
  return results!;
}

function reason(err: unknown): string {
  const e = err as { message?: string; code?: string };
  const message = (e.message ?? String(err)).split('\n')[0].replace(/^Knex: /, '');
  return e.code && !message.includes(e.code) ? `${message} (${e.code})` : message;
}

/** The configuration without its invalid variables, so the other checks still run. */
function usableConfig(invalid: Set<string>): { config: Config; invalid: Set<string> } {
  const env = Object.fromEntries(Object.entries(commandEnv()).filter(([key]) => !invalid.has(key)));
  try {
    return { config: loadConfig(env), invalid };
  } catch {
    return { config: loadConfig({}), invalid: new Set(Object.keys(configSchema.shape)) };
  }
}
