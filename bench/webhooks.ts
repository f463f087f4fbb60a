/**
 * Webhook delivery: throughput and end-to-end latency of an event, on PostgreSQL (`quoting worker --watch`) and on
 * the embedded default (`quoting serve`'s in-process delivery; `--db`, both by default).
 *
 * 1. Throughput. N due deliveries of `customer.created` events (SQL-seeded into one workspace with one
 *    subscription pointing at the receiver) are committed in one transaction with a NOTIFY while a
 *    `quoting worker --watch` child waits (LISTENing); measured from that commit to the receiver holding
 *    all N (distinct event ids), then until every row reads `succeeded`. Ceiling, in the same run: a child
 *    process POSTing the same N bodies to the same receiver with the same client (src/webhooks/outbound.ts post()
 *    + outboundAgents()), headers and signature, the same number of lanes, and no database. Per configuration,
 *    after one discarded warm-up round of each (--warmup-n), the ceiling and the worker alternate (A B A B) for
 *    --rounds (at least 3) rounds; min / median / max of each and of the per-round ratio are printed, and each round's
 *    rates in the order they ran. The warm-up is as long as a round: after a shorter one the first measured round
 *    is the slowest of both, the worker process, started for the configuration, still optimizing its code (V8
 *    compiles in threads of its own, on the same cores). The worker is one long-running `--watch` process per
 *    configuration; the receiver and the ceiling sender, which live
 *    through the whole run, are first primed with --prime-n requests (V8 takes thousands of requests to optimize
 *    their hot paths on a busy 2-core machine).
 * 2. Latency. With `quoting serve` and a default `quoting worker --watch` running, M sequential
 *    `POST /api/v1/customers` (a new email each); from sending the request to the receiver getting the
 *    delivery carrying that email; also the p50 of each of --rounds consecutive slices of the runs.
 *
 * The worker's commits do not wait for the WAL flush (synchronous_commit=off on its connections, see
 * src/webhooks/worker.ts); the commit latency of this PostgreSQL, with and without, is printed too.
 *
 * The receiver (webhook-receiver.js), the ceiling sender (webhook-ceiling.js), the server and the worker each
 * run in a process of their own.
 *
 * On the embedded default there is no `quoting worker`: `quoting serve` delivers in-process, batch after batch when
 * a delivery is announced (NOTIFY) and every second (src/webhooks/run.ts), and no other process may open its database. So each round's N
 * deliveries are seeded beforehand (with the server stopped, in this process) as `dead` rows of a subscription of
 * their own (subscribed to an event type nothing else emits), and committed due at once by
 * `quoting webhooks resend --workspace W --status dead --subscription S`, which runs inside the server through its
 * control socket (one UPDATE and its NOTIFY). deliveries/s is N over the span from the first to the Nth distinct
 * request at the receiver, for the server and for its ceiling alike (the wait from the command's end to the first
 * request is printed apart); one `quoting serve` per configuration
 * (WEBHOOK_CONCURRENCY x WEBHOOK_WORKER_BATCH); the rows are checked (all succeeded, at the first attempt) once it
 * has stopped. The latency is measured on `quoting serve` alone, with its defaults.
 * The latency's runs there are `--embedded-latency-runs` (50).
 *   node dist/bench/webhooks.js [--db postgres,embedded] [--n 5000] [--rounds 3] [--warmup-n 5000] [--prime-n 5000] [--configs 16x100,32x100,64x100,16x500,64x500]
 *                               [--latency-runs 200] [--latency-warmup 10]
 */
import fs from 'node:fs';
import type { Knex } from 'knex';
import { openPostgres } from '../src/db/database.js';
import { spawn } from 'node:child_process';
import {
  benchArgs, bin, databasesOption, freshDataDir, seededDeliveries, forkScript, freshPostgresUrl, ms, note, onCleanup, percentile, printTable, spread, root, roundsOption, runBench, signUp,
  startEmbedded, startQuoting, startWorker, withDataDir, loadAverage, cpuMs, type ChildServer, type Forked, type Worker,
} from './lib.js';

const { values } = benchArgs('webhooks.js', {
  db: { type: 'string', default: 'postgres,embedded' },
  n: { type: 'string', default: '5000' },
  configs: { type: 'string', default: '16x100,32x100,64x100,16x500,64x500' },
  'warmup-n': { type: 'string', default: '5000' },
  rounds: { type: 'string', default: '3' },
  'prime-n': { type: 'string', default: '5000' },
  'latency-runs': { type: 'string', default: '200' },
  'latency-warmup': { type: 'string', default: '10' },
  'embedded-latency-runs': { type: 'string', default: '50' },
});
const N = Number(values.n);
const configs = values.configs
  .split(',')
  .filter(Boolean)
  .map((text) => {
    const [concurrency, batch] = text.split('x').map(Number);
    if (!(concurrency > 0 && batch > 0)) throw new Error(`--configs: "${text}" is not <concurrency>x<batch>`);
    return { concurrency, batch };
  });
