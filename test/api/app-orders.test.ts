import test from 'ava';
import { signUpOwner, uniqueEmail, type Owner } from '../helpers/app.js';
import { useOwnerApp } from '../helpers/fixture.js';
import { inviteMember, type Member } from '../helpers/members.js';
import { ok, type Client } from '../helpers/client.js';
import { postForm, visibleText, getPage as page, rowText, ownSession as signedIn } from '../helpers/pages.js';

const { app, smtp, owner } = useOwnerApp(test, { workspace: 'App orders', smtp: true });
let mia: Member;
let other: Owner;
/** Channels: Mia has no role on `hidden`, and is a viewer on `viewed`. */
let hidden: number;
let viewed: number;

const bearer = (o: Owner) => ({ headers: { authorization: `Bearer ${o.keys.secret_key}` } });
let counter = 0;
/** A new external order through the JSON API (the secret key). */
async function order(fields: Record<string, unknown> = {}, o: Owner = owner): Promise<any> {
  const body = { external_id: `ext-${++counter}`, items: [{ sku: 'A-1', description: 'Apple box', quantity: 2, price: '5.25' }], ...fields };
  return (await ok(app.client().post('/api/v1/orders/external', body, bearer(o)), 201)).order;
}

/** The order links of a list page, in order. */
const orderLinks = (html: string) => [...html.matchAll(/<a href="\/app\/orders\/(\d+)">/g)].map((m) => Number(m[1]));


/** A session of the owner's own: the flash message a POST leaves is this client's alone while other tests run. */
const ownSession = () => signedIn(app, owner);

test.before(async () => {
  mia = await inviteMember(app, smtp, owner);
  other = await signUpOwner(app, 'Elsewhere');
  hidden = (await ok(owner.client.post('/api/v1/channels', { name: 'Hidden shop' }), 201)).channel.id;
  viewed = (await ok(owner.client.post('/api/v1/channels', { name: 'Viewed shop' }), 201)).channel.id;
  await ok(owner.client.put(`/api/v1/channels/${viewed}/members/${mia.user.id}`, { role: 'viewer' }));
});

test('without a session every orders page sends to sign-in', async (t) => {
  const o = await order();
  const anon = app.client();
  for (const path of ['/app/orders', '/app/orders?status=paid', `/app/orders/${o.id}`]) {
    const res = await anon.get(path);
    t.is(res.status, 302, path);
    t.is(res.headers.get('location'), `/login?next=${encodeURIComponent(path)}`, path);
  }
  const post = await postForm(anon, `/app/orders/${o.id}`, { status: 'paid' });
  t.is(post.status, 303);
  t.regex(post.headers.get('location') ?? '', /^\/login/);
  t.is((await ok(owner.client.get(`/api/v1/orders/${o.id}`))).order.status, 'pending');
});

test('the list: each row with number, customer, status, total with currency, source and date; the filters; 50 a page newest first', async (t) => {
  const ws = await signUpOwner(app, 'Many orders');
  const email = uniqueEmail('buyer');
  const first = await order({ order_number: '#1001', status: 'paid', currency: 'EUR', customer: { email, name: 'Bea Buyer' }, placed_at: '2026-03-04T10:00:00Z', external_source: 'shopify' }, ws);
  for (let i = 0; i < 54; i++) await order({ order_number: `N-${i}` }, ws);
  const last = await order({ order_number: '#LAST' }, ws);

  const one = await page(ws.client, '/app/orders');
  const ids = orderLinks(one.text);
  t.is(ids.length, 50);
  t.is(ids[0], last.id, 'newest first');
  t.false(ids.includes(first.id));
  const text = visibleText(one.text);
  t.regex(text, /1–50 of 56 orders/);
  t.true(one.text.includes('href="/app/orders?page=2"'));

  const two = await page(ws.client, '/app/orders?page=2');
  const rest = orderLinks(two.text);
  t.is(rest.length, 6);
  t.is(rest.at(-1), first.id, 'the oldest last');
  t.is(rowText(two.text, `/app/orders/${first.id}`), '#1001 Bea Buyer Paid EUR 10.50 External (shopify) 4 Mar 2026');
  t.true(two.text.includes('rel="prev"'));

  // The JSON list's filters, as a GET form.
  const paid = await page(ws.client, '/app/orders?status=paid');
  t.deepEqual(orderLinks(paid.text), [first.id]);
  t.true(paid.text.includes('<option value="paid" selected>'));
  t.deepEqual(orderLinks((await page(ws.client, '/app/orders?q=bea')).text), [first.id]);
  t.deepEqual(orderLinks((await page(ws.client, `/app/orders?customer_id=${first.customer_id}&status=`)).text), [first.id]);
  const none = await page(ws.client, '/app/orders?q=nothing-like-this');
  t.deepEqual(orderLinks(none.text), []);
  t.regex(visibleText(none.text), /No orders match these filters/);
  t.true(none.text.includes('value="nothing-like-this"'), 'the filter is kept in its field');
  const bad = await ws.client.get('/app/orders?status=shipped');
  t.is(bad.status, 422);
  t.regex(visibleText(bad.text), /status: must be one of pending, paid, fulfilled, cancelled, refunded/);
});

