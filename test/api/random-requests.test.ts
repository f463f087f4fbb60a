import test from 'ava';
import fc from 'fast-check';
import type { Knex } from 'knex';
import { useOwnerApp } from '../helpers/fixture.js';
import type { RequestOptions } from '../helpers/client.js';
import { quoteStatuses, type QuoteStatus } from '../../src/quotes/schema.js';
import { orderStatuses } from '../../src/orders/schema.js';

/**
 * Property-based: random JSON, wrong types, huge strings, unicode and form bodies thrown at every
 * create/update endpoint, quote transitions included. The answer is always 2xx, a 422 whose message
 * names a field, or a 404/409 with an error string (never a 500); a refused request leaves the
 * workspace's rows exactly as they were (never a half-written quote); and after an accepted one
 * every quote and order still adds up.
 */

type Fields = Record<string, fc.Arbitrary<unknown>>;

interface Target<S = undefined> {
  method: 'POST' | 'PATCH' | 'PUT';
  /** Sets the stage for one run (before the "before" fingerprint) and returns the path to call. */
  path: (state: S) => string | Promise<string>;
  /** Drawn for each run and handed to `path`: e.g. the status the quote is put in first. */
  state?: fc.Arbitrary<S>;
  fields: Fields;
  /** Fields every plausible body has (POST /orders/external cannot do without external_id). */
  required?: string[];
  /** Sent with every request: the secret key of the backend endpoints. */
  headers?: () => Record<string, string>;
  /** What a 422 may name besides the body's fields: checks the service makes against the stored quote. */
  alsoNames?: string[];
  /** Refusals each run must have produced at least once (default 422). */
  refusals?: number[];
  /**
   * A body that must be accepted, run before the random ones: where a plausible body needs several
   * fields to agree (a quote's customer), random bodies get through seldom, and "some bodies were
   * accepted" would depend on luck.
   */
  example?: RequestOptions;
}

const { app, owner } = useOwnerApp(test, { smtp: true });
const ids: Record<string, number> = {};

const tenantTables = [
  'customers', 'products', 'variants', 'channels', 'channel_members', 'events', 'quotes', 'orders', 'visitors',
  'quote_lines', 'quote_activities', 'quote_numbers', 'order_items', 'payment_events', 'webhook_deliveries',
];

/**
 * A digest of every row the workspace owns: equal digests mean nothing was written. Per table the row
 * count and the sum of 64-bit hashes of the rows' text (order-free, so no sort).
 */
async function fingerprint(): Promise<string> {
  const parts = tenantTables.map((table) => `(select count(*) || ':' || coalesce(sum(hashtextextended(t::text, 0)), 0) from ${table} t where t.workspace_id = ?)`);
  const { rows } = await app.db.raw(`select concat_ws(',', ${parts.join(', ')}) as digest`, tenantTables.map(() => owner.workspace.id));
  return rows[0].digest;
}

/**
 * The digest as of the last check, while it is known to hold: a refused request was just shown to have
 * written nothing. Anything that may write (an accepted request, a run's set-up) clears it.
 */
let lastDigest: string | undefined;

/**
 * Quotes and orders whose stored totals do not add up (addendum: line total = quantity × price rounded to
 * cents, subtotal = Σ line totals, discount ≤ subtotal, tax = (subtotal − discount) × rate / 100 rounded,
 * total = subtotal − discount + tax), and numbering with a gap (no quote is deleted here).
 */
