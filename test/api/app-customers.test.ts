import test from 'ava';
import { signUpOwner, uniqueEmail, type Owner } from '../helpers/app.js';
import { useOwnerApp } from '../helpers/fixture.js';
import { inviteMember, type Member } from '../helpers/members.js';
import { ok, type Client } from '../helpers/client.js';
import { postForm, visibleText, getPage as page, ownSession as signedIn } from '../helpers/pages.js';

const { app, smtp, owner } = useOwnerApp(test, { workspace: 'App customers', smtp: true });
let mia: Member;
let other: Owner;
/** A channel Mia has no role on. */
let hidden: number;

const bearer = (o: Owner) => ({ headers: { authorization: `Bearer ${o.keys.secret_key}` } });

async function customer(fields: Record<string, unknown> = {}, o: Owner = owner): Promise<any> {
  return (await ok(o.client.post('/api/v1/customers', { email: uniqueEmail('c'), name: 'Carla Customer', ...fields }), 201)).customer;
}

let orders = 0;
/** An external order of the customer (an external order names its customer by email). */
async function order(c: { id: number; email: string }, fields: Record<string, unknown> = {}): Promise<any> {
  const body = { external_id: `o-${++orders}`, customer: { email: c.email }, items: [{ description: 'Box', quantity: 1, price: '3.00' }], ...fields };
  const made = (await ok(app.client().post('/api/v1/orders/external', body, bearer(owner)), 201)).order;
  if (made.customer_id !== c.id) throw new Error(`the order went to customer ${made.customer_id}, not ${c.id}`);
  return made;
}

async function quote(customerId: number, fields: Record<string, unknown> = {}): Promise<any> {
  return (await ok(owner.client.post('/api/v1/quotes', { customer_id: customerId, lines: [{ description: 'Work', price: '10.00' }], ...fields }), 201)).quote;
}

async function track(visitor: string, customerId: number, events: Record<string, unknown>[]): Promise<void> {
  for (const event of events) {
    const res = await app.client().post('/api/v1/track/event', { visitor_id: visitor, ...event }, { headers: { authorization: `Public ${owner.keys.public_key}` } });
    if (res.status !== 204) throw new Error(`track: ${res.status} ${res.text}`);
  }
  await ok(app.client().post('/api/v1/track/join', { visitor_id: visitor, customer_id: customerId }, bearer(owner)));
}

const links = (html: string, area: string) => [...html.matchAll(new RegExp(`<a href="/app/${area}/(\\d+)">`, 'g'))].map((m) => Number(m[1]));
const apiCustomer = async (id: number, o: Owner = owner) => (await o.client.get(`/api/v1/customers/${id}`)).body?.data?.customer;

/** A session of the owner's own: the flash message a POST leaves is this client's alone while other tests run. */
const ownSession = () => signedIn(app, owner);

test.before(async () => {
  mia = await inviteMember(app, smtp, owner);
  other = await signUpOwner(app, 'Elsewhere');
  hidden = (await ok(owner.client.post('/api/v1/channels', { name: 'Hidden shop' }), 201)).channel.id;
});

test('without a session every customers page sends to sign-in, and no POST changes anything', async (t) => {
  const c = await customer();
  const anon = app.client();
  for (const path of ['/app/customers', '/app/customers?q=x', '/app/customers/new', `/app/customers/${c.id}`, `/app/customers/${c.id}/edit`]) {
    const res = await anon.get(path);
    t.is(res.status, 302, path);
    t.is(res.headers.get('location'), `/login?next=${encodeURIComponent(path)}`, path);
  }
  for (const [path, fields] of [
    ['/app/customers/new', { email: uniqueEmail('anon') }],
    [`/app/customers/${c.id}/edit`, { email: c.email, name: 'Changed' }],
    [`/app/customers/${c.id}/delete`, { cascade: 'true' }],
  ] as const) {
    const res = await postForm(anon, path, fields);
    t.is(res.status, 303, path);
    t.regex(res.headers.get('location') ?? '', /^\/login/, path);
  }
  t.like(await apiCustomer(c.id), { name: 'Carla Customer' });
});

