/**
 * The server's memory on files of a hostile shape, on the embedded database (`node bin/quoting serve`): a 19 MB
 * line of commas after a valid header (19 million empty cells), a 19 MB header of commas, and, as the baseline
 * doing the same work on a file of a usual shape, 19 MB of ordinary product rows (50,000, the most a file holds). Each is posted as raw text/csv
 * to `POST /api/v1/products/import?dry_run=1` (nothing is written, so every round meets the same database), in
 * alternating rounds (baseline, commas, header, baseline, ...); then `--parallel` (6) of the line of commas at
 * once. The server's RSS is sampled during each request: growth = peak − RSS before the request. Target: every
 * hostile shape's growth under 150 MB. `--quoting PATH` runs another build's launcher (for a before-and-after).
 *   node dist/bench/import-shapes.js [--rounds 3] [--parallel 6] [--mb 19] [--quoting bin/quoting]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { mb, MB, readStatus, startSampler } from './rss.js';
import { benchArgs, bin, fmt, freshDataDir, loadAverage, note, onCleanup, printTable, roundsOption, runBench, signUp, spread, startEmbedded } from './lib.js';

const { values } = benchArgs('import-shapes.js', {
  rounds: { type: 'string', default: '3' },
  parallel: { type: 'string', default: '6' },
  mb: { type: 'string', default: '19' },
  quoting: { type: 'string', default: bin },
});
const rounds = roundsOption(values.rounds);
const parallel = Number(values.parallel);
const size = Number(values.mb) * MB;
const TARGET_MB = 150;

function writeFiles(dir: string): Record<string, string> {
  const header = 'product_sku,name,variant_sku,price,description\n';
  const files: Record<string, string> = {
    baseline: path.join(dir, 'rows.csv'),
    commas: path.join(dir, 'commas.csv'),
    header: path.join(dir, 'header.csv'),
  };
  // 50,000 rows (the most a file may hold), each as wide as makes the file `size` bytes.
  const count = 50_000;
  const width = Math.max(0, Math.floor(size / count) - 48);
  const rows: string[] = [];
  for (let i = 0; i < count; i++) {
    const row = `P-${i},Product ${i},V-${i},${(i % 97) + 1}.50,`;
    rows.push(row + 'd'.repeat(Math.max(1, width)));
  }
  fs.writeFileSync(files.baseline, header + rows.join('\n') + '\n');
  fs.writeFileSync(files.commas, `${header}P-1,Tee,V-1,1.00\n${','.repeat(size)}\nP-2,Cap,V-2,2.00\n`);
  fs.writeFileSync(files.header, `${','.repeat(size)}\nP-1,Tee,V-1,1.00\n`);
  return files;
}

async function post(url: string, cookie: string, file: string): Promise<number> {
  const res = await fetch(`${url}/api/v1/products/import?dry_run=1`, {
    method: 'POST',
    headers: { cookie, 'content-type': 'text/csv' },
    body: fs.createReadStream(file) as unknown as BodyInit,
    duplex: 'half',
  } as RequestInit);
  await res.text();
  return res.status;
}

const peaks: number[] = [];

/** Peak RSS growth of the server while `work` runs, in bytes (each peak is kept for the run's highest). */
async function growth(pid: number, work: () => Promise<unknown>): Promise<number> {
  const before = readStatus(pid, 'VmRSS');
  const sampler = await startSampler(pid, 10);
  await work();
  const { peak } = await sampler.stop();
  peaks.push(peak);
  return Math.max(0, peak - before);
}

runBench(async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quoting-bench-shapes-'));
  onCleanup(async () => fs.rmSync(dir, { recursive: true, force: true }));
  const files = writeFiles(dir);
  const server = await startEmbedded(await freshDataDir(), {}, values.quoting);
  const pid = server.child.pid!;
  const { cookie } = await signUp(server.url);
  const startRss = readStatus(pid, 'VmRSS');
  note(`load average before: ${loadAverage()}; server ${values.quoting}`);

  const measured: Record<string, number[]> = { baseline: [], commas: [], header: [] };
  const statuses: Record<string, Set<number>> = { baseline: new Set(), commas: new Set(), header: new Set() };
  for (let round = 0; round < rounds; round++) {
    for (const shape of Object.keys(measured)) {
      measured[shape].push(await growth(pid, async () => statuses[shape].add(await post(server.url, cookie, files[shape]))));
    }
  }
  const together = await growth(pid, () => Promise.all(Array.from({ length: parallel }, () => post(server.url, cookie, files.commas))));
  const health = await fetch(`${server.url}/healthz`);

  const row = (shape: string, label: string) => {
    const samples = measured[shape].map((b) => b / MB);
    const worst = Math.max(...samples);
    return [label, [...statuses[shape]].join(' '), spread(samples), shape === 'baseline' ? '' : worst < TARGET_MB ? 'yes' : 'NO'];
  };
  printTable(`RSS growth of the server, MB, min / median / max of ${rounds} rounds (${fmt(size / MB)} MB files, dry runs)`, [
    ['file', 'status', 'growth', `< ${TARGET_MB} MB`],
    row('baseline', 'ordinary rows (baseline)'),
    row('commas', 'a line of commas'),
    row('header', 'a header of commas'),
    [`${parallel} lines of commas at once`, '', mb(together), together / MB < TARGET_MB ? 'yes' : 'NO'],
  ]);
  note(`server RSS: ${mb(startRss)} after sign-up, ${mb(Math.max(...peaks))} at its highest; /healthz after: ${health.status}; load average after: ${loadAverage()}`);
});
