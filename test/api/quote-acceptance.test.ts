import { createHash } from 'node:crypto';
import test from 'ava';
import { signUpOwner, startApp, uniqueEmail, type Owner } from '../helpers/app.js';
import { useOwnerApp } from '../helpers/fixture.js';
import { startReceiver } from '../helpers/receiver.js';
import { visibleText } from '../helpers/pages.js';
import { DeliveryWorker, workerSettings } from '../../src/webhooks/worker.js';

const { app, owner } = useOwnerApp(test, { workspace: 'Signco', env: { OUTBOUND_ALLOWED_CIDRS: '127.0.0.0/8' } });

const BROWSER = 'Mozilla/5.0 (X11; Linux x86_64) TestBrowser/1.0';

async function sentQuote(who: Owner, lines = [{ sku: 'WID-1', description: 'Widget', quantity: '2', price: '1234.50' }, { description: 'Installation', quantity: '1.5', price: '80' }]) {
  const created = await who.client.post('/api/v1/quotes', {
    customer: { email: uniqueEmail('buyer'), name: 'Bea Buyer' },
    currency: 'EUR', discount_amount: '10', tax_rate: '20', notes: 'Delivery within 10 days.', valid_until: '2099-01-31', lines,
  });
  if (created.status !== 201) throw new Error(`create failed: ${created.status} ${created.text}`);
  return created.body.data;
}

async function send(who: Owner, id: number) {
  const sent = await who.client.post(`/api/v1/quotes/${id}/send`, { notify: false });
  if (sent.status !== 200) throw new Error(`send failed: ${sent.status} ${sent.text}`);
  return sent.body.data.quote;
}

/**
 * RFC 8785 canonical JSON for what the content holds (objects, arrays, strings, null), written here apart from the
 * service: keys sorted by UTF-16 code units, no whitespace, strings as JSON.stringify writes them.
 */
function canonical(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
}

/** The content an acceptance covers, as the README documents it, from the quote and lines the API shows. */
function expectedHash(quote: any, lines: any[]): string {
  const content = {
    quote_number: quote.quote_number, currency: quote.currency,
    lines: lines.map((l) => ({ sku: l.sku, description: l.description, quantity: l.quantity, price: l.price, line_total: l.line_total })),
    subtotal: quote.subtotal, discount_amount: quote.discount_amount, tax_rate: quote.tax_rate, tax_amount: quote.tax_amount, total: quote.total,
    valid_until: quote.valid_until, notes: quote.notes, terms: null,
  };
  return createHash('sha256').update(canonical(content), 'utf8').digest('hex');
}

test('accepting on the page without a name is refused (422) naming the field, the input kept; without the tick likewise; nothing changes', async (t) => {
  const { quote } = await sentQuote(owner);
  const token = (await send(owner, quote.id)).public_token;
  const noName = await app.client().request('POST', `/q/${token}/accept`, { form: { name: '  ', agree: 'yes' } });
  t.is(noName.status, 422);
  t.is(noName.headers.get('content-type'), 'text/html; charset=utf-8');
  t.regex(noName.text, /<p class="field-error" id="accept-name-error" role="alert">name: must not be empty\.<\/p>/);
  t.regex(noName.text, /id="accept-name"[^>]* aria-invalid="true" aria-describedby="accept-name-error"/);
  t.regex(noName.text, /name="agree" value="yes" required checked/, 'the tick is kept');

  const missing = await app.client().request('POST', `/q/${token}/accept`, { form: { agree: 'yes' } });
  t.is(missing.status, 422);
  t.true(visibleText(missing.text).includes('name is required.'));

  const noTick = await app.client().request('POST', `/q/${token}/accept`, { form: { name: 'Bea <b>Buyer</b>' } });
  t.is(noTick.status, 422);
  t.true(visibleText(noTick.text).includes('agree: tick the box to accept the quote and its terms.'));
  t.true(noTick.text.includes('value="Bea &lt;b&gt;Buyer&lt;/b&gt;"'), 'the name typed is kept, escaped');

  const noDeclineName = await app.client().request('POST', `/q/${token}/decline`, { form: { reason: 'Too dear' } });
  t.is(noDeclineName.status, 422);
  t.regex(noDeclineName.text, /id="decline-name-error"/);
  t.true(noDeclineName.text.includes('>Too dear</textarea>'), 'the reason is kept');
  t.regex(noDeclineName.text, /<details class="decline-box" open>/);

  const row = await app.db('quotes').where({ id: quote.id }).first('status', 'acceptance', 'decline');
  t.deepEqual(row, { status: 'sent', acceptance: null, decline: null });
  t.is((await app.db('events').where({ type: 'quote.accepted' }).whereRaw(`(data->'quote'->>'id')::int = ?`, [quote.id])).length, 0);
});

