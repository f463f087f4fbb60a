import test, { type ExecutionContext } from 'ava';
import { signUpOwner, uniqueEmail, type Owner } from '../helpers/app.js';
import { useOwnerApp } from '../helpers/fixture.js';
import { inviteMember, type Member } from '../helpers/members.js';
import { postForm, visibleText, type FormFields } from '../helpers/pages.js';
import type { Client } from '../helpers/client.js';

const { app, smtp, owner } = useOwnerApp(test, { workspace: 'Form Works', smtp: true });
let mia: Member;
let customer: any;
let channels: { editor: any; viewer: any; none: any; gbp: any };

async function data(res: Promise<{ status: number; text: string; body: any }>, status = 200): Promise<any> {
  const answer = await res;
  if (answer.status !== status) throw new Error(`expected ${status}, got ${answer.status}: ${answer.text.slice(0, 500)}`);
  return answer.body.data;
}

test.before(async () => {
  mia = await inviteMember(app, smtp, owner);
  for (const [prefix, price] of [['FA', '12.50'], ['FB', '3.20'], ['FC', '100.00']] as const) {
    await data(owner.client.post('/api/v1/products', { sku: `${prefix}-P`, name: `Product ${prefix}`, variants: [{ sku: `${prefix}-1`, name: 'Large', price }] }), 201);
  }
  customer = (await data(owner.client.post('/api/v1/customers', { email: uniqueEmail('zelda'), name: 'Zelda Zimmer', company: 'Zimmer GmbH' }), 201)).customer;
  const channel = async (name: string, fields: Record<string, unknown> = {}) => (await data(owner.client.post('/api/v1/channels', { name, ...fields }), 201)).channel;
  channels = { editor: await channel('Mia edits'), viewer: await channel('Mia views'), none: await channel('Not for Mia'), gbp: await channel('British shop', { currency: 'GBP' }) };
  await data(owner.client.put(`/api/v1/channels/${channels.editor.id}/members/${mia.user.id}`, { role: 'editor' }));
  await data(owner.client.put(`/api/v1/channels/${channels.viewer.id}/members/${mia.user.id}`, { role: 'viewer' }));
});

/** A complete new-quote form: the test's customer, one free line; `fields` over it. */
function newQuote(fields: FormFields = {}): FormFields {
  return {
    customer_q: '', customer_id: String(customer.id), customer_email: '', customer_name: '', customer_company: '', channel_id: '',
    currency: '', discount_amount: '', tax_rate: '', notes: '', valid_until: '',
    line_id: [''], line_sku: [''], line_description: ['Consulting'], line_quantity: ['1'], line_price: ['10.00'],
    ...fields,
  };
}

const quoteIdFrom = (location: string | null) => Number(/^\/app\/quotes\/(\d+)$/.exec(location ?? '')?.[1]);

/** The values of the inputs named `name`, in page order. */
function inputValues(page: string, name: string): string[] {
  return [...page.matchAll(new RegExp(`<input[^>]*name="${name}"[^>]*>`, 'g'))].map((m) => /value="([^"]*)"/.exec(m[0])?.[1] ?? '');
}

/** The quote's events (their ids and types), oldest first. */
async function quoteEvents(quoteId: number): Promise<{ id: string; type: string }[]> {
  const rows = await app.db('events').where({ workspace_id: owner.workspace.id }).whereLike('type', 'quote.%').orderBy('created_at');
  return rows.filter((e: any) => (e.data.quote?.id ?? e.data.quote_id) === quoteId).map((e: any) => ({ id: String(e.id), type: e.type }));
}

/** The types of the quote's events since `seen` (what quoteEvents gave before), sorted. */
async function newEventTypes(quoteId: number, seen: { id: string }[]): Promise<string[]> {
  const before = new Set(seen.map((e) => e.id));
  return (await quoteEvents(quoteId)).filter((e) => !before.has(e.id)).map((e) => e.type).sort();
}

