import test from 'ava';
import type { ExecutionContext } from 'ava';
import { signUpOwner, uniqueEmail, type Owner } from '../helpers/app.js';
import { useApp } from '../helpers/fixture.js';
import { startReceiver, verifySignature } from '../helpers/receiver.js';
import { inviteMember } from '../helpers/members.js';
import { DeliveryWorker, workerSettings } from '../../src/webhooks/worker.js';

// The worker drains every workspace's queue, so the tests run one at a time.
const { app, smtp } = useApp(test, { env: { OUTBOUND_ALLOWED_CIDRS: '127.0.0.0/8' }, smtp: true });
let worker: DeliveryWorker;
test.before(() => {
  worker = new DeliveryWorker(app.db, workerSettings(app.config));
});
test.after.always(() => worker?.close());
// Nothing one test queued is left for the next one's worker run.
test.afterEach.always(async () => {
  await app.db('webhook_deliveries').whereIn('status', ['pending', 'failed']).update({ status: 'dead' });
});

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/;
const DELIVERY_FIELDS = [
  'id', 'subscription_id', 'event_id', 'event_type', 'status', 'attempts', 'next_attempt_at', 'last_status_code', 'last_error',
  'response_body', 'created_at', 'updated_at', 'delivered_at',
];

async function newReceiver(t: ExecutionContext) {
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  return receiver;
}

async function subscribe(t: ExecutionContext, owner: Owner, body: Record<string, unknown>) {
  const res = await owner.client.post('/api/v1/webhooks', body);
  t.is(res.status, 201, res.text);
  return res.body.data.subscription;
}

async function newCustomer(owner: Owner, fields: Record<string, unknown> = {}) {
  const res = await owner.client.post('/api/v1/customers', { email: uniqueEmail('cust'), name: 'Cus Tomer', ...fields });
  if (res.status !== 201) throw new Error(`customer: ${res.status} ${res.text}`);
  return res.body.data.customer;
}

const rowsOf = (subscriptionId: number) => app.db('webhook_deliveries').where({ subscription_id: subscriptionId }).orderBy('id');
const signatures = (header: unknown) => String(header).split(',').filter((part) => part.startsWith('v1='));

test.serial('POST /webhooks answers 201 with the subscription and its whsec_ secret; the list never shows secrets', async (t) => {
  const owner = await signUpOwner(app);
  const res = await owner.client.post('/api/v1/webhooks', { url: 'https://hooks.example.com/in', event_types: ['customer.*', 'quote.accepted'], description: 'CRM sync' });
  t.is(res.status, 201);
  t.is(res.body.version, 'v1');
  const sub = res.body.data.subscription;
  t.like(sub, { organization_id: owner.workspace.id, url: 'https://hooks.example.com/in', event_types: ['customer.*', 'quote.accepted'], active: true, description: 'CRM sync' });
  t.true(Number.isInteger(sub.id));
  t.regex(sub.signing_secret, /^whsec_[A-Za-z0-9_-]{20,}$/);
  t.regex(sub.created_at, ISO);
  t.regex(sub.updated_at, ISO);

  const byDefault = await subscribe(t, owner, { url: 'http://plain.example.com/hook' });
  t.deepEqual(byDefault.event_types, ['*']);
  t.is(byDefault.description, null);
  t.not(byDefault.signing_secret, sub.signing_secret);
  const emptied = await subscribe(t, owner, { url: 'http://plain.example.com/empty', event_types: [] });
  t.deepEqual(emptied.event_types, ['*']);

  const list = await owner.client.get('/api/v1/webhooks');
  t.is(list.status, 200);
  t.deepEqual(list.body.data.subscriptions.map((s: any) => s.id), [sub.id, byDefault.id, emptied.id]);
  for (const listed of list.body.data.subscriptions) t.false('signing_secret' in listed);
  for (const secret of [sub.signing_secret, byDefault.signing_secret, emptied.signing_secret]) t.false(list.text.includes(secret));
  const { signing_secret: _secret, ...withoutSecret } = sub;
  t.deepEqual(list.body.data.subscriptions[0], withoutSecret);

  // Another workspace sees none of them.
  const other = await signUpOwner(app, 'Other');
  t.deepEqual((await other.client.get('/api/v1/webhooks')).body.data.subscriptions, []);
  // No session: 401.
  t.is((await app.client().get('/api/v1/webhooks')).status, 401);
});

