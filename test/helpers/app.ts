import http from 'node:http';
import test from 'ava';
import type { AddressInfo } from 'node:net';
import type { Knex } from 'knex';
import { loadConfig, type Config } from '../../src/config.js';
import { createApp } from '../../src/server/app.js';
import { createMailer } from '../../src/mail/mailer.js';
import { setLogLevel } from '../../src/log.js';
import { followOwnAuthChanges, SessionCache } from '../../src/auth/session-cache.js';
import { Client } from './client.js';
import { QUOTE_RANGE_BITS } from '../../src/quotes/service.js';
import { cookieProblems } from './cookies.js';
import { PATIENCE_MS } from './patience.js';
import { acrossWorkspaces, freshDatabase, type TestDatabase } from './database.js';

setLogLevel((process.env.TEST_LOG_LEVEL as 'debug') ?? 'silent');

export interface TestApp {
  url: string;
  /** For the test's own statements, on rows of any workspace (see acrossWorkspaces); the app's is `database.knex`. */
  db: Knex;
  database: TestDatabase;
  config: Config;
  /** The app's session cache: a test that edits sessions, users or workspaces in SQL evicts it, as the app's own writes do. */
  sessionCache: SessionCache;
  client(): Client;
  close(): Promise<void>;
}

export interface StartOptions {
  /** The test provokes a 500 on purpose. */
  allowServerErrors?: boolean;
}

/** Answers that broke the contract, in any app of this test file: a hook below fails the file on them. */
const problems: string[] = [];

test.after.always('every answer matched its documented response, no cookie lacked its flags, nothing answered 500', (t) => {
  if (problems.length) t.fail(`the app broke its contract:\n${[...new Set(problems)].join('\n')}`);
  else t.pass();
});

/**
 * The real app on an ephemeral port over a fresh database; `env` overrides settings. Every success
 * answer is checked against its route's response schema (see `checkResponses` in src/http/api.ts):
 * a mismatch is a 500 and printed at once; it and any other 500 fail the test file's last hook.
 */
export async function startApp(env: Record<string, string> = {}, database?: TestDatabase, options: StartOptions = {}): Promise<TestApp> {
  const db = database ?? (await freshDatabase());
  const server = http.createServer();
  // The client (fetch) reuses a connection for 4 s; a server closing idle ones after Node's 5 s can race
  // it on a stalled event loop and the request fails with "fetch failed". Idle connections stay open.
  server.keepAliveTimeout = PATIENCE_MS;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;
  const config = loadConfig({ APP_URL: url, PORT: String(port), ...env });
  const mailer = createMailer(config.SMTP_URL, config.MAIL_FROM);
  const sessionCache = new SessionCache();
  // This process's own changes evict it, as in `quoting serve` (which also hears other processes' by NOTIFY).
  const stopFollowing = followOwnAuthChanges(sessionCache);
  const checkResponses = (problem: string) => {
    problems.push(problem);
    process.stderr.write(`response contract: ${problem}\n`);
  };
  const handle = createApp({ db: db.knex, config, mailer, sessionCache, checkResponses }).callback();
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    res.on('finish', () => {
      const route = `${req.method} ${req.url?.split('?')[0]}`;
      if (res.statusCode === 500 && !options.allowServerErrors) problems.push(`${route} answered 500`);
      // Every cookie the app sets, on any route, keeps the session cookie's flags.
      const forwarded = String(req.headers['x-forwarded-proto'] ?? '').split(',')[0].trim();
      const https = config.TRUST_PROXY && forwarded === 'https';
      for (const cookie of [res.getHeader('set-cookie') ?? []].flat()) {
        for (const problem of cookieProblems(String(cookie), https)) problems.push(`${route}: ${problem}`);
      }
    });
    return handle(req, res);
  });
  return {
    url,
    db: acrossWorkspaces(db.knex),
    database: db,
    config,
    sessionCache,
    client: () => new Client(url),
    close: async () => {
      stopFollowing();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      mailer?.close();
      // A database a test took away is not checked.
      const stale = await staleListTexts(db.knex).catch(() => []);
      const miscounted = await staleQuoteCounts(db.knex).catch(() => []);
      await db.close();
      if (stale.length) throw new Error(`list texts out of step with their tables (migration 20261126200000): ${stale.join(', ')}`);
      if (miscounted.length) throw new Error(`quote counts out of step with the quotes (migration 20261127160000): ${miscounted.join(', ')}`);
    },
  };
}