async function inconsistencies(): Promise<string[]> {
  const ws = owner.workspace.id;
  const { rows } = await app.db.raw(
    `select 'quote ' || q.id || ' ' || q.quote_number || ': subtotal ' || q.subtotal || ', lines ' || l.subtotal || ', discount ' || q.discount_amount ||
            ', tax ' || q.tax_amount || ' at ' || q.tax_rate || '%, total ' || q.total as what
       from quotes q
       cross join lateral (select coalesce(sum(line_total), 0) as subtotal, coalesce(bool_and(line_total = round(quantity * price, 2)), true) as ok
                             from quote_lines where quote_id = q.id) l
      where q.workspace_id = ?
        and not (l.ok and q.subtotal = l.subtotal and q.discount_amount <= q.subtotal
                 and q.tax_amount = round((q.subtotal - q.discount_amount) * q.tax_rate / 100, 2)
                 and q.total = q.subtotal - q.discount_amount + q.tax_amount)
     union all
     select 'order ' || o.id || ': subtotal ' || o.subtotal || ', items ' || i.subtotal || ', total ' || o.total
       from orders o
       cross join lateral (select coalesce(sum(line_total), 0) as subtotal, coalesce(bool_and(line_total = round(quantity * price, 2)), true) as ok
                             from order_items where order_id = o.id) i
      where o.workspace_id = ? and not (i.ok and o.subtotal = i.subtotal and o.total = o.subtotal - o.discount_amount + o.tax_amount)
     union all
     select 'quote numbers: ' || n.numbers || ' numbers taken for ' || c.quotes || ' quotes'
       from (select coalesce(sum(last_number), 0) as numbers from quote_numbers where workspace_id = ?) n,
            (select count(*) as quotes from quotes where workspace_id = ?) c
      where n.numbers <> c.quotes`,
    [ws, ws, ws, ws],
  );
  return rows.map((r: { what: string }) => r.what);
}

test.before(async () => {
  const customer = await owner.client.post('/api/v1/customers', { email: 'seed@example.com', name: 'Seed' });
  ids.customer = customer.body.data.customer.id;
  const product = await owner.client.post('/api/v1/products', { sku: 'SEED', name: 'Seed', variants: [{ sku: 'SEED-1', price: '1.00' }] });
  ids.product = product.body.data?.product?.id;
  ids.variant = product.body.data?.product?.variants?.[0]?.id;
  const channel = await owner.client.post('/api/v1/channels', { name: 'Seed channel' });
  ids.channel = channel.body.data?.channel?.id;
  ids.user = owner.user.id;
  // A priced variant and a channel of their own for the quotes: the catalogue targets above rename and reprice theirs.
  const priced = await owner.client.post('/api/v1/products', { sku: 'PRICED', name: 'Priced', variants: [{ sku: 'PRICED-1', name: 'Priced one', price: '12.50' }] });
  if (priced.status !== 201) throw new Error(`priced product: ${priced.status} ${priced.text}`);
  const quoteChannel = await owner.client.post('/api/v1/channels', { name: 'Quotes channel' });
  ids.quoteChannel = quoteChannel.body.data.channel.id;
  // Every event also queues a delivery (nothing delivers them here), so webhook_deliveries is fingerprinted too.
  const hook = await owner.client.post('/api/v1/webhooks', { url: 'https://hooks.example.com/quoting', event_types: ['*'] });
  if (hook.status !== 201) throw new Error(`webhook subscription: ${hook.status} ${hook.text}`);
  const order = await owner.client.post(
    '/api/v1/orders/external',
    { external_id: 'seed-order', customer: { email: 'seed@example.com' }, items: [{ sku: 'PRICED-1', quantity: 2, price: '12.50' }] },
    { headers: secretKey() },
  );
  if (order.status !== 201) throw new Error(`seed order: ${order.status} ${order.text}`);
  ids.order = order.body.data.order.id;
});

const secretKey = () => ({ authorization: `Bearer ${owner.keys.secret_key}` });

