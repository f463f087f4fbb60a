import http from 'node:http';
import { gzipSync } from 'node:zlib';
import test from 'ava';
import { startApp, signUpOwner, uniqueEmail, type Owner, type TestApp } from '../helpers/app.js';
import { useOwnerApp } from '../helpers/fixture.js';
import { inviteMember, type Member } from '../helpers/members.js';
import { buildApi } from '../../src/server/app.js';
import { purgeExpiredTracking } from '../../src/tracking/retention.js';
import { sha256 } from '../../src/crypto.js';

const { app, smtp, owner } = useOwnerApp(test, { workspace: 'Tracking Shop', smtp: true });
let mia: Member;
test.before(async () => {
  mia = await inviteMember(app, smtp, owner);
});

const pub = (key = owner.keys.public_key) => ({ authorization: `Public ${key}` });
const bearer = (key = owner.keys.secret_key) => ({ authorization: `Bearer ${key}` });
let visitors = 0;
const newVisitor = () => `v_${process.pid}_${++visitors}`;

async function track(body: Record<string, unknown>, key = owner.keys.public_key) {
  return app.client().post('/api/v1/track/event', body, { headers: pub(key) });
}

async function join(body: Record<string, unknown>, headers: Record<string, string> = bearer()) {
  return app.client().post('/api/v1/track/join', body, { headers });
}

async function newCustomer(o: Owner = owner): Promise<number> {
  const res = await o.client.post('/api/v1/customers', { email: uniqueEmail('cust'), name: 'Carla Customer' });
  if (res.status !== 201) throw new Error(res.text);
  return res.body.data.customer.id;
}

async function product(o: Owner, sku: string, fields: Record<string, unknown> = {}): Promise<number> {
  const res = await o.client.post('/api/v1/products', { sku, name: `Product ${sku}`, category: 'desks', ...fields });
  if (res.status !== 201) throw new Error(res.text);
  return res.body.data.product.id;
}

// ---------------------------------------------------------------------------------------------
// The tag script

/** A GET with If-None-Match, as a browser revalidates its cached copy. */
function revalidate(url: string, etag: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    http.get(url, { headers: { 'if-none-match': etag } }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    }).on('error', reject);
  });
}

test('GET /tag/{slug}.js: the workspace key and API base baked in, small, revalidated with an ETag', async (t) => {
  const res = await app.client().get(`/tag/${owner.workspace.slug}.js`);
  t.is(res.status, 200);
  t.regex(res.headers.get('content-type')!, /^application\/javascript; charset=utf-8/);
  t.is(res.headers.get('cache-control'), 'no-cache');
  t.is(res.headers.get('access-control-allow-origin'), null, 'the script is no CORS endpoint');
  t.true(res.text.includes(JSON.stringify(owner.keys.public_key)));
  t.true(res.text.includes(JSON.stringify(`${app.url}/api/v1`)));
  t.false(res.text.includes('{{config}}'));
  const gzipped = gzipSync(res.text).length;
  t.true(gzipped < 3072, `${gzipped} bytes gzipped`);
  t.log(`tag script: ${res.text.length} bytes, ${gzipped} gzipped`);

  const etag = res.headers.get('etag')!;
  t.truthy(etag);
  // node:http, not fetch: fetch adds "Cache-Control: no-cache" to a conditional request, which asks for the full answer.
  const again = await revalidate(`${app.url}/tag/${owner.workspace.slug}.js`, etag);
  t.is(again.status, 304);
  t.is(again.body, '');
  t.is((await revalidate(`${app.url}/tag/${owner.workspace.slug}.js`, '"stale"')).status, 200);
});

test('the tag follows key rotation and locking: the next fetch has the new key, a locked workspace none', async (t) => {
  const other = await signUpOwner(app, 'Rotating Shop');
  const path = `/tag/${other.workspace.slug}.js`;
  const first = await app.client().get(path);
  const rotated = await other.client.post('/api/v1/workspace/keys/rotate');
  t.is(rotated.status, 200);
  const next = await app.client().get(path);
  t.not(next.headers.get('etag'), first.headers.get('etag'));
  t.is(next.status, 200, 'the old ETag no longer matches');
  t.true(next.text.includes(rotated.body.data.keys.public_key));
  t.false(next.text.includes(other.keys.public_key));

  await app.db('workspaces').where({ id: other.workspace.id }).update({ status: 'suspended' });
  const locked = await app.client().get(path);
  t.is(locked.status, 200);
  t.false(locked.text.includes(rotated.body.data.keys.public_key));
  t.true(locked.text.includes('"key":null'));
});

test('an unknown slug is 404 with a JavaScript comment', async (t) => {
  for (const path of ['/tag/no-such-shop.js', '/tag/.js', `/tag/${owner.workspace.slug}`, `/tag/${owner.workspace.slug}.css`]) {
    const res = await app.client().get(path);
    t.is(res.status, 404, path);
    if (path.endsWith('.js')) {
      t.regex(res.headers.get('content-type')!, /javascript/);
      t.regex(res.text, /^\/\*.*\*\/\n$/);
    }
  }
});

// ---------------------------------------------------------------------------------------------
// Event ingest

