import http from 'node:http';
import type { AddressInfo } from 'node:net';
import test from 'ava';
import Stripe from 'stripe';
import { startApp, signUpOwner, uniqueEmail, type Owner, type TestApp } from '../helpers/app.js';

const SECRET_KEY = 'sk_test_quoting_fake';
const WEBHOOK_SECRET = 'whsec_quoting_fake';

/** A fake Stripe API on loopback: POST /v1/checkout/sessions, recording every form-encoded request. */
interface FakeStripe {
  url: string;
  requests: { method: string; path: string; authorization: string | undefined; form: URLSearchParams }[];
  /** Session requests for these quote ids are answered with this HTTP status and a Stripe error body. */
  failFor: Map<string, number>;
  /** The session requests made for one quote. */
  requestsFor(quoteId: number): URLSearchParams[];
  close(): Promise<void>;
}

async function startFakeStripe(): Promise<FakeStripe> {
  let sessions = 0;
  const fake: FakeStripe = {
    url: '',
    requests: [],
    failFor: new Map(),
    requestsFor: (quoteId) => fake.requests.map((r) => r.form).filter((form) => form.get('metadata[quote_id]') === String(quoteId)),
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      const json = (status: number, value: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json', 'request-id': `req_${Date.now()}`, 'stripe-should-retry': 'false' });
        res.end(JSON.stringify(value));
      };
      if (req.method !== 'POST' || req.url !== '/v1/checkout/sessions') {
        json(404, { error: { type: 'invalid_request_error', message: `Unrecognized request URL (${req.method}: ${req.url}).` } });
        return;
      }
      const form = new URLSearchParams(body);
      fake.requests.push({ method: req.method, path: req.url, authorization: req.headers.authorization, form });
      const status = fake.failFor.get(form.get('metadata[quote_id]') ?? '');
      if (status) {
        json(status, { error: { type: status >= 500 ? 'api_error' : 'invalid_request_error', message: 'The fake refuses this one.' } });
        return;
      }
      const id = `cs_test_fake_${++sessions}_${Date.now()}`;
      json(200, {
        id,
        object: 'checkout.session',
        mode: form.get('mode'),
        status: 'open',
        payment_status: 'unpaid',
        currency: form.get('line_items[0][price_data][currency]'),
        amount_total: Number(form.get('line_items[0][price_data][unit_amount]')),
        client_reference_id: form.get('client_reference_id'),
        metadata: { quote_id: form.get('metadata[quote_id]'), workspace_id: form.get('metadata[workspace_id]') },
        success_url: form.get('success_url'),
        cancel_url: form.get('cancel_url'),
        url: `https://checkout.stripe.test/c/pay/${id}`,
        livemode: false,
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return fake;
}

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

let fake: FakeStripe;
let app: TestApp;
/** Same database, other settings: no keys at all; no webhook secret; Stripe down. */
let unconfigured: TestApp;
let noWebhookSecret: TestApp;
let stripeDown: TestApp;
let owner: Owner;

test.before(async () => {
  fake = await startFakeStripe();
  app = await startApp({ STRIPE_SECRET_KEY: SECRET_KEY, STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET, STRIPE_API_BASE: fake.url });
  const shared = { ...app.database, close: async () => {} };
  unconfigured = await startApp({}, shared);
  noWebhookSecret = await startApp({ STRIPE_SECRET_KEY: SECRET_KEY, STRIPE_API_BASE: fake.url }, shared);
  stripeDown = await startApp({ STRIPE_SECRET_KEY: SECRET_KEY, STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET, STRIPE_API_BASE: `http://127.0.0.1:${await closedPort()}` }, shared);
  owner = await signUpOwner(app, 'Payments Co');
});

test.after.always(async () => {
  for (const other of [unconfigured, noWebhookSecret, stripeDown]) await other?.close();
  await app?.close();
  await fake?.close();
});

/** A quote created, sent (without mail) and, unless told otherwise, accepted through the API. */
async function quoteIn(status: 'sent' | 'accepted', price = '1234.56', currency = 'eur'): Promise<any> {
  const created = await owner.client.post('/api/v1/quotes', {
    customer: { email: uniqueEmail('buyer'), name: 'Bea Buyer' },
    currency,
    lines: [{ description: 'Consulting', quantity: '1', price }],
  });
  if (created.status !== 201) throw new Error(`create failed: ${created.status} ${created.text}`);
  const id = created.body.data.quote.id;
  const sent = await owner.client.post(`/api/v1/quotes/${id}/send`, { notify: false });
  if (sent.status !== 200) throw new Error(`send failed: ${sent.status} ${sent.text}`);
  if (status === 'sent') return sent.body.data.quote;
  const accepted = await owner.client.post(`/api/v1/quotes/${id}/accept`);
  if (accepted.status !== 200) throw new Error(`accept failed: ${accepted.status} ${accepted.text}`);
  return accepted.body.data.quote;
}

const pay = (target: TestApp, token: string) => target.client().request('POST', `/q/${token}/pay`);

let eventCounter = 0;
function checkoutEvent(session: Record<string, unknown>, type = 'checkout.session.completed', id = `evt_test_${process.pid}_${++eventCounter}`): string {
  return JSON.stringify({
    id,
    object: 'event',
    api_version: '2025-01-01',
    created: Math.floor(Date.now() / 1000),
    livemode: false,
    pending_webhooks: 1,
    type,
    data: { object: { object: 'checkout.session', status: 'complete', payment_status: 'paid', mode: 'payment', ...session } },
  });
}

function sessionFor(quote: any, sessionId = `cs_test_${quote.id}`) {
  return { id: sessionId, client_reference_id: `quote_${quote.id}`, metadata: { quote_id: String(quote.id), workspace_id: String(owner.workspace.id) } };
}

function deliver(target: TestApp, payload: string, signature: string | null = Stripe.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET })) {
  return target.client().request('POST', '/api/v1/payments/stripe/webhook', {
    raw: payload,
    contentType: 'application/json; charset=utf-8',
    headers: signature === null ? {} : { 'stripe-signature': signature },
  });
}

const paidEvents = async (quoteId: number) =>
  (await app.db('events').where({ workspace_id: owner.workspace.id, type: 'quote.paid' })).filter((e) => (typeof e.data === 'string' ? JSON.parse(e.data) : e.data).quote.id === quoteId);

// --- POST /q/{token}/pay --------------------------------------------------------------------

test('pay: an accepted quote gets a Checkout Session for its total in minor units, stored on the quote, and a 302 to it', async (t) => {
  const quote = await quoteIn('accepted');
  t.is(quote.total, '1234.56');
  const res = await pay(app, quote.public_token);
  t.is(res.status, 302, res.text);
  const requests = fake.requests.filter((r) => r.form.get('metadata[quote_id]') === String(quote.id));
  t.is(requests.length, 1, 'one session request');
  const { form, authorization, path } = requests[0];
  t.is(path, '/v1/checkout/sessions');
  t.is(authorization, `Bearer ${SECRET_KEY}`);
  t.is(form.get('mode'), 'payment');
  t.is(form.get('line_items[0][quantity]'), '1');
  t.is(form.get('line_items[0][price_data][unit_amount]'), '123456');
  t.is(form.get('line_items[0][price_data][currency]'), 'eur');
  t.regex(form.get('line_items[0][price_data][product_data][name]') ?? '', new RegExp(quote.quote_number));
  t.is(form.get('success_url'), `${app.url}/q/${quote.public_token}`);
  t.is(form.get('cancel_url'), `${app.url}/q/${quote.public_token}`);
  t.is(form.get('metadata[quote_id]'), String(quote.id));
  t.is(form.get('metadata[workspace_id]'), String(owner.workspace.id));
  t.is(form.get('client_reference_id'), `quote_${quote.id}`);
  t.is(form.get('customer_email'), quote.customer_email);

  const row = await app.db('quotes').where({ id: quote.id }).first('checkout_session_id', 'status');
  t.regex(row.checkout_session_id, /^cs_test_fake_/);
  t.is(row.status, 'accepted', 'paying starts the checkout; only the webhook marks it paid');
  t.is(res.headers.get('location'), `https://checkout.stripe.test/c/pay/${row.checkout_session_id}`);
});

test('pay: amounts are converted without floats (0.29, 1.10, 19.99, large totals) and currencies lower-cased', async (t) => {
  for (const [price, expected] of [['0.29', '29'], ['1.10', '110'], ['19.99', '1999'], ['99999999.99', '9999999999']] as const) {
    const quote = await quoteIn('accepted', price, 'USD');
    const res = await pay(app, quote.public_token);
    t.is(res.status, 302, res.text);
    const [form] = fake.requestsFor(quote.id);
    t.is(form.get('line_items[0][price_data][unit_amount]'), expected, price);
    t.is(form.get('line_items[0][price_data][currency]'), 'usd');
  }
  const yen = await quoteIn('accepted', '1500', 'JPY');
  t.is((await pay(app, yen.public_token)).status, 302);
  t.is(fake.requestsFor(yen.id)[0].get('line_items[0][price_data][unit_amount]'), '1500', 'JPY is zero-decimal');
});

test('pay: a quote that is not accepted answers 302 back to its page and creates no session', async (t) => {
  const quote = await quoteIn('sent');
  const res = await pay(app, quote.public_token);
  t.is(res.status, 302);
  t.is(res.headers.get('location'), `${app.url}/q/${quote.public_token}`);
  t.is(fake.requestsFor(quote.id).length, 0);
  t.is((await app.db('quotes').where({ id: quote.id }).first('checkout_session_id')).checkout_session_id, null);
});

test('pay: an accepted quote past its valid_until answers 302 back to its page (which says it expired) and creates no session', async (t) => {
  const quote = await quoteIn('accepted');
  await app.db('quotes').where({ id: quote.id }).update({ valid_until: '2025-01-01' });
  const res = await pay(app, quote.public_token);
  t.is(res.status, 302);
  t.is(res.headers.get('location'), `${app.url}/q/${quote.public_token}`);
  t.is(fake.requestsFor(quote.id).length, 0);
  t.is((await app.db('quotes').where({ id: quote.id }).first('checkout_session_id')).checkout_session_id, null);
  t.regex((await app.client().get(`/q/${quote.public_token}`)).text, /This quote expired on 1 January 2025/);
});

test('webhook: a payment started before valid_until and completed after it is still recorded', async (t) => {
  const quote = await quoteIn('accepted');
  t.is((await pay(app, quote.public_token)).status, 302);
  await app.db('quotes').where({ id: quote.id }).update({ valid_until: '2025-01-01' });
  const { checkout_session_id: sessionId } = await app.db('quotes').where({ id: quote.id }).first('checkout_session_id');
  const res = await deliver(app, checkoutEvent(sessionFor(quote, sessionId)));
  t.is(res.status, 200, res.text);
  t.is((await app.db('quotes').where({ id: quote.id }).first('status')).status, 'paid');
  t.is((await paidEvents(quote.id)).length, 1);
});

test('pay: an unknown token answers 404', async (t) => {
  const res = await pay(app, 'no-such-token');
  t.is(res.status, 404);
});

test('pay: a draft token is 404 like an unknown one, and a locked workspace answers 402; neither creates a session', async (t) => {
  const created = await owner.client.post('/api/v1/quotes', { customer: { email: uniqueEmail('draft') }, lines: [{ description: 'X', price: '5' }] });
  const draft = created.body.data.quote;
  t.is((await pay(app, draft.public_token)).status, 404, 'a draft is not public yet');
  t.is(fake.requestsFor(draft.id).length, 0);

  const locked = await signUpOwner(app, 'Locked payments');
  const made = await locked.client.post('/api/v1/quotes', { customer: { email: uniqueEmail('lockbuyer') }, lines: [{ description: 'Y', price: '7' }] });
  const id = made.body.data.quote.id;
  await locked.client.post(`/api/v1/quotes/${id}/send`, { notify: false });
  const accepted = (await locked.client.post(`/api/v1/quotes/${id}/accept`)).body.data.quote;
  await app.db('workspaces').where({ id: locked.workspace.id }).update({ status: 'suspended' });
  try {
    const res = await pay(app, accepted.public_token);
    t.is(res.status, 402);
    t.regex(res.text, /cannot take answers/);
    t.is(fake.requestsFor(id).length, 0);
  } finally {
    await app.db('workspaces').where({ id: locked.workspace.id }).update({ status: 'active' });
  }
});

test('pay: where payments are unconfigured, a locked workspace still answers the 402 page and an unknown token the 404 page, not 503', async (t) => {
  const locked = await signUpOwner(app, 'Locked, no payments');
  const made = await locked.client.post('/api/v1/quotes', { customer: { email: uniqueEmail('lockednopay') }, lines: [{ description: 'Z', price: '9' }] });
  const id = made.body.data.quote.id;
  await locked.client.post(`/api/v1/quotes/${id}/send`, { notify: false });
  const accepted = (await locked.client.post(`/api/v1/quotes/${id}/accept`)).body.data.quote;
  await app.db('workspaces').where({ id: locked.workspace.id }).update({ status: 'suspended' });
  try {
    for (const target of [unconfigured, app]) {
      const res = await pay(target, accepted.public_token);
      t.is(res.status, 402, res.text);
      t.is(res.headers.get('content-type'), 'text/html; charset=utf-8');
      t.regex(res.text, /This quote is unavailable/);
      t.regex(res.text, /Locked, no payments cannot take answers/);
      t.is(res.headers.get('cache-control'), 'no-store', 'the page headers of /q/{token}');
    }
    t.is(fake.requestsFor(id).length, 0);
  } finally {
    await app.db('workspaces').where({ id: locked.workspace.id }).update({ status: 'active' });
  }
  const unknown = await pay(unconfigured, 'A'.repeat(32));
  t.is(unknown.status, 404);
  t.regex(unknown.text, /Quote not found/);
  // A quote that is not accepted goes back to its page, which says where it stands.
  const sent = await quoteIn('sent');
  const back = await pay(unconfigured, sent.public_token);
  t.is(back.status, 302);
  t.is(back.headers.get('location'), `${unconfigured.url}/q/${sent.public_token}`);
});

test('pay: unset STRIPE_SECRET_KEY answers 503 with a readable message, and no session is created', async (t) => {
  const quote = await quoteIn('accepted');
  const res = await pay(unconfigured, quote.public_token);
  t.is(res.status, 503);
  t.regex(res.headers.get('content-type') ?? '', /text\/plain/);
  t.regex(res.text, /Payments are not configured.*STRIPE_SECRET_KEY/);
  t.is(fake.requestsFor(quote.id).length, 0);
});

test('pay: Stripe unreachable (closed port) answers 502, and the quote keeps no session', async (t) => {
  const quote = await quoteIn('accepted');
  const res = await pay(stripeDown, quote.public_token);
  t.is(res.status, 502, res.text);
  t.regex(res.text, /could not be reached/);
  t.is((await app.db('quotes').where({ id: quote.id }).first('checkout_session_id')).checkout_session_id, null);
});

test('pay: Stripe answering 500 (or refusing) becomes 502', async (t) => {
  const quote = await quoteIn('accepted');
  fake.failFor.set(String(quote.id), 500);
  const res = await pay(app, quote.public_token);
  t.is(res.status, 502, res.text);
  t.regex(res.text, /Stripe.*failed/);
  fake.failFor.set(String(quote.id), 400);
  const refused = await pay(app, quote.public_token);
  t.is(refused.status, 502);
  t.regex(refused.text, /refused.*The fake refuses this one/);
  t.is((await app.db('quotes').where({ id: quote.id }).first('checkout_session_id')).checkout_session_id, null);
});

// --- POST /api/v1/payments/stripe/webhook -----------------------------------------------------

test('webhook: a missing, wrong or stale signature, or a tampered body, is 400 {error}, and nothing changes', async (t) => {
  const quote = await quoteIn('accepted');
  const payload = checkoutEvent(sessionFor(quote));
  const cases: [string, string, string | null][] = [
    ['missing', payload, null],
    ['garbage', payload, 'not-a-signature'],
    ['other secret', payload, Stripe.webhooks.generateTestHeaderString({ payload, secret: 'whsec_someone_else' })],
    ['tampered body', payload.replace('"paid"', '"paid" '), Stripe.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET })],
    ['stale', payload, Stripe.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET, timestamp: Math.floor(Date.now() / 1000) - 3600 })],
  ];
  for (const [name, body, signature] of cases) {
    const res = await deliver(app, body, signature);
    t.is(res.status, 400, name);
    t.is(typeof res.body.error, 'string', name);
    t.false('data' in res.body, name);
  }
  t.is((await app.db('quotes').where({ id: quote.id }).first('status')).status, 'accepted');
  t.is((await app.db('payment_events')).filter((e) => e.id === JSON.parse(payload).id).length, 0);
});

