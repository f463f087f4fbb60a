import http from 'node:http';
import type { AddressInfo } from 'node:net';
import test from 'ava';
import type { ExecutionContext } from 'ava';
import { signUpOwner, uniqueEmail, type Owner } from '../helpers/app.js';
import { useApp } from '../helpers/fixture.js';
import { startReceiver } from '../helpers/receiver.js';
import { loadConfig } from '../../src/config.js';
import { DeliveryWorker, workerSettings } from '../../src/webhooks/worker.js';

// Every worker run drains the whole queue, so the tests run one at a time, each in its own workspace.
const { app } = useApp(test, { env: { OUTBOUND_ALLOWED_CIDRS: '127.0.0.0/8' } });
let worker: DeliveryWorker;
test.before(() => {
  worker = new DeliveryWorker(app.db, workerSettings(app.config));
});
test.after.always(() => worker?.close());
test.afterEach.always(async () => {
  await app.db('webhook_deliveries').whereIn('status', ['pending', 'failed']).update({ status: 'dead' });
});

const RETRY_DELAYS = [30, 120, 600, 3600, 21_600];

/** A worker with other deployment settings, read from the environment as the program does. */
function workerWith(t: ExecutionContext, env: Record<string, string>): DeliveryWorker {
  const w = new DeliveryWorker(app.db, workerSettings(loadConfig(env)));
  t.teardown(() => w.close());
  return w;
}

async function setup(t: ExecutionContext, url?: (receiverUrl: string) => string, eventTypes: string[] = ['*']) {
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  const owner = await signUpOwner(app);
  const res = await owner.client.post('/api/v1/webhooks', { url: url ? url(receiver.url) : `${receiver.url}/hook`, event_types: eventTypes });
  t.is(res.status, 201, res.text);
  const sub = res.body.data.subscription;
  receiver.secrets.push(sub.signing_secret);
  return { receiver, owner, sub };
}

async function newCustomer(owner: Owner, fields: Record<string, unknown> = {}) {
  const res = await owner.client.post('/api/v1/customers', { email: uniqueEmail('cust'), name: 'Cus Tomer', ...fields });
  if (res.status !== 201) throw new Error(`customer: ${res.status} ${res.text}`);
  return res.body.data.customer;
}

const rowsOf = (subscriptionId: number) => app.db('webhook_deliveries').where({ subscription_id: subscriptionId }).orderBy('id');
const rowOf = async (subscriptionId: number) => {
  const rows = await rowsOf(subscriptionId);
  if (rows.length !== 1) throw new Error(`expected one delivery, found ${rows.length}`);
  return rows[0];
};
const makeDue = (id: number) => app.db('webhook_deliveries').where({ id }).update({ next_attempt_at: app.db.fn.now() });
/** next_attempt_at − last_attempt_at, in seconds, read from the row. */
async function retryGap(id: number): Promise<number> {
  const { rows } = await app.db.raw('select extract(epoch from next_attempt_at - last_attempt_at) as gap from webhook_deliveries where id = ?', [id]);
  return Number(rows[0].gap);
}
const answer = (status: number, body?: string | Buffer) => (_req: http.IncomingMessage, res: http.ServerResponse) => {
  res.statusCode = status;
  res.end(body);
};
const signedAt = (header: unknown) => Number(/(?:^|,)t=(\d+)(?:,|$)/.exec(String(header))?.[1]);