/** The quotes whose notes are `notes` (each test's own marker: the file's tests run side by side). */
const quotesNoted = async (notes: string, client: Client = owner.client) =>
  (await data(client.get('/api/v1/quotes'))).quotes.filter((q: any) => q.notes === notes);

/** An API draft with three lines, for the edit tests. */
async function apiDraft(client: Client = owner.client, fields: Record<string, unknown> = {}): Promise<{ quote: any; lines: any[] }> {
  return data(client.post('/api/v1/quotes', {
    customer_id: customer.id,
    lines: [{ description: 'One', quantity: 1, price: '10.00' }, { description: 'Two', quantity: 2, price: '5.00' }, { sku: 'FB-1' }],
    ...fields,
  }), 201);
}

/** The edit form of a draft as stored (what its page shows), with `fields` over it. */
function editForm(quote: any, lines: any[], fields: FormFields = {}): FormFields {
  return {
    currency: quote.currency, discount_amount: quote.discount_amount, tax_rate: quote.tax_rate, notes: quote.notes ?? '', valid_until: quote.valid_until ?? '',
    line_id: lines.map((l) => String(l.id)), line_sku: lines.map((l) => l.sku ?? ''), line_description: lines.map((l) => l.description ?? ''),
    line_quantity: lines.map((l) => String(l.quantity)), line_price: lines.map((l) => l.price),
    ...fields,
  };
}

test('without a session both pages send to the sign-in page', async (t) => {
  const anonymous = app.client();
  for (const path of ['/app/quotes/new', '/app/quotes/1/edit', '/app/quotes/new/customers?q=a']) {
    const res = await anonymous.get(path);
    t.is(res.status, 302, path);
    t.is(res.headers.get('location'), `/login?next=${encodeURIComponent(path)}`);
  }
});

test('the new-quote form: labelled inputs, every channel for an owner, the page script', async (t) => {
  const res = await owner.client.get('/app/quotes/new');
  t.is(res.status, 200);
  t.is((res.text.match(/<h1[ >]/g) ?? []).length, 1);
  for (const name of ['Mia edits', 'Mia views', 'Not for Mia', 'British shop (GBP)']) t.true(res.text.includes(`>${name}</option>`), name);
  t.regex(res.text, /<script src="\/assets\/quote-form\.js\?v=\w+" defer><\/script>/);
  for (const [, id] of res.text.matchAll(/<input id="([^"]+)"/g)) t.true(res.text.includes(`for="${id}"`), `label for ${id}`);
  const script = await app.client().get('/assets/quote-form.js');
  t.is(script.status, 200);
  t.regex(script.headers.get('content-type') ?? '', /javascript/);
});

test('create with an existing customer: three SKU lines and a free one, priced from the catalogue, totals by the server', async (t) => {
  const res = await postForm(owner.client, '/app/quotes/new', newQuote({
    channel_id: String(channels.gbp.id), discount_amount: '5', tax_rate: '20', notes: 'Thanks!', valid_until: '2031-03-31',
    line_id: ['', '', '', ''], line_sku: ['FA-1', 'FB-1', 'FC-1', ''], line_description: ['', '', 'Own words', 'Setup'],
    line_quantity: ['2', '', '1', '1.5'], line_price: ['', '', '', '4.00'],
  }));
  t.is(res.status, 303, res.text.slice(0, 300));
  const id = quoteIdFrom(res.headers.get('location'));
  t.true(id > 0);
  const flash = await owner.client.get(`/app/quotes/${id}/edit`);
  t.regex(visibleText(flash.text), /is saved as a draft/);
  const { quote, lines } = await data(owner.client.get(`/api/v1/quotes/${id}`));
  t.is(quote.customer_id, customer.id);
  t.is(quote.channel_id, channels.gbp.id);
  t.is(quote.currency, 'GBP', "the channel's currency");
  t.deepEqual(lines.map((l: any) => [l.sku, l.description, l.quantity, l.price, l.line_total]), [
    ['FA-1', 'Product FA, Large', '2', '12.50', '25.00'],
    ['FB-1', 'Product FB, Large', '1', '3.20', '3.20'],
    ['FC-1', 'Own words', '1', '100.00', '100.00'],
    [null, 'Setup', '1.5', '4.00', '6.00'],
  ]);
  t.deepEqual([quote.subtotal, quote.discount_amount, quote.tax_amount, quote.total], ['134.20', '5.00', '25.84', '155.04']);
  t.is(quote.notes, 'Thanks!');
  t.is(quote.valid_until, '2031-03-31');
  t.deepEqual(await newEventTypes(id, []), ['quote.created']);
});

