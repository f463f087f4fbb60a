import test from 'ava';
import { signUpOwner, uniqueEmail, type Owner } from '../helpers/app.js';
import { useOwnerApp } from '../helpers/fixture.js';
import { inviteMember, type Member } from '../helpers/members.js';
import type { Client } from '../helpers/client.js';

const { app, smtp, owner } = useOwnerApp(test, { workspace: 'Orders', smtp: true });
let mia: Member;
test.before(async () => {
  mia = await inviteMember(app, smtp, owner);
});

const money = /^\d+\.\d{2}$/;
const bearer = (o: Owner) => ({ headers: { authorization: `Bearer ${o.keys.secret_key}` } });
const external = (body: Record<string, unknown>, o: Owner = owner) => app.client().post('/api/v1/orders/external', body, bearer(o));

let counter = 0;
/** A new external order (201), by the owner's secret key. */
async function order(fields: Record<string, unknown> = {}, o: Owner = owner): Promise<{ order: any; items: any[] }> {
  const res = await external({ external_id: `ext-${++counter}`, items: [{ sku: 'A', quantity: 1, price: '5.00' }], ...fields }, o);
  if (res.status !== 201) throw new Error(`external order failed: ${res.status} ${res.text}`);
  return res.body.data;
}

const events = (o: Owner, type: string) => app.db('events').where({ workspace_id: o.workspace.id, type }).orderBy('created_at');
const orderEvents = async (type: string, orderId: number, o: Owner = owner) => (await events(o, type)).filter((e) => e.data.order.id === orderId);
const listIds = async (client: Client, query = ''): Promise<number[]> => {
  const res = await client.get(`/api/v1/orders${query}`);
  if (res.status !== 200) throw new Error(`list failed: ${res.status} ${res.text}`);
  return res.body.data.orders.map((o: { id: number }) => o.id);
};

test('external order: 201 + order.created for a new key; 200 + order.updated for a match, items replaced, totals computed', async (t) => {
  const email = uniqueEmail('shopper');
  const body = {
    external_source: 'shopify',
    external_id: '1001',
    order_number: '#1001',
    status: 'paid',
    currency: 'eur',
    customer: { email: email.toUpperCase(), name: 'Sam Shopper' },
    placed_at: '2026-11-20T09:30:00Z',
    notes: 'gift wrap',
    items: [
      { sku: 'MUG', description: 'Mug', quantity: 2, price: '9.99' },
      { description: 'Tea', quantity: '0.333', price: 10.01 },
      { description: 'Pin', quantity: 2.5, price: 0.01 },
    ],
  };
  const created = await external(body);
  t.is(created.status, 201, created.text);
  t.is(created.body.version, 'v1');
  t.deepEqual(Object.keys(created.body.data).sort(), ['items', 'order']);
  const { order: o, items } = created.body.data;
  const customer = await app.db('customers').where({ workspace_id: owner.workspace.id, email: email.toLowerCase() }).first();
  t.like(o, {
    external_source: 'shopify', external_id: '1001', order_number: '#1001', status: 'paid', currency: 'EUR', customer_id: customer.id, channel_id: null,
    quote_id: null, notes: 'gift wrap', placed_at: '2026-11-20T09:30:00.000Z', subtotal: '23.34', discount_amount: '0.00', tax_amount: '0.00', total: '23.34',
  });
  for (const field of ['subtotal', 'discount_amount', 'tax_amount', 'total']) t.regex(o[field], money, field);
  t.deepEqual(items.map((i: any) => [i.order_id, i.sku, i.description, i.quantity, i.price, i.line_total]), [
    [o.id, 'MUG', 'Mug', '2', '9.99', '19.98'],
    [o.id, null, 'Tea', '0.333', '10.01', '3.33'],
    [o.id, null, 'Pin', '2.5', '0.01', '0.03'],
  ]);
  const [createdEvent, ...more] = await orderEvents('order.created', o.id);
  t.is(more.length, 0);
  t.deepEqual(createdEvent.data, { order: o, items });
  t.is((await events(owner, 'customer.created')).filter((e) => e.data.customer.id === customer.id).length, 1);

  const repeat = await external({ ...body, status: 'fulfilled', items: [{ sku: 'HAT', quantity: 1.5, price: 0.99 }] });
  t.is(repeat.status, 200, repeat.text);
  const updated = repeat.body.data;
  t.is(updated.order.id, o.id);
  t.like(updated.order, { status: 'fulfilled', subtotal: '1.49', total: '1.49', created_at: o.created_at });
  t.is(updated.items.length, 1);
  t.like(updated.items[0], { sku: 'HAT', quantity: '1.5', price: '0.99', line_total: '1.49' });
  t.deepEqual(
    (await app.db('order_items').where({ order_id: o.id })).map((i) => i.id),
    [updated.items[0].id],
    'the old items are gone',
  );
  t.is((await orderEvents('order.created', o.id)).length, 1);
  const [updatedEvent] = await orderEvents('order.updated', o.id);
  t.deepEqual(updatedEvent.data, updated);
  t.deepEqual((await owner.client.get(`/api/v1/orders/${o.id}`)).body.data, updated);

  // The key is (external_source, external_id): another source is another order.
  const otherSource = await external({ ...body, external_source: 'woo' });
  t.is(otherSource.status, 201);
  t.not(otherSource.body.data.order.id, o.id);
  t.is((await app.db('orders').where({ workspace_id: owner.workspace.id, external_id: '1001' })).length, 2);

  // Concurrent upserts of one key: one order, one order.created.
  const parallel = await Promise.all(Array.from({ length: 5 }, (_, i) => external({ external_id: 'parallel-1', items: [{ price: i + 1 }] })));
  t.deepEqual(parallel.map((r) => r.status).sort(), [200, 200, 200, 200, 201]);
  const parallelId = parallel[0].body.data.order.id;
  t.true(parallel.every((r) => r.body.data.order.id === parallelId));
  t.is((await orderEvents('order.created', parallelId)).length, 1);
  t.is((await orderEvents('order.updated', parallelId)).length, 4);
  t.is((await app.db('order_items').where({ order_id: parallelId })).length, 1);

  // Defaults: source api, status pending, currency USD, no items.
  const bare = await external({ external_id: `bare-${Date.now()}` });
  t.is(bare.status, 201);
  t.like(bare.body.data.order, { external_source: 'api', status: 'pending', currency: 'USD', subtotal: '0.00', total: '0.00', customer_id: null, placed_at: null });
  t.deepEqual(bare.body.data.items, []);
});

