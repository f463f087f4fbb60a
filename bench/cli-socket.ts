/**
 * Wall time of a database command on the embedded database: run alone (it opens PGlite itself) against
 * the same command sent through the control socket to a running `quoting serve`, measured alternately.
 *   node dist/bench/cli-socket.js [--runs 5] [--command "migrate --status"]
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { benchArgs, bin, median, ms, note, onCleanup, printTable, root, runBench, startChild } from './lib.js';

const { values } = benchArgs('cli-socket.js', { runs: { type: 'string', default: '5' }, command: { type: 'string', default: 'migrate --status' } });
const runs = Number(values.runs);
const command = values.command.split(' ');

function env(dataDir: string): NodeJS.ProcessEnv {
  const result: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'warn', HOST: '127.0.0.1' };
  for (const key of ['QUOTING_ENV_FILE', 'DATABASE_URL', 'PORT', 'APP_URL']) delete result[key];
  return result;
}

function timeOnce(dataDir: string): number {
  const started = performance.now();
  const result = spawnSync(process.execPath, ['--', bin, ...command], { cwd: root, encoding: 'utf8', env: env(dataDir) });
  const elapsed = performance.now() - started;
  if (result.status !== 0) throw new Error(`quoting ${command.join(' ')} failed (status ${result.status}): ${result.stderr}`);
  return elapsed;
}

runBench(async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quoting-bench-socket-'));
  onCleanup(async () => fs.rmSync(dir, { recursive: true, force: true }));
  const alone = path.join(dir, 'alone');
  const served = path.join(dir, 'served');
  const migrated = spawnSync(process.execPath, ['--', bin, 'migrate'], { cwd: root, encoding: 'utf8', env: env(alone) });
  if (migrated.status !== 0) throw new Error(`migrate failed: ${migrated.stderr}`);
  fs.cpSync(alone, served, { recursive: true });
  await startChild(['--', bin, 'serve', '--port', '0'], env(served), 'quoting serve');

  const baseline: number[] = [];
  const socket: number[] = [];
  for (let i = 0; i < runs; i++) {
    // Alternate the two so drift in machine load affects both alike.
    baseline.push(timeOnce(alone));
    socket.push(timeOnce(served));
  }
  const row = (name: string, samples: number[]) => [name, ms(Math.min(...samples)), ms(median(samples)), ms(Math.max(...samples))];
  printTable(`quoting ${command.join(' ')} on the embedded database: wall time over ${runs} runs each, ${process.version}, alternating`, [
    ['how', 'min', 'median', 'max'],
    row('alone: opens PGlite itself (baseline)', baseline),
    row('through quoting.sock to a running serve', socket),
  ]);
  note(`\nthrough the socket: ${(median(baseline) / median(socket)).toFixed(1)}x faster than alone (median)`);
});