/** Plausible values per field, so that some bodies get through and exercise the write paths. */
const text = fc.string({ minLength: 1, maxLength: 40 });
const sku = fc.stringMatching(/^[A-Z0-9][A-Z0-9-]{0,11}$/);
const price = fc.oneof(fc.integer({ min: 0, max: 100_000 }), fc.constantFrom('0', '9.99', '1200.50', 12.5));
const variant = fc.record({ sku, name: text, price, attributes: fc.dictionary(fc.string({ maxLength: 6 }), fc.string({ maxLength: 6 }), { maxKeys: 2 }) }, { requiredKeys: ['sku'] });
const email = fc.stringMatching(/^[a-z0-9]{1,10}@[a-z]{1,8}\.(com|org|io)$/);
const customerFields = { email, name: text, company: text, phone: fc.stringMatching(/^\+?[0-9 ]{3,15}$/), country: fc.constantFrom('US', 'de', 'FR'), notes: text };
const productFields = {
  sku, name: text, type: fc.constantFrom('physical', 'digital', 'service'), status: fc.constantFrom('active', 'draft', 'archived'),
  brand: text, category: text, description: text, variants: fc.array(variant, { maxLength: 3 }),
};
const variantFields = { sku, name: text, price, attributes: fc.dictionary(fc.string({ maxLength: 6 }), fc.string({ maxLength: 6 }), { maxKeys: 3 }) };
const channelFields = {
  name: text, type: fc.constantFrom('web', 'marketplace', 'retail', 'wholesale', 'b2b'), ownership: fc.constantFrom('owned', 'third_party'),
  status: fc.constantFrom('active', 'paused', 'archived'), country: fc.constantFrom('US', 'gb'), currency: fc.constantFrom('EUR', 'usd'),
};