test.serial('url must be an absolute http(s) URL: 422 naming url, on create and on update', async (t) => {
  const owner = await signUpOwner(app);
  for (const url of ['ftp://example.com/hook', '/relative/hook', 'hook', 'not a url at all', '::::', 'http://', 'javascript:alert(1)', 'mailto:a@example.com', '', 42]) {
    const res = await owner.client.post('/api/v1/webhooks', { url });
    t.is(res.status, 422, `url ${JSON.stringify(url)}`);
    t.regex(res.body.error, /\burl\b/, `url ${JSON.stringify(url)}`);
  }
  const missing = await owner.client.post('/api/v1/webhooks', { event_types: ['*'] });
  t.is(missing.status, 422);
  t.regex(missing.body.error, /\burl\b/);
  const malformed = await owner.client.request('POST', '/api/v1/webhooks', { raw: '{"url": "https://x.example', contentType: 'application/json' });
  t.is(malformed.status, 422);
  t.regex(malformed.body.error, /\burl\b/);
  t.deepEqual((await owner.client.get('/api/v1/webhooks')).body.data.subscriptions, []);

  const sub = await subscribe(t, owner, { url: 'https://ok.example.com/hook' });
  const bad = await owner.client.patch(`/api/v1/webhooks/${sub.id}`, { url: 'ftp://example.com/hook' });
  t.is(bad.status, 422);
  t.regex(bad.body.error, /\burl\b/);
  t.is((await owner.client.get('/api/v1/webhooks')).body.data.subscriptions[0].url, 'https://ok.example.com/hook');
});

test.serial('event_types entries are validated: 422 naming event_types.N', async (t) => {
  const owner = await signUpOwner(app);
  const cases: [unknown, RegExp][] = [
    [['*', 'customer.exploded'], /event_types\.1\b/],
    [['nope'], /event_types\.0\b/],
    [['customer.created', 'customer.updated', 42], /event_types\.2\b/],
    [['quote.*', 'quote'], /event_types\.1\b/],
    [['customer.*', 'widgets.*'], /event_types\.1\b/],
    ['*', /event_types\b/],
  ];
  for (const [eventTypes, field] of cases) {
    const res = await owner.client.post('/api/v1/webhooks', { url: 'https://ok.example.com/hook', event_types: eventTypes });
    t.is(res.status, 422, JSON.stringify(eventTypes));
    t.regex(res.body.error, field, JSON.stringify(eventTypes));
  }
  t.deepEqual((await owner.client.get('/api/v1/webhooks')).body.data.subscriptions, []);
  const sub = await subscribe(t, owner, { url: 'https://ok.example.com/hook', event_types: ['customer.created'] });
  const bad = await owner.client.patch(`/api/v1/webhooks/${sub.id}`, { event_types: ['customer.created', 'bogus'] });
  t.is(bad.status, 422);
  t.regex(bad.body.error, /event_types\.1\b/);
  t.deepEqual((await owner.client.get('/api/v1/webhooks')).body.data.subscriptions[0].event_types, ['customer.created']);
});