test("a customer's page starts a quote for them: the customer picked", async (t) => {
  const res = await owner.client.get(`/app/quotes/new?customer_id=${customer.id}`);
  t.is(res.status, 200);
  t.regex(res.text, new RegExp(`<input type="radio" name="customer_id" value="${customer.id}" checked>`));
  const junk = await owner.client.get('/app/quotes/new?customer_id=abc');
  t.is(junk.status, 200);
  t.regex(junk.text, /value="new" checked/);
});

test('create with a new customer: upserted by email, then known to the API', async (t) => {
  const email = uniqueEmail('newbie');
  const res = await postForm(owner.client, '/app/quotes/new', newQuote({ customer_id: 'new', customer_email: email.toUpperCase(), customer_name: 'Nora New', customer_company: 'New Co' }));
  t.is(res.status, 303, res.text.slice(0, 300));
  const { quote } = await data(owner.client.get(`/api/v1/quotes/${quoteIdFrom(res.headers.get('location'))}`));
  t.is(quote.customer_email, email.toLowerCase());
  const { customers } = await data(owner.client.get(`/api/v1/customers?q=${encodeURIComponent(email)}`));
  t.deepEqual(customers.map((c: any) => [c.id, c.name, c.company]), [[quote.customer_id, 'Nora New', 'New Co']]);
});

test('find a customer without script: matches as radio choices, everything typed kept, nothing saved', async (t) => {
  const res = await postForm(owner.client, '/app/quotes/new', newQuote({ action: 'find', customer_id: '', customer_q: 'zimmer', notes: 'Kept notes', line_sku: ['FA-1'], line_description: ['Kept line'] }));
  t.is(res.status, 200);
  t.regex(res.text, new RegExp(`<input type="radio" name="customer_id" value="${customer.id}"`));
  t.true(visibleText(res.text).includes(`Zelda Zimmer, Zimmer GmbH <${customer.email}>`));
  t.deepEqual(inputValues(res.text, 'customer_q'), ['zimmer']);
  t.deepEqual(inputValues(res.text, 'line_sku'), ['FA-1']);
  t.deepEqual(inputValues(res.text, 'line_description'), ['Kept line']);
  t.regex(res.text, />Kept notes<\/textarea>/);
  const none = await postForm(owner.client, '/app/quotes/new', newQuote({ action: 'find', customer_id: '', customer_q: 'nobody-by-this-name' }));
  t.regex(visibleText(none.text), /No customer matches “nobody-by-this-name”/);
  t.deepEqual(await quotesNoted('Kept notes'), []);
  // The as-you-type suggestions: the same choices as a fragment.
  const suggested = await owner.client.get('/app/quotes/new/customers?q=Zelda');
  t.is(suggested.status, 200);
  t.regex(suggested.text, new RegExp(`^<div id="customer-choices"[\\s\\S]*value="${customer.id}"`));
});