const warmupN = Number(values['warmup-n']);
const rounds = roundsOption(values.rounds);
const primeN = Number(values['prime-n']);
const latencyRuns = Number(values['latency-runs']);
const latencyWarmup = Number(values['latency-warmup']);

const TARGETS = { ratio: 0.7, p50Ms: 50 };

const now = () => performance.timeOrigin + performance.now();
const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis));

// ---------------------------------------------------------------- CPU time (Linux /proc)

/** CPU milliseconds of every process named `postgres` (the server and all its backends, not only ours), by pid. */
function postgresCpu(): Map<number, number> {
  const byPid = new Map<number, number>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (fs.readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === 'postgres') byPid.set(Number(entry), cpuMs(Number(entry)));
    } catch {
      // the process ended
    }
  }
  return byPid;
}

/** CPU used between two snapshots by the processes alive at the second (a backend started in between counts whole). */
function postgresCpuSince(before: Map<number, number>): number {
  let total = 0;
  for (const [pid, cpu] of postgresCpu()) total += cpu - (before.get(pid) ?? 0);
  return total;
}

const cpuShare = (cpu: number, millis: number) => (Number.isNaN(cpu) ? '?' : `${((100 * cpu) / millis).toFixed(0)}%`);

// ---------------------------------------------------------------- seeding

const { prefix, seedEvents, seedDeliveries } = seededDeliveries('U');

/** The bodies the worker sends for the round's events (its own SQL expression), as `prefix` gives them. */
async function deliveryBodies(knex: Knex, round: number): Promise<{ event_id: string; event_type: string; body: string }[]> {
  const { rows } = await knex.raw(
    `/* all workspaces: the bench reads its own rows */ select e.id as event_id, e.type as event_type,
       '{"id":' || to_json(e.id)::text || ',"type":' || to_json(e.type)::text || ',"created":' || floor(extract(epoch from e.created_at))::bigint
         || ',"organization_id":' || e.workspace_id || ',"data":' || e.data::text || '}' as body
     from events e where left(e.id, 9) = ? order by e.id`,
    [prefix(round)],
  );
  return rows;
}

/** Latency of a one-row UPDATE in its own transaction (one WAL flush each), and without waiting for the flush. */
async function commitProbe(knex: Knex, runs = 100): Promise<{ sync: number[]; async: number[] }> {
  await knex.raw('create table bench_commit_probe (id int primary key, n int not null)');
  await knex.raw('insert into bench_commit_probe values (1, 0)');
  const result = { sync: [] as number[], async: [] as number[] };
  await knex.transaction(async () => {}); // warm the pool
  for (const mode of ['sync', 'async'] as const) {
    // One connection for the whole series, so the session setting holds.
    const connection = await knex.client.acquireConnection();
    try {
      await connection.query(`set synchronous_commit = ${mode === 'sync' ? 'on' : 'off'}`);
      for (let i = 0; i < runs; i++) {
        const t0 = now();
        await connection.query('update bench_commit_probe set n = n + 1 where id = 1');
        result[mode].push(now() - t0);
      }
      await connection.query('reset synchronous_commit');
    } finally {
      await knex.client.releaseConnection(connection);
    }
  }
  await knex.raw('drop table bench_commit_probe');
  return result;
}

async function statuses(knex: Knex, round: number): Promise<Record<string, number>> {
  const { rows } = await knex.raw(`/* all workspaces: the bench reads its own rows */ select status, count(*)::int as n from webhook_deliveries where left(event_id, 9) = ? group by status`, [prefix(round)]);
  return Object.fromEntries(rows.map((r: { status: string; n: number }) => [r.status, r.n]));
}

// ---------------------------------------------------------------- measurements

interface Done {
  requests: number;
  distinct: number;
  unsigned: number;
  firstAt: number;
  lastAt: number;
}

interface Throughput {
  sender: string;
  concurrency: number;
  batch: number | null;
  receivedMs: number;
  recordedMs: number | null;
  done: Done;
  senderCpu: number;
  /** The sender's main thread alone: a Node process sends from one thread, so 1 s of it a second bounds its rate. */
  senderThreadCpu: number;
  postgresCpu: number;
  receiverCpu: number;
}

// ---------------------------------------------------------------- latency (both databases)

interface Latency {
  total: number[];
  api: number[];
  after: number[];
}

