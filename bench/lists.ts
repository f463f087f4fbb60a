/**
 * The unpaginated lists at size, against their limit. For each database (PostgreSQL, and the embedded PGlite
 * default) a workspace is seeded with `--rows` customers, products (× 3 variants), quotes and orders; then for each
 * list, rounds alternate
 *   A: the limit — PostgreSQL alone returning the same JSON text for the same rows: the API's own array elements,
 *      stored as text in a table of their own, read back in order as one `string_agg` value and as the app's
 *      pages one after another (each round's faster way counts), as bytes, through `pg` (for the embedded default, a
 *      PGlite), in a process of its own (lists-limit.ts);
 *   T: the transfer alone — the same body, already built, sent by a bare Node HTTP server in a child process
 *      (lists-transfer.ts) in as many writes as the app has pages, received by the same client code as B;
 *   B: `GET /api/v1/<list>` on `quoting serve` (a child process), the whole body received, uncompressed;
 *   and the same with `Accept-Encoding: gzip` (the compressed bytes received, not decoded).
 * Prints min/median/max of each, the ratio of the medians API ÷ limit (target ≤ 1.5), API ÷ (limit + transfer)
 * (the API's floor were reading and sending not to overlap: on the embedded default the limit is read with no
 * socket at all, so it leaves out the sending that any HTTP API must do) and the server's RSS
 * growth (target < 100 MB; sampled from /proc every 10 ms in a worker thread).
 *   node dist/bench/lists.js [--db postgres,embedded] [--rows 50000] [--embedded-rows 10000,50000] [--rounds 5]
 *                            [--lists quotes,orders,customers,products] [--analyze]
 * Without --analyze the tables have no statistics (autovacuum off on them): the plans a fresh import gets.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { Knex } from 'knex';
import { openDatabase } from '../src/db/database.js';
import { EMBEDDED_PAGE_ROWS, PAGE_ROWS } from '../src/db/keyset.js';
import { SEEDED_TABLES, seedCustomers, seedProducts } from './lists-seed.js';
import { seedOrders, seedQuotes } from './quotes-seed.js';
import {
  benchArgs, databasesOption, forkScript, freshPostgresUrl, median, note, onCleanup, printTable, spread, runBench, signUp, startEmbedded, startQuoting, tempDataDir, withDataDir,
  loadAverage, cpuMs, type ChildServer, type Forked,
} from './lib.js';
import { MB, mb, readStatus, startSampler } from './rss.js';

const { values } = benchArgs('lists.js', {
  db: { type: 'string', default: 'postgres,embedded' },
  rows: { type: 'string', default: '50000' },
  'embedded-rows': { type: 'string', default: '10000,50000' },
  rounds: { type: 'string', default: '5' },
  lists: { type: 'string', default: 'quotes,orders,customers,products' },
  analyze: { type: 'boolean', default: false },
});
const rounds = Math.max(3, Number(values.rounds));
const lists = values.lists.split(',').filter(Boolean) as ListName[];
const TARGET = { ratio: 1.5, growthMb: 100 };

type ListName = 'quotes' | 'orders' | 'customers' | 'products';

/** Seeds `rows` of every list into the workspace (customers first: quotes and orders use them), growing from `from`. */
async function seed(knex: Knex, workspaceId: number, from: number, to: number, analyze: boolean): Promise<void> {
  if (!analyze) {
    for (const table of SEEDED_TABLES) await knex.raw(`alter table ${table} set (autovacuum_enabled = false)`);
  }
  await seedCustomers(knex, workspaceId, from, to, analyze);
  await seedProducts(knex, workspaceId, from, to, analyze);
  await seedQuotes(knex, workspaceId, from, to, 2025, analyze);
  await seedOrders(knex, workspaceId, from, to, analyze);
}

