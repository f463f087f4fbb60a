import test, { type ExecutionContext } from 'ava';
import { startApp, signUpOwner, uniqueEmail, type Owner } from '../helpers/app.js';
import { useOwnerApp } from '../helpers/fixture.js';
import { inviteMember, type Member } from '../helpers/members.js';
import { postgresTest } from '../helpers/cli.js';
import type { Client, RequestOptions } from '../helpers/client.js';

const { app, smtp, owner } = useOwnerApp(test, { workspace: 'Quotes', smtp: true });
let mia: Member;
test.before(async () => {
  mia = await inviteMember(app, smtp, owner);
  await product(owner, 'Q');
});

const year = new Date().getUTCFullYear();
const money = /^\d+\.\d{2}$/;
const bearer = (o: Owner) => ({ headers: { authorization: `Bearer ${o.keys.secret_key}` } });

/** A product with a priced variant `<prefix>-RED` (12.50) and an unpriced one `<prefix>-BARE`. */
async function product(o: Owner, prefix: string): Promise<any> {
  const res = await o.client.post('/api/v1/products', {
    sku: `${prefix}-WIDGET`,
    name: 'Widget',
    variants: [
      { sku: `${prefix}-RED`, name: 'Red widget', price: '12.50' },
      { sku: `${prefix}-BARE`, name: 'Bare widget' },
    ],
  });
  if (res.status !== 201) throw new Error(`product failed: ${res.status} ${res.text}`);
  return res.body.data.product;
}

const buyers = new WeakMap<Client, number>();

/**
 * The id of a customer of the client's workspace, for quotes that need one (inserted directly, so
 * that tests counting events see only their own).
 */
async function buyer(client: Client): Promise<number> {
  const known = buyers.get(client);
  if (known) return known;
  const me = await client.get('/api/v1/auth/me');
  const [row] = await app.db('customers').insert({ workspace_id: me.body.data.workspace.id, email: uniqueEmail('buyer').toLowerCase(), name: 'Buyer' }).returning('id');
  buyers.set(client, row.id);
  return row.id;
}

/** A quote body with the client's customer unless it names one. */
async function withBuyer(client: Client, fields: Record<string, unknown>): Promise<Record<string, unknown>> {
  return 'customer' in fields || 'customer_id' in fields ? fields : { customer_id: await buyer(client), ...fields };
}

/** POST /api/v1/quotes with the client's customer unless the body names one. */
async function postQuote(client: Client, body: Record<string, unknown>) {
  return client.post('/api/v1/quotes', await withBuyer(client, body));
}

