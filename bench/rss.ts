/**
 * A process's resident memory, from /proc/<pid>/status (Linux only): the current RSS, the peak (VmHWM, which
 * can be reset), and a sampler in a worker thread, so that sampling goes on while this thread is busy
 * receiving a large body. The same code as in lists.ts, shared for the scripts that came after it.
 */
import fs from 'node:fs';
import { Worker } from 'node:worker_threads';

export const MB = 2 ** 20;
export const mb = (bytes: number) => `${(bytes / MB).toFixed(1)} MB`;

export function readStatus(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const match = new RegExp(`${field}:\\s+(\\d+) kB`).exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!match) throw new Error(`no ${field} in /proc/${pid}/status`);
  return Number(match[1]) * 1024;
}

/** Resets VmHWM (peak RSS) to the current RSS; false where the kernel or permissions do not allow it. */
export function resetPeak(pid: number): boolean {
  try {
    fs.writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

const SAMPLER = `
const { parentPort, workerData } = require('node:worker_threads');
const fs = require('node:fs');
const { pid, intervalMs, flag } = workerData;
const stop = new Int32Array(flag);
const read = () => Number(/VmRSS:\\s+(\\d+) kB/.exec(fs.readFileSync('/proc/' + pid + '/status', 'utf8'))[1]) * 1024;
let peak = read(), samples = 1;
parentPort.postMessage({ ready: true });
while (Atomics.load(stop, 0) === 0) {
  Atomics.wait(stop, 0, 0, intervalMs);
  const rss = read(); samples++;
  if (rss > peak) peak = rss;
}
parentPort.postMessage({ peak, samples });
`;

export interface Sampler {
  stop(): Promise<{ peak: number; samples: number }>;
}

/** Samples the RSS of `pid` every `intervalMs` until stopped; resolves once the first sample is taken. */
export async function startSampler(pid: number, intervalMs: number): Promise<Sampler> {
  const flag = new SharedArrayBuffer(4);
  const worker = new Worker(SAMPLER, { eval: true, workerData: { pid, intervalMs, flag } });
  const messages: { peak: number; samples: number }[] = [];
  let onDone: (() => void) | undefined;
  worker.once('exit', () => onDone?.()); // a dead sampler must not hang stop()
  await new Promise<void>((resolve, reject) => {
    worker.once('error', reject);
    worker.on('message', (m: { ready?: boolean; peak: number; samples: number }) => {
      if (m.ready) return resolve();
      messages.push(m);
      onDone?.();
    });
  });
  return {
    async stop() {
      const done = new Promise<void>((resolve) => (onDone = resolve));
      Atomics.store(new Int32Array(flag), 0, 1);
      Atomics.notify(new Int32Array(flag), 0);
      if (!messages.length) await done;
      await worker.terminate();
      if (!messages.length) throw new Error('the RSS sampler thread stopped without a result');
      return messages[0];
    },
  };
}
