/**
 * The embedded default under a long list: does the server still answer? A data directory is seeded with
 * `--list-rows` quotes (and customers, products, orders), copied, and the copy grown to `--rows` of each.
 * Then, on `quoting serve` over each copy, rounds alternate
 *   (after one list fetched to warm the server up)
 *   A: GET /healthz alone, sent every `--every` ms for `--seconds` (fixed rate: a stalled server is not
 *      given fewer samples), latency of each;
 *   B: the same sampler while the four lists of `--rows` rows (quotes, orders, customers, products) are
 *      fetched one after another, over and over, for the same time (by a client process of its own, so that
 *      receiving them cannot delay this process's timings);
 * and GET /api/v1/quotes on the `--list-rows` copy (the whole body received, uncompressed).
 * Prints p50/p99/max of /healthz alone and during the lists (target: p99 < 100 ms during), and the
 * list's min/median/max (target < 1.5 s).
 * With `--baseline-bin <another checkout>/bin/quoting` each round also runs the same on that build, on the
 * same data directories, alternating with this one (baseline, this build, baseline, …).
 *   node dist/bench/embedded.js [--rows 50000] [--list-rows 10000] [--rounds 3] [--seconds 10] [--every 20]
 *                               [--baseline-bin ../other/bin/quoting]
 */
import path from 'node:path';
import type { Knex } from 'knex';
import { seedCustomers, seedProducts } from './lists-seed.js';
import { seedOrders, seedQuotes } from './quotes-seed.js';
import { benchArgs, bin, copyDataDir, fmt, forkScript, median, note, percentile, printTable, spread, runBench, signUp, startEmbedded, tempDataDir, withDataDir, loadAverage, type ChildServer } from './lib.js';

const { values } = benchArgs('embedded.js', {
  rows: { type: 'string', default: '50000' },
  'list-rows': { type: 'string', default: '10000' },
  rounds: { type: 'string', default: '3' },
  seconds: { type: 'string', default: '10' },
  every: { type: 'string', default: '100' },
  'baseline-bin': { type: 'string' },
});
const rounds = Math.max(3, Number(values.rounds));
const rows = Number(values.rows);
const listRows = Number(values['list-rows']);
const seconds = Number(values.seconds);
const every = Number(values.every);
const LISTS = ['quotes', 'orders', 'customers', 'products'] as const;
const TARGET = { healthzP99: 100, listMs: 1500 };

const latencies = (xs: number[]) => `${fmt(percentile(xs, 50))} / ${fmt(percentile(xs, 99))} / ${fmt(Math.max(...xs))}`;

async function seed(knex: Knex, workspaceId: number, from: number, to: number): Promise<void> {
  await seedCustomers(knex, workspaceId, from, to);
  await seedProducts(knex, workspaceId, from, to);
  await seedQuotes(knex, workspaceId, from, to);
  await seedOrders(knex, workspaceId, from, to);
}

