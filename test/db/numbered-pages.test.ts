import test from 'ava';
import type { Access } from '../../src/access.js';
import { Principal } from '../../src/http/principal.js';
import { numberedPage, type NumberedPage } from '../../src/db/numbered-pages.js';
import { scoped } from '../../src/db/scoped.js';
import { quotePage, quoteStatusCounts, type QuoteJson } from '../../src/quotes/service.js';
import { acceptedNotConverted, quotesAwaitingAnswer, quotesExpiringSoon } from '../../src/quotes/home.js';
import { orderPage, recentOrders } from '../../src/orders/service.js';
import { customerDependents, customerPage } from '../../src/customers/service.js';
import { getProduct, productPage } from '../../src/products/service.js';
import { channelPage } from '../../src/channels/service.js';
import { quoteStatuses, type QuoteFilters } from '../../src/quotes/schema.js';
import type { OrderFilters } from '../../src/orders/schema.js';
import { signUpOwner, uniqueEmail, type Owner } from '../helpers/app.js';
import type { Client } from '../helpers/client.js';
import { useOwnerApp } from '../helpers/fixture.js';
import { inviteMember, type Member } from '../helpers/members.js';

// The app's numbered pages and home lists, read through the services the pages call, against what the JSON API
// answers the same caller: the same rows, the same filters, the same channel roles.

const { app, smtp, owner } = useOwnerApp(test, { workspace: 'Numbered pages', smtp: true });

/** The app's handle, whose statements pass the tenancy check. */
const db = () => app.database.knex;

let other: Owner;
let mia: Member;
let asOwner: Access;
/** A member with a role (viewer) on channel A and none on channel B. */
let asMia: Access;
let channelA: number;
let channelB: number;
let ada: number;
let grace: number;
let today: string;

/** The 120 quotes of the workspace, by creation (index i): channel none, A, B in turn; customer Ada, Grace in turn. */
const quotes: { id: number; number: string; channel_id: number | null; customer_id: number }[] = [];
/** Quote indexes in each home-page state (see the before hook). */
const states = {
  sentOpen: [0, 1, 2],
  sentInThreeDays: [3, 4, 5],
  sentInThirtyDays: [6, 7, 8],
  expired: [9, 10, 11],
  accepted: [12, 13, 14],
  converted: [15, 16, 17],
  sentUntilToday: [18, 19, 20],
};
/** The order in which quotes were sent: the highest index first. */
const sentOrder = [...states.sentUntilToday, ...states.converted, ...states.accepted, ...states.expired, ...states.sentInThirtyDays, ...states.sentInThreeDays, ...states.sentOpen].sort((a, b) => b - a);
const orderIds: { id: number; channel_id: number | null }[] = [];
const productIds: number[] = [];

const addDays = (date: string, days: number) => new Date(Date.parse(date) + days * 86_400_000).toISOString().slice(0, 10);

async function ok(res: { status: number; text: string; body: any }, status = 200): Promise<any> {
  if (res.status !== status) throw new Error(`expected ${status}, got ${res.status}: ${res.text}`);
  return res.body.data;
}