/** `--latency-runs` sequential POST /api/v1/customers (a new email each), from sending to the receiver getting that delivery. */
async function measureLatency(receiver: Forked, appUrl: string, headers: Record<string, string>, latencyRuns: number): Promise<Latency> {
  const waiting = new Map<string, (at: number) => void>();
  const onHit = (message: { type: string; email?: string; at: number }) => {
    if (message.type === 'hit' && message.email) waiting.get(message.email)?.(message.at);
  };
  receiver.child.on('message', onHit);
  receiver.child.send({ type: 'track', on: true });
  receiver.child.send({ type: 'expect', n: Number.MAX_SAFE_INTEGER }); // no 'done' report
  const result: Latency = { total: [], api: [], after: [] };
  const stamp = Date.now();
  for (let i = 0; i < latencyWarmup + latencyRuns; i++) {
    const email = `latency.${stamp}.${i}@example.com`;
    const arrived = new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`delivery for ${email} not received within 10 s`)), 10_000);
      waiting.set(email, (at) => {
        clearTimeout(timer);
        waiting.delete(email);
        resolve(at);
      });
    });
    const t0 = now();
    const res = await fetch(`${appUrl}/api/v1/customers`, { method: 'POST', headers, body: JSON.stringify({ email, name: `Latency ${i}` }) });
    await res.arrayBuffer();
    const t1 = now();
    if (res.status !== 201) throw new Error(`POST /api/v1/customers answered ${res.status}`);
    const at = await arrived;
    if (i < latencyWarmup) continue;
    result.total.push(at - t0);
    result.api.push(t1 - t0);
    result.after.push(at - t1);
  }
  receiver.child.send({ type: 'track', on: false });
  receiver.child.off('message', onHit);
  return result;
}

function printLatency(database: string, setup: string, { total, api, after }: Latency): void {
  const latencyRuns = total.length;
  const stats = (name: string, samples: number[]) => [
    name, ms(percentile(samples, 0)), ms(percentile(samples, 50)), ms(percentile(samples, 95)), ms(percentile(samples, 99)), ms(Math.max(...samples)),
  ];
  printTable(
    `${database}: 2. end-to-end latency: ${latencyRuns} sequential POST /api/v1/customers (after ${latencyWarmup} warm-up), ${setup}, one at a time`,
    [
      ['', 'min', 'p50', 'p95', 'p99', 'max'],
      stats('request sent -> delivery at the receiver', total),
      stats('  API response time', api),
      stats('  API response -> delivery at the receiver', after),
    ],
  );
  // The same samples in `rounds` consecutive slices: how steady the p50 is over the run.
  const size = Math.ceil(total.length / rounds);
  const sliceP50s = Array.from({ length: rounds }, (_, k) => percentile(total.slice(k * size, (k + 1) * size), 50)).filter((v) => !Number.isNaN(v));
  note(`p50 of each of ${sliceP50s.length} consecutive slices, min / median / max: ${ms(Math.min(...sliceP50s))} / ${ms(percentile(sliceP50s, 50))} / ${ms(Math.max(...sliceP50s))}`);
  note(`load average after the latency runs: ${loadAverage()}`);
  const p50 = percentile(total, 50);
  note(`\np50 ${ms(p50)} (target < ${TARGETS.p50Ms} ms -> ${p50 < TARGETS.p50Ms ? 'MET' : 'NOT MET'})`);
}