/** A draft quote with one 10.00 line, by `client` (the owner's by default). */
async function draft(fields: Record<string, unknown> = {}, client: Client = owner.client): Promise<any> {
  const res = await client.post('/api/v1/quotes', await withBuyer(client, { lines: [{ description: 'Work', quantity: 1, price: '10.00' }], ...fields }));
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.text}`);
  return res.body.data.quote;
}

async function act(quoteId: number, action: string, client: Client = owner.client) {
  return client.post(`/api/v1/quotes/${quoteId}/${action}`, action === 'send' ? { notify: false } : undefined);
}

/** A quote walked through the API into `status`. */
async function quoteIn(status: string, fields: Record<string, unknown> = {}): Promise<any> {
  const paths: Record<string, string[]> = {
    draft: [],
    sent: ['send'],
    accepted: ['send', 'accept'],
    declined: ['send', 'decline'],
    cancelled: ['cancel'],
    paid: ['send', 'accept', 'mark-paid'],
  };
  let quote = await draft(fields);
  for (const action of paths[status]) {
    const res = await act(quote.id, action);
    if (res.status !== 200) throw new Error(`${action} failed: ${res.status} ${res.text}`);
    quote = res.body.data.quote;
  }
  if (quote.status !== status) throw new Error(`expected ${status}, got ${quote.status}`);
  return quote;
}

const events = (o: Owner, type: string) => app.db('events').where({ workspace_id: o.workspace.id, type }).orderBy('created_at');
const quoteEvents = async (type: string, quoteId: number, o: Owner = owner) =>
  (await events(o, type)).filter((e) => (e.data.quote?.id ?? e.data.quote_id) === quoteId);
const allQuoteEvents = async (quoteId: number, o: Owner = owner) =>
  (await app.db('events').where({ workspace_id: o.workspace.id }).whereLike('type', 'quote.%')).filter((e) => (e.data.quote?.id ?? e.data.quote_id) === quoteId);
const get = async (id: number, client: Client = owner.client) => (await client.get(`/api/v1/quotes/${id}`)).body.data;
const listIds = async (client: Client, query = ''): Promise<number[]> => {
  const res = await client.get(`/api/v1/quotes${query}`);
  if (res.status !== 200) throw new Error(`list failed: ${res.status} ${res.text}`);
  return res.body.data.quotes.map((q: { id: number }) => q.id);
};
const numberOf = (quote: { quote_number: string }) => Number(quote.quote_number.slice(-6));

function assertMoney(t: ExecutionContext, record: Record<string, unknown>, fields: string[]) {
  for (const field of fields) t.regex(String(record[field]), money, field);
  for (const field of fields) t.is(typeof record[field], 'string', field);
}

test('create with lines and an upserted customer; read with lines and activities; events as the catalogue', async (t) => {
  const email = uniqueEmail('Buyer');
  const created = await postQuote(owner.client, {
    customer: { email: `  ${email.toUpperCase()} `, name: 'Bea Buyer', company: 'Buyers Ltd' },
    currency: 'eur',
    discount_amount: 1,
    tax_rate: '20',
    notes: 'Thanks',
    valid_until: '2031-01-31',
    lines: [
      { sku: 'Q-RED', quantity: 2 },
      { description: 'Setup', quantity: '1.5', price: 0.99 },
    ],
  });
  t.is(created.status, 201, created.text);
  t.deepEqual(Object.keys(created.body.data).sort(), ['lines', 'quote']);
  const { quote, lines } = created.body.data;
  t.regex(quote.quote_number, new RegExp(`^Q-${year}-\\d{6}$`));
  t.like(quote, {
    status: 'draft', currency: 'EUR', subtotal: '26.49', discount_amount: '1.00', tax_rate: '20', tax_amount: '5.10', total: '30.59',
    customer_name: 'Bea Buyer', customer_email: email.toLowerCase(), channel_id: null, notes: 'Thanks', valid_until: '2031-01-31', external_id: null, sent_at: null,
  });
  assertMoney(t, quote, ['subtotal', 'discount_amount', 'tax_amount', 'total']);
  t.regex(quote.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  t.is(lines.length, 2);
  t.like(lines[0], { quote_id: quote.id, sku: 'Q-RED', description: 'Widget, Red widget', quantity: '2', price: '12.50', line_total: '25.00' });
  t.truthy(lines[0].variant_id, 'the variant named by the SKU is linked');
  t.like(lines[1], { sku: null, variant_id: null, description: 'Setup', quantity: '1.5', price: '0.99', line_total: '1.49' });

  // The customer was upserted (customer.created) and is linked.
  const customer = (await app.db('customers').where({ workspace_id: owner.workspace.id, email: email.toLowerCase() }))[0];
  t.like(customer, { name: 'Bea Buyer', company: 'Buyers Ltd' });
  t.is(quote.customer_id, customer.id);
  const customerCreated = (await events(owner, 'customer.created')).filter((e) => e.data.customer.id === customer.id);
  t.is(customerCreated.length, 1);
  t.deepEqual(Object.keys(customerCreated[0].data), ['customer']);

  const [event, ...more] = await quoteEvents('quote.created', quote.id);
  t.is(more.length, 0);
  t.deepEqual(event.data, { quote, lines });

  const read = await owner.client.get(`/api/v1/quotes/${quote.id}`);
  t.is(read.status, 200);
  t.is(read.body.version, 'v1');
  t.deepEqual(Object.keys(read.body.data).sort(), ['activities', 'lines', 'quote', 'url']);
  t.is(read.body.data.url, null, 'a draft has no public page yet');
  t.deepEqual(read.body.data.quote, quote);
  t.deepEqual(read.body.data.lines, lines);
  t.is(read.body.data.activities.length, 1);
  t.like(read.body.data.activities[0], { type: 'created', actor: 'user' });
  t.deepEqual(Object.keys(read.body.data.activities[0]).sort(), ['actor', 'created_at', 'id', 'message', 'type']);

  const row = await app.db('quotes').where({ id: quote.id }).first();
  t.is(row.workspace_id, owner.workspace.id);
  t.is(row.status, 'draft');

  // By customer_id: the quote copies the customer's name and email; a second customer upsert is customer.updated.
  const byId = await postQuote(owner.client, { customer_id: customer.id });
  t.is(byId.status, 201);
  t.like(byId.body.data.quote, { customer_id: customer.id, customer_name: 'Bea Buyer', customer_email: email.toLowerCase(), subtotal: '0.00', total: '0.00', currency: 'USD' });
  t.deepEqual(byId.body.data.lines, []);
  const again = await postQuote(owner.client, { customer: { email, name: 'Bea B.' } });
  t.is(again.body.data.quote.customer_id, customer.id);
  t.is(again.body.data.quote.customer_name, 'Bea B.');
  t.is((await events(owner, 'customer.created')).filter((e) => e.data.customer.id === customer.id).length, 1);

  const unknown = await postQuote(owner.client, { customer_id: 999999 });
  t.is(unknown.status, 422);
  t.regex(unknown.body.error, /^customer_id/);
  const both = await postQuote(owner.client, { customer_id: customer.id, customer: { email } });
  t.is(both.status, 422);
  t.regex(both.body.error, /^customer_id/);
  const badEmail = await postQuote(owner.client, { customer: { email: 'nope' } });
  t.is(badEmail.status, 422);
  t.regex(badEmail.body.error, /^customer\.email/);

  const other = await signUpOwner(app, 'Stranger');
  t.is((await other.client.get(`/api/v1/quotes/${quote.id}`)).status, 404);
  t.is((await other.client.patch(`/api/v1/quotes/${quote.id}`, { notes: 'x' })).status, 404);
  t.is((await other.client.post(`/api/v1/quotes/${quote.id}/cancel`)).status, 404);
  t.is((await other.client.delete(`/api/v1/quotes/${quote.id}`)).status, 404);
  t.is((await owner.client.get('/api/v1/quotes/abc')).status, 400);
});

test('quote_number is Q-<year>-<6 digits>, consecutive per workspace; a failed create takes no number; public_token is long and unique', async (t) => {
  const ws = await signUpOwner(app, 'Numbers');
  await product(ws, 'N');
  const first = await draft({}, ws.client);
  t.is(first.quote_number, `Q-${year}-000001`);
  const email = uniqueEmail('rolledback');
  const failed = await postQuote(ws.client, {
    customer: { email },
    lines: [{ sku: 'N-RED' }, { sku: 'N-BARE', quantity: 1 }],
  });
  t.is(failed.status, 422);
  t.regex(failed.body.error, /^lines\.1\.price/);
  t.is((await app.db('customers').where({ workspace_id: ws.workspace.id, email })).length, 0, 'the upserted customer is rolled back');
  const second = await draft({}, ws.client);
  t.is(second.quote_number, `Q-${year}-000002`);
  const third = await draft({}, ws.client);
  t.is(third.quote_number, `Q-${year}-000003`);
  t.is((await app.db('quotes').where({ workspace_id: ws.workspace.id })).length, 3);
  t.deepEqual(
    (await app.db('events').where({ workspace_id: ws.workspace.id }).select('type')).map((e) => e.type).sort(),
    ['quote.created', 'quote.created', 'quote.created'],
    'the failed create emitted nothing',
  );

  // Another workspace counts on its own.
  const elsewhere = await signUpOwner(app, 'Numbers 2');
  t.is((await draft({}, elsewhere.client)).quote_number, `Q-${year}-000001`);

  const tokens = [first, second, third].map((q) => q.public_token as string);
  for (const token of tokens) t.regex(token, /^[A-Za-z0-9_-]{22,}$/);
  t.is(new Set(tokens).size, 3);
  const duplicates = await app.db('quotes').select('public_token').groupBy('public_token').havingRaw('count(*) > 1');
  t.is(duplicates.length, 0);
});

postgresTest('quote numbers stay gap-free and unique under 50 parallel creates', async (t) => {
  const ws = await signUpOwner(app, 'Parallel');
  const wsBuyer = await buyer(ws.client);
  const results = await Promise.all(Array.from({ length: 50 }, () => postQuote(ws.client, { customer_id: wsBuyer, lines: [{ quantity: 1, price: 1 }] })));
  t.deepEqual(results.map((r) => r.status), Array(50).fill(201));
  const numbers = results.map((r) => r.body.data.quote.quote_number as string);
  t.is(new Set(numbers).size, 50);
  for (const n of numbers) t.regex(n, new RegExp(`^Q-${year}-\\d{6}$`));
  t.deepEqual(numbers.map((n) => Number(n.slice(-6))).sort((a, b) => a - b), Array.from({ length: 50 }, (_, i) => i + 1));
});

test('lines and totals: half-up rounding in decimals, variant prices, money strings, quantity rules', async (t) => {
  const created = await postQuote(owner.client, {
    discount_amount: '0.85',
    tax_rate: 8.125,
    lines: [
      { description: 'a', quantity: 0.333, price: 10.01 },
      { description: 'b', quantity: '1.5', price: '0.99' },
      { description: 'c', quantity: 2.5, price: 0.01 },
    ],
  });
  t.is(created.status, 201, created.text);
  const { quote, lines } = created.body.data;
  t.deepEqual(lines.map((l: any) => [l.quantity, l.price, l.line_total]), [
    ['0.333', '10.01', '3.33'],
    ['1.5', '0.99', '1.49'],
    ['2.5', '0.01', '0.03'],
  ]);
  // subtotal 4.85; (4.85 − 0.85) × 8.125 % = 0.325 → 0.33; total 4.33.
  t.like(quote, { subtotal: '4.85', discount_amount: '0.85', tax_rate: '8.125', tax_amount: '0.33', total: '4.33' });
  for (const line of lines) assertMoney(t, line, ['price', 'line_total']);

  // Adding a line: the price comes from the variant its SKU names.
  const added = await owner.client.post(`/api/v1/quotes/${quote.id}/lines`, { sku: 'Q-RED', quantity: 3 });
  t.is(added.status, 201, added.text);
  t.deepEqual(Object.keys(added.body.data).sort(), ['line', 'quote']);
  t.like(added.body.data.line, { sku: 'Q-RED', description: 'Widget, Red widget', price: '12.50', quantity: '3', line_total: '37.50' });
  t.like(added.body.data.quote, { subtotal: '42.35', tax_amount: '3.37', total: '44.87' }); // 41.50 × 8.125 % = 3.371875
  const [lineAdded] = await quoteEvents('quote.line_added', quote.id);
  t.deepEqual(lineAdded.data, { quote_id: quote.id, line: added.body.data.line });
  const lineId = added.body.data.line.id;

  // Updating it: quantity recomputes the total; a given price wins; a new SKU brings its variant's price.
  const updated = await owner.client.patch(`/api/v1/quotes/${quote.id}/lines/${lineId}`, { quantity: '0.5' });
  t.is(updated.status, 200, updated.text);
  t.like(updated.body.data.line, { quantity: '0.5', price: '12.50', line_total: '6.25' });
  t.like(updated.body.data.quote, { subtotal: '11.10' });
  const [lineUpdated] = await quoteEvents('quote.line_updated', quote.id);
  t.deepEqual(lineUpdated.data, { quote_id: quote.id, line: updated.body.data.line });
  const put = await owner.client.put(`/api/v1/quotes/${quote.id}/lines/${lineId}`, { price: 1.005 });
  t.is(put.status, 422);
  t.regex(put.body.error, /^price/);
  const repriced = await owner.client.put(`/api/v1/quotes/${quote.id}/lines/${lineId}`, { price: 3, description: 'Custom' });
  t.like(repriced.body.data.line, { quantity: '0.5', price: '3.00', line_total: '1.50', description: 'Custom', sku: 'Q-RED' });

  // Removing it.
  const removed = await owner.client.delete(`/api/v1/quotes/${quote.id}/lines/${lineId}`);
  t.is(removed.status, 200);
  t.is(removed.body.data.line.id, lineId);
  t.like(removed.body.data.quote, { subtotal: '4.85', total: '4.33' });
  const [lineRemoved] = await quoteEvents('quote.line_removed', quote.id);
  t.deepEqual(lineRemoved.data, { quote_id: quote.id, line_id: lineId });
  t.is((await owner.client.delete(`/api/v1/quotes/${quote.id}/lines/${lineId}`)).status, 404);
  const read = await get(quote.id);
  t.deepEqual(read.lines, lines);
  t.deepEqual(read.activities.map((a: any) => a.type), ['created', 'line_added', 'line_updated', 'line_updated', 'line_removed']);

  // 422 naming the field, and nothing is written.
  const ws = await signUpOwner(app, 'Line rules');
  await product(ws, 'Q');
  for (const [line, field, next] of [
    [{ description: 'no price' }, 'lines.0.price'],
    [{ sku: 'Q-BARE' }, 'lines.0.price'],
    [{ sku: 'NO-SUCH-SKU' }, 'lines.0.price'],
    [{ sku: 'Q-RED', quantity: 1 }, 'lines.1.price', { description: 'second, no price' }],
    [{ price: 1, quantity: 0 }, 'lines.0.quantity'],
    [{ price: 1, quantity: -1 }, 'lines.0.quantity'],
    [{ price: 1, quantity: '1.2345' }, 'lines.0.quantity'],
    [{ price: 1, quantity: 'two' }, 'lines.0.quantity'],
    [{ price: '1.005' }, 'lines.0.price'],
    [{ price: -1 }, 'lines.0.price'],
    [{ price: '99999999999.99', quantity: '10.001' }, 'lines.0.quantity'], // a line total of 10^12 or more
  ] as [Record<string, unknown>, string, Record<string, unknown>?][]) {
    const res = await postQuote(ws.client, { lines: [line, ...(next ? [next] : [])] });
    t.is(res.status, 422, JSON.stringify(line));
    t.regex(res.body.error, new RegExp(`^${field.replace(/\./g, '\\.')}`), JSON.stringify(line));
  }
  const tooMuch = await postQuote(ws.client, { discount_amount: '5.01', lines: [{ quantity: 1, price: 5 }] });
  t.is(tooMuch.status, 422);
  t.regex(tooMuch.body.error, /^discount_amount/);
  t.is((await app.db('quotes').where({ workspace_id: ws.workspace.id })).length, 0);
  t.is((await app.db('events').where({ workspace_id: ws.workspace.id })).length, 0);
  // The largest line total below 10^12 is taken (numeric(14,2) holds it).
  const largest = await postQuote(ws.client, { lines: [{ quantity: 10, price: '99999999999.99' }] });
  t.is(largest.status, 201, largest.text);
  t.is(largest.body.data.lines[0].line_total, '999999999999.90');

  const lineErrors = [
    [{ description: 'x' }, 'price'],
    [{ price: 1, quantity: 0 }, 'quantity'],
    [{ price: 1, quantity: 0.0001 }, 'quantity'],
  ] as const;
  for (const [line, field] of lineErrors) {
    const res = await owner.client.post(`/api/v1/quotes/${quote.id}/lines`, line);
    t.is(res.status, 422, JSON.stringify(line));
    t.regex(res.body.error, new RegExp(`^${field}`), JSON.stringify(line));
  }
  t.deepEqual((await get(quote.id)).quote, read.quote, 'nothing changed');
});

test('a discount above the subtotal is 422 naming discount_amount, and nothing changes', async (t) => {
  const quote = await draft({ discount_amount: 4 });
  const eventsBefore = (await allQuoteEvents(quote.id)).length;
  const res = await owner.client.patch(`/api/v1/quotes/${quote.id}`, { discount_amount: '10.01', notes: 'changed' });
  t.is(res.status, 422);
  t.regex(res.body.error, /^discount_amount/);
  const lineId = (await get(quote.id)).lines[0].id;
  const cheaper = await owner.client.patch(`/api/v1/quotes/${quote.id}/lines/${lineId}`, { price: '3.99' });
  t.is(cheaper.status, 422);
  t.regex(cheaper.body.error, /discount_amount/);
  const gone = await owner.client.delete(`/api/v1/quotes/${quote.id}/lines/${lineId}`);
  t.is(gone.status, 422);
  t.regex(gone.body.error, /discount_amount/);
  const read = await get(quote.id);
  t.deepEqual(read.quote, quote);
  t.is(read.lines.length, 1);
  t.is((await allQuoteEvents(quote.id)).length, eventsBefore);
  const equal = await owner.client.patch(`/api/v1/quotes/${quote.id}`, { discount_amount: 10 });
  t.is(equal.status, 200);
  t.like(equal.body.data.quote, { discount_amount: '10.00', total: '0.00' });
});

test('partial update of a draft (PATCH = PUT): quote.updated with the quote', async (t) => {
  const quote = await draft({ notes: 'first', tax_rate: 10 });
  const patched = await owner.client.patch(`/api/v1/quotes/${quote.id}`, { discount_amount: 2, currency: ' gbp ', valid_until: '2031-06-30T10:00:00Z' });
  t.is(patched.status, 200, patched.text);
  t.deepEqual(Object.keys(patched.body.data), ['quote']);
  const after = patched.body.data.quote;
  t.like(after, { discount_amount: '2.00', currency: 'GBP', valid_until: '2031-06-30', notes: 'first', tax_rate: '10', tax_amount: '0.80', total: '8.80', status: 'draft' });
  const put = await owner.client.put(`/api/v1/quotes/${quote.id}`, { tax_rate: '0', notes: '' });
  t.is(put.status, 200);
  t.like(put.body.data.quote, { discount_amount: '2.00', currency: 'GBP', valid_until: '2031-06-30', notes: null, tax_rate: '0', tax_amount: '0.00', total: '8.00' });
  const updates = await quoteEvents('quote.updated', quote.id);
  t.is(updates.length, 2);
  t.deepEqual(updates.map((e) => e.data).sort((a, b) => a.quote.tax_rate.localeCompare(b.quote.tax_rate)), [{ quote: put.body.data.quote }, { quote: after }]);
  const unchanged = await owner.client.patch(`/api/v1/quotes/${quote.id}`, {});
  t.deepEqual(unchanged.body.data.quote, put.body.data.quote);
  t.is((await quoteEvents('quote.updated', quote.id)).length, 2, 'an empty update emits nothing');
  const read = await get(quote.id);
  t.deepEqual(read.activities.map((a: any) => [a.type, a.actor]), [['created', 'user'], ['updated', 'user'], ['updated', 'user']]);
  for (const [body, field] of [
    [{ currency: 'EURO' }, 'currency'],
    [{ tax_rate: -1 }, 'tax_rate'],
    [{ discount_amount: 'lots' }, 'discount_amount'],
    [{ valid_until: 'someday' }, 'valid_until'],
  ] as const) {
    const res = await owner.client.patch(`/api/v1/quotes/${quote.id}`, body);
    t.is(res.status, 422, JSON.stringify(body));
    t.regex(res.body.error, new RegExp(`^${field}`));
  }
});

test('a quote that is not a draft cannot be edited: 409 naming the current status, nothing changes', async (t) => {
  for (const status of ['sent', 'accepted', 'cancelled']) {
    const quote = await quoteIn(status);
    const { lines } = await get(quote.id);
    const attempts = [
      await owner.client.patch(`/api/v1/quotes/${quote.id}`, { notes: 'late' }),
      await owner.client.put(`/api/v1/quotes/${quote.id}`, { discount_amount: 1 }),
      await owner.client.post(`/api/v1/quotes/${quote.id}/lines`, { description: 'more', price: 1 }),
      await owner.client.patch(`/api/v1/quotes/${quote.id}/lines/${lines[0].id}`, { quantity: 2 }),
      await owner.client.delete(`/api/v1/quotes/${quote.id}/lines/${lines[0].id}`),
    ];
    for (const res of attempts) {
      t.is(res.status, 409, `${status}: ${res.text}`);
      t.regex(res.body.error, new RegExp(`\\bis ${status}\\b`));
    }
    const read = await get(quote.id);
    t.deepEqual(read.quote, quote);
    t.deepEqual(read.lines, lines);
    t.is((await quoteEvents('quote.updated', quote.id)).length, 0);
  }
});

test('delete: 200 with the snapshot, quote.deleted with it, lines gone', async (t) => {
  const quote = await quoteIn('sent');
  const deleted = await owner.client.delete(`/api/v1/quotes/${quote.id}`);
  t.is(deleted.status, 200);
  t.deepEqual(deleted.body.data, { quote });
  t.is((await owner.client.get(`/api/v1/quotes/${quote.id}`)).status, 404);
  t.is((await owner.client.delete(`/api/v1/quotes/${quote.id}`)).status, 404);
  t.is((await app.db('quote_lines').where({ quote_id: quote.id })).length, 0);
  const [event, ...more] = await quoteEvents('quote.deleted', quote.id);
  t.is(more.length, 0);
  t.deepEqual(event.data, { quote });
});

test('list: status, channel_id, customer_id exact; empty ignored; bad values 422; q over number, customer name and email', async (t) => {
  const ws = await signUpOwner(app, 'Lists');
  const channel = (await ws.client.post('/api/v1/channels', { name: 'Shop' })).body.data.channel;
  const make = async (fields: Record<string, unknown>) => (await postQuote(ws.client, fields)).body.data.quote;
  const a = await make({ customer: { email: 'Alice.Archer@Example.org', name: 'Alice Archer' } });
  const b = await make({ customer: { email: 'bob@builders.test', name: 'Bob Builder' }, channel_id: channel.id });
  const c = await make({ customer_id: a.customer_id, channel_id: channel.id });
  const d = await make({});
  t.is((await ws.client.post(`/api/v1/quotes/${b.id}/send`, { notify: 'false' })).status, 200);

  t.deepEqual(await listIds(ws.client), [a.id, b.id, c.id, d.id]);
  t.deepEqual(await listIds(ws.client, '?status=sent'), [b.id]);
  t.deepEqual(await listIds(ws.client, '?status=draft'), [a.id, c.id, d.id]);
  t.deepEqual(await listIds(ws.client, `?channel_id=${channel.id}`), [b.id, c.id]);
  t.deepEqual(await listIds(ws.client, `?customer_id=${a.customer_id}`), [a.id, c.id]);
  t.deepEqual(await listIds(ws.client, `?customer_id=${a.customer_id}&channel_id=${channel.id}&status=draft`), [c.id]);
  t.deepEqual(await listIds(ws.client, '?status=&channel_id=&customer_id=&q='), [a.id, b.id, c.id, d.id]);
  t.deepEqual(await listIds(ws.client, '?status=paid'), []);
  t.deepEqual(await listIds(ws.client, `?q=${d.quote_number}`), [d.id]);
  t.deepEqual(await listIds(ws.client, `?q=${d.quote_number.toLowerCase()}`), [d.id]);
  t.deepEqual(await listIds(ws.client, '?q=archer'), [a.id, c.id]);
  t.deepEqual(await listIds(ws.client, '?q=BOB%20BUILD'), [b.id]);
  t.deepEqual(await listIds(ws.client, '?q=ALICE.ARCHER%40EXAMPLE'), [a.id, c.id]);
  t.deepEqual(await listIds(ws.client, '?q=builders.TEST'), [b.id]);
  t.deepEqual(await listIds(ws.client, '?q=%25'), [], 'q is a plain substring');
  const full = await ws.client.get('/api/v1/quotes?status=sent');
  t.deepEqual(full.body, { version: 'v1', data: { quotes: [{ ...b, status: 'sent', sent_at: full.body.data.quotes[0].sent_at, updated_at: full.body.data.quotes[0].updated_at }] } });
  t.deepEqual(full.body.data.quotes[0], (await get(b.id, ws.client)).quote, 'list items are the API quote');
  for (const [query, field] of [
    ['status=open', 'status'],
    ['channel_id=abc', 'channel_id'],
    ['channel_id=0', 'channel_id'],
    ['customer_id=-3', 'customer_id'],
    ['customer_id=1.5', 'customer_id'],
  ]) {
    const res = await ws.client.get(`/api/v1/quotes?${query}`);
    t.is(res.status, 422, query);
    t.regex(res.body.error, new RegExp(`^${field}`), query);
  }
  t.false((await listIds(owner.client)).includes(a.id), 'another workspace never lists them');
});

const actions: [string, string][] = [
  ['send', 'sent'],
  ['accept', 'accepted'],
  ['decline', 'declined'],
  ['cancel', 'cancelled'],
  ['mark-paid', 'paid'],
];
const allowed = new Set(['draft>sent', 'draft>cancelled', 'sent>accepted', 'sent>declined', 'sent>cancelled', 'accepted>paid', 'accepted>cancelled']);

test('transitions: each allowed one emits quote.<status> {quote} and writes an activity; every other pair is 409 naming the status', async (t) => {
  const statuses = ['draft', 'sent', 'accepted', 'declined', 'cancelled', 'paid'];
  const stamps: Record<string, string> = { sent: 'sent_at', accepted: 'accepted_at', declined: 'declined_at', cancelled: 'cancelled_at', paid: 'paid_at' };
  let seenAllowed = 0;
  await Promise.all(
    statuses.map(async (from) => {
      // Every refused action on one quote in `from`: a refusal changes nothing.
      const stuck = await quoteIn(from);
      const before = await get(stuck.id);
      const eventsBefore = (await allQuoteEvents(stuck.id)).length;
      for (const [action, to] of actions.filter(([, to]) => !allowed.has(`${from}>${to}`))) {
        const res = await act(stuck.id, action);
        t.is(res.status, 409, `${from} → ${to} must be refused`);
        t.regex(res.body.error, new RegExp(`\\bis ${from}\\b`), `${from} → ${to}: ${res.body.error}`);
      }
      t.deepEqual(await get(stuck.id), before, `refusals from ${from} changed nothing`);
      t.is((await allQuoteEvents(stuck.id)).length, eventsBefore, `refusals from ${from} emitted nothing`);
      // Each allowed action on a fresh quote in `from`.
      for (const [action, to] of actions.filter(([, to]) => allowed.has(`${from}>${to}`))) {
        seenAllowed++;
        const quote = await quoteIn(from);
        const eventsBefore = (await quoteEvents(`quote.${to}`, quote.id)).length;
        const res = await act(quote.id, action);
        t.is(res.status, 200, `${from} → ${to}: ${res.text}`);
        const after = res.body.data.quote;
        t.is(after.status, to);
        t.truthy(after[stamps[to]], `${stamps[to]} is set`);
        const read = await get(quote.id);
        t.deepEqual(read.quote, after);
        t.like(read.activities.at(-1), { type: to, actor: 'user' });
        const emitted = await quoteEvents(`quote.${to}`, quote.id);
        t.is(emitted.length, eventsBefore + 1);
        t.deepEqual(emitted.at(-1).data, { quote: after });
      }
    }),
  );
  t.is(seenAllowed, allowed.size);
  t.is((await owner.client.post('/api/v1/quotes/999999/accept')).status, 404);
});

test('send mails the customer the public link; notify: false sends no mail', async (t) => {
  const email = uniqueEmail('customer');
  const quote = await draft({ customer: { email, name: 'Carla Customer' }, valid_until: '2031-03-01' });
  const sent = await owner.client.post(`/api/v1/quotes/${quote.id}/send`, {});
  t.is(sent.status, 200, sent.text);
  t.is(sent.body.data.quote.status, 'sent');
  const mail = await smtp.waitFor(email);
  t.true(mail.text.includes(`${app.url}/q/${quote.public_token}`), mail.text);
  t.true(mail.text.includes(quote.quote_number));
  const [event] = await quoteEvents('quote.sent', quote.id);
  t.deepEqual(event.data, { quote: sent.body.data.quote });
  t.like((await get(quote.id)).activities.at(-1), { type: 'sent', actor: 'user' });

  const quiet = uniqueEmail('quiet');
  const other = await draft({ customer: { email: quiet } });
  const silent = await owner.client.post(`/api/v1/quotes/${other.id}/send`, { notify: false });
  t.is(silent.status, 200);
  // A mail is sent before the send answers (the 503 and 502 cases depend on it), so none can still be on its way.
  t.false(smtp.mails.some((m) => m.to.includes(quiet)), 'no mail with notify: false');

  // A quote that is not a draft is 409 naming its status, also when it has no email to mail to.
  const again = await owner.client.post(`/api/v1/quotes/${quote.id}/send`, {});
  t.is(again.status, 409);
  t.regex(again.body.error, /\bis sent\b/);
  const noEmail = await quoteIn('accepted');
  const refused = await owner.client.post(`/api/v1/quotes/${noEmail.id}/send`);
  t.is(refused.status, 409);
  t.regex(refused.body.error, /\bis accepted\b/);
  // A draft without a customer email (made before a customer was required) cannot be mailed (422).
  const made = await draft();
  await app.db('quotes').where({ id: made.id }).update({ customer_id: null, customer_email: null });
  const anonymous = (await get(made.id)).quote;
  t.is(anonymous.customer_email, null);
  const unmailable = await owner.client.post(`/api/v1/quotes/${anonymous.id}/send`);
  t.is(unmailable.status, 422);
  t.regex(unmailable.body.error, /^customer/);
  t.deepEqual((await get(anonymous.id)).quote, anonymous);
});

test('send without SMTP_URL: 503 and the quote stays a draft; notify: false still works', async (t) => {
  const noMail = await startApp();
  t.teardown(() => noMail.close());
  const ws = await signUpOwner(noMail, 'No mail');
  const created = await postQuote(ws.client, { customer: { email: 'someone@example.com' } });
  const quote = created.body.data.quote;
  const refused = await ws.client.post(`/api/v1/quotes/${quote.id}/send`);
  t.is(refused.status, 503);
  t.regex(refused.body.error, /SMTP_URL is unset.*"notify": false/, 'the 503 says how to send without mail');
  const read = (await ws.client.get(`/api/v1/quotes/${quote.id}`)).body.data;
  t.deepEqual(read.quote, quote);
  t.is((await noMail.db('events').where({ workspace_id: ws.workspace.id, type: 'quote.sent' })).length, 0);
  const sent = await ws.client.post(`/api/v1/quotes/${quote.id}/send`, { notify: false });
  t.is(sent.status, 200);
  t.is(sent.body.data.quote.status, 'sent');
  t.is(sent.body.data.url, `${noMail.url}/q/${quote.public_token}`, 'the send answer carries the public page url');
  t.is((await fetch(sent.body.data.url)).status, 200);
  const again = await ws.client.post(`/api/v1/quotes/${quote.id}/send`);
  t.is(again.status, 409, 'the wrong status is 409, not 503');
  t.regex(again.body.error, /\bis sent\b/);
});

test('convert: accepted or paid only; the order copies items and totals; 201 then 200 with the same order; order.created once', async (t) => {
  const quote = await quoteIn('accepted', {
    customer: { email: uniqueEmail('convert'), name: 'Conny' },
    discount_amount: '1.00',
    tax_rate: '10',
    lines: [
      { sku: 'Q-RED', quantity: 2 },
      { description: 'Fitting', quantity: 0.333, price: 10.01 },
    ],
  });
  t.like(quote, { subtotal: '28.33', tax_amount: '2.73', total: '30.06' });
  const { lines } = await get(quote.id);
  const res = await owner.client.post(`/api/v1/quotes/${quote.id}/convert`);
  t.is(res.status, 201, res.text);
  t.deepEqual(Object.keys(res.body.data).sort(), ['items', 'order']);
  const { order, items } = res.body.data;
  t.like(order, {
    external_source: 'quote', external_id: `quote:${quote.id}`, quote_id: quote.id, customer_id: quote.customer_id, channel_id: null, currency: quote.currency,
    subtotal: quote.subtotal, discount_amount: quote.discount_amount, tax_amount: quote.tax_amount, total: quote.total, status: 'pending',
  });
  t.deepEqual(
    items.map((i: any) => [i.sku, i.description, i.quantity, i.price, i.line_total]),
    lines.map((l: any) => [l.sku, l.description, l.quantity, l.price, l.line_total]),
  );
  const again = await owner.client.post(`/api/v1/quotes/${quote.id}/convert`);
  t.is(again.status, 200);
  t.deepEqual(again.body.data, { order, items });
  const created = (await events(owner, 'order.created')).filter((e) => e.data.order.id === order.id);
  t.is(created.length, 1);
  t.deepEqual(created[0].data, { order, items });
  // Written by the converting statement: the event's text is the answer's, byte for byte.
  const { rows } = await app.db.raw(`select data::text as text from events where workspace_id = ? and type = 'order.created' and data->'order'->>'id' = ?`, [owner.workspace.id, String(order.id)]);
  t.is(rows[0].text, JSON.stringify({ order, items }));
  t.deepEqual((await owner.client.get(`/api/v1/orders/${order.id}`)).body.data, { order, items });
  t.like((await get(quote.id)).activities.at(-1), { type: 'converted', actor: 'user', message: `Converted to order ${quote.quote_number} (id ${order.id}).` });

  const paid = await quoteIn('paid');
  const fromPaid = await owner.client.post(`/api/v1/quotes/${paid.id}/convert`);
  t.is(fromPaid.status, 201);
  t.like(fromPaid.body.data.order, { external_id: `quote:${paid.id}`, status: 'paid', total: paid.total });

  for (const status of ['draft', 'sent', 'declined', 'cancelled']) {
    const q = await quoteIn(status);
    const refused = await owner.client.post(`/api/v1/quotes/${q.id}/convert`);
    t.is(refused.status, 409, status);
    t.regex(refused.body.error, new RegExp(`\\bis ${status}\\b`));
    t.is((await app.db('orders').where({ external_id: `quote:${q.id}` })).length, 0);
  }
});

test('ten concurrent converts create exactly one order', async (t) => {
  const quote = await quoteIn('accepted');
  const results = await Promise.all(Array.from({ length: 10 }, () => owner.client.post(`/api/v1/quotes/${quote.id}/convert`)));
  t.deepEqual(results.map((r) => r.status).sort(), [200, 200, 200, 200, 200, 200, 200, 200, 200, 201]);
  t.is(new Set(results.map((r) => r.body.data.order.id)).size, 1);
  t.is((await app.db('orders').where({ workspace_id: owner.workspace.id, external_source: 'quote', external_id: `quote:${quote.id}` })).length, 1);
  const orderId = results[0].body.data.order.id;
  t.is((await events(owner, 'order.created')).filter((e) => e.data.order.id === orderId).length, 1);
});

test('external quote: secret key, 201 then 200 with the same quote for the same external_id; quote.created once; other credentials 401', async (t) => {
  const body = {
    external_id: 'crm-42',
    customer: { email: uniqueEmail('external'), name: 'Ext Ernal', company: 'Ext Co' },
    lines: [{ sku: 'Q-RED', quantity: 1 }],
  };
  const created = await app.client().post('/api/v1/quotes/external', body, bearer(owner));
  t.is(created.status, 201, created.text);
  const { quote, lines } = created.body.data;
  t.like(quote, { external_id: 'crm-42', status: 'draft', subtotal: '12.50', total: '12.50', customer_name: 'Ext Ernal' });
  t.regex(quote.quote_number, new RegExp(`^Q-${year}-\\d{6}$`));
  const repeat = await app.client().post('/api/v1/quotes/external', { ...body, lines: [{ description: 'other', price: 1 }] }, bearer(owner));
  t.is(repeat.status, 200);
  t.deepEqual(repeat.body.data, { quote, lines });
  const emitted = await quoteEvents('quote.created', quote.id);
  t.is(emitted.length, 1);
  t.deepEqual(emitted[0].data, { quote, lines });
  t.like((await get(quote.id)).activities[0], { type: 'created', actor: 'api' });
  t.is((await app.db('quotes').where({ workspace_id: owner.workspace.id, external_id: 'crm-42' })).length, 1);

  t.is((await owner.client.post('/api/v1/quotes/external', body)).status, 401, 'session cookie');
  t.is((await app.client().post('/api/v1/quotes/external', body, { headers: { authorization: `Public ${owner.keys.public_key}` } })).status, 401, 'public key');
  t.is((await app.client().post('/api/v1/quotes/external', body, { headers: { authorization: 'Bearer sk_live_wrong' } })).status, 401, 'bad key');
  t.is((await app.client().post('/api/v1/quotes', body, bearer(owner))).status, 401, 'POST /quotes takes a session');
  const parallel = await Promise.all(
    Array.from({ length: 5 }, () => app.client().post('/api/v1/quotes/external', { ...body, external_id: 'crm-parallel' }, bearer(owner))),
  );
  t.deepEqual(parallel.map((r) => r.status).sort(), [200, 200, 200, 200, 201]);
  t.is(new Set(parallel.map((r) => r.body.data.quote.id)).size, 1);
  t.is((await quoteEvents('quote.created', parallel[0].body.data.quote.id)).length, 1);

  const bad = await app.client().post('/api/v1/quotes/external', { customer: body.customer, lines: [{ description: 'x' }] }, bearer(owner));
  t.is(bad.status, 422);
  t.regex(bad.body.error, /^lines\.0\.price/);
  const anonymous = await app.client().post('/api/v1/quotes/external', { lines: [{ description: 'x', price: 1 }] }, bearer(owner));
  t.is(anonymous.status, 422);
  t.regex(anonymous.body.error, /^customer\b/);
});

test('a quote needs customer_id or customer: 422 naming customer, for an empty or unreadable body too, and no number is spent', async (t) => {
  const ws = await signUpOwner(app, 'Customer required');
  const first = await draft({}, ws.client);
  t.is(first.quote_number, `Q-${year}-000001`);
  const bodies: [string, RequestOptions][] = [
    ['lines only', { json: { lines: [{ description: 'x', price: 1 }] } }],
    ['empty object', { json: {} }],
    ['no body', {}],
    ['text/plain', { raw: 'customer_id=1', contentType: 'text/plain' }],
    ['broken JSON', { raw: '{"customer_id": 1,' }],
    ['an array', { json: [{ customer_id: 1 }] }],
  ];
  for (const [name, request] of bodies) {
    const res = await ws.client.request('POST', '/api/v1/quotes', request);
    t.true([400, 415, 422].includes(res.status), `${name}: ${res.status} ${res.text}`);
    if (['lines only', 'empty object', 'no body'].includes(name)) t.regex(res.body.error, /^customer\b/, name);
  }
  t.is((await ws.client.get('/api/v1/quotes')).body.data.quotes.length, 1, 'no empty draft was made');
  const next = await draft({}, ws.client);
  t.is(next.quote_number, `Q-${year}-000002`, 'no number was spent');
});

test('a line priced by a variant SKU is described by the product and variant names unless a description is given', async (t) => {
  const ws = await signUpOwner(app, 'Described');
  const made = await ws.client.post('/api/v1/products', {
    sku: 'TEE', name: 'T-Shirt', variants: [{ sku: 'TEE-S', name: 'Small', price: '9.00' }, { sku: 'TEE-X', price: '11.00' }],
  });
  t.is(made.status, 201, made.text);
  const created = await postQuote(ws.client, { lines: [{ sku: 'TEE-S' }, { sku: 'TEE-X', quantity: 2 }, { sku: 'TEE-S', description: 'Mine' }] });
  t.is(created.status, 201, created.text);
  t.deepEqual(created.body.data.lines.map((l: any) => l.description), ['T-Shirt, Small', 'T-Shirt', 'Mine']);
  t.like(created.body.data.quote, { subtotal: '40.00' });
  const added = await ws.client.post(`/api/v1/quotes/${created.body.data.quote.id}/lines`, { sku: 'TEE-S' });
  t.is(added.status, 201, added.text);
  t.is(added.body.data.line.description, 'T-Shirt, Small');
});

test('a quote in the list has the same bytes as in its single read', async (t) => {
  const ws = await signUpOwner(app, 'Bytes');
  const made = await postQuote(ws.client, {
    customer: { email: uniqueEmail('bytes'), name: 'Zoë "Quote" Ł\\ukasiewicz ✓' },
    notes: 'tab\tnew line\n\u0001 é ✓',
    tax_rate: '8.125',
    valid_until: '2031-01-31',
    lines: [{ description: 'x', quantity: '1.5', price: '0.99' }],
  });
  t.is(made.status, 201, made.text);
  const id = made.body.data.quote.id;
  const list = await ws.client.get('/api/v1/quotes');
  const single = await ws.client.get(`/api/v1/quotes/${id}`);
  const bytes = JSON.stringify(single.body.data.quote);
  t.true(single.text.includes(`"quote":${bytes}`), 'the single read prints the record compactly');
  t.true(list.text.includes(bytes), `list ${list.text} has ${bytes}`);
  t.true(JSON.stringify(made.body.data.quote) === bytes.replace(/"updated_at":"[^"]*"/, `"updated_at":"${made.body.data.quote.updated_at}"`));
});

test('channel access: no role 403 and hidden from lists; viewer reads only; editor writes; no channel is open to members', async (t) => {
  const channel = async (name: string) => (await owner.client.post('/api/v1/channels', { name })).body.data.channel;
  const [hidden, viewed, edited] = await Promise.all([channel('Hidden'), channel('Viewed'), channel('Edited')]);
  t.is((await owner.client.put(`/api/v1/channels/${viewed.id}/members/${mia.user.id}`, { role: 'viewer' })).status, 200);
  t.is((await owner.client.put(`/api/v1/channels/${edited.id}/members/${mia.user.id}`, { role: 'editor' })).status, 200);
  const inHidden = await draft({ channel_id: hidden.id });
  const inViewed = await draft({ channel_id: viewed.id });
  const inEdited = await draft({ channel_id: edited.id });
  const open = await draft();
  const m = mia.client;

  // No role: 403 on everything, and the list hides it.
  for (const res of [
    await m.get(`/api/v1/quotes/${inHidden.id}`),
    await m.patch(`/api/v1/quotes/${inHidden.id}`, { notes: 'x' }),
    await m.post(`/api/v1/quotes/${inHidden.id}/lines`, { description: 'x', price: 1 }),
    await m.post(`/api/v1/quotes/${inHidden.id}/send`, { notify: false }),
    await m.post(`/api/v1/quotes/${inHidden.id}/cancel`),
    await m.post(`/api/v1/quotes/${inHidden.id}/convert`),
    await m.delete(`/api/v1/quotes/${inHidden.id}`),
    await postQuote(m, { channel_id: hidden.id }),
  ]) {
    t.is(res.status, 403, res.text);
    t.truthy(res.body.error);
  }
  const ids = await listIds(m);
  t.false(ids.includes(inHidden.id));
  t.true(ids.includes(inViewed.id) && ids.includes(inEdited.id) && ids.includes(open.id));
  t.deepEqual(await listIds(m, `?channel_id=${hidden.id}`), []);

  // Viewer: reads, cannot write.
  t.is((await m.get(`/api/v1/quotes/${inViewed.id}`)).status, 200);
  for (const res of [
    await m.patch(`/api/v1/quotes/${inViewed.id}`, { notes: 'x' }),
    await m.post(`/api/v1/quotes/${inViewed.id}/lines`, { description: 'x', price: 1 }),
    await m.post(`/api/v1/quotes/${inViewed.id}/send`, { notify: false }),
    await m.delete(`/api/v1/quotes/${inViewed.id}`),
    await postQuote(m, { channel_id: viewed.id }),
  ]) {
    t.is(res.status, 403, res.text);
  }
  t.deepEqual((await get(inViewed.id)).quote, inViewed, 'nothing changed');
  t.deepEqual((await get(inHidden.id)).quote, inHidden, 'nothing changed');

  // Editor: writes.
  const patched = await m.patch(`/api/v1/quotes/${inEdited.id}`, { notes: 'by mia' });
  t.is(patched.status, 200);
  t.is(patched.body.data.quote.notes, 'by mia');
  t.is((await m.post(`/api/v1/quotes/${inEdited.id}/send`, { notify: false })).status, 200);
  t.is((await m.post(`/api/v1/quotes/${inEdited.id}/accept`)).status, 200);
  const created = await postQuote(m, { channel_id: edited.id, lines: [{ description: 'x', price: 1 }] });
  t.is(created.status, 201);

  // No channel: open to a member.
  t.is((await m.get(`/api/v1/quotes/${open.id}`)).status, 200);
  t.is((await m.patch(`/api/v1/quotes/${open.id}`, { notes: 'member' })).status, 200);
  t.is((await m.post(`/api/v1/quotes/${open.id}/cancel`)).status, 200);
});

test('a quote on a channel takes the channel currency unless one is given; without a channel, or its currency, USD', async (t) => {
  const channel = async (fields: Record<string, unknown>) => (await owner.client.post('/api/v1/channels', { name: `Currency ${fields.currency ?? 'none'}`, ...fields })).body.data.channel;
  const [gbp, bare] = await Promise.all([channel({ currency: 'gbp' }), channel({})]);
  t.is(gbp.currency, 'GBP');
  const onGbp = await draft({ channel_id: gbp.id });
  t.is(onGbp.currency, 'GBP');
  t.is((await get(onGbp.id)).quote.currency, 'GBP');
  t.is((await quoteEvents('quote.created', onGbp.id))[0].data.quote.currency, 'GBP');
  // Another currency is asked for explicitly.
  t.is((await draft({ channel_id: gbp.id, currency: ' eur ' })).currency, 'EUR');
  t.is((await draft({ channel_id: gbp.id, currency: 'USD' })).currency, 'USD');
  t.is((await draft({ channel_id: bare.id })).currency, 'USD');
  t.is((await draft()).currency, 'USD');
  // The same for a backend's quote.
  const external = await app.client().post('/api/v1/quotes/external', { customer: { email: uniqueEmail('ext') }, channel_id: gbp.id }, bearer(owner));
  t.is(external.status, 201, external.text);
  t.is(external.body.data.quote.currency, 'GBP');
  // A member with a role on the channel gets the same.
  t.is((await owner.client.put(`/api/v1/channels/${gbp.id}/members/${mia.user.id}`, { role: 'editor' })).status, 200);
  t.is((await draft({ channel_id: gbp.id }, mia.client)).currency, 'GBP');
});

test('GET /quotes/{id} carries the public page url once the quote is sent, as send answers it; null for a draft; the list has none', async (t) => {
  const quote = await draft();
  const before = await owner.client.get(`/api/v1/quotes/${quote.id}`);
  t.is(before.status, 200);
  t.is(before.body.data.url, null, 'a draft has no public page yet');
  const sent = await act(quote.id, 'send');
  t.is(sent.body.data.url, `${app.url}/q/${quote.public_token}`);
  const after = await owner.client.get(`/api/v1/quotes/${quote.id}`);
  t.deepEqual(Object.keys(after.body.data).sort(), ['activities', 'lines', 'quote', 'url']);
  t.is(after.body.data.url, sent.body.data.url);
  t.is((await app.client().get(new URL(after.body.data.url).pathname)).status, 200, 'the url is the page');
  for (const status of ['accepted', 'paid', 'declined', 'cancelled']) {
    const other = await quoteIn(status);
    // Whatever the status but draft, the page opens (a quote cancelled as a draft shows it is cancelled).
    t.is((await get(other.id)).url, `${app.url}/q/${other.public_token}`, status);
  }
  const listed = (await owner.client.get('/api/v1/quotes')).body.data.quotes.find((q: { id: number }) => q.id === quote.id);
  t.is(listed.url, undefined);
  t.is(listed.public_token, quote.public_token, 'the list gives the token the url is made of');
});

/** The date `days` from today (UTC), YYYY-MM-DD. */
const dayFromToday = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString().slice(0, 10);

/** Puts the quote's valid_until in the past as time would (it is editable on drafts only). */
async function expire(quoteId: number, day = '2025-01-01'): Promise<void> {
  await app.db('quotes').where({ id: quoteId }).update({ valid_until: day });
}

test('past valid_until, accept and mark-paid are 409 naming valid_until and nothing changes; decline and cancel still work', async (t) => {
  const sent = await quoteIn('sent', { valid_until: dayFromToday(30) });
  await expire(sent.id);
  const accept = await act(sent.id, 'accept');
  t.is(accept.status, 409, accept.text);
  t.regex(accept.body.error, /expired on 2025-01-01 \(valid_until\).*can no longer be accepted/);
  t.is((await get(sent.id)).quote.status, 'sent');
  t.is((await quoteEvents('quote.accepted', sent.id)).length, 0);
  t.false((await get(sent.id)).activities.some((a: { type: string }) => a.type === 'accepted'));

  const accepted = await quoteIn('accepted', { valid_until: dayFromToday(30) });
  await expire(accepted.id, dayFromToday(-1));
  const paid = await act(accepted.id, 'mark-paid');
  t.is(paid.status, 409, paid.text);
  t.regex(paid.body.error, new RegExp(`expired on ${dayFromToday(-1)} \\(valid_until\\).*can no longer be paid`));
  t.is((await get(accepted.id)).quote.status, 'accepted');
  t.is((await quoteEvents('quote.paid', accepted.id)).length, 0);

  // The status comes first: an answered quote is 409 naming its status, expired or not.
  const declined = await quoteIn('declined', { valid_until: dayFromToday(30) });
  await expire(declined.id);
  t.regex((await act(declined.id, 'accept')).body.error, /is declined/);

  // Declining or cancelling an expired quote closes it.
  t.is((await act(sent.id, 'decline')).status, 200);
  t.is((await act(accepted.id, 'cancel')).status, 200);

  // valid_until is the last day the quote holds: tomorrow (and until the end of today) it may still be accepted and paid.
  const valid = await quoteIn('sent', { valid_until: dayFromToday(1) });
  t.is((await act(valid.id, 'accept')).status, 200);
  t.is((await act(valid.id, 'mark-paid')).status, 200);
});

test('sending a quote whose valid_until has passed is 409 naming valid_until; it stays a draft until the date is changed', async (t) => {
  const quote = await draft({ valid_until: '2025-01-01' });
  const res = await act(quote.id, 'send');
  t.is(res.status, 409, res.text);
  t.regex(res.body.error, /valid_until \(2025-01-01\) has passed/);
  t.is((await get(quote.id)).quote.status, 'draft');
  t.is((await quoteEvents('quote.sent', quote.id)).length, 0);
  // Mail is not the reason: with notify too it is the 409.
  t.is((await owner.client.post(`/api/v1/quotes/${quote.id}/send`, {})).status, 409);
  t.is((await owner.client.patch(`/api/v1/quotes/${quote.id}`, { valid_until: dayFromToday(14) })).status, 200);
  t.is((await act(quote.id, 'send')).status, 200);
  const open = await draft({ valid_until: null });
  t.is((await act(open.id, 'send')).status, 200, 'no valid_until never expires');
});
