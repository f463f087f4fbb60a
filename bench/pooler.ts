/**
 * Scale-out behind a connection pooler: four `quoting serve` processes through PgBouncer (transaction mode, one pool of
 * --pool-size server connections, DATABASE_POOLER=transaction, DATABASE_LISTEN_URL direct) against four connecting to
 * PostgreSQL directly (DATABASE_POOL_MAX=--direct-pool each), on one fresh database, rounds alternating direct and
 * pooled (A B A B …, --rounds of each, at least 3). The setup's four servers are started before its round and stopped
 * after it, so only its own connections are open while it is measured. Per round:
 *  - quote creation: --connections lanes (fetch, each answer checked 201) for --duration s, spread over --workspaces
 *    workspaces (numbering queues on a workspace's counter row), workspace i against server i mod 4 → quotes/s;
 *  - a list: `GET /api/v1/quotes?customer_id=C` (a customer of each workspace with --listed quotes, made beforehand,
 *    the same in every round: 50 a page) for --duration s, one autocannon per workspace, the same split → lists/s;
 *  - deliveries: --n due deliveries committed at once (one NOTIFY) to two `quoting worker --watch` started for the
 *    round on the setup's path (through the pooler, LISTEN direct, in the pooled one), until the receiver has them
 *    all and every row reads `succeeded` → deliveries/s.
 * PostgreSQL's backends on the database are counted every 200 ms from a connection of this process's own (not
 * counted): LISTEN connections (application_name quoting-listen-*), the pooler's server connections (their client
 * ports, from SHOW SERVERS on its admin console) and the rest (the direct pools, and this process's own pool of 2);
 * the maximum of each per setup and phase is printed. After a pooled round its server connections are closed
 * (KILL/RESUME on the console), so they do not count in the direct round that follows.
 *
 * --direct-unnamed gives the direct setup DATABASE_POOLER=transaction too (no named statements nor session settings), to
 * tell the pooler's hop from what the setting itself costs.
 *
 *   node dist/bench/pooler.js [--rounds 3] [--duration 5] [--connections 32] [--workspaces 8] [--n 2000] [--listed 60] [--pool-size 20] [--direct-pool 10] [--direct-unnamed]
 */
import os from 'node:os';
import autocannon from 'autocannon';
import pg from 'pg';
import { openPostgres } from '../src/db/database.js';
import { startPgbouncer } from '../test/helpers/pgbouncer.js';
import { benchArgs, cpuMs, forkScript, freshPostgresUrl, loadAverage, median, note, onCleanup, printTable, roundsOption, runBench, seededDeliveries, signUp, spread, startQuoting, startWorker, type ChildServer, type Worker } from './lib.js';

const { values } = benchArgs('pooler.js', {
  rounds: { type: 'string', default: '3' },
  duration: { type: 'string', default: '5' },
  connections: { type: 'string', default: '32' },
  workspaces: { type: 'string', default: '8' },
  n: { type: 'string', default: '2000' },
  listed: { type: 'string', default: '60' },
  'pool-size': { type: 'string', default: '20' },
  'direct-pool': { type: 'string', default: '10' },
  'direct-unnamed': { type: 'boolean', default: false },
});
const rounds = roundsOption(values.rounds);
const duration = Number(values.duration);
const connections = Number(values.connections);
const workspaceCount = Number(values.workspaces);
const N = Number(values.n);
const listed = Number(values.listed);
const poolSize = Number(values['pool-size']);
const directPool = Number(values['direct-pool']);
const SERVERS = 4;
const WORKERS = 2;
if (!(duration > 0 && workspaceCount >= 1 && connections >= workspaceCount && N >= 1 && listed >= 0 && poolSize >= 1 && directPool >= 1)) {
  throw new Error('--duration, --n, --pool-size, --direct-pool positive; --connections at least --workspaces');
}

const now = () => performance.timeOrigin + performance.now();
const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis));

interface Workspace {
  id: number;
  cookie: string;
  /** The customer the creation phase adds quotes to. */
  customerId: number;
  /** The customer whose quotes are listed: a fixed --listed of them, so that every round lists the same rows. */
  listedId: number;
}