async function onPostgres(): Promise<void> {
  const databaseUrl = await freshPostgresUrl();
  const db = openPostgres(databaseUrl, 2);
  onCleanup(() => db.close());
  const knex = db.knex;

  const receiver = await forkScript('./webhook-receiver.js', 'receiver', 'listening');
  const receiverUrl = `${receiver.ready.url}/hooks`;
  const receiverPid = receiver.child.pid!;

  const app = await startQuoting(databaseUrl);
  const { cookie } = await signUp(app.url);
  const headers = { cookie, 'content-type': 'application/json' };
  const wsRes = await fetch(`${app.url}/api/v1/workspace`, { headers });
  const wsBody = (await wsRes.json()) as { data: { workspace: { id: number } } };
  if (wsRes.status !== 200) throw new Error(`GET /api/v1/workspace answered ${wsRes.status}`);
  const workspaceId = wsBody.data.workspace.id;
  const subRes = await fetch(`${app.url}/api/v1/webhooks`, { method: 'POST', headers, body: JSON.stringify({ url: receiverUrl, event_types: ['customer.*'] }) });
  const subBody = (await subRes.json()) as { data: { subscription: { id: number; signing_secret: string } } };
  if (subRes.status !== 201) throw new Error(`POST /api/v1/webhooks answered ${subRes.status}: ${JSON.stringify(subBody)}`);
  const { id: subscriptionId, signing_secret: secret } = subBody.data.subscription;
  const receiveTimeout = Math.max(120_000, (N / 20) * 1000);

  // ---------------------------------------------------------------- 1. throughput
  if (configs.length) {
    const ceiling = await forkScript('./webhook-ceiling.js', 'ceiling sender', 'ready');
    /** CPU milliseconds used by the sender, every postgres process and the receiver from now until used(). */
    const cpuMeter = (senderPid: number | undefined) => {
      const sender = cpuMs(senderPid);
      const senderThread = cpuMs(senderPid, true);
      const receiver = cpuMs(receiverPid);
      const postgres = postgresCpu();
      return {
        used: () => ({
          senderCpu: cpuMs(senderPid) - sender, senderThreadCpu: cpuMs(senderPid, true) - senderThread, postgresCpu: postgresCpuSince(postgres),
          receiverCpu: cpuMs(receiverPid) - receiver,
        }),
      };
    };

    /** The ceiling: the round's bodies, same client, same lanes, no database. */
    const runCeiling = async (round: number, n: number, concurrency: number): Promise<Throughput> => {
      ceiling.child.send({ type: 'load', url: receiverUrl, secret, concurrency, deliveries: await deliveryBodies(knex, round) });
      await ceiling.next('loaded', 30_000);
      receiver.child.send({ type: 'expect', n });
      const received = receiver.next<Done>('done', receiveTimeout);
      const finished = ceiling.next<{ succeeded: number; failed: number; error: string | null }>('done', receiveTimeout);
      const cpu = cpuMeter(ceiling.child.pid);
      const t0 = now();
      ceiling.child.send({ type: 'go' });
      const done = await received;
      const used = cpu.used();
      const result = await finished;
      if (result.failed) throw new Error(`ceiling: ${result.failed} of ${n} POSTs failed: ${result.error}`);
      return {
        sender: 'ceiling: post() loop, no database', concurrency, batch: null, receivedMs: done.lastAt - t0, recordedMs: null, done, ...used,
      };
    };

    /** The round's deliveries committed at once while the worker waits; until received, then until all rows succeeded. */
    const runWorker = async (worker: Worker, round: number, n: number): Promise<Omit<Throughput, 'sender' | 'concurrency' | 'batch'>> => {
      receiver.child.send({ type: 'expect', n });
      const received = receiver.next<Done>('done', receiveTimeout);
      await seedDeliveries(knex, workspaceId, subscriptionId, round);
      const t0 = now();
      const cpu = cpuMeter(worker.child.pid);
      const done = await received;
      const used = cpu.used();
      let counts = await statuses(knex, round);
      const recordDeadline = now() + 30_000;
      while ((counts.succeeded ?? 0) < n && now() < recordDeadline) {
        await sleep(5);
        counts = await statuses(knex, round);
      }
      const recordedMs = now() - t0;
      if ((counts.succeeded ?? 0) !== n) throw new Error(`worker round ${round}: rows not all succeeded: ${JSON.stringify(counts)}`);
      return {
        receivedMs: done.lastAt - t0, recordedMs, done, ...used,
      };
    };

    // Every round's events up front, so no seeding runs between measurements. Per configuration: one warm-up round
    // (discarded), then `rounds` measured ones; the ceiling of a round POSTs the same bodies as the worker's round.
    const roundsPerConfig = 1 + rounds;
    for (let i = 0; i < configs.length; i++) {
      for (let r = 0; r < roundsPerConfig; r++) {
        const n = r === 0 ? warmupN : N;
        if (n > 0) await seedEvents(knex, workspaceId, i * roundsPerConfig + r + 1, n);
      }
    }
    if (primeN > 0) await seedEvents(knex, workspaceId, 0, primeN);
    await knex.raw('vacuum analyze events');
    // Write the seeded pages out now rather than under the first measurement (needs a superuser; skipped otherwise).
    await knex.raw('checkpoint').catch(() => undefined);
    // The receiver and the ceiling sender live through the whole run: brought up to speed once (V8 optimizes their
    // hot paths in background threads, which on a busy 2-core machine takes thousands of requests).
    if (primeN > 0) await runCeiling(0, primeN, 16);
    const probeBefore = await commitProbe(knex);
    const loadBefore = loadAverage();
    const results: { concurrency: number; batch: number; ceiling: Throughput[]; worker: Throughput[] }[] = [];
    for (const [i, { concurrency, batch }] of configs.entries()) {
      const first = i * roundsPerConfig + 1;
      // Started idle and LISTENing, as a long-running worker waits for work.
      const worker = await startWorker(knex, databaseUrl, {
        WEBHOOK_CONCURRENCY: String(concurrency),
        WEBHOOK_WORKER_BATCH: String(batch),
      });
      if (warmupN > 0) {
        await runCeiling(first, warmupN, concurrency);
        await runWorker(worker, first, warmupN);
      }
      const result = { concurrency, batch, ceiling: [] as Throughput[], worker: [] as Throughput[] };
      // A B A B: the ceiling, then the worker, on the same bodies, round after round.
      for (let r = 1; r <= rounds; r++) {
        result.ceiling.push(await runCeiling(first + r, N, concurrency));
        await sleep(100); // the worker back to waiting for a NOTIFY
        result.worker.push({ sender: 'worker', concurrency, batch, ...(await runWorker(worker, first + r, N)) });
      }
      await worker.stop();
      results.push(result);
    }
    const probeAfter = await commitProbe(knex);
    const loadAfter = loadAverage();

    const perSecondOf = (r: Throughput) => N / (r.receivedMs / 1000);
    const ratios = (r: (typeof results)[number]) => r.worker.map((w, k) => r.ceiling[k].receivedMs / w.receivedMs);
    const medianOf = (values: number[]) => percentile(values, 50);
    const perDelivery = (runs: Throughput[], what: 'senderCpu' | 'senderThreadCpu' | 'postgresCpu' | 'receiverCpu') => medianOf(runs.map((w) => (1000 * w[what]) / N));
    const machineLimit = (r: (typeof results)[number]) =>
      2e6 / (perDelivery(r.worker, 'senderCpu') + perDelivery(r.worker, 'postgresCpu') + perDelivery(r.worker, 'receiverCpu'));
    // The worker sends from one thread: at its main thread's CPU per delivery, one core a second is its own limit.
    const threadLimit = (r: (typeof results)[number]) => 1e6 / perDelivery(r.worker, 'senderThreadCpu');
    printTable(
      `PostgreSQL: 1. throughput: ${N} due customer.created deliveries (~${(await deliveryBodies(knex, 2))[0].body.length}-byte bodies), one subscription, ` +
        `receiver answering 200 at once; ${rounds} rounds per configuration, ceiling and worker alternating (A B A B), min / median / max`,
      [
        ['lanes x batch', 'ceiling deliveries/s', 'worker deliveries/s', 'ratio worker/ceiling', 'worker: all rows succeeded (ms)', 'dupes', 'worker CPU', 'postgres CPU', 'receiver CPU',
          'CPU µs/delivery: ceiling sender; worker (its main thread) + postgres + receiver', 'machine limit (2 cores) / ceiling', "worker's thread limit / ceiling"],
        ...results.map((r) => [
          `${r.concurrency}x${r.batch}`,
          spread(r.ceiling.map(perSecondOf), 0),
          spread(r.worker.map(perSecondOf), 0),
          spread(ratios(r), 2),
          spread(r.worker.map((w) => w.recordedMs!), 0),
          r.worker.reduce((sum, w) => sum + w.done.requests - w.done.distinct, 0),
          cpuShare(medianOf(r.worker.map((w) => w.senderCpu)), medianOf(r.worker.map((w) => w.receivedMs))),
          cpuShare(medianOf(r.worker.map((w) => w.postgresCpu)), medianOf(r.worker.map((w) => w.receivedMs))),
          cpuShare(medianOf(r.worker.map((w) => w.receiverCpu)), medianOf(r.worker.map((w) => w.receivedMs))),
          `${perDelivery(r.ceiling, 'senderCpu').toFixed(0)}; ${perDelivery(r.worker, 'senderCpu').toFixed(0)} (${perDelivery(r.worker, 'senderThreadCpu').toFixed(0)}) + ` +
            `${perDelivery(r.worker, 'postgresCpu').toFixed(0)} + ${perDelivery(r.worker, 'receiverCpu').toFixed(0)}`,
          (machineLimit(r) / medianOf(r.ceiling.map(perSecondOf))).toFixed(2),
          (threadLimit(r) / medianOf(r.ceiling.map(perSecondOf))).toFixed(2),
        ]),
      ],
    );
    note('deliveries/s = N / (commit of the N rows [worker] or start of the loop [ceiling] -> Nth distinct request at the receiver);');
    note('"all rows succeeded" also waits for the outcome UPDATEs; CPU = median share of one core over the receiving time (postgres: every');
    note('postgres process on the machine); ratio = per round, worker deliveries/s / deliveries/s of the ceiling run just before it.');
    note('CPU µs/delivery: medians over the rounds; machine limit = the worker\'s rate were both cores kept busy by the worker, PostgreSQL');
    note('and the receiver at their measured CPU per delivery (2 s of CPU per second / their sum), as a share of the ceiling\'s rate;');
    note('thread limit = the worker\'s rate were its main thread busy all the time (1 s a second / its CPU per delivery), as a share of the');
    note('ceiling\'s rate: the lower of the two limits binds.');
    for (const r of results) note(`${r.concurrency}x${r.batch} rounds in order, deliveries/s: ceiling ${r.ceiling.map((c) => perSecondOf(c).toFixed(0)).join(', ')}; worker ${r.worker.map((w) => perSecondOf(w).toFixed(0)).join(', ')}`);
    note(`load average before the rounds: ${loadBefore}; after: ${loadAfter}`);
    const main = results.find((r) => r.concurrency === 16 && r.batch === 100) ?? results[0];
    const ratio = medianOf(ratios(main));
    note(`\n${main.concurrency}x${main.batch}: median ratio worker / ceiling ${ratio.toFixed(2)} (target >= ${TARGETS.ratio} -> ${ratio >= TARGETS.ratio ? 'MET' : 'NOT MET'}); ` +
      `median ${medianOf(main.worker.map(perSecondOf)).toFixed(0)} deliveries/s`);
    for (const [when, probe] of [['before', probeBefore], ['after', probeAfter]] as const) {
      note(`PostgreSQL commit latency ${when} (one-row UPDATE, autocommit, ${probe.sync.length} sequential): p50 ${ms(percentile(probe.sync, 50), 2)}, ` +
        `p95 ${ms(percentile(probe.sync, 95), 2)}; with synchronous_commit=off: p50 ${ms(percentile(probe.async, 50), 2)}`);
    }
    const unsigned = results.reduce((sum, r) => sum + [...r.ceiling, ...r.worker].reduce((k, x) => k + x.done.unsigned, 0), 0);
    if (unsigned) note(`warning: ${unsigned} requests arrived without a Service-Signature header`);
  }

  // ---------------------------------------------------------------- 2. latency
  if (latencyRuns > 0) {
    await startWorker(knex, databaseUrl, {});
    const { total, api, after } = await measureLatency(receiver, app.url, headers, latencyRuns);
    // The last outcome UPDATE may land just after its delivery arrived.
    const expected = latencyWarmup + latencyRuns;
    const readCheck = async (): Promise<{ n: number; ok: number; attempts: number }> =>
      (
        await knex.raw(
          `/* all workspaces: the bench reads its own rows */ select count(*)::int as n, count(*) filter (where status = 'succeeded')::int as ok, max(attempts)::int as attempts
           from webhook_deliveries where event_type = 'customer.created' and left(event_id, 5) <> 'evt_U'`,
        )
      ).rows[0];
    const checkDeadline = now() + 10_000;
    let check = await readCheck();
    while (check.ok < expected && now() < checkDeadline) {
      await sleep(10);
      check = await readCheck();
    }
    if (check.n !== expected || check.ok !== check.n || check.attempts !== 1) {
      throw new Error(`latency deliveries: ${JSON.stringify(check)} (expected ${expected}, all succeeded at the first attempt)`);
    }
    printLatency('PostgreSQL', 'quoting serve + quoting worker --watch (defaults)', { total, api, after });
    const slow = total.filter((value) => value > 900).length;
    note(`${slow} of ${latencyRuns} over 900 ms (picked up by the 1 s poll rather than the NOTIFY)`);
  }
}


