/**
 * Quote creation and the quote flow on the real app (`node bin/quoting serve` over a fresh migrated PostgreSQL
 * database, and over a fresh embedded data directory), against the same work as one SQL statement, measured in
 * the same run on the same kind of database, in alternating rounds
 * (baseline, app, baseline, app, …; `--rounds` (3) of each, `--duration` (5) s each after one `--warmup` (2) s
 * of each, discarded):
 *  a) create — `POST /api/v1/quotes` with 1, 20 and 50 lines (`--line-counts`) under load (autocannon,
 *     `--connections` (10)); baseline: one transaction holding one statement that does the same work
 *     on the same tables (prices looked up by SKU, quote, lines, totals in numeric, the gap-free number,
 *     activity, event with the same body), looped at the same concurrency;
 *  b) flow — create (20 lines), send (notify: false), accept, convert, one after the other, in `--connections`
 *     concurrent loops; baseline: the one-statement creation and each move's writes.
 * The baseline's statements go through pg on PostgreSQL. On the embedded default they go to a PGlite in this
 * process, opened on a copy of the server's data directory taken once the workspace, customer and product were
 * made (the same migrated schema and rows); PGlite has one connection, so its transactions queue, as the app's do.
 * The lists are in bench/lists.ts.
 *   node dist/bench/quotes.js [--db postgres,embedded] [--duration 5] [--warmup 2] [--rounds 3] [--connections 10] [--line-counts 1,20,50]
 *                             [--parts create,flow]
 */
import os from 'node:os';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import autocannon from 'autocannon';
import pg from 'pg';
import type { Knex } from 'knex';
import { openPglite, openPostgres, type Database } from '../src/db/database.js';
import { Principal } from '../src/http/principal.js';
import type { Workspace } from '../src/accounts.js';
import { eventId } from '../src/events/outbox.js';
import { createQuoteBody } from '../src/quotes/schema.js';
import { createQuote } from '../src/quotes/service.js';
import { benchArgs, databasesOption, dbName, freshDataDir, freshPostgresUrl, median, note, onCleanup, percentile, printTable, spread, runBench, signUp, startEmbedded, startQuoting, copyDataDir, loadAverage, type ChildServer, type DbKind } from './lib.js';

const { values } = benchArgs('quotes.js', {
  db: { type: 'string', default: 'postgres,embedded' },
  duration: { type: 'string', default: '5' },
  warmup: { type: 'string', default: '2' },
  connections: { type: 'string', default: '10' },
  'line-counts': { type: 'string', default: '1,20,50' },
  rounds: { type: 'string', default: '3' },
  parts: { type: 'string', default: 'create,flow' },
});
const duration = Number(values.duration);
const warmup = Number(values.warmup);
const connections = Number(values.connections);
const lineCounts = values['line-counts'].split(',').map(Number);
const rounds = Math.max(3, Number(values.rounds));
const FLOW_LINES = 20;
const parts = new Set(values.parts.split(',').map((p) => p.trim()));

const TARGETS = { createRatio: 0.5, fiftyVsOne: 1.5 };

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

// ---------------------------------------------------------------- the baseline: raw SQL (pg, or PGlite in this process)

/**
 * A quote's creation as one statement: the SKUs' prices looked up, the quote with its totals in numeric
 * (half-up), its lines, the gap-free number from the counter row (held until the commit, as in the app),
 * the activity and the event with the app's body. Triggers on the tables fire as for the app.
 */
