import { createHash } from 'node:crypto';
import test, { type ExecutionContext } from 'ava';
import { signUpOwner, uniqueEmail, type Owner, type TestApp } from '../helpers/app.js';
import { useOwnerApp } from '../helpers/fixture.js';
import { escapeHtml, Html, renderHtml as renderTemplate } from '../../src/templates.js';

const hostileWorkspace = `Acme <img src=x onerror=alert(1)> & "Sons"`;
const hostileName = `<script>alert("name")</script>`;
const hostileNotes = `Line one\n</p><script>alert('notes')</script>\n"'><svg onload=alert(2)>`;

const { app, owner } = useOwnerApp(test, { workspace: hostileWorkspace });
/** The answer forms as a customer fills them in. */
const ACCEPT = { name: 'Carla Customer', agree: 'yes' };
const DECLINE = { name: 'Carla Customer' };
/** The same app with payments configured: the Pay form appears on accepted quotes. */
const { app: paying, owner: payingOwner } = useOwnerApp(test, { env: { STRIPE_SECRET_KEY: 'sk_test_page', STRIPE_API_BASE: 'http://127.0.0.1:9' }, workspace: 'Payco' });

interface QuoteOptions {
  name?: string;
  email?: string;
  notes?: string;
  send?: boolean;
}