// Quotes and orders. Money: zero or more, at most 2 decimals, as a number or a string; the largest value
// numeric(14,2) holds is among them, as is the largest quantity numeric(14,3) holds.
const cents = fc.integer({ min: 0, max: 10_000_000 });
const money = fc.oneof(
  { weight: 3, arbitrary: cents.map((c) => c / 100) },
  { weight: 3, arbitrary: cents.map((c) => (c / 100).toFixed(2)) },
  { weight: 1, arbitrary: fc.constantFrom('0', '0.00', '12.5', ' 7.10 ', '100000', '999999999999.99') },
);
const thousandths = fc.integer({ min: 1, max: 100_000 });
const quantity = fc.oneof(
  { weight: 3, arbitrary: fc.integer({ min: 1, max: 50 }) },
  { weight: 2, arbitrary: thousandths.map((m) => m / 1000) },
  { weight: 2, arbitrary: thousandths.map((m) => String(m / 1000)) },
  { weight: 1, arbitrary: fc.constantFrom('1', '0.001', '2.500', '99999999999.999') },
);
const taxRate = fc.oneof(
  fc.integer({ min: 0, max: 2500 }).map((b) => b / 100),
  fc.integer({ min: 0, max: 2500 }).map((b) => String(b / 100)),
  fc.constantFrom('0', '8.25', '19.6', '7.1250', '999.9999'),
);
const currency = fc.constantFrom('USD', 'eur', ' GBP ', 'JPY', 'chf');
const day = fc.date({ min: new Date('1990-01-01T00:00:00Z'), max: new Date('2100-12-31T00:00:00Z'), noInvalidDate: true });
const date = fc.oneof(
  { weight: 4, arbitrary: day.map((d) => d.toISOString().slice(0, 10)) },
  { weight: 1, arbitrary: day.map((d) => d.toISOString()) },
  { weight: 1, arbitrary: fc.constantFrom('', null, '2026-12-31', 'Dec 31, 2026') },
);
const moment = fc.oneof(
  { weight: 4, arbitrary: day.map((d) => d.toISOString()) },
  { weight: 1, arbitrary: fc.constantFrom('', null, '2026-11-21', '2026-11-21T10:00:00+02:00', '1970-01-01T00:00:00Z') },
  // Dates JavaScript parses that lie beyond PostgreSQL's timestamptz (4713 BC to 294276 AD) or its parser.
  { weight: 1, arbitrary: fc.constantFrom('-271821-04-20T00:00:00Z', '+275760-09-13T00:00:00Z', '-000001-01-01T00:00:00Z') },
);
/** An id in this workspace, or one that is not (422 naming the field); resolved when drawn, after the seeding. */
const idOf = (name: string) => fc.oneof({ weight: 4, arbitrary: fc.constant(name) }, fc.constant('')).map((n) => (n ? ids[n] : 987_654));
const lineSku = fc.oneof({ weight: 3, arbitrary: fc.constant('PRICED-1') }, { weight: 1, arbitrary: sku }, { weight: 1, arbitrary: fc.constant(null) });
const line = fc.record({ sku: lineSku, description: text, quantity, price: money }, { requiredKeys: [] });
const quoteCustomer = fc.record({ email: fc.oneof(email, fc.constant('seed@example.com')), name: text, company: text }, { requiredKeys: ['email'] });
const quoteEdits = { currency, discount_amount: money, tax_rate: taxRate, notes: text, valid_until: date };
const quoteFields = {
  // Either customer_id or customer, seldom both or neither (422): a key whose value is undefined is left
  // out of the JSON. Both keys are drawn for every plausible body (`quoteCreate`), so that the choice
  // between them is made here and not by the record leaving keys out.
  customer_id: fc.oneof({ weight: 3, arbitrary: fc.constant(undefined) }, idOf('customer')),
  customer: fc.oneof(fc.constant(undefined), { weight: 3, arbitrary: quoteCustomer }),
  channel_id: idOf('quoteChannel'), ...quoteEdits, lines: fc.array(line, { maxLength: 4 }),
};
const quoteCreate = {
  required: ['customer_id', 'customer'],
  example: { json: { customer: { email: 'seed@example.com' }, lines: [{ sku: 'PRICED-1', quantity: 2 }, { description: 'Setup', quantity: 1, price: '50.00' }] } },
};
const lineFields = { sku: lineSku, description: text, quantity, price: money };
const item = fc.record({ sku: lineSku, description: text, quantity, price: money }, { requiredKeys: ['price'] });
const externalOrderFields = {
  external_source: fc.constantFrom('api', 'shopify', 'pos'), external_id: fc.integer({ min: 0, max: 19 }).map((n) => `o-${n}`), order_number: fc.stringMatching(/^#[0-9]{1,6}$/),
  status: fc.constantFrom(...orderStatuses), currency, customer: fc.record({ email, name: text }, { requiredKeys: ['email'] }),
  channel_id: idOf('quoteChannel'), placed_at: moment, notes: text, items: fc.array(item, { maxLength: 4 }),
};
const orderFields = { status: fc.constantFrom(...orderStatuses), notes: text };

// The quote a run acts on: one per target, put into the drawn status in SQL before each run (walking it
// there through the API would cost several requests a run); sometimes an id that does not exist.
interface QuoteState {
  status: QuoteStatus;
  missing: boolean;
  /** send: whether the quote has a customer email to mail. */
  email?: boolean;
  /** convert: whether the quote's order from an earlier conversion is kept (a repeat answers it, 200). */
  converted?: boolean;
  /** lines: whether the quote is first made nearly full: one line of 999999999999.99, the most numeric(14,2) holds. */
  full?: boolean;
}
const MISSING = 2_147_483_647;
const missing = fc.integer({ min: 0, max: 19 }).map((n) => n === 0);
/** Half the runs from a status the move is allowed from, half from any. */
const statusFrom = (...from: QuoteStatus[]) => fc.oneof(fc.constantFrom(...from), fc.constantFrom(...quoteStatuses));
const draftState = fc.record({ status: fc.oneof({ weight: 3, arbitrary: fc.constant<QuoteStatus>('draft') }, fc.constantFrom(...quoteStatuses)), missing });
const lineState = fc.record({ status: draftState.map((s) => s.status), missing, full: fc.integer({ min: 0, max: 9 }).map((n) => n === 0) });

const subjects = new Map<string, { quote: number; line: number }>();
const nearlyFull = new Set<string>();

/** Puts the target's own quote (made on first use: a customer, one line priced by its SKU) into `state`; returns its ids. */
async function quoteIn(key: string, state: QuoteState): Promise<{ quote: number; line: number }> {
  let subject = subjects.get(key);
  if (!subject) {
    const res = await owner.client.post('/api/v1/quotes', { customer_id: ids.customer, channel_id: ids.quoteChannel, lines: [{ sku: 'PRICED-1', quantity: 2 }] });
    if (res.status !== 201) throw new Error(`seed quote: ${res.status} ${res.text}`);
    subject = { quote: res.body.data.quote.id, line: res.body.data.lines[0].id };
    subjects.set(key, subject);
    lastDigest = undefined;
  }
  const changes: Record<string, string | null> = { status: state.status };
  if (state.email !== undefined) changes.customer_email = state.email ? 'seed@example.com' : null;
  const differs = (q: Knex.QueryBuilder) => {
    for (const [column, value] of Object.entries(changes)) q.orWhereRaw('?? is distinct from ?', [column, value]);
  };
  let written = await app.db('quotes').where({ id: subject.quote }).andWhere(differs).update(changes);
  if (state.full !== undefined && state.full !== nearlyFull.has(key)) {
    // Filled, or back to its first line (2 × 12.50), with totals as the app computes them (these quotes
    // have no discount or tax), so the quote still adds up.
    const [quantity, price] = state.full ? [1, '999999999999.99'] : [2, '12.50'];
    if (state.full) await app.db('quote_lines').where({ quote_id: subject.quote }).whereNot({ id: subject.line }).delete();
    await app.db('quote_lines').where({ id: subject.line }).update({ quantity, price, line_total: app.db.raw('round(?::numeric * ?::numeric, 2)', [quantity, price]) });
    await app.db.raw(
      `update quotes set subtotal = t.s, discount_amount = 0, tax_rate = 0, tax_amount = 0, total = t.s
         from (select coalesce(sum(line_total), 0) as s from quote_lines where quote_id = ?) t where id = ?`,
      [subject.quote, subject.quote],
    );
    if (state.full) nearlyFull.add(key);
    else nearlyFull.delete(key);
    written++;
  }
  if (state.converted === false) {
    written += await app.db('orders').where({ workspace_id: owner.workspace.id, external_source: 'quote', external_id: `quote:${subject.quote}` }).delete();
  }
  if (written) lastDigest = undefined;
  return state.missing ? { quote: MISSING, line: MISSING } : subject;
}

const quoteTarget = (method: 'PATCH' | 'PUT'): Target<QuoteState> => ({
  method, state: draftState, fields: quoteEdits, refusals: [422, 409],
  path: async (s) => `/api/v1/quotes/${(await quoteIn(`${method} quote`, s)).quote}`,
});
// A quote total past numeric(14,2) is refused naming the line's `quantity`; a lower price, the `discount_amount`.
const lineTarget = (method: 'PATCH' | 'PUT'): Target<QuoteState> => ({
  method, state: lineState, fields: lineFields, alsoNames: ['discount_amount'], refusals: [422, 409],
  path: async (s) => {
    const { quote, line: id } = await quoteIn(`${method} line`, { ...s, missing: false });
    return `/api/v1/quotes/${quote}/lines/${s.missing ? MISSING : id}`;
  },
});
const move = (name: string, from: QuoteStatus[], fields: Record<string, fc.Arbitrary<unknown>> = {}): Target<QuoteState> => ({
  method: 'POST', state: fc.record({ status: statusFrom(...from), missing }), fields, refusals: [409],
  path: async (s) => `/api/v1/quotes/${(await quoteIn(name, s)).quote}/${name}`,
});

/** An answer's record: who answered (and, for a decline, why). */
const answerer = { name: fc.oneof(fc.string({ maxLength: 60 }), fc.constant(null)) };

const targets: Record<string, Target<any>> = {
  'POST /customers': { method: 'POST', path: () => '/api/v1/customers', fields: customerFields },
  'PATCH /customers/{id}': { method: 'PATCH', path: () => `/api/v1/customers/${ids.customer}`, fields: customerFields },
  'PUT /customers/{id}': { method: 'PUT', path: () => `/api/v1/customers/${ids.customer}`, fields: customerFields },
  'POST /products': { method: 'POST', path: () => '/api/v1/products', fields: productFields },
  'PATCH /products/{id}': { method: 'PATCH', path: () => `/api/v1/products/${ids.product}`, fields: productFields },
  'POST /products/{id}/variants': { method: 'POST', path: () => `/api/v1/products/${ids.product}/variants`, fields: variantFields },
  'PUT /products/{id}/variants/{id}': { method: 'PUT', path: () => `/api/v1/products/${ids.product}/variants/${ids.variant}`, fields: variantFields },
  'POST /channels': { method: 'POST', path: () => '/api/v1/channels', fields: channelFields },
  'PATCH /channels/{id}': { method: 'PATCH', path: () => `/api/v1/channels/${ids.channel}`, fields: channelFields },
  'PUT /channels/{id}/members/{user_id}': {
    method: 'PUT', path: () => `/api/v1/channels/${ids.channel}/members/${ids.user}`, fields: { role: fc.constantFrom('viewer', 'editor', 'manager') },
  },
  'POST /quotes': { method: 'POST', path: () => '/api/v1/quotes', fields: quoteFields, ...quoteCreate },
  'POST /quotes/external': {
    method: 'POST', path: () => '/api/v1/quotes/external', headers: secretKey, ...quoteCreate,
    fields: { ...quoteFields, external_id: fc.oneof(fc.integer({ min: 0, max: 9 }).map((n) => `ext-${n}`), fc.constant(null)) },
  },
  'PATCH /quotes/{id}': quoteTarget('PATCH'),
  'PUT /quotes/{id}': quoteTarget('PUT'),
  'POST /quotes/{id}/lines': {
    method: 'POST', state: lineState, fields: lineFields, refusals: [422, 409],
    path: async (s: QuoteState) => `/api/v1/quotes/${(await quoteIn('POST line', s)).quote}/lines`,
  },
  'PATCH /quotes/{id}/lines/{line_id}': lineTarget('PATCH'),
  'PUT /quotes/{id}/lines/{line_id}': lineTarget('PUT'),
  'POST /quotes/{id}/send': {
    method: 'POST', state: fc.record({ status: statusFrom('draft'), missing, email: fc.oneof({ weight: 4, arbitrary: fc.constant(true) }, fc.constant(false)) }),
    fields: { notify: fc.oneof(fc.boolean(), fc.constantFrom('0', '1', 'false', 'yes', 'off')) }, alsoNames: ['customer'], refusals: [409],
    path: async (s: QuoteState) => `/api/v1/quotes/${(await quoteIn('send', s)).quote}/send`,
  },
  'POST /quotes/{id}/accept': move('accept', ['sent'], answerer),
  'POST /quotes/{id}/decline': move('decline', ['sent'], { ...answerer, reason: fc.oneof(fc.string({ maxLength: 300 }), fc.constant(null)) }),
  'POST /quotes/{id}/cancel': move('cancel', ['draft', 'sent', 'accepted']),
  'POST /quotes/{id}/mark-paid': move('mark-paid', ['accepted']),
  'POST /quotes/{id}/convert': {
    method: 'POST', state: fc.record({ status: statusFrom('accepted', 'paid'), missing, converted: fc.boolean() }), fields: {}, refusals: [409],
    path: async (s: QuoteState) => `/api/v1/quotes/${(await quoteIn('convert', s)).quote}/convert`,
  },
  'POST /orders/external': { method: 'POST', path: () => '/api/v1/orders/external', headers: secretKey, fields: externalOrderFields, required: ['external_id'] },
  'PATCH /orders/{id}': { method: 'PATCH', state: missing, path: (gone: boolean) => `/api/v1/orders/${gone ? MISSING : ids.order}`, fields: orderFields },
  'PUT /orders/{id}': { method: 'PUT', state: missing, path: (gone: boolean) => `/api/v1/orders/${gone ? MISSING : ids.order}`, fields: orderFields },
};

/** Values of every wrong and awkward kind. */
const nasty = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme', maxLength: 50 }),
  fc.string({ minLength: 300, maxLength: 20_000, unit: 'grapheme-ascii' }),
  fc.constantFrom('', ' ', '0', '-1', '1.234', '1e400', 'NaN', 'null', 'true', '12.5', 'a@b.co', 'web', 'owner', 'US', 'usd', '\u0000', 'ℌ𝔢𝔩𝔩𝔬', '💥'.repeat(100)),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 4 }),
  fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }),
);

