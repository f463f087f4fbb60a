/**
 * The quotes list page against the JSON API, for the same 50 rows. A workspace is seeded with `--rows` quotes spread
 * evenly over `--rows / 50` customers, so every customer has exactly 50 quotes. The JSON API has no paging (a list
 * answers every row that matches), so its answer of 50 rows is `GET /api/v1/quotes?customer_id=C`: the baseline,
 *   A: `GET /api/v1/quotes?customer_id=C` (50 rows of JSON), against each page
 *   B: `/app/quotes?customer_id=C` (the same 50 rows), `/app/quotes` (page 1), page 500 as its Next link on page 499
 *      leads to it (`?page=500&before=<id>`), `/app/quotes?status=sent`, its page 100 the same way and typed in
 *      (`?status=sent&page=100` alone), and page 500 typed in (`?page=500` alone): a page typed in finds its first
 *      row from the counts kept by range of ids (quote_ranges), summed down to the range where the skip ends,
 * alternated A B A B … `--rounds` times with `--requests` sequential requests each, the whole body received,
 * uncompressed; the server process's CPU per request is read from /proc beside it (steadier than time on a busy machine;
 * on PostgreSQL the database's own CPU is not in it). A page does more than the list: the status tabs' counts (which give the pager's total; kept per
 * workspace, channel and status) and the channels for the filter are two more queries. Prints min/median/max of each round's median and the ratio of medians (target ≤ 1.5).
 * Then a page's first load on the wire: the HTML of /app/quotes with its stylesheet and script, gzip (target < 60 KB).
 * Every path and the baseline are first warmed, alternated, `--warming` rounds each.
 *   node dist/bench/app-lists.js [--db postgres,embedded] [--rows 50000] [--rounds 7] [--requests 20] [--warming 8]
 */
import http from 'node:http';
import zlib from 'node:zlib';
import type { Knex } from 'knex';
import { openDatabase } from '../src/db/database.js';
import { seedCustomers } from './lists-seed.js';
import { seedQuotes } from './quotes-seed.js';
import {
  benchArgs, cpuMs, databasesOption, dbName, freshPostgresUrl, loadAverage, median, note, onCleanup, printTable, runBench, signUp, spread, startEmbedded, startQuoting,
  tempDataDir, withDataDir, type ChildServer, type DbKind,
} from './lib.js';

const { values } = benchArgs('app-lists.js', {
  db: { type: 'string', default: 'postgres,embedded' },
  rows: { type: 'string', default: '50000' },
  rounds: { type: 'string', default: '7' },
  requests: { type: 'string', default: '20' },
  warming: { type: 'string', default: '8' },
});
const rows = Number(values.rows);
const rounds = Number(values.rounds);
const requests = Number(values.requests);
const warming = Number(values.warming);
const PER_CUSTOMER = 50;

async function workspaceOf(knex: Knex, email: string): Promise<number> {
  const { rows: found } = await knex.raw('/* all workspaces: the bench finds its own workspace */ select workspace_id from users where email = ?', [email]);
  return found[0].workspace_id;
}

async function seed(knex: Knex, workspaceId: number): Promise<number> {
  await seedCustomers(knex, workspaceId, 1, rows / PER_CUSTOMER);
  await seedQuotes(knex, workspaceId, 1, rows);
  // The tables as autovacuum (or the embedded database's maintenance) leaves them within a minute of the inserts: the
  // pages then measured are those of a workspace that has had its quotes for a while, not of the seconds after a
  // bulk insert, whose rows are not yet marked all-visible (an index-only scan still reads their heap pages).
  await knex.raw('vacuum (analyze) quotes, quote_counts, quote_ranges');
  // A customer in the middle of the list: its 50 quotes are spread over the whole id range.
  const { rows: found } = await knex.raw('select id from customers where workspace_id = ? order by id offset ? limit 1', [workspaceId, Math.floor(rows / PER_CUSTOMER / 2)]);
  return found[0].id;
}

/** One request, the whole body read; its time in ms and its body's size. */
async function timed(url: string, cookie: string): Promise<{ ms: number; bytes: number; status: number }> {
  const started = performance.now();
  const res = await fetch(url, { headers: { cookie, 'accept-encoding': 'identity' } });
  const body = await res.arrayBuffer();
  return { ms: performance.now() - started, bytes: body.byteLength, status: res.status };
}

/** The median of `requests` sequential requests, and the server process's CPU per request over them. */
async function round(url: string, cookie: string, server: ChildServer): Promise<{ ms: number; cpu: number }> {
  const samples: number[] = [];
  const cpuBefore = cpuMs(server.child.pid);
  for (let i = 0; i < requests; i++) {
    const { ms, status } = await timed(url, cookie);
    if (status !== 200) throw new Error(`${url} answered ${status}`);
    samples.push(ms);
  }
  return { ms: median(samples), cpu: (cpuMs(server.child.pid) - cpuBefore) / requests };
}

interface Row {
  db: string;
  page: string;
  api: number[];
  app: number[];
  apiCpu: number[];
  appCpu: number[];
}