test('webhook: checkout.session.completed marks the quote paid once: quote.paid once, activity by system, 200 received', async (t) => {
  const quote = await quoteIn('accepted');
  const payload = checkoutEvent(sessionFor(quote));
  const res = await deliver(app, payload);
  t.is(res.status, 200, res.text);
  t.deepEqual(res.body, { version: 'v1', data: { received: true } });

  const got = await owner.client.get(`/api/v1/quotes/${quote.id}`);
  t.is(got.body.data.quote.status, 'paid');
  t.truthy(got.body.data.quote.paid_at);
  const paid = got.body.data.activities.filter((a: any) => a.type === 'paid');
  t.is(paid.length, 1);
  t.is(paid[0].actor, 'system');
  t.is((await paidEvents(quote.id)).length, 1);

  // Stripe repeats the same event: 200, nothing new.
  const again = await deliver(app, payload);
  t.is(again.status, 200);
  t.deepEqual(again.body, { version: 'v1', data: { received: true } });
  t.is((await paidEvents(quote.id)).length, 1, 'still one quote.paid');
  t.is((await app.db('payment_events').where({ id: JSON.parse(payload).id })).length, 1);

  // Another event for the same, already paid, quote: 200, no second quote.paid.
  const other = await deliver(app, checkoutEvent(sessionFor(quote)));
  t.is(other.status, 200);
  t.is((await paidEvents(quote.id)).length, 1);
  const after = await owner.client.get(`/api/v1/quotes/${quote.id}`);
  t.is(after.body.data.activities.filter((a: any) => a.type === 'paid').length, 1);
});