/** The limit's side, a process of its own (lists-limit.ts): stores texts, and reads them back, as one value and in pages. */
interface Limit {
  store(list: string, texts: string[]): Promise<void>;
  /**
   * The text read as one value and in pages of `pageRows` (the app's), each timed alone in that process, its length,
   * and with `check` its SHA-256 (the same both ways).
   */
  read(list: string, pageRows: number, check: boolean): Promise<{ one: number; paged: number; bytes: number; sha256?: string }>;
  close(): Promise<void>;
}

/** The limit on PostgreSQL at `url`, or (without) on a PGlite of its own. */
async function startLimit(url?: string): Promise<Limit> {
  const child = await forkScript('./lists-limit.js', 'the limit', 'ready');
  const file = path.join(tempDataDir('lists-limit'), 'texts.json');
  // One question at a time; a failure in the child, or its exit, is thrown here.
  const ask = <T>(message: Record<string, unknown>, answer: string): Promise<T> => {
    const reply = child.next<T>(answer, 600_000);
    child.child.send(message);
    return reply;
  };
  await ask({ type: 'open', url }, 'opened');
  return {
    async store(list, texts) {
      fs.writeFileSync(file, JSON.stringify(texts));
      await ask({ type: 'store', list, file }, 'stored');
    },
    read: (list, pageRows, check) => ask({ type: 'read', list, pageRows, check }, 'read'),
    close: () => ask({ type: 'close' }, 'closed'),
  };
}

interface Row {
  db: string;
  list: string;
  rows: number;
  bytes: number;
  /** Each round's faster way: */
  limit: number[];
  /** the text read as one value, */
  limitOne: number[];
  /** and in the app's pages one after another. */
  limitPaged: number[];
  /** The same body sent by a bare HTTP server (lists-transfer.ts). */
  transfer: number[];
  api: number[];
  gzip: number[];
  gzipBytes: number;
  /** Server CPU time (user + system, /proc/<pid>/stat) of each request, plain and gzip. */
  cpu: number[];
  gzipCpu: number[];
  rssBefore: number;
  rssPeak: number;
}

/**
 * GET, the whole body received and counted, not kept or decoded (as `curl -o /dev/null` does): what is timed is the
 * server producing and sending it. fetch()'s arrayBuffer() gathers and joins the chunks, and receives a long body
 * more slowly than the server sends it, so API and transfer alike would measure the client. The agent keeps the
 * connection, as fetch does.
 */
const agent = new http.Agent({ keepAlive: true });
function get(url: string, headers: Record<string, string>): Promise<{ status: number; bytes: number; encoding?: string }> {
  return new Promise((resolve, reject) => {
    http.get(url, { headers, agent }, (res) => {
      let bytes = 0;
      res.on('data', (chunk: Buffer) => (bytes += chunk.length));
      res.on('end', () => resolve({ status: res.statusCode!, bytes, encoding: res.headers['content-encoding'] }));
      res.on('error', reject);
    }).on('error', reject);
  });
}

/** The gzip answer's size, as received, before decompression. */
async function gzipGet(url: string, headers: Record<string, string>): Promise<number> {
  const { status, bytes, encoding } = await get(url, headers);
  if (status !== 200 || encoding !== 'gzip') throw new Error(`GET ${url} (gzip): ${status}, ${encoding ?? 'not'} encoded`);
  return bytes;
}

/** The bare HTTP server of the transfer floor, and the file it reads each body from. */
interface Transfer {
  server: Forked & { ready: { url: string } };
  file: string;
}

async function startTransfer(): Promise<Transfer> {
  const server = await forkScript('./lists-transfer.js', 'the transfer server', 'ready');
  return { server, file: path.join(tempDataDir('lists-body'), 'body.json') };
}

/** GET, the whole body received and counted; its time. */
async function timedGet(url: string, headers: Record<string, string>, bytes: number): Promise<number> {
  const started = performance.now();
  const res = await get(url, headers);
  const ms = performance.now() - started;
  if (res.status !== 200 || res.bytes !== bytes || res.encoding) throw new Error(`GET ${url}: ${res.status}, ${res.bytes} bytes ${res.encoding ?? ''} (expected ${bytes})`);
  return ms;
}