function bodies({ fields, required = [] }: Target<unknown>): fc.Arbitrary<RequestOptions> {
  const names = Object.keys(fields);
  const anyKey = fc.string({ maxLength: 12 });
  const key = names.length ? fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...names) }, { weight: 1, arbitrary: anyKey }) : anyKey;
  // One field in 2n+1 nasty at most (1 in 5 for short bodies), so that long bodies get through often enough too.
  const good = Math.max(4, 2 * names.length);
  const mostlyPlausible = Object.fromEntries(
    Object.entries(fields).map(([name, value]) => [name, fc.oneof({ weight: good, arbitrary: value }, { weight: 1, arbitrary: nasty })]),
  );
  return fc.oneof(
    { weight: 3, arbitrary: fc.record(mostlyPlausible, { requiredKeys: required }).map((json) => ({ json })) },
    fc.dictionary(key, nasty, { maxKeys: names.length + 2 }).map((json) => ({ json })),
    fc.jsonValue({ maxDepth: 3 }).map((json) => ({ json })),
    fc.dictionary(key, fc.string({ maxLength: 300 }), { maxKeys: names.length + 2 }).map((form) => ({ form })),
    fc.string({ maxLength: 200 }).map((raw) => ({ raw, contentType: 'application/json' })),
  );
}

