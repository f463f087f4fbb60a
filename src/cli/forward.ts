import path from 'node:path';
import { ConfigError } from '../config.js';
import { CALLER_VARIABLES, sendCommand } from '../db/control-socket.js';
import { dataDirHolder } from '../db/database.js';
import { commandConfig } from './context.js';
import { openFile } from './input.js';
import type { CommandIo } from './io.js';

/**
 * The embedded database admits one process, so while `quoting serve` holds DATA_DIR a command that
 * needs the database runs inside the server instead: this sends it the command line and directory,
 * copies stdin to it on demand and its output back, and returns its exit code. Null when no running
 * server takes it (PostgreSQL, nobody holds DATA_DIR, or a holder without the control socket): the
 * command then runs here, and opening the database says what holds it.
 * The command runs with the server's settings, so none are sent (they would include the secrets of
 * the env file this process read): only how to show the output. `inputFile`, a file the command reads,
 * is opened here and its bytes sent as stdin: the server may not see this user's files (systemd's
 * ProtectHome and PrivateTmp hide ~ and /tmp from it), and a path means something else there.
 */
export async function forwardToServer(opts: Record<string, unknown>, io: CommandIo, args: string[], inputFile?: string): Promise<number | null> {
  let config;
  try {
    config = commandConfig(opts);
  } catch (err) {
    // Invalid settings are the command's own to report (doctor lists them all and runs its other checks).
    if (err instanceof ConfigError) return null;
    throw err;
  }
  if (config.DATABASE_URL || !dataDirHolder(config.DATA_DIR)) return null;
  const env: Record<string, string> = {};
  for (const key of CALLER_VARIABLES) {
    const value = process.env[key];
    if (value !== undefined) env[key] = value;
  }
  const input = inputFile === undefined ? undefined : { file: inputFile, ...(await openFile(inputFile, path.resolve(inputFile))) };
  try {
    return await sendCommand(
      config.DATA_DIR,
      {
        argv: args,
        cwd: process.cwd(),
        env,
        stdout: { isTTY: Boolean(io.stdout.isTTY), columns: io.stdout.columns, colors: io.stdout.hasColors?.() ?? false },
        stderr: { isTTY: Boolean(io.stderr.isTTY) },
        input: input && { file: input.file, size: input.size },
      },
      { stdin: input ? input.stream : io.stdin, stdout: io.stdout, stderr: io.stderr, signal: io.signal },
    );
  } finally {
    input?.stream.destroy();
  }
}