test('POST /track/event: 204 without a body; every field is stored; sku resolves through a variant', async (t) => {
  const productId = await product(owner, 'DESK-1');
  const variant = await owner.client.post(`/api/v1/products/${productId}/variants`, { sku: 'DESK-1-OAK', price: '10' });
  t.is(variant.status, 201, variant.text);
  const visitor = newVisitor();
  const sent = {
    visitor_id: visitor, type: 'product_view', url: 'https://shop.example/desk', title: 'Desk', referrer: 'https://search.example/',
    sku: 'DESK-1-OAK', category: 'furniture', properties: { colour: 'oak', n: 2 }, occurred_at: '2026-11-20T10:00:00Z',
  };
  const res = await track(sent);
  t.is(res.status, 204, res.text);
  t.is(res.text, '');
  t.is(res.headers.get('access-control-allow-origin'), '*');
  const [row] = await app.db('track_events').where({ workspace_id: owner.workspace.id, visitor_id: visitor });
  t.like(row, { type: 'product_view', url: sent.url, title: 'Desk', referrer: sent.referrer, sku: 'DESK-1-OAK', category: 'furniture', product_id: productId });
  t.deepEqual(row.properties, { colour: 'oak', n: 2 });
  t.is(new Date(row.occurred_at).toISOString(), '2026-11-20T10:00:00.000Z');

  t.is((await track({ visitor_id: visitor, type: 'product_view', sku: 'DESK-1' })).status, 204);
  t.is((await track({ visitor_id: visitor, type: 'search', sku: 'NOTHING' })).status, 204);
  const rows = await app.db('track_events').where({ workspace_id: owner.workspace.id, visitor_id: visitor }).orderBy('id');
  t.deepEqual(rows.map((r) => r.product_id), [productId, productId, null]);
  t.true(Date.now() - new Date(rows[1].occurred_at).getTime() < 600_000, 'occurred_at defaults to the time of receipt');
});

test('POST /track/event takes the public key in the header only: query, secret key, cookie, mixed prefixes are 401', async (t) => {
  const body = { visitor_id: newVisitor(), type: 'page_view' };
  const c = app.client();
  t.is((await c.post('/api/v1/track/event', body)).status, 401);
  t.is((await c.post(`/api/v1/track/event?key=${owner.keys.public_key}`, body)).status, 401);
  t.is((await c.post('/api/v1/track/event', body, { headers: bearer() })).status, 401);
  t.is((await c.post('/api/v1/track/event', body, { headers: { authorization: `Public ${owner.keys.secret_key}` } })).status, 401);
  t.is((await c.post('/api/v1/track/event', body, { headers: { authorization: `Bearer ${owner.keys.public_key}` } })).status, 401);
  t.is((await c.post('/api/v1/track/event', body, { headers: pub('pk_live_not-a-key-at-all-xxxxxxxxxxxxxxxx') })).status, 401);
  const cookie = await owner.client.post('/api/v1/track/event', body);
  t.is(cookie.status, 401, 'the session cookie is no credential here');
  t.is(await app.db('track_events').where({ visitor_id: body.visitor_id }).count('* as n').first().then((r) => Number(r!.n)), 0);
});

test('POST /track/event validation: 422 naming the field', async (t) => {
  const v = newVisitor();
  const cases: [Record<string, unknown>, string][] = [
    [{ type: 'page_view' }, 'visitor_id'],
    [{ visitor_id: '', type: 'page_view' }, 'visitor_id'],
    [{ visitor_id: 'a'.repeat(65), type: 'page_view' }, 'visitor_id'],
    [{ visitor_id: 'has space', type: 'page_view' }, 'visitor_id'],
    [{ visitor_id: 'é', type: 'page_view' }, 'visitor_id'],
    [{ visitor_id: 42, type: 'page_view' }, 'visitor_id'],
    [{ visitor_id: v }, 'type'],
    [{ visitor_id: v, type: 'purchase' }, 'type'],
    [{ visitor_id: v, type: 'custom', properties: [1, 2] }, 'properties'],
    [{ visitor_id: v, type: 'custom', properties: 'x' }, 'properties'],
    [{ visitor_id: v, type: 'custom', properties: { big: 'x'.repeat(5000) } }, 'properties'],
    [{ visitor_id: v, type: 'custom', properties: { nul: 'a\u0000b' } }, 'properties'],
    [{ visitor_id: v, type: 'page_view', url: 'x'.repeat(2049) }, 'url'],
    [{ visitor_id: v, type: 'page_view', title: 5 }, 'title'],
    [{ visitor_id: v, type: 'page_view', occurred_at: 'yesterday-ish' }, 'occurred_at'],
    [{ visitor_id: v, type: 'page_view', occurred_at: new Date(Date.now() + 3 * 86_400_000).toISOString() }, 'occurred_at'],
    [{ visitor_id: v, type: 'page_view', occurred_at: '2001-01-01T00:00:00Z' }, 'occurred_at'],
  ];
  for (const [body, field] of cases) {
    const res = await track(body);
    t.is(res.status, 422, `${JSON.stringify(body).slice(0, 80)}: ${res.text}`);
    t.true(res.body.error.startsWith(field), `${res.body.error} names ${field}`);
  }
  const malformed = await app.client().request('POST', '/api/v1/track/event', { raw: '{"visitor_id": ', headers: pub() });
  t.is(malformed.status, 422);
  t.regex(malformed.body.error, /^visitor_id is required/);
  t.is((await track({ visitor_id: 'A-z_0'.padEnd(64, '9'), type: 'custom', properties: null })).status, 204);
});

