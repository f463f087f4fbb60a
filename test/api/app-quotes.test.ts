import test from 'ava';
import { signUpOwner, startApp, uniqueEmail, type Owner } from '../helpers/app.js';
import { useOwnerApp } from '../helpers/fixture.js';
import { inviteMember, type Member } from '../helpers/members.js';
import { postForm, signInPage, visibleText } from '../helpers/pages.js';
import type { Client } from '../helpers/client.js';

// The quotes' pages: the list (tabs, filters, pages) and a quote's page with its actions, over the same services as the API.

const { app, smtp, owner } = useOwnerApp(test, { workspace: 'Page Quotes', smtp: true });
let other: Owner;
let mia: Member;
let vic: Member;
let shared: any;
let hidden: any;
let readOnly: any;
test.before(async () => {
  other = await signUpOwner(app, 'Elsewhere');
  mia = await inviteMember(app, smtp, owner);
  vic = await inviteMember(app, smtp, owner);
  shared = await channel('Shared shop');
  hidden = await channel('Hidden shop');
  readOnly = await channel('Read-only shop');
  await grant(shared.id, mia.user.id, 'editor');
  await grant(readOnly.id, mia.user.id, 'viewer');
});

async function channel(name: string): Promise<any> {
  const res = await owner.client.post('/api/v1/channels', { name, currency: 'EUR' });
  if (res.status !== 201) throw new Error(`channel failed: ${res.status} ${res.text}`);
  return res.body.data.channel;
}

async function grant(channelId: number, userId: number, role: string): Promise<void> {
  const res = await owner.client.put(`/api/v1/channels/${channelId}/members/${userId}`, { role });
  if (res.status !== 200 && res.status !== 201) throw new Error(`grant failed: ${res.status} ${res.text}`);
}

let made = 0;
/** A draft through the JSON API: one line of 2 × 10.00, the customer upserted by email. */
async function quote(fields: Record<string, unknown> = {}, by: Client = owner.client): Promise<any> {
  made++;
  const res = await by.post('/api/v1/quotes', {
    customer: { email: uniqueEmail(`buyer${made}`), name: `Buyer ${made}` },
    lines: [{ description: 'Widget', price: '10.00', quantity: '2' }],
    ...fields,
  });
  if (res.status !== 201) throw new Error(`quote failed: ${res.status} ${res.text}`);
  return res.body.data.quote;
}

async function move(id: number, to: 'send' | 'accept' | 'cancel'): Promise<void> {
  const res = await owner.client.post(`/api/v1/quotes/${id}/${to}`, to === 'send' ? { notify: false } : undefined);
  if (res.status !== 200) throw new Error(`${to} failed: ${res.status} ${res.text}`);
}

/** The owner in a browser of their own: the flash a POST leaves is not taken by another test's page. */
async function ownBrowser(): Promise<Client> {
  const client = app.client();
  await signInPage(client, owner.email, owner.password);
  return client;
}

const apiQuote = async (id: number) => (await owner.client.get(`/api/v1/quotes/${id}`)).body.data.quote;
const rowsOf = (page: string) => [...page.matchAll(/<a href="\/app\/quotes\/(\d+)">/g)].map((m) => Number(m[1]));
/** The count on a status tab ("All", "Draft" …). */
function tabCount(page: string, label: string): number {
  const match = new RegExp(`>${label}<span class="count">(\\d+)</span>`).exec(page);
  if (!match) throw new Error(`no tab ${label}`);
  return Number(match[1]);
}

test('without a session, the pages send to /login with the way back; a POST comes back to the page it was sent from', async (t) => {
  const anon = app.client();
  const list = await anon.get('/app/quotes?status=sent');
  t.is(list.status, 302);
  t.is(list.headers.get('location'), `/login?next=${encodeURIComponent('/app/quotes?status=sent')}`);
  const one = await anon.get('/app/quotes/1');
  t.is(one.status, 302);
  t.is(one.headers.get('location'), `/login?next=${encodeURIComponent('/app/quotes/1')}`);
  const posted = await anon.request('POST', '/app/quotes/1/cancel', {
    raw: '', contentType: 'application/x-www-form-urlencoded', headers: { origin: new URL(anon.baseUrl).origin, referer: `${anon.baseUrl}/app/quotes/1` },
  });
  t.is(posted.status, 303);
  t.is(posted.headers.get('location'), `/login?next=${encodeURIComponent('/app/quotes/1')}`);
});