test.serial('PATCH and PUT are partial updates of url, event_types, description and active; no secret in the answer', async (t) => {
  const owner = await signUpOwner(app);
  const sub = await subscribe(t, owner, { url: 'https://a.example.com/hook', event_types: ['customer.*'], description: 'first' });
  const path = `/api/v1/webhooks/${sub.id}`;

  const described = await owner.client.patch(path, { description: 'second' });
  t.is(described.status, 200);
  t.like(described.body.data.subscription, { id: sub.id, url: 'https://a.example.com/hook', event_types: ['customer.*'], description: 'second', active: true });
  t.false('signing_secret' in described.body.data.subscription);
  t.true(Date.parse(described.body.data.subscription.updated_at) >= Date.parse(sub.updated_at));

  const moved = await owner.client.put(path, { url: 'http://b.example.com/hook' });
  t.is(moved.status, 200);
  t.like(moved.body.data.subscription, { url: 'http://b.example.com/hook', event_types: ['customer.*'], description: 'second', active: true });

  const narrowed = await owner.client.patch(path, { event_types: ['customer.updated', 'quote.*'] });
  t.like(narrowed.body.data.subscription, { url: 'http://b.example.com/hook', event_types: ['customer.updated', 'quote.*'], description: 'second' });
  const widened = await owner.client.put(path, { event_types: [] });
  t.deepEqual(widened.body.data.subscription.event_types, ['*']);

  const paused = await owner.client.patch(path, { active: false });
  t.like(paused.body.data.subscription, { active: false, url: 'http://b.example.com/hook', event_types: ['*'], description: 'second' });
  const resumed = await owner.client.put(path, { active: 'true' });
  t.like(resumed.body.data.subscription, { active: true, url: 'http://b.example.com/hook', event_types: ['*'], description: 'second' });

  const nothing = await owner.client.patch(path, {});
  t.is(nothing.status, 200);
  t.like(nothing.body.data.subscription, { active: true, url: 'http://b.example.com/hook', event_types: ['*'], description: 'second' });
  const cleared = await owner.client.patch(path, { description: null });
  t.is(cleared.body.data.subscription.description, null);

  const listed = (await owner.client.get('/api/v1/webhooks')).body.data.subscriptions;
  t.deepEqual(listed, [cleared.body.data.subscription]);
  t.is(listed[0].created_at, sub.created_at);
});

test.serial('a member reads subscriptions and deliveries but changes nothing: create, update, rotate, delete and resend are 403', async (t) => {
  const owner = await signUpOwner(app);
  const member = await inviteMember(app, smtp, owner);
  const sub = await subscribe(t, owner, { url: 'https://a.example.com/hook', event_types: ['customer.created'], description: 'keep me' });
  await newCustomer(owner);
  const [delivery] = await rowsOf(sub.id);
  const path = `/api/v1/webhooks/${sub.id}`;
  const snapshot = async () => ({
    subscriptions: await app.db('webhook_subscriptions').where({ workspace_id: owner.workspace.id }).orderBy('id'),
    deliveries: await app.db('webhook_deliveries').where({ subscription_id: sub.id }).orderBy('id'),
  });
  const before = await snapshot();

  const listed = await member.client.get('/api/v1/webhooks');
  t.is(listed.status, 200);
  t.deepEqual(listed.body.data.subscriptions.map((s: any) => s.id), [sub.id]);
  const deliveries = await member.client.get(`${path}/deliveries`);
  t.is(deliveries.status, 200);
  t.deepEqual(deliveries.body.data.deliveries.map((d: any) => d.id), [Number(delivery.id)]);
  t.is((await member.client.get(`/api/v1/webhooks/deliveries/${delivery.id}`)).status, 200);

  const attempts = [
    await member.client.post('/api/v1/webhooks', { url: 'https://outside.example.net/steal', event_types: ['quote.*'] }),
    await member.client.patch(path, { url: 'https://outside.example.net/steal' }),
    await member.client.put(path, { description: 'by member' }),
    await member.client.post(`${path}/rotate-secret`),
    await member.client.delete(path),
    await member.client.post(`/api/v1/webhooks/deliveries/${delivery.id}/resend`),
  ];
  for (const refused of attempts) {
    t.is(refused.status, 403, refused.text);
    t.is(typeof refused.body.error, 'string');
    t.false(refused.text.includes('whsec_'));
  }
  t.deepEqual(await snapshot(), before);

  const [shown] = (await owner.client.get('/api/v1/webhooks')).body.data.subscriptions;
  const deleted = await owner.client.delete(path);
  t.is(deleted.status, 200);
  t.is(deleted.body.version, 'v1');
  t.deepEqual(deleted.body.data.subscription, shown);
  t.false('signing_secret' in deleted.body.data.subscription);
  t.deepEqual((await owner.client.get('/api/v1/webhooks')).body.data.subscriptions, []);
  t.is((await owner.client.delete(path)).status, 404);
  t.is((await owner.client.patch(path, { active: true })).status, 404);
  t.is((await owner.client.post(`${path}/rotate-secret`)).status, 404);
  t.is((await owner.client.get(`${path}/deliveries`)).status, 404);
});