/** Grows the workspace of `email` in `dataDir` to `to` rows of each list; no server may hold it meanwhile. */
async function grow(dataDir: string, email: string, from: number, to: number): Promise<void> {
  await withDataDir(dataDir, async (database) => {
    const { rows: found } = await database.knex.raw('/* all workspaces: the bench reads its own rows */ select workspace_id from users where email = ?', [email]);
    const started = performance.now();
    await seed(database.knex, found[0].workspace_id, from, to);
    note(`seeded ${dataDir} to ${to} of each in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  });
}

const serve = (quoting: string, dataDir: string): Promise<ChildServer> => startEmbedded(dataDir, {}, quoting);

/** Sends GET /healthz every `every` ms until `until` resolves; the latency of each (all answered 200). */
async function sampleHealthz(url: string, until: Promise<unknown>): Promise<number[]> {
  const samples: Promise<number>[] = [];
  let done = false;
  void until.finally(() => (done = true));
  while (!done) {
    const started = performance.now();
    samples.push(
      fetch(`${url}/healthz`).then(async (res) => {
        await res.arrayBuffer();
        if (res.status !== 200) throw new Error(`/healthz answered ${res.status}`);
        return performance.now() - started;
      }),
    );
    await new Promise((resolve) => setTimeout(resolve, every));
  }
  return Promise.all(samples);
}

/**
 * The lists' client, a process of its own (embedded-lists.ts: a 50 MB body received in this process stalled its
 * event loop, and with it the /healthz timings). Each call starts fetching the lists one after another from a
 * server; `stop()` ends that after the list in progress and resolves to how many were fetched (at least one).
 */
async function listFetcher(): Promise<(url: string, cookie: string) => { stop(): Promise<number> }> {
  const fetcher = await forkScript('./embedded-lists.js', 'the list fetcher', 'ready');
  return (url, cookie) => {
    const ended = fetcher.next<{ fetched: number }>('stopped', 3_600_000);
    ended.catch(() => {}); // awaited in stop()
    fetcher.child.send({ type: 'start', url, cookie, lists: LISTS, minBytes: rows * 50 });
    return {
      async stop() {
        fetcher.child.send({ type: 'stop' });
        return (await ended).fetched;
      },
    };
  };
}

interface Result {
  build: string;
  alone: number[];
  during: number[];
  listsFetched: number;
  list: number[];
}

async function round(result: Result, quoting: string, big: string, small: string, cookie: string, startLists: Awaited<ReturnType<typeof listFetcher>>): Promise<void> {
  let server = await serve(quoting, small);
  try {
    const started = performance.now();
    const res = await fetch(`${server.url}/api/v1/quotes`, { headers: { cookie, 'accept-encoding': 'identity' } });
    const body = await res.text();
    result.list.push(performance.now() - started);
    if (res.status !== 200 || JSON.parse(body).data.quotes.length !== listRows) throw new Error(`GET /api/v1/quotes: ${res.status}`);
  } finally {
    await server.stop();
  }
  server = await serve(quoting, big);
  try {
    // Warm: a fresh server compiles its code paths and PGlite reads its pages on the first list.
    await startLists(server.url, cookie).stop();
    const time = () => new Promise((resolve) => setTimeout(resolve, seconds * 1000));
    result.alone.push(...(await sampleHealthz(server.url, time())));
    const lists = startLists(server.url, cookie);
    const during = await sampleHealthz(server.url, time());
    result.listsFetched += await lists.stop();
    result.during.push(...during);
  } finally {
    await server.stop();
  }
}

runBench(async () => {
  const load = [loadAverage()];
  const small = tempDataDir('embedded');
  const first = await serve(bin, small);
  const { cookie, email } = await signUp(first.url);
  await first.stop();
  await grow(small, email, 1, listRows);
  const big = copyDataDir(small, 'embedded-big');
  await grow(big, email, listRows + 1, rows);

  const startLists = await listFetcher();
  const builds = [...(values['baseline-bin'] ? [{ build: 'baseline', quoting: path.resolve(values['baseline-bin']) }] : []), { build: 'this build', quoting: bin }];
  const results: Result[] = builds.map(({ build }) => ({ build, alone: [], during: [], listsFetched: 0, list: [] }));
  for (let r = 0; r < rounds; r++) {
    for (const [i, { quoting }] of builds.entries()) {
      await round(results[i], quoting, big, small, cookie, startLists);
      const x = results[i];
      note(`round ${r + 1} ${x.build}: /healthz alone ${latencies(x.alone)}, during lists ${latencies(x.during)} (p50/p99/max ms so far); ${listRows} quotes ${fmt(x.list.at(-1)!)} ms; load ${loadAverage()}`);
    }
  }
  load.push(loadAverage());
  printTable(
    `Embedded default: /healthz every ${every} ms for ${seconds} s alone and while ${rows}-row lists are fetched back to back; ${rounds} rounds`,
    [
      ['build', '/healthz alone p50/p99/max', 'during lists p50/p99/max', 'p99 during/alone', 'lists fetched', `${listRows} quotes list min/median/max`],
      ...results.map((x) => {
        const p99 = percentile(x.during, 99);
        return [
          x.build,
          latencies(x.alone),
          `${latencies(x.during)}${p99 < TARGET.healthzP99 ? '' : ' !'}`,
          (p99 / percentile(x.alone, 99)).toFixed(1),
          x.listsFetched,
          `${spread(x.list)}${median(x.list) < TARGET.listMs ? '' : ' !'}`,
        ];
      }),
    ],
  );
  note(`\nms. targets: /healthz p99 < ${TARGET.healthzP99} ms during the lists, ${listRows} quotes in < ${TARGET.listMs} ms ('!' marks a miss). load average at start ${load[0]}, at end ${load[1]}`);
});