test.before(async () => {
  other = await signUpOwner(app, 'Elsewhere');
  mia = await inviteMember(app, smtp, owner);
  const workspace = owner.workspace;
  const user = (id: number, role: 'owner' | 'member') => ({ id, role, workspace_id: workspace.id }) as never;
  asOwner = new Principal(user(owner.user.id, 'owner'), workspace).access;
  asMia = new Principal(user(mia.user.id, 'member'), workspace).access;
  today = (await app.db.raw(`select to_char((now() at time zone 'utc')::date, 'YYYY-MM-DD') as d`)).rows[0].d;

  channelA = (await ok(await owner.client.post('/api/v1/channels', { name: 'Channel A' }), 201)).channel.id;
  channelB = (await ok(await owner.client.post('/api/v1/channels', { name: 'Channel B' }), 201)).channel.id;
  await ok(await owner.client.put(`/api/v1/channels/${channelA}/members/${mia.user.id}`, { role: 'viewer' }));
  ada = (await ok(await owner.client.post('/api/v1/customers', { email: uniqueEmail('ada'), name: 'Ada Lovelace' }), 201)).customer.id;
  grace = (await ok(await owner.client.post('/api/v1/customers', { email: uniqueEmail('grace'), name: 'Grace Hopper' }), 201)).customer.id;

  const validUntil = (i: number): string | undefined => {
    if (states.sentInThreeDays.includes(i)) return addDays(today, 3);
    if (states.sentInThirtyDays.includes(i)) return addDays(today, 30);
    if (states.expired.includes(i)) return addDays(today, 1); // made past after sending, as time would
    if (states.sentUntilToday.includes(i)) return today;
    return undefined;
  };
  for (let i = 0; i < 120; i++) {
    const channel_id = [null, channelA, channelB][i % 3];
    const customer_id = i % 2 === 0 ? ada : grace;
    const body = { customer_id, ...(channel_id && { channel_id }), valid_until: validUntil(i), lines: [{ description: `Work ${i}`, price: '10.00' }] };
    const { quote } = await ok(await owner.client.post('/api/v1/quotes', body), 201);
    quotes.push({ id: quote.id, number: quote.quote_number, channel_id, customer_id });
  }
  for (const i of sentOrder) await ok(await owner.client.post(`/api/v1/quotes/${quotes[i].id}/send`, { notify: false }));
  await app.db('quotes').where({ workspace_id: workspace.id }).whereIn('id', states.expired.map((i) => quotes[i].id)).update({ valid_until: addDays(today, -1) });
  for (const i of [...states.accepted, ...states.converted]) await ok(await owner.client.post(`/api/v1/quotes/${quotes[i].id}/accept`));
  for (const i of states.converted) {
    const { order } = await ok(await owner.client.post(`/api/v1/quotes/${quotes[i].id}/convert`), 201);
    orderIds.push({ id: order.id, channel_id: quotes[i].channel_id });
  }
  const secret = { headers: { authorization: `Bearer ${owner.keys.secret_key}` } };
  for (const [n, channel_id] of [null, channelA, channelB].entries()) {
    const body = { external_id: `shop-${n}`, order_number: `SHOP-${n}`, ...(channel_id && { channel_id }), items: [{ description: 'Thing', price: '5.00' }] };
    const { order } = await ok(await app.client().post('/api/v1/orders/external', body, secret), 201);
    orderIds.push({ id: order.id, channel_id });
  }
  for (const n of [1, 2, 3]) {
    const { product } = await ok(await owner.client.post('/api/v1/products', { sku: `P-${n}`, name: `Product ${n}`, variants: [{ sku: `P-${n}-A`, price: '1.50' }, { sku: `P-${n}-B` }] }), 201);
    productIds.push(product.id);
  }
  // Another workspace's records, which no list of this one may show.
  await ok(await other.client.post('/api/v1/quotes', { customer: { email: uniqueEmail('elsewhere'), name: 'Ada Lovelace' } }), 201);
});

const ids = (rows: { id: number }[]) => rows.map((r) => r.id);
const indexesOf = (rows: { id: number }[]) => rows.map((r) => quotes.findIndex((q) => q.id === r.id));
const query = (filters: object) => new URLSearchParams(Object.entries(filters).map(([k, v]) => [k, String(v)])).toString();

/** What the JSON API lists for the client with these filters. */
async function apiList(client: Client, list: 'quotes' | 'orders', filters: object): Promise<any[]> {
  return (await ok(await client.get(`/api/v1/${list}?${query(filters)}`)))[list];
}

test('pages of 50, newest first, with the total: 120 quotes make pages of 50, 50 and 20', async (t) => {
  const newestFirst = ids(quotes).reverse();
  const pages: NumberedPage<QuoteJson>[] = [];
  for (const page of [1, 2, 3]) pages.push(await quotePage(db(), asOwner, {}, page));
  for (const [n, page] of pages.entries()) {
    t.like(page, { total: 120, page: n + 1, size: 50, pages: 3 });
    t.deepEqual(ids(page.rows), newestFirst.slice(n * 50, n * 50 + 50), `page ${n + 1}`);
  }
  t.is(pages[2].rows.length, 20, 'page 3 holds the last 20');
  t.deepEqual(ids(pages[2].rows), ids(quotes.slice(0, 20)).reverse(), 'the 20 oldest');
  // The rows are the API's quotes, field for field.
  const api = await apiList(owner.client, 'quotes', {});
  t.deepEqual(pages[0].rows, api.reverse().slice(0, 50));

  const past = await quotePage(db(), asOwner, {}, 4);
  t.deepEqual(past, { rows: [], total: 120, page: 4, size: 50, pages: 3 }, 'a page past the end has no rows');
  for (const below of [0, -3, Number.NaN]) t.like(await quotePage(db(), asOwner, {}, below), { page: 1, rows: pages[0].rows }, `page ${below} counts as 1`);
  t.like(await quotePage(db(), asOwner, {}, 2.7), { page: 2, rows: pages[1].rows }, 'a fraction is its whole page');
});