test.serial('pending → succeeded: one POST, signed over the exact body, data shaped as the API returns it', async (t) => {
  const { receiver, owner, sub } = await setup(t);
  const customer = await newCustomer(owner, { name: 'Zoë "Ünïcode" 😀 \\ </script>', company: 'Ümlaut & Co' });
  const pending = await rowOf(sub.id);
  t.like(pending, { status: 'pending', attempts: 0, last_attempt_at: null, last_status_code: null, delivered_at: null });

  await worker.runOnce();
  t.is(receiver.received.length, 1);
  const [got] = receiver.received;
  t.deepEqual(got.verifiedWith, [sub.signing_secret]);
  t.is(Number(got.headers['content-length']), Buffer.byteLength(got.raw));
  t.is(got.headers['content-type'], 'application/json; charset=utf-8');
  t.is(got.headers['user-agent'], 'Service-Webhooks/1');
  t.is(got.headers['service-event'], 'customer.created');
  t.is(got.headers['service-attempt'], '1');
  t.regex(got.headers['service-signature'] as string, /^t=\d+,v1=[0-9a-f]{64}$/);
  t.deepEqual(Object.keys(got.body), ['id', 'type', 'created', 'organization_id', 'data']);
  t.regex(got.body.id, /^evt_[0-9A-HJKMNP-TV-Z]{26}$/);
  t.is(got.headers['service-event-id'], got.body.id);
  t.is(got.body.type, 'customer.created');
  t.true(Number.isInteger(got.body.created) && Math.abs(got.body.created - Date.now() / 1000) < 60);
  t.is(got.body.organization_id, owner.workspace.id);
  t.deepEqual(got.body.data, { customer });

  const done = await rowOf(sub.id);
  t.like(done, { status: 'succeeded', attempts: 1, last_status_code: 200, last_error: null, response_body: 'ok', event_id: got.body.id });
  t.truthy(done.delivered_at);
  t.truthy(done.last_attempt_at);

  // updated and deleted carry the API's JSON too (the deleted one: the snapshot the DELETE answered).
  const patched = await owner.client.patch(`/api/v1/customers/${customer.id}`, { notes: 'multi\nline\ttab' });
  const deleted = await owner.client.delete(`/api/v1/customers/${customer.id}`);
  await worker.runOnce();
  t.is(receiver.received.length, 3);
  const byType = Object.fromEntries(receiver.received.map((r) => [r.body.type, r]));
  t.deepEqual(byType['customer.updated'].body.data, { customer: patched.body.data.customer });
  t.deepEqual(byType['customer.deleted'].body.data, { customer: deleted.body.data.customer });
  for (const r of receiver.received) t.deepEqual(r.verifiedWith, [sub.signing_secret]);
  t.deepEqual((await rowsOf(sub.id)).map((r) => r.status), ['succeeded', 'succeeded', 'succeeded']);
});

test.serial('any 2xx succeeds; 3xx, 4xx and 5xx fail with the status recorded and a retry in 30 s', async (t) => {
  const { receiver, owner, sub } = await setup(t);
  for (const status of [200, 201, 202, 204, 299]) {
    receiver.respondWith(answer(status, status === 204 ? undefined : `answer ${status}`));
    await newCustomer(owner);
    await worker.runOnce();
    const row = (await rowsOf(sub.id)).at(-1);
    t.like(row, { status: 'succeeded', attempts: 1, last_status_code: status, last_error: null }, String(status));
    t.truthy(row.delivered_at);
  }
  for (const status of [300, 304, 400, 401, 404, 410, 429, 500, 502, 503]) {
    receiver.respondWith(answer(status, status === 304 ? undefined : `answer ${status}`));
    await newCustomer(owner);
    await worker.runOnce();
    const row = (await rowsOf(sub.id)).at(-1);
    t.like(row, { status: 'failed', attempts: 1, last_status_code: status, delivered_at: null }, String(status));
    t.truthy(row.last_error, String(status));
    t.is(await retryGap(row.id), 30, String(status));
  }
  t.is(receiver.received.length, 15);
});

test.serial('redirects are not followed: the 3xx is the outcome, a failure', async (t) => {
  const { receiver, owner, sub } = await setup(t);
  const paths: string[] = [];
  for (const status of [301, 302, 303, 307, 308]) {
    receiver.respondWith((req, res) => {
      paths.push(req.url!);
      if (req.url === '/hook') {
        res.writeHead(status, { Location: `${receiver.url}/moved` });
        res.end();
      } else res.end('followed');
    });
    await newCustomer(owner);
    await worker.runOnce();
    t.like((await rowsOf(sub.id)).at(-1), { status: 'failed', attempts: 1, last_status_code: status }, String(status));
  }
  t.deepEqual(paths, ['/hook', '/hook', '/hook', '/hook', '/hook']);
});

