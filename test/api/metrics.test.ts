import { spawnSync } from 'node:child_process';
import test from 'ava';
import { startApp, signUpOwner, uniqueEmail, type Owner } from '../helpers/app.js';
import { useOwnerApp } from '../helpers/fixture.js';
import { startReceiver } from '../helpers/receiver.js';
import { captureLogs } from '../helpers/logs.js';
import { testWhen } from '../helpers/skip.js';
import { DeliveryWorker, workerSettings } from '../../src/webhooks/worker.js';

/**
 * GET /metrics: the token, the figures after a known workload (requests, deliveries, an import with errors, tracking
 * events over the cap), the text as promtool reads it, and no tenant data in any label.
 */
const TOKEN = 'metrics-token-for-tests';
const WORKSPACE = 'Zanzibar Planted Workspace';
const { app, owner } = useOwnerApp(test, {
  workspace: WORKSPACE,
  env: { METRICS_TOKEN: TOKEN, OUTBOUND_ALLOWED_CIDRS: '127.0.0.0/8', WEBHOOK_MAX_ATTEMPTS: '1', TRACK_RATE_PER_MINUTE: '3', STRIPE_SECRET_KEY: 'sk_test_metrics', STRIPE_WEBHOOK_SECRET: 'whsec_metrics' },
});