test('add, remove and move lines without script: the form again with the change, nothing saved', async (t) => {
  const three = { notes: 'moved about', line_id: ['', '', ''], line_sku: ['A', 'B', 'C'], line_description: ['a', 'b', 'c'], line_quantity: ['1', '2', '3'], line_price: ['1', '2', '3'] };
  const added = await postForm(owner.client, '/app/quotes/new', newQuote({ ...three, action: 'add' }));
  t.is(added.status, 200);
  t.deepEqual(inputValues(added.text, 'line_sku'), ['A', 'B', 'C', '']);
  t.deepEqual(inputValues(added.text, 'line_quantity'), ['1', '2', '3', '1']);
  t.regex(added.text, />moved about<\/textarea>/);
  const removed = await postForm(owner.client, '/app/quotes/new', newQuote({ ...three, action: 'remove:1' }));
  t.is(removed.status, 200);
  t.deepEqual(inputValues(removed.text, 'line_sku'), ['A', 'C']);
  t.deepEqual(inputValues(removed.text, 'line_price'), ['1', '3']);
  const up = await postForm(owner.client, '/app/quotes/new', newQuote({ ...three, action: 'up:2' }));
  t.deepEqual(inputValues(up.text, 'line_sku'), ['A', 'C', 'B']);
  t.deepEqual(inputValues(up.text, 'line_description'), ['a', 'c', 'b']);
  const down = await postForm(owner.client, '/app/quotes/new', newQuote({ ...three, action: 'down:0' }));
  t.deepEqual(inputValues(down.text, 'line_sku'), ['B', 'A', 'C']);
  t.regex(down.text, /<button[^>]*value="up:0" disabled/);
  t.deepEqual(await quotesNoted('moved about'), []);
});

function assertBeside(t: ExecutionContext, page: string, inputId: string, message: RegExp) {
  const error = new RegExp(`<input id="${inputId}"[^>]*aria-invalid="true" aria-describedby="${inputId}-error">\\s*<p class="field-error" id="${inputId}-error">([^<]*)</p>`).exec(page);
  t.truthy(error, `no message beside ${inputId}`);
  t.regex(error?.[1] ?? '', message);
}

test('a 422 shows the message beside its field, with the input kept (line numbers as the form shows them)', async (t) => {
  // Row 1 is left empty: it is no line, and messages still name the rows as shown.
  const fields = newQuote({ notes: 'Keep me', line_id: ['', '', ''], line_sku: ['FA-1', '', ''], line_description: ['', '', 'Bad'], line_quantity: ['1', '', 'lots'], line_price: ['', '', '2'] });
  const res = await postForm(owner.client, '/app/quotes/new', fields);
  t.is(res.status, 422);
  assertBeside(t, res.text, 'line-2-quantity', /^lines\.2\.quantity: must be a decimal number/);
  t.deepEqual(inputValues(res.text, 'line_quantity'), ['1', '', 'lots']);
  t.regex(res.text, />Keep me<\/textarea>/);
  // The service's own 422: a free line without a price.
  const unpriced = await postForm(owner.client, '/app/quotes/new', newQuote({ line_id: ['', '', ''], line_sku: ['', '', ''], line_description: ['', '', 'No price'], line_quantity: ['1', '1', '1'], line_price: ['', '', ''] }));
  t.is(unpriced.status, 422);
  assertBeside(t, unpriced.text, 'line-2-price', /^lines\.2\.price is required/);
  // A field of the quote, and the customer.
  const badEmail = await postForm(owner.client, '/app/quotes/new', newQuote({ customer_id: 'new', customer_email: 'not-an-email', discount_amount: '-1' }));
  t.is(badEmail.status, 422);
  t.regex(badEmail.text, /id="f-customer_email-error">customer\.email: must be a valid email address/);
  t.regex(badEmail.text, /id="f-discount_amount-error">discount_amount: must be zero or more/);
  t.deepEqual(inputValues(badEmail.text, 'customer_email'), ['not-an-email']);
  const nobody = await postForm(owner.client, '/app/quotes/new', newQuote({ customer_id: '' }));
  t.is(nobody.status, 422);
  t.regex(nobody.text, /id="customer-error">customer: customer_id or customer \{email, name, company\} is required/);
});