test('webhook: the signature is checked over the raw body as sent (pretty-printed, non-ASCII), not a re-serialisation', async (t) => {
  const quote = await quoteIn('accepted');
  const event = JSON.parse(checkoutEvent({ ...sessionFor(quote), customer_details: { name: 'Zoë Ångström – 支払い' } }));
  const payload = `${JSON.stringify(event, null, 2)}\n`;
  t.not(payload, JSON.stringify(JSON.parse(payload)));
  const res = await deliver(app, payload);
  t.is(res.status, 200, res.text);
  t.is((await app.db('quotes').where({ id: quote.id }).first('status')).status, 'paid');
});

test('webhook: the same event delivered concurrently still pays once', async (t) => {
  const quote = await quoteIn('accepted');
  const payload = checkoutEvent(sessionFor(quote));
  const results = await Promise.all([deliver(app, payload), deliver(app, payload), deliver(app, payload)]);
  t.deepEqual(results.map((r) => r.status), [200, 200, 200]);
  t.is((await paidEvents(quote.id)).length, 1);
});

test('webhook: end to end, the session created by Pay is found by its id when metadata is absent', async (t) => {
  const quote = await quoteIn('accepted');
  t.is((await pay(app, quote.public_token)).status, 302);
  const { checkout_session_id: sessionId } = await app.db('quotes').where({ id: quote.id }).first('checkout_session_id');
  const res = await deliver(app, checkoutEvent({ id: sessionId }));
  t.is(res.status, 200, res.text);
  t.is((await app.db('quotes').where({ id: quote.id }).first('status')).status, 'paid');
  t.is((await paidEvents(quote.id)).length, 1);
});