test('a rotated public key is refused by ingest at once, though ingest had it cached', async (t) => {
  const shop = await signUpOwner(app, 'Rotating Tracker');
  const old = shop.keys.public_key;
  t.is((await track({ visitor_id: 'rot', type: 'page_view' }, old)).status, 204);
  t.is((await track({ visitor_id: 'rot', type: 'page_view' }, old)).status, 204, 'served again, now from the cache');
  const rotated = await shop.client.post('/api/v1/workspace/keys/rotate');
  t.is(rotated.status, 200);
  const refused = await track({ visitor_id: 'rot', type: 'page_view' }, old);
  t.is(refused.status, 401);
  t.deepEqual(refused.body, { error: 'Invalid public key.' });
  t.is((await track({ visitor_id: 'rot', type: 'page_view' }, rotated.body.data.keys.public_key)).status, 204);
  t.is(Number((await app.db('track_events').where({ workspace_id: shop.workspace.id }).count('* as n').first())!.n), 3);
});

test('a locked workspace answers 402 to its public key', async (t) => {
  const other = await signUpOwner(app, 'Locked Shop');
  await app.db('workspaces').where({ id: other.workspace.id }).update({ status: 'suspended' });
  const res = await track({ visitor_id: newVisitor(), type: 'page_view' }, other.keys.public_key);
  t.is(res.status, 402);
});

/** Waits into the next minute when this one is almost over, so a short burst stays inside one rate window. */
async function awayFromMinuteEnd(db: TestApp['db']): Promise<void> {
  const { rows } = await db.raw(`select extract(second from now())::float8 as s`);
  if (rows[0].s > 45) await new Promise((resolve) => setTimeout(resolve, (61 - rows[0].s) * 1000));
}

test('the rate cap: TRACK_RATE_PER_MINUTE events per workspace and minute, then 429 {error: "Too many events."}', async (t) => {
  const capped = await startApp({ TRACK_RATE_PER_MINUTE: '5' });
  t.teardown(() => capped.close());
  const a = await signUpOwner(capped, 'Capped A');
  const b = await signUpOwner(capped, 'Capped B');
  const send = (o: Owner) => capped.client().post('/api/v1/track/event', { visitor_id: 'cap', type: 'page_view' }, { headers: pub(o.keys.public_key) });
  await awayFromMinuteEnd(capped.db);
  const statuses = [];
  for (let i = 0; i < 7; i++) statuses.push((await send(a)).status);
  t.deepEqual(statuses, [204, 204, 204, 204, 204, 429, 429]);
  const over = await send(a);
  t.deepEqual(over.body, { error: 'Too many events.' });
  t.is(over.headers.get('access-control-allow-origin'), '*');
  t.is((await send(b)).status, 204, 'the cap is per workspace');
  t.is(Number((await capped.db('track_events').where({ workspace_id: a.workspace.id }).count('* as n').first())!.n), 5);
  t.is((await capped.client().post('/api/v1/track/event', {}, { headers: pub(a.keys.public_key) })).status, 422, 'validation comes first');
  // Concurrent bursts, each a window's first events (so several requests wait for the same counter rows):
  // exactly the cap is accepted in each workspace, however the requests interleave, and none fails.
  const bursting = await Promise.all(['C', 'D', 'E', 'F'].map((name) => signUpOwner(capped, `Capped ${name}`)));
  await awayFromMinuteEnd(capped.db);
  const bursts = await Promise.all(bursting.map((o) => Promise.all(Array.from({ length: 12 }, () => send(o)))));
  for (const [i, burst] of bursts.entries()) {
    const statuses = burst.map((r) => r.status).join(',');
    t.is(burst.filter((r) => r.status === 204).length, 5, statuses);
    t.is(burst.filter((r) => r.status === 429).length, 7, statuses);
    t.is(Number((await capped.db('track_events').where({ workspace_id: bursting[i].workspace.id }).count('* as n').first())!.n), 5);
  }
});

test('an invalid TRACK_RATE_PER_MINUTE or TRACK_RETENTION_DAYS is a configuration error', async (t) => {
  const { loadConfig } = await import('../../src/config.js');
  t.is(loadConfig({}).TRACK_RATE_PER_MINUTE, 1200);
  t.is(loadConfig({}).TRACK_RETENTION_DAYS, 400);
  t.throws(() => loadConfig({ TRACK_RATE_PER_MINUTE: '0' }), { message: /^TRACK_RATE_PER_MINUTE expects/ });
  t.throws(() => loadConfig({ TRACK_RETENTION_DAYS: 'forever' }), { message: /^TRACK_RETENTION_DAYS expects/ });
});

// ---------------------------------------------------------------------------------------------
// Join