test('edit a draft: one request, the same events as the API, the user’s order kept', async (t) => {
  // The same change through the API and through the page: change a line, remove one, add one, change the discount.
  const viaApi = await apiDraft();
  const apiSeen = await quoteEvents(viaApi.quote.id);
  const [one, two] = viaApi.lines;
  await data(owner.client.patch(`/api/v1/quotes/${viaApi.quote.id}/lines/${one.id}`, { quantity: '3' }));
  await data(owner.client.post(`/api/v1/quotes/${viaApi.quote.id}/lines`, { sku: 'FA-1' }), 201);
  await data(owner.client.delete(`/api/v1/quotes/${viaApi.quote.id}/lines/${two.id}`));
  await data(owner.client.patch(`/api/v1/quotes/${viaApi.quote.id}`, { discount_amount: '2.00' }));
  const apiTypes = await newEventTypes(viaApi.quote.id, apiSeen);

  const { quote, lines } = await apiDraft();
  const page = await owner.client.get(`/app/quotes/${quote.id}/edit`);
  t.is(page.status, 200);
  t.deepEqual(inputValues(page.text, 'line_id'), lines.map((l) => String(l.id)));
  const seen = await quoteEvents(quote.id);
  const kept = [lines[0], lines[2]];
  const res = await postForm(owner.client, `/app/quotes/${quote.id}/edit`, editForm(quote, kept, {
    discount_amount: '2.00',
    line_id: [...kept.map((l) => String(l.id)), ''], line_sku: ['', 'FB-1', 'FA-1'], line_description: ['One', 'Product FB, Large', ''],
    line_quantity: ['3', '1', '1'], line_price: ['10.00', '3.20', ''],
  }));
  t.is(res.status, 303, res.text.slice(0, 300));
  t.is(res.headers.get('location'), `/app/quotes/${quote.id}`);
  const types = await newEventTypes(quote.id, seen);
  t.deepEqual(types, apiTypes);
  t.deepEqual(types, ['quote.line_added', 'quote.line_removed', 'quote.line_updated', 'quote.updated']);
  const after = await data(owner.client.get(`/api/v1/quotes/${quote.id}`));
  t.deepEqual(after.lines.map((l: any) => [l.description, l.quantity, l.price]), [['One', '3', '10.00'], ['Product FB, Large', '1', '3.20'], ['Product FA, Large', '1', '12.50']]);
  t.deepEqual([after.quote.subtotal, after.quote.discount_amount, after.quote.total], ['45.70', '2.00', '43.70']);
  t.deepEqual(after.activities.slice(-4).map((a: any) => a.type).sort(), ['line_added', 'line_removed', 'line_updated', 'updated']);

  // Saved unchanged: no event at all.
  const unchangedSeen = await quoteEvents(quote.id);
  const same = await postForm(owner.client, `/app/quotes/${quote.id}/edit`, editForm(after.quote, after.lines));
  t.is(same.status, 303);
  t.deepEqual(await newEventTypes(quote.id, unchangedSeen), []);

  // Moved to the top: lines are kept while their ids rise in the user's order; the rest are added anew, in that order.
  const moveSeen = await quoteEvents(quote.id);
  const reordered = [after.lines[2], after.lines[0], after.lines[1]];
  const moved = await postForm(owner.client, `/app/quotes/${quote.id}/edit`, editForm(after.quote, after.lines, { action: 'up:2' }));
  t.is(moved.status, 200);
  t.deepEqual(inputValues(moved.text, 'line_id'), [after.lines[0], after.lines[2], after.lines[1]].map((l: any) => String(l.id)));
  t.deepEqual(await newEventTypes(quote.id, moveSeen), [], 'a move alone saves nothing');
  const saved = await postForm(owner.client, `/app/quotes/${quote.id}/edit`, editForm(after.quote, reordered));
  t.is(saved.status, 303);
  const final = await data(owner.client.get(`/api/v1/quotes/${quote.id}`));
  t.deepEqual(final.lines.map((l: any) => l.description), ['Product FA, Large', 'One', 'Product FB, Large']);
  t.is(final.quote.total, after.quote.total);
  // The moved line, the newest, stays first; the two now after it are added anew.
  t.is(final.lines[0].id, after.lines[2].id);
  t.deepEqual(await newEventTypes(quote.id, moveSeen), ['quote.line_added', 'quote.line_added', 'quote.line_removed', 'quote.line_removed']);
});