async function api(url: string, cookie: string, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { cookie, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  const json = await res.json();
  if (res.status >= 300) throw new Error(`${method} ${path} answered ${res.status}: ${JSON.stringify(json)}`);
  return json;
}

const quoteBody = (customerId: number) =>
  JSON.stringify({ customer_id: customerId, currency: 'EUR', tax_rate: '19', lines: [{ description: 'Installation', quantity: '1.5', price: '39.90' }] });

type Phase = 'creates' | 'lists' | 'deliveries';
type Setup = 'direct' | 'pooled';
interface Counts {
  total: number;
  listen: number;
  pooler: number;
  other: number;
}
const zero = (): Counts => ({ total: 0, listen: 0, pooler: 0, other: 0 });

const { prefix, seedEvents, seedDeliveries } = seededDeliveries('B');

runBench(async () => {
  const directUrl = await freshPostgresUrl();
  const database = new URL(directUrl).pathname.slice(1);
  const bouncer = await startPgbouncer(directUrl, { poolSize });
  onCleanup(() => bouncer.stop());
  const pooledUrl = bouncer.through(directUrl);
  const db = openPostgres(directUrl, 2);
  onCleanup(() => db.close());
  const knex = db.knex;

  // The counting connections: one to PostgreSQL (its own backend excluded), one to the pooler's console.
  const watcher = new pg.Client({ connectionString: directUrl, application_name: 'quoting-bench-pooler-watch' });
  await watcher.connect();
  onCleanup(() => watcher.end());
  const admin = new pg.Client({ connectionString: bouncer.adminUrl });
  await admin.connect();
  onCleanup(() => admin.end());

  const envOf = (setup: Setup): NodeJS.ProcessEnv =>
    setup === 'direct'
      ? { DATABASE_URL: directUrl, DATABASE_POOL_MAX: String(directPool), ...(values['direct-unnamed'] ? { DATABASE_POOLER: 'transaction', DATABASE_LISTEN_URL: directUrl } : {}) }
      : { DATABASE_URL: pooledUrl, DATABASE_POOL_MAX: String(directPool), DATABASE_POOLER: 'transaction', DATABASE_LISTEN_URL: directUrl };

  // Sampling: every 200 ms while a phase runs, the maximum of each kind.
  let sampling: Counts | undefined;
  const peaks = new Map<string, Counts>();
  const sampleOnce = async (): Promise<Counts> => {
    const servers = (await admin.query('SHOW SERVERS')).rows as { database: string; local_port?: number | string }[];
    const ports = servers.filter((s) => s.database === database).map((s) => Number(s.local_port)).filter(Number.isFinite);
    const { rows: [row] } = await watcher.query(
      `select count(*)::int as total,
         count(*) filter (where application_name like 'quoting-listen-%')::int as listen,
         count(*) filter (where client_port = any($1::int[]))::int as pooler
       from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`,
      [ports],
    );
    return { total: row.total, listen: row.listen, pooler: row.pooler, other: row.total - row.listen - row.pooler };
  };
  let stopSampler = false;
  let sampleError: Error | undefined;
  const sampler = (async () => {
    for (;;) {
      const peak = sampling; // taken before the sample: the phase may end while it is read, and the sample is still its own
      if (peak) {
        const counts = await sampleOnce().catch((err: Error) => ((sampleError = err), zero()));
        for (const key of Object.keys(counts) as (keyof Counts)[]) peak[key] = Math.max(peak[key], counts[key]);
      }
      await sleep(200);
      if (stopSampler) return;
    }
  })();
  onCleanup(async () => {
    stopSampler = true;
    await sampler.catch(() => undefined);
  });
  const during = async <T>(setup: Setup, phase: Phase, work: () => Promise<T>): Promise<T> => {
    const key = `${setup} ${phase}`;
    if (!peaks.has(key)) peaks.set(key, zero());
    sampling = peaks.get(key);
    try {
      return await work();
    } finally {
      sampling = undefined;
    }
  };

  const receiver = await forkScript('./webhook-receiver.js', 'receiver', 'listening');
  const receiverUrl = `${receiver.ready.url}/hooks`;

  // The workspaces, their customers, and the subscription, made through one direct server, stopped afterwards.
  const workspaces: Workspace[] = [];
  let subscriptionId: number;
  {
    const server = await startQuoting(directUrl);
    for (let i = 0; i < workspaceCount; i++) {
      const { cookie } = await signUp(server.url);
      const id = (await api(server.url, cookie, 'GET', '/api/v1/workspace')).data.workspace.id as number;
      const customer = async (name: string) =>
        (await api(server.url, cookie, 'POST', '/api/v1/customers', { email: `${name}.w${i}@example.com`, name, company: 'Bench Co' })).data.customer.id as number;
      const customerId = await customer('created');
      const listedId = await customer('listed');
      await api(server.url, cookie, 'POST', '/api/v1/quotes', JSON.parse(quoteBody(customerId))); // a refused body fails here, with the API's message
      for (let q = 0; q < listed; q++) await api(server.url, cookie, 'POST', '/api/v1/quotes', JSON.parse(quoteBody(listedId)));
      workspaces.push({ id, cookie, customerId, listedId });
    }
    // customer.* only: the quotes queue no delivery, so the receiver sees the seeded ones alone.
    subscriptionId = (await api(server.url, workspaces[0].cookie, 'POST', '/api/v1/webhooks', { url: receiverUrl, event_types: ['customer.*'] })).data.subscription.id;
    await server.stop();
  }
  for (let r = 0; r < 2 * rounds + 2; r++) await seedEvents(knex, workspaces[0].id, r, N);
  await knex.raw('vacuum analyze');

  let created = 0;
  let deliveryRound = 0;

  /** Creation lanes for `seconds`, each answer read and checked 201. */
  const createQuotes = async (servers: ChildServer[], seconds: number): Promise<number> => {
    const lanes = Math.max(1, Math.floor(connections / workspaces.length));
    const end = now() + seconds * 1000;
    let total = 0;
    const t0 = now();
    await Promise.all(
      workspaces.flatMap((w, i) => {
        const url = `${servers[i % servers.length].url}/api/v1/quotes`;
        const body = quoteBody(w.customerId);
        return Array.from({ length: lanes }, async () => {
          while (now() < end) {
            const res = await fetch(url, { method: 'POST', headers: { cookie: w.cookie, 'content-type': 'application/json' }, body, signal: AbortSignal.timeout(30_000) });
            const text = await res.text();
            if (res.status !== 201) throw new Error(`POST /api/v1/quotes answered ${res.status}: ${text.slice(0, 300)}`);
            total++;
          }
        });
      }),
    );
    created += total;
    return total / ((now() - t0) / 1000);
  };

  const listQuotes = async (servers: ChildServer[], seconds: number): Promise<number> => {
    const lanes = Math.max(1, Math.floor(connections / workspaces.length));
    const t0 = now();
    const results = await Promise.all(
      workspaces.map((w, i) =>
        autocannon({ url: `${servers[i % servers.length].url}/api/v1/quotes?customer_id=${w.listedId}`, connections: lanes, duration: seconds, timeout: 30, headers: { cookie: w.cookie } }),
      ),
    );
    const elapsed = (now() - t0) / 1000;
    let total = 0;
    for (const r of results) {
      if (r.errors || r.timeouts || r.non2xx) throw new Error(`GET /api/v1/quotes: ${r.errors} errors, ${r.timeouts} timeouts, ${r.non2xx} non-2xx in ${r.requests.total} requests`);
      total += r['2xx'];
    }
    return total / elapsed;
  };

  const deliver = async (setup: Setup): Promise<number> => {
    const env = envOf(setup);
    delete env.DATABASE_POOL_MAX; // the worker's own default, the same in both setups
    const workers: Worker[] = [];
    for (let i = 0; i < WORKERS; i++) workers.push(await startWorker(knex, env.DATABASE_URL!, env));
    const round = deliveryRound++;
    try {
      return await during(setup, 'deliveries', async () => {
        receiver.child.send({ type: 'expect', n: N });
        const received = receiver.next<{ lastAt: number }>('done', 300_000);
        const t0 = now();
        await seedDeliveries(knex, workspaces[0].id, subscriptionId, round);
        const done = await received;
        const deadline = now() + 60_000;
        let counts: { n: number; ok: number };
        do {
          await sleep(20);
          counts = (
            await knex.raw(
              `/* all workspaces: the bench reads its own rows */ select count(*)::int as n, count(*) filter (where status = 'succeeded')::int as ok
               from webhook_deliveries where left(event_id, 9) = ?`,
              [prefix(round)],
            )
          ).rows[0];
        } while (counts.ok < N && now() < deadline);
        receiver.child.send({ type: 'count' });
        const heard = await receiver.next<{ requests: number; distinct: number }>('count', 10_000);
        if (counts.n !== N || counts.ok !== N || heard.distinct !== N) {
          throw new Error(`deliveries of round ${round}: rows ${JSON.stringify(counts)}, receiver ${JSON.stringify(heard)}; expected ${N}`);
        }
        return N / ((done.lastAt - t0) / 1000);
      });
    } finally {
      for (const worker of workers) await worker.stop();
    }
  };

  interface Sample {
    creates: number;
    lists: number;
    deliveries: number;
  }
  /** PgBouncer's CPU time in the pooled rounds' creation and list phases, and their wall time. */
  const bouncerCpu = { ms: 0, wallMs: 0 };
  const measure = async (setup: Setup, discard = false): Promise<Sample> => {
    const servers = await Promise.all(Array.from({ length: SERVERS }, () => startQuoting(envOf(setup).DATABASE_URL!, envOf(setup))));
    try {
      const seconds = discard ? 1 : duration;
      const cpu0 = cpuMs(bouncer.pid);
      const wall0 = now();
      const creates = await during(setup, 'creates', () => createQuotes(servers, seconds));
      const lists = await during(setup, 'lists', () => listQuotes(servers, seconds));
      if (setup === 'pooled' && !discard) {
        bouncerCpu.ms += cpuMs(bouncer.pid) - cpu0;
        bouncerCpu.wallMs += now() - wall0;
      }
      await Promise.all(servers.map((s) => s.stop()));
      const deliveries = await deliver(setup);
      return { creates, lists, deliveries };
    } finally {
      await Promise.all(servers.map((s) => s.stop()));
      if (setup === 'pooled') {
        // Its server connections closed, so that the direct round that follows counts its own alone.
        await admin.query(`KILL "${database}"`);
        await admin.query(`RESUME "${database}"`);
      }
    }
  };

  note(
    `${os.cpus().length} CPUs; ${SERVERS} servers a setup (direct: DATABASE_POOL_MAX=${directPool} each; pooled: the same through PgBouncer, ` +
      `transaction mode, default_pool_size ${poolSize}); ${connections} lanes over ${workspaceCount} workspaces for ${duration} s a phase; ${N} deliveries to ${WORKERS} workers`,
  );
  // A discarded warm-up of each (JIT, caches), not sampled into the figures.
  await measure('direct', true);
  await measure('pooled', true);
  peaks.clear();
  const before = loadAverage();
  const samples: Record<Setup, Sample[]> = { direct: [], pooled: [] };
  for (let r = 1; r <= rounds; r++) {
    for (const setup of ['direct', 'pooled'] as const) {
      const sample = await measure(setup);
      samples[setup].push(sample);
      note(`round ${r}, ${setup}: ${sample.creates.toFixed(1)} quotes/s, ${sample.lists.toFixed(0)} lists/s, ${sample.deliveries.toFixed(0)} deliveries/s (load ${loadAverage().split(' ')[0]})`);
    }
  }
  const after = loadAverage();

  const row = (label: string, key: keyof Sample, digits: number) => {
    const a = samples.direct.map((s) => s[key]);
    const b = samples.pooled.map((s) => s[key]);
    return [label, spread(a, digits), spread(b, digits), (median(b) / median(a)).toFixed(2)];
  };
  printTable(`${SERVERS} servers direct (A) and through PgBouncer (B): ${rounds} rounds of each, alternating, min / median / max`, [
    ['', `A direct (pool ${directPool} each${values['direct-unnamed'] ? ', DATABASE_POOLER=transaction' : ''})`, `B PgBouncer (pool ${poolSize})`, 'B / A (medians; target ≥ 0.85)'],
    row(`quotes/s (POST /api/v1/quotes, ${connections} lanes, ${workspaceCount} workspaces)`, 'creates', 1),
    row(`lists/s (GET /api/v1/quotes?customer_id=C, a customer of ${listed} quotes, 50 a page)`, 'lists', 0),
    row(`deliveries/s (${WORKERS} × quoting worker --watch, ${N} due)`, 'deliveries', 0),
  ]);
  const phases: Phase[] = ['creates', 'lists', 'deliveries'];
  const peak = (setup: Setup, phase: Phase) => peaks.get(`${setup} ${phase}`) ?? zero();
  printTable('PostgreSQL backends on the database, the maximum seen (every 200 ms) in each phase: total (LISTEN + the pooler\'s + other)', [
    ['phase', 'A direct', 'B PgBouncer'],
    ...phases.map((phase) => [
      phase,
      ...(['direct', 'pooled'] as const).map((setup) => {
        const c = peak(setup, phase);
        return `${c.total} (${c.listen} + ${c.pooler} + ${c.other})`;
      }),
    ]),
  ]);
  note(`PgBouncer used ${((100 * bouncerCpu.ms) / bouncerCpu.wallMs).toFixed(0)}% of a core during the pooled rounds' creation and list phases (${(bouncerCpu.ms / 1000).toFixed(1)} s CPU in ${(bouncerCpu.wallMs / 1000).toFixed(1)} s).`);
  if (sampleError) note(`a sample failed (counted as 0): ${sampleError.message}`);
  note(`"other" holds this process's own pool (up to 2) besides the direct servers' and workers' pools.`);
  note(`load average before the rounds: ${before}; after: ${after}; ${created} quotes answered 201.`);
});