test.serial('the retry schedule is exact (30 s, 2 min, 10 min, 1 h, 6 h); attempts 1..6 are freshly signed; then dead for good', async (t) => {
  const { receiver, owner, sub } = await setup(t);
  receiver.respondWith(answer(500, 'still down'));
  await newCustomer(owner);
  const { id } = await rowOf(sub.id);
  // An old event: each attempt is signed at send time, not at the event's time.
  await app.db('events').where({ id: (await rowOf(sub.id)).event_id }).update({ created_at: app.db.raw(`now() - interval '2 hours'`) });

  let previousT = 0;
  for (let n = 1; n <= 6; n++) {
    await worker.runOnce();
    t.is(receiver.received.length, n, `attempt ${n}`);
    const got = receiver.received[n - 1];
    t.is(got.headers['service-attempt'], String(n));
    t.deepEqual(got.verifiedWith, [sub.signing_secret], `attempt ${n}`);
    const signed = signedAt(got.headers['service-signature']);
    t.true(Math.abs(signed - got.at / 1000) <= 2, `attempt ${n}: t=${signed}, received at ${got.at / 1000}`);
    t.true(signed >= previousT);
    previousT = signed;
    t.true(got.body.created < signed - 3600);
    t.is(got.raw, receiver.received[0].raw); // same envelope every time
    const row = await app.db('webhook_deliveries').where({ id }).first();
    t.like(row, { attempts: n, last_status_code: 500, response_body: 'still down' });
    if (n < 6) {
      t.is(row.status, 'failed', `attempt ${n}`);
      t.is(await retryGap(id), RETRY_DELAYS[n - 1], `after failure ${n}`);
      const api = (await owner.client.get(`/api/v1/webhooks/deliveries/${id}`)).body.data.delivery;
      t.is(Date.parse(api.next_attempt_at), new Date(row.next_attempt_at).getTime());
      // Not due yet: a run now sends nothing.
      await worker.runOnce();
      t.is(receiver.received.length, n);
      await makeDue(id);
    } else {
      t.is(row.status, 'dead');
      t.is(row.delivered_at, null);
    }
  }
  // Dead is final: even when "due", it is never tried again.
  await makeDue(id);
  await worker.runOnce();
  await worker.runOnce();
  t.is(receiver.received.length, 6);
  t.like(await app.db('webhook_deliveries').where({ id }).first(), { status: 'dead', attempts: 6 });
});

test.serial('failed → succeeded on a retry; the outcome of the last attempt is what is recorded', async (t) => {
  const { receiver, owner, sub } = await setup(t);
  receiver.respondWith(answer(503, 'busy'));
  await newCustomer(owner);
  await worker.runOnce();
  const failed = await rowOf(sub.id);
  t.like(failed, { status: 'failed', attempts: 1, last_status_code: 503, response_body: 'busy', delivered_at: null });
  t.truthy(failed.last_error);

  receiver.respondWith(answer(201, 'thanks'));
  await makeDue(failed.id);
  await worker.runOnce();
  t.is(receiver.received.length, 2);
  t.is(receiver.received[1].headers['service-attempt'], '2');
  t.deepEqual(receiver.received[1].verifiedWith, [sub.signing_secret]);
  const done = await rowOf(sub.id);
  t.like(done, { status: 'succeeded', attempts: 2, last_status_code: 201, last_error: null, response_body: 'thanks' });
  t.truthy(done.delivered_at);
  t.like((await owner.client.get(`/api/v1/webhooks/deliveries/${done.id}`)).body.data.delivery, { status: 'succeeded', attempts: 2, last_status_code: 201 });
});

test.serial('pending → dead when the subscription is paused or deleted; resend puts a dead delivery back on the queue', async (t) => {
  const { receiver, owner, sub } = await setup(t);
  await newCustomer(owner);
  t.is((await rowOf(sub.id)).status, 'pending');
  t.is((await owner.client.patch(`/api/v1/webhooks/${sub.id}`, { active: false })).status, 200);
  const paused = await rowOf(sub.id);
  t.like(paused, { status: 'dead', attempts: 0 });
  await worker.runOnce();
  t.is(receiver.received.length, 0);

  // Resumed, then resent: back on the queue, due now, with the attempt count starting over.
  t.is((await owner.client.patch(`/api/v1/webhooks/${sub.id}`, { active: true })).status, 200);
  t.is((await rowOf(sub.id)).status, 'dead');
  const resent = await owner.client.post(`/api/v1/webhooks/deliveries/${paused.id}/resend`);
  t.is(resent.status, 200);
  t.like(resent.body.data.delivery, { status: 'pending', attempts: 0 });
  await worker.runOnce();
  t.is(receiver.received.length, 1);
  t.is(receiver.received[0].headers['service-attempt'], '1');
  t.deepEqual(receiver.received[0].verifiedWith, [sub.signing_secret]);
  t.like(await rowOf(sub.id), { status: 'succeeded', attempts: 1 });

  // A dead-lettered delivery (six failures) can be resent too, and its schedule starts over.
  receiver.respondWith(answer(500));
  await app.db('webhook_deliveries').where({ id: paused.id }).update({ status: 'dead', attempts: 6 });
  await owner.client.post(`/api/v1/webhooks/deliveries/${paused.id}/resend`);
  await worker.runOnce();
  t.is(receiver.received.at(-1)!.headers['service-attempt'], '1');
  t.like(await rowOf(sub.id), { status: 'failed', attempts: 1 });
  t.is(await retryGap(paused.id), 30);

  // Deleted: the pending delivery is dead, kept as history, never sent.
  const other = await setup(t);
  await newCustomer(other.owner);
  t.is((await rowOf(other.sub.id)).status, 'pending');
  t.is((await other.owner.client.delete(`/api/v1/webhooks/${other.sub.id}`)).status, 200);
  t.like(await rowOf(other.sub.id), { status: 'dead', attempts: 0 });
  await makeDue((await rowOf(other.sub.id)).id);
  await worker.runOnce();
  t.is(other.receiver.received.length, 0);
});