/** Alternates limit, transfer and API for one list on a running server. */
async function measure(server: ChildServer, cookie: string, limit: Limit, transfer: Transfer, db: string, list: ListName, rows: number): Promise<Row> {
  const url = `${server.url}/api/v1/${list}`;
  // Uncompressed, as the limit is (fetch asks for gzip unless told otherwise); gzip is measured beside it.
  const plain = { cookie, 'accept-encoding': 'identity' };
  const first = await fetch(url, { headers: plain });
  const body = await first.text();
  if (first.status !== 200) throw new Error(`GET ${url}: ${first.status} ${body.slice(0, 300)}`);
  const elements = (JSON.parse(body).data[list] as unknown[]).map((e) => JSON.stringify(e));
  if (elements.length !== rows) throw new Error(`${list}: expected ${rows} rows, got ${elements.length}`);
  const envelope = (inner: string) => `{"version":"v1","data":{"${list}":[${inner}]}}`;
  // The API prints every record as JSON.stringify does: the limit's text is byte for byte the body's.
  const inner = elements.join(',');
  if (envelope(inner) !== body) throw new Error(`${list}: the body is not its elements re-serialised (not compact JSON)`);
  await limit.store(list, elements);
  // The limit's text is checked on its first read, untimed, byte for byte the body's elements in their order (the
  // SHA-256 of every page kept); the timed reads, each page dropped once counted as the app's are once written, by
  // their length.
  const digest = createHash('sha256').update(inner).digest('hex');
  const pageRows = db === 'PostgreSQL' ? PAGE_ROWS : EMBEDDED_PAGE_ROWS;
  // The limit is the faster way of the round: one value, or the app's pages one after another.
  const readLimit = async (check: boolean) => {
    const { one, paged, bytes, sha256 } = await limit.read(list, pageRows, check);
    if ((check && sha256 !== digest) || bytes !== Buffer.byteLength(inner)) throw new Error(`${list}: the limit's text differs from the body`);
    return { one, paged };
  };
  await readLimit(true);

  fs.writeFileSync(transfer.file, body);
  const loaded = transfer.server.next('loaded', 60_000);
  transfer.server.child.send({ type: 'load', file: transfer.file, pages: Math.ceil(rows / pageRows) });
  await loaded;

  await new Promise((resolve) => setTimeout(resolve, 300));
  const pid = server.child.pid!;
  const rssBefore = readStatus(pid, 'VmRSS');
  const sampler = await startSampler(pid, 10);
  const result: Row = {
    db, list, rows, bytes: Buffer.byteLength(body), limit: [], limitOne: [], limitPaged: [], transfer: [], api: [], gzip: [], gzipBytes: 0, cpu: [], gzipCpu: [], rssBefore, rssPeak: 0,
  };
  for (let round = 0; round < rounds; round++) {
    const { one, paged } = await readLimit(false);
    result.limit.push(Math.min(one, paged));
    result.limitOne.push(one);
    result.limitPaged.push(paged);
    result.transfer.push(await timedGet(transfer.server.ready.url, { 'accept-encoding': 'identity' }, result.bytes));
    let cpu = cpuMs(pid);
    result.api.push(await timedGet(url, plain, result.bytes));
    result.cpu.push(cpuMs(pid) - cpu);
    // The same list gzip-compressed (fast level, as it streams); counted as received, before decompression.
    cpu = cpuMs(pid);
    const started = performance.now();
    const zipped = await gzipGet(url, { cookie, 'accept-encoding': 'gzip' });
    result.gzip.push(performance.now() - started);
    result.gzipCpu.push(cpuMs(pid) - cpu);
    result.gzipBytes = zipped;
  }
  result.rssPeak = (await sampler.stop()).peak;
  // Each row as soon as it is measured, so a long run that fails later still shows what it got.
  note(`${db} ${list} ${rows}: limit ${spread(result.limit)} ms (one value ${spread(result.limitOne)}, pages ${spread(result.limitPaged)}), transfer ${spread(result.transfer)} ms, API ${spread(result.api)} ms, gzip ${spread(result.gzip)} ms (${mb(result.gzipBytes)}), server CPU ${spread(result.cpu)} ms, with gzip ${spread(result.gzipCpu)} ms, RSS growth ${mb(result.rssPeak - rssBefore)}`);
  return result;
}

