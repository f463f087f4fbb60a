/**
 * Wall time of `node bin/quoting --help` against a bare `node -e 0`, measured alternately in the same run.
 *   node dist/bench/cli-help.js [--runs 20] [--warmup 2]
 */
import { spawnSync } from 'node:child_process';
import { benchArgs, bin, median, ms, note, percentile, printTable, root, runBench } from './lib.js';

const { values } = benchArgs('cli-help.js', { runs: { type: 'string', default: '20' }, warmup: { type: 'string', default: '2' } });
const runs = Number(values.runs);
const warmup = Number(values.warmup);
const TARGET_MS = 300;

function timeOnce(args: string[], check: (stdout: string) => boolean): number {
  const started = performance.now();
  const result = spawnSync(process.execPath, args, { cwd: root, encoding: 'utf8', env: { ...process.env, QUOTING_ENV_FILE: '' } });
  const elapsed = performance.now() - started;
  if (result.status !== 0 || !check(result.stdout)) {
    throw new Error(`node ${args.join(' ')} failed (status ${result.status}): ${result.stderr || result.stdout}`);
  }
  return elapsed;
}

runBench(async () => {
  const baselineArgs = ['-e', '0'];
  const helpArgs = [bin, '--help'];
  const isHelp = (out: string) => out.includes('Usage: quoting');
  const baseline: number[] = [];
  const help: number[] = [];
  for (let i = 0; i < warmup + runs; i++) {
    // Alternate the two so drift in machine load affects both alike.
    const b = timeOnce(baselineArgs, () => true);
    const h = timeOnce(helpArgs, isHelp);
    if (i >= warmup) {
      baseline.push(b);
      help.push(h);
    }
  }

  const row = (name: string, samples: number[]) => [name, ms(Math.min(...samples)), ms(median(samples)), ms(percentile(samples, 95)), ms(Math.max(...samples))];
  printTable(`CLI start-up: wall time over ${runs} runs each (after ${warmup} warm-up runs), ${process.version}, alternating`, [
    ['command', 'min', 'median', 'p95', 'max'],
    row('node -e 0 (baseline)', baseline),
    row('node bin/quoting --help', help),
  ]);
  const helpMedian = median(help);
  const ratio = helpMedian / median(baseline);
  note(`\nquoting --help median: ${ms(helpMedian)} = ${ratio.toFixed(2)}x the bare node start-up (+${ms(helpMedian - median(baseline))})`);
  note(`target: median < ${TARGET_MS} ms -> ${helpMedian < TARGET_MS ? 'MET' : 'NOT MET'}`);
});