test('external order validation: 422 naming the field, nothing written', async (t) => {
  const ws = await signUpOwner(app, 'Order validation');
  const good = { external_id: 'v-1', items: [{ quantity: 1, price: 1 }] };
  for (const [body, field] of [
    [{ items: [] }, 'external_id'],
    [{ ...good, external_id: '  ' }, 'external_id'],
    [{ ...good, items: [{ quantity: 1 }] }, 'items.0.price'],
    [{ ...good, items: [{ price: 1 }, { price: '1.005' }] }, 'items.1.price'],
    [{ ...good, items: [{ price: -2 }] }, 'items.0.price'],
    [{ ...good, items: [{ price: 1, quantity: 0 }] }, 'items.0.quantity'],
    [{ ...good, items: [{ price: 1, quantity: '1.0001' }] }, 'items.0.quantity'],
    [{ ...good, items: 'none' }, 'items'],
    [{ ...good, status: 'shipped' }, 'status'],
    [{ ...good, currency: 'EURO' }, 'currency'],
    [{ ...good, customer: { email: 'not-an-email' } }, 'customer.email'],
    [{ ...good, channel_id: 999999 }, 'channel_id'],
    [{ ...good, channel_id: 'x' }, 'channel_id'],
    [{ ...good, placed_at: 'whenever' }, 'placed_at'],
  ] as const) {
    const res = await external(body, ws);
    t.is(res.status, 422, JSON.stringify(body));
    t.regex(res.body.error, new RegExp(`^${field.replace(/\./g, '\\.')}`), JSON.stringify(body));
  }
  t.is((await app.db('orders').where({ workspace_id: ws.workspace.id })).length, 0);
  t.is((await app.db('customers').where({ workspace_id: ws.workspace.id })).length, 0);
  t.is((await app.db('events').where({ workspace_id: ws.workspace.id })).length, 0);
});

test('external order takes the secret key only: session cookie, public key or a bad key are 401', async (t) => {
  const body = { external_id: 'auth-1', items: [] };
  t.is((await owner.client.post('/api/v1/orders/external', body)).status, 401, 'session cookie');
  t.is((await app.client().post('/api/v1/orders/external', body, { headers: { authorization: `Public ${owner.keys.public_key}` } })).status, 401, 'public key');
  t.is((await app.client().post('/api/v1/orders/external', body, { headers: { authorization: 'Bearer sk_live_nope' } })).status, 401, 'bad key');
  t.is((await app.db('orders').where({ workspace_id: owner.workspace.id, external_id: 'auth-1' })).length, 0);
});