const CREATE_ONE_STATEMENT = `
  with input as (
    select i.ord, v.id as variant_id, i.sku, coalesce(i.description, p.name || coalesce(', ' || v.name, '')) as description,
           i.quantity, coalesce(i.price, v.price) as price
    from rows from (json_to_recordset($3::json) as (sku text, description text, quantity numeric, price numeric)) with ordinality as i(sku, description, quantity, price, ord)
    left join variants v on v.workspace_id = $1 and v.sku = i.sku
    left join products p on p.workspace_id = $1 and p.id = v.product_id
  ), t as (
    select coalesce(sum(round(quantity * price, 2)), 0) as subtotal from input
  ), n as (
    insert into quote_numbers (workspace_id, year, last_number) values ($1, $2, 1)
    on conflict (workspace_id, year) do update set last_number = quote_numbers.last_number + 1
    returning last_number
  ), q as (
    insert into quotes (workspace_id, quote_number, customer_id, customer_name, customer_email, currency, discount_amount, tax_rate, notes,
                        valid_until, public_token, subtotal, tax_amount, total)
    select $1, 'Q-' || $2 || '-' || lpad(n.last_number::text, 6, '0'), c.id, c.name, c.email, $5, $6::numeric, $7::numeric, $8, $9::date, $10,
           t.subtotal, round((t.subtotal - $6::numeric) * $7::numeric / 100, 2), t.subtotal - $6::numeric + round((t.subtotal - $6::numeric) * $7::numeric / 100, 2)
    from n, t, customers c where c.workspace_id = $1 and c.id = $4
    returning id, quote_number
  ), l as (
    insert into quote_lines (workspace_id, quote_id, variant_id, sku, description, quantity, price, line_total)
    select $1, q.id, i.variant_id, i.sku, i.description, i.quantity, i.price, round(i.quantity * i.price, 2) from q, input i order by i.ord
  ), a as (
    insert into quote_activities (workspace_id, quote_id, type, actor, message) select $1, q.id, 'created', 'user', 'Quote ' || q.quote_number || ' created.' from q
  ), e as (
    insert into events (id, workspace_id, type, data) values ($11, $1, 'quote.created', $12)
  )
  select id from q`;

type Query = (text: string, params: unknown[]) => Promise<{ rows: any[] }>;

/** Where the baseline's statements go: one transaction at a time per connection. */
interface Sql {
  transaction<T>(work: (query: Query) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

function pgSql(databaseUrl: string): Sql {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: connections, application_name: 'quoting-bench-raw' });
  return {
    async transaction(work) {
      const c = await pool.connect();
      try {
        await c.query('begin');
        const result = await work((text, params) => c.query(text, params));
        await c.query('commit');
        return result;
      } catch (err) {
        await c.query('rollback').catch(() => undefined);
        throw err;
      } finally {
        c.release();
      }
    },
    close: () => pool.end(),
  };
}

/** PGlite's one connection: its transaction() holds it (begin … commit) while the others wait. */
function pgliteSql(pglite: PGlite): Sql {
  return {
    transaction: (work) => pglite.transaction((tx) => work((text, params) => tx.query(text, params))),
    close: async () => {},
  };
}

interface Raw {
  sql: Sql;
  workspaceId: number;
  catalogue: Catalogue;
  body: ReturnType<typeof quoteBody>;
  /** The `quote.created` event's data as the app writes it (quote and lines), so the event rows weigh the same. */
  eventData: string;
}

function rawCreate(raw: Raw): Promise<number> {
  const { workspaceId: ws, body, catalogue } = raw;
  return raw.sql.transaction(async (query) => {
    const { rows } = await query(CREATE_ONE_STATEMENT, [
      ws, new Date().getUTCFullYear(), JSON.stringify(body.lines), catalogue.customerId, body.currency, body.discount_amount, body.tax_rate,
      body.notes, body.valid_until, eventId(), eventId(), raw.eventData,
    ]);
    return Number(rows[0].id);
  });
}

/** A transition's writes: lock, status and its timestamp, activity, event. */
function rawMove(raw: Raw, id: number, to: 'sent' | 'accepted'): Promise<void> {
  return raw.sql.transaction(async (query) => {
    await query('select id from quotes where workspace_id = $1 and id = $2 for update', [raw.workspaceId, id]);
    await query(`update quotes set status = $3, ${to}_at = now(), updated_at = now() where workspace_id = $1 and id = $2`, [raw.workspaceId, id, to]);
    await query(`insert into quote_activities (workspace_id, quote_id, type, actor, message) values ($1, $2, $3, 'user', 'Moved.')`, [raw.workspaceId, id, to]);
    await query(`insert into events (id, workspace_id, type, data) values ($1, $2, $3, $4)`, [eventId(), raw.workspaceId, `quote.${to}`, raw.eventData]);
  });
}

