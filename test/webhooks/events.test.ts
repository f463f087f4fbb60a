import test from 'ava';
import { useOwnerApp } from '../helpers/fixture.js';
import { eventId } from '../../src/events/outbox.js';
import { captureLogs } from '../helpers/logs.js';

// The outbox failures injected below answer 500 on purpose (the operation fails whole).
const { app, owner } = useOwnerApp(test, { allowServerErrors: true });

/**
 * `work` run while every event fails to be written, with what was logged meanwhile: a trigger refuses each outbox row,
 * after the operation's own writes in the same transaction have succeeded (the failure injected between the two).
 */
async function withoutEvents<T>(work: () => Promise<T>): Promise<{ result: T; logs: Record<string, any>[] }> {
  await app.db.raw(`create function refuse_event() returns trigger language plpgsql as $$ begin raise exception 'outbox refused (test)'; end $$`);
  await app.db.raw('create trigger refuse_event before insert on events for each row execute function refuse_event()');
  try {
    return await captureLogs(work);
  } finally {
    await app.db.raw('drop trigger refuse_event on events');
    await app.db.raw('drop function refuse_event()');
  }
}

/** A failed operation's answer: a 500 naming a request id, nothing of the change in it. */
function failed(t: { is(a: unknown, b: unknown): void; regex(a: string, r: RegExp): void }, res: { status: number; body: any }): void {
  t.is(res.status, 500);
  t.regex(res.body.error, /Something went wrong on our side \(request /);
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

test.serial('an outbox write that fails fails the operation: the customer is neither created, changed nor deleted', async (t) => {
  const kept = await owner.client.post('/api/v1/customers', { email: 'kept@example.com', name: 'Kept' });
  const id = kept.body.data.customer.id;
  const events = async () => (await app.db('events').where({ workspace_id: owner.workspace.id })).length;
  const before = await events();
  const { logs } = await withoutEvents(async () => {
    failed(t, await owner.client.post('/api/v1/customers', { email: 'lost@example.com', name: 'Lost' }));
    failed(t, await owner.client.patch(`/api/v1/customers/${id}`, { name: 'Changed' }));
    failed(t, await owner.client.delete(`/api/v1/customers/${id}`));
  });
  t.falsy(await app.db('customers').where({ workspace_id: owner.workspace.id, email: 'lost@example.com' }).first());
  t.like((await owner.client.get(`/api/v1/customers/${id}`)).body.data.customer, { name: 'Kept' });
  t.is(await events(), before);
  t.deepEqual(logs.filter((l) => l.msg === 'unhandled error').length, 3);
  // The same operations once the outbox takes rows again: each with its event.
  t.is((await owner.client.post('/api/v1/customers', { email: 'lost@example.com', name: 'Lost' })).status, 201);
  t.is((await owner.client.delete(`/api/v1/customers/${id}`)).status, 200);
  t.is(await events(), before + 2);
});

test.serial('a quote deleted while its quote.deleted cannot be written stays, and is deleted with its event once it can', async (t) => {
  const created = await owner.client.post('/api/v1/quotes', { customer: { email: 'deleting@example.com' }, lines: [{ description: 'Kept', price: '1.00' }] });
  const id = created.body.data.quote.id;
  const { result } = await withoutEvents(() => owner.client.delete(`/api/v1/quotes/${id}`));
  failed(t, result);
  t.is((await owner.client.get(`/api/v1/quotes/${id}`)).status, 200);
  t.is((await owner.client.delete(`/api/v1/quotes/${id}`)).status, 200);
  t.is((await owner.client.get(`/api/v1/quotes/${id}`)).status, 404);
  const { rows } = await app.db.raw(`select 1 from events where workspace_id = ? and type = 'quote.deleted' and data->'quote'->>'id' = ?`, [owner.workspace.id, String(id)]);
  t.is(rows.length, 1);
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

test.serial('a quote creation whose event cannot be written fails: no quote, no number taken', async (t) => {
  const customer = await owner.client.post('/api/v1/customers', { email: 'numbered@example.com' });
  const quotes = async () => (await app.db('quotes').where({ workspace_id: owner.workspace.id })).length;
  const before = await quotes();
  const { result: refused } = await withoutEvents(() => owner.client.post('/api/v1/quotes', { customer_id: customer.body.data.customer.id, lines: [{ description: 'Lost', price: '1.00' }] }));
  failed(t, refused);
  t.is(await quotes(), before);
  const previous = await owner.client.post('/api/v1/quotes', { customer_id: customer.body.data.customer.id, lines: [{ description: 'First', price: '1.00' }] });
  const next = await owner.client.post('/api/v1/quotes', { customer_id: customer.body.data.customer.id, lines: [{ description: 'Next', price: '1.00' }] });
  t.is(Number(next.body.data.quote.quote_number.slice(-6)), Number(previous.body.data.quote.quote_number.slice(-6)) + 1);
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

test.serial('a transition whose event cannot be written fails: the quote stays where it was, without the activity', async (t) => {
  const created = await owner.client.post('/api/v1/quotes', { customer: { email: 'moving@example.com' }, lines: [{ description: 'Staying', price: '1.00' }] });
  const id = created.body.data.quote.id;
  const { result: cancelled } = await withoutEvents(() => owner.client.post(`/api/v1/quotes/${id}/cancel`));
  failed(t, cancelled);
  const read = await owner.client.get(`/api/v1/quotes/${id}`);
  t.is(read.body.data.quote.status, 'draft');
  t.deepEqual(read.body.data.activities.map((a: any) => a.type), ['created']);
});

test.serial('a conversion whose order.created cannot be written fails: no order, the quote still accepted', async (t) => {
  const created = await owner.client.post('/api/v1/quotes', { customer: { email: 'converting@example.com' }, tax_rate: '10', lines: [{ description: 'One', price: '1.00' }] });
  const id = created.body.data.quote.id;
  for (const step of ['send', 'accept']) t.is((await owner.client.post(`/api/v1/quotes/${id}/${step}`, { notify: false })).status, 200);
  const orders = async () => (await app.db('orders').where({ workspace_id: owner.workspace.id })).length;
  const before = await orders();
  const { result: converted } = await withoutEvents(() => owner.client.post(`/api/v1/quotes/${id}/convert`));
  failed(t, converted);
  t.is(await orders(), before);
  t.is((await owner.client.get(`/api/v1/quotes/${id}`)).body.data.quote.status, 'accepted');
  t.is((await owner.client.post(`/api/v1/quotes/${id}/convert`)).status, 201);
});

test.serial("a line change's event carries the answer's line byte for byte; a removal whose event cannot be written keeps the line", async (t) => {
  const created = await owner.client.post('/api/v1/quotes', { customer: { email: 'lines@example.com' }, lines: [{ description: 'First', price: '1.00' }] });
  const id = created.body.data.quote.id;
  const added = await owner.client.post(`/api/v1/quotes/${id}/lines`, { description: 'Second', quantity: '2', price: '2.00' });
  t.is(added.status, 201);
  const { rows } = await app.db.raw(`select data::text as text from events where workspace_id = ? and type = 'quote.line_added' and data->>'quote_id' = ?`, [owner.workspace.id, String(id)]);
  t.is(rows.length, 1);
  t.is(rows[0].text, JSON.stringify({ quote_id: id, line: added.body.data.line }));
  const { result: removed } = await withoutEvents(() => owner.client.delete(`/api/v1/quotes/${id}/lines/${added.body.data.line.id}`));
  failed(t, removed);
  const read = await owner.client.get(`/api/v1/quotes/${id}`);
  t.is(read.body.data.quote.subtotal, '5.00');
  t.deepEqual(read.body.data.activities.map((a: any) => a.type), ['created', 'line_added']);
});