test('read, partial update (PATCH = PUT) with order.updated, delete with the order.deleted snapshot', async (t) => {
  const { order: o, items } = await order({ notes: 'first', status: 'pending' });
  const got = await owner.client.get(`/api/v1/orders/${o.id}`);
  t.is(got.status, 200);
  t.deepEqual(got.body, { version: 'v1', data: { order: o, items } });

  const patched = await owner.client.patch(`/api/v1/orders/${o.id}`, { status: 'fulfilled' });
  t.is(patched.status, 200, patched.text);
  t.like(patched.body.data.order, { status: 'fulfilled', notes: 'first', total: o.total });
  t.deepEqual(patched.body.data.items, items);
  const put = await owner.client.put(`/api/v1/orders/${o.id}`, { notes: 'second' });
  t.like(put.body.data.order, { status: 'fulfilled', notes: 'second' });
  const cleared = await owner.client.put(`/api/v1/orders/${o.id}`, { notes: '' });
  t.is(cleared.body.data.order.notes, null);
  const updates = await orderEvents('order.updated', o.id);
  t.is(updates.length, 3);
  t.deepEqual(
    updates.map((e) => e.data.order.notes).sort(),
    ['first', 'second', null].sort(),
  );
  for (const e of updates) t.deepEqual(Object.keys(e.data).sort(), ['items', 'order']);
  t.deepEqual(updates.find((e) => e.data.order.notes === null).data, cleared.body.data);
  const unchanged = await owner.client.patch(`/api/v1/orders/${o.id}`, {});
  t.deepEqual(unchanged.body.data, cleared.body.data);
  t.is((await orderEvents('order.updated', o.id)).length, 3, 'an empty update emits nothing');
  const bad = await owner.client.patch(`/api/v1/orders/${o.id}`, { status: 'shipped' });
  t.is(bad.status, 422);
  t.regex(bad.body.error, /^status/);

  const other = await signUpOwner(app, 'Order stranger');
  t.is((await other.client.get(`/api/v1/orders/${o.id}`)).status, 404);
  t.is((await other.client.patch(`/api/v1/orders/${o.id}`, { status: 'paid' })).status, 404);
  t.is((await other.client.delete(`/api/v1/orders/${o.id}`)).status, 404);
  t.is((await owner.client.get('/api/v1/orders/0')).status, 400);

  const deleted = await owner.client.delete(`/api/v1/orders/${o.id}`);
  t.is(deleted.status, 200);
  t.deepEqual(deleted.body.data, { order: cleared.body.data.order });
  t.is((await owner.client.get(`/api/v1/orders/${o.id}`)).status, 404);
  t.is((await owner.client.delete(`/api/v1/orders/${o.id}`)).status, 404);
  t.is((await app.db('order_items').where({ order_id: o.id })).length, 0);
  const [event, ...more] = await orderEvents('order.deleted', o.id);
  t.is(more.length, 0);
  t.deepEqual(event.data, { order: cleared.body.data.order });
});