async function createQuote(who: Owner, options: QuoteOptions = {}) {
  const res = await who.client.post('/api/v1/quotes', {
    customer: { email: options.email ?? uniqueEmail('customer'), name: options.name ?? 'Carla Customer' },
    currency: 'EUR',
    discount_amount: '100',
    tax_rate: '20',
    notes: options.notes ?? null,
    valid_until: '2030-01-31',
    lines: [
      { sku: 'WID-1', description: '<b>Widget</b> & "gadget"', quantity: '2', price: '1234.50' },
      { description: 'Installation', quantity: '1.5', price: '80' },
    ],
  });
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.text}`);
  const quote = res.body.data.quote;
  if (options.send === false) return quote;
  const sent = await who.client.post(`/api/v1/quotes/${quote.id}/send`, { notify: false });
  if (sent.status !== 200) throw new Error(`send failed: ${sent.status} ${sent.text}`);
  return sent.body.data.quote;
}

async function activities(who: Owner, id: number) {
  const res = await who.client.get(`/api/v1/quotes/${id}`);
  return res.body.data.activities as { type: string; actor: string; message: string }[];
}

async function events(target: TestApp, quoteId: number, type: string) {
  const rows = await target.db('events').where({ type });
  return rows.filter((row: { data: { quote: { id: number } } }) => row.data.quote.id === quoteId);
}

function assertPageHeaders(t: ExecutionContext, headers: Headers) {
  t.is(headers.get('content-type'), 'text/html; charset=utf-8');
  t.is(headers.get('cache-control'), 'no-store');
  t.is(headers.get('referrer-policy'), 'no-referrer');
  t.is(headers.get('x-frame-options'), 'DENY');
  t.is(headers.get('x-content-type-options'), 'nosniff');
  const csp = headers.get('content-security-policy') ?? '';
  t.regex(csp, /default-src 'none'/);
  t.regex(csp, /frame-ancestors 'none'/);
  t.regex(csp, /base-uri 'none'/);
  t.regex(csp, /form-action 'self'/);
  t.regex(csp, /style-src 'sha256-[A-Za-z0-9+/=]+'/);
  t.notRegex(csp, /unsafe|script-src/);
}

const textOf = (html: string) => html.replace(/<style>[\s\S]*?<\/style>/, '').replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ');

test('escapeHtml and the renderer escape every value and insert only rendered Html as is', (t) => {
  t.is(escapeHtml(`<a href="x" title='y'>&</a>`), '&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;');
  t.is(escapeHtml(null), '');
  t.is(escapeHtml(12.5), '12.5');
  const inner = renderTemplate('<i>{{v}}</i>', { v: '<b>' });
  t.is(renderTemplate('<p title="{{a}}">{{b}}{{c}}</p>', { a: '"x"', b: inner, c: [inner, inner] }).html, '<p title="&quot;x&quot;"><i>&lt;b&gt;</i><i>&lt;b&gt;</i><i>&lt;b&gt;</i></p>');
  // A value that looks like a placeholder is not filled in again.
  t.is(renderTemplate('{{a}}{{b}}', { a: '{{b}}', b: 'B' }).html, '{{b}}B');
  t.throws(() => renderTemplate('{{missing}}', {}), { message: /missing/ });
  t.true(inner instanceof Html);
});

test('the page shows the quote with every value escaped, and the security headers', async (t) => {
  const quote = await createQuote(owner, { name: hostileName, notes: hostileNotes });
  const res = await app.client().get(`/q/${quote.public_token}`);
  t.is(res.status, 200);
  assertPageHeaders(t, res.headers);
  const html = res.text;
  // Nothing the seller or the customer typed becomes markup.
  t.false(/<script/i.test(html));
  t.false(/<svg|<img|<b>Widget/i.test(html));
  t.true(html.includes('&lt;script&gt;alert(&quot;name&quot;)&lt;/script&gt;'));
  t.true(html.includes('&lt;/p&gt;&lt;script&gt;alert(&#39;notes&#39;)&lt;/script&gt;'));
  t.true(html.includes('&quot;&#39;&gt;&lt;svg onload=alert(2)&gt;'));
  t.true(html.includes('Acme &lt;img src=x onerror=alert(1)&gt; &amp; &quot;Sons&quot;'));
  t.true(html.includes('&lt;b&gt;Widget&lt;/b&gt; &amp; &quot;gadget&quot;'));
  // The stylesheet is the one the CSP hash allows.
  const style = /<style>([\s\S]*?)<\/style>/.exec(html)![1];
  const hash = createHash('sha256').update(style, 'utf8').digest('base64');
  t.true(res.headers.get('content-security-policy')!.includes(`'sha256-${hash}'`));
  // Quote number, status, customer, lines, totals, validity, notes.
  const text = textOf(html);
  t.true(text.includes(`Quote ${quote.quote_number}`));
  t.true(text.includes('Awaiting your response'));
  t.true(text.includes(quote.customer_email));
  t.true(text.includes('SKU WID-1'));
  t.true(text.includes('Installation'));
  t.true(text.includes('1.5'));
  t.true(text.includes('EUR 1,234.50')); // price
  t.true(text.includes('EUR 2,469.00')); // line total 2 × 1234.50
  t.true(text.includes('EUR 120.00')); // 1.5 × 80
  t.true(text.includes('Subtotal EUR 2,589.00'));
  t.true(text.includes('Discount − EUR 100.00'));
  t.true(text.includes('Tax (20%) EUR 497.80'));
  t.true(text.includes('Total EUR 2,986.80'));
  t.is(quote.total, '2986.80');
  t.true(text.includes('31 January 2030'));
  t.true(text.includes('Line one'));
  // A sent quote has the two answer forms, plain HTML posting to the page's own paths.
  t.true(html.includes(`<form method="post" action="/q/${quote.public_token}/accept" class="answer" novalidate>`));
  t.true(html.includes(`<form method="post" action="/q/${quote.public_token}/decline" class="answer" novalidate>`));
  t.false(html.includes('/pay"'));
});

test('the first view records one viewed activity (actor customer) and viewed_at; later views and HEAD do not', async (t) => {
  const quote = await createQuote(owner);
  const client = app.client();
  const head = await client.request('HEAD', `/q/${quote.public_token}`);
  t.is(head.status, 200);
  t.is((await activities(owner, quote.id)).filter((a) => a.type === 'viewed').length, 0);
  t.is((await client.get(`/q/${quote.public_token}`)).status, 200);
  const first = (await owner.client.get(`/api/v1/quotes/${quote.id}`)).body.data.quote;
  t.truthy(first.viewed_at);
  t.is((await client.get(`/q/${quote.public_token}`)).status, 200);
  t.is((await client.get(`/q/${quote.public_token}`)).status, 200);
  const viewed = (await activities(owner, quote.id)).filter((a) => a.type === 'viewed');
  t.is(viewed.length, 1);
  t.is(viewed[0].actor, 'customer');
  t.is((await owner.client.get(`/api/v1/quotes/${quote.id}`)).body.data.quote.viewed_at, first.viewed_at);
});

test('concurrent first views record exactly one viewed activity', async (t) => {
  const quote = await createQuote(owner);
  const results = await Promise.all(Array.from({ length: 12 }, () => app.client().get(`/q/${quote.public_token}`)));
  t.true(results.every((r) => r.status === 200));
  const viewed = (await activities(owner, quote.id)).filter((a) => a.type === 'viewed');
  t.is(viewed.length, 1);
  t.is(viewed[0].actor, 'customer');
});

test('accept: 302 back to the page, accepted state, activity by the customer, quote.accepted; a second answer changes nothing', async (t) => {
  const quote = await createQuote(owner);
  const client = app.client();
  const res = await client.request('POST', `/q/${quote.public_token}/accept`, { form: ACCEPT });
  t.is(res.status, 302);
  t.is(res.headers.get('location'), `/q/${quote.public_token}`);
  t.is(res.headers.get('cache-control'), 'no-store');
  const page = await client.get(`/q/${quote.public_token}`);
  t.is(page.status, 200);
  t.true(textOf(page.text).includes('You accepted this quote on'));
  t.false(page.text.includes('/accept"'));
  t.false(page.text.includes('/decline"'));
  t.false(page.text.includes('/pay"'), 'no Pay form without payments configured');
  const after = (await owner.client.get(`/api/v1/quotes/${quote.id}`)).body.data.quote;
  t.is(after.status, 'accepted');
  const accepted = (await activities(owner, quote.id)).filter((a) => a.type === 'accepted');
  t.is(accepted.length, 1);
  t.is(accepted[0].actor, 'customer');
  const emitted = await events(app, quote.id, 'quote.accepted');
  t.is(emitted.length, 1);
  t.is(emitted[0].data.quote.status, 'accepted');

  // Declining (or accepting again) an accepted quote: 302 back, the page shows the accepted state, nothing changes.
  for (const action of ['decline', 'accept']) {
    const again = await client.request('POST', `/q/${quote.public_token}/${action}`, { form: action === 'accept' ? ACCEPT : DECLINE });
    t.is(again.status, 302);
    t.is(again.headers.get('location'), `/q/${quote.public_token}`);
  }
  t.is((await owner.client.get(`/api/v1/quotes/${quote.id}`)).body.data.quote.status, 'accepted');
  t.deepEqual((await activities(owner, quote.id)).filter((a) => a.type === 'accepted' || a.type === 'declined').length, 1);
  t.is((await events(app, quote.id, 'quote.declined')).length, 0);
  t.is((await events(app, quote.id, 'quote.accepted')).length, 1);
});

test('decline: 302 back, declined state, activity by the customer, quote.declined', async (t) => {
  const quote = await createQuote(owner);
  const res = await app.client().request('POST', `/q/${quote.public_token}/decline`, { form: DECLINE });
  t.is(res.status, 302);
  t.is(res.headers.get('location'), `/q/${quote.public_token}`);
  const page = await app.client().get(`/q/${quote.public_token}`);
  t.true(textOf(page.text).includes('You declined this quote on'));
  t.true(textOf(page.text).includes('Declined'));
  t.false(page.text.includes('<form'));
  const declined = (await activities(owner, quote.id)).filter((a) => a.type === 'declined');
  t.deepEqual(declined.map((a) => a.actor), ['customer']);
  const emitted = await events(app, quote.id, 'quote.declined');
  t.is(emitted.length, 1);
  t.is(emitted[0].data.quote.status, 'declined');
});

test('concurrent accept and decline: exactly one answer wins', async (t) => {
  const quote = await createQuote(owner);
  const results = await Promise.all(['accept', 'decline', 'accept', 'decline'].map((a) => app.client().request('POST', `/q/${quote.public_token}/${a}`, { form: a === 'accept' ? ACCEPT : DECLINE })));
  t.true(results.every((r) => r.status === 302));
  const answers = (await activities(owner, quote.id)).filter((a) => a.type === 'accepted' || a.type === 'declined');
  t.is(answers.length, 1);
  t.is((await events(app, quote.id, 'quote.accepted')).length + (await events(app, quote.id, 'quote.declined')).length, 1);
});

test('cancelled and paid quotes show their state without forms', async (t) => {
  const cancelled = await createQuote(owner);
  t.is((await owner.client.post(`/api/v1/quotes/${cancelled.id}/cancel`)).status, 200);
  const page = await app.client().get(`/q/${cancelled.public_token}`);
  t.is(page.status, 200);
  t.true(textOf(page.text).includes('cancelled this quote on'));
  t.true(textOf(page.text).includes('It can no longer be accepted'));
  t.false(page.text.includes('<form'));
  // Answering a cancelled quote: back to the page, nothing changed.
  const answer = await app.client().request('POST', `/q/${cancelled.public_token}/accept`, { form: ACCEPT });
  t.is(answer.status, 302);
  t.is((await owner.client.get(`/api/v1/quotes/${cancelled.id}`)).body.data.quote.status, 'cancelled');
  t.is((await events(app, cancelled.id, 'quote.accepted')).length, 0);

  const paid = await createQuote(owner);
  await app.client().request('POST', `/q/${paid.public_token}/accept`, { form: ACCEPT });
  t.is((await owner.client.post(`/api/v1/quotes/${paid.id}/mark-paid`)).status, 200);
  const paidPage = await app.client().get(`/q/${paid.public_token}`);
  t.true(textOf(paidPage.text).includes('Paid on'));
  t.true(textOf(paidPage.text).includes('Thank you for your payment'));
  t.false(paidPage.text.includes('<form'));
});

test('with payments configured an accepted quote has a Pay form posting to /q/{token}/pay', async (t) => {
  const quote = await createQuote(payingOwner);
  const sentPage = await paying.client().get(`/q/${quote.public_token}`);
  t.false(sentPage.text.includes('/pay"'), 'no Pay form before acceptance');
  t.is((await paying.client().request('POST', `/q/${quote.public_token}/accept`, { form: ACCEPT })).status, 302);
  const page = await paying.client().get(`/q/${quote.public_token}`);
  t.true(page.text.includes(`<form method="post" action="/q/${quote.public_token}/pay">`));
  t.true(textOf(page.text).includes('Pay EUR 2,986.80'));
  // The checkout page the Pay submit is redirected to is an allowed form target.
  t.regex(page.headers.get('content-security-policy')!, /form-action 'self' https:\/\/checkout\.stripe\.com http:\/\/127\.0\.0\.1:9/);
});

test('past valid_until the page says "This quote expired on …" with no buttons, and posting accept or decline changes nothing', async (t) => {
  const quote = await createQuote(owner);
  // Time passes: valid_until (editable on drafts only) is put in the past as the calendar would.
  await app.db('quotes').where({ id: quote.id }).update({ valid_until: '2025-01-01' });
  const page = await app.client().get(`/q/${quote.public_token}`);
  t.is(page.status, 200);
  assertPageHeaders(t, page.headers);
  const text = textOf(page.text);
  t.true(text.includes('This quote expired on 1 January 2025'), text);
  t.true(text.includes('1 January 2025 (expired)'), 'the validity says it has passed');
  t.true(text.includes('Expired'));
  t.false(text.includes('Awaiting your response'));
  t.false(page.text.includes('<form'), 'no buttons');
  t.false(text.includes('You accepted'));
  for (const action of ['accept', 'decline']) {
    const answer = await app.client().request('POST', `/q/${quote.public_token}/${action}`, { form: action === 'accept' ? ACCEPT : DECLINE });
    t.is(answer.status, 302, action);
    t.is(answer.headers.get('location'), `/q/${quote.public_token}`);
    const after = await app.client().get(`/q/${quote.public_token}`);
    t.true(textOf(after.text).includes('This quote expired on 1 January 2025'), `after ${action}`);
    t.false(textOf(after.text).includes('You accepted'), `after ${action}`);
  }
  const row = await app.db('quotes').where({ id: quote.id }).first('status', 'accepted_at', 'declined_at');
  t.deepEqual(row, { status: 'sent', accepted_at: null, declined_at: null });
  t.is((await events(app, quote.id, 'quote.accepted')).length, 0);
  t.is((await events(app, quote.id, 'quote.declined')).length, 0);
  t.false((await activities(owner, quote.id)).some((a) => a.type === 'accepted' || a.type === 'declined'));
});

test('an accepted quote past its valid_until offers no Pay button and says it expired; before that day it does', async (t) => {
  const quote = await createQuote(payingOwner);
  t.is((await paying.client().request('POST', `/q/${quote.public_token}/accept`, { form: ACCEPT })).status, 302);
  await paying.db('quotes').where({ id: quote.id }).update({ valid_until: new Date(Date.now() + 86_400_000).toISOString().slice(0, 10) });
  t.true((await paying.client().get(`/q/${quote.public_token}`)).text.includes('/pay"'), 'valid until tomorrow: Pay');
  await paying.db('quotes').where({ id: quote.id }).update({ valid_until: '2025-01-01' });
  const page = await paying.client().get(`/q/${quote.public_token}`);
  t.is(page.status, 200);
  const text = textOf(page.text);
  t.true(text.includes('You accepted this quote on'));
  t.true(text.includes('This quote expired on 1 January 2025, so it can no longer be paid here'), text);
  t.false(page.text.includes('<form'), 'no buttons');
  t.notRegex(page.headers.get('content-security-policy')!, /checkout\.stripe\.com/, 'no checkout page to submit to');
});

test('unknown, malformed and draft tokens: a 404 HTML page, also for the answer forms', async (t) => {
  const draft = await createQuote(owner, { send: false });
  for (const token of ['A'.repeat(32), 'not a token!', draft.public_token]) {
    const res = await app.client().get(`/q/${encodeURIComponent(token)}`);
    t.is(res.status, 404, token);
    assertPageHeaders(t, res.headers);
    t.true(textOf(res.text).includes('Quote not found'));
    const post = await app.client().request('POST', `/q/${encodeURIComponent(token)}/accept`);
    t.is(post.status, 404);
    t.is(post.headers.get('content-type'), 'text/html; charset=utf-8');
  }
  t.is((await owner.client.get(`/api/v1/quotes/${draft.id}`)).body.data.quote.status, 'draft');
  t.is((await activities(owner, draft.id)).filter((a) => a.type === 'viewed').length, 0);
});

test('a locked workspace: the page says the quote is unavailable and answers change nothing', async (t) => {
  const other = await signUpOwner(app, 'Locked Ltd');
  const quote = await createQuote(other);
  await app.db('workspaces').where({ id: other.workspace.id }).update({ status: 'suspended' });
  try {
    const page = await app.client().get(`/q/${quote.public_token}`);
    t.is(page.status, 402);
    t.true(textOf(page.text).includes('This quote is unavailable'));
    t.false(page.text.includes('<form'));
    for (const action of ['accept', 'decline']) {
      const answer = await app.client().request('POST', `/q/${quote.public_token}/${action}`, { form: action === 'accept' ? ACCEPT : DECLINE });
      t.is(answer.status, 402, `${action} on a locked workspace answers the lock page, not a redirect`);
      t.true(textOf(answer.text).includes('This quote is unavailable'));
    }
    const row = await app.db('quotes').where({ id: quote.id }).first('status', 'viewed_at');
    t.is(row.status, 'sent');
    t.is(row.viewed_at, null);
  } finally {
    await app.db('workspaces').where({ id: other.workspace.id }).update({ status: 'active' });
  }
});

// ------------------------------------------------------------------------------------------------
// POST /api/v1/quotes/public/lookup
// ------------------------------------------------------------------------------------------------

const lookup = (body: unknown, headers: Record<string, string> = { authorization: `Public ${owner.keys.public_key}` }, query = '') =>
  app.client().post(`/api/v1/quotes/public/lookup${query}`, body, { headers });

test('lookup by quote number and email (any case) returns the quote and its page URL, with CORS', async (t) => {
  const email = uniqueEmail('lookup');
  const quote = await createQuote(owner, { email });
  const res = await lookup({ quote_number: quote.quote_number.toLowerCase(), email: `  ${email.toUpperCase()} ` });
  t.is(res.status, 200);
  t.is(res.headers.get('access-control-allow-origin'), '*');
  t.deepEqual(res.body, {
    version: 'v1',
    data: { quote: { quote_number: quote.quote_number, status: 'sent', currency: 'EUR', total: '2986.80', valid_until: '2030-01-31', url: `${app.url}/q/${quote.public_token}` } },
  });
  // The URL leads to the page.
  t.is((await app.client().get(new URL(res.body.data.quote.url).pathname)).status, 200);
  // ?key= works too, and so does a form-encoded body.
  const byQuery = await app.client().request('POST', `/api/v1/quotes/public/lookup?key=${owner.keys.public_key}`, { form: { quote_number: quote.quote_number, email } });
  t.is(byQuery.status, 200);
  t.is(byQuery.body.data.quote.url, `${app.url}/q/${quote.public_token}`);
});

test('lookup: a wrong email, a wrong number, a draft or another workspace all give the same 404', async (t) => {
  const email = uniqueEmail('lookup');
  const quote = await createQuote(owner, { email });
  const draft = await createQuote(owner, { email, send: false });
  const other = await signUpOwner(app, 'Other');
  const foreign = await createQuote(other, { email });
  const misses = [
    { quote_number: quote.quote_number, email: 'someone.else@example.com' },
    { quote_number: 'Q-1999-000001', email },
    { quote_number: draft.quote_number, email },
    { quote_number: foreign.quote_number === quote.quote_number ? 'Q-1999-000002' : foreign.quote_number, email },
  ];
  const messages = new Set<string>();
  for (const body of misses) {
    const res = await lookup(body);
    t.is(res.status, 404, JSON.stringify(body));
    t.is(res.headers.get('access-control-allow-origin'), '*');
    messages.add(res.body.error);
  }
  t.is(messages.size, 1);
  // The other workspace's key finds its own quote.
  t.is((await lookup({ quote_number: foreign.quote_number, email }, { authorization: `Public ${other.keys.public_key}` })).status, 200);
});

test('lookup: missing fields are 422; a session cookie, a secret key or no key is 401', async (t) => {
  const missing = await lookup({ email: 'x@example.com' });
  t.is(missing.status, 422);
  t.regex(missing.body.error, /quote_number/);
  const body = { quote_number: 'Q-2030-000001', email: 'x@example.com' };
  // The owner's client holds a session cookie; alone it is not a credential here.
  const cookieOnly = await owner.client.post('/api/v1/quotes/public/lookup', body);
  t.is(cookieOnly.status, 401);
  t.is((await lookup(body, { authorization: `Bearer ${owner.keys.secret_key}` })).status, 401);
  t.is((await lookup(body, { authorization: `Public ${owner.keys.secret_key}` })).status, 401);
  t.is((await lookup(body, {})).status, 401);
  t.is((await lookup(body, {}, '?key=pk_live_nope')).status, 401);
});

test('lookup: the preflight answers 204 with the CORS headers', async (t) => {
  const res = await app.client().request('OPTIONS', '/api/v1/quotes/public/lookup', {
    headers: { origin: 'https://shop.example.com', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
  });
  t.is(res.status, 204);
  t.is(res.headers.get('access-control-allow-origin'), '*');
  t.regex(res.headers.get('access-control-allow-methods') ?? '', /\bPOST\b/);
  t.regex(res.headers.get('access-control-allow-headers') ?? '', /authorization/i);
  t.regex(res.headers.get('access-control-allow-headers') ?? '', /content-type/i);
  t.is(res.text, '');
  // Other quote endpoints stay same-origin.
  const other = await owner.client.get('/api/v1/quotes');
  t.is(other.headers.get('access-control-allow-origin'), null);
});
