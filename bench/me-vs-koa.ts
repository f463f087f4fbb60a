/**
 * Throughput of an authenticated `GET /api/v1/auth/me` on the real app (`node bin/quoting serve` over a
 * fresh migrated PostgreSQL database), with the session cache (default) and without it
 * (`SESSION_CACHE_SECONDS=0`: one session query per request, what every cache miss costs), against a bare
 * koa app answering the same JSON body. Rounds alternate (koa, cached, uncached, koa, …; `--rounds` (3));
 * each server is its own child process; autocannon runs in this one.
 *   node dist/bench/me-vs-koa.js [--duration 5] [--warmup 2] [--rounds 3] [--connections 50] [--pipelining 1]
 */
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import fs from 'node:fs';
import { freshPostgresUrl, median, note, printTable, runBench, signUp, startChild, startQuoting } from './lib.js';

const loadavg = () => fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '5' },
    warmup: { type: 'string', default: '2' },
    rounds: { type: 'string', default: '3' },
    connections: { type: 'string', default: '50' },
    pipelining: { type: 'string', default: '1' },
  },
});
const duration = Number(values.duration);
const warmup = Number(values.warmup);
const connections = Number(values.connections);
const pipelining = Number(values.pipelining);
const rounds = Math.max(3, Number(values.rounds));
const TARGETS = { cached: 0.6, uncached: 0.25 };

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

  const servers = [
    { name: 'bare koa, same body (baseline)', url: bareUrl, rates: [] as number[], p99: [] as number[] },
    { name: 'quoting serve, session cache on (default)', url: meUrl, rates: [] as number[], p99: [] as number[] },
    { name: 'quoting serve, SESSION_CACHE_SECONDS=0', url: uncachedUrl, rates: [] as number[], p99: [] as number[] },
  ];
  for (const server of servers) if (warmup > 0) await load(server.url, { cookie }, warmup);
  for (let round = 0; round < rounds; round++) {
    for (const server of servers) {
      const result = await measure(server.name, server.url, { cookie });
      server.rates.push(result.requests.average);
      server.p99.push(result.latency.p99);
    }
  }
  const spread = (xs: number[]) => `${Math.min(...xs).toFixed(0)} / ${median(xs).toFixed(0)} / ${Math.max(...xs).toFixed(0)}`;
  const koa = median(servers[0].rates);
  printTable(
    `GET /api/v1/auth/me (${meBody.length}-byte body): ${rounds} alternating rounds of ${duration} s, ${connections} connections, pipelining ${pipelining}; load average ${loadavg()}`,
    [
      ['server', 'req/s min / median / max', 'p99 (median round)', 'ratio to koa (medians)', 'ratio to koa of the same round, min / median / max'],
      ...servers.map((s) => {
        const ratios = s.rates.map((rate, round) => rate / servers[0].rates[round]);
        const ratioSpread = `${Math.min(...ratios).toFixed(3)} / ${median(ratios).toFixed(3)} / ${Math.max(...ratios).toFixed(3)}`;
        return [s.name, spread(s.rates), `${median(s.p99)} ms`, (median(s.rates) / koa).toFixed(3), ratioSpread];
      }),
    ],
  );
  const cached = median(servers[1].rates) / koa;
  const uncached = median(servers[2].rates) / koa;
  note(`\ncached / koa ${cached.toFixed(3)} (target >= ${TARGETS.cached}: ${cached >= TARGETS.cached ? 'MET' : 'NOT MET'}); ` +
    `uncached / koa ${uncached.toFixed(3)} (target >= ${TARGETS.uncached}: ${uncached >= TARGETS.uncached ? 'MET' : 'NOT MET'})`);
});
