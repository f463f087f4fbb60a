/**
 * Quotes and orders on the real app (`node bin/quoting serve` over a fresh migrated PostgreSQL database):
 *  a) create — `POST /api/v1/quotes` with `--lines` (20) lines under load (autocannon, `--connections` (10)), against
 *     baselines measured in the same run: the same writes as raw SQL through pg (one transaction, one statement per
 *     row, as the service does them), the service function `createQuote` called in this process through knex (no
 *     HTTP), and a bare koa app that parses the same JSON body and answers the same 201 body;
 *  b) flow — create, send (notify: false), accept, convert, one after the other, in `--connections` concurrent
 *     loops, against the same four steps as service calls in this process and as raw SQL through pg;
 *  c) lists — `GET /api/v1/quotes` and `GET /api/v1/orders` over `--rows` (50,000) of each, seeded by SQL in a
 *     workspace of their own: latency of `--runs` (5) sequential requests after `--warmup-requests` (1), and the
 *     server's RSS (sampled from /proc/<pid>/status in a worker thread, plus VmHWM), against the service's pages
 *     collected in this process.
 *   node dist/bench/quotes.js [--duration 10] [--warmup 2] [--connections 10] [--lines 20] [--rows 50000] [--runs 5]
 *                             [--warmup-requests 1] [--sample-ms 10] [--parts create,flow,lists]
 */
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import pg from 'pg';
import type { Knex } from 'knex';
import { openPostgres } from '../src/db/database.js';
import { Principal } from '../src/http/auth.js';
import type { Workspace } from '../src/workspaces/model.js';
import { eventId } from '../src/events/emit.js';
import { createQuoteBody } from '../src/quotes/schema.js';
import { createQuote, listQuotes, lockedQuoteForUser, transition, transitionQuote } from '../src/quotes/service.js';
import { convertQuote, listOrders } from '../src/orders/service.js';
import { seedCustomers } from './lists-seed.js';
import { seedOrders, seedQuotes } from './quotes-seed.js';
import { mb, MB, readStatus, resetPeak, startSampler } from './rss.js';
import { freshPostgresUrl, median, note, onCleanup, percentile, printTable, runBench, signUp, startChild, startQuoting, type ChildServer } from './lib.js';

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '2' },
    connections: { type: 'string', default: '10' },
    lines: { type: 'string', default: '20' },
    rows: { type: 'string', default: '50000' },
    runs: { type: 'string', default: '5' },
    'warmup-requests': { type: 'string', default: '1' },
    'sample-ms': { type: 'string', default: '10' },
    parts: { type: 'string', default: 'create,flow,lists' },
  },
});
const duration = Number(values.duration);
const warmup = Number(values.warmup);
const connections = Number(values.connections);
const lineCount = Number(values.lines);
const rows = Number(values.rows);
const runs = Number(values.runs);
const warmupRequests = Number(values['warmup-requests']);
const sampleMs = Number(values['sample-ms']);
const parts = new Set(values.parts.split(',').map((p) => p.trim()));

const TARGETS = { listMs: 1500, rssGrowthMb: 150 };
const CUSTOMERS = 2000;

const msText = (value: number) => (value >= 100 ? `${value.toFixed(0)} ms` : `${value.toFixed(1)} ms`);
const k = (n: number) => (n >= 1000 ? `${n / 1000}k` : String(n));
const now = () => performance.now();

// ---------------------------------------------------------------- HTTP

interface Answer {
  status: number;
  text: string;
  json: any;
}