test("another workspace's quote and a malformed id are the 404 page, for the page and for every action", async (t) => {
  const theirs = await quote({}, other.client);
  for (const path of [`/app/quotes/${theirs.id}`, '/app/quotes/abc', '/app/quotes/0', '/app/quotes/99999999999']) {
    const res = await owner.client.get(path);
    t.is(res.status, 404, path);
    t.regex(res.text, /Page not found/);
  }
  for (const action of ['send', 'cancel', 'convert', 'delete']) {
    const res = await postForm(owner.client, `/app/quotes/${theirs.id}/${action}`, { notify: 'false' });
    t.is(res.status, 404, action);
  }
  t.is((await owner.client.get(`/api/v1/quotes/${theirs.id}`)).status, 404);
  t.is((await other.client.get(`/api/v1/quotes/${theirs.id}`)).body.data.quote.status, 'draft');
  t.false(rowsOf((await owner.client.get('/app/quotes')).text).includes(theirs.id));
});

test('the list: newest first, a row per quote with number, customer, status, total with currency, validity and last change', async (t) => {
  const me = await signUpOwner(app, 'Rows');
  const older = await quote({ currency: 'GBP', valid_until: '2020-01-31' }, me.client);
  await me.client.post(`/api/v1/quotes/${older.id}/send`, { notify: false }).catch(() => undefined);
  const draft = await quote({ valid_until: '2099-12-31', discount_amount: '5.00' }, me.client);
  const res = await me.client.get('/app/quotes');
  t.is(res.status, 200);
  t.regex(res.headers.get('content-type') ?? '', /text\/html/);
  t.deepEqual(rowsOf(res.text), [draft.id, older.id]);
  const text = visibleText(res.text);
  t.true(text.includes(`${draft.quote_number} ${draft.customer_name}`), text);
  t.true(text.includes('USD 15.00'));
  t.true(text.includes('31 Dec 2099'));
  t.true(text.includes('GBP 20.00'));
  t.regex(res.text, /<h1>Quotes<\/h1>/);
  t.regex(res.text, /href="\/app\/quotes\/new"/);
  t.regex(res.text, /<th scope="col">Number<\/th>/);
  t.regex(res.text, /data-label="Last change"/);
  // A past valid_until: the API refuses to send it, so the draft is marked expired on the list.
  t.regex(res.text, /31 Jan 2020 <span class="expired">expired<\/span>/);
});

test('a sent quote past its valid_until is marked expired on the list and on its page', async (t) => {
  const me = await signUpOwner(app, 'Expiry');
  const q = await quote({ valid_until: new Date().toISOString().slice(0, 10) }, me.client);
  t.is((await me.client.post(`/api/v1/quotes/${q.id}/send`, { notify: false })).status, 200);
  const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
  await app.db('quotes').where({ workspace_id: me.workspace.id, id: q.id }).update({ valid_until: yesterday });
  const list = await me.client.get('/app/quotes?status=sent');
  t.regex(list.text, /<span class="expired">expired<\/span>/);
  const one = await me.client.get(`/app/quotes/${q.id}`);
  t.regex(one.text, /<span class="expired">expired<\/span>/);
});