test('an acceptance records name, time, address, user agent and the SHA-256 of the content; page, activity and API show it', async (t) => {
  const { quote, lines } = await sentQuote(owner);
  const token = (await send(owner, quote.id)).public_token;
  // Without TRUST_PROXY, X-Forwarded-For is not believed.
  const res = await app.client().request('POST', `/q/${token}/accept`, {
    form: { name: 'Bea Buyer', agree: 'yes' }, headers: { 'user-agent': BROWSER, 'x-forwarded-for': '203.0.113.9' },
  });
  t.is(res.status, 302);
  const read = (await owner.client.get(`/api/v1/quotes/${quote.id}`)).body.data;
  const acceptance = read.quote.acceptance;
  t.is(acceptance.name, 'Bea Buyer');
  t.is(acceptance.accepted_at, read.quote.accepted_at);
  t.regex(acceptance.ip, /127\.0\.0\.1/);
  t.is(acceptance.user_agent, BROWSER);
  t.is(acceptance.actor, 'customer');
  t.is(acceptance.content_sha256, expectedHash(read.quote, lines));
  t.is(read.quote.decline, null);

  const activity = read.activities.find((a: any) => a.type === 'accepted');
  t.is(activity.actor, 'customer');
  t.true(activity.message.includes('by Bea Buyer on the quote page'), activity.message);
  t.true(activity.message.includes(acceptance.content_sha256), activity.message);
  t.true(activity.message.includes(BROWSER));

  const page = visibleText((await app.client().get(`/q/${token}`)).text);
  t.true(page.includes('Accepted by Bea Buyer'), page);
  t.true(page.includes(acceptance.content_sha256));

  const listed = (await owner.client.get('/api/v1/quotes')).body.data.quotes.find((q: any) => q.id === quote.id);
  t.deepEqual(listed.acceptance, acceptance, 'the list carries the same record');
});

test('the recorded hash follows the lines: a line changed before acceptance gives another hash, the one of what was accepted', async (t) => {
  const { quote, lines } = await sentQuote(owner);
  const before = expectedHash({ ...quote, quote_number: quote.quote_number }, lines);
  // One line's price changes on the draft; then the quote is sent and accepted.
  const changed = await owner.client.patch(`/api/v1/quotes/${quote.id}/lines/${lines[1].id}`, { price: '81' });
  t.is(changed.status, 200);
  const token = (await send(owner, quote.id)).public_token;
  t.is((await app.client().request('POST', `/q/${token}/accept`, { form: { name: 'Bea Buyer', agree: 'on' } })).status, 302);
  const read = (await owner.client.get(`/api/v1/quotes/${quote.id}`)).body.data;
  t.not(read.quote.acceptance.content_sha256, before);
  t.is(read.quote.acceptance.content_sha256, expectedHash(read.quote, read.lines));
  // Any one field of any line changes the hash.
  for (const field of ['sku', 'description', 'quantity', 'price', 'line_total']) {
    const altered = read.lines.map((l: any, i: number) => (i === 0 ? { ...l, [field]: `${l[field]}9` } : l));
    t.not(expectedHash(read.quote, altered), read.quote.acceptance.content_sha256, field);
  }
});