test('a filtered list has the same rows and total as the JSON list with the same filters, for an owner and for a member', async (t) => {
  const combos: Partial<QuoteFilters>[] = [
    {},
    { status: 'sent' },
    { status: 'draft', customer_id: grace },
    { customer_id: ada },
    { channel_id: channelA },
    { channel_id: channelB },
    { q: 'lovelace' },
    { q: quotes[42].number },
    { status: 'draft', customer_id: grace, channel_id: channelA, q: 'hopper' },
    { status: 'paid' },
  ];
  for (const [who, access, client] of [['owner', asOwner, owner.client], ['member', asMia, mia.client]] as const) {
    for (const filters of combos) {
      const api = (await apiList(client, 'quotes', filters)).reverse();
      const page = await quotePage(db(), access, filters, 1);
      const label = `${who} ${query(filters)}`;
      t.is(page.total, api.length, label);
      t.deepEqual(page.rows, api.slice(0, 50), label);
      if (api.length > 50) t.deepEqual((await quotePage(db(), access, filters, 2)).rows, api.slice(50, 100), `${label}, page 2`);
    }
  }
  t.is((await quotePage(db(), asOwner, { q: 'lovelace' }, 1)).total, 60, 'not the other workspace’s Ada');
  t.deepEqual(ids((await quotePage(db(), asOwner, { q: quotes[42].number }, 1)).rows), [quotes[42].id]);
  t.deepEqual(await quotePage(db(), asOwner, { status: 'paid' }, 1), { rows: [], total: 0, page: 1, size: 50, pages: 1 }, 'an empty list has one empty page');
});

test('status counts: every status, 0 when none, one per filtered list, as the pages count them', async (t) => {
  const owners = await quoteStatusCounts(db(), asOwner, {});
  t.deepEqual(owners, { draft: 99, sent: 15, accepted: 6, declined: 0, cancelled: 0, paid: 0 });
  t.deepEqual(Object.keys(owners).sort(), [...quoteStatuses].sort());
  for (const [who, access, client] of [['owner', asOwner, owner.client], ['member', asMia, mia.client]] as const) {
    for (const filters of [{}, { customer_id: ada }, { channel_id: channelA }, { channel_id: channelB }, { q: 'hopper' }]) {
      const counts = await quoteStatusCounts(db(), access, filters);
      const expected = Object.fromEntries(quoteStatuses.map((status) => [status, 0]));
      for (const quote of await apiList(client, 'quotes', filters)) expected[quote.status]++;
      t.deepEqual(counts, expected, `${who} ${query(filters)}`);
      for (const status of quoteStatuses) t.is((await quotePage(db(), access, { ...filters, status }, 1)).total, counts[status], `${who} ${query(filters)} ${status}`);
    }
  }
  // A status given anyway (the page's whole query) does not narrow the counts.
  t.deepEqual(await quoteStatusCounts(db(), asOwner, { status: 'sent' } as never), owners);
});