const auth = { authorization: `Bearer ${TOKEN}` };
const scrape = async () => {
  const res = await app.client().get('/metrics', { headers: auth });
  if (res.status !== 200) throw new Error(`scrape: ${res.status} ${res.text}`);
  return res;
};

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The text format's samples (comments left out). */
function samples(text: string): Sample[] {
  return text
    .split('\n')
    .filter((line) => line && !line.startsWith('#'))
    .map((line) => {
      const match = /^(\w+)(?:\{(.*)\})? (\S+)$/.exec(line);
      if (!match) throw new Error(`not a sample: ${line}`);
      const labels: Record<string, string> = {};
      for (const [, key, value] of (match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[key] = value;
      return { name: match[1], labels, value: Number(match[3]) };
    });
}

/** The value of the one sample named `name` whose labels include `labels` (0 when there is none). */
function figure(text: string, name: string, labels: Record<string, string> = {}): number {
  const found = samples(text).filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  if (found.length > 1) throw new Error(`${name} ${JSON.stringify(labels)}: ${found.length} samples`);
  return found[0]?.value ?? 0;
}

const promtool = spawnSync('promtool', ['--version']).status === 0;

// The worker writes outcomes of every workspace: the workload's tests run one at a time.
let customerEmails: string[] = [];
let second: Owner;
let workload: { before: string; after: string; customerIds: number[] };

test.before(async () => {
  const receiver = await startReceiver();
  const worker = new DeliveryWorker(app.db, workerSettings(app.config));
  try {
    // Ids no figure could hold by chance, to search the scrape for.
    for (const table of ['customers', 'workspaces', 'users']) await app.db.raw(`select setval(pg_get_serial_sequence(?, 'id'), 4242000)`, [table]);
    second = await signUpOwner(app, 'Quixotic Second Planted');
    const hook = await owner.client.post('/api/v1/webhooks', { url: `${receiver.url}/hook`, event_types: ['customer.created'] });
    if (hook.status !== 201) throw new Error(hook.text);
    const before = (await scrape()).text;
    // 3 deliveries that succeed, then 1 that dies (one attempt allowed), then 1 left due.
    const customerIds: number[] = [];
    const newCustomer = async () => {
      const email = uniqueEmail('planted.customer');
      customerEmails.push(email);
      const res = await owner.client.post('/api/v1/customers', { email, name: 'Planted Customer' });
      if (res.status !== 201) throw new Error(res.text);
      customerIds.push(res.body.data.customer.id);
    };
    for (let i = 0; i < 3; i++) await newCustomer();
    await worker.runOnce();
    receiver.respondWith((_req, res) => {
      res.statusCode = 500;
      res.end('no');
    });
    await newCustomer();
    await worker.runOnce();
    await newCustomer();
    await app.db('webhook_deliveries').where({ status: 'pending' }).update({ next_attempt_at: app.db.raw("now() - interval '90 seconds'") });
    // 5 reads of a customer (2xx), 2 of one that does not exist (4xx).
    for (let i = 0; i < 5; i++) await owner.client.get(`/api/v1/customers/${customerIds[0]}`);
    for (let i = 0; i < 2; i++) await second.client.get(`/api/v1/customers/${customerIds[0]}`);
    // An import: 2 rows created, 1 failed (a bad price); then one aborted by on_error=abort.
    const csv = 'product_sku,name,type,status,variant_sku,price\r\nP1,One,physical,active,P1-A,5\r\nP2,Two,physical,active,P2-A,7\r\nP3,Three,physical,active,P3-A,cheap\r\n';
    const applied = await owner.client.request('POST', '/api/v1/products/import', { raw: csv, contentType: 'text/csv' });
    if (applied.status !== 200) throw new Error(applied.text);
    const aborted = await owner.client.request('POST', '/api/v1/products/import?on_error=abort', { raw: csv, contentType: 'text/csv' });
    if (aborted.status !== 422) throw new Error(aborted.text);
    // 4 tracking events at a cap of 3 a minute: 3 accepted, 1 capped.
    for (let i = 0; i < 4; i++) {
      await app.client().post('/api/v1/track/event', { visitor_id: `v_planted_${i}`, type: 'page_view', url: 'https://shop.example/p' }, { headers: { authorization: `Public ${owner.keys.public_key}` } });
    }
    const after = (await scrape()).text;
    workload = { before, after, customerIds };
  } finally {
    worker.close();
    await receiver.close();
  }
});

const grew = (name: string, labels: Record<string, string> = {}) => figure(workload.after, name, labels) - figure(workload.before, name, labels);

test('requests by route template and status class, with their latency and those in flight', (t) => {
  const route = '/api/v1/customers/{id}';
  t.is(grew('quoting_http_requests_total', { route, method: 'GET', status: '2xx' }), 5);
  t.is(grew('quoting_http_requests_total', { route, method: 'GET', status: '4xx' }), 2);
  t.is(grew('quoting_http_request_duration_seconds_count', { route, method: 'GET' }), 7);
  t.is(grew('quoting_http_request_duration_seconds_bucket', { route, method: 'GET', le: '+Inf' }), 7);
  t.is(grew('quoting_http_requests_total', { route: '/metrics', method: 'GET', status: '2xx' }), 1, 'the first scrape is counted by the second');
  t.is(figure(workload.after, 'quoting_http_requests_in_flight'), 1, 'the scrape itself');
  t.false(workload.after.includes(`/customers/${workload.customerIds[0]}`), 'never the raw path');
});

test('webhook deliveries by outcome, the queue, and the worker last run', (t) => {
  t.is(grew('quoting_webhook_deliveries_total', { outcome: 'succeeded' }), 3);
  t.is(grew('quoting_webhook_deliveries_total', { outcome: 'dead' }), 1);
  t.is(grew('quoting_webhook_deliveries_total', { outcome: 'failed' }), 0);
  t.is(figure(workload.after, 'quoting_webhook_queue_deliveries', { state: 'due' }), 1);
  t.is(figure(workload.after, 'quoting_webhook_queue_deliveries', { state: 'dead' }), 1);
  t.is(figure(workload.after, 'quoting_webhook_queue_deliveries', { state: 'failed' }), 0);
  t.true(figure(workload.after, 'quoting_webhook_queue_oldest_due_age_seconds') >= 90);
  t.is(grew('quoting_webhook_worker_runs_total'), 2, 'each run housekeeps once');
  const lastRun = figure(workload.after, 'quoting_webhook_worker_last_run_timestamp_seconds');
  t.true(lastRun > Date.now() / 1000 - 600 && lastRun <= Date.now() / 1000 + 5, String(lastRun));
});

test('import rows by outcome and imports by result', (t) => {
  t.is(grew('quoting_import_rows_total', { outcome: 'created' }), 2);
  t.is(grew('quoting_import_rows_total', { outcome: 'failed' }), 1);
  t.is(grew('quoting_import_rows_total', { outcome: 'updated' }), 0);
  t.is(grew('quoting_imports_total', { result: 'applied' }), 1);
  t.is(grew('quoting_imports_total', { result: 'aborted' }), 1);
  t.is(grew('quoting_imports_total', { result: 'failed' }), 0);
});

test('tracking events accepted and capped, the pool, the database size, event-loop lag and process metrics', (t) => {
  t.is(grew('quoting_tracking_events_total', { outcome: 'accepted' }), 3);
  t.is(grew('quoting_tracking_events_total', { outcome: 'capped' }), 1);
  t.true(figure(workload.after, 'quoting_database_size_bytes') > 1_000_000);
  const names = new Set(samples(workload.after).map((s) => s.name));
  for (const name of ['quoting_db_pool_connections_in_use', 'quoting_db_pool_acquires_waiting', 'quoting_nodejs_eventloop_lag_seconds', 'quoting_process_cpu_seconds_total', 'quoting_nodejs_heap_size_used_bytes']) {
    t.true(names.has(name), name);
  }
  // This process's series carry the process; the installation's (read from the database) do not, so they are not summed twice.
  t.true(samples(workload.after).filter((s) => s.name.startsWith('quoting_http_')).every((s) => /^.+:\d+$/.test(s.labels.process ?? '')));
  t.false(samples(workload.after).some((s) => s.name.startsWith('quoting_webhook_') && 'process' in s.labels));
});

testWhen(promtool, 'needs promtool (Debian package prometheus)')('promtool check metrics accepts the text', async (t) => {
  const checked = spawnSync('promtool', ['check', 'metrics'], { input: workload.after, encoding: 'utf8' });
  t.is(checked.status, 0, `${checked.stdout}${checked.stderr}`);
});

test('no label carries tenant data: workspace name, slug, ids, keys, emails', (t) => {
  const planted = [WORKSPACE, owner.workspace.slug, owner.email, owner.keys.public_key, second.workspace.slug, second.email, ...customerEmails, 'Planted', 'planted'];
  for (const value of planted) t.false(workload.after.includes(value), value);
  t.true(second.workspace.id > 4242000 && workload.customerIds[0] > 4242000, 'the planted ids are the bumped ones');
  for (const id of [second.workspace.id, second.user.id, ...workload.customerIds]) t.false(workload.after.includes(String(id)), String(id));
  t.false(workload.after.includes('@'), 'no email');
});

test('the token is required: 401 without it, with a wrong one, or as another scheme; GET only', async (t) => {
  for (const headers of [{} as Record<string, string>, { authorization: 'Bearer wrong' }, { authorization: `Bearer ${TOKEN}x` }, { authorization: TOKEN }, { authorization: `Basic ${TOKEN}` }]) {
    const res = await app.client().get('/metrics', { headers });
    t.is(res.status, 401, JSON.stringify(headers));
    t.is(res.headers.get('www-authenticate'), 'Bearer realm="metrics"');
    t.false(res.text.includes('quoting_'));
  }
  const post = await app.client().post('/metrics', {}, { headers: auth });
  t.is(post.status, 405);
  const ok = await app.client().get('/metrics', { headers: auth });
  t.is(ok.status, 200);
  t.regex(ok.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
});

test('without METRICS_TOKEN, /metrics is 404 whatever the header', async (t) => {
  const off = await startApp({});
  t.teardown(() => off.close());
  for (const headers of [{} as Record<string, string>, auth]) t.is((await off.client().get('/metrics', { headers })).status, 404);
});

test('every log line is JSON with time, level, msg, and within a request its id and route template', async (t) => {
  const { logs } = await captureLogs(async () => {
    await app.client().post('/api/v1/payments/stripe/webhook', { id: 'evt' }, { headers: { 'stripe-signature': 't=1,v1=00', 'x-request-id': 'req-planted-1' } });
    await signUpOwner(app, 'Logs Shop');
  }, 'info');
  for (const line of logs) for (const key of ['time', 'level', 'msg']) t.true(key in line, `${key} in ${JSON.stringify(line)}`);
  const rejected = logs.find((l) => l.msg === 'stripe webhook signature rejected');
  t.like(rejected, { level: 'warn', request_id: 'req-planted-1', route: '/api/v1/payments/stripe/webhook' });
  const access = logs.find((l) => l.msg === 'request' && l.request_id === 'req-planted-1');
  t.like(access, { level: 'info', route: '/api/v1/payments/stripe/webhook', status: 400 });
  const signup = logs.find((l) => l.msg === 'request' && l.path === '/api/v1/auth/signup');
  t.like(signup, { route: '/api/v1/auth/signup', status: 201 });
  t.regex(signup?.request_id ?? '', /^[0-9a-f-]{36}$/);
  const unknown = await captureLogs(() => app.client().get('/no/such/thing'), 'info');
  t.like(unknown.logs.find((l) => l.msg === 'request'), { route: null, status: 404 });
});
