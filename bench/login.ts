/**
 * Login latency: N sequential `POST /api/v1/auth/login` on the real app (`node bin/quoting serve` over a
 * fresh migrated PostgreSQL database, and over a fresh embedded data directory), against the raw cost of one
 * scrypt-kdf hash and verify with the app's parameters, measured in this process in the same run, spread among
 * the logins. One table per database.
 *   node dist/bench/login.js [--db postgres,embedded] [--runs 50] [--warmup 3] [--hashes 25]
 */
import * as scryptTypes from 'scrypt-kdf';
import { hashPassword } from '../src/crypto.js';
import { benchArgs, databasesOption, dbName, freshTarget, median, ms, note, percentile, printTable, runBench, signUp, startServe, loadAverage, type DbKind } from './lib.js';

// scrypt-kdf's typings declare named exports, but the module exports one default object (as in src/crypto.ts).
const Scrypt = (scryptTypes as unknown as { default: typeof scryptTypes }).default;

const { values } = benchArgs('login.js', {
  db: { type: 'string', default: 'postgres,embedded' },
  runs: { type: 'string', default: '50' },
  warmup: { type: 'string', default: '3' },
  hashes: { type: 'string', default: '25' },
});
const runs = Number(values.runs);
const warmup = Number(values.warmup);
const hashes = Number(values.hashes);

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await fn();
  return performance.now() - started;
}

async function measure(kind: DbKind): Promise<void> {
  const app = await startServe(await freshTarget(kind));
  const { email, password } = await signUp(app.url);

  // The parameters the app really uses, read back from a hash it produces (src/crypto.ts: logN 15, r 8, p 1).
  const stored = Buffer.from(await hashPassword(password), 'base64');
  const params = Scrypt.viewParams(stored);

  const login = async () => {
    const res = await fetch(`${app.url}/api/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password }),
    });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`login answered ${res.status}: ${text}`);
  };

  // Baseline: one scrypt computation in this process, while the server is idle. The baseline samples are
  // spread evenly among the logins so drift in machine load affects both alike.
  for (let i = 0; i < warmup; i++) {
    await login();
    await Scrypt.kdf(password, params);
  }
  const logins: number[] = [];
  const kdf: number[] = [];
  const verify: number[] = [];
  const every = Math.max(1, Math.floor(runs / hashes));
  for (let i = 0; i < runs; i++) {
    logins.push(await timed(login));
    if (i % every === 0 && kdf.length < hashes) {
      kdf.push(await timed(() => Scrypt.kdf(password, params)));
      verify.push(await timed(() => Scrypt.verify(stored, password)));
    }
  }

  const row = (name: string, samples: number[]) => [
    name,
    samples.length,
    ms(Math.min(...samples)),
    ms(median(samples)),
    ms(percentile(samples, 99)),
    ms(Math.max(...samples)),
  ];
  printTable(`${dbName(kind)}: login latency, sequential, one connection (scrypt N = 2^${params.logN}, r = ${params.r}, p = ${params.p}; ${128 * params.r * 2 ** params.logN / 2 ** 20} MiB per hash)`, [
    ['measurement', 'n', 'min', 'p50', 'p99', 'max'],
    row('POST /api/v1/auth/login (HTTP round trip)', logins),
    row('scrypt-kdf kdf() in-process (baseline)', kdf),
    row('scrypt-kdf verify() in-process', verify),
  ]);
  const overhead = median(logins) - median(verify);
  note(`\nlogin p50 - verify p50 = ${ms(overhead)} (HTTP, validation, user + workspace queries, session insert)`);
  await app.stop();
}

runBench(async () => {
  note(`load average at the start: ${loadAverage()}`);
  for (const kind of databasesOption(values.db)) await measure(kind);
  if (runs < 100) note(`note: with ${runs} samples p99 is the ${Math.ceil(0.99 * runs)}th of ${runs}, i.e. close to the max`);
  note(`load average at the end: ${loadAverage()}`);
});