test('status tabs count what the other filters keep; the status filter narrows the rows, not the counts', async (t) => {
  const me = await signUpOwner(app, 'Tabs');
  const a = await quote({}, me.client);
  const b = await quote({}, me.client);
  const c = await quote({}, me.client);
  await me.client.post(`/api/v1/quotes/${b.id}/send`, { notify: false });
  await me.client.post(`/api/v1/quotes/${c.id}/cancel`);
  const all = await me.client.get('/app/quotes');
  t.is(tabCount(all.text, 'All'), 3);
  t.is(tabCount(all.text, 'Draft'), 1);
  t.is(tabCount(all.text, 'Sent'), 1);
  t.is(tabCount(all.text, 'Cancelled'), 1);
  t.is(tabCount(all.text, 'Accepted'), 0);
  t.regex(all.text, /<a href="\/app\/quotes" aria-current="page">All/);
  const sent = await me.client.get('/app/quotes?status=sent');
  t.deepEqual(rowsOf(sent.text), [b.id]);
  t.is(tabCount(sent.text, 'All'), 3);
  t.regex(sent.text, /<a href="\/app\/quotes\?status=sent" aria-current="page">Sent/);
  const searched = await me.client.get(`/app/quotes?q=${encodeURIComponent(a.quote_number)}`);
  t.deepEqual(rowsOf(searched.text), [a.id]);
  t.is(tabCount(searched.text, 'All'), 1);
  t.is(tabCount(searched.text, 'Sent'), 0);
  const draftTab = /<a href="([^"]*)"[^>]*>Draft</.exec(searched.text)?.[1] ?? '';
  t.true(draftTab.includes('status=draft') && draftTab.includes(`q=${a.quote_number}`), `a tab keeps the other filters: ${draftTab}`);
  const none = await me.client.get('/app/quotes?q=nothing-like-this');
  t.true(visibleText(none.text).includes('No quotes match these filters.'));
  const bad = await me.client.get('/app/quotes?status=lost');
  t.is(bad.status, 422);
});

test('search by number, customer name and email; the channel and customer filters', async (t) => {
  const named = await quote({ customer: { email: 'zelda.search@example.com', name: 'Zelda Searchable' }, channel_id: shared.id });
  const other1 = await quote({ channel_id: hidden.id });
  const byName = await owner.client.get('/app/quotes?q=zelda%20search');
  t.deepEqual(rowsOf(byName.text), [named.id]);
  const byEmail = await owner.client.get('/app/quotes?q=ZELDA.SEARCH@');
  t.deepEqual(rowsOf(byEmail.text), [named.id]);
  const byNumber = await owner.client.get(`/app/quotes?q=${named.quote_number}`);
  t.deepEqual(rowsOf(byNumber.text), [named.id]);
  const byChannel = await owner.client.get(`/app/quotes?channel_id=${hidden.id}`);
  t.true(rowsOf(byChannel.text).includes(other1.id));
  t.false(rowsOf(byChannel.text).includes(named.id));
  t.regex(byChannel.text, new RegExp(`<option value="${hidden.id}" selected>Hidden shop</option>`));
  const byCustomer = await owner.client.get(`/app/quotes?customer_id=${named.customer_id}`);
  t.deepEqual(rowsOf(byCustomer.text), [named.id]);
  t.true(visibleText(byCustomer.text).includes('Quotes of Zelda Searchable'));
  t.regex(byCustomer.text, new RegExp(`<input type="hidden" name="customer_id" value="${named.customer_id}">`));
  // An empty filter, as a GET form sends it, is no filter.
  const empty = await owner.client.get('/app/quotes?q=&channel_id=&customer_id=');
  t.is(empty.status, 200);
  t.true(rowsOf(empty.text).includes(named.id) && rowsOf(empty.text).includes(other1.id));
});