test.serial("another workspace's subscriptions and deliveries are 404; malformed ids are 400", async (t) => {
  const receiver = await newReceiver(t);
  const owner = await signUpOwner(app);
  const stranger = await signUpOwner(app, 'Stranger');
  const sub = await subscribe(t, owner, { url: `${receiver.url}/hook` });
  await newCustomer(owner);
  await worker.runOnce();
  const [row] = await rowsOf(sub.id);
  t.is(row.status, 'succeeded');
  const before = await app.db('webhook_subscriptions').where({ id: sub.id }).first();

  const attempts: [string, string, unknown?][] = [
    ['PATCH', `/api/v1/webhooks/${sub.id}`, { active: false }],
    ['PUT', `/api/v1/webhooks/${sub.id}`, { url: 'https://evil.example.com/' }],
    ['DELETE', `/api/v1/webhooks/${sub.id}`],
    ['POST', `/api/v1/webhooks/${sub.id}/rotate-secret`, {}],
    ['GET', `/api/v1/webhooks/${sub.id}/deliveries`],
    ['GET', `/api/v1/webhooks/deliveries/${row.id}`],
    ['POST', `/api/v1/webhooks/deliveries/${row.id}/resend`, {}],
  ];
  for (const [method, path, json] of attempts) {
    const res = await stranger.client.request(method, path, json === undefined ? {} : { json });
    t.is(res.status, 404, `${method} ${path}`);
    t.is(typeof res.body.error, 'string');
  }
  t.deepEqual(await app.db('webhook_subscriptions').where({ id: sub.id }).first(), before);
  t.like(await app.db('webhook_deliveries').where({ id: row.id }).first(), { status: 'succeeded', attempts: 1 });
  t.is(receiver.received.length, 1);

  // The owner's own unknown ids answer the same.
  t.is((await owner.client.patch('/api/v1/webhooks/999999', {})).status, 404);
  t.is((await owner.client.get('/api/v1/webhooks/999999/deliveries')).status, 404);
  t.is((await owner.client.get('/api/v1/webhooks/deliveries/999999')).status, 404);
  t.is((await owner.client.post('/api/v1/webhooks/deliveries/999999/resend')).status, 404);

  for (const [method, path] of [
    ['PATCH', '/api/v1/webhooks/abc'],
    ['PUT', '/api/v1/webhooks/0'],
    ['DELETE', '/api/v1/webhooks/1.5'],
    ['DELETE', '/api/v1/webhooks/-1'],
    ['POST', '/api/v1/webhooks/abc/rotate-secret'],
    ['GET', '/api/v1/webhooks/abc/deliveries'],
    ['GET', '/api/v1/webhooks/99999999999/deliveries'],
    ['GET', '/api/v1/webhooks/deliveries/xyz'],
    ['POST', '/api/v1/webhooks/deliveries/1e3/resend'],
  ]) {
    const res = await owner.client.request(method, path, method === 'GET' || method === 'DELETE' ? {} : { json: {} });
    t.is(res.status, 400, `${method} ${path}`);
    t.is(typeof res.body.error, 'string');
  }
});