/** The conversion's writes: lock, the order, its items copied from the lines, its totals, activity, event. */
function rawConvert(raw: Raw, id: number): Promise<void> {
  const ws = raw.workspaceId;
  return raw.sql.transaction(async (query) => {
    await query('select id from quotes where workspace_id = $1 and id = $2 for update', [ws, id]);
    const {
      rows: [order],
    } = await query(
      `insert into orders (workspace_id, order_number, external_source, external_id, status, customer_id, channel_id, quote_id, currency, discount_amount, tax_amount, placed_at)
       select workspace_id, quote_number, 'quote', 'quote:' || id, 'pending', customer_id, channel_id, id, currency, discount_amount, tax_amount, now()
       from quotes where workspace_id = $1 and id = $2 returning id`,
      [ws, id],
    );
    await query(
      `insert into order_items (workspace_id, order_id, sku, description, quantity, price, line_total)
       select workspace_id, $1, sku, description, quantity, price, line_total from quote_lines where quote_id = $2 and workspace_id = $3 order by id`,
      [order.id, id, ws],
    );
    await query(
      `update orders o set subtotal = t.subtotal, total = t.subtotal - o.discount_amount + o.tax_amount, updated_at = now()
       from (select coalesce(sum(line_total), 0) as subtotal from order_items where order_id = $1 and workspace_id = $2) t
       where o.id = $1 and o.workspace_id = $2`,
      [order.id, ws],
    );
    await query(`insert into quote_activities (workspace_id, quote_id, type, actor, message) values ($1, $2, 'converted', 'user', 'Converted.')`, [ws, id]);
    await query(`insert into events (id, workspace_id, type, data) values ($1, $2, 'order.created', $3)`, [eventId(), ws, raw.eventData]);
  });
}

// ---------------------------------------------------------------- a) and b)

async function workspaceOf(knex: Knex, baseUrl: string, cookie: string): Promise<Workspace> {
  const data = expect(await client(baseUrl, cookie)('GET', '/api/v1/workspace'), 200, 'GET /api/v1/workspace');
  return (await knex('workspaces').where({ id: data.workspace.id }).first()) as Workspace;
}


/** Baseline and app in alternating rounds; returns the rates of each. */
async function alternate(baseline: () => Promise<Load>, app: () => Promise<Load>): Promise<{ baseline: Load[]; app: Load[] }> {
  const result = { baseline: [] as Load[], app: [] as Load[] };
  for (let round = 0; round < rounds; round++) {
    result.baseline.push(await baseline());
    result.app.push(await app());
  }
  return result;
}

/** A signed-up workspace with a customer and a priced variant, made through the API. */
async function makeAccount(app: ChildServer): Promise<{ cookie: string; catalogue: Catalogue }> {
  const { cookie } = await signUp(app.url);
  const call = client(app.url, cookie);
  const customer = expect(await call('POST', '/api/v1/customers', { email: 'buyer@example.com', name: 'Bench Buyer', company: 'Bench Buyer GmbH' }), 201, 'POST /customers');
  const product = expect(
    await call('POST', '/api/v1/products', { sku: 'BENCH', name: 'Bench product', variants: [{ sku: 'BENCH-1', name: 'Standard', price: '24.90' }] }),
    201,
    'POST /products',
  );
  return { cookie, catalogue: { customerId: customer.customer.id, variantId: product.product.variants[0].id, variantSku: 'BENCH-1', variantPrice: '24.90' } };
}

interface Setup {
  kind: DbKind;
  app: ChildServer;
  cookie: string;
  catalogue: Catalogue;
  /** The baseline's statements. */
  sql: Sql;
  /** This process's knex on the baseline's database (the same rows): the checks and the statement count. */
  knex: Knex;
  version: string;
}

async function setUp(kind: DbKind): Promise<Setup> {
  if (kind === 'postgres') {
    const databaseUrl = await freshPostgresUrl();
    const db = openPostgres(databaseUrl, connections);
    onCleanup(() => db.close());
    const app = await startQuoting(databaseUrl);
    const sql = pgSql(databaseUrl);
    onCleanup(() => sql.close());
    const { rows: [version] } = await db.knex.raw('show server_version');
    return { kind, app, ...(await makeAccount(app)), sql, knex: db.knex, version: `PostgreSQL ${version.server_version}` };
  }
  // The data directory is the server's alone: copied for the baseline while no server holds it.
  const dataDir = await freshDataDir('quotes');
  const first = await startEmbedded(dataDir);
  const account = await makeAccount(first);
  await first.stop();
  const copy = copyDataDir(dataDir, 'quotes-baseline');
  const app = await startEmbedded(dataDir);
  const pglite = new PGlite(path.join(copy, 'pglite'));
  const db: Database = await openPglite(pglite);
  onCleanup(() => db.close());
  const { rows: [version] } = await pglite.query<{ server_version: string }>('show server_version');
  return { kind, app, ...account, sql: pgliteSql(pglite), knex: db.knex, version: `PGlite (PostgreSQL ${version.server_version})` };
}