test('edit: a 422 beside the line, nothing saved; a discount over the subtotal is refused as the API does', async (t) => {
  const { quote, lines } = await apiDraft();
  const seen = await quoteEvents(quote.id);
  const res = await postForm(owner.client, `/app/quotes/${quote.id}/edit`, editForm(quote, lines, { notes: 'typed', line_quantity: ['1', '0', '1'] }));
  t.is(res.status, 422);
  assertBeside(t, res.text, 'line-1-quantity', /^lines\.1\.quantity: must be more than zero/);
  t.regex(res.text, />typed<\/textarea>/);
  const tooMuch = await postForm(owner.client, `/app/quotes/${quote.id}/edit`, editForm(quote, lines, { discount_amount: '1000', line_description: ['Changed', 'Two', 'Product FB, Large'] }));
  t.is(tooMuch.status, 422);
  t.regex(tooMuch.text, /id="f-discount_amount-error">discount_amount \(1000\.00\) must not exceed the subtotal/);
  t.deepEqual(inputValues(tooMuch.text, 'line_description'), ['Changed', 'Two', 'Product FB, Large']);
  t.deepEqual(await newEventTypes(quote.id, seen), [], 'one transaction: nothing kept');
  t.is((await data(owner.client.get(`/api/v1/quotes/${quote.id}`))).lines[0].description, 'One');
});

test('a quote that is no longer a draft: the edit page shows its status and the 409 message', async (t) => {
  const { quote, lines } = await apiDraft();
  await data(owner.client.post(`/api/v1/quotes/${quote.id}/send`, { notify: false }));
  const page = await owner.client.get(`/app/quotes/${quote.id}/edit`);
  t.is(page.status, 409);
  t.true(visibleText(page.text).includes(`Quote ${quote.quote_number} is sent; only a draft can be edited.`));
  t.regex(page.text, new RegExp(`<a class="button" href="/app/quotes/${quote.id}">`));
  t.regex(page.text, /class="badge status-sent"/);
  const posted = await postForm(owner.client, `/app/quotes/${quote.id}/edit`, editForm(quote, lines, { notes: 'late' }));
  t.is(posted.status, 409);
  t.regex(posted.text, new RegExp(`<div class="flash flash-error" role="alert">Quote ${quote.quote_number} is sent; only a draft can be edited.</div>`));
  t.is((await data(owner.client.get(`/api/v1/quotes/${quote.id}`))).quote.notes, null);
  const adding = await postForm(owner.client, `/app/quotes/${quote.id}/edit`, editForm(quote, lines, { action: 'add' }));
  t.is(adding.status, 409, 'no form for a sent quote, even to add a row');
});

test('a member: only the channels they may write in the select; another is refused; a channel they lack is not there', async (t) => {
  const page = await mia.client.get('/app/quotes/new');
  t.is(page.status, 200);
  const options = [...page.text.matchAll(/<option value="(\d*)"/g)].map((m) => m[1]);
  t.deepEqual(options, ['', String(channels.editor.id)]);
  t.false(page.text.includes('Not for Mia'));
  t.false(page.text.includes('Mia views'));
  for (const channel of [channels.none, channels.viewer]) {
    const res = await postForm(mia.client, '/app/quotes/new', newQuote({ channel_id: String(channel.id), notes: 'Mia tried' }));
    t.is(res.status, 403, channel.name);
    t.regex(visibleText(res.text), /You have no access to channel|does not allow this/);
  }
  t.deepEqual(await quotesNoted('Mia tried'), []);
  const mine = await postForm(mia.client, '/app/quotes/new', newQuote({ channel_id: String(channels.editor.id) }));
  t.is(mine.status, 303);
  // A draft on a channel Mia lacks is not there for her; on one she only views, she may look but not save.
  const hidden = await apiDraft(owner.client, { channel_id: channels.none.id });
  t.is((await mia.client.get(`/app/quotes/${hidden.quote.id}/edit`)).status, 404);
  t.is((await postForm(mia.client, `/app/quotes/${hidden.quote.id}/edit`, editForm(hidden.quote, hidden.lines))).status, 404);
  const viewed = await apiDraft(owner.client, { channel_id: channels.viewer.id });
  t.is((await mia.client.get(`/app/quotes/${viewed.quote.id}/edit`)).status, 200);
  t.is((await postForm(mia.client, `/app/quotes/${viewed.quote.id}/edit`, editForm(viewed.quote, viewed.lines, { notes: 'x' }))).status, 403);
});

