/**
 * What GET /metrics costs. Throughput of an authenticated `GET /api/v1/auth/me` on `quoting serve` with metrics on
 * (METRICS_TOKEN set: every request counted, timed and labelled) against the same server with them off, rounds
 * alternated (off, on, off, on, …; `--rounds` (3)); each server its own child process over the same data. Then the
 * time of a scrape (client-side, sequential, after a warm-up) over 1,000 workspaces' data: each with a webhook
 * subscription and `--deliveries` (50) deliveries in every queue state (mostly delivered; failed, dead and due ones),
 * and counters of deliveries and imports. With `--baseline-bin <another checkout>/bin/quoting` (PostgreSQL only) that
 * build serves a third target in each round, the same data with metrics off: what the per-request log context costs.
 *   node dist/bench/metrics.js [--baseline-bin ../other/bin/quoting] [--db postgres,embedded] [--duration 5] [--warmup 2] [--rounds 3] [--connections 50] [--workspaces 1000] [--deliveries 50] [--scrapes 30]
 */
import path from 'node:path';
import autocannon from 'autocannon';
import knexFactory, { type Knex } from 'knex';
import {
  benchArgs, copyDataDir, cpuMs, databasesOption, dbName, freshDataDir, freshPostgresUrl, loadAverage, median, note, onCleanup, printTable, runBench, signUp,
  spread, startEmbedded, startQuoting, withDataDir, type ChildServer, type DbKind,
} from './lib.js';

const { values } = benchArgs('metrics.js', {
  db: { type: 'string', default: 'postgres,embedded' },
  duration: { type: 'string', default: '5' },
  warmup: { type: 'string', default: '2' },
  rounds: { type: 'string', default: '3' },
  connections: { type: 'string', default: '50' },
  workspaces: { type: 'string', default: '1000' },
  deliveries: { type: 'string', default: '50' },
  scrapes: { type: 'string', default: '30' },
  'baseline-bin': { type: 'string' },
});
const duration = Number(values.duration);
const warmup = Number(values.warmup);
const connections = Number(values.connections);
const rounds = Math.max(3, Number(values.rounds));
const workspaces = Number(values.workspaces);
const deliveries = Number(values.deliveries);
const scrapes = Number(values.scrapes);
const TOKEN = 'bench-metrics-token';
const TARGETS = { ratio: 0.95, scrapeMs: 50 };

/**
 * The workspaces' data the scrape reads: per workspace a subscription, its events and deliveries (70% delivered,
 * 10% failed and waiting, 10% dead, 10% due), and the installation's counters.
 */
async function seed(knex: Knex): Promise<void> {
  await knex.raw(
    `/* all workspaces: the bench seeds them */ insert into workspaces (name, slug, public_key, secret_key_hash)
     select 'Metrics Bench ' || w, 'metrics-bench-' || w, 'pk_metrics_' || w, 'hash_' || w from generate_series(1, ?) w`,
    [workspaces],
  );
  await knex.raw(
    `/* all workspaces: the bench seeds them */ insert into webhook_subscriptions (workspace_id, url, signing_secret)
     select id, 'https://hooks.example/' || id, 'whsec_' || id from workspaces where slug like 'metrics-bench-%'`,
  );
  await knex.raw(
    `/* all workspaces: the bench seeds them */ insert into events (id, workspace_id, type, data)
     select 'evt_M' || lpad(s.workspace_id::text, 6, '0') || '_' || lpad(i::text, 18, '0'), s.workspace_id, 'customer.created', '{"customer":{}}'::json
     from webhook_subscriptions s, generate_series(1, ?) i where s.url like 'https://hooks.example/%'`,
    [deliveries],
  );
  await knex.raw(
    `/* all workspaces: the bench seeds them */ insert into webhook_deliveries (workspace_id, subscription_id, event_id, event_type, status, attempts, next_attempt_at, delivered_at)
     select e.workspace_id, s.id, e.id, e.type, st.status, st.attempts, now() + st.delay, case when st.status = 'succeeded' then now() end
     from events e
     join webhook_subscriptions s on s.workspace_id = e.workspace_id
     cross join lateral (select (right(e.id, 18))::int % 10 as bucket) b
     cross join lateral (select case when b.bucket < 7 then 'succeeded' when b.bucket = 7 then 'failed' when b.bucket = 8 then 'dead' else 'pending' end as status,
                                case when b.bucket < 7 then 1 when b.bucket = 9 then 0 else 3 end as attempts,
                                case when b.bucket = 7 then interval '1 hour' else interval '-1 minute' end as delay) st
     where e.id like 'evt_M%'`,
  );
  await knex.raw(
    `insert into ops_counters (metric, label, value) values
       ('webhook_deliveries', 'succeeded', 700000), ('webhook_deliveries', 'failed', 90000), ('webhook_deliveries', 'dead', 10000),
       ('webhook_worker_runs', '', 5000), ('imports', 'applied', 3000), ('imports', 'failed', 40), ('import_rows', 'created', 900000)
     on conflict (metric, label) do nothing`,
  );
  await knex.raw('analyze');
}