async function measure(server: ChildServer, cookie: string, customerId: number, db: DbKind, results: Row[]): Promise<void> {
  const baseline = `${server.url}/api/v1/quotes?customer_id=${customerId}`;
  const check = await (await fetch(baseline, { headers: { cookie } })).json();
  if (check.data.quotes.length !== PER_CUSTOMER) throw new Error(`the baseline has ${check.data.quotes.length} rows, not ${PER_CUSTOMER}`);
  // A deep page as a person reaches it: by the previous page's Next link, which says where the page starts.
  const nextLink = async (path: string) => {
    const text = await (await fetch(`${server.url}${path}`, { headers: { cookie } })).text();
    const href = /rel="next" href="([^"]+)"/.exec(text)?.[1];
    if (!href) throw new Error(`${path} has no next link`);
    return href.replace(/&amp;/g, '&');
  };
  const pages = [
    `/app/quotes?customer_id=${customerId}`, '/app/quotes', await nextLink('/app/quotes?page=499'), '/app/quotes?status=sent',
    await nextLink('/app/quotes?status=sent&page=99'), '/app/quotes?status=sent&page=100', '/app/quotes?page=500',
  ];
  // Warm both sides (prepared statements and their plans, the JIT, the heap's sizing) before anything is counted, the
  // baseline as often as the pages together: warmed less, the API kept getting faster through the run, so the pages
  // measured last met a faster baseline than the first.
  for (let i = 0; i < warming; i++) {
    for (const path of pages) {
      await round(`${server.url}${path}`, cookie, server);
      await round(baseline, cookie, server);
    }
  }
  for (const path of pages) {
    const row: Row = { db: dbName(db), page: path, api: [], app: [], apiCpu: [], appCpu: [] };
    for (let r = 0; r < rounds; r++) {
      const api = await round(baseline, cookie, server);
      const app = await round(`${server.url}${path}`, cookie, server);
      row.api.push(api.ms);
      row.app.push(app.ms);
      row.apiCpu.push(api.cpu);
      row.appCpu.push(app.cpu);
    }
    results.push(row);
  }
}

/** The first load of the quotes list, gzip: the page and the files it names. */
async function firstLoad(server: ChildServer, cookie: string): Promise<string[][]> {
  // The bytes as they came over the socket, not decoded: what the browser downloads.
  const gz = (url: string) =>
    new Promise<{ raw: string; wire: number; encoding: string }>((resolve, reject) => {
      http.get(url, { headers: { cookie, 'accept-encoding': 'gzip' } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const body = Buffer.concat(chunks);
          const encoding = res.headers['content-encoding'] ?? 'identity';
          resolve({ raw: (encoding === 'gzip' ? zlib.gunzipSync(body) : body).toString('utf8'), wire: body.byteLength, encoding });
        });
      }).on('error', reject);
    });
  const page = await gz(`${server.url}/app/quotes`);
  const assets = [...page.raw.matchAll(/(?:href|src)="(\/assets\/[^"]+)"/g)].map((m) => m[1].replace(/&amp;/g, '&'));
  const parts = [['/app/quotes', page.wire, page.encoding] as const, ...(await Promise.all(assets.map(async (a) => { const r = await gz(`${server.url}${a}`); return [a, r.wire, r.encoding] as const; })))];
  const total = parts.reduce((sum, [, wire]) => sum + wire, 0);
  return [...parts.map(([name, wire, encoding]) => [name, `${(wire / 1024).toFixed(1)} KB`, encoding]), ['total', `${(total / 1024).toFixed(1)} KB`, total < 60 * 1024 ? 'under 60 KB' : 'OVER 60 KB']];
}

async function onPostgres(results: Row[], weights: string[][][]): Promise<void> {
  const url = await freshPostgresUrl();
  const server = await startQuoting(url);
  onCleanup(() => server.stop());
  const { cookie, email } = await signUp(server.url);
  const database = await openDatabase({ databaseUrl: url, dataDir: '' });
  onCleanup(() => database.close());
  const customerId = await seed(database.knex, await workspaceOf(database.knex, email));
  note(`PostgreSQL: seeded ${rows} quotes`);
  await measure(server, cookie, customerId, 'postgres', results);
  weights.push(await firstLoad(server, cookie));
}

async function onEmbedded(results: Row[]): Promise<void> {
  const dataDir = tempDataDir('app-lists');
  let server = await startEmbedded(dataDir);
  const { cookie, email } = await signUp(server.url);
  await server.stop();
  // The data directory is the server's alone: seed it while no server runs.
  const customerId = await withDataDir(dataDir, async (database) => seed(database.knex, await workspaceOf(database.knex, email)));
  note(`embedded: seeded ${rows} quotes`);
  server = await startEmbedded(dataDir);
  onCleanup(() => server.stop());
  await measure(server, cookie, customerId, 'embedded', results);
}

runBench(async () => {
  const load = [loadAverage()];
  const results: Row[] = [];
  const weights: string[][][] = [];
  const dbs = databasesOption(values.db);
  if (dbs.includes('postgres')) await onPostgres(results, weights);
  if (dbs.includes('embedded')) await onEmbedded(results);
  load.push(loadAverage());
  printTable(
    `The quotes list page against the JSON API's 50 rows (${rows} quotes), ${rounds} alternating rounds of ${requests} requests; round medians in ms, min / median / max`,
    [
      ['database', 'page', 'JSON API (50 rows)', 'page', 'page ÷ API', 'server CPU per request: API; page', 'CPU ÷'],
      ...results.map((r) => [
        r.db, r.page, spread(r.api), spread(r.app), (median(r.app) / median(r.api)).toFixed(2),
        `${median(r.apiCpu).toFixed(2)}; ${median(r.appCpu).toFixed(2)}`, (median(r.appCpu) / median(r.apiCpu)).toFixed(2),
      ]),
    ],
  );
  for (const weight of weights) printTable('First load of /app/quotes on the wire (gzip)', [['file', 'size', ''], ...weight]);
  note(`load average before / after: ${load.join(' / ')}`);
});