test('a decline keeps the name and the optional reason, on the page, in the activity and in quote.declined', async (t) => {
  const { quote } = await sentQuote(owner);
  const token = (await send(owner, quote.id)).public_token;
  const res = await app.client().request('POST', `/q/${token}/decline`, { form: { name: 'Bea Buyer', reason: 'We found it cheaper.' }, headers: { 'user-agent': BROWSER } });
  t.is(res.status, 302);
  const read = (await owner.client.get(`/api/v1/quotes/${quote.id}`)).body.data;
  t.like(read.quote.decline, { name: 'Bea Buyer', reason: 'We found it cheaper.', user_agent: BROWSER, actor: 'customer', declined_at: read.quote.declined_at });
  t.is(read.quote.acceptance, null);
  t.true(read.activities.find((a: any) => a.type === 'declined').message.includes('by Bea Buyer on the quote page'));
  const page = visibleText((await app.client().get(`/q/${token}`)).text);
  t.true(page.includes('Declined by Bea Buyer'));
  t.true(page.includes('We found it cheaper.'));
  const [event] = await app.db('events').where({ type: 'quote.declined' }).whereRaw(`(data->'quote'->>'id')::int = ?`, [quote.id]);
  t.deepEqual(event.data.quote.decline, read.quote.decline);
});

test('the API accept takes name; without one it still records the caller; from another status 409 and nothing recorded', async (t) => {
  const { quote, lines } = await sentQuote(owner);
  await send(owner, quote.id);
  const accepted = await owner.client.post(`/api/v1/quotes/${quote.id}/accept`, { name: 'Bea Buyer (by phone)' }, { headers: { 'user-agent': BROWSER } });
  t.is(accepted.status, 200);
  t.like(accepted.body.data.quote.acceptance, { name: 'Bea Buyer (by phone)', actor: 'user', user_agent: BROWSER });
  t.is(accepted.body.data.quote.acceptance.content_sha256, expectedHash(accepted.body.data.quote, lines));
  const again = await owner.client.post(`/api/v1/quotes/${quote.id}/accept`, { name: 'Someone else' });
  t.is(again.status, 409);
  t.is((await owner.client.get(`/api/v1/quotes/${quote.id}`)).body.data.quote.acceptance.name, 'Bea Buyer (by phone)');
  const tooLong = await owner.client.post(`/api/v1/quotes/${quote.id}/decline`, { name: 'x'.repeat(201) });
  t.is(tooLong.status, 422);
  t.regex(tooLong.body.error, /^name: /);
});

test('quote.accepted carries the acceptance in its quote, and the delivery received verifies with the signing secret', async (t) => {
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  const sub = await owner.client.post('/api/v1/webhooks', { url: `${receiver.url}/hook`, event_types: ['quote.accepted'] });
  t.is(sub.status, 201);
  receiver.secrets.push(sub.body.data.subscription.signing_secret);
  const { quote } = await sentQuote(owner);
  const token = (await send(owner, quote.id)).public_token;
  t.is((await app.client().request('POST', `/q/${token}/accept`, { form: { name: 'Ζωή Σταύρου', agree: 'yes' }, headers: { 'user-agent': BROWSER } })).status, 302);
  const worker = new DeliveryWorker(app.db, workerSettings(app.config));
  t.teardown(() => worker.close());
  // Other tests of this file accept quotes too: the delivery of this one is picked out.
  await worker.runOnce();
  await receiver.waitFor(1);
  const got = receiver.received.find((r) => r.body?.data?.quote?.id === quote.id)!;
  t.truthy(got);
  t.deepEqual(got.verifiedWith, receiver.secrets, 'the signature verifies');
  t.is(got.body.type, 'quote.accepted');
  const stored = (await owner.client.get(`/api/v1/quotes/${quote.id}`)).body.data.quote;
  t.deepEqual(got.body.data.quote.acceptance, stored.acceptance);
  t.is(got.body.data.quote.acceptance.name, 'Ζωή Σταύρου');
  t.regex(got.body.data.quote.acceptance.content_sha256, /^[0-9a-f]{64}$/);
});

test('with TRUST_PROXY=1 the address is the first of X-Forwarded-For', async (t) => {
  const proxied = await startApp({ TRUST_PROXY: '1' });
  t.teardown(() => proxied.close());
  const who = await signUpOwner(proxied, 'Proxied');
  const { quote } = await sentQuote(who);
  const token = (await send(who, quote.id)).public_token;
  const res = await proxied.client().request('POST', `/q/${token}/accept`, { form: { name: 'Bea Buyer', agree: 'yes' }, headers: { 'x-forwarded-for': '203.0.113.9, 10.0.0.1' } });
  t.is(res.status, 302);
  t.is((await who.client.get(`/api/v1/quotes/${quote.id}`)).body.data.quote.acceptance.ip, '203.0.113.9');
});
