/**
 * Throughput of an authenticated `GET /api/v1/auth/me` on the real app (`node bin/quoting serve` over a
 * fresh migrated PostgreSQL database, and on the embedded default), with the session cache (default) and without it
 * (`SESSION_CACHE_SECONDS=0`: one session query per request, what every cache miss costs), against a bare
 * koa app answering the same JSON body. Rounds alternate (koa, cached, uncached, koa, …; `--rounds` (3));
 * each server is its own child process; autocannon runs in this one.
 * Each request carries the next of `--sessions` (1000) distinct sessions of the bench user, round robin over
 * every connection, and so does each request to koa (which ignores it): concurrent requests of the uncached
 * server are distinct cache misses, as many clients would be, not one token that could be looked up once
 * for all. After the rounds, the session index's reads per request of each server are counted
 * (pg_stat_user_indexes): ~1 for the uncached server (a miss on every request), ~0 for the cached one.
 * On the embedded default (`--db`, both by default) the cached and the uncached server each hold a copy of one data
 * directory (the same user and sessions: one process may open a data directory), their CPU includes PGlite's thread,
 * and the index reads are not counted (no other process can read the server's statistics).
 *   node dist/bench/me-vs-koa.js [--db postgres,embedded] [--duration 5] [--warmup 2] [--rounds 3] [--connections 50] [--pipelining 1] [--sessions 1000]
 */
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import knexFactory, { type Knex } from 'knex';
import { createSession, SESSION_COOKIE } from '../src/auth/sessions.js';
import {
  benchArgs, databasesOption, dbName, freshDataDir, freshPostgresUrl, median, note, onCleanup, printTable, spread, runBench, signUp, startChild,
  startEmbedded, startQuoting, copyDataDir, withDataDir, loadAverage, cpuMs, type ChildServer, type DbKind,
} from './lib.js';

const { values } = benchArgs('me-vs-koa.js', {
  db: { type: 'string', default: 'postgres,embedded' },
  duration: { type: 'string', default: '5' },
  warmup: { type: 'string', default: '2' },
  rounds: { type: 'string', default: '3' },
  connections: { type: 'string', default: '50' },
  pipelining: { type: 'string', default: '1' },
  sessions: { type: 'string', default: '1000' },
});
const duration = Number(values.duration);
const warmup = Number(values.warmup);
const connections = Number(values.connections);
const pipelining = Number(values.pipelining);
const rounds = Math.max(3, Number(values.rounds));
const sessions = Math.max(1, Number(values.sessions));
const TARGETS = { cached: 0.6, uncached: 0.25 };

/** The cookies requests carry, one after the other (shared by all connections, so no two in flight match). */
let cookies: string[] = [];
let nextCookie = 0;

async function load(url: string, seconds: number, amount?: number): Promise<autocannon.Result> {
  const requests = [{ setupRequest: (request: any) => ({ ...request, headers: { cookie: cookies[nextCookie++ % cookies.length] } }) }];
  return autocannon({ url, requests, connections, pipelining, ...(amount ? { amount } : { duration: seconds }) });
}

function assertAllOk(name: string, result: autocannon.Result): autocannon.Result {
  if (result.errors || result.non2xx) {
    throw new Error(`${name}: ${result.errors} connection errors, ${result.non2xx} non-2xx answers in ${result.requests.total} requests`);
  }
  return result;
}

/** CPU milliseconds of the bench database's backends (not other databases' on the same server), by pid. */
async function backendsCpu(knex: Knex): Promise<Map<number, number>> {
  const { rows } = await knex.raw('select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()');
  const byPid = new Map<number, number>();
  for (const { pid } of rows as { pid: number }[]) {
    const cpu = cpuMs(pid);
    if (!Number.isNaN(cpu)) byPid.set(pid, cpu); // not a backend that has ended since the query
  }
  return byPid;
}

interface Measured {
  result: autocannon.Result;
  /** CPU µs per request of the server process and of the database's backends. */
  serverUs: number;
  databaseUs: number;
}

/**
 * Warm-up (discarded), then the measured run; fails on any error or non-2xx answer. Without `knex` (the embedded
 * database, whose CPU is the server's) the database's CPU is not counted apart.
 */