test.serial('the stored response body is the first 8 KB; NUL bytes and invalid UTF-8 do not break recording', async (t) => {
  const { receiver, owner, sub } = await setup(t);
  const big = Array.from({ length: 20 * 1024 / 16 }, (_, i) => i.toString(16).padStart(15, '0') + '\n').join('');
  t.is(Buffer.byteLength(big), 20 * 1024);
  receiver.respondWith(answer(200, big));
  await newCustomer(owner);
  await worker.runOnce();
  const row = (await rowsOf(sub.id)).at(-1);
  t.is(row.status, 'succeeded');
  t.is(row.response_body, big.slice(0, 8192));
  const api = (await owner.client.get(`/api/v1/webhooks/deliveries/${row.id}`)).body.data.delivery;
  t.is(api.response_body, big.slice(0, 8192));

  // Same on a failure.
  receiver.respondWith(answer(500, big));
  await newCustomer(owner);
  await worker.runOnce();
  t.like((await rowsOf(sub.id)).at(-1), { status: 'failed', last_status_code: 500, response_body: big.slice(0, 8192) });

  for (const [status, body] of [
    [200, Buffer.from('before\u0000after')],
    [500, Buffer.from('\u0000\u0000 error \u0000')],
    [200, Buffer.from([0x6f, 0x6b, 0xff, 0xfe, 0xc3, 0x00, 0x21])],
  ] as const) {
    receiver.respondWith(answer(status, body));
    await newCustomer(owner);
    await worker.runOnce();
    const recorded = (await rowsOf(sub.id)).at(-1);
    t.like(recorded, { status: status === 200 ? 'succeeded' : 'failed', attempts: 1, last_status_code: status });
    t.is(typeof recorded.response_body, 'string');
    t.false(recorded.response_body.includes('\u0000'));
  }
  const withNul = (await rowsOf(sub.id)).at(-3);
  t.regex(withNul.response_body, /before.*after/);
  const res = await owner.client.get(`/api/v1/webhooks/${sub.id}/deliveries`);
  t.is(res.status, 200);
  t.is(res.body.data.deliveries.length, 5);
});

test.serial('a receiver that never answers times out (WEBHOOK_TIMEOUT_SECONDS) and the attempt fails', async (t) => {
  const { receiver, owner, sub } = await setup(t);
  const slow = workerWith(t, { OUTBOUND_ALLOWED_CIDRS: '127.0.0.0/8', WEBHOOK_TIMEOUT_SECONDS: '0.5' });
  receiver.respondWith(() => {}); // never answers
  await newCustomer(owner);
  const started = Date.now();
  await slow.runOnce();
  const elapsed = Date.now() - started;
  t.true(elapsed >= 450, `gave up after ${elapsed} ms, before the 0.5 s timeout`); // no upper bound: a loaded machine is slow
  t.is(receiver.received.length, 1);
  const row = await rowOf(sub.id);
  t.like(row, { status: 'failed', attempts: 1, last_status_code: null, delivered_at: null });
  t.regex(row.last_error, /time/i);
  t.is(await retryGap(row.id), 30);

  // Headers sent but the body never finished: still a timeout, still a failure.
  receiver.respondWith((_req, res) => {
    res.writeHead(200);
    res.write('partial');
  });
  await newCustomer(owner);
  await slow.runOnce();
  const stalled = (await rowsOf(sub.id)).at(-1);
  t.like(stalled, { status: 'failed', attempts: 1, delivered_at: null });
  t.regex(stalled.last_error, /time/i);
});