test('the list: search by q, 50 a page newest first, a New customer link; nothing found says so', async (t) => {
  const ws = await signUpOwner(app, 'Many customers');
  const made = [];
  for (let i = 0; i < 53; i++) made.push(await customer({ name: `Person ${i}`, company: i === 7 ? 'Findable GmbH' : null }, ws));
  const one = await page(ws.client, '/app/customers');
  const ids = links(one.text, 'customers');
  t.is(ids.length, 50);
  t.is(ids[0], made.at(-1).id);
  t.regex(visibleText(one.text), /1–50 of 53 customers/);
  t.true(one.text.includes('<a class="button primary" href="/app/customers/new">New customer</a>'));
  t.deepEqual(links((await page(ws.client, '/app/customers?page=2')).text, 'customers'), made.slice(0, 3).map((c) => c.id).reverse());

  const found = await page(ws.client, '/app/customers?q=findable');
  t.deepEqual(links(found.text, 'customers'), [made[7].id]);
  t.true(found.text.includes('value="findable"'));
  const none = await page(ws.client, '/app/customers?q=nobody-at-all');
  t.deepEqual(links(none.text, 'customers'), []);
  t.regex(visibleText(none.text), /No customers match this search/);
});

test('create: 303 to the new customer, seen through the API; 422 keeps the input with the message beside its field; Origin checked', async (t) => {
  const form = await page(owner.client, '/app/customers/new');
  for (const name of ['email', 'name', 'company', 'phone', 'country', 'notes']) t.true(form.text.includes(`<label for="f-${name}">`), name);

  const invalid = await postForm(owner.client, '/app/customers/new', { email: 'not-an-email', name: 'Kept Name', company: 'Kept Co', notes: 'kept notes' });
  t.is(invalid.status, 422);
  t.true(invalid.text.includes('<p class="field-error" id="f-email-error">email: must be a valid email address.</p>'));
  t.true(invalid.text.includes('value="not-an-email"'));
  t.true(invalid.text.includes('value="Kept Name"'));
  t.true(invalid.text.includes('kept notes</textarea>'));
  const country = await postForm(owner.client, '/app/customers/new', { email: uniqueEmail('ctry'), country: 'Germany' });
  t.is(country.status, 422);
  t.true(country.text.includes('<p class="field-error" id="f-country-error">country: must be a 2-letter ISO country code.</p>'));

  const email = uniqueEmail('new');
  const evil = await postForm(owner.client, '/app/customers/new', { email, name: 'Evil' }, { origin: 'https://evil.example' });
  t.is(evil.status, 403);

  const own = await ownSession();
  const created = await postForm(own, '/app/customers/new', { email: email.toUpperCase(), name: 'Nora New', company: '', phone: '+49 30 1234', country: 'de', notes: '' });
  t.is(created.status, 303);
  const id = Number(/^\/app\/customers\/(\d+)$/.exec(created.headers.get('location') ?? '')?.[1]);
  t.like(await apiCustomer(id), { email, name: 'Nora New', company: null, phone: '+49 30 1234', country: 'DE', notes: null });
  t.regex(visibleText((await page(own, `/app/customers/${id}`)).text), /Customer created\./);
  t.is((await owner.client.get('/api/v1/customers')).body.data.customers.filter((c: any) => c.email === email).length, 1, 'the evil origin created nothing');

  // The same email again is the API's upsert: the existing customer, updated by what was given.
  const again = await postForm(owner.client, '/app/customers/new', { email, company: 'Now With Co' });
  t.is(again.status, 303);
  t.is(again.headers.get('location'), `/app/customers/${id}`);
  t.like(await apiCustomer(id), { name: 'Nora New', company: 'Now With Co' });
});

test('edit: the form holds the customer; 303 and the change through the API; an emptied field is cleared; 409 for a taken email beside the field', async (t) => {
  const c = await customer({ company: 'Old Co', phone: '123', notes: 'old notes' });
  const taken = await customer();
  const form = await page(owner.client, `/app/customers/${c.id}/edit`);
  t.true(form.text.includes(`value="${c.email}"`));
  t.true(form.text.includes('value="Old Co"'));
  t.true(form.text.includes('old notes</textarea>'));

  const saved = await postForm(owner.client, `/app/customers/${c.id}/edit`, { email: c.email, name: 'Carla Changed', company: 'New Co', phone: '', country: 'fr', notes: 'new notes' });
  t.is(saved.status, 303);
  t.is(saved.headers.get('location'), `/app/customers/${c.id}`);
  t.like(await apiCustomer(c.id), { name: 'Carla Changed', company: 'New Co', phone: null, country: 'FR', notes: 'new notes' });

  const conflict = await postForm(owner.client, `/app/customers/${c.id}/edit`, { email: taken.email, name: 'Kept' });
  t.is(conflict.status, 409);
  t.true(conflict.text.includes(`<p class="field-error" id="f-email-error">Another customer already has the email ${taken.email}.</p>`));
  t.true(conflict.text.includes('value="Kept"'));
  const invalid = await postForm(owner.client, `/app/customers/${c.id}/edit`, { email: 'broken', name: 'Kept too' });
  t.is(invalid.status, 422);
  t.true(invalid.text.includes('<p class="field-error" id="f-email-error">email: must be a valid email address.</p>'));
  t.true(invalid.text.includes('value="Kept too"'));
  t.is((await postForm(owner.client, `/app/customers/${c.id}/edit`, { email: c.email, name: 'Evil' }, { origin: 'https://evil.example' })).status, 403);
  t.like(await apiCustomer(c.id), { email: c.email, name: 'Carla Changed' });
});

