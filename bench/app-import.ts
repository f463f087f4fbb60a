/**
 * A `--rows` (50,000) product import started from the app's page against the same import through the API, on the real
 * app (`node bin/quoting serve`), alternated A B A B … `--rounds` (3) times, each run into a fresh workspace (so each
 * creates every row; bench/imports-data.ts's file):
 *   dry run  A: `POST /api/v1/products/import?dry_run=1` (multipart), until its answer;
 *            B: `POST /app/imports` (the same multipart upload), then the job's progress part polled every
 *               `--poll-ms` until the dry run is over (the page's answer comes back once the file is stored);
 *   import   A: `POST /api/v1/products/import` (multipart: the file is uploaded again), until its answer;
 *            B: `POST /app/imports/{id}/apply` on the file the page stored, polled until done;
 *   both     the two phases together, per round.
 * Prints min / median / max per phase and the ratio of medians (target ≤ 1.2). During each import, A's and B's alike,
 * `--clients` (1) loops request `/app` back to back: its p50 / p99 / max while the page imports (target p99 < 200 ms),
 * beside `/app` while the API imports and with nothing running.
 *   node dist/bench/app-import.js [--db postgres,embedded] [--rows 50000] [--rounds 3] [--clients 1] [--poll-ms 50]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { productCsv } from './imports-data.js';
import {
  benchArgs, databasesOption, dbName, fmt, freshPostgresUrl, loadAverage, median, note, onCleanup, percentile, printTable, runBench, signUp, spread,
  startEmbedded, startQuoting, tempDataDir, type ChildServer, type DbKind,
} from './lib.js';

const { values } = benchArgs('app-import.js', {
  db: { type: 'string', default: 'postgres,embedded' },
  rows: { type: 'string', default: '50000' },
  rounds: { type: 'string', default: '3' },
  clients: { type: 'string', default: '1' },
  'poll-ms': { type: 'string', default: '50' },
});
const rows = Number(values.rows);
const rounds = Number(values.rounds);
const clients = Number(values.clients);
const pollMs = Number(values['poll-ms']);
const TARGETS = { ratio: 1.2, p99: 200 };

interface Results {
  apiDry: number[];
  pageDry: number[];
  apiImport: number[];
  pageImport: number[];
  busyApi: number[];
  busy: number[];
  idle: number[];
}

function multipart(file: Blob): FormData {
  const form = new FormData();
  form.append('kind', 'products');
  form.append('file', file, 'products.csv');
  return form;
}

async function apiImport(server: ChildServer, cookie: string, file: Blob, dryRun: boolean): Promise<number> {
  const started = performance.now();
  const res = await fetch(`${server.url}/api/v1/products/import${dryRun ? '?dry_run=1' : ''}`, { method: 'POST', headers: { cookie }, body: multipart(file) });
  const text = await res.text();
  const ms = performance.now() - started;
  if (res.status !== 200) throw new Error(`the API import answered ${res.status}: ${text.slice(0, 300)}`);
  const report = JSON.parse(text).data.import;
  if (report.failed || report.created !== rows) throw new Error(`unexpected API report: ${JSON.stringify({ ...report, errors: report.errors.slice(0, 3) })}`);
  return ms;
}

/** Polls the job's progress part until its run is over; the state it ended in. */
async function settled(server: ChildServer, cookie: string, id: number): Promise<string> {
  for (;;) {
    const res = await fetch(`${server.url}/app/imports/${id}/progress`, { headers: { cookie } });
    const state = /data-state="(\w+)"/.exec(await res.text())?.[1];
    if (state !== 'waiting' && state !== 'running') return state ?? `HTTP ${res.status}`;
    await sleep(pollMs);
  }
}

async function pageJob(server: ChildServer, cookie: string, id: number, expect: string): Promise<void> {
  const state = await settled(server, cookie, id);
  if (state !== expect) {
    const page = await (await fetch(`${server.url}/app/imports/${id}`, { headers: { cookie } })).text();
    throw new Error(`the page's import ended ${state}, not ${expect}: ${page.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ').slice(-600)}`);
  }
}

/** `/app`, requested back to back by `clients` loops until `stop` resolves: each request's time in ms. */
async function homeLatencies(server: ChildServer, cookie: string, stop: Promise<unknown>): Promise<number[]> {
  const samples: number[] = [];
  let done = false;
  void stop.finally(() => (done = true));
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (!done) {
        const started = performance.now();
        const res = await fetch(`${server.url}/app`, { headers: { cookie } });
        await res.arrayBuffer();
        if (res.status !== 200) throw new Error(`/app answered ${res.status}`);
        samples.push(performance.now() - started);
      }
    }),
  );
  return samples;
}