test("another workspace's quote and a malformed id are the 404 page", async (t) => {
  const other: Owner = await signUpOwner(app, 'Elsewhere');
  const theirs = await data(other.client.post('/api/v1/quotes', { customer: { email: uniqueEmail('x') }, lines: [{ description: 'x', price: '1' }] }), 201);
  t.is((await owner.client.get(`/app/quotes/${theirs.quote.id}/edit`)).status, 404);
  t.is((await postForm(owner.client, `/app/quotes/${theirs.quote.id}/edit`, editForm(theirs.quote, theirs.lines, { notes: 'mine now' }))).status, 404);
  t.is((await owner.client.get('/app/quotes/abc/edit')).status, 404);
  t.is((await data(other.client.get(`/api/v1/quotes/${theirs.quote.id}`))).quote.notes, null);
  // Their customer is no choice here.
  const search = await owner.client.get(`/app/quotes/new/customers?q=${encodeURIComponent(theirs.quote.customer_email)}&customer_id=${theirs.quote.customer_id}`);
  t.false(search.text.includes(`value="${theirs.quote.customer_id}"`));
});

test('every POST checks the Origin', async (t) => {
  const { quote, lines } = await apiDraft();
  t.is((await postForm(owner.client, '/app/quotes/new', newQuote({ notes: 'from evil' }), { origin: 'https://evil.example' })).status, 403);
  t.is((await postForm(owner.client, `/app/quotes/${quote.id}/edit`, editForm(quote, lines, { notes: 'evil' }), { origin: 'https://evil.example' })).status, 403);
  t.deepEqual(await quotesNoted('from evil'), []);
  t.is((await data(owner.client.get(`/api/v1/quotes/${quote.id}`))).quote.notes, null);
});

test('markup in SKUs, descriptions, notes and names comes out escaped', async (t) => {
  const evil = '<script>x</script>';
  const rerendered = await postForm(owner.client, '/app/quotes/new', newQuote({
    action: 'add', customer_q: evil, customer_email: `${evil}@x`, notes: evil, line_sku: [evil], line_description: [`"${evil}`],
  }));
  t.is(rerendered.status, 200);
  t.false(rerendered.text.includes(evil));
  t.true(rerendered.text.includes('&lt;script&gt;x&lt;/script&gt;'));
  const named = (await data(owner.client.post('/api/v1/customers', { email: uniqueEmail('evil'), name: evil }), 201)).customer;
  const res = await postForm(owner.client, '/app/quotes/new', newQuote({
    customer_id: String(named.id), notes: evil, line_sku: [evil], line_description: [evil], line_price: ['1.00'],
  }));
  t.is(res.status, 303, res.text.slice(0, 300));
  const id = quoteIdFrom(res.headers.get('location'));
  const edit = await owner.client.get(`/app/quotes/${id}/edit`);
  t.is(edit.status, 200);
  t.false(edit.text.includes(evil));
  t.is((edit.text.match(/&lt;script&gt;x&lt;\/script&gt;/g) ?? []).length >= 4, true);
  const sku = await owner.client.get(`/app/quotes/new/sku?sku=${encodeURIComponent(evil)}`);
  t.is(sku.status, 200);
  t.is(sku.text, '<p data-sku="&lt;script&gt;x&lt;/script&gt;"></p>');
  const found = await owner.client.get(`/app/quotes/new/customers?q=${encodeURIComponent('<script>')}`);
  t.false(found.text.includes(evil));
  t.true(found.text.includes(`value="${named.id}"`));
});