test("an order's page: items, totals, status, source in words, the quote it came from, notes", async (t) => {
  const customer = (await ok(owner.client.post('/api/v1/customers', { email: uniqueEmail('conv'), name: 'Cora Convert' }), 201)).customer;
  const quote = (await ok(owner.client.post('/api/v1/quotes', { customer_id: customer.id, currency: 'GBP', lines: [{ description: 'Consulting day', quantity: '2', price: '400.00' }] }), 201)).quote;
  await ok(owner.client.post(`/api/v1/quotes/${quote.id}/send`, { notify: false }));
  await ok(owner.client.post(`/api/v1/quotes/${quote.id}/accept`));
  const converted = (await ok(owner.client.post(`/api/v1/quotes/${quote.id}/convert`), 201)).order;
  await ok(owner.client.patch(`/api/v1/orders/${converted.id}`, { notes: 'Ship before Friday' }));

  const res = await page(owner.client, `/app/orders/${converted.id}`);
  const text = visibleText(res.text);
  t.true(res.text.includes(`<a href="/app/quotes/${quote.id}">quote ${quote.quote_number}</a>`));
  t.regex(text, new RegExp(`Converted from quote ${quote.quote_number}`));
  t.regex(text, /Consulting day 2 GBP 400\.00 GBP 800\.00/);
  t.regex(text, /Total GBP 800\.00/);
  t.regex(text, /Customer Cora Convert/);
  t.true(res.text.includes('Ship before Friday'));
  t.true(res.text.includes('<option value="pending" selected>'));
  t.is((res.text.match(/<h1>/g) ?? []).length, 1);

  const imported = await order({ external_source: 'import', status: 'fulfilled' });
  t.regex(visibleText((await page(owner.client, `/app/orders/${imported.id}`)).text), /Imported from a CSV file/);
  const external = await order({ external_source: 'woo', external_id: 'W-77' });
  t.regex(visibleText((await page(owner.client, `/app/orders/${external.id}`)).text), /External order from woo \(external id W-77 ?\)/);
});

test('changing the status: 303 to the order and the change seen through the API; 422 keeps the input beside its field; Origin checked', async (t) => {
  const o = await order({ notes: 'first note' });
  const own = await ownSession();
  const saved = await postForm(own, `/app/orders/${o.id}`, { status: 'fulfilled', notes: 'packed and sent' });
  t.is(saved.status, 303);
  t.is(saved.headers.get('location'), `/app/orders/${o.id}`);
  t.like((await ok(owner.client.get(`/api/v1/orders/${o.id}`))).order, { status: 'fulfilled', notes: 'packed and sent' });
  t.regex(visibleText((await page(own, `/app/orders/${o.id}`)).text), /Order saved\./);

  const invalid = await postForm(owner.client, `/app/orders/${o.id}`, { status: 'shipped', notes: 'kept <b>note</b>' });
  t.is(invalid.status, 422);
  t.regex(invalid.text, /<p class="field-error" id="f-status-error">status: must be one of pending, paid, fulfilled, cancelled, refunded\.<\/p>/);
  t.true(invalid.text.includes('aria-invalid="true"'));
  t.true(invalid.text.includes('kept &lt;b&gt;note&lt;/b&gt;</textarea>'), 'the notes typed are kept, escaped');
  t.is((await ok(owner.client.get(`/api/v1/orders/${o.id}`))).order.status, 'fulfilled');

  const evil = await postForm(owner.client, `/app/orders/${o.id}`, { status: 'cancelled' }, { origin: 'https://evil.example' });
  t.is(evil.status, 403);
  t.is((await ok(owner.client.get(`/api/v1/orders/${o.id}`))).order.status, 'fulfilled');
});

