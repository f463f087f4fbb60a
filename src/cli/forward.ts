import path from 'node:path';
import { ConfigError, configSchema } from '../config.js';
import { sendCommand } from '../db/control-socket.js';
import { dataDirHolder } from '../db/database.js';
import { commandConfig } from './context.js';
import type { CommandIo } from './io.js';

/**
 * The embedded database admits one process, so while `quoting serve` holds DATA_DIR a command that
 * needs the database runs inside the server instead: this sends it the command line, directory and
 * settings, copies stdin to it on demand and its output back, and returns its exit code. Null when
 * no running server takes it (PostgreSQL, nobody holds DATA_DIR, or a holder without the control
 * socket): the command then runs here, and opening the database says what holds it.
 */
export async function forwardToServer(opts: Record<string, unknown>, io: CommandIo, args: string[]): Promise<number | null> {
  let config;
  try {
    config = commandConfig(opts);
  } catch (err) {
    // Invalid settings are the command's own to report (doctor lists them all and runs its other checks).
    if (err instanceof ConfigError) return null;
    throw err;
  }
  if (config.DATABASE_URL || !dataDirHolder(config.DATA_DIR)) return null;
  // The settings as this process sees them (its env file applied); DATA_DIR made absolute so that a
  // command checking it looks at the same directory from the server's working directory. With them the
  // variables that say whether this output goes to a CI log (io.ts wantsLiveView).
  const env: Record<string, string> = {};
  for (const key of [...Object.keys(configSchema.shape), 'CI', 'CONTINUOUS_INTEGRATION']) {
    const value = process.env[key];
    if (value !== undefined) env[key] = value;
  }
  env.DATA_DIR = path.resolve(config.DATA_DIR);
  return sendCommand(
    config.DATA_DIR,
    {
      argv: args,
      cwd: process.cwd(),
      env,
      stdout: { isTTY: Boolean(io.stdout.isTTY), columns: io.stdout.columns },
      stderr: { isTTY: Boolean(io.stderr.isTTY) },
    },
    io,
  );
}
