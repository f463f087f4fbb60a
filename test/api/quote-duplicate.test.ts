import test from 'ava';
import { signUpOwner, uniqueEmail } from '../helpers/app.js';
import { useOwnerApp } from '../helpers/fixture.js';
import { inviteMember, type Member } from '../helpers/members.js';
import { postForm, getPage, visibleText } from '../helpers/pages.js';

const { app, owner, smtp } = useOwnerApp(test, { workspace: 'Copyco', smtp: true });
let mia: Member;
test.serial.before(async () => {
  mia = await inviteMember(app, smtp, owner);
});

async function original(extra: Record<string, unknown> = {}) {
  const res = await owner.client.post('/api/v1/quotes', {
    customer: { email: uniqueEmail('buyer'), name: 'Bea Buyer' },
    currency: 'GBP', discount_amount: '12.34', tax_rate: '17.5', notes: 'Prices include delivery.', valid_until: '2099-06-30',
    lines: [
      { sku: 'A-1', description: 'Anvil', quantity: '3', price: '19.99' },
      { description: 'Fitting, per hour', quantity: '2.125', price: '45.5' },
      { sku: 'B-2', description: 'Bolt', quantity: '0.333', price: '0.07' },
    ],
    ...extra,
  });
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.text}`);
  return res.body.data;
}

const SAME_FIELDS = ['customer_id', 'customer_name', 'customer_email', 'channel_id', 'currency', 'subtotal', 'discount_amount', 'tax_rate', 'tax_amount', 'total', 'notes'];
const lineContent = (l: any) => ({ sku: l.sku, description: l.description, quantity: l.quantity, price: l.price, line_total: l.line_total, variant_id: l.variant_id });

test('duplicate: 201 with a new draft of the same customer, channel, currency, lines, discount, tax, notes and totals; new number; from any status', async (t) => {
  const channel = (await owner.client.post('/api/v1/channels', { name: 'Shop', currency: 'GBP' })).body.data.channel;
  const { quote, lines } = await original({ channel_id: channel.id });
  t.is((await owner.client.post(`/api/v1/quotes/${quote.id}/send`, { notify: false })).status, 200);
  t.is((await owner.client.post(`/api/v1/quotes/${quote.id}/decline`, { name: 'Bea Buyer' })).status, 200);

  const res = await owner.client.post(`/api/v1/quotes/${quote.id}/duplicate`);
  t.is(res.status, 201, res.text);
  const copy = res.body.data.quote;
  for (const field of SAME_FIELDS) t.deepEqual(copy[field], quote[field], field);
  t.is(copy.status, 'draft');
  t.not(copy.id, quote.id);
  t.not(copy.quote_number, quote.quote_number);
  t.not(copy.public_token, quote.public_token);
  t.is(copy.valid_until, null, 'validity as a new quote without one gets');
  t.is(copy.decline, null);
  t.is(copy.sent_at, null);
  t.deepEqual(res.body.data.lines.map(lineContent), lines.map(lineContent));
  t.true(res.body.data.lines.every((l: any) => l.quote_id === copy.id));

  // The copy reads back the same, with a created activity, and quote.created carries it and its lines.
  const read = (await owner.client.get(`/api/v1/quotes/${copy.id}`)).body.data;
  t.deepEqual(read.quote, copy);
  t.deepEqual(read.lines, res.body.data.lines);
  t.deepEqual(read.activities.map((a: any) => a.type), ['created']);
  const events = (await app.db('events').where({ type: 'quote.created' })).filter((e: any) => e.data.quote.id === copy.id);
  t.is(events.length, 1);
  t.deepEqual(events[0].data, { quote: copy, lines: res.body.data.lines });

  // The original is untouched; a copy of a draft, or of the copy, works the same.
  t.is((await owner.client.get(`/api/v1/quotes/${quote.id}`)).body.data.quote.status, 'declined');
  const again = await owner.client.post(`/api/v1/quotes/${copy.id}/duplicate`);
  t.is(again.status, 201);
  t.is(again.body.data.quote.total, quote.total);
});

test.serial('20 parallel duplicates: 20 drafts with consecutive new numbers, one quote.created each, totals equal to the original', async (t) => {
  const { quote } = await original();
  const before = await app.db('quotes').where({ workspace_id: owner.workspace.id }).count({ n: '*' }).first();
  const results = await Promise.all(Array.from({ length: 20 }, () => owner.client.post(`/api/v1/quotes/${quote.id}/duplicate`)));
  t.deepEqual(results.map((r) => r.status), Array(20).fill(201));
  const copies = results.map((r) => r.body.data.quote);
  t.true(copies.every((c) => c.total === quote.total && c.subtotal === quote.subtotal && c.tax_amount === quote.tax_amount));
  const numbers = copies.map((c) => Number(c.quote_number.slice(-6))).sort((a, b) => a - b);
  t.is(new Set(numbers).size, 20);
  t.is(numbers[19] - numbers[0], 19, 'gap-free');
  t.true(numbers[0] > Number(quote.quote_number.slice(-6)));
  const ids = new Set(copies.map((c) => c.id));
  const created = (await app.db('events').where({ type: 'quote.created' })).filter((e: any) => ids.has(e.data.quote.id));
  t.is(created.length, 20, JSON.stringify(created.map((e: any) => [e.id, e.data.quote.id, e.workspace_id])));
  t.true(created.every((e: any) => e.data.lines.length === 3));
  const after = await app.db('quotes').where({ workspace_id: owner.workspace.id }).count({ n: '*' }).first();
  t.is(Number(after!.n) - Number(before!.n), 20);
});

test('channel roles apply: no role 403, a viewer 403 (the copy is a write), an editor copies', async (t) => {
  const channel = async (name: string) => (await owner.client.post('/api/v1/channels', { name })).body.data.channel;
  const [hidden, viewed, edited] = await Promise.all([channel('Hidden copy'), channel('Viewed copy'), channel('Edited copy')]);
  t.is((await owner.client.put(`/api/v1/channels/${viewed.id}/members/${mia.user.id}`, { role: 'viewer' })).status, 200);
  t.is((await owner.client.put(`/api/v1/channels/${edited.id}/members/${mia.user.id}`, { role: 'editor' })).status, 200);
  for (const ch of [hidden, viewed]) {
    const { quote } = await original({ channel_id: ch.id });
    const res = await mia.client.post(`/api/v1/quotes/${quote.id}/duplicate`);
    t.is(res.status, 403, ch.name);
  }
  const { quote } = await original({ channel_id: edited.id });
  const res = await mia.client.post(`/api/v1/quotes/${quote.id}/duplicate`);
  t.is(res.status, 201);
  t.is(res.body.data.quote.channel_id, edited.id);
  t.is((await mia.client.post('/api/v1/quotes/999999999/duplicate')).status, 404);
});

test('the app: a "Copy quote" button on the quote page makes the draft and opens it', async (t) => {
  const { quote } = await original();
  const page = await getPage(owner.client, `/app/quotes/${quote.id}`);
  t.regex(page.text, new RegExp(`<form method="post" action="/app/quotes/${quote.id}/duplicate"><button type="submit"[^>]*>Copy quote</button></form>`));
  const res = await postForm(owner.client, `/app/quotes/${quote.id}/duplicate`, {});
  t.is(res.status, 303);
  const location = res.headers.get('location')!;
  t.regex(location, /^\/app\/quotes\/\d+$/);
  t.not(location, `/app/quotes/${quote.id}`);
  const copy = await getPage(owner.client, location);
  const text = visibleText(copy.text);
  t.true(text.includes(`copied from ${quote.quote_number}`), text);
  t.true(text.includes('Draft'));
  // Another site's form is refused (the Origin check of every POST).
  t.is((await postForm(owner.client, `/app/quotes/${quote.id}/duplicate`, {}, { origin: 'https://evil.example' })).status, 403);
});

test('the copy takes the validity a new quote gets: the profile\'s default_validity_days from today, not the original\'s date', async (t) => {
  const other = await signUpOwner(app, 'Validco');
  t.is((await other.client.patch('/api/v1/workspace/profile', { default_validity_days: 14 })).status, 200);
  const created = await other.client.post('/api/v1/quotes', { customer: { email: uniqueEmail('valid') }, valid_until: '2099-06-30', lines: [{ description: 'Item', price: '5' }] });
  t.is(created.status, 201, created.text);
  const inDays = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString().slice(0, 10);
  const before = inDays(14);
  const copy = await other.client.post(`/api/v1/quotes/${created.body.data.quote.id}/duplicate`);
  t.is(copy.status, 201, copy.text);
  // Today in UTC, read on either side of the request (it may cross midnight).
  t.true([before, inDays(14)].includes(copy.body.data.quote.valid_until), copy.body.data.quote.valid_until);
});