test('list: status, channel_id, customer_id exact; empty ignored; bad values 422; q over number, external id, customer name and email', async (t) => {
  const ws = await signUpOwner(app, 'Order lists');
  const channel = (await ws.client.post('/api/v1/channels', { name: 'Market' })).body.data.channel;
  const a = (await order({ order_number: 'SO-77', external_id: 'amz-111', customer: { email: 'Dana.Doe@Example.net', name: 'Dana Doe' } }, ws)).order;
  const b = (await order({ order_number: 'SO-78', external_id: 'amz-222', status: 'paid', channel_id: channel.id, customer: { email: 'eli@shop.test', name: 'Eli' } }, ws)).order;
  const c = (await order({ external_id: 'web-333', channel_id: channel.id, customer: { email: 'dana.doe@example.net' } }, ws)).order;
  t.is(c.customer_id, a.customer_id);

  t.deepEqual(await listIds(ws.client), [a.id, b.id, c.id]);
  t.deepEqual(await listIds(ws.client, '?status=paid'), [b.id]);
  t.deepEqual(await listIds(ws.client, `?channel_id=${channel.id}`), [b.id, c.id]);
  t.deepEqual(await listIds(ws.client, `?customer_id=${a.customer_id}`), [a.id, c.id]);
  t.deepEqual(await listIds(ws.client, `?customer_id=${a.customer_id}&channel_id=${channel.id}`), [c.id]);
  t.deepEqual(await listIds(ws.client, '?status=&channel_id=&customer_id=&q='), [a.id, b.id, c.id]);
  t.deepEqual(await listIds(ws.client, '?q=so-7'), [a.id, b.id]);
  t.deepEqual(await listIds(ws.client, '?q=AMZ-2'), [b.id]);
  t.deepEqual(await listIds(ws.client, '?q=WEB'), [c.id]);
  t.deepEqual(await listIds(ws.client, '?q=dana%20DOE'), [a.id, c.id]);
  t.deepEqual(await listIds(ws.client, '?q=SHOP.TEST'), [b.id]);
  t.deepEqual(await listIds(ws.client, '?q=_'), [], 'q is a plain substring');
  const full = await ws.client.get('/api/v1/orders?status=paid');
  t.deepEqual(full.body, { version: 'v1', data: { orders: [b] } });
  for (const [query, field] of [
    ['status=open', 'status'],
    ['channel_id=abc', 'channel_id'],
    ['customer_id=0', 'customer_id'],
  ]) {
    const res = await ws.client.get(`/api/v1/orders?${query}`);
    t.is(res.status, 422, query);
    t.regex(res.body.error, new RegExp(`^${field}`), query);
  }
  t.false((await listIds(owner.client)).includes(a.id), 'another workspace never lists them');
});

test('channel access: no role 403 and hidden from lists; viewer reads only; editor writes; no channel is open to members', async (t) => {
  const channel = async (name: string) => (await owner.client.post('/api/v1/channels', { name })).body.data.channel;
  const [hidden, viewed, edited] = await Promise.all([channel('Hidden'), channel('Viewed'), channel('Edited')]);
  t.is((await owner.client.put(`/api/v1/channels/${viewed.id}/members/${mia.user.id}`, { role: 'viewer' })).status, 200);
  t.is((await owner.client.put(`/api/v1/channels/${edited.id}/members/${mia.user.id}`, { role: 'editor' })).status, 200);
  const inHidden = (await order({ channel_id: hidden.id })).order;
  const inViewed = (await order({ channel_id: viewed.id })).order;
  const inEdited = (await order({ channel_id: edited.id })).order;
  const open = (await order()).order;
  const m = mia.client;

  for (const res of [
    await m.get(`/api/v1/orders/${inHidden.id}`),
    await m.patch(`/api/v1/orders/${inHidden.id}`, { status: 'paid' }),
    await m.delete(`/api/v1/orders/${inHidden.id}`),
  ]) {
    t.is(res.status, 403, res.text);
    t.truthy(res.body.error);
  }
  const ids = await listIds(m);
  t.false(ids.includes(inHidden.id));
  t.true(ids.includes(inViewed.id) && ids.includes(inEdited.id) && ids.includes(open.id));
  t.deepEqual(await listIds(m, `?channel_id=${hidden.id}`), []);
  t.true((await listIds(owner.client)).includes(inHidden.id), 'the owner sees every order');

  t.is((await m.get(`/api/v1/orders/${inViewed.id}`)).status, 200);
  t.is((await m.patch(`/api/v1/orders/${inViewed.id}`, { status: 'paid' })).status, 403);
  t.is((await m.delete(`/api/v1/orders/${inViewed.id}`)).status, 403);
  t.deepEqual((await owner.client.get(`/api/v1/orders/${inViewed.id}`)).body.data.order, inViewed, 'nothing changed');
  t.deepEqual((await owner.client.get(`/api/v1/orders/${inHidden.id}`)).body.data.order, inHidden, 'nothing changed');

  const patched = await m.patch(`/api/v1/orders/${inEdited.id}`, { status: 'fulfilled' });
  t.is(patched.status, 200);
  t.is(patched.body.data.order.status, 'fulfilled');
  t.is((await m.delete(`/api/v1/orders/${inEdited.id}`)).status, 200);

  t.is((await m.get(`/api/v1/orders/${open.id}`)).status, 200);
  t.is((await m.patch(`/api/v1/orders/${open.id}`, { notes: 'member' })).status, 200);
});