test("another workspace's order and a malformed id are the 404 page", async (t) => {
  const theirs = await order({}, other);
  for (const path of [`/app/orders/${theirs.id}`, '/app/orders/abc', '/app/orders/0', '/app/orders/99999999999']) {
    const res = await owner.client.get(path);
    t.is(res.status, 404, path);
    t.regex(res.headers.get('content-type') ?? '', /text\/html/);
  }
  const post = await postForm(owner.client, `/app/orders/${theirs.id}`, { status: 'paid' });
  t.is(post.status, 404);
  t.is((await ok(other.client.get(`/api/v1/orders/${theirs.id}`))).order.status, 'pending');
  t.false(orderLinks((await page(owner.client, '/app/orders')).text).includes(theirs.id));
});

test("a member without a role on a channel sees none of its orders: not listed, not found by search, 404 on the page; a viewer's change is the 403 page", async (t) => {
  const secret = await order({ channel_id: hidden, order_number: 'HID-1', customer: { email: uniqueEmail('hid'), name: 'Hidden Hal' } });
  const seen = await order({ channel_id: viewed, order_number: 'VIS-1' });
  const open = await order({ order_number: 'OPEN-1' });

  const list = orderLinks((await page(mia.client, '/app/orders')).text);
  t.false(list.includes(secret.id));
  t.true(list.includes(seen.id));
  t.true(list.includes(open.id));
  t.deepEqual(orderLinks((await page(mia.client, '/app/orders?q=HID-1')).text), []);
  t.deepEqual(orderLinks((await page(mia.client, `/app/orders?channel_id=${hidden}`)).text), []);
  t.deepEqual(orderLinks((await page(mia.client, `/app/orders?customer_id=${secret.customer_id}`)).text), []);
  const filter = (await page(mia.client, '/app/orders')).text;
  t.false(filter.includes('Hidden shop'), 'the channel filter offers only her channels');
  t.true(filter.includes('Viewed shop'));
  t.true(orderLinks((await page(owner.client, '/app/orders')).text).includes(secret.id), 'the owner sees it');

  const res = await mia.client.get(`/app/orders/${secret.id}`);
  t.is(res.status, 404);
  t.false(res.text.includes('HID-1'));
  t.is((await postForm(mia.client, `/app/orders/${secret.id}`, { status: 'paid' })).status, 404);

  const readOnly = await page(mia.client, `/app/orders/${seen.id}`);
  t.false(readOnly.text.includes(`action="/app/orders/${seen.id}"`), 'a viewer is offered no status form');
  t.regex(visibleText(readOnly.text), /Your role on this order's channel lets you read it, not change it\./);
  t.true((await page(mia.client, `/app/orders/${open.id}`)).text.includes(`action="/app/orders/${open.id}"`), 'an order with no channel is hers to change');
  const refused = await postForm(mia.client, `/app/orders/${seen.id}`, { status: 'paid' });
  t.is(refused.status, 403);
  t.regex(visibleText(refused.text), /viewer/);
  const allowed = await postForm(mia.client, `/app/orders/${open.id}`, { status: 'paid', notes: '' });
  t.is(allowed.status, 303);
  t.is((await ok(owner.client.get(`/api/v1/orders/${open.id}`))).order.status, 'paid');
  t.is((await ok(owner.client.get(`/api/v1/orders/${secret.id}`))).order.status, 'pending');
});

test('markup in notes, names, SKUs and sources comes out escaped', async (t) => {
  const evil = '<script>x</script>';
  const o = await order({
    order_number: `N${evil}`, notes: `note ${evil}`, external_source: `src${evil}`,
    customer: { email: uniqueEmail('xss'), name: `Name ${evil}` },
    items: [{ sku: `S${evil}`, description: `D ${evil}`, quantity: 1, price: '1.00' }],
  });
  for (const path of ['/app/orders', `/app/orders/${o.id}`]) {
    const res = await page(owner.client, path);
    t.false(res.text.includes('<script>x'), path);
    t.true(res.text.includes('&lt;script&gt;x&lt;/script&gt;'), path);
  }
});
