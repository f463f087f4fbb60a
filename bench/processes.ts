/**
 * Several processes on one PostgreSQL: what a second `quoting serve` and a second `quoting worker --watch` add.
 *
 * Two `quoting serve` processes (each its own port, the same database) and workers run for the whole benchmark;
 * rounds alternate between one process and two (1 2 1 2 …, --rounds of each, at least 3):
 *  - quote creation: --creates `POST /api/v1/quotes` (one line, a customer) spread over --workspaces workspaces
 *    (numbering is gap-free per workspace: creations in one workspace queue on its counter row, so one workspace
 *    could not use a second process), --connections keep-alive lanes in all (fetch, each answer checked); with two
 *    processes the workspaces alternate between the ports (workspace i -> port i mod 2): the load generator's round robin;
 *  - a list: `GET /api/v1/customers` (--customers per workspace) for --duration s, one autocannon per workspace,
 *    the same split over the ports;
 *  - deliveries: --n due deliveries committed at once (one NOTIFY) to one or two `quoting worker --watch` (the
 *    second started before the round and stopped after it), until the receiver has them all and every row reads
 *    `succeeded`.
 * Checks: every creation answered 201, every list 200; at the end, each workspace's quote numbers are 1..count with
 * no gap or repeat and count = the 201s; every delivery reached the receiver exactly once (requests = distinct
 * event ids = n, counted after all rows were recorded) at its first attempt.
 *
 * PostgreSQL only: the embedded database admits one process, so `--db embedded` prints that and measures nothing.
 *
 *   node dist/bench/processes.js [--db postgres,embedded] [--rounds 3] [--creates 400] [--connections 16] [--workspaces 4] [--duration 5]
 *                                [--customers 50] [--n 3000]
 */
import fs from 'node:fs';
import os from 'node:os';
import autocannon from 'autocannon';
import { openPostgres } from '../src/db/database.js';
import { benchArgs, databasesOption, seededDeliveries, forkScript, freshPostgresUrl, note, onCleanup, percentile, printTable, roundsOption, runBench, signUp, spread as spreadOf, startQuoting, startWorker, loadAverage, type ChildServer, type Worker } from './lib.js';

const { values } = benchArgs('processes.js', {
  db: { type: 'string', default: 'postgres,embedded' },
  rounds: { type: 'string', default: '3' },
  creates: { type: 'string', default: '400' },
  connections: { type: 'string', default: '16' },
  workspaces: { type: 'string', default: '4' },
  duration: { type: 'string', default: '5' },
  customers: { type: 'string', default: '50' },
  n: { type: 'string', default: '3000' },
});
const rounds = roundsOption(values.rounds);
const creates = Number(values.creates);
const connections = Number(values.connections);
const workspaceCount = Number(values.workspaces);
const duration = Number(values.duration);
const customerCount = Number(values.customers);
const N = Number(values.n);
if (!(workspaceCount >= 2 && connections >= workspaceCount && creates >= workspaceCount)) {
  throw new Error('--workspaces at least 2, and --connections and --creates at least --workspaces');
}

const now = () => performance.timeOrigin + performance.now();
const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis));

/** Busy and total jiffies of all CPUs (/proc/stat), to tell how busy the machine was between two readings. */
function cpuTimes(): { busy: number; total: number } {
  const fields = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const total = fields.reduce((a, b) => a + b, 0);
  const idle = fields[3] + (fields[4] ?? 0); // idle + iowait
  return { busy: total - idle, total };
}

interface Workspace {
  id: number;
  cookie: string;
  customerId: number;
}