test("a customer's page: details, quotes, orders and browsing events (limit, up to 200)", async (t) => {
  const c = await customer({ company: 'Detail Co', notes: 'Prefers mail' });
  const q = await quote(c.id, { currency: 'EUR' });
  const o = await order(c, { order_number: 'D-1', status: 'paid' });
  await track(`v_detail_${process.pid}`, c.id, [
    { type: 'page_view', url: 'https://shop.example/one', title: 'First page', occurred_at: '2026-11-01T10:00:00Z' },
    { type: 'product_view', url: 'javascript:alert(1)', title: 'Second page', sku: 'SKU-9', occurred_at: '2026-11-02T10:00:00Z' },
    { type: 'search', url: 'https://shop.example/search?q=desk', occurred_at: '2026-11-03T10:00:00Z' },
  ]);
  const res = await page(owner.client, `/app/customers/${c.id}`);
  const text = visibleText(res.text);
  t.regex(text, /Detail Co/);
  t.regex(text, /Prefers mail/);
  t.deepEqual(links(res.text, 'quotes'), [q.id]);
  t.regex(text, new RegExp(`${q.quote_number} Draft EUR 10\\.00`));
  t.deepEqual(links(res.text, 'orders'), [o.id]);
  t.regex(text, /D-1 Paid USD 3\.00/);
  t.regex(text, /3 Nov 2026, 10:00 UTC search https:\/\/shop\.example\/search\?q=desk 2 Nov 2026, 10:00 UTC product view Second page SKU SKU-9/);
  t.false(res.text.includes('href="javascript:'), 'a tracked URL is never a link');
  t.true(res.text.includes(`href="/app/customers/${c.id}/edit"`));

  const two = visibleText((await page(owner.client, `/app/customers/${c.id}?limit=2`)).text);
  t.regex(two, /search/);
  t.notRegex(two, /First page/);
  t.regex(visibleText((await page(owner.client, `/app/customers/${c.id}?limit=200`)).text), /First page/);
  const tooMany = await owner.client.get(`/app/customers/${c.id}?limit=500`);
  t.is(tooMany.status, 422);
  t.regex(visibleText(tooMany.text), /limit: must be a whole number from 1 to 200/);
});

test("a member sees none of a hidden channel's quotes and orders on a customer's page, and gets 404 on them", async (t) => {
  const c = await customer({ name: 'Shared Sam' });
  const openQuote = await quote(c.id);
  const hiddenQuote = await quote(c.id, { channel_id: hidden });
  const openOrder = await order(c);
  const hiddenOrder = await order(c, { channel_id: hidden });

  const mine = await page(mia.client, `/app/customers/${c.id}`);
  t.deepEqual(links(mine.text, 'quotes'), [openQuote.id]);
  t.deepEqual(links(mine.text, 'orders'), [openOrder.id]);
  t.regex(visibleText(mine.text), /Quotes 1 .* Orders 1 /);
  const owners = await page(owner.client, `/app/customers/${c.id}`);
  t.deepEqual(links(owners.text, 'quotes'), [hiddenQuote.id, openQuote.id]);
  t.deepEqual(links(owners.text, 'orders'), [hiddenOrder.id, openOrder.id]);
  t.is((await mia.client.get(`/app/orders/${hiddenOrder.id}`)).status, 404);

  // Her delete: the counts she may see, and the rest as one number; the cascade is refused (403) and nothing goes.
  const asked = await postForm(mia.client, `/app/customers/${c.id}/delete`, {});
  t.is(asked.status, 409);
  const text = visibleText(asked.text);
  t.regex(text, /1 quote 1 order 2 quotes or orders on channels you have no role on/);
  const refused = await postForm(mia.client, `/app/customers/${c.id}/delete`, { cascade: 'true' });
  t.is(refused.status, 403);
  t.like(await apiCustomer(c.id), { id: c.id });
  t.is((await owner.client.get(`/api/v1/orders/${hiddenOrder.id}`)).status, 200);
});