test.serial('filter semantics: *, prefix, exact, several entries deliver once, [] stored is silent', async (t) => {
  const receiver = await newReceiver(t);
  const owner = await signUpOwner(app);
  const subs = {
    all: await subscribe(t, owner, { url: `${receiver.url}/all`, event_types: ['*'] }),
    prefix: await subscribe(t, owner, { url: `${receiver.url}/prefix`, event_types: ['customer.*'] }),
    exact: await subscribe(t, owner, { url: `${receiver.url}/exact`, event_types: ['customer.updated'] }),
    several: await subscribe(t, owner, { url: `${receiver.url}/several`, event_types: ['*', 'customer.created', 'customer.*'] }),
    quotes: await subscribe(t, owner, { url: `${receiver.url}/quotes`, event_types: ['quote.*', 'order.created'] }),
    silent: await subscribe(t, owner, { url: `${receiver.url}/silent` }),
  };
  await app.db('webhook_subscriptions').where({ id: subs.silent.id }).update({ event_types: app.db.raw(`'{}'::text[]`) });

  const customer = await newCustomer(owner);
  t.is((await owner.client.patch(`/api/v1/customers/${customer.id}`, { name: 'Renamed' })).status, 200);
  t.is((await owner.client.delete(`/api/v1/customers/${customer.id}`)).status, 200);

  const types = async (sub: any) => (await rowsOf(sub.id)).map((r) => r.event_type);
  const everything = ['customer.created', 'customer.updated', 'customer.deleted'];
  t.deepEqual(await types(subs.all), everything);
  t.deepEqual(await types(subs.prefix), everything);
  t.deepEqual(await types(subs.exact), ['customer.updated']);
  t.deepEqual(await types(subs.several), everything);
  t.deepEqual(await types(subs.quotes), []);
  t.deepEqual(await types(subs.silent), []);
  for (const row of await app.db('webhook_deliveries').where({ workspace_id: owner.workspace.id })) {
    t.like(row, { status: 'pending', attempts: 0 });
  }
  const listed = await owner.client.get(`/api/v1/webhooks/${subs.exact.id}/deliveries`);
  t.like(listed.body.data.deliveries, [{ subscription_id: subs.exact.id, event_type: 'customer.updated', status: 'pending', attempts: 0 }]);
  t.is(listed.body.data.deliveries.length, 1);

  const paths: string[] = [];
  receiver.respondWith((req, res) => {
    paths.push(req.url!);
    res.end('ok');
  });
  await worker.runOnce();
  const idsAt = (path: string) => receiver.received.filter((_r, i) => paths[i] === path).map((r) => r.body.id);
  t.is(idsAt('/all').length, 3);
  t.is(idsAt('/prefix').length, 3);
  t.is(idsAt('/exact').length, 1);
  t.is(idsAt('/several').length, 3);
  t.is(new Set(idsAt('/several')).size, 3);
  t.deepEqual(idsAt('/quotes'), []);
  t.deepEqual(idsAt('/silent'), []);
  t.is(receiver.received.length, 10);
  const eventIds = await app.db('events').where({ workspace_id: owner.workspace.id }).orderBy('created_at').pluck('id');
  t.is(eventIds.length, 3);
  const count = (id: string) => receiver.received.filter((r) => r.body.id === id).length;
  // created: all, prefix, several (once); updated: all, prefix, exact, several; deleted: all, prefix, several.
  t.deepEqual(eventIds.map(count), [3, 4, 3]);
  for (const sub of Object.values(subs)) {
    for (const row of await rowsOf(sub.id)) t.is(row.status, 'succeeded');
  }
});

test.serial('a workspace without subscriptions queues no deliveries', async (t) => {
  const owner = await signUpOwner(app);
  await newCustomer(owner);
  t.is((await app.db('events').where({ workspace_id: owner.workspace.id })).length, 1);
  t.is((await app.db('webhook_deliveries').where({ workspace_id: owner.workspace.id })).length, 0);
});

