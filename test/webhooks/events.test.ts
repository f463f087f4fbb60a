import test from 'ava';
import { useOwnerApp } from '../helpers/fixture.js';
import { eventId } from '../../src/events/outbox.js';
import { captureLogs } from '../helpers/logs.js';

const { app, owner } = useOwnerApp(test);

/** `work` run while every event fails to be written (the events table renamed away), with what was logged meanwhile. */
async function withoutEvents<T>(work: () => Promise<T>): Promise<{ result: T; logs: Record<string, any>[] }> {
  await app.db.schema.renameTable('events', 'events_unavailable');
  try {
    return await captureLogs(work);
  } finally {
    await app.db.schema.renameTable('events_unavailable', 'events');
  }
}

test('event ids are evt_ + 26 Crockford base-32 characters, and unique', (t) => {
  const ids = new Set(Array.from({ length: 2000 }, () => eventId()));
  t.is(ids.size, 2000);
  for (const id of [...ids].slice(0, 200)) t.regex(id, /^evt_[0-9A-HJKMNP-TV-Z]{26}$/);
});

test.serial('an outbox row carries type, created, workspace and data in the API shape', async (t) => {
  const before = Math.floor(Date.now() / 1000);
  const res = await owner.client.post('/api/v1/customers', { email: 'shape@example.com', name: 'Shape' });
  const [event] = await app.db('events').where({ workspace_id: owner.workspace.id, type: 'customer.created' });
  t.is(event.type, 'customer.created');
  t.is(event.workspace_id, owner.workspace.id);
  t.deepEqual(event.data, { customer: res.body.data.customer });
  const created = Math.floor(new Date(event.created_at).getTime() / 1000);
  t.true(created >= before - 1 && created <= Math.ceil(Date.now() / 1000));
});

test.serial('a failing emitter is logged and swallowed: the operation succeeds and commits', async (t) => {
  const { logs } = await withoutEvents(async () => {
    const created = await owner.client.post('/api/v1/customers', { email: 'survivor@example.com', name: 'Survivor' });
    t.is(created.status, 201);
    const updated = await owner.client.patch(`/api/v1/customers/${created.body.data.customer.id}`, { name: 'Still here' });
    t.is(updated.status, 200);
    const deleted = await owner.client.delete(`/api/v1/customers/${created.body.data.customer.id}`);
    t.is(deleted.status, 200);
    const again = await owner.client.post('/api/v1/customers', { email: 'kept@example.com' });
    t.is(again.status, 201);
    t.truthy(await app.db('customers').where({ workspace_id: owner.workspace.id, email: 'kept@example.com' }).first());
  });
  const logged = logs.filter((l) => l.msg === 'event not emitted');
  t.deepEqual(logged.map((l) => l.type), ['customer.created', 'customer.updated', 'customer.deleted', 'customer.created']);
  t.true(logged.every((l) => l.workspace_id === owner.workspace.id));
});

test.serial('events commit with the change; a refused change writes none', async (t) => {
  const count = async () => (await app.db('events').where({ workspace_id: owner.workspace.id })).length;
  const before = await count();
  await owner.client.post('/api/v1/customers', { email: 'committed@example.com' });
  t.is(await count(), before + 1);
  // A refused change (email clash) writes no event.
  const { body } = await owner.client.post('/api/v1/customers', { email: 'other@example.com' });
  const after = await count();
  const clash = await owner.client.patch(`/api/v1/customers/${body.data.customer.id}`, { email: 'committed@example.com' });
  t.is(clash.status, 409);
  t.is(await count(), after);
});