test('join with the secret key: by customer_id, repeat is 200, another customer is 409', async (t) => {
  const customerId = await newCustomer();
  const visitor = newVisitor();
  const res = await join({ visitor_id: visitor, customer_id: customerId });
  t.is(res.status, 200, res.text);
  t.deepEqual(res.body, { version: 'v1', data: { visitor: { visitor_id: visitor, customer_id: customerId } } });
  t.is(res.headers.get('access-control-allow-origin'), '*');
  t.is((await join({ visitor_id: visitor, customer_id: customerId })).status, 200);
  const conflict = await join({ visitor_id: visitor, customer_id: await newCustomer() });
  t.is(conflict.status, 409);
  t.regex(conflict.body.error, /already linked to another customer/);
  const rows = await app.db('visitors').where({ workspace_id: owner.workspace.id, visitor_id: visitor });
  t.is(rows.length, 1);
  t.is(rows[0].customer_id, customerId);
});

test('join by email upserts the customer (customer.created once; an existing email is used as it is)', async (t) => {
  const email = uniqueEmail('joiner');
  const res = await join({ visitor_id: newVisitor(), email: email.toUpperCase() });
  t.is(res.status, 200, res.text);
  const customer = await app.db('customers').where({ workspace_id: owner.workspace.id, email }).first();
  t.is(res.body.data.visitor.customer_id, customer.id);
  const again = await join({ visitor_id: newVisitor(), email });
  t.is(again.body.data.visitor.customer_id, customer.id);
  const events = await app.db('events').where({ workspace_id: owner.workspace.id }).whereIn('type', ['customer.created', 'customer.updated']);
  const mine = events.filter((e) => e.data.customer.id === customer.id);
  t.deepEqual(mine.map((e) => e.type), ['customer.created']);
});

test('join refusals: 422 naming the field, 403 for the public key without a code, 401 without a key', async (t) => {
  const v = newVisitor();
  const cases: [Record<string, unknown>, string][] = [
    [{ customer_id: 1 }, 'visitor_id'],
    [{ visitor_id: 'bad id', customer_id: 1 }, 'visitor_id'],
    [{ visitor_id: v }, 'customer_id'],
    [{ visitor_id: v, customer_id: 999999 }, 'customer_id'],
    [{ visitor_id: v, customer_id: 'x' }, 'customer_id'],
    [{ visitor_id: v, email: 'not-an-email' }, 'email'],
    [{ visitor_id: v, customer_id: 1, email: 'a@b.example' }, 'email'],
  ];
  for (const [body, field] of cases) {
    const res = await join(body);
    t.is(res.status, 422, `${JSON.stringify(body)}: ${res.text}`);
    t.true(res.body.error.startsWith(field), res.body.error);
  }
  const customerId = await newCustomer();
  t.is((await join({ visitor_id: v, customer_id: customerId }, pub())).status, 403);
  const noCode = await join({ visitor_id: v }, pub());
  t.is(noCode.status, 422);
  t.regex(noCode.body.error, /^code/);
  t.is((await join({ visitor_id: v, customer_id: customerId }, {})).status, 401);
  t.is((await owner.client.post('/api/v1/track/join', { visitor_id: v, customer_id: customerId })).status, 401, 'no session cookie');
  const other = await signUpOwner(app, 'Joiner Elsewhere');
  t.is((await join({ visitor_id: v, customer_id: customerId }, bearer(other.keys.secret_key))).status, 422, "another workspace's customer is unknown");
  t.is(await app.db('visitors').where({ visitor_id: v }).first(), undefined);
});

test('join codes: secret key issues (15 minutes), the browser joins once with the public key, then 410', async (t) => {
  const customerId = await newCustomer();
  const issued = await app.client().post('/api/v1/track/join-codes', { customer_id: customerId }, { headers: bearer() });
  t.is(issued.status, 201, issued.text);
  const { code, expires_at } = issued.body.data.join_code;
  t.regex(code, /^jc_[A-Za-z0-9_-]{32}$/);
  const minutes = (new Date(expires_at).getTime() - Date.now()) / 60_000;
  t.true(minutes > 14 && minutes <= 15.1, `${minutes} minutes`);
  t.is(issued.headers.get('access-control-allow-origin'), null, 'join-codes is a backend endpoint, no CORS');

  const visitor = newVisitor();
  const joined = await join({ visitor_id: visitor, code }, pub());
  t.is(joined.status, 200, joined.text);
  t.deepEqual(joined.body.data.visitor, { visitor_id: visitor, customer_id: customerId });
  const spent = await join({ visitor_id: visitor, code }, pub());
  t.is(spent.status, 410);
  t.regex(spent.body.error, /already been used/);
  t.is((await join({ visitor_id: newVisitor(), code: 'jc_unknown' }, pub())).status, 404);

  const late = await app.client().post('/api/v1/track/join-codes', { email: uniqueEmail('late') }, { headers: bearer() });
  t.is(late.status, 201);
  await app.db('track_join_codes').where({ code_hash: sha256(late.body.data.join_code.code) }).update({ expires_at: app.db.raw("now() - interval '1 second'") });
  const expired = await join({ visitor_id: newVisitor(), code: late.body.data.join_code.code }, pub());
  t.is(expired.status, 410);
  t.regex(expired.body.error, /expired/);

  // A code refused because the visitor belongs to someone else stays unused.
  const third = await app.client().post('/api/v1/track/join-codes', { customer_id: await newCustomer() }, { headers: bearer() });
  t.is((await join({ visitor_id: visitor, code: third.body.data.join_code.code }, pub())).status, 409);
  t.is((await join({ visitor_id: newVisitor(), code: third.body.data.join_code.code }, pub())).status, 200);

  t.is((await app.client().post('/api/v1/track/join-codes', { customer_id: customerId }, { headers: pub() })).status, 401, 'the public key cannot issue codes');
  const other = await signUpOwner(app, 'Code Elsewhere');
  const fresh = await app.client().post('/api/v1/track/join-codes', { customer_id: customerId }, { headers: bearer() });
  t.is((await join({ visitor_id: newVisitor(), code: fresh.body.data.join_code.code }, pub(other.keys.public_key))).status, 404, "another workspace's code is unknown");
});