test.serial('a refused connection is a failed attempt with the network error recorded', async (t) => {
  const closed = http.createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const { port } = closed.address() as AddressInfo;
  await new Promise((resolve) => closed.close(resolve));
  const { owner, sub } = await setup(t, () => `http://127.0.0.1:${port}/hook`);
  await newCustomer(owner);
  await worker.runOnce();
  const row = await rowOf(sub.id);
  t.like(row, { status: 'failed', attempts: 1, last_status_code: null, response_body: null, delivered_at: null });
  t.regex(row.last_error, /ECONNREFUSED|refused/i);
  t.is(await retryGap(row.id), 30);
});

test.serial('without OUTBOUND_ALLOWED_CIDRS loopback and private targets are refused, checked on the resolved IP', async (t) => {
  const strict = workerWith(t, {});
  const { receiver, owner, sub } = await setup(t);
  await newCustomer(owner);
  await strict.runOnce();
  t.is(receiver.received.length, 0);
  const row = await rowOf(sub.id);
  t.like(row, { status: 'failed', attempts: 1, last_status_code: null });
  t.regex(row.last_error, /refused/i);
  t.regex(row.last_error, /loopback/i);

  // A hostname is resolved first and the address it resolves to is what is checked.
  const named = await setup(t, (url) => url.replace('127.0.0.1', 'localhost'));
  await newCustomer(named.owner);
  await strict.runOnce();
  t.is(named.receiver.received.length, 0);
  const refused = await rowOf(named.sub.id);
  t.like(refused, { status: 'failed', attempts: 1 });
  t.regex(refused.last_error, /refused/i);
  t.regex(refused.last_error, /127\.0\.0\.1|::1/);
  // With the range allowed, the same hostname is delivered to.
  await makeDue(refused.id);
  await worker.runOnce();
  t.is(named.receiver.received.length, 1);
  t.deepEqual(named.receiver.received[0].verifiedWith, [named.sub.signing_secret]);
  t.like(await rowOf(named.sub.id), { status: 'succeeded', attempts: 2 });

  // Other non-public literals are refused before any connection is tried.
  for (const host of ['10.1.2.3', '192.168.0.10', '172.16.5.4', '169.254.169.254', '0.0.0.0', '[::1]', '[::ffff:127.0.0.1]', '[fe80::1]', '[fd00::1]', '[64:ff9b::7f00:1]', '[2002:7f00:1::1]', '[2001:0:4136:e378:8000:63bf:3fff:fdd2]']) {
    const target = await setup(t, () => `http://${host}:9/hook`);
    await newCustomer(target.owner);
    await strict.runOnce();
    const r = await rowOf(target.sub.id);
    t.like(r, { status: 'failed', attempts: 1, last_status_code: null }, host);
    t.regex(r.last_error, /refused/i, host);
  }
});

test.serial('a claim walks the due queue in order: 100 of 3,000 due rows without statistics reads about 100, not all of them', async (t) => {
  const { owner, sub } = await setup(t);
  const { body } = await owner.client.get('/api/v1/workspace');
  const workspaceId = body.data.workspace.id;
  // A burst just committed: no ANALYZE has seen these rows, so the planner guesses their number.
  await app.db.raw(
    `insert into events (id, workspace_id, type, data) select 'evt_claimwalk' || lpad(i::text, 17, '0'), ?, 'customer.created', '{}'::jsonb from generate_series(1, 3000) i`,
    [workspaceId],
  );
  await app.db.raw(
    `insert into webhook_deliveries (workspace_id, subscription_id, event_id, event_type) select ?, ?, id, type from events where id like 'evt_claimwalk%' order by id`,
    [workspaceId, sub.id],
  );
  // Taken and given back (rolled back): the locks and the statistics of this transaction only.
  const trx = await app.db.transaction();
  let claimed: number;
  let fetched: number;
  try {
    ({ rows: [{ claimed }] } = await trx.raw('select count(*)::int as claimed from webhook_due_deliveries(8, 100)'));
    ({ rows: [{ fetched }] } = await trx.raw(`select idx_tup_fetch::int as fetched from pg_stat_xact_user_tables where relname = 'webhook_deliveries'`));
  } finally {
    await trx.rollback();
  }
  t.is(claimed, 100);
  // The walk reads the rows it takes (and any held by other claims); reading and sorting every due row read 3,000.
  t.true(fetched < 400, `rows fetched: ${fetched}`);
});