test.serial('quote.created is written by the creating statement: its data is the answer, byte for byte', async (t) => {
  const res = await owner.client.post('/api/v1/quotes', {
    customer: { email: 'bytes@example.com', name: 'Bytes' },
    lines: [{ description: 'Bytes', quantity: '2', price: '3.50' }],
    notes: 'Grüße, "quoted"',
  });
  t.is(res.status, 201);
  const { rows } = await app.db.raw(`select data::text as text from events where workspace_id = ? and type = 'quote.created' and data->'quote'->>'id' = ?`, [
    owner.workspace.id,
    String(res.body.data.quote.id),
  ]);
  t.is(rows.length, 1);
  t.is(rows[0].text, JSON.stringify(res.body.data));
});

test.serial('a failing emitter on quote creation is logged and swallowed: the quote is numbered and has its activity', async (t) => {
  const customer = await owner.client.post('/api/v1/customers', { email: 'numbered@example.com' });
  const { result: created, logs } = await withoutEvents(() => owner.client.post('/api/v1/quotes', { customer_id: customer.body.data.customer.id, lines: [{ description: 'Survivor', price: '1.00' }] }));
  t.is(created.status, 201);
  t.regex(created.body.data.quote.quote_number, /^Q-\d{4}-\d{6}$/);
  t.is(created.body.data.lines.length, 1);
  const read = await owner.client.get(`/api/v1/quotes/${created.body.data.quote.id}`);
  t.is(read.status, 200);
  t.deepEqual(read.body.data.activities.map((a: any) => a.type), ['created']);
  t.deepEqual(logs.filter((l) => l.msg === 'event not emitted').map((l) => l.type), ['quote.created']);
});

test.serial('a transition is written by one statement: its event data is the answer, byte for byte, with the activity and timestamp', async (t) => {
  const created = await owner.client.post('/api/v1/quotes', { customer: { email: 'moved@example.com' }, lines: [{ description: 'Moved', price: '2.00' }], notes: 'Grüße' });
  const id = created.body.data.quote.id;
  const sent = await owner.client.post(`/api/v1/quotes/${id}/send`, { notify: false });
  t.is(sent.status, 200);
  t.is(sent.body.data.quote.status, 'sent');
  t.truthy(sent.body.data.quote.sent_at);
  t.is(sent.body.data.quote.accepted_at, null);
  const accepted = await owner.client.post(`/api/v1/quotes/${id}/accept`);
  t.is(accepted.status, 200);
  t.is(accepted.body.data.quote.sent_at, sent.body.data.quote.sent_at);
  t.truthy(accepted.body.data.quote.accepted_at);
  for (const [type, answer] of [['quote.sent', sent], ['quote.accepted', accepted]] as const) {
    const { rows } = await app.db.raw(`select data::text as text from events where workspace_id = ? and type = ? and data->'quote'->>'id' = ?`, [owner.workspace.id, type, String(id)]);
    t.is(rows.length, 1, type);
    t.is(rows[0].text, JSON.stringify({ quote: answer.body.data.quote }), type);
  }
  const read = await owner.client.get(`/api/v1/quotes/${id}`);
  t.deepEqual(read.body.data.quote, accepted.body.data.quote);
  const number = read.body.data.quote.quote_number;
  t.deepEqual(read.body.data.activities.map((a: any) => a.type), ['created', 'sent', 'accepted']);
  t.deepEqual(read.body.data.activities.slice(0, 2).map((a: any) => a.message), [`Quote ${number} created.`, `Quote ${number} sent.`]);
  // An acceptance through the API says where it came from and what was accepted (its record is the quote's acceptance).
  t.is(read.body.data.activities[2].message, `Quote ${number} accepted through the API from ${read.body.data.quote.acceptance.ip} (node); SHA-256 of the content accepted: ${read.body.data.quote.acceptance.content_sha256}.`);
  // Not allowed from accepted: 409 naming the status, nothing written.
  const events = async () => (await app.db('events').where({ workspace_id: owner.workspace.id })).length;
  const before = await events();
  const declined = await owner.client.post(`/api/v1/quotes/${id}/decline`);
  t.is(declined.status, 409);
  t.regex(declined.body.error, /is accepted/);
  t.is(await events(), before);
  t.deepEqual((await owner.client.get(`/api/v1/quotes/${id}`)).body.data, read.body.data);
});

