/**
 * Throughput of an authenticated `GET /api/v1/auth/me` on the real app (`node bin/quoting serve` over a
 * fresh migrated PostgreSQL database) against a bare koa app answering the same JSON body, both measured
 * with autocannon in the same run. Each server is its own child process; autocannon runs in this one.
 *   node dist/bench/me-vs-koa.js [--duration 10] [--warmup 3] [--connections 50] [--pipelining 1]
 */
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { freshPostgresUrl, note, printTable, runBench, signUp, startChild, startQuoting } from './lib.js';

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '3' },
    connections: { type: 'string', default: '50' },
    pipelining: { type: 'string', default: '1' },
  },
});
const duration = Number(values.duration);
const warmup = Number(values.warmup);
const connections = Number(values.connections);
const pipelining = Number(values.pipelining);
const TARGET_RATIO = 0.5;

async function load(url: string, headers: Record<string, string>, seconds: number): Promise<autocannon.Result> {
  return autocannon({ url, headers, connections, pipelining, duration: seconds });
}

/** Warm-up (discarded), then the measured run; fails on any error or non-2xx answer. */
async function measure(name: string, url: string, headers: Record<string, string>): Promise<autocannon.Result> {
  if (warmup > 0) await load(url, headers, warmup);
  const result = await load(url, headers, duration);
  if (result.errors || result.non2xx) {
    throw new Error(`${name}: ${result.errors} connection errors, ${result.non2xx} non-2xx answers in ${result.requests.total} requests`);
  }
  return result;
}

runBench(async () => {
  const databaseUrl = await freshPostgresUrl();
  const app = await startQuoting(databaseUrl);
  const { cookie } = await signUp(app.url);
  const meUrl = `${app.url}/api/v1/auth/me`;

  const me = await fetch(meUrl, { headers: { cookie } });
  const meBody = await me.text();
  if (me.status !== 200) throw new Error(`GET /api/v1/auth/me answered ${me.status}: ${meBody}`);

  const bareScript = fileURLToPath(new URL('./bare-koa.js', import.meta.url));
  const bare = await startChild([bareScript], { ...process.env, BARE_BODY: meBody }, 'bare koa');
  const bareUrl = `${bare.url}/api/v1/auth/me`;
  const bareBody = await (await fetch(bareUrl)).text();
  if (bareBody !== meBody) throw new Error(`bare koa answers a different body:\n${bareBody}\nvs\n${meBody}`);

  // The same app with the session cache off: every request reads the session from PostgreSQL.
  const uncachedApp = await startQuoting(databaseUrl, { SESSION_CACHE_SECONDS: '0' });
  const uncachedUrl = `${uncachedApp.url}/api/v1/auth/me`;

  const real = await measure('quoting', meUrl, { cookie });
  const uncached = await measure('quoting, cache off', uncachedUrl, { cookie });
  const baseline = await measure('bare koa', bareUrl, { cookie });

  const row = (name: string, r: autocannon.Result) => [
    name,
    r.requests.average.toFixed(0),
    `${r.latency.p50} ms`,
    `${r.latency.p99} ms`,
    `${r.latency.max} ms`,
    r.requests.total,
  ];
  printTable(
    `GET /api/v1/auth/me (${meBody.length}-byte body): ${duration} s each after ${warmup} s warm-up, ${connections} connections, pipelining ${pipelining}`,
    [
      ['server', 'req/s', 'p50', 'p99', 'max', 'requests'],
      row('quoting serve (session cache on, default)', real),
      row('quoting serve, SESSION_CACHE_SECONDS=0', uncached),
      row('bare koa, same body (baseline)', baseline),
    ],
  );
  const ratio = real.requests.average / baseline.requests.average;
  note(`\nratio quoting / bare koa: ${ratio.toFixed(3)}  (target >= ${TARGET_RATIO} -> ${ratio >= TARGET_RATIO ? 'MET' : 'NOT MET'})`);
  note(`ratio with the cache off (one session query per request) / bare koa: ${(uncached.requests.average / baseline.requests.average).toFixed(3)}`);
});