async function measure(knex: Knex | null, name: string, url: string, pid: number): Promise<Measured> {
  if (warmup > 0) await load(url, warmup);
  const [server, backends] = [cpuMs(pid), knex ? await backendsCpu(knex) : new Map<number, number>()];
  const result = assertAllOk(name, await load(url, duration));
  const serverUs = ((cpuMs(pid) - server) * 1000) / result.requests.total;
  let database = 0;
  if (knex) for (const [backend, cpu] of await backendsCpu(knex)) database += cpu - (backends.get(backend) ?? 0);
  return { result, serverUs, databaseUs: knex ? (database * 1000) / result.requests.total : NaN };
}

/** Entries the sessions' token_hash index has returned so far (statistics a backend flushes within 10 s of idling). */
async function sessionIndexReads(knex: Knex): Promise<number> {
  await knex.raw('select pg_stat_clear_snapshot()');
  const { rows } = await knex.raw(
    "select coalesce(sum(idx_tup_read), 0)::bigint as n from pg_stat_user_indexes where relname = 'sessions' and indexrelname like '%token_hash%'",
  );
  return Number(rows[0].n);
}

/**
 * Index reads per request over `amount` requests to `url` alone, after one request with each session (which
 * fills the cache, if any: `cacheSeconds`, its lifetime); the statistics are given time to settle before and after.
 */
async function readsPerRequest(knex: Knex, name: string, url: string, amount: number, cacheSeconds = 0): Promise<number> {
  const settle = () => new Promise((resolve) => setTimeout(resolve, 11_000));
  // A cache hit does not extend an entry: entries cached during the rounds could lapse between the warming
  // requests and the counted ones, so they are left to lapse first and the warming requests cache them all anew.
  if (cacheSeconds) await new Promise((resolve) => setTimeout(resolve, cacheSeconds * 1000 + 1000));
  assertAllOk(name, await load(url, 0, cookies.length));
  await settle();
  const before = await sessionIndexReads(knex);
  const result = assertAllOk(name, await load(url, 0, amount));
  await settle();
  return ((await sessionIndexReads(knex)) - before) / result.requests.total;
}

/** The user's other sessions, made as login makes them (only the hash is stored); the cookies of all of them. */
async function sessionCookies(knex: Knex, email: string, cookie: string): Promise<string[]> {
  const { rows: [user] } = await knex.raw('/* all workspaces: the bench finds its user by email */ select id from users where email = ?', [email]);
  const all = [cookie];
  while (all.length < sessions) all.push(`${SESSION_COOKIE}=${await createSession(knex, user.id)}`);
  return all;
}

interface Apps {
  cached: ChildServer;
  uncached: ChildServer;
  /** A connection to the database for its backends' CPU and index statistics (PostgreSQL only). */
  knex: Knex | null;
}

/** PostgreSQL: two servers on one database, the second with the session cache off (every request reads the session). */
async function onPostgres(): Promise<Apps> {
  const databaseUrl = await freshPostgresUrl();
  const cached = await startQuoting(databaseUrl);
  const { cookie, email } = await signUp(cached.url);
  const knex = knexFactory({ client: 'pg', connection: databaseUrl, pool: { min: 1, max: 1 } });
  onCleanup(() => knex.destroy());
  cookies = await sessionCookies(knex, email, cookie);
  return { cached, uncached: await startQuoting(databaseUrl, { SESSION_CACHE_SECONDS: '0' }), knex };
}

/** The embedded default: the sessions written with the server stopped, then each server on a copy of the data directory. */
async function onEmbedded(): Promise<Apps> {
  const dataDir = await freshDataDir('me');
  const first = await startEmbedded(dataDir);
  const { cookie, email } = await signUp(first.url);
  await first.stop();
  cookies = await withDataDir(dataDir, ({ knex }) => sessionCookies(knex, email, cookie));
  const copy = copyDataDir(dataDir, 'me-uncached'); // before a server starts there: its control socket cannot be copied
  return { cached: await startEmbedded(dataDir), uncached: await startEmbedded(copy, { SESSION_CACHE_SECONDS: '0' }), knex: null };
}