test.serial('a failing emitter on a transition is logged and swallowed: the quote moves and has its activity', async (t) => {
  const created = await owner.client.post('/api/v1/quotes', { customer: { email: 'moving@example.com' }, lines: [{ description: 'Survivor', price: '1.00' }] });
  const id = created.body.data.quote.id;
  const { result: cancelled, logs } = await withoutEvents(() => owner.client.post(`/api/v1/quotes/${id}/cancel`));
  t.is(cancelled.status, 200);
  t.is(cancelled.body.data.quote.status, 'cancelled');
  t.truthy(cancelled.body.data.quote.cancelled_at);
  const read = await owner.client.get(`/api/v1/quotes/${id}`);
  t.deepEqual(read.body.data.quote, cancelled.body.data.quote);
  t.deepEqual(read.body.data.activities.map((a: any) => a.type), ['created', 'cancelled']);
  t.deepEqual(logs.filter((l) => l.msg === 'event not emitted').map((l) => l.type), ['quote.cancelled']);
});

test.serial('a failing emitter on a conversion is logged and swallowed: the order is written with its items and totals', async (t) => {
  const created = await owner.client.post('/api/v1/quotes', { customer: { email: 'converting@example.com' }, tax_rate: '10', lines: [{ description: 'One', price: '1.00' }, { description: 'Two', quantity: '2', price: '2.50' }] });
  const id = created.body.data.quote.id;
  for (const step of ['send', 'accept']) t.is((await owner.client.post(`/api/v1/quotes/${id}/${step}`, { notify: false })).status, 200);
  const { result: converted, logs } = await withoutEvents(() => owner.client.post(`/api/v1/quotes/${id}/convert`));
  t.is(converted.status, 201);
  t.like(converted.body.data.order, { subtotal: '6.00', tax_amount: '0.60', total: '6.60', quote_id: id });
  t.deepEqual(converted.body.data.items.map((i: any) => i.description), ['One', 'Two']);
  t.deepEqual((await owner.client.get(`/api/v1/orders/${converted.body.data.order.id}`)).body.data, converted.body.data);
  t.deepEqual(logs.filter((l) => l.msg === 'event not emitted').map((l) => l.type), ['order.created']);
});

test.serial("a line change's event carries the answer's line byte for byte; a failing emitter keeps the change and the activity", async (t) => {
  const created = await owner.client.post('/api/v1/quotes', { customer: { email: 'lines@example.com' }, lines: [{ description: 'First', price: '1.00' }] });
  const id = created.body.data.quote.id;
  const added = await owner.client.post(`/api/v1/quotes/${id}/lines`, { description: 'Second', quantity: '2', price: '2.00' });
  t.is(added.status, 201);
  const { rows } = await app.db.raw(`select data::text as text from events where workspace_id = ? and type = 'quote.line_added' and data->>'quote_id' = ?`, [owner.workspace.id, String(id)]);
  t.is(rows.length, 1);
  t.is(rows[0].text, JSON.stringify({ quote_id: id, line: added.body.data.line }));
  const { result: removed, logs } = await withoutEvents(() => owner.client.delete(`/api/v1/quotes/${id}/lines/${added.body.data.line.id}`));
  t.is(removed.status, 200);
  t.is(removed.body.data.quote.subtotal, '1.00');
  const read = await owner.client.get(`/api/v1/quotes/${id}`);
  t.deepEqual(read.body.data.activities.map((a: any) => [a.type, a.message]), [['created', `Quote ${read.body.data.quote.quote_number} created.`], ['line_added', 'Added line Second.'], ['line_removed', 'Removed line Second.']]);
  t.deepEqual(logs.filter((l) => l.msg === 'event not emitted').map((l) => l.type), ['quote.line_removed']);
});