test.serial('a paused subscription gets no rows for new events; resuming delivers new events again', async (t) => {
  const receiver = await newReceiver(t);
  const owner = await signUpOwner(app);
  const sub = await subscribe(t, owner, { url: `${receiver.url}/hook` });
  receiver.secrets.push(sub.signing_secret);
  t.is((await owner.client.patch(`/api/v1/webhooks/${sub.id}`, { active: false })).status, 200);
  await newCustomer(owner, { name: 'While paused' });
  t.deepEqual(await rowsOf(sub.id), []);
  t.deepEqual((await owner.client.get(`/api/v1/webhooks/${sub.id}/deliveries`)).body.data.deliveries, []);
  await worker.runOnce();
  t.is(receiver.received.length, 0);

  t.is((await owner.client.patch(`/api/v1/webhooks/${sub.id}`, { active: true })).status, 200);
  const after = await newCustomer(owner, { name: 'After resume' });
  await worker.runOnce();
  t.is(receiver.received.length, 1);
  t.is(receiver.received[0].body.data.customer.id, after.id);
  t.deepEqual(receiver.received[0].verifiedWith, [sub.signing_secret]);
  t.like(await rowsOf(sub.id), [{ status: 'succeeded' }]);
});

test.serial('pausing or deleting a subscription marks its pending and failed deliveries dead; they are not retried', async (t) => {
  const receiver = await newReceiver(t);
  for (const [action, reason] of [['pause', /paused/i], ['delete', /deleted/i]] as const) {
    const owner = await signUpOwner(app);
    const sub = await subscribe(t, owner, { url: `${receiver.url}/${action}` });
    const before = receiver.received.length;
    receiver.respondWith((_req, res) => res.end('ok'));
    await newCustomer(owner);
    await worker.runOnce(); // succeeded
    receiver.respondWith((_req, res) => {
      res.statusCode = 500;
      res.end('down');
    });
    await newCustomer(owner);
    await worker.runOnce(); // failed, retry due in 30 s
    await newCustomer(owner); // pending
    const [succeeded, failed, pending] = await rowsOf(sub.id);
    t.like(succeeded, { status: 'succeeded', attempts: 1 });
    t.like(failed, { status: 'failed', attempts: 1, last_status_code: 500 });
    t.like(pending, { status: 'pending', attempts: 0 });

    if (action === 'pause') t.is((await owner.client.patch(`/api/v1/webhooks/${sub.id}`, { active: false })).status, 200);
    else t.is((await owner.client.delete(`/api/v1/webhooks/${sub.id}`)).status, 200);

    const seen = async (id: number) => {
      const res = await owner.client.get(`/api/v1/webhooks/deliveries/${id}`);
      t.is(res.status, 200);
      return res.body.data.delivery;
    };
    t.like(await seen(succeeded.id), { status: 'succeeded', attempts: 1, last_status_code: 200 });
    const deadFailed = await seen(failed.id);
    t.like(deadFailed, { status: 'dead', attempts: 1, last_status_code: 500 });
    t.regex(deadFailed.last_error, reason);
    const deadPending = await seen(pending.id);
    t.like(deadPending, { status: 'dead', attempts: 0 });
    t.regex(deadPending.last_error, reason);

    // Even when due, a dead delivery is not attempted again.
    await app.db('webhook_deliveries').where({ subscription_id: sub.id }).update({ next_attempt_at: app.db.fn.now() });
    receiver.respondWith((_req, res) => res.end('ok'));
    await worker.runOnce();
    t.is(receiver.received.length, before + 2);
    t.deepEqual((await rowsOf(sub.id)).map((r) => r.status), ['succeeded', 'dead', 'dead']);
    if (action === 'pause') {
      // Resuming does not revive them.
      await owner.client.patch(`/api/v1/webhooks/${sub.id}`, { active: true });
      await worker.runOnce();
      t.deepEqual((await rowsOf(sub.id)).map((r) => r.status), ['succeeded', 'dead', 'dead']);
      t.is(receiver.received.length, before + 2);
    }
  }
});