/** A refusal the invariant allows: 422 naming a field, 404 (the id in the path) or 409 (the quote's status, a unique value). */
const refusalStatuses = new Set([404, 409, 422]);

for (const [name, target] of Object.entries(targets)) {
  test.serial(`${name}: never a 500, a 4xx names a field, a refused request writes nothing`, async (t) => {
    const failures: string[] = [];
    const statuses: Record<number, number> = {};
    const refused: Record<string, number> = {};
    const named = new Set(['body', ...Object.keys(target.fields), ...(target.alsoNames ?? [])]);
    await fc.assert(
      fc.asyncProperty(target.state ?? fc.constant(undefined), bodies(target), async (state, options) => {
        const path = await target.path(state);
        const before = lastDigest ?? (await fingerprint());
        lastDigest = undefined;
        const res = await owner.client.request(target.method, path, { ...options, headers: target.headers?.() });
        statuses[res.status] = (statuses[res.status] ?? 0) + 1;
        const shown = `${res.status} ${res.text.slice(0, 200)} for ${target.method} ${path} ${state === undefined ? '' : JSON.stringify(state)} ${JSON.stringify(options).slice(0, 300)}`;
        if (res.status >= 500 || res.status < 200 || (res.status >= 300 && !refusalStatuses.has(res.status))) {
          failures.push(shown);
          return false;
        }
        if (res.status >= 400) {
          if (typeof res.body?.error !== 'string') {
            failures.push(`no error message: ${shown}`);
            return false;
          }
          if (res.status === 422) {
            const field = /^([A-Za-z_]+)/.exec(res.body.error)?.[1];
            if (!field || !named.has(field)) {
              failures.push(`422 not naming a field: ${shown}`);
              return false;
            }
            refused[field] = (refused[field] ?? 0) + 1;
          }
          if ((await fingerprint()) !== before) {
            failures.push(`rows changed by a refused request: ${shown}`);
            return false;
          }
          lastDigest = before;
        } else {
          const broken = await inconsistencies();
          if (broken.length) {
            failures.push(`totals no longer add up after ${shown}:\n  ${broken.join('\n  ')}`);
            return false;
          }
        }
        return true;
      }),
      {
        numRuns: Number(process.env.FC_RUNS ?? 60),
        seed: process.env.FC_SEED ? Number(process.env.FC_SEED) : undefined,
        examples: target.example && !target.state ? [[undefined, target.example]] : [],
      },
    ).catch((err: Error) => {
      // The first failure found, and the last: the shrunk one (or what the property threw).
      const shown = failures.length > 1 ? [failures[0], failures[failures.length - 1]] : failures;
      const cause = err.cause instanceof Error ? `\n${err.cause.stack ?? err.cause.message}` : '';
      t.fail(`${shown.join('\n')}\n${err.message.slice(0, 2000)}${cause.slice(0, 2000)}`);
    });
    t.log(`answers: ${JSON.stringify(statuses)}, 422 by field: ${JSON.stringify(refused)}`);
    t.true(Object.keys(statuses).some((s) => Number(s) < 300), 'some bodies were accepted');
    for (const refusal of target.refusals ?? [422]) t.true((statuses[refusal] ?? 0) > 0, `some requests were refused with ${refusal}`);
  });
}
