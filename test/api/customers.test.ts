import test from 'ava';
import { signUpOwner } from '../helpers/app.js';
import { useOwnerApp } from '../helpers/fixture.js';
import { PAGE_ROWS } from '../../src/db/keyset.js';

const { app, owner } = useOwnerApp(test);

const events = (type: string) => app.db('events').where({ workspace_id: owner.workspace.id, type }).orderBy('created_at');

test('create is an upsert by email: 201 new, 200 existing, with customer.created then customer.updated', async (t) => {
  const created = await owner.client.post('/api/v1/customers', { email: ' Upsert@Example.COM ', name: 'Ada', company: 'Analytical' });
  t.is(created.status, 201);
  const customer = created.body.data.customer;
  t.like(customer, { email: 'upsert@example.com', name: 'Ada', company: 'Analytical', phone: null });
  t.regex(customer.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  const again = await owner.client.post('/api/v1/customers', { email: 'upsert@example.com', phone: '+44 1' });
  t.is(again.status, 200);
  t.like(again.body.data.customer, { id: customer.id, name: 'Ada', company: 'Analytical', phone: '+44 1' });
  const createdEvents = (await events('customer.created')).filter((e) => e.data.customer.id === customer.id);
  t.is(createdEvents.length, 1);
  t.deepEqual(createdEvents[0].data, { customer });
  t.regex(createdEvents[0].id, /^evt_[0-9A-HJKMNP-TV-Z]{26}$/);
  const updated = (await events('customer.updated')).filter((e) => e.data.customer.id === customer.id);
  t.is(updated.length, 1);
  t.deepEqual(updated[0].data, { customer: again.body.data.customer });
});

test('read, partial update (PUT = PATCH) and list with q', async (t) => {
  const { body } = await owner.client.post('/api/v1/customers', { email: 'grace@navy.mil', name: 'Grace Hopper', company: 'US Navy', country: 'us' });
  const id = body.data.customer.id;
  t.is(body.data.customer.country, 'US');
  const got = await owner.client.get(`/api/v1/customers/${id}`);
  t.deepEqual(got.body.data.customer, body.data.customer);
  const patched = await owner.client.patch(`/api/v1/customers/${id}`, { notes: 'Admiral' });
  t.like(patched.body.data.customer, { name: 'Grace Hopper', notes: 'Admiral' });
  const put = await owner.client.put(`/api/v1/customers/${id}`, { phone: '555' });
  t.like(put.body.data.customer, { name: 'Grace Hopper', notes: 'Admiral', phone: '555' });
  for (const q of ['grace', 'NAVY.MIL', 'us nav', 'HOPPER']) {
    const list = await owner.client.get(`/api/v1/customers?q=${encodeURIComponent(q)}`);
    t.true(list.body.data.customers.some((c: { id: number }) => c.id === id), q);
  }
  const none = await owner.client.get('/api/v1/customers?q=%25');
  t.false(none.body.data.customers.some((c: { id: number }) => c.id === id), 'q is a plain substring, not a pattern');
  const all = await owner.client.get('/api/v1/customers?q=');
  t.true(all.body.data.customers.length >= 1);
});

test('another workspace cannot see or touch the customer (404), bad ids are 400', async (t) => {
  const { body } = await owner.client.post('/api/v1/customers', { email: 'private@example.com' });
  const id = body.data.customer.id;
  const other = await signUpOwner(app, 'Other');
  t.is((await other.client.get(`/api/v1/customers/${id}`)).status, 404);
  t.is((await other.client.patch(`/api/v1/customers/${id}`, { name: 'x' })).status, 404);
  t.is((await other.client.delete(`/api/v1/customers/${id}`)).status, 404);
  t.false((await other.client.get('/api/v1/customers')).body.data.customers.some((c: { id: number }) => c.id === id));
  t.is((await owner.client.get('/api/v1/customers/abc')).status, 400);
});

test('delete with dependents: 409 with counts, then cascade=1 removes them in one go', async (t) => {
  const { body } = await owner.client.post('/api/v1/customers', { email: 'cascade@example.com' });
  const id = body.data.customer.id;
  const ws = owner.workspace.id;
  await app.db('quotes').insert([1, 2].map((n) => ({ workspace_id: ws, quote_number: `Q-T-${id}-${n}`, customer_id: id, public_token: `tok-${id}-${n}` })));
  await app.db('orders').insert({ workspace_id: ws, external_id: `ext-${id}`, customer_id: id });
  await app.db('visitors').insert({ workspace_id: ws, visitor_id: `v-${id}`, customer_id: id });
  const refused = await owner.client.delete(`/api/v1/customers/${id}`);
  t.is(refused.status, 409);
  t.truthy(refused.body.error);
  t.deepEqual(refused.body.data, { dependents: { quotes: 2, orders: 1, visitors: 1, hidden: 0 } });
  t.is((await owner.client.get(`/api/v1/customers/${id}`)).status, 200);
  const deleted = await owner.client.delete(`/api/v1/customers/${id}?cascade=1`);
  t.is(deleted.status, 200);
  t.is(deleted.body.data.customer.id, id);
  t.is((await owner.client.get(`/api/v1/customers/${id}`)).status, 404);
  for (const table of ['quotes', 'orders', 'visitors']) t.is((await app.db(table).where({ customer_id: id })).length, 0, table);
  const [event] = (await events('customer.deleted')).filter((e) => e.data.customer.id === id);
  t.deepEqual(event.data, { customer: body.data.customer });
});

test('delete without dependents needs no cascade', async (t) => {
  const { body } = await owner.client.post('/api/v1/customers', { email: 'plain@example.com' });
  const res = await owner.client.delete(`/api/v1/customers/${body.data.customer.id}`);
  t.is(res.status, 200);
  t.deepEqual(res.body.data.customer, body.data.customer);
});

test('validation: 422 naming the field; nothing written', async (t) => {
  const owner = await signUpOwner(app, 'Validation');
  for (const [input, field] of [
    [{}, 'email'],
    [{ email: 'nope' }, 'email'],
    [{ email: 'x@y.co', country: 'USA' }, 'country'],
    [{ email: 'x@y.co', name: 'n'.repeat(201) }, 'name'],
    [{ email: 'x@y.co', notes: 42 }, 'notes'],
  ] as const) {
    const res = await owner.client.post('/api/v1/customers', input);
    t.is(res.status, 422, JSON.stringify(input));
    t.regex(res.body.error, new RegExp(`^${field}`));
  }
  t.is((await app.db('customers').where({ workspace_id: owner.workspace.id })).length, 0);
  t.is((await app.db('events').where({ workspace_id: owner.workspace.id })).length, 0);
});

test('changing the email to one another customer has is 409', async (t) => {
  await owner.client.post('/api/v1/customers', { email: 'taken@example.com' });
  const { body } = await owner.client.post('/api/v1/customers', { email: 'mover@example.com' });
  const res = await owner.client.patch(`/api/v1/customers/${body.data.customer.id}`, { email: 'TAKEN@example.com' });
  t.is(res.status, 409);
  t.regex(res.body.error, /taken@example.com/);
});

test('a long list streams every row once, in id order, across pages', async (t) => {
  const big = await signUpOwner(app, 'Big');
  const rows = 2 * PAGE_ROWS + 345;
  await app.db.raw(
    `insert into customers (workspace_id, email, name, company)
     select ?, 'bulk' || n || '@example.com', 'Bulk ' || n, case when n % 2 = 0 then 'Even Co' else 'Odd Co' end from generate_series(1, ?::int) n`,
    [big.workspace.id, rows],
  );
  // Rewritten rows move to the end of the table, so its physical order is no longer the order of ids.
  await app.db.raw(`update customers set name = name || '' where workspace_id = ? and id % 3 = 0`, [big.workspace.id]);
  const res = await big.client.get('/api/v1/customers');
  t.is(res.status, 200);
  t.regex(res.headers.get('content-type')!, /^application\/json/);
  t.is(res.body.version, 'v1');
  const list = res.body.data.customers as { id: number; email: string }[];
  t.is(list.length, rows);
  t.deepEqual(list.map((c) => c.id), [...list.map((c) => c.id)].sort((a, b) => a - b));
  t.is(new Set(list.map((c) => c.id)).size, rows);
  const even = await big.client.get('/api/v1/customers?q=even%20co');
  t.is(even.body.data.customers.length, Math.floor(rows / 2));
  const none = await big.client.get('/api/v1/customers?q=nobody-at-all');
  t.deepEqual(none.body, { version: 'v1', data: { customers: [] } });
});