test.serial('rotate-secret returns a new secret once; the old one stops verifying at once', async (t) => {
  const receiver = await newReceiver(t);
  const owner = await signUpOwner(app);
  const sub = await subscribe(t, owner, { url: `${receiver.url}/hook` });
  const oldSecret = sub.signing_secret;
  const rotated = await owner.client.post(`/api/v1/webhooks/${sub.id}/rotate-secret`);
  t.is(rotated.status, 200);
  const newSecret = rotated.body.data.subscription.signing_secret;
  t.regex(newSecret, /^whsec_[A-Za-z0-9_-]{20,}$/);
  t.not(newSecret, oldSecret);
  t.like(rotated.body.data.subscription, { id: sub.id, url: sub.url, event_types: ['*'], active: true });
  // Never readable again.
  const listed = await owner.client.get('/api/v1/webhooks');
  t.false(listed.text.includes(newSecret));
  t.false('signing_secret' in listed.body.data.subscriptions[0]);
  t.false((await owner.client.patch(`/api/v1/webhooks/${sub.id}`, {})).text.includes(newSecret));

  // A receiver that knows only the old secret rejects the delivery.
  receiver.secrets.splice(0, receiver.secrets.length, oldSecret);
  await newCustomer(owner);
  await worker.runOnce();
  t.is(receiver.received.length, 1);
  t.deepEqual(receiver.received[0].verifiedWith, []);
  t.is(signatures(receiver.received[0].headers['service-signature']).length, 1);
  // With the new one it verifies.
  receiver.secrets.splice(0, receiver.secrets.length, oldSecret, newSecret);
  await newCustomer(owner);
  await worker.runOnce();
  t.is(receiver.received.length, 2);
  t.deepEqual(receiver.received[1].verifiedWith, [newSecret]);
});

test.serial('rotate-secret with overlap_seconds: both secrets sign (two v1= entries) until the overlap ends', async (t) => {
  const receiver = await newReceiver(t);
  const owner = await signUpOwner(app);
  const sub = await subscribe(t, owner, { url: `${receiver.url}/hook` });
  const first = sub.signing_secret;
  const rotatedFrom = Date.now();
  const rotated = await owner.client.post(`/api/v1/webhooks/${sub.id}/rotate-secret`, { overlap_seconds: 3600 });
  const rotatedBy = Date.now();
  t.is(rotated.status, 200);
  const second = rotated.body.data.subscription.signing_secret;
  t.not(second, first);
  const expires = Date.parse(rotated.body.data.subscription.previous_secret_expires_at);
  t.true(expires >= rotatedFrom + 3600_000 - 1000 && expires <= rotatedBy + 3600_000 + 1000, 'an hour after the rotation');

  receiver.secrets.push(first, second);
  await newCustomer(owner);
  await worker.runOnce();
  const [during] = await receiver.waitFor(1);
  t.is(signatures(during.headers['service-signature']).length, 2);
  t.deepEqual(during.verifiedWith, [first, second]);
  // Each secret on its own verifies: a receiver that has not switched yet, and one that has.
  t.true(verifySignature(during.headers['service-signature'] as string, during.raw, first));
  t.true(verifySignature(during.headers['service-signature'] as string, during.raw, second));

  // Out-of-range overlaps are refused and change nothing.
  for (const overlap of [90_000, 86_401, -1, 'soon', 1.5]) {
    const res = await owner.client.post(`/api/v1/webhooks/${sub.id}/rotate-secret`, { overlap_seconds: overlap });
    t.is(res.status, 422, String(overlap));
    t.regex(res.body.error, /overlap_seconds/);
  }

  // Once the overlap is over, only the current secret signs.
  await app.db('webhook_subscriptions').where({ id: sub.id }).update({ previous_secret_expires_at: app.db.raw(`now() - interval '1 second'`) });
  await newCustomer(owner);
  await worker.runOnce();
  const after = receiver.received[1];
  t.is(signatures(after.headers['service-signature']).length, 1);
  t.deepEqual(after.verifiedWith, [second]);

  const max = await owner.client.post(`/api/v1/webhooks/${sub.id}/rotate-secret`, { overlap_seconds: 86_400 });
  t.is(max.status, 200);
});