async function api(url: string, cookie: string, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { cookie, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await res.json();
  if (res.status >= 300) throw new Error(`${method} ${path} answered ${res.status}: ${JSON.stringify(json)}`);
  return json;
}

const quoteBody = (customerId: number) =>
  JSON.stringify({ customer_id: customerId, currency: 'EUR', tax_rate: '19', lines: [{ description: 'Installation', quantity: '1.5', price: '39.90' }] });

/** Runs one autocannon per workspace at once, workspace i against server i mod servers; fails on any error or unexpected status. */
async function spread(
  servers: ChildServer[],
  workspaces: Workspace[],
  what: string,
  path: string,
  options: (w: Workspace, i: number) => Partial<autocannon.Options>,
): Promise<{ total: number; seconds: number }> {
  const t0 = now();
  const results = await Promise.all(
    workspaces.map((w, i) =>
      autocannon({ url: `${servers[i % servers.length].url}${path}`, connections: Math.floor(connections / workspaces.length), ...options(w, i) } as autocannon.Options),
    ),
  );
  const seconds = (now() - t0) / 1000;
  let total = 0;
  for (const r of results) {
    if (r.errors || r.timeouts || r.non2xx) throw new Error(`${what}: ${r.errors} errors, ${r.timeouts} timeouts, ${r.non2xx} non-2xx in ${r.requests.total} requests`);
    total += r['2xx'];
  }
  return { total, seconds };
}

/**
 * `per` quote creations in each workspace, by connections / workspaces keep-alive lanes per workspace (workspace i
 * against server i mod servers); fails on any answer but 201.
 */
async function createQuotes(servers: ChildServer[], workspaces: Workspace[], per: number): Promise<{ total: number; seconds: number }> {
  const lanes = Math.floor(connections / workspaces.length);
  let total = 0;
  const t0 = now();
  await Promise.all(
    workspaces.flatMap((w, i) => {
      let left = per;
      const url = `${servers[i % servers.length].url}/api/v1/quotes`;
      const body = quoteBody(w.customerId);
      return Array.from({ length: lanes }, async () => {
        while (left > 0) {
          left--;
          const res = await fetch(url, { method: 'POST', headers: { cookie: w.cookie, 'content-type': 'application/json' }, body });
          const text = await res.text();
          if (res.status !== 201) throw new Error(`POST /api/v1/quotes answered ${res.status}: ${text}`);
          total++;
        }
      });
    }),
  );
  return { total, seconds: (now() - t0) / 1000 };
}

const { prefix, seedEvents, seedDeliveries } = seededDeliveries('P');

interface Sample {
  creates: number;
  lists: number;
  deliveries: number;
}

const databases = databasesOption(values.db);

runBench(async () => {
  if (databases.includes('postgres')) await onPostgres();
  if (databases.includes('embedded')) note('embedded: not measured: the embedded database admits one process, so several processes cannot share it.');
});

async function onPostgres(): Promise<void> {
  const databaseUrl = await freshPostgresUrl();
  const db = openPostgres(databaseUrl, 2);
  onCleanup(() => db.close());
  const knex = db.knex;
  const receiver = await forkScript('./webhook-receiver.js', 'receiver', 'listening');
  const receiverUrl = `${receiver.ready.url}/hooks`;

  const servers = [await startQuoting(databaseUrl), await startQuoting(databaseUrl)];
  const workspaces: Workspace[] = [];
  for (let i = 0; i < workspaceCount; i++) {
    const { cookie } = await signUp(servers[0].url);
    const id = (await api(servers[0].url, cookie, 'GET', '/api/v1/workspace')).data.workspace.id as number;
    let customerId = 0;
    for (let c = 0; c < customerCount; c++) {
      const body = { email: `c${c}.w${i}@example.com`, name: `Customer ${c}`, company: 'Bench Co' };
      customerId = (await api(servers[0].url, cookie, 'POST', '/api/v1/customers', body)).data.customer.id;
    }
    // One quote through fetch first, so that a refused body fails with the API's message rather than a count.
    await api(servers[0].url, cookie, 'POST', '/api/v1/quotes', JSON.parse(quoteBody(customerId)));
    workspaces.push({ id, cookie, customerId });
  }
  // Subscribed after the customers were made, to customer.* only: quotes and those customers queue no delivery,
  // so the receiver sees the seeded deliveries alone.
  const subscription = (await api(servers[0].url, workspaces[0].cookie, 'POST', '/api/v1/webhooks', { url: receiverUrl, event_types: ['customer.*'] })).data
    .subscription as { id: number };
  for (let r = 0; r < 2 * rounds + 2; r++) await seedEvents(knex, workspaces[0].id, r, N);
  await knex.raw('vacuum analyze');
  await knex.raw('checkpoint').catch(() => undefined);

  const firstWorker = await startWorker(knex, databaseUrl, {});
  let createdOk = workspaceCount; // the checks above
  let deliveryRound = 0;

  const measure = async (processes: 1 | 2, discard = false): Promise<Sample> => {
    const active = servers.slice(0, processes);
    // Creation: a fixed number of requests, each answer read (so that every 201 is counted exactly, which autocannon's
    // amount mode did not time finer than a second), spread over the workspaces.
    const per = Math.floor(creates / workspaces.length);
    const created = await createQuotes(active, workspaces, per);
    createdOk += created.total;
    const listed = await spread(active, workspaces, 'GET /api/v1/customers', '/api/v1/customers', (w) => ({ headers: { cookie: w.cookie }, duration: discard ? 1 : duration }));
    // Deliveries: the second worker only while this round runs.
    let second: Worker | undefined;
    if (processes === 2) second = await startWorker(knex, databaseUrl, {});
    const round = deliveryRound++;
    receiver.child.send({ type: 'expect', n: N });
    const received = receiver.next<{ lastAt: number }>('done', 300_000);
    const t0 = now();
    await seedDeliveries(knex, workspaces[0].id, subscription.id, round);
    const done = await received;
    const deadline = now() + 60_000;
    let counts: { n: number; ok: number; first: number };
    do {
      await sleep(20);
      counts = (
        await knex.raw(
          `/* all workspaces: the bench reads its own rows */ select count(*)::int as n, count(*) filter (where status = 'succeeded')::int as ok, count(*) filter (where attempts = 1)::int as first
           from webhook_deliveries where left(event_id, 9) = ?`,
          [prefix(round)],
        )
      ).rows[0];
    } while (counts.ok < N && now() < deadline);
    await second?.stop();
    receiver.child.send({ type: 'count' });
    const heard = await receiver.next<{ requests: number; distinct: number }>('count', 10_000);
    if (counts.n !== N || counts.ok !== N || counts.first !== N || heard.requests !== N || heard.distinct !== N) {
      throw new Error(`deliveries of round ${round}: rows ${JSON.stringify(counts)}, receiver ${JSON.stringify(heard)}; expected ${N} each, once`);
    }
    return { creates: created.total / created.seconds, lists: listed.total / listed.seconds, deliveries: N / ((done.lastAt - t0) / 1000) };
  };

  note(`${os.cpus().length} CPUs; --creates ${creates}, --connections ${connections} over ${workspaceCount} workspaces, lists for ${duration} s, --n ${N} deliveries`);
  // One discarded warm-up of each (JIT, connection pools, caches), then the alternated rounds.
  await measure(1, true);
  await measure(2, true);
  const before = loadAverage();
  const cpuBefore = cpuTimes();
  const samples: Record<1 | 2, Sample[]> = { 1: [], 2: [] };
  for (let r = 1; r <= rounds; r++) {
    for (const processes of [1, 2] as const) {
      const sample = await measure(processes);
      samples[processes].push(sample);
      note(`round ${r}, ${processes} process(es): ${sample.creates.toFixed(1)} quotes/s, ${sample.lists.toFixed(0)} lists/s, ${sample.deliveries.toFixed(0)} deliveries/s (load ${loadAverage().split(' ')[0]})`);
    }
  }
  const after = loadAverage();
  const cpuAfter = cpuTimes();
  const busy = (100 * (cpuAfter.busy - cpuBefore.busy)) / (cpuAfter.total - cpuBefore.total);
  await firstWorker.stop();

  // Nothing lost or duplicated: every workspace's numbers are 1..count, count = the 201s.
  const { rows: numbering } = await knex.raw(
    `select workspace_id, count(*)::int as n, count(distinct quote_number)::int as distinct_numbers,
       min(split_part(quote_number, '-', 3)::int) as first, max(split_part(quote_number, '-', 3)::int) as last
     from quotes where workspace_id = any(?) group by workspace_id`,
    [workspaces.map((w) => w.id)],
  );
  const stored = numbering.reduce((sum: number, r: { n: number }) => sum + r.n, 0);
  const gapFree = numbering.every((r: { n: number; distinct_numbers: number; first: number; last: number }) => r.first === 1 && r.last === r.n && r.distinct_numbers === r.n);
  if (!gapFree || stored !== createdOk) throw new Error(`quote numbers: ${JSON.stringify(numbering)}; ${createdOk} answered 201`);

  const row = (label: string, key: keyof Sample, digits: number) => {
    const one = samples[1].map((s) => s[key]);
    const two = samples[2].map((s) => s[key]);
    return [label, spreadOf(one, digits), spreadOf(two, digits), (percentile(two, 50) / percentile(one, 50)).toFixed(2)];
  };
  printTable(`Several processes on one PostgreSQL: ${rounds} rounds of each, alternating 1 and 2 processes, min / median / max`, [
    ['', '1 process', '2 processes', 'ratio 2 / 1 (medians)'],
    row(`quotes/s (POST /api/v1/quotes, ${connections} connections, ${workspaceCount} workspaces)`, 'creates', 1),
    row(`lists/s (GET /api/v1/customers, ${customerCount} rows)`, 'lists', 0),
    row(`deliveries/s (quoting worker --watch, ${N} due)`, 'deliveries', 0),
  ]);
  note(`load average before the rounds: ${before}; after: ${after}`);
  note(
    `checked: ${createdOk} quotes answered 201 and stored, numbers gap-free and unique in each of ${workspaceCount} workspaces; ` +
      `${(2 * rounds + 2) * N} deliveries, each received exactly once at its first attempt, every row succeeded.`,
  );
  note(
    `The ${os.cpus().length} CPUs were ${busy.toFixed(0)}% busy during the rounds (every process on the machine). They are shared by the servers, ` +
      `the workers, PostgreSQL, the receiver and this load generator: a second process adds throughput only where the first left a CPU idle ` +
      `(waiting on the database rather than computing); with the CPUs busy, the limit is CPU.`,
  );
}

