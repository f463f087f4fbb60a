import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { commandPath } from './context.js';
import { say, type CommandIo } from './io.js';

/**
 * `quoting update`: runs the installer this program ships with (install.sh --update, README: Operations, Updating),
 * which takes the backup, builds and places the new code, migrates, restarts and runs the doctor. Its output is
 * passed on as it comes; its failure (with the rollback steps it printed) is this command's.
 */
export async function updateCommand(opts: Record<string, unknown>, io: CommandIo): Promise<void> {
  const installer = fileURLToPath(new URL('../../../install.sh', import.meta.url));
  if (!fs.existsSync(installer)) throw new Error(`this program has no installer (${installer}): run install.sh --update from the new source`);
  const args = [installer, '--update'];
  if (opts.from !== undefined) args.push('--from', commandPath(String(opts.from)));
  if (opts.root !== undefined) args.push('--root', commandPath(String(opts.root)));
  if (opts.dryRun) args.push('--dry-run');
  say(io.stdout, `Running: bash ${args.join(' ')}`);
  const child = spawn('bash', args, { stdio: ['ignore', 'pipe', 'pipe'], cwd: '/' });
  child.stdout.on('data', (chunk: Buffer) => io.stdout.write(chunk));
  child.stderr.on('data', (chunk: Buffer) => io.stderr.write(chunk));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  });
  if (code !== 0) throw new Error(`the update stopped (install.sh exit ${code ?? 'on a signal'}): see above`);
}