async function measure(server: ChildServer, file: Blob, r: Results): Promise<void> {
  const origin = new URL(server.url).origin;
  // Warm both paths on a small file (code, statements, the page's assets).
  const warm = new Blob([productCsv(30)]);
  {
    const { cookie } = await signUp(server.url);
    const res = await fetch(`${server.url}/api/v1/products/import`, { method: 'POST', headers: { cookie }, body: multipart(warm) });
    if (res.status !== 200) throw new Error(`warm-up import answered ${res.status}`);
    const page = await fetch(`${server.url}/app/imports`, { method: 'POST', headers: { cookie, origin }, body: multipart(warm), redirect: 'manual' });
    if (page.status !== 303) throw new Error(`the page answered ${page.status}: ${(await page.text()).slice(0, 300)}`);
  }
  for (let round = 1; round <= rounds; round++) {
    // A: the API, dry run then import, into a fresh workspace.
    const a = await signUp(server.url);
    r.apiDry.push(await apiImport(server, a.cookie, file, true));
    // The API's import with the same `/app` load as the page's below: the baseline of both figures.
    const imported = apiImport(server, a.cookie, file, false);
    r.busyApi.push(...(await homeLatencies(server, a.cookie, imported)));
    r.apiImport.push(await imported);

    // B: the page, into another fresh workspace.
    const b = await signUp(server.url);
    r.idle.push(...(await homeLatencies(server, b.cookie, sleep(3000))));
    let started = performance.now();
    const sent = await fetch(`${server.url}/app/imports`, { method: 'POST', headers: { cookie: b.cookie, origin }, body: multipart(file), redirect: 'manual' });
    const id = Number(/^\/app\/imports\/(\d+)$/.exec(sent.headers.get('location') ?? '')?.[1]);
    if (sent.status !== 303 || !id) throw new Error(`the page's upload answered ${sent.status}: ${(await sent.text()).slice(0, 300)}`);
    await pageJob(server, b.cookie, id, 'checked');
    r.pageDry.push(performance.now() - started);

    started = performance.now();
    const applied = await fetch(`${server.url}/app/imports/${id}/apply`, { method: 'POST', headers: { cookie: b.cookie, origin }, redirect: 'manual' });
    if (applied.status !== 303) throw new Error(`apply answered ${applied.status}`);
    const finished = pageJob(server, b.cookie, id, 'done').then(() => r.pageImport.push(performance.now() - started));
    r.busy.push(...(await homeLatencies(server, b.cookie, finished)));
    await finished;
    note(
      `round ${round}: dry run API ${fmt(r.apiDry.at(-1)!)} ms, page ${fmt(r.pageDry.at(-1)!)} ms; import API ${fmt(r.apiImport.at(-1)!)} ms, ` +
        `page ${fmt(r.pageImport.at(-1)!)} ms; /app p99 so far while the API imports ${fmt(percentile(r.busyApi, 99))} ms, the page ${fmt(percentile(r.busy, 99))} ms`,
    );
  }
}

async function onPostgres(): Promise<ChildServer> {
  return startQuoting(await freshPostgresUrl());
}

async function onEmbedded(): Promise<ChildServer> {
  return startEmbedded(tempDataDir('app-import'));
}

runBench(async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quoting-bench-app-import-'));
  onCleanup(async () => fs.rmSync(dir, { recursive: true, force: true }));
  const csvPath = path.join(dir, 'products.csv');
  fs.writeFileSync(csvPath, productCsv(rows));
  const file = await fs.openAsBlob(csvPath, { type: 'text/csv' });
  note(`file: ${(file.size / 1024 / 1024).toFixed(1)} MB, ${rows} product rows; load average before: ${loadAverage()}`);
  const table: (string | number)[][] = [['database', 'phase', 'API ms', 'page ms', 'page ÷ API (medians)']];
  const latency: (string | number)[][] = [['database', '/app', 'requests', 'p50 ms', 'p99 ms', 'max ms']];
  for (const db of databasesOption(values.db) as DbKind[]) {
    const server = db === 'postgres' ? await onPostgres() : await onEmbedded();
    const r: Results = { apiDry: [], pageDry: [], apiImport: [], pageImport: [], busyApi: [], busy: [], idle: [] };
    note(`${dbName(db)}: ${rounds} rounds`);
    await measure(server, file, r);
    await server.stop();
    const ratio = (page: number[], api: number[]) => (median(page) / median(api)).toFixed(2);
    table.push([dbName(db), 'upload + dry run', spread(r.apiDry), spread(r.pageDry), ratio(r.pageDry, r.apiDry)]);
    table.push([dbName(db), 'import', spread(r.apiImport), spread(r.pageImport), ratio(r.pageImport, r.apiImport)]);
    // The whole flow: the API uploads the file twice (dry run, then import), the page once.
    const sum = (x: number[], y: number[]) => x.map((v, i) => v + y[i]);
    table.push([dbName(db), 'both', spread(sum(r.apiDry, r.apiImport)), spread(sum(r.pageDry, r.pageImport)), ratio(sum(r.pageDry, r.pageImport), sum(r.apiDry, r.apiImport))]);
    for (const [label, samples] of [['nothing running', r.idle], ['while the API imports', r.busyApi], ['while the page imports', r.busy]] as const) {
      latency.push([dbName(db), label, samples.length, fmt(percentile(samples, 50)), fmt(percentile(samples, 99)), fmt(Math.max(...samples))]);
    }
  }
  printTable(`${rows}-row product import: the page against the API, ${rounds} alternating rounds (min / median / max)`, table);
  printTable(`/app while the page's import runs (${clients} clients back to back)`, latency);
  note(`targets: page ÷ API ≤ ${TARGETS.ratio}; /app p99 < ${TARGETS.p99} ms while the page imports. Load average after: ${loadAverage()}`);
});