async function writes({ kind, app, cookie, catalogue, sql, knex }: Setup) {
  const call = client(app.url, cookie);
  const workspace = await workspaceOf(knex, app.url, cookie);
  // Secret-key principal: sees every channel, as the owner does.
  const auth = new Principal(null, workspace, null, 'secret');
  const headers = { cookie, 'content-type': 'application/json' };

  /** One creation checked (answer, totals, the baseline's row equal to the app's), and the statements it costs. */
  const prepare = async (lines: number) => {
    const body = quoteBody(catalogue, lines);
    const first = await call('POST', '/api/v1/quotes', body);
    const created = expect(first, 201, 'POST /api/v1/quotes');
    if (created.lines.length !== lines) throw new Error(`expected ${lines} lines, got ${created.lines.length}`);
    if (created.quote.total !== expectedTotal(catalogue, body)) throw new Error(`quote total ${created.quote.total}, expected ${expectedTotal(catalogue, body)}`);
    const raw: Raw = { sql, workspaceId: workspace.id, catalogue, body, eventData: JSON.stringify(created) };
    const rawId = await rawCreate(raw);
    const [rawRow, rawLines] = await Promise.all([
      knex('quotes').where({ id: rawId }).first('total', 'subtotal', 'tax_amount'),
      knex('quote_lines').where({ quote_id: rawId }).orderBy('id').select('description', 'price', 'line_total'),
    ]);
    const appLines = created.lines.map((l: any) => [l.description, l.price, l.line_total].join('|')).join(',');
    if (rawRow.total !== created.quote.total || rawLines.map((l: any) => [l.description, l.price, l.line_total].join('|')).join(',') !== appLines) {
      throw new Error(`the baseline writes other rows than the app (total ${rawRow.total} vs ${created.quote.total})`);
    }
    const statements: string[] = [];
    const onQuery = (q: { sql: string }) => statements.push(q.sql);
    knex.on('query', onQuery);
    await knex.transaction((trx) => createQuote(trx, auth.access, createQuoteBody.parse(body)));
    knex.off('query', onQuery);
    // knex reports the transaction's BEGIN and COMMIT among its queries: the count includes them.
    return { body, bodyText: JSON.stringify(body), first, created, raw, statements: statements.length };
  };

  if (parts.has('create')) {
    const rows: (string | number)[][] = [];
    const medians: Record<number, number> = {};
    const baselineMedians: Record<number, number> = {};
    for (const lines of lineCounts) {
      const { bodyText, raw, statements } = await prepare(lines);
      const url = `${app.url}/api/v1/quotes`;
      const runBaseline = () => loop(`one statement, ${lines} lines`, connections, async () => void (await rawCreate(raw)));
      const runApp = () => cannon(`app, ${lines} lines`, url, { method: 'POST', headers, body: bodyText, connections });
      const { baseline, app: api } = await alternate(runBaseline, runApp);
      const rate = (ls: Load[]) => ls.map((l) => l.rate);
      medians[lines] = median(rate(api));
      baselineMedians[lines] = median(rate(baseline));
      const ratio = median(rate(api)) / median(rate(baseline));
      const perRound = api.map((l, round) => l.rate / baseline[round].rate);
      rows.push([lines, statements, spread(rate(baseline), 1), spread(rate(api), 1), `${ratio.toFixed(2)}${lines !== 20 || ratio >= TARGETS.createRatio ? '' : ' !'}`, spread(perRound, 2),
        `${median(api.map((l) => l.p50)).toFixed(0)} / ${median(api.map((l) => l.p99)).toFixed(0)} ms`]);
    }
    printTable(
      `${dbName(kind)}: a) POST /api/v1/quotes at ${connections} connections: ${rounds} alternating rounds of ${duration} s (baseline, app), each after ${warmup} s discarded; req/s min / median / max`,
      [['lines', 'statements (app)', 'one SQL statement', 'app', 'app / baseline', 'app / baseline of the same round', 'app p50 / p99 (median round)'], ...rows],
    );
    if (medians[1] && medians[50]) {
      const slower = medians[1] / medians[50];
      note(`1-line rate / 50-line rate (app medians): ${slower.toFixed(2)} (target <= ${TARGETS.fiftyVsOne}${slower <= TARGETS.fiftyVsOne ? '' : ', NOT MET'})`);
      // What the lines cost the database itself: the one statement's own ratio, and each side's time per extra line.
      const perLine = (m: Record<number, number>) => ((1 / m[50] - 1 / m[1]) * 1e6) / 49;
      note(
        `  the one statement's own ratio: ${(baselineMedians[1] / baselineMedians[50]).toFixed(2)}; time per extra line at ${connections} connections ` +
          `(from the medians' 1- and 50-line rates): app ${perLine(medians).toFixed(0)} µs, one statement ${perLine(baselineMedians).toFixed(0)} µs`,
      );
    }
  }

  if (parts.has('flow')) {
    const { body, raw } = await prepare(FLOW_LINES);
    const step = async (fn: () => Promise<unknown>, timings: Record<string, number>, name: string) => {
      const t0 = now();
      await fn();
      timings[name] = now() - t0;
    };
    const appFlow = () =>
      loop(`app, ${connections} loops (fetch, keep-alive)`, connections, async () => {
        const t: Record<string, number> = {};
        let qid = 0;
        await step(async () => (qid = expect(await call('POST', '/api/v1/quotes', body), 201, 'create').quote.id), t, 'create');
        await step(async () => expect(await call('POST', `/api/v1/quotes/${qid}/send`, { notify: false }), 200, 'send'), t, 'send');
        await step(async () => expect(await call('POST', `/api/v1/quotes/${qid}/accept`), 200, 'accept'), t, 'accept');
        await step(async () => expect(await call('POST', `/api/v1/quotes/${qid}/convert`), 201, 'convert'), t, 'convert');
        return t;
      });
    const rawFlow = () =>
      loop(`raw SQL, ${connections} loops`, connections, async () => {
        const t: Record<string, number> = {};
        let qid = 0;
        await step(async () => (qid = await rawCreate(raw)), t, 'create');
        await step(() => rawMove(raw, qid, 'sent'), t, 'send');
        await step(() => rawMove(raw, qid, 'accepted'), t, 'accept');
        await step(() => rawConvert(raw, qid), t, 'convert');
        return t;
      });
    const { baseline, app: flows } = await alternate(rawFlow, appFlow);
    const rate = (ls: Load[]) => ls.map((l) => l.rate);
    printTable(`${dbName(kind)}: b) create (${FLOW_LINES} lines) → send → accept → convert: ${rounds} alternating rounds of ${duration} s; flows/s min / median / max`, [
      ['run', 'flows/s', 'create p50', 'send p50', 'accept p50', 'convert p50'],
      ...[['raw SQL', baseline] as const, ['app', flows] as const].map(([name, ls]) => [
        name, spread(rate(ls), 1), ...['create', 'send', 'accept', 'convert'].map((s) => `${median(ls.map((l) => percentile(l.steps[s], 50))).toFixed(1)} ms`),
      ]),
    ]);
    note(`app / raw SQL (medians): ${(median(rate(flows)) / median(rate(baseline))).toFixed(2)}`);
  }
  await app.stop();
}

// ---------------------------------------------------------------- main

runBench(async () => {
  const startedAt = now();
  note(`${os.cpus().length} CPUs, Node ${process.version}; load generator, servers and the database share the machine`);
  for (const kind of databasesOption(values.db)) {
    note(`\nload average at the start of ${dbName(kind)}: ${loadAverage()}`);
    const setup = await setUp(kind);
    note(`${setup.version}; baseline through ${kind === 'postgres' ? 'pg' : 'a PGlite in this process, on a copy of the data directory'}`);
    await writes(setup);
  }
  note(`\nload average at the end: ${loadAverage()}; total ${((now() - startedAt) / 1000).toFixed(0)} s`);
});