function client(baseUrl: string, cookie: string) {
  return async (method: string, path: string, body?: unknown): Promise<Answer> => {
    const res = await fetch(baseUrl + path, {
      method,
      headers: { cookie, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: res.status, text, json };
  };
}

function expect(answer: Answer, status: number, what: string): any {
  if (answer.status !== status) throw new Error(`${what} answered ${answer.status} (expected ${status}): ${answer.text.slice(0, 300)}`);
  return answer.json.data;
}

// ---------------------------------------------------------------- load

interface Load {
  name: string;
  /** Completed operations per second. */
  rate: number;
  total: number;
  p50: number;
  p99: number;
  max: number;
  /** Per-step latencies, for multi-step operations. */
  steps: Record<string, number[]>;
}

/**
 * `workers` concurrent loops calling `op` until `--duration` seconds are up (after `--warmup` seconds run and
 * discarded). `op` may return step timings. Any failure stops the benchmark.
 */
async function loop(name: string, workers: number, op: () => Promise<Record<string, number> | void>): Promise<Load> {
  const run = async (seconds: number): Promise<Load> => {
    const latencies: number[] = [];
    const steps: Record<string, number[]> = {};
    const started = now();
    const deadline = started + seconds * 1000;
    await Promise.all(
      Array.from({ length: workers }, async () => {
        while (now() < deadline) {
          const t0 = now();
          const timings = await op();
          latencies.push(now() - t0);
          for (const [step, ms] of Object.entries(timings ?? {})) (steps[step] ??= []).push(ms);
        }
      }),
    );
    const elapsed = (now() - started) / 1000;
    return {
      name, rate: latencies.length / elapsed, total: latencies.length,
      p50: percentile(latencies, 50), p99: percentile(latencies, 99), max: Math.max(...latencies), steps,
    };
  };
  if (warmup > 0) await run(warmup);
  return run(duration);
}

/** autocannon against one URL (warm-up discarded); fails on any error or non-2xx answer. Percentiles are autocannon's. */
async function cannon(name: string, url: string, options: { method?: 'POST'; headers: Record<string, string>; body?: string; connections: number }): Promise<Load> {
  const fire = (seconds: number) => autocannon({ url, method: options.method ?? 'GET', headers: options.headers, body: options.body, connections: options.connections, duration: seconds });
  if (warmup > 0) await fire(warmup);
  const result = await fire(duration);
  if (result.errors || result.non2xx) {
    throw new Error(`${name}: ${result.errors} connection errors, ${result.non2xx} non-2xx answers in ${result.requests.total} requests`);
  }
  return {
    name, rate: result.requests.total / result.duration, total: result.requests.total,
    p50: result.latency.p50, p99: result.latency.p99, max: result.latency.max, steps: {},
  };
}

function loadTable(title: string, loads: Load[], unit: string, reference: Load): void {
  printTable(title, [
    ['run', `${unit}/s`, 'p50', 'p99', 'max', unit === 'req' ? 'requests' : `${unit}s`, 'app / this'],
    ...loads.map((l) => [l.name, l.rate.toFixed(1), msText(l.p50), msText(l.p99), msText(l.max), l.total, (reference.rate / l.rate).toPrecision(2)]),
  ]);
}

// ---------------------------------------------------------------- the quote

interface Catalogue {
  customerId: number;
  variantId: number;
  variantSku: string;
  variantPrice: string;
}

type Line = { sku: string; quantity: number } | { description: string; quantity: string; price: string };

/** A realistic quote: half the lines name a priced variant (price defaulted from it), half are priced services. */
function quoteBody(c: Catalogue, lines: number) {
  return {
    customer_id: c.customerId,
    currency: 'EUR',
    discount_amount: '5.00',
    tax_rate: '19',
    notes: 'Prices as agreed on the call; delivery in two batches.',
    valid_until: new Date(Date.now() + 30 * 86_400_000).toISOString().slice(0, 10),
    lines: Array.from({ length: lines }, (_, i): Line =>
      i % 2 === 0 ? { sku: c.variantSku, quantity: i + 1 } : { description: `Installation, step ${i}`, quantity: '1.5', price: '39.90' },
    ),
  };
}

/** The totals the addendum asks for, in integer cents (half-up), to check the app's answer once. */
function expectedTotal(c: Catalogue, body: ReturnType<typeof quoteBody>): string {
  const cents = (money: string) => Math.round(Number(money) * 100);
  const subtotal = body.lines.reduce((sum, line) => {
    const price = cents('price' in line ? line.price : c.variantPrice);
    return sum + Math.round(Number(line.quantity) * price);
  }, 0);
  const taxable = subtotal - cents(body.discount_amount);
  const total = taxable + Math.round((taxable * Number(body.tax_rate)) / 100);
  return (total / 100).toFixed(2);
}

// ---------------------------------------------------------------- raw SQL through pg

const RECALCULATE = `update quotes q set subtotal = t.subtotal,
    tax_amount = round((t.subtotal - q.discount_amount) * q.tax_rate / 100, 2),
    total = t.subtotal - q.discount_amount + round((t.subtotal - q.discount_amount) * q.tax_rate / 100, 2),
    updated_at = now()
  from (select coalesce(sum(line_total), 0) as subtotal from quote_lines where quote_id = $1 and workspace_id = $2) t
  where q.id = $1 and q.workspace_id = $2`;
const NEXT_NUMBER = `insert into quote_numbers (workspace_id, year, last_number) values ($1, $2, 1)
  on conflict (workspace_id, year) do update set last_number = quote_numbers.last_number + 1 returning last_number`;

interface Raw {
  pool: pg.Pool;
  workspaceId: number;
  catalogue: Catalogue;
  body: ReturnType<typeof quoteBody>;
  /** The `quote.created` event's data as the app writes it (quote and lines), so the event rows weigh the same. */
  eventData: string;
}

async function inTransaction<T>(pool: pg.Pool, work: (c: pg.PoolClient) => Promise<T>): Promise<T> {
  const c = await pool.connect();
  try {
    await c.query('begin');
    const result = await work(c);
    await c.query('commit');
    return result;
  } catch (err) {
    await c.query('rollback').catch(() => undefined);
    throw err;
  } finally {
    c.release();
  }
}

/**
 * The writes of a quote's creation, one statement per row as the service issues them: number, quote, lines,
 * totals, activity, event. With `numberLast` the gap-free number is taken just before the commit, so the
 * counter row is locked for one statement instead of the whole transaction.
 */
function rawCreate(raw: Raw, numberLast = false): Promise<number> {
  const { workspaceId: ws, body, catalogue } = raw;
  const year = new Date().getUTCFullYear();
  return inTransaction(raw.pool, async (c) => {
    const number = async () => `Q-${year}-${String((await c.query(NEXT_NUMBER, [ws, year])).rows[0].last_number).padStart(6, '0')}`;
    const {
      rows: [quote],
    } = await c.query(
      `insert into quotes (workspace_id, quote_number, customer_id, customer_name, customer_email, currency, discount_amount, tax_rate, notes, valid_until, public_token)
       values ($1, $2, $3, 'Bench Buyer', 'buyer@example.com', $4, $5, $6, $7, $8, $9) returning id`,
      [ws, numberLast ? `pending-${eventId()}` : await number(), catalogue.customerId, body.currency, body.discount_amount, body.tax_rate, body.notes, body.valid_until, eventId()],
    );
    for (const line of body.lines) {
      const priced = 'price' in line;
      await c.query(
        `insert into quote_lines (workspace_id, quote_id, variant_id, sku, description, quantity, price, line_total)
         values ($1, $2, $3, $4, $5, $6, $7, round($6::numeric * $7::numeric, 2))`,
        [ws, quote.id, priced ? null : catalogue.variantId, priced ? null : line.sku, priced ? line.description : 'Standard', String(line.quantity), priced ? line.price : catalogue.variantPrice],
      );
    }
    await c.query(RECALCULATE, [quote.id, ws]);
    if (numberLast) await c.query('update quotes set quote_number = $1 where id = $2', [await number(), quote.id]);
    await c.query(`insert into quote_activities (workspace_id, quote_id, type, actor, message) values ($1, $2, 'created', 'user', 'Quote created.')`, [ws, quote.id]);
    await c.query(`insert into events (id, workspace_id, type, data) values ($1, $2, 'quote.created', $3)`, [eventId(), ws, raw.eventData]);
    return quote.id as number;
  });
}

/** A transition's writes: lock, status and its timestamp, activity, event. */
function rawMove(raw: Raw, id: number, to: 'sent' | 'accepted'): Promise<void> {
  return inTransaction(raw.pool, async (c) => {
    await c.query('select id from quotes where workspace_id = $1 and id = $2 for update', [raw.workspaceId, id]);
    await c.query(`update quotes set status = $3, ${to}_at = now(), updated_at = now() where workspace_id = $1 and id = $2`, [raw.workspaceId, id, to]);
    await c.query(`insert into quote_activities (workspace_id, quote_id, type, actor, message) values ($1, $2, $3, 'user', 'Moved.')`, [raw.workspaceId, id, to]);
    await c.query(`insert into events (id, workspace_id, type, data) values ($1, $2, $3, $4)`, [eventId(), raw.workspaceId, `quote.${to}`, raw.eventData]);
  });
}

/** The conversion's writes: lock, the order, its items copied from the lines, its totals, activity, event. */
function rawConvert(raw: Raw, id: number): Promise<void> {
  const ws = raw.workspaceId;
  return inTransaction(raw.pool, async (c) => {
    await c.query('select id from quotes where workspace_id = $1 and id = $2 for update', [ws, id]);
    const {
      rows: [order],
    } = await c.query(
      `insert into orders (workspace_id, order_number, external_source, external_id, status, customer_id, channel_id, quote_id, currency, discount_amount, tax_amount, placed_at)
       select workspace_id, quote_number, 'quote', 'quote:' || id, 'pending', customer_id, channel_id, id, currency, discount_amount, tax_amount, now()
       from quotes where workspace_id = $1 and id = $2 returning id`,
      [ws, id],
    );
    await c.query(
      `insert into order_items (workspace_id, order_id, sku, description, quantity, price, line_total)
       select workspace_id, $1, sku, description, quantity, price, line_total from quote_lines where quote_id = $2 and workspace_id = $3 order by id`,
      [order.id, id, ws],
    );
    await c.query(
      `update orders o set subtotal = t.subtotal, total = t.subtotal - o.discount_amount + o.tax_amount, updated_at = now()
       from (select coalesce(sum(line_total), 0) as subtotal from order_items where order_id = $1 and workspace_id = $2) t
       where o.id = $1 and o.workspace_id = $2`,
      [order.id, ws],
    );
    await c.query(`insert into quote_activities (workspace_id, quote_id, type, actor, message) values ($1, $2, 'converted', 'user', 'Converted.')`, [ws, id]);
    await c.query(`insert into events (id, workspace_id, type, data) values ($1, $2, 'order.created', $3)`, [eventId(), ws, raw.eventData]);
  });
}

// ---------------------------------------------------------------- a) and b): create, and the flow

async function workspaceOf(knex: Knex, baseUrl: string, cookie: string): Promise<Workspace> {
  const data = expect(await client(baseUrl, cookie)('GET', '/api/v1/workspace'), 200, 'GET /api/v1/workspace');
  return (await knex('workspaces').where({ id: data.workspace.id }).first()) as Workspace;
}

async function writes(databaseUrl: string, knex: Knex) {
  const app = await startQuoting(databaseUrl);
  const { cookie } = await signUp(app.url);
  const call = client(app.url, cookie);
  const workspace = await workspaceOf(knex, app.url, cookie);
  // Secret-key principal: sees every channel, as the owner does; no session lookups in the baseline.
  const auth = new Principal(null, workspace, null, 'secret');

  const customer = expect(await call('POST', '/api/v1/customers', { email: 'buyer@example.com', name: 'Bench Buyer', company: 'Bench Buyer GmbH' }), 201, 'POST /customers');
  const product = expect(
    await call('POST', '/api/v1/products', { sku: 'BENCH', name: 'Bench product', variants: [{ sku: 'BENCH-1', name: 'Standard', price: '24.90' }] }),
    201,
    'POST /products',
  );
  const catalogue: Catalogue = { customerId: customer.customer.id, variantId: product.product.variants[0].id, variantSku: 'BENCH-1', variantPrice: '24.90' };
  const body = quoteBody(catalogue, lineCount);
  const bodyText = JSON.stringify(body);

  // One of each, checked: the answer, the totals, the flow.
  const first = await call('POST', '/api/v1/quotes', body);
  const created = expect(first, 201, 'POST /api/v1/quotes');
  if (created.lines.length !== lineCount) throw new Error(`expected ${lineCount} lines, got ${created.lines.length}`);
  if (created.quote.total !== expectedTotal(catalogue, body)) throw new Error(`quote total ${created.quote.total}, expected ${expectedTotal(catalogue, body)}`);
  const id = created.quote.id;
  expect(await call('POST', `/api/v1/quotes/${id}/send`, { notify: false }), 200, 'send');
  expect(await call('POST', `/api/v1/quotes/${id}/accept`), 200, 'accept');
  const converted = expect(await call('POST', `/api/v1/quotes/${id}/convert`), 201, 'convert');
  if (converted.order.total !== created.quote.total || converted.items.length !== lineCount) throw new Error(`order ${converted.order.total} with ${converted.items.length} items from quote ${created.quote.total}`);
  note(`one quote: ${lineCount} lines, ${first.text.length}-byte answer, total ${created.quote.total} EUR; converted to an order of the same total`);

  // What the service issues for one creation, counted on the in-process knex.
  const input = createQuoteBody.parse(body);
  const statements: string[] = [];
  const onQuery = (q: { sql: string }) => statements.push(q.sql);
  knex.on('query', onQuery);
  await knex.transaction((trx) => createQuote(trx, auth, input, 'user'));
  knex.off('query', onQuery);
  const writeCount = statements.filter((sql) => /^\s*(insert|update|delete)/i.test(sql)).length;
  const rawCount = 1 + 1 + lineCount + 1 + 1 + 1; // number, quote, lines, totals, activity, event

  const pool = new pg.Pool({ connectionString: databaseUrl, max: connections, application_name: 'quoting-bench-raw' });
  onCleanup(() => pool.end());
  const raw: Raw = { pool, workspaceId: workspace.id, catalogue, body, eventData: JSON.stringify(created) };

  const headers = { cookie, 'content-type': 'application/json' };
  const results: Record<string, Load> = {};

  if (parts.has('create')) {
    const bareScript = fileURLToPath(new URL('./bare-koa.js', import.meta.url));
    const bare: ChildServer = await startChild([bareScript], { ...process.env, BARE_BODY: first.text, BARE_STATUS: '201', BARE_PARSE: '1' }, 'bare koa');
    const bareAnswer = await fetch(`${bare.url}/api/v1/quotes`, { method: 'POST', headers, body: bodyText });
    const bareText = await bareAnswer.text();
    if (bareAnswer.status !== 201 || bareText !== first.text) throw new Error(`bare koa answers ${bareAnswer.status} and a different body`);

    const url = `${app.url}/api/v1/quotes`;
    const create: Load[] = [];
    create.push(await cannon(`quoting serve, ${connections} connections (autocannon)`, url, { method: 'POST', headers, body: bodyText, connections }));
    create.push(await cannon('quoting serve, 1 connection (autocannon)', url, { method: 'POST', headers, body: bodyText, connections: 1 }));
    create.push(await loop(`service createQuote in-process (knex), ${connections} loops`, connections, async () => void (await knex.transaction((trx) => createQuote(trx, auth, input, 'user')))));
    create.push(await loop('service createQuote in-process (knex), 1 loop', 1, async () => void (await knex.transaction((trx) => createQuote(trx, auth, input, 'user')))));
    create.push(await loop(`raw SQL through pg, ${connections} loops`, connections, async () => void (await rawCreate(raw))));
    create.push(await loop('raw SQL through pg, 1 loop', 1, async () => void (await rawCreate(raw))));
    create.push(await loop(`raw SQL, number taken last, ${connections} loops`, connections, async () => void (await rawCreate(raw, true))));
    create.push(await cannon(`bare koa, same JSON in and out, ${connections} connections`, `${bare.url}/api/v1/quotes`, { method: 'POST', headers, body: bodyText, connections }));
    await bare.stop();
    loadTable(
      `a) POST /api/v1/quotes with ${lineCount} lines (${bodyText.length}-byte body): ${duration} s each after ${warmup} s warm-up`,
      create,
      'req',
      create[0],
    );
    note(
      `statements per creation: the service issues ${statements.length} (${writeCount} writes: inserts/updates, the rest reads, savepoints, begin/commit); ` +
        `the raw baseline ${rawCount + 2} (${rawCount} writes plus begin/commit)`,
    );
    const [api, api1, service, service1, rawN, raw1, rawLast, bareN] = create;
    note(
      `ratio app / raw SQL: ${(api.rate / rawN.rate).toFixed(2)} at ${connections} connections, ${(api1.rate / raw1.rate).toFixed(2)} at 1; ` +
        `app / service in-process: ${(api.rate / service.rate).toFixed(2)} at ${connections}, ${(api1.rate / service1.rate).toFixed(2)} at 1; app / bare koa: ${(api.rate / bareN.rate).toFixed(3)}`,
    );
    note(
      `concurrency (${connections} / 1): app ${(api.rate / api1.rate).toFixed(2)}×, service ${(service.rate / service1.rate).toFixed(2)}×, raw ${(rawN.rate / raw1.rate).toFixed(2)}×; ` +
        `raw with the number taken last instead of first: ${(rawLast.rate / rawN.rate).toFixed(2)}× (creations in one workspace queue on the quote_numbers row lock)`,
    );
    results.create = api;
  }

  if (parts.has('flow')) {
    const step = async (fn: () => Promise<unknown>, timings: Record<string, number>, name: string) => {
      const t0 = now();
      await fn();
      timings[name] = now() - t0;
    };
    const flows: Load[] = [];
    flows.push(
      await loop(`quoting serve, ${connections} loops (fetch, keep-alive)`, connections, async () => {
        const t: Record<string, number> = {};
        let qid = 0;
        await step(async () => (qid = expect(await call('POST', '/api/v1/quotes', body), 201, 'create').quote.id), t, 'create');
        await step(async () => expect(await call('POST', `/api/v1/quotes/${qid}/send`, { notify: false }), 200, 'send'), t, 'send');
        await step(async () => expect(await call('POST', `/api/v1/quotes/${qid}/accept`), 200, 'accept'), t, 'accept');
        await step(async () => expect(await call('POST', `/api/v1/quotes/${qid}/convert`), 201, 'convert'), t, 'convert');
        return t;
      }),
    );
    flows.push(
      await loop(`service calls in-process (knex), ${connections} loops`, connections, async () => {
        const t: Record<string, number> = {};
        let qid = 0;
        await step(async () => (qid = (await knex.transaction((trx) => createQuote(trx, auth, input, 'user'))).quote.id), t, 'create');
        await step(() => knex.transaction(async (trx) => transition(trx, workspace.id, await lockedQuoteForUser(trx, auth, qid), 'sent', 'user')), t, 'send');
        await step(() => knex.transaction((trx) => transitionQuote(trx, auth, qid, 'accepted', 'user')), t, 'accept');
        await step(() => knex.transaction((trx) => convertQuote(trx, auth, qid)), t, 'convert');
        return t;
      }),
    );
    flows.push(
      await loop(`raw SQL through pg, ${connections} loops`, connections, async () => {
        const t: Record<string, number> = {};
        let qid = 0;
        await step(async () => (qid = await rawCreate(raw)), t, 'create');
        await step(() => rawMove(raw, qid, 'sent'), t, 'send');
        await step(() => rawMove(raw, qid, 'accepted'), t, 'accept');
        await step(() => rawConvert(raw, qid), t, 'convert');
        return t;
      }),
    );
    loadTable(
      `b) create (${lineCount} lines) → send (notify: false) → accept → convert, one flow = 4 requests: ${duration} s each after ${warmup} s warm-up`,
      flows,
      'flow',
      flows[0],
    );
    printTable('b) per step: p50 / p99', [
      ['run', 'create', 'send', 'accept', 'convert'],
      ...flows.map((f) => [f.name, ...['create', 'send', 'accept', 'convert'].map((s) => `${msText(percentile(f.steps[s], 50))} / ${msText(percentile(f.steps[s], 99))}`)]),
    ]);
    note(`app: ${(flows[0].rate * 4).toFixed(1)} requests/s in flows; ratio app / raw SQL: ${(flows[0].rate / flows[2].rate).toFixed(2)}; app / service in-process: ${(flows[0].rate / flows[1].rate).toFixed(2)}`);
    results.flow = flows[0];
  }
  await app.stop();
  return results;
}

// ---------------------------------------------------------------- c) the lists

interface ListResult {
  endpoint: string;
  rows: number;
  bytes: number;
  api: number[];
  ttfb: number[];
  raw: number[];
  rssBefore: number;
  rssPeak: number;
  hwm: number | null;
  firstHwm: number | null;
  rssAfter: number;
  samples: number;
}

async function collect(pages: AsyncIterable<string>): Promise<string> {
  const parts: string[] = [];
  for await (const page of pages) parts.push(page);
  return `[${parts.join(',')}]`;
}

async function measureList(
  endpoint: 'quotes' | 'orders',
  ctx: { databaseUrl: string; cookie: string; knex: Knex; auth: Principal },
): Promise<ListResult> {
  // A fresh server per list, so each RSS baseline is an idle server that has answered one small request.
  const app = await startQuoting(ctx.databaseUrl);
  try {
    const pid = app.child.pid!;
    const headers = { cookie: ctx.cookie };
    const ws = await fetch(`${app.url}/api/v1/workspace`, { headers });
    if (ws.status !== 200) throw new Error(`GET /api/v1/workspace answered ${ws.status}`);
    await ws.arrayBuffer();
    const raw = () => collect(endpoint === 'quotes' ? listQuotes(ctx.knex, ctx.auth, {}) : listOrders(ctx.knex, ctx.auth, {}));
    await new Promise((resolve) => setTimeout(resolve, 200));
    const rssBefore = readStatus(pid, 'VmRSS');
    const hwmReset = resetPeak(pid);
    const sampler = await startSampler(pid, sampleMs);
    const result: ListResult = { endpoint, rows, bytes: 0, api: [], ttfb: [], raw: [], rssBefore, rssPeak: 0, hwm: null, firstHwm: null, rssAfter: 0, samples: 0 };
    for (let i = 0; i < warmupRequests + runs; i++) {
      const started = now();
      const res = await fetch(`${app.url}/api/v1/${endpoint}`, { headers });
      const ttfb = now() - started;
      const body = Buffer.from(await res.arrayBuffer());
      const total = now() - started;
      if (res.status !== 200) throw new Error(`GET /api/v1/${endpoint} answered ${res.status}: ${body.toString().slice(0, 300)}`);
      const t0 = now();
      await raw();
      const rawMs = now() - t0;
      if (i === 0) {
        if (hwmReset) result.firstHwm = readStatus(pid, 'VmHWM');
        result.bytes = body.length;
        const list = JSON.parse(body.toString()).data[endpoint] as unknown[];
        if (list.length !== rows) throw new Error(`GET /api/v1/${endpoint}: expected ${rows} rows, got ${list.length}`);
      }
      if (i < warmupRequests) continue;
      result.api.push(total);
      result.ttfb.push(ttfb);
      result.raw.push(rawMs);
    }
    const sampled = await sampler.stop();
    result.rssPeak = sampled.peak;
    result.samples = sampled.samples;
    result.hwm = hwmReset ? readStatus(pid, 'VmHWM') : null;
    result.rssAfter = readStatus(pid, 'VmRSS');
    return result;
  } finally {
    await app.stop();
  }
}

async function lists(databaseUrl: string, knex: Knex): Promise<ListResult[]> {
  // A workspace of its own (signed up on a server of its own), so the quotes made under load above are not in the lists.
  const app = await startQuoting(databaseUrl);
  await new Promise((resolve) => setTimeout(resolve, 5)); // signUp's email has a millisecond timestamp
  const { cookie } = await signUp(app.url);
  const workspace = await workspaceOf(knex, app.url, cookie);
  await app.stop();
  const auth = new Principal(null, workspace, null, 'secret');

  const t0 = now();
  await seedCustomers(knex, workspace.id, 1, CUSTOMERS);
  await seedQuotes(knex, workspace.id, rows);
  await seedOrders(knex, workspace.id, rows);
  note(`\nseeded ${k(CUSTOMERS)} customers, ${k(rows)} quotes and ${k(rows)} orders in ${msText(now() - t0)}`);

  const ctx = { databaseUrl, cookie, knex, auth };
  const results = [await measureList('quotes', ctx), await measureList('orders', ctx)];
  printTable(`c) GET /api/v1/quotes and /api/v1/orders, ${k(rows)} rows each: ${runs} sequential requests after ${warmupRequests} warm-up, one keep-alive connection, a fresh server each`, [
    ['list', 'body', 'min', 'p50', 'max', 'TTFB p50', 'raw p50', 'API / raw'],
    ...results.map((r) => [
      r.endpoint,
      mb(r.bytes),
      msText(Math.min(...r.api)),
      msText(median(r.api)),
      msText(Math.max(...r.api)),
      msText(median(r.ttfb)),
      msText(median(r.raw)),
      (median(r.api) / median(r.raw)).toFixed(2),
    ]),
  ]);
  printTable(`c) server RSS during those ${warmupRequests + runs} requests (sampled every ${sampleMs} ms in a worker thread; VmHWM reset before)`, [
    ['list', 'RSS before', 'peak (sampled)', 'peak (VmHWM)', 'growth', '1st request', 'RSS after', 'samples'],
    ...results.map((r) => [
      r.endpoint,
      mb(r.rssBefore),
      mb(r.rssPeak),
      r.hwm === null ? 'n/a' : mb(r.hwm),
      mb(growth(r)),
      r.firstHwm === null ? 'n/a' : mb(r.firstHwm - r.rssBefore),
      mb(r.rssAfter),
      r.samples,
    ]),
  ]);
  return results;
}

const growth = (r: ListResult) => Math.max(r.rssPeak, r.hwm ?? 0) - r.rssBefore;

function verdict(label: string, ok: boolean, detail: string): void {
  note(`${label}: ${detail} -> ${ok ? 'MET' : 'NOT MET'}`);
}

// ---------------------------------------------------------------- main

runBench(async () => {
  const startedAt = now();
  const databaseUrl = await freshPostgresUrl();
  const db = openPostgres(databaseUrl, connections);
  onCleanup(() => db.close());
  const { rows: [version] } = await db.knex.raw('show server_version');
  const load = () => os.loadavg().map((l) => l.toFixed(1)).join(' / ');
  note(`${os.cpus().length} CPUs, Node ${process.version}, PostgreSQL ${version.server_version}; load generator, servers and PostgreSQL share the machine`);
  note(`load average (1 / 5 / 15 min) at the start: ${load()}`);

  if (parts.has('create') || parts.has('flow')) await writes(databaseUrl, db.knex);
  if (parts.has('lists')) {
    const results = await lists(databaseUrl, db.knex);
    console.log('\nTargets');
    for (const r of results) {
      verdict(`GET /api/v1/${r.endpoint} (${k(rows)}) every request < ${TARGETS.listMs} ms`, Math.max(...r.api) < TARGETS.listMs, `max ${msText(Math.max(...r.api))}, p50 ${msText(median(r.api))}`);
      verdict(`GET /api/v1/${r.endpoint} server RSS growth < ${TARGETS.rssGrowthMb} MB`, growth(r) < TARGETS.rssGrowthMb * MB, mb(growth(r)));
    }
  }
  note(`\nload average at the end: ${load()}; total ${((now() - startedAt) / 1000).toFixed(0)} s`);
});