/** The lists' texts tables (migration 20261126200000_list_texts) and their tables' texts. */
const LIST_TEXTS = [
  ['quote_texts', 'quotes', 'api_json'],
  ['order_texts', 'orders', 'api_json'],
  ['customer_texts', 'customers', 'api_json'],
  ['product_texts', 'products', 'list_json'],
];

/**
 * Every copy an unfiltered list reads must be its row's text, and every row must have one: whatever this test file's
 * writes were, `<table>: n` for each table that has rows without a text, texts without a row, or texts that differ.
 */
export async function staleListTexts(db: Knex): Promise<string[]> {
  const counts = LIST_TEXTS.map(([texts, table, text]) => `/* all workspaces: the test's check of every text */ select '${table}' as "table", count(*)::int as n from ${table} r
    full join ${texts} t on t.workspace_id = r.workspace_id and t.id = r.id where r.${text} is distinct from t.json`);
  const { rows } = await db.raw(counts.join(' union all '));
  return rows.filter((r: { n: number }) => r.n > 0).map((r: { table: string; n: number }) => `${r.table}: ${r.n}`);
}

/**
 * The kept quote counts that differ from counting the quotes, whatever this test file's writes were: quote_counts by
 * workspace, channel and status, or quote_ranges by those and range of ids. `kept|counted: workspace w, channel c,
 * status s[, range r]: n` for each row either side has and the other has not (a count of zero and no row alike).
 * `workspaceId` limits the check to one workspace.
 */
async function staleKeptCounts(db: Knex, table: 'quote_counts' | 'quote_ranges', workspaceId?: number): Promise<string[]> {
  const where = workspaceId === undefined ? '' : `where workspace_id = ${Number(workspaceId)}`;
  const [range, bucket] = table === 'quote_ranges' ? [`, id >> ${QUOTE_RANGE_BITS} as bucket`, ', bucket'] : ['', ''];
  const { rows } = await db.raw(`/* all workspaces: the test's check of every count */
    with counted as (select workspace_id, channel_id, status${range}, count(*)::int as n from quotes ${where} group by 1, 2, 3${bucket}),
      kept as (select workspace_id, channel_id, status${bucket}, n from ${table} ${where ? `${where} and` : 'where'} n <> 0)
    select 'kept' as side, k.* from (select * from kept except select * from counted) k
    union all
    select 'counted', c.* from (select * from counted except select * from kept) c
    order by 2, 3, 4, 5, 1`);
  return rows.map(
    (r: { side: string; workspace_id: number; channel_id: number | null; status: string; bucket?: number; n: number }) =>
      `${r.side}: workspace ${r.workspace_id}, channel ${r.channel_id ?? 'none'}, status ${r.status}${r.bucket === undefined ? '' : `, range ${r.bucket}`}: ${r.n}`,
  );
}

/** The kept quote counts by channel and status (quote_counts) that differ from counting the quotes (staleKeptCounts). */
export const staleQuoteCounts = (db: Knex, workspaceId?: number) => staleKeptCounts(db, 'quote_counts', workspaceId);

/** The kept quote counts by range of ids (quote_ranges) that differ from counting the quotes by range (staleKeptCounts). */
export const staleQuoteRanges = (db: Knex) => staleKeptCounts(db, 'quote_ranges');

let counter = 0;

/** A unique email per call, so tests in one file never collide. */
export function uniqueEmail(prefix = 'user'): string {
  return `${prefix}.${process.pid}.${Date.now()}.${++counter}@example.com`;
}

export interface Owner {
  client: Client;
  email: string;
  password: string;
  user: any;
  workspace: any;
  keys: { public_key: string; secret_key: string };
}

/** Signs up a user with a workspace; the client holds the session. */
export async function signUpOwner(app: TestApp, workspaceName = 'Acme'): Promise<Owner> {
  const client = app.client();
  const email = uniqueEmail('owner');
  const password = 'correct horse battery';
  const res = await client.post('/api/v1/auth/signup', { email, password, name: 'Olive Owner', workspace_name: workspaceName });
  if (res.status !== 201) throw new Error(`signup failed: ${res.status} ${res.text}`);
  return { client, email, password, user: res.body.data.user, workspace: res.body.data.workspace, keys: res.body.data.keys };
}