async function run(kind: DbKind): Promise<void> {
  const { cached: app, uncached: uncachedApp, knex } = kind === 'postgres' ? await onPostgres() : await onEmbedded();
  const meUrl = `${app.url}/api/v1/auth/me`;
  const me = await fetch(meUrl, { headers: { cookie: cookies[0] } });
  const meBody = await me.text();
  if (me.status !== 200) throw new Error(`GET /api/v1/auth/me answered ${me.status}: ${meBody}`);
  const bareScript = fileURLToPath(new URL('./bare-koa.js', import.meta.url));
  const bare = await startChild([bareScript], { ...process.env, BARE_BODY: meBody }, 'bare koa');
  const bareUrl = `${bare.url}/api/v1/auth/me`;
  const bareBody = await (await fetch(bareUrl)).text();
  if (bareBody !== meBody) throw new Error(`bare koa answers a different body:\n${bareBody}\nvs\n${meBody}`);
  const uncachedUrl = `${uncachedApp.url}/api/v1/auth/me`;

  const servers = [
    { name: 'bare koa, same body (baseline)', url: bareUrl, pid: bare.child.pid! },
    { name: 'quoting serve, session cache on (default)', url: meUrl, pid: app.child.pid! },
    { name: 'quoting serve, SESSION_CACHE_SECONDS=0', url: uncachedUrl, pid: uncachedApp.child.pid! },
  ].map((server) => ({ ...server, rates: [] as number[], p99: [] as number[], serverUs: [] as number[], databaseUs: [] as number[] }));
  for (const server of servers) if (warmup > 0) await load(server.url, warmup);
  for (let round = 0; round < rounds; round++) {
    for (const server of servers) {
      const { result, serverUs, databaseUs } = await measure(server.pid === bare.child.pid ? null : knex, server.name, server.url, server.pid);
      server.rates.push(result.requests.average);
      server.p99.push(result.latency.p99);
      server.serverUs.push(serverUs);
      server.databaseUs.push(databaseUs);
    }
  }
  const koa = median(servers[0].rates);
  const cpuHeader = kind === 'postgres' ? 'CPU µs/request: server / PostgreSQL (medians)' : "CPU µs/request: server, PGlite's thread included (medians)";
  printTable(
    `${dbName(kind)}: GET /api/v1/auth/me (${meBody.length}-byte body): ${rounds} alternating rounds of ${duration} s, ${connections} connections, pipelining ${pipelining}, ${cookies.length} sessions in turn; load average ${loadAverage()}`,
    [
      ['server', 'req/s min / median / max', 'p99 (median round)', cpuHeader, 'ratio to koa (medians)', 'ratio to koa of the same round, min / median / max'],
      ...servers.map((s) => {
        const ratios = s.rates.map((rate, round) => rate / servers[0].rates[round]);
        const ratioSpread = `${Math.min(...ratios).toFixed(3)} / ${median(ratios).toFixed(3)} / ${Math.max(...ratios).toFixed(3)}`;
        const cpu = median(s.serverUs).toFixed(0) + (knex ? ` / ${Number.isNaN(median(s.databaseUs)) ? '—' : median(s.databaseUs).toFixed(0)}` : '');
        return [s.name, spread(s.rates, 0), `${median(s.p99)} ms`, cpu, (median(s.rates) / koa).toFixed(3), ratioSpread];
      }),
    ],
  );
  if (knex) {
    const checked = 20 * connections;
    const cachedReads = await readsPerRequest(knex, servers[1].name, meUrl, checked, 30); // SESSION_CACHE_SECONDS' default
    const uncachedReads = await readsPerRequest(knex, servers[2].name, uncachedUrl, checked);
    note(`\nsession index entries read per request, ${checked} requests to each alone: cached ${cachedReads.toFixed(3)}, uncached ${uncachedReads.toFixed(3)}` +
      (uncachedReads < 0.95 ? ' (uncached: NOT a miss on every request)' : ''));
  } else {
    note('\nsession index entries read per request: not counted on the embedded database (its statistics are the server\'s alone)');
  }
  const cached = median(servers[1].rates) / koa;
  const uncached = median(servers[2].rates) / koa;
  note(`${dbName(kind)}: cached / koa ${cached.toFixed(3)} (target >= ${TARGETS.cached}: ${cached >= TARGETS.cached ? 'MET' : 'NOT MET'}); ` +
    `uncached / koa ${uncached.toFixed(3)} (target >= ${TARGETS.uncached}: ${uncached >= TARGETS.uncached ? 'MET' : 'NOT MET'})`);
  for (const server of [bare, app, uncachedApp]) await server.stop();
}

runBench(async () => {
  for (const kind of databasesOption(values.db)) await run(kind);
});
