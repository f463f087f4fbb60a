/** One CSV import on a running server, measured: the benchmarks' import scripts post their files through this. */
import fs from 'node:fs';
import path from 'node:path';
import { cpuMs, type ChildServer } from './lib.js';
import { readStatus, startSampler } from './rss.js';

export interface MeasuredImport {
  ms: number;
  /** The server process's CPU time during the import, ms. */
  cpu: number;
  /** Peak RSS during the import less RSS before it, bytes. */
  rssGrowth: number;
  /** The import report without its errors (there were none). */
  report: Record<string, number>;
}

/**
 * `file` posted as raw text/csv to `POST /api/v1/{kind}/import` by the caller whose session `cookie` is, the
 * server's RSS sampled every `sampleMs` meanwhile. An answer other than 200, or any row error, throws.
 */
export async function postImport(server: ChildServer, cookie: string, kind: string, file: string, sampleMs: number): Promise<MeasuredImport> {
  const pid = server.child.pid!;
  const before = readStatus(pid, 'VmRSS');
  const sampler = await startSampler(pid, sampleMs);
  const cpuBefore = cpuMs(pid);
  const started = performance.now();
  const res = await fetch(`${server.url}/api/v1/${kind}/import`, {
    method: 'POST',
    headers: { cookie, 'content-type': 'text/csv' },
    body: fs.createReadStream(file) as unknown as BodyInit,
    duplex: 'half',
  } as RequestInit);
  const text = await res.text();
  const ms = performance.now() - started;
  const cpu = cpuMs(pid) - cpuBefore;
  const { peak } = await sampler.stop();
  if (res.status !== 200) throw new Error(`${kind} import of ${path.basename(file)} answered ${res.status}: ${text.slice(0, 300)}`);
  const { errors, ...report } = JSON.parse(text).data.import;
  if (errors.length) throw new Error(`${kind} import of ${path.basename(file)} had row errors: ${JSON.stringify(errors.slice(0, 3))}`);
  return { ms, cpu, rssGrowth: Math.max(0, peak - before), report };
}