test('a member without a role on a channel sees none of its quotes or orders in pages, counts or home lists; quotes without a channel are visible', async (t) => {
  const visible = quotes.filter((q) => q.channel_id !== channelB);
  const first = await quotePage(db(), asMia, {}, 1);
  const second = await quotePage(db(), asMia, {}, 2);
  t.like(first, { total: 80, pages: 2 });
  t.deepEqual([...ids(first.rows), ...ids(second.rows)], ids(visible).reverse());
  t.true(first.rows.some((q) => q.channel_id === null), 'quotes without a channel');
  t.true(first.rows.some((q) => q.channel_id === channelA), "quotes of the member's channel");
  t.like(await quotePage(db(), asMia, { channel_id: channelB }, 1), { rows: [], total: 0 });
  t.like(await quotePage(db(), asMia, { q: quotes[2].number }, 1), { rows: [], total: 0 }, 'nor found by search');
  const counts = await quoteStatusCounts(db(), asMia, {});
  t.is(Object.values(counts).reduce((a, b) => a + b, 0), 80);
  t.deepEqual(await quoteStatusCounts(db(), asMia, { channel_id: channelB }), { draft: 0, sent: 0, accepted: 0, declined: 0, cancelled: 0, paid: 0 });

  const home = [
    ...(await quotesAwaitingAnswer(db(), asMia, 50)),
    ...(await quotesExpiringSoon(db(), asMia, 30, 50)),
    ...(await acceptedNotConverted(db(), asMia, 50)),
  ];
  t.true(home.length > 0);
  t.false(home.some((q) => q.channel_id === channelB), 'no quote of channel B on the home page');
  t.true(home.some((q) => q.channel_id === null));

  const orders = await orderPage(db(), asMia, {}, 1);
  t.is(orders.total, 4);
  t.deepEqual(ids(orders.rows), ids(orderIds.filter((o) => o.channel_id !== channelB)).reverse());
  t.deepEqual(ids(await recentOrders(db(), asMia, 10)), ids(orders.rows));
  t.like(await orderPage(db(), asMia, { channel_id: channelB }, 1), { rows: [], total: 0 });
});

test('home: quotes awaiting an answer are sent and not expired, the longest waiting first', async (t) => {
  const expected = sentOrder.filter((i) => [...states.sentOpen, ...states.sentInThreeDays, ...states.sentInThirtyDays, ...states.sentUntilToday].includes(i));
  t.deepEqual(indexesOf(await quotesAwaitingAnswer(db(), asOwner, 50)), expected);
  t.deepEqual(indexesOf(await quotesAwaitingAnswer(db(), asOwner, 4)), expected.slice(0, 4), 'at most limit');
  t.deepEqual(indexesOf(await quotesAwaitingAnswer(db(), asMia, 50)), expected.filter((i) => i % 3 !== 2));
  const expired = await quotePage(db(), asOwner, { status: 'sent' }, 1);
  t.true(states.expired.every((i) => ids(expired.rows).includes(quotes[i].id)), 'the expired ones are still sent');
});

test('home: quotes expiring soon are sent with valid_until from today to today + days, the soonest first', async (t) => {
  t.deepEqual(indexesOf(await quotesExpiringSoon(db(), asOwner, 7, 50)), [...states.sentUntilToday, ...states.sentInThreeDays]);
  t.deepEqual(indexesOf(await quotesExpiringSoon(db(), asOwner, 2, 50)), states.sentUntilToday);
  t.deepEqual(indexesOf(await quotesExpiringSoon(db(), asOwner, 30, 50)), [...states.sentUntilToday, ...states.sentInThreeDays, ...states.sentInThirtyDays], 'the last day included');
  t.deepEqual(indexesOf(await quotesExpiringSoon(db(), asOwner, 7, 2)), states.sentUntilToday.slice(0, 2), 'at most limit');
  t.deepEqual(indexesOf(await quotesExpiringSoon(db(), asMia, 7, 50)), [18, 19, 3, 4]);
});

test('home: accepted quotes not converted, the most recently accepted first; the last orders, newest first', async (t) => {
  t.deepEqual(indexesOf(await acceptedNotConverted(db(), asOwner, 50)), [...states.accepted].reverse());
  t.deepEqual(indexesOf(await acceptedNotConverted(db(), asOwner, 1)), [14]);
  t.deepEqual(indexesOf(await acceptedNotConverted(db(), asMia, 50)), [13, 12]);
  t.deepEqual(ids(await recentOrders(db(), asOwner, 10)), ids(orderIds).reverse());
  t.deepEqual(ids(await recentOrders(db(), asOwner, 2)), ids(orderIds).reverse().slice(0, 2));
  const api = await apiList(owner.client, 'orders', {});
  t.deepEqual(await recentOrders(db(), asOwner, 10), api.reverse(), "the API's orders, field for field");
});