test('delete: without dependents at once; with them, a page with their counts, and the confirmation deletes them all; Origin checked', async (t) => {
  const lone = await customer({ name: 'Lone Lee' });
  t.is((await postForm(owner.client, `/app/customers/${lone.id}/delete`, {}, { origin: 'https://evil.example' })).status, 403);
  t.like(await apiCustomer(lone.id), { id: lone.id });
  const own = await ownSession();
  const gone = await postForm(own, `/app/customers/${lone.id}/delete`, {});
  t.is(gone.status, 303);
  t.is(gone.headers.get('location'), '/app/customers');
  t.is((await owner.client.get(`/api/v1/customers/${lone.id}`)).status, 404);
  t.regex(visibleText((await page(own, '/app/customers')).text), /Lone Lee is deleted\./);

  const c = await customer({ name: 'Busy Bo' });
  const quotes = [await quote(c.id), await quote(c.id)];
  const o = await order(c);
  await track(`v_delete_${process.pid}`, c.id, [{ type: 'page_view', url: 'https://shop.example/' }]);

  const asked = await postForm(owner.client, `/app/customers/${c.id}/delete`, {});
  t.is(asked.status, 409);
  const text = visibleText(asked.text);
  t.regex(text, /Delete Busy Bo\?/);
  t.regex(text, /2 quotes 1 order 1 tracked visitor, with their browsing events/);
  t.notRegex(text, /no role on/);
  t.true(asked.text.includes('<input type="hidden" name="cascade" value="true">'));
  t.true(asked.text.includes('Delete with all of these</button>'));
  t.like(await apiCustomer(c.id), { id: c.id }, 'asking deleted nothing');

  t.is((await postForm(owner.client, `/app/customers/${c.id}/delete`, { cascade: 'true' }, { origin: 'https://evil.example' })).status, 403);
  t.like(await apiCustomer(c.id), { id: c.id });
  const confirmed = await postForm(owner.client, `/app/customers/${c.id}/delete`, { cascade: 'true' });
  t.is(confirmed.status, 303);
  t.is(confirmed.headers.get('location'), '/app/customers');
  t.is((await owner.client.get(`/api/v1/customers/${c.id}`)).status, 404);
  for (const q of quotes) t.is((await owner.client.get(`/api/v1/quotes/${q.id}`)).status, 404);
  t.is((await owner.client.get(`/api/v1/orders/${o.id}`)).status, 404);
});

test("another workspace's customer and a malformed id are the 404 page, for every page and POST", async (t) => {
  const theirs = await customer({ name: 'Their Tom' }, other);
  for (const path of [`/app/customers/${theirs.id}`, `/app/customers/${theirs.id}/edit`, '/app/customers/abc', '/app/customers/0/edit', '/app/customers/1.5']) {
    const res = await owner.client.get(path);
    t.is(res.status, 404, path);
    t.false(res.text.includes('Their Tom'), path);
  }
  t.is((await postForm(owner.client, `/app/customers/${theirs.id}/edit`, { email: theirs.email, name: 'Mine now' })).status, 404);
  t.is((await postForm(owner.client, `/app/customers/${theirs.id}/edit`, { email: 'broken' })).status, 404, 'a 422 for a customer not here is still 404');
  t.is((await postForm(owner.client, `/app/customers/${theirs.id}/delete`, { cascade: 'true' })).status, 404);
  t.is((await postForm(owner.client, '/app/customers/abc/delete', {})).status, 404);
  t.like(await apiCustomer(theirs.id, other), { name: 'Their Tom' });
  t.false(links((await page(owner.client, '/app/customers?q=Their')).text, 'customers').includes(theirs.id));
});

test('markup in a name, company and notes comes out escaped on every customers page', async (t) => {
  const evil = '<script>x</script>';
  const c = await customer({ name: `Name ${evil}`, company: `Co ${evil}`, notes: `Notes ${evil}` });
  await quote(c.id);
  await order(c, { notes: `Order ${evil}` });
  const asked = await postForm(owner.client, `/app/customers/${c.id}/delete`, {});
  const invalid = await postForm(owner.client, `/app/customers/${c.id}/edit`, { email: 'bad', name: `Typed ${evil}` });
  for (const [what, html] of [
    ['list', (await page(owner.client, '/app/customers')).text],
    ['search', (await page(owner.client, `/app/customers?q=${encodeURIComponent(evil)}`)).text],
    ['detail', (await page(owner.client, `/app/customers/${c.id}`)).text],
    ['edit', (await page(owner.client, `/app/customers/${c.id}/edit`)).text],
    ['orders', (await page(owner.client, `/app/orders?customer_id=${c.id}`)).text],
    ['confirm', asked.text],
    ['422', invalid.text],
  ]) {
    t.false(html.includes('<script>x'), what);
    t.true(html.includes('&lt;script&gt;x&lt;/script&gt;'), what);
  }
});