test('webhook: a completed but unpaid session waits for async_payment_succeeded', async (t) => {
  const quote = await quoteIn('accepted');
  t.is((await deliver(app, checkoutEvent({ ...sessionFor(quote), payment_status: 'unpaid' }))).status, 200);
  t.is((await app.db('quotes').where({ id: quote.id }).first('status')).status, 'accepted');
  t.is((await deliver(app, checkoutEvent(sessionFor(quote), 'checkout.session.async_payment_succeeded'))).status, 200);
  t.is((await app.db('quotes').where({ id: quote.id }).first('status')).status, 'paid');
  t.is((await paidEvents(quote.id)).length, 1);
});

test('webhook: other event types, unknown quotes and quotes that are not accepted answer 200 and change nothing', async (t) => {
  const quote = await quoteIn('accepted');
  const ignored = await deliver(app, checkoutEvent(sessionFor(quote), 'checkout.session.expired'));
  t.is(ignored.status, 200);
  t.deepEqual(ignored.body, { version: 'v1', data: { received: true } });
  const charge = JSON.stringify({ id: `evt_charge_${process.pid}`, object: 'event', type: 'charge.succeeded', data: { object: { id: 'ch_1', object: 'charge' } } });
  t.is((await deliver(app, charge)).status, 200);
  t.is((await app.db('quotes').where({ id: quote.id }).first('status')).status, 'accepted');

  const unknown = await deliver(app, checkoutEvent({ id: 'cs_test_nobody', metadata: { quote_id: '2147483647', workspace_id: String(owner.workspace.id) } }));
  t.is(unknown.status, 200);

  const sent = await quoteIn('sent');
  t.is((await deliver(app, checkoutEvent(sessionFor(sent)))).status, 200);
  t.is((await app.db('quotes').where({ id: sent.id }).first('status')).status, 'sent');
  t.is((await paidEvents(sent.id)).length, 0);
});

test('webhook: 503 when STRIPE_WEBHOOK_SECRET or STRIPE_SECRET_KEY is unset, even with a valid signature', async (t) => {
  const quote = await quoteIn('accepted');
  const payload = checkoutEvent(sessionFor(quote));
  const noSecret = await deliver(noWebhookSecret, payload);
  t.is(noSecret.status, 503);
  t.regex(noSecret.body.error, /STRIPE_WEBHOOK_SECRET/);
  const noKeys = await deliver(unconfigured, payload);
  t.is(noKeys.status, 503);
  t.regex(noKeys.body.error, /not configured/);
  t.is((await app.db('quotes').where({ id: quote.id }).first('status')).status, 'accepted');
});

test('webhook: the route is in the OpenAPI document without authentication', async (t) => {
  const doc = (await app.client().get('/api/v1/openapi.json')).body;
  const op = doc.paths['/api/v1/payments/stripe/webhook'].post;
  t.deepEqual(op.security, [], 'no authentication: the signature is the credential');
  t.deepEqual(['400', '503'].filter((status) => status in op.responses), ['400', '503']);
});