// ---------------------------------------------------------------------------------------------
// Reading

test('GET /customers/{id}/events: newest first by occurred_at then id, the fields as sent, limit 1-200', async (t) => {
  const customerId = await newCustomer();
  const [v1, v2] = [newVisitor(), newVisitor()];
  await track({ visitor_id: v1, type: 'page_view', url: 'https://shop.example/a', occurred_at: '2026-11-20T10:00:00Z' });
  await track({ visitor_id: v2, type: 'search', properties: { q: 'desk' }, occurred_at: '2026-11-21T10:00:00Z' });
  await track({ visitor_id: v1, type: 'add_to_cart', sku: 'X', occurred_at: '2026-11-21T10:00:00Z' });
  await track({ visitor_id: newVisitor(), type: 'page_view', occurred_at: '2026-11-22T10:00:00Z' }); // not the customer's
  t.is((await join({ visitor_id: v1, customer_id: customerId })).status, 200);
  t.is((await join({ visitor_id: v2, customer_id: customerId })).status, 200);

  const res = await owner.client.get(`/api/v1/customers/${customerId}/events`);
  t.is(res.status, 200, res.text);
  const events = res.body.data.events;
  t.deepEqual(events.map((e: { type: string }) => e.type), ['add_to_cart', 'search', 'page_view'], 'equal occurred_at: the later id first');
  t.deepEqual(Object.keys(events[1]).sort(), ['category', 'id', 'occurred_at', 'properties', 'received_at', 'referrer', 'sku', 'title', 'type', 'url', 'visitor_id']);
  t.like(events[1], { visitor_id: v2, type: 'search', properties: { q: 'desk' }, occurred_at: '2026-11-21T10:00:00.000Z', url: null });
  t.regex(events[1].received_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  t.is(typeof events[0].id, 'number');

  const two = await owner.client.get(`/api/v1/customers/${customerId}/events?limit=2`);
  t.is(two.body.data.events.length, 2);
  for (const bad of ['0', '201', 'abc', '1.5', '-1']) {
    const res = await owner.client.get(`/api/v1/customers/${customerId}/events?limit=${bad}`);
    t.is(res.status, 422, bad);
    t.regex(res.body.error, /^limit/);
  }
  t.is((await owner.client.get(`/api/v1/customers/${customerId}/events?limit=200`)).status, 200);
  t.is((await owner.client.get(`/api/v1/customers/${customerId}/events?limit=`)).body.data.events.length, 3);
  t.is((await owner.client.get('/api/v1/customers/999999/events')).status, 404);
  t.is((await app.client().get(`/api/v1/customers/${customerId}/events`)).status, 401);
  t.is((await app.client().get(`/api/v1/customers/${customerId}/events`, { headers: bearer() })).status, 401, 'session only');
  const other = await signUpOwner(app, 'Events Elsewhere');
  t.is((await other.client.get(`/api/v1/customers/${customerId}/events`)).status, 404);
});

test('the default limit is 50 events', async (t) => {
  const customerId = await newCustomer();
  const visitor = newVisitor();
  await app.db('track_events').insert(
    Array.from({ length: 60 }, (_, i) => ({ workspace_id: owner.workspace.id, visitor_id: visitor, type: 'page_view', occurred_at: new Date(Date.now() - i * 1000) })),
  );
  await join({ visitor_id: visitor, customer_id: customerId });
  const res = await owner.client.get(`/api/v1/customers/${customerId}/events`);
  t.is(res.body.data.events.length, 50);
});

test("GET /quotes/{id}/browsing: the 50 latest events of the customer's visitors, under the quote's channel access", async (t) => {
  const customerId = await newCustomer();
  const visitor = newVisitor();
  await app.db('track_events').insert(
    Array.from({ length: 55 }, (_, i) => ({ workspace_id: owner.workspace.id, visitor_id: visitor, type: 'product_view', sku: `S${i}`, occurred_at: new Date(Date.now() - i * 60_000) })),
  );
  await join({ visitor_id: visitor, customer_id: customerId });
  const channel = await owner.client.post('/api/v1/channels', { name: 'Private channel', type: 'web' });
  t.is(channel.status, 201, channel.text);
  const quote = await owner.client.post('/api/v1/quotes', { customer_id: customerId, channel_id: channel.body.data.channel.id, currency: 'USD' });
  t.is(quote.status, 201, quote.text);
  const id = quote.body.data.quote.id;

  const res = await owner.client.get(`/api/v1/quotes/${id}/browsing`);
  t.is(res.status, 200, res.text);
  t.is(res.body.data.browsing.length, 50);
  t.is(res.body.data.browsing[0].sku, 'S0');
  t.is(res.body.data.browsing[49].sku, 'S49');

  t.is((await mia.client.get(`/api/v1/quotes/${id}`)).status, 403, 'as GET /quotes/{id}');
  t.is((await mia.client.get(`/api/v1/quotes/${id}/browsing`)).status, 403);
  t.is((await owner.client.put(`/api/v1/channels/${channel.body.data.channel.id}/members/${mia.user.id}`, { role: 'viewer' })).status, 200);
  t.is((await mia.client.get(`/api/v1/quotes/${id}/browsing`)).body.data.browsing.length, 50);

  const other = await signUpOwner(app, 'Browsing Elsewhere');
  t.is((await other.client.get(`/api/v1/quotes/${id}/browsing`)).status, 404);
  t.is((await owner.client.get('/api/v1/quotes/999999/browsing')).status, 404);

  const anonymous = await owner.client.post('/api/v1/quotes', { customer: { email: uniqueEmail('nobody') }, currency: 'USD' });
  t.deepEqual((await owner.client.get(`/api/v1/quotes/${anonymous.body.data.quote.id}/browsing`)).body.data.browsing, []);
});

// ---------------------------------------------------------------------------------------------
// Recommendations and interest

test('recommendations: co-viewed first, then the visitor’s categories, then the most viewed; active products only', async (t) => {
  const shop = await signUpOwner(app, 'Reco Shop');
  const key = shop.keys.public_key;
  const ids: Record<string, number> = {};
  for (const [sku, category, status] of [
    ['DESK', 'desks', 'active'], ['CHAIR', 'chairs', 'active'], ['LAMP', 'lighting', 'active'], ['MAT', 'desks', 'active'],
    ['OLD', 'desks', 'archived'], ['DRAFT', 'chairs', 'draft'], ['RUG', 'floor', 'active'], ['SHELF', 'storage', 'active'],
  ] as const) ids[sku] = await product(shop, sku, { category, status });
  const variant = await shop.client.post(`/api/v1/products/${ids.DESK}/variants`, { sku: 'DESK-WALNUT', price: '1' });
  t.is(variant.status, 201);

  const reco = (query: string, k = key) => app.client().get(`/api/v1/public/recommendations?${query}`, { headers: pub(k) });
  t.deepEqual((await reco('')).body.data, { recommendations: [] }, 'no events, nothing invented');

  const view = (visitor: string, sku: string) => track({ visitor_id: visitor, type: 'product_view', sku }, key);
  // Three visitors viewed DESK; two of them CHAIR, one LAMP; OLD (archived) and DRAFT too.
  for (const v of ['a', 'b', 'c']) await view(v, 'DESK');
  for (const v of ['a', 'b']) await view(v, 'CHAIR');
  await view('c', 'LAMP');
  for (const v of ['a', 'b', 'c']) await view(v, 'OLD');
  await view('a', 'DRAFT');
  // RUG is the workspace's most viewed product otherwise.
  for (const v of ['x', 'y', 'z', 'w']) await view(v, 'RUG');
  // SHELF is in nobody's path.

  const bySku = await reco('sku=DESK');
  t.is(bySku.status, 200, bySku.text);
  t.is(bySku.headers.get('access-control-allow-origin'), '*');
  const list = bySku.body.data.recommendations as { sku: string; reason: string; score: number }[];
  t.deepEqual(list.map((r) => [r.sku, r.reason, r.score]), [['CHAIR', 'co_viewed', 2], ['LAMP', 'co_viewed', 1], ['RUG', 'popular', 4]]);
  t.deepEqual(Object.keys(list[0]).sort(), ['brand', 'category', 'name', 'product_id', 'reason', 'score', 'sku']);
  t.like(list[0], { product_id: ids.CHAIR, name: 'Product CHAIR', category: 'chairs', brand: null });
  t.deepEqual((await reco('sku=DESK-WALNUT')).body.data, bySku.body.data, 'a variant sku resolves to its product');

  // A visitor who viewed MAT's category (desks) only: co-views of their recent views, then their category, then popular.
  const visitor = newVisitor();
  await track({ visitor_id: visitor, type: 'page_view', category: 'desks' }, key);
  await view(visitor, 'LAMP');
  const mine = await reco(`visitor_id=${visitor}&key=${key}`, 'ignored');
  t.is(mine.status, 401, 'a bad header key is not rescued by the query');
  const viaQuery = await app.client().get(`/api/v1/public/recommendations?visitor_id=${visitor}&key=${key}`);
  t.is(viaQuery.status, 200, 'the key in the query string');
  const reasons = (viaQuery.body.data.recommendations as { sku: string; reason: string }[]).map((r) => `${r.sku}:${r.reason}`);
  // LAMP's other viewer (c) viewed DESK; then the visitor's categories: lighting (LAMP itself, excluded), desks (DESK taken, MAT);
  // then the most viewed: RUG (4), DESK (taken), CHAIR (2).
  t.deepEqual(reasons, ['DESK:co_viewed', 'MAT:category', 'RUG:popular', 'CHAIR:popular']);
  t.false(reasons.some((r) => /OLD|DRAFT|SHELF/.test(r)));

  const limited = await reco('sku=DESK&limit=1');
  t.deepEqual(limited.body.data.recommendations.map((r: { sku: string }) => r.sku), ['CHAIR']);
  for (const bad of ['limit=0', 'limit=51', 'limit=x', 'visitor_id=has%20space']) {
    const res = await reco(bad);
    t.is(res.status, 422, bad);
    t.regex(res.body.error, new RegExp(`^${bad.split('=')[0]}`));
  }
  t.deepEqual((await reco('sku=UNKNOWN')).body.data.recommendations.map((r: { sku: string }) => r.sku), ['RUG', 'DESK', 'CHAIR', 'LAMP']);

  // Tenant isolation: this workspace's key sees nothing of the other's.
  t.deepEqual((await reco('sku=DESK', owner.keys.public_key)).body.data.recommendations.filter((r: { product_id: number }) => Object.values(ids).includes(r.product_id)), []);
  t.is((await app.client().get('/api/v1/public/recommendations')).status, 401);
  t.is((await shop.client.get('/api/v1/public/recommendations')).status, 401, 'no session cookie');
});

test('a busy workspace (a full sample of 10,000 product events): the most viewed stay active products only, also just after one is archived', async (t) => {
  const shop = await signUpOwner(app, 'Busy Shop');
  const ids: Record<string, number> = {};
  for (const sku of ['TOP', 'NEXT', 'THIRD']) ids[sku] = await product(shop, sku, { category: 'desks' });
  // More product events than the workspace sample: its figures may be reused for a few seconds.
  await app.db.raw(
    `insert into track_events (workspace_id, visitor_id, type, product_id, occurred_at)
     select ?::int, 'busy-' || (i % 500), 'product_view', case when i % 10 < 5 then ?::int when i % 10 < 8 then ?::int else ?::int end, now() - i * interval '1 second'
       from generate_series(1, 10500) i`,
    [shop.workspace.id, ids.TOP, ids.NEXT, ids.THIRD],
  );
  const popular = async () =>
    ((await app.client().get('/api/v1/public/recommendations', { headers: pub(shop.keys.public_key) })).body.data.recommendations as { sku: string; reason: string; score: number }[])
      .map((r) => [r.sku, r.reason, r.score]);
  t.deepEqual(await popular(), [['TOP', 'popular', 5000], ['NEXT', 'popular', 3000], ['THIRD', 'popular', 2000]]);
  const archived = await shop.client.patch(`/api/v1/products/${ids.TOP}`, { status: 'archived' });
  t.is(archived.status, 200);
  t.deepEqual(await popular(), [['NEXT', 'popular', 3000], ['THIRD', 'popular', 2000]], 'an archived product is never recommended');
  const interest = await app.client().get('/api/v1/public/categories/interest', { headers: pub(shop.keys.public_key) });
  t.is(interest.status, 200);
  t.deepEqual(interest.body.data.categories.map((c: { category: string }) => c.category), ['desks']);
});

test('category interest decays with a 7-day half-life; per visitor or for the workspace', async (t) => {
  const shop = await signUpOwner(app, 'Interest Shop');
  const key = shop.keys.public_key;
  await product(shop, 'TENT', { category: 'camping' });
  const day = 86_400_000;
  const at = (daysAgo: number) => new Date(Date.now() - daysAgo * day).toISOString();
  await track({ visitor_id: 'p', type: 'page_view', category: 'hiking', occurred_at: at(0) }, key);
  await track({ visitor_id: 'p', type: 'page_view', category: 'hiking', occurred_at: at(7) }, key);
  await track({ visitor_id: 'p', type: 'product_view', sku: 'TENT', occurred_at: at(14) }, key);
  await track({ visitor_id: 'q', type: 'page_view', category: 'climbing', occurred_at: at(0) }, key);
  await track({ visitor_id: 'q', type: 'page_view', occurred_at: at(0) }, key);

  const res = await app.client().get('/api/v1/public/categories/interest?visitor_id=p', { headers: pub(key) });
  t.is(res.status, 200, res.text);
  t.is(res.headers.get('access-control-allow-origin'), '*');
  const scores = res.body.data.categories as { category: string; score: number }[];
  t.deepEqual(scores.map((c) => c.category), ['hiking', 'camping']);
  t.true(Math.abs(scores[0].score - 1.5) < 0.001, `${scores[0].score}`);
  t.true(Math.abs(scores[1].score - 0.25) < 0.001, `${scores[1].score} (the product's category)`);

  const all = await app.client().get(`/api/v1/public/categories/interest?key=${key}`);
  t.deepEqual(all.body.data.categories.map((c: { category: string }) => c.category), ['hiking', 'climbing', 'camping']);
  const other = await app.client().get('/api/v1/public/categories/interest', { headers: pub() });
  t.false(other.body.data.categories.some((c: { category: string }) => ['hiking', 'climbing', 'camping'].includes(c.category)), 'tenant isolation');
  t.deepEqual((await app.client().get('/api/v1/public/categories/interest?visitor_id=nobody', { headers: pub(key) })).body.data, { categories: [] });
  t.is((await app.client().get('/api/v1/public/categories/interest?visitor_id=%20x%20y', { headers: pub(key) })).status, 422);
});

// ---------------------------------------------------------------------------------------------
// CORS, cascade, retention

const corsEndpoints = [
  ['POST', '/track/event'],
  ['POST', '/track/join'],
  ['GET', '/public/recommendations'],
  ['GET', '/public/categories/interest'],
  ['POST', '/quotes/public/lookup'],
];

test('CORS: exactly the five endpoints of the spec, each answering preflights', async (t) => {
  const api = buildApi({ db: app.db, config: app.config, mailer: null, sessionCache: null });
  const declared = api.routes.filter((r) => r.cors).flatMap((r) => (Array.isArray(r.method) ? r.method : [r.method]).map((m) => [m.toUpperCase(), r.path]));
  t.deepEqual(declared.sort(), [...corsEndpoints].sort());
  for (const [method, path] of corsEndpoints) {
    const res = await app.client().request('OPTIONS', `/api/v1${path}`, {
      headers: { origin: 'https://shop.example', 'access-control-request-method': method, 'access-control-request-headers': 'authorization, content-type' },
    });
    t.is(res.status, 204, path);
    t.is(res.headers.get('access-control-allow-origin'), '*', path);
    t.true(res.headers.get('access-control-allow-methods')!.includes(method), path);
    t.regex(res.headers.get('access-control-allow-headers')!, /authorization/i, path);
  }
  for (const path of ['/track/join-codes', '/customers/1/events', '/quotes/1/browsing', '/customers', '/auth/login']) {
    const preflight = await app.client().request('OPTIONS', `/api/v1${path}`, { headers: { origin: 'https://shop.example', 'access-control-request-method': 'POST' } });
    t.is(preflight.headers.get('access-control-allow-origin'), null, path);
    const plain = await app.client().get(`/api/v1${path}`, { headers: { origin: 'https://shop.example' } });
    t.is(plain.headers.get('access-control-allow-origin'), null, path);
  }
});

test('deleting a customer: 409 counts the visitors; cascade removes them and their events, nobody else’s', async (t) => {
  const customerId = await newCustomer();
  const [mine, theirs] = [newVisitor(), newVisitor()];
  await track({ visitor_id: mine, type: 'page_view' });
  await track({ visitor_id: mine, type: 'search' });
  await track({ visitor_id: theirs, type: 'page_view' });
  await join({ visitor_id: mine, customer_id: customerId });
  await app.client().post('/api/v1/track/join-codes', { customer_id: customerId }, { headers: bearer() });

  const refused = await owner.client.delete(`/api/v1/customers/${customerId}`);
  t.is(refused.status, 409);
  t.deepEqual(refused.body.data, { dependents: { quotes: 0, orders: 0, visitors: 1, hidden: 0 } });
  const deleted = await owner.client.delete(`/api/v1/customers/${customerId}?cascade=1`);
  t.is(deleted.status, 200, deleted.text);
  t.is((await app.db('visitors').where({ customer_id: customerId })).length, 0);
  t.is((await app.db('track_events').where({ workspace_id: owner.workspace.id, visitor_id: mine })).length, 0);
  t.is((await app.db('track_events').where({ workspace_id: owner.workspace.id, visitor_id: theirs })).length, 1);
  t.is((await app.db('track_join_codes').where({ customer_id: customerId })).length, 0);
  // The browser keeps its id; it can be joined to someone else now.
  t.is((await join({ visitor_id: mine, customer_id: await newCustomer() })).status, 200);
});

test('retention: events older than TRACK_RETENTION_DAYS, old rate windows and long-expired codes are purged', async (t) => {
  const ws = owner.workspace.id;
  const visitor = newVisitor();
  const daysAgo = (n: number) => app.db.raw(`now() - make_interval(days => ${n})`);
  await app.db('track_events').insert([
    { workspace_id: ws, visitor_id: visitor, type: 'page_view', url: 'old', occurred_at: daysAgo(401) },
    { workspace_id: ws, visitor_id: visitor, type: 'page_view', url: 'kept', occurred_at: daysAgo(399) },
  ]);
  await app.db('track_rate_windows').insert({ workspace_id: ws, window_start: app.db.raw("date_trunc('minute', now()) - interval '2 hours'"), count: 9 });
  const customerId = await newCustomer();
  await app.db('track_join_codes').insert([
    { workspace_id: ws, code_hash: `old-${visitor}`, customer_id: customerId, expires_at: daysAgo(8) },
    { workspace_id: ws, code_hash: `recent-${visitor}`, customer_id: customerId, expires_at: daysAgo(1) },
  ]);
  const summary = await purgeExpiredTracking(app.db, { TRACK_RETENTION_DAYS: 400 });
  // Counts, as numbers (the log line prints them): at least this test's old rows.
  t.true(summary.events >= 1);
  t.true(summary.windows >= 1, JSON.stringify(summary));
  t.true(summary.joinCodes >= 1, JSON.stringify(summary));
  t.deepEqual((await app.db('track_events').where({ workspace_id: ws, visitor_id: visitor })).map((e) => e.url), ['kept']);
  t.is((await app.db('track_rate_windows').where('window_start', '<', app.db.raw("now() - interval '1 hour'"))).length, 0);
  t.deepEqual((await app.db('track_join_codes').where({ customer_id: customerId })).map((c) => c.code_hash), [`recent-${visitor}`]);
});