test.serial('GET /webhooks/{id}/deliveries lists the 50 most recent, newest first', async (t) => {
  const owner = await signUpOwner(app);
  const sub = await subscribe(t, owner, { url: 'https://nowhere.example.com/hook', event_types: ['customer.created'] });
  const other = await subscribe(t, owner, { url: 'https://nowhere.example.com/other', event_types: ['customer.updated'] });
  for (let i = 0; i < 55; i++) await newCustomer(owner);
  const all = await rowsOf(sub.id);
  t.is(all.length, 55);
  const res = await owner.client.get(`/api/v1/webhooks/${sub.id}/deliveries`);
  t.is(res.status, 200);
  const deliveries = res.body.data.deliveries;
  t.is(deliveries.length, 50);
  t.deepEqual(
    deliveries.map((d: any) => d.id),
    all.map((r) => r.id).reverse().slice(0, 50),
  );
  const created = deliveries.map((d: any) => Date.parse(d.created_at));
  t.deepEqual(created, [...created].sort((a: number, b: number) => b - a));
  for (const d of deliveries) {
    t.like(d, { subscription_id: sub.id, event_type: 'customer.created', status: 'pending', attempts: 0, last_status_code: null, last_error: null, delivered_at: null });
    t.regex(d.event_id, /^evt_[0-9A-HJKMNP-TV-Z]{26}$/);
    for (const field of DELIVERY_FIELDS.filter((f) => f !== 'response_body')) t.true(field in d, field);
  }
  t.deepEqual((await owner.client.get(`/api/v1/webhooks/${other.id}/deliveries`)).body.data.deliveries, []);
});

test.serial('GET /webhooks/deliveries/{id} shows one delivery with the addendum fields and the stored response body', async (t) => {
  const receiver = await newReceiver(t);
  const owner = await signUpOwner(app);
  const sub = await subscribe(t, owner, { url: `${receiver.url}/hook` });
  receiver.respondWith((_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end('{"received":true}');
  });
  await newCustomer(owner);
  await worker.runOnce();
  const [row] = await rowsOf(sub.id);
  const res = await owner.client.get(`/api/v1/webhooks/deliveries/${row.id}`);
  t.is(res.status, 200);
  t.is(res.body.version, 'v1');
  const delivery = res.body.data.delivery;
  t.deepEqual(Object.keys(delivery).sort(), [...DELIVERY_FIELDS].sort());
  t.like(delivery, {
    id: row.id, subscription_id: sub.id, event_id: receiver.received[0].body.id, event_type: 'customer.created',
    status: 'succeeded', attempts: 1, last_status_code: 200, last_error: null, response_body: '{"received":true}',
  });
  for (const field of ['next_attempt_at', 'created_at', 'updated_at', 'delivered_at']) t.regex(delivery[field], ISO, field);
  const [listed] = (await owner.client.get(`/api/v1/webhooks/${sub.id}/deliveries`)).body.data.deliveries;
  const { response_body: _body, ...rest } = delivery;
  t.like(listed, rest);
});

test.serial('resend puts a delivery back on the queue, due now, and the next run delivers it again', async (t) => {
  const receiver = await newReceiver(t);
  const owner = await signUpOwner(app);
  const sub = await subscribe(t, owner, { url: `${receiver.url}/hook` });
  receiver.secrets.push(sub.signing_secret);
  await newCustomer(owner);
  await worker.runOnce();
  const [row] = await rowsOf(sub.id);
  t.is(row.status, 'succeeded');

  const resent = await owner.client.post(`/api/v1/webhooks/deliveries/${row.id}/resend`);
  t.is(resent.status, 200);
  t.like(resent.body.data.delivery, { id: row.id, status: 'pending', attempts: 0 });
  t.true(Date.parse(resent.body.data.delivery.next_attempt_at) <= Date.now() + 1000);
  t.like(await app.db('webhook_deliveries').where({ id: row.id }).first(), { status: 'pending', attempts: 0 });

  await worker.runOnce();
  t.is(receiver.received.length, 2);
  const [first, again] = receiver.received;
  t.is(again.headers['service-event-id'], first.headers['service-event-id']);
  t.is(again.raw, first.raw);
  t.is(again.headers['service-attempt'], '1');
  t.deepEqual(again.verifiedWith, [sub.signing_secret]);
  t.like((await owner.client.get(`/api/v1/webhooks/deliveries/${row.id}`)).body.data.delivery, { status: 'succeeded', attempts: 1 });
});