test.serial("a member sees nothing of a channel they have no role on: not in the list, the counts, the search, the channel filter; its page and actions are 404", async (t) => {
  const seen = await quote({ channel_id: shared.id, customer: { email: 'member.visible@example.com', name: 'Kim Visible' } });
  const unseen = await quote({ channel_id: hidden.id, customer: { email: 'member.hidden@example.com', name: 'Kim Hidden' } });
  const open = await quote({});
  const list = await mia.client.get('/app/quotes');
  t.is(list.status, 200);
  const ids = rowsOf(list.text);
  t.true(ids.includes(seen.id) && ids.includes(open.id));
  t.false(ids.includes(unseen.id));
  t.false(list.text.includes('Hidden shop'));
  t.true(list.text.includes('Shared shop'));
  // The counts: what the API lists to the member, status by status.
  const api = (await mia.client.get('/api/v1/quotes')).body.data.quotes as { id: number; status: string }[];
  t.is(tabCount(list.text, 'All'), api.length);
  t.is(tabCount(list.text, 'Draft'), api.filter((q) => q.status === 'draft').length);
  const ownerCount = tabCount((await owner.client.get('/app/quotes')).text, 'All');
  t.true(ownerCount > api.length);
  const search = await mia.client.get('/app/quotes?q=Kim');
  t.deepEqual(rowsOf(search.text), [seen.id]);
  t.is(tabCount(search.text, 'All'), 1);
  const byChannel = await mia.client.get(`/app/quotes?channel_id=${hidden.id}`);
  t.deepEqual(rowsOf(byChannel.text), []);
  t.is(tabCount(byChannel.text, 'All'), 0);
  t.is((await mia.client.get(`/app/quotes/${unseen.id}`)).status, 404);
  for (const action of ['send', 'cancel', 'convert', 'delete']) {
    t.is((await postForm(mia.client, `/app/quotes/${unseen.id}/${action}`, { notify: 'false' })).status, 404, action);
  }
  t.is((await apiQuote(unseen.id)).status, 'draft');
  const page = await mia.client.get(`/app/quotes/${seen.id}`);
  t.is(page.status, 200);
  t.true(visibleText(page.text).includes('Kim Visible'));
  // A member without any role on the shared channel does not see its quote either.
  t.is((await vic.client.get(`/app/quotes/${seen.id}`)).status, 404);
  t.true(rowsOf((await vic.client.get('/app/quotes')).text).includes(open.id));
});

test("a viewer reads the quote without its actions; an action is the 403 page and changes nothing", async (t) => {
  const q = await quote({ channel_id: readOnly.id });
  const page = await mia.client.get(`/app/quotes/${q.id}`);
  t.is(page.status, 200);
  t.false(page.text.includes(`action="/app/quotes/${q.id}/cancel"`));
  t.true(visibleText(page.text).includes('lets you read it, not change it'));
  const res = await postForm(mia.client, `/app/quotes/${q.id}/cancel`, {});
  t.is(res.status, 403);
  t.regex(res.text, /viewer/);
  t.is((await apiQuote(q.id)).status, 'draft');
});

test('every action checks the Origin: another site is the 403 page and nothing changes', async (t) => {
  const q = await quote({});
  for (const action of ['send', 'cancel', 'convert', 'delete']) {
    const res = await postForm(owner.client, `/app/quotes/${q.id}/${action}`, { notify: 'false' }, { origin: 'https://evil.example' });
    t.is(res.status, 403, action);
    t.regex(res.text, /Error 403/);
  }
  t.is((await apiQuote(q.id)).status, 'draft');
});