async function load(url: string, cookie: string, seconds: number): Promise<autocannon.Result> {
  const result = await autocannon({ url, connections, headers: { cookie }, duration: seconds });
  if (result.errors || result.non2xx) throw new Error(`${url}: ${result.errors} errors, ${result.non2xx} non-2xx in ${result.requests.total} requests`);
  return result;
}

/** Sequential scrapes after a warm-up: client-side milliseconds each, and the size of the text. */
async function scrapeTimes(url: string): Promise<{ times: number[]; bytes: number }> {
  const get = async () => {
    const started = performance.now();
    const res = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`GET /metrics answered ${res.status}: ${text}`);
    return { ms: performance.now() - started, bytes: Buffer.byteLength(text) };
  };
  for (let i = 0; i < 5; i++) await get();
  const times: number[] = [];
  let bytes = 0;
  for (let i = 0; i < scrapes; i++) {
    const one = await get();
    times.push(one.ms);
    bytes = one.bytes;
  }
  return { times, bytes };
}

async function servers(kind: DbKind): Promise<{ off: ChildServer; on: ChildServer; baseline?: ChildServer }> {
  if (kind === 'postgres') {
    const databaseUrl = await freshPostgresUrl();
    const knex = knexFactory({ client: 'pg', connection: databaseUrl, pool: { min: 1, max: 1 } });
    onCleanup(() => knex.destroy());
    await seed(knex);
    const baselineBin = values['baseline-bin'];
    const baseline = baselineBin ? await startQuoting(databaseUrl, {}, path.resolve(baselineBin)) : undefined;
    return { off: await startQuoting(databaseUrl), on: await startQuoting(databaseUrl, { METRICS_TOKEN: TOKEN }), baseline };
  }
  const dataDir = await freshDataDir('metrics');
  await withDataDir(dataDir, ({ knex }) => seed(knex));
  const copy = copyDataDir(dataDir, 'metrics-on'); // one process may open a data directory: each server its own copy
  return { off: await startEmbedded(dataDir), on: await startEmbedded(copy, { METRICS_TOKEN: TOKEN }) };
}

async function run(kind: DbKind): Promise<void> {
  const { off, on, baseline } = await servers(kind);
  const cookies = { off: (await signUp(off.url)).cookie, on: (await signUp(on.url)).cookie };
  const targets = [
    { name: 'metrics off (baseline)', server: off, cookie: cookies.off },
    { name: 'metrics on (METRICS_TOKEN set)', server: on, cookie: cookies.on },
    ...(baseline ? [{ name: 'baseline build, metrics off', server: baseline, cookie: (await signUp(baseline.url)).cookie }] : []),
  ].map((t) => ({ ...t, url: `${t.server.url}/api/v1/auth/me`, rates: [] as number[], p99: [] as number[], cpuUs: [] as number[] }));
  for (const target of targets) if (warmup > 0) await load(target.url, target.cookie, warmup);
  for (let round = 0; round < rounds; round++) {
    for (const target of targets) {
      const cpu = cpuMs(target.server.child.pid);
      const result = await load(target.url, target.cookie, duration);
      // The server's CPU per request: less swayed than req/s by what else the machine runs.
      target.cpuUs.push(((cpuMs(target.server.child.pid) - cpu) * 1000) / result.requests.total);
      target.rates.push(result.requests.average);
      target.p99.push(result.latency.p99);
    }
  }
  const ratiosOf = (i: number) => targets[i].rates.map((rate, round) => rate / targets[0].rates[round]);
  const ratios = ratiosOf(1);
  printTable(
    `${dbName(kind)}: authenticated GET /api/v1/auth/me, ${rounds} alternating rounds of ${duration} s, ${connections} connections; load average ${loadAverage()}`,
    [
      ['server', 'req/s min / median / max', 'p99 (median round)', 'server CPU µs/request min / median / max', 'ratio to off of the same round, min / median / max'],
      ...targets.map((t, i) => [
        t.name, spread(t.rates, 0), `${median(t.p99)} ms`, spread(t.cpuUs, 0),
        i === 0 ? '1' : `${Math.min(...ratiosOf(i)).toFixed(3)} / ${median(ratiosOf(i)).toFixed(3)} / ${Math.max(...ratiosOf(i)).toFixed(3)}`,
      ]),
    ],
  );
  const { times, bytes } = await scrapeTimes(on.url);
  printTable(`${dbName(kind)}: GET /metrics over ${workspaces} workspaces, ${workspaces * deliveries} deliveries; ${scrapes} scrapes one after the other`, [
    ['scrape ms min / median / max', 'text bytes'],
    [spread(times, 1), bytes],
  ]);
  const ratio = median(ratios);
  note(`${dbName(kind)}: server CPU per request on / off ${(median(targets[1].cpuUs) / median(targets[0].cpuUs)).toFixed(3)}`);
  note(`${dbName(kind)}: on / off ${ratio.toFixed(3)} (target >= ${TARGETS.ratio}: ${ratio >= TARGETS.ratio ? 'MET' : 'NOT MET'}); ` +
    `scrape median ${median(times).toFixed(1)} ms (target < ${TARGETS.scrapeMs} ms: ${median(times) < TARGETS.scrapeMs ? 'MET' : 'NOT MET'})`);
  for (const server of [off, on, baseline]) await server?.stop();
}

runBench(async () => {
  for (const kind of databasesOption(values.db)) await run(kind);
});