async function workspaceOf(knex: Knex, email: string): Promise<number> {
  const { rows } = await knex.raw('/* all workspaces: the bench reads its own rows */ select workspace_id from users where email = ?', [email]);
  return rows[0].workspace_id;
}

async function onPostgres(rows: number, transfer: Transfer, results: Row[]): Promise<void> {
  const url = await freshPostgresUrl();
  const server = await startQuoting(url);
  const { cookie, email } = await signUp(server.url);
  const database = await openDatabase({ databaseUrl: url, dataDir: '' });
  onCleanup(() => database.close());
  const started = performance.now();
  await seed(database.knex, await workspaceOf(database.knex, email), 1, rows, values.analyze);
  note(`PostgreSQL: seeded ${rows} of each in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  const limit = await startLimit(url);
  onCleanup(() => limit.close());
  for (const list of lists) results.push(await measure(server, cookie, limit, transfer, 'PostgreSQL', list, rows));
  await server.stop();
}

async function onEmbedded(sizes: number[], transfer: Transfer, results: Row[]): Promise<void> {
  const dataDir = tempDataDir('lists');
  let server = await startEmbedded(dataDir);
  const { cookie, email } = await signUp(server.url);
  await server.stop();
  const limit = await startLimit();
  onCleanup(() => limit.close());
  let seeded = 0;
  for (const rows of sizes) {
    // The data directory is the server's alone: seed it while no server runs.
    await withDataDir(dataDir, async (database) => {
      const started = performance.now();
      await seed(database.knex, await workspaceOf(database.knex, email), seeded + 1, rows, values.analyze);
      note(`embedded: grew to ${rows} of each in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    });
    seeded = rows;
    server = await startEmbedded(dataDir);
    for (const list of lists) results.push(await measure(server, cookie, limit, transfer, 'embedded', list, rows));
    await server.stop();
  }
}

runBench(async () => {
  const load = [loadAverage()];
  const results: Row[] = [];
  const dbs = databasesOption(values.db);
  const transfer = await startTransfer();
  if (dbs.includes('postgres')) await onPostgres(Number(values.rows), transfer, results);
  if (dbs.includes('embedded')) await onEmbedded(values['embedded-rows'].split(',').map(Number), transfer, results);
  load.push(loadAverage());
  printTable(
    `Lists against their limit, ${rounds} alternating rounds (limit, transfer, API), ${values.analyze ? 'after ANALYZE' : 'no statistics'}; ms min / median / max`,
    [
      ['database', 'list', 'rows', 'body', 'limit (PG alone)', 'transfer (HTTP alone)', 'API', 'API/limit', 'API/(limit+transfer)', 'API gzip', 'gzip body', 'server CPU', 'server CPU gzip', `RSS before`, 'RSS growth'],
      ...results.map((r) => {
        const ratio = median(r.api) / median(r.limit);
        const floor = median(r.api) / (median(r.limit) + median(r.transfer));
        const growth = r.rssPeak - r.rssBefore;
        return [
          r.db, r.list, r.rows, mb(r.bytes), spread(r.limit), spread(r.transfer), spread(r.api),
          `${ratio.toFixed(2)}${ratio <= TARGET.ratio ? '' : ' !'}`, floor.toFixed(2), spread(r.gzip), mb(r.gzipBytes), spread(r.cpu), spread(r.gzipCpu), mb(r.rssBefore), `${mb(growth)}${growth < TARGET.growthMb * MB ? '' : ' !'}`,
        ];
      }),
    ],
  );
  note(`\ntargets: API/limit <= ${TARGET.ratio}, RSS growth < ${TARGET.growthMb} MB ('!' marks a miss). load average at start ${load[0]}, at end ${load[1]}`);
});