// ---------------------------------------------------------------- the embedded default

/** `quoting <args>` as an operator runs it next to `quoting serve` on the data directory (sent through its control socket). */
function quotingCommand(dataDir: string, args: string[]): Promise<void> {
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'warn' };
  for (const name of ['QUOTING_ENV_FILE', 'DATABASE_URL']) delete env[name];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], { cwd: root, env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`quoting ${args.join(' ')} exited ${code}: ${stderr}`))));
  });
}

interface EmbeddedRound {
  /** First to Nth distinct request at the receiver. */
  spanMs: number;
  /** The re-queue command's end (its UPDATE committed) to the first request. */
  waitMs: number;
  done: Done;
  senderCpu: number;
  receiverCpu: number;
  /** serve's main thread alone (the rest of senderCpu is PGlite's thread, the garbage collector's and libuv's). */
  mainThreadCpu?: number;
}

async function onEmbedded(): Promise<void> {
  const serveEnv = { OUTBOUND_ALLOWED_CIDRS: '127.0.0.0/8' };
  const receiver = await forkScript('./webhook-receiver.js', 'receiver', 'listening');
  const receiverUrl = `${receiver.ready.url}/hooks`;
  const receiverPid = receiver.child.pid!;
  const receiveTimeout = Math.max(120_000, (N / 20) * 1000);
  const dataDir = await freshDataDir('webhooks');

  // The workspace and its subscriptions through the API: one for the latency (customer.*), one per throughput round.
  let app = await startEmbedded(dataDir, serveEnv);
  const { cookie } = await signUp(app.url);
  const headers = { cookie, 'content-type': 'application/json' };
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${app.url}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const json = (await res.json()) as { data: any };
    if (res.status >= 300) throw new Error(`${method} ${path} answered ${res.status}: ${JSON.stringify(json)}`);
    return json.data;
  };
  const workspace = (await call('GET', '/api/v1/workspace')).workspace as { id: number; slug: string };
  await call('POST', '/api/v1/webhooks', { url: receiverUrl, event_types: ['customer.*'] });
  const roundsPerConfig = 1 + rounds;
  const subscriptions: { id: number; secret: string }[] = [];
  for (let round = 1; round <= configs.length * roundsPerConfig; round++) {
    const { subscription } = await call('POST', '/api/v1/webhooks', { url: receiverUrl, event_types: ['customer.deleted'] });
    subscriptions[round] = { id: subscription.id, secret: subscription.signing_secret };
  }
  await app.stop();

  // Every round's events and its deliveries (dead, as if given up on) up front, while no server holds the directory.
  const bodies = new Map<number, Awaited<ReturnType<typeof deliveryBodies>>>();
  await withDataDir(dataDir, async ({ knex }) => {
    for (let round = 1; round <= configs.length * roundsPerConfig; round++) {
      const n = (round - 1) % roundsPerConfig === 0 ? warmupN : N;
      if (n <= 0) continue;
      await seedEvents(knex, workspace.id, round, n);
      await knex.raw(
        `insert into webhook_deliveries (workspace_id, subscription_id, event_id, event_type, status, attempts)
         select ?, ?, id, type, 'dead', 6 from events where left(id, 9) = ? order by id`,
        [workspace.id, subscriptions[round].id, prefix(round)],
      );
      bodies.set(round, await deliveryBodies(knex, round));
    }
    if (primeN > 0) {
      await seedEvents(knex, workspace.id, 0, primeN);
      bodies.set(0, await deliveryBodies(knex, 0));
    }
    await knex.raw('vacuum analyze events');
    await knex.raw('vacuum analyze webhook_deliveries');
  });

  const ceiling = await forkScript('./webhook-ceiling.js', 'ceiling sender', 'ready');
  const runCeiling = async (round: number, n: number, concurrency: number, secret: string): Promise<EmbeddedRound> => {
    ceiling.child.send({ type: 'load', url: receiverUrl, secret, concurrency, deliveries: bodies.get(round) });
    await ceiling.next('loaded', 30_000);
    receiver.child.send({ type: 'expect', n });
    const received = receiver.next<Done>('done', receiveTimeout);
    const finished = ceiling.next<{ succeeded: number; failed: number; error: string | null }>('done', receiveTimeout);
    const cpu = [cpuMs(ceiling.child.pid), cpuMs(receiverPid)];
    const t0 = now();
    ceiling.child.send({ type: 'go' });
    const done = await received;
    const used = { senderCpu: cpuMs(ceiling.child.pid) - cpu[0], receiverCpu: cpuMs(receiverPid) - cpu[1] };
    const result = await finished;
    if (result.failed) throw new Error(`ceiling: ${result.failed} of ${n} POSTs failed: ${result.error}`);
    return { spanMs: done.lastAt - done.firstAt, waitMs: done.firstAt - t0, done, ...used };
  };
  const runServe = async (server: ChildServer, round: number, n: number): Promise<EmbeddedRound> => {
    receiver.child.send({ type: 'expect', n });
    const received = receiver.next<Done>('done', receiveTimeout);
    const cpu = [cpuMs(server.child.pid), cpuMs(receiverPid), cpuMs(server.child.pid, true)];
    await quotingCommand(dataDir, ['webhooks', 'resend', '--workspace', workspace.slug, '--status', 'dead', '--subscription', String(subscriptions[round].id)]);
    const committed = now();
    const done = await received;
    const used = { senderCpu: cpuMs(server.child.pid) - cpu[0], receiverCpu: cpuMs(receiverPid) - cpu[1], mainThreadCpu: cpuMs(server.child.pid, true) - cpu[2] };
    return { spanMs: done.lastAt - done.firstAt, waitMs: done.firstAt - committed, done, ...used };
  };

  if (primeN > 0) await runCeiling(0, primeN, 16, subscriptions[1].secret);
  const loadBefore = loadAverage();
  const results: { concurrency: number; batch: number; ceiling: EmbeddedRound[]; serve: EmbeddedRound[] }[] = [];
  for (const [i, { concurrency, batch }] of configs.entries()) {
    const first = i * roundsPerConfig + 1;
    const server = await startEmbedded(dataDir, { ...serveEnv, WEBHOOK_CONCURRENCY: String(concurrency), WEBHOOK_WORKER_BATCH: String(batch) });
    if (warmupN > 0) {
      await runCeiling(first, warmupN, concurrency, subscriptions[first].secret);
      await runServe(server, first, warmupN);
    }
    const result = { concurrency, batch, ceiling: [] as EmbeddedRound[], serve: [] as EmbeddedRound[] };
    for (let r = 1; r <= rounds; r++) {
      result.ceiling.push(await runCeiling(first + r, N, concurrency, subscriptions[first + r].secret));
      result.serve.push(await runServe(server, first + r, N));
    }
    await server.stop();
    // Every row of the measured rounds recorded as succeeded, at its first attempt since the re-queue.
    await withDataDir(dataDir, async ({ knex }) => {
      const ids = Array.from({ length: rounds }, (_, k) => subscriptions[first + 1 + k].id);
      const { rows: [check] } = await knex.raw(
        `/* all workspaces: the bench reads its own rows */ select count(*)::int as n, count(*) filter (where status = 'succeeded')::int as ok, max(attempts)::int as attempts
         from webhook_deliveries where subscription_id in (${ids.map(() => '?').join(',')})`,
        ids,
      );
      if (check.n !== rounds * N || check.ok !== check.n || check.attempts !== 1) {
        throw new Error(`embedded ${concurrency}x${batch}: deliveries ${JSON.stringify(check)} (expected ${rounds * N}, all succeeded at the first attempt)`);
      }
    });
    results.push(result);
  }
  const loadAfter = loadAverage();

  if (configs.length) {
    const perSecondOf = (r: EmbeddedRound) => N / (r.spanMs / 1000);
    const ratios = (r: (typeof results)[number]) => r.serve.map((w, k) => r.ceiling[k].spanMs / w.spanMs);
    const medianOf = (values: number[]) => percentile(values, 50);
    const perDelivery = (cpuMs: number[]) => (1000 * medianOf(cpuMs)) / N;
    printTable(
      `embedded (PGlite): 1. throughput: ${N} due customer.created deliveries re-queued at once, one subscription, receiver answering 200 at once; ` +
        `${rounds} rounds per configuration, ceiling and quoting serve alternating (A B A B), min / median / max`,
      [
        ['lanes x batch', 'ceiling deliveries/s', 'serve deliveries/s', 'ratio serve/ceiling', 'serve: re-queued -> first (ms)', 'dupes', 'serve CPU (main thread)', 'receiver CPU',
          'CPU µs/delivery: ceiling sender; serve (main thread) + receiver', 'machine limit (2 cores) / ceiling', "serve's main thread limit / ceiling"],
        ...results.map((r) => [
          `${r.concurrency}x${r.batch}`,
          spread(r.ceiling.map(perSecondOf), 0),
          spread(r.serve.map(perSecondOf), 0),
          spread(ratios(r), 2),
          spread(r.serve.map((w) => w.waitMs), 0),
          r.serve.reduce((sum, w) => sum + w.done.requests - w.done.distinct, 0),
          `${cpuShare(medianOf(r.serve.map((w) => w.senderCpu)), medianOf(r.serve.map((w) => w.spanMs)))} ` +
            `(${cpuShare(medianOf(r.serve.map((w) => w.mainThreadCpu ?? NaN)), medianOf(r.serve.map((w) => w.spanMs)))})`,
          cpuShare(medianOf(r.serve.map((w) => w.receiverCpu)), medianOf(r.serve.map((w) => w.spanMs))),
          `${perDelivery(r.ceiling.map((c) => c.senderCpu)).toFixed(0)}; ${perDelivery(r.serve.map((w) => w.senderCpu)).toFixed(0)} ` +
            `(${perDelivery(r.serve.map((w) => w.mainThreadCpu ?? NaN)).toFixed(0)}) + ${perDelivery(r.serve.map((w) => w.receiverCpu)).toFixed(0)}`,
          (2e6 / (perDelivery(r.serve.map((w) => w.senderCpu)) + perDelivery(r.serve.map((w) => w.receiverCpu))) / medianOf(r.ceiling.map(perSecondOf))).toFixed(2),
          (1e6 / perDelivery(r.serve.map((w) => w.mainThreadCpu ?? NaN)) / medianOf(r.ceiling.map(perSecondOf))).toFixed(2),
        ]),
      ],
    );
    note('deliveries/s = N / (first -> Nth distinct request at the receiver), for both; "re-queued -> first" = from the end of the');
    note('`quoting webhooks resend` command (its UPDATE committed) to the first request (negative: the first arrived before the command had ended);');
    note('serve CPU = the server process (its PGlite thread included; its main thread alone in brackets) as a share of one core over the receiving span;');
    note('CPU µs/delivery = medians over the rounds (serve\'s from the re-queue command on, so it includes that command\'s work); machine limit =');
    note('serve\'s rate were both cores kept busy by serve (its PGlite thread included) and the receiver at those costs, as a share of the ceiling\'s rate;');
    note('main thread limit = serve\'s rate were its main thread (which sends) busy all the time: the lower of the two limits binds.');
    for (const r of results) note(`${r.concurrency}x${r.batch} rounds in order, deliveries/s: ceiling ${r.ceiling.map((c) => perSecondOf(c).toFixed(0)).join(', ')}; serve ${r.serve.map((w) => perSecondOf(w).toFixed(0)).join(', ')}`);
    note(`load average before the rounds: ${loadBefore}; after: ${loadAfter}`);
    const main = results.find((r) => r.concurrency === 16 && r.batch === 100) ?? results[0];
    const ratio = medianOf(ratios(main));
    note(`\n${main.concurrency}x${main.batch}: median ratio serve / ceiling ${ratio.toFixed(2)} (target >= ${TARGETS.ratio} -> ${ratio >= TARGETS.ratio ? 'MET' : 'NOT MET'}); ` +
      `median ${medianOf(main.serve.map(perSecondOf)).toFixed(0)} deliveries/s`);
  }

  const embeddedLatencyRuns = Number(values['embedded-latency-runs']);
  if (embeddedLatencyRuns > 0) {
    app = await startEmbedded(dataDir, serveEnv);
    const latency = await measureLatency(receiver, app.url, headers, embeddedLatencyRuns);
    await app.stop();
    await withDataDir(dataDir, async ({ knex }) => {
      const expected = latencyWarmup + embeddedLatencyRuns;
      const { rows: [check] } = await knex.raw(
        `/* all workspaces: the bench reads its own rows */ select count(*)::int as n, count(*) filter (where status = 'succeeded')::int as ok, max(attempts)::int as attempts
         from webhook_deliveries where event_type = 'customer.created' and left(event_id, 5) <> 'evt_U'`,
      );
      if (check.n !== expected || check.ok !== check.n || check.attempts !== 1) {
        throw new Error(`latency deliveries: ${JSON.stringify(check)} (expected ${expected}, all succeeded at the first attempt)`);
      }
    });
    printLatency('embedded (PGlite)', 'quoting serve alone (delivering in-process, defaults)', latency);
  }
}

runBench(async () => {
  const databases = databasesOption(values.db);
  note(`load average at the start: ${loadAverage()}`);
  if (databases.includes('postgres')) await onPostgres();
  if (databases.includes('embedded')) await onEmbedded();
});