test('orders: a filtered page has the rows and total of the JSON list with the same filters', async (t) => {
  const combos: Partial<OrderFilters>[] = [{}, { channel_id: channelA }, { customer_id: ada }, { q: 'shop-1' }, { q: 'hopper' }, { status: 'pending' }, { status: 'paid' }];
  for (const [who, access, client] of [['owner', asOwner, owner.client], ['member', asMia, mia.client]] as const) {
    for (const filters of combos) {
      const api = (await apiList(client, 'orders', filters)).reverse();
      const page = await orderPage(db(), access, filters, 1);
      t.like(page, { total: api.length, page: 1, size: 50, pages: 1 }, `${who} ${query(filters)}`);
      t.deepEqual(page.rows, api, `${who} ${query(filters)}`);
    }
  }
});

test('customers, products and channels: numbered pages, filtered, newest first', async (t) => {
  t.like(await customerPage(db(), asOwner, {}, 1), { total: 2, pages: 1 });
  t.deepEqual(ids((await customerPage(db(), asOwner, {}, 1)).rows), [grace, ada]);
  const found = await customerPage(db(), asOwner, { q: 'lovelace' }, 1);
  t.like(found, { total: 1 });
  t.like(found.rows[0], { id: ada, name: 'Ada Lovelace' });

  const products = await productPage(db(), asOwner, {}, 1);
  t.like(products, { total: 3 });
  t.deepEqual(products.rows, await Promise.all([...productIds].reverse().map((id) => getProduct(db(), asOwner, id))), "getProduct's shape, variants embedded");
  t.deepEqual(ids((await productPage(db(), asOwner, { q: 'P-2-B' }, 1)).rows), [productIds[1]], 'found by a variant SKU');
  t.like(await productPage(db(), asOwner, { status: 'archived' }, 1), { rows: [], total: 0 });

  t.deepEqual(ids((await channelPage(db(), asOwner, {}, 1)).rows), [channelB, channelA]);
  t.deepEqual(ids((await channelPage(db(), asMia, {}, 1)).rows), [channelA], 'a member: the channels they hold a role on');
  t.like((await channelPage(db(), asOwner, { q: 'channel b' }, 1)).rows[0], { id: channelB, name: 'Channel B' });
});

test("a customer's dependents, as the caller sees them: the counts the delete's 409 gives", async (t) => {
  t.deepEqual(await customerDependents(db(), asOwner, ada), { quotes: 60, orders: 1, visitors: 0, hidden: 0 });
  t.deepEqual(await customerDependents(db(), asMia, ada), { quotes: 40, orders: 1, visitors: 0, hidden: 20 });
  for (const [access, client] of [[asOwner, owner.client], [asMia, mia.client]] as const) {
    for (const customer of [ada, grace]) {
      const refused = await client.delete(`/api/v1/customers/${customer}`);
      t.is(refused.status, 409);
      t.deepEqual(await customerDependents(db(), access, customer), refused.body.data.dependents);
    }
  }
});

test('numberedPage: inside a transaction, the same page; its count is of the filtered query; a list not limited to a workspace is refused', async (t) => {
  const outside = await quotePage(db(), asMia, { customer_id: grace }, 2);
  const inside = await db().transaction((trx) => quotePage(trx, asMia, { customer_id: grace }, 2));
  t.deepEqual(inside, outside);
  const base = () => scoped(db(), 'quotes as q', owner.workspace.id).where('q.customer_id', ada);
  const small = await numberedPage<{ id: number }>(db(), base, { idColumn: 'q.id', json: `json_build_object('id', q.id)`, page: 7, size: 7 });
  const adas = ids(quotes.filter((q) => q.customer_id === ada)).reverse();
  t.deepEqual(small, { rows: adas.slice(42, 49).map((id) => ({ id })), total: 60, page: 7, size: 7, pages: 9 });
  // A list not limited to a workspace is refused before it is sent, its page's statement as well as its count's.
  const unscoped = () => db()('quotes as q');
  await t.throwsAsync(numberedPage(db(), unscoped, { idColumn: 'q.id', json: 'q.api_json', page: 1 }), { name: 'TenancyViolation' });
  // The rows' statement is built first: unscoped, while the count's is scoped.
  let built = 0;
  const rowsUnscoped = () => (built++ === 0 ? unscoped() : base());
  await t.throwsAsync(numberedPage(db(), rowsUnscoped, { idColumn: 'q.id', json: 'q.api_json', page: 1 }), { name: 'TenancyViolation' });
});