test("a draft's page: details, lines, totals, notes, its actions, no public link yet, and no browsing recorded", async (t) => {
  const q = await quote({
    channel_id: shared.id, notes: 'Delivery in May.\nCall first.', tax_rate: '10', discount_amount: '2.00', valid_until: '2099-01-15',
    lines: [{ description: 'Oak desk', sku: 'OAK-1', price: '100.00', quantity: '1' }, { description: 'Fitting', price: '20.00', quantity: '2' }],
  });
  const res = await owner.client.get(`/app/quotes/${q.id}`);
  t.is(res.status, 200);
  const text = visibleText(res.text);
  t.is((res.text.match(/<h1[ >]/g) ?? []).length, 1);
  t.true(text.includes(`Quote ${q.quote_number} Draft`));
  for (const piece of ['Shared shop', 'EUR 140.00', 'EUR 13.80', 'EUR 151.80', 'Oak desk OAK-1', 'Fitting', '15 Jan 2099', 'Delivery in May.\nCall first.'.replace('\n', ' '), 'No browsing recorded']) {
    t.true(text.includes(piece), piece);
  }
  t.regex(res.text, new RegExp(`href="/app/quotes/${q.id}/edit"`));
  t.regex(res.text, /Send by mail/);
  t.regex(res.text, /Mark as sent without mail/);
  t.regex(res.text, new RegExp(`action="/app/quotes/${q.id}/delete"`));
  t.regex(res.text, new RegExp(`action="/app/quotes/${q.id}/cancel"`));
  t.notRegex(res.text, /\/convert"/);
  t.notRegex(res.text, /data-copy/);
  t.true(text.includes('Created'));
});

test('send without mail: 303 to the quote with a message, the API shows it sent, the page its public link to copy', async (t) => {
  const browser = await ownBrowser();
  const q = await quote({});
  const res = await postForm(browser, `/app/quotes/${q.id}/send`, { notify: 'false' });
  t.is(res.status, 303);
  t.is(res.headers.get('location'), `/app/quotes/${q.id}`);
  const api = await owner.client.get(`/api/v1/quotes/${q.id}`);
  t.is(api.body.data.quote.status, 'sent');
  t.false(smtp.mails.some((mail) => mail.to.includes(String(q.customer_email))), 'no mail');
  const page = await browser.get(`/app/quotes/${q.id}`);
  t.true(visibleText(page.text).includes(`Quote ${q.quote_number} marked as sent`));
  t.true(page.text.includes(`value="${api.body.data.url}"`));
  t.regex(page.text, /<input id="public-link" type="text" readonly/);
  t.regex(page.text, /data-copy="#public-link"/);
  t.regex(page.text, /Cancel quote/);
  t.notRegex(page.text, /Mark as sent without mail/);
  t.regex(visibleText(page.text), /Sent by user/);
  // The flash is shown once.
  t.false(visibleText((await browser.get(`/app/quotes/${q.id}`)).text).includes('marked as sent'));
});

test('send by mail: the customer gets the link', async (t) => {
  const browser = await ownBrowser();
  const email = uniqueEmail('mailed');
  const q = await quote({ customer: { email, name: 'Mailed Buyer' } });
  const res = await postForm(browser, `/app/quotes/${q.id}/send`, { notify: 'true' });
  t.is(res.status, 303);
  const mail = await smtp.waitFor(email.toLowerCase());
  const url = (await owner.client.get(`/api/v1/quotes/${q.id}`)).body.data.url;
  t.true(mail.text.includes(url));
  t.true(visibleText((await browser.get(`/app/quotes/${q.id}`)).text).includes(`sent to ${email.toLowerCase()}`));
});

test('without mail on the server, a draft offers only "Mark as sent without mail", and sending by mail is the 503 page', async (t) => {
  const mailless = await startApp({});
  t.teardown(() => mailless.close());
  const me = await signUpOwner(mailless, 'No mail');
  const res = await me.client.post('/api/v1/quotes', { customer: { email: uniqueEmail('nomail'), name: 'No Mail' }, lines: [{ description: 'Thing', price: '3.00' }] });
  const q = res.body.data.quote;
  const page = await me.client.get(`/app/quotes/${q.id}`);
  t.is(page.status, 200);
  t.notRegex(page.text, /Send by mail/);
  t.regex(page.text, /<input type="hidden" name="notify" value="false"><button type="submit" class="primary">Mark as sent without mail<\/button>/);
  t.true(visibleText(page.text).includes('Mail is not set up on this server'));
  const mailed = await postForm(me.client, `/app/quotes/${q.id}/send`, { notify: 'true' });
  t.is(mailed.status, 503);
  t.regex(mailed.text, /Mail is not configured/);
  t.is((await me.client.get(`/api/v1/quotes/${q.id}`)).body.data.quote.status, 'draft');
});

test('a wrong-status action is the 409: the quote page with the message at the top, nothing changed', async (t) => {
  const q = await quote({});
  await move(q.id, 'cancel');
  const again = await postForm(owner.client, `/app/quotes/${q.id}/cancel`, {});
  t.is(again.status, 409);
  t.regex(again.text, /<div class="flash flash-error" role="alert">Quote [^<]+ is cancelled; it cannot become cancelled\.<\/div>/);
  t.true(visibleText(again.text).includes(`Quote ${q.quote_number} Cancelled`));
  const send = await postForm(owner.client, `/app/quotes/${q.id}/send`, { notify: 'false' });
  t.is(send.status, 409);
  t.regex(send.text, /it cannot become sent/);
  const d = await quote({});
  const convert = await postForm(owner.client, `/app/quotes/${d.id}/convert`, {});
  t.is(convert.status, 409);
  t.regex(convert.text, /only an accepted or paid quote can be converted/);
  t.is((await apiQuote(d.id)).status, 'draft');
  t.is((await apiQuote(q.id)).status, 'cancelled');
});

test('cancel: 303 back to the quote, cancelled through the API', async (t) => {
  const browser = await ownBrowser();
  const q = await quote({});
  await move(q.id, 'send');
  const res = await postForm(browser, `/app/quotes/${q.id}/cancel`, {});
  t.is(res.status, 303);
  t.is(res.headers.get('location'), `/app/quotes/${q.id}`);
  t.is((await apiQuote(q.id)).status, 'cancelled');
  t.true(visibleText((await browser.get(`/app/quotes/${q.id}`)).text).includes(`Quote ${q.quote_number} cancelled.`));
});

test('convert an accepted quote: 303 to its order, which exists; the quote links to it; a repeat goes to the same order', async (t) => {
  const q = await quote({ channel_id: shared.id });
  await move(q.id, 'send');
  await move(q.id, 'accept');
  const before = await owner.client.get(`/app/quotes/${q.id}`);
  t.regex(before.text, /Convert to order/);
  const res = await postForm(mia.client, `/app/quotes/${q.id}/convert`, {});
  t.is(res.status, 303);
  const location = res.headers.get('location') ?? '';
  const orderId = Number(/^\/app\/orders\/(\d+)$/.exec(location)?.[1]);
  t.true(orderId > 0, location);
  const order = await owner.client.get(`/api/v1/orders/${orderId}`);
  t.is(order.status, 200);
  t.like(order.body.data.order, { quote_id: q.id, total: '20.00' });
  t.is(order.body.data.items.length, 1);
  const after = await owner.client.get(`/app/quotes/${q.id}`);
  t.true(after.text.includes(`href="/app/orders/${orderId}"`));
  t.notRegex(after.text, /Convert to order/);
  t.regex(visibleText(after.text), /Converted by user/);
  const repeat = await postForm(owner.client, `/app/quotes/${q.id}/convert`, {});
  t.is(repeat.status, 303);
  t.is(repeat.headers.get('location'), `/app/orders/${orderId}`);
  t.is((await owner.client.get('/api/v1/orders')).body.data.orders.filter((o: any) => o.quote_id === q.id).length, 1);
});

test('delete a draft: 303 to the list with a message, gone from the API', async (t) => {
  const browser = await ownBrowser();
  const q = await quote({});
  const res = await postForm(browser, `/app/quotes/${q.id}/delete`, {});
  t.is(res.status, 303);
  t.is(res.headers.get('location'), '/app/quotes');
  t.is((await owner.client.get(`/api/v1/quotes/${q.id}`)).status, 404);
  const list = await browser.get('/app/quotes');
  t.true(visibleText(list.text).includes(`Quote ${q.quote_number} deleted.`));
  t.false(rowsOf(list.text).includes(q.id));
});

test("the activity trail and the customer's recent browsing", async (t) => {
  const email = uniqueEmail('browser').toLowerCase();
  const q = await quote({ customer: { email, name: 'Browsing Buyer' } });
  const visitor = `v_app_${process.pid}`;
  const pub = { authorization: `Public ${owner.keys.public_key}` };
  t.is((await app.client().post('/api/v1/track/event', { visitor_id: visitor, type: 'page_view', url: 'https://shop.example/chairs', title: 'Chairs <b>sale</b>', occurred_at: '2026-11-20T10:00:00Z' }, { headers: pub })).status, 204);
  t.is((await app.client().post('/api/v1/track/event', { visitor_id: visitor, type: 'product_view', sku: 'CHAIR-9', occurred_at: '2026-11-20T10:05:00Z' }, { headers: pub })).status, 204);
  const joined = await app.client().post('/api/v1/track/join', { visitor_id: visitor, customer_id: q.customer_id }, { headers: { authorization: `Bearer ${owner.keys.secret_key}` } });
  t.true(joined.status === 200 || joined.status === 201, joined.text);
  await move(q.id, 'send');
  const page = await owner.client.get(`/app/quotes/${q.id}`);
  const text = visibleText(page.text);
  t.false(text.includes('No browsing recorded'));
  t.true(text.includes('20 Nov 2026, 10:05 UTC product view CHAIR-9'), text);
  t.true(text.includes('20 Nov 2026, 10:00 UTC page view Chairs <b>sale</b>'));
  t.false(page.text.includes('<b>sale</b>'));
  t.true(text.includes('Created by user'));
  t.true(text.includes('Sent by user'));
  t.true(text.indexOf('Sent by user') < text.indexOf('Created by user'), 'newest first');
});

test('markup in a customer name, notes, SKUs and descriptions comes out escaped on the list and the page', async (t) => {
  const evil = '<script>x</script>';
  const q = await quote({
    customer: { email: uniqueEmail('evil'), name: `Eve ${evil}` },
    notes: `Note ${evil}`,
    lines: [{ description: `Desc ${evil}`, sku: `SKU${evil}`, price: '1.00' }],
  });
  await move(q.id, 'send');
  for (const path of ['/app/quotes', `/app/quotes/${q.id}`, `/app/quotes?q=${encodeURIComponent('<script>')}`]) {
    const res = await owner.client.get(path);
    t.is(res.status, 200, path);
    t.false(res.text.includes(evil), path);
    t.true(res.text.includes('&lt;script&gt;x&lt;/script&gt;'), path);
  }
  const searched = await owner.client.get(`/app/quotes?q=${encodeURIComponent('<script>')}`);
  t.deepEqual(rowsOf(searched.text), [q.id]);
  t.regex(searched.text, /value="&lt;script&gt;"/);
});

test('50 quotes a page, newest first, with previous and next links that keep the filters, and the total', async (t) => {
  const me = await signUpOwner(app, 'Many');
  const ids: number[] = [];
  for (let i = 0; i < 53; i++) ids.push((await quote({}, me.client)).id);
  const first = await me.client.get('/app/quotes?q=Buyer');
  t.deepEqual(rowsOf(first.text), ids.slice(3).reverse());
  const text = visibleText(first.text);
  t.true(text.includes('1–50 of 53 quotes · page 1 of 2'), text);
  // The next link says where its page starts (below this page's last row), so a deep page skips no rows.
  t.regex(first.text, new RegExp(`<a class="button small" rel="next" href="/app/quotes\\?q=Buyer&amp;page=2&amp;before=${ids[3]}">Next</a>`));
  t.notRegex(first.text, /rel="prev"/);
  const second = await me.client.get(`/app/quotes?q=Buyer&page=2&before=${ids[3]}`);
  t.deepEqual(rowsOf(second.text), ids.slice(0, 3).reverse());
  t.deepEqual(rowsOf((await me.client.get('/app/quotes?q=Buyer&page=2')).text), ids.slice(0, 3).reverse(), 'a typed page number reads the same rows');
  // A previous link from a deeper page starts above that page's first row.
  t.deepEqual(rowsOf((await me.client.get(`/app/quotes?q=Buyer&page=1&after=${ids[2]}`)).text), ids.slice(3).reverse());
  t.deepEqual(rowsOf((await me.client.get('/app/quotes?q=Buyer&before=nonsense')).text), ids.slice(3).reverse(), 'a cursor that is no id is ignored');
  t.true(visibleText(second.text).includes('51–53 of 53 quotes · page 2 of 2'));
  t.regex(second.text, /rel="prev" href="\/app\/quotes\?q=Buyer"/);
  t.notRegex(second.text, /rel="next"/);
  const past = await me.client.get('/app/quotes?page=9');
  t.is(past.status, 200);
  t.deepEqual(rowsOf(past.text), []);
});
