import type http from 'node:http';
import test from 'ava';
import { signUpOwner, uniqueEmail, type Owner } from '../helpers/app.js';
import { useOwnerApp } from '../helpers/fixture.js';
import { inviteMember, type Member } from '../helpers/members.js';
import { captureLogs } from '../helpers/logs.js';
import { ok, type Client } from '../helpers/client.js';
import { postForm, visibleText, type FormFields, getPage as page, ownSession as signedIn } from '../helpers/pages.js';
import { startReceiver } from '../helpers/receiver.js';
import { eventTypes } from '../../src/events/outbox.js';
import { DeliveryWorker, workerSettings } from '../../src/webhooks/worker.js';

const { app, smtp, owner } = useOwnerApp(test, { workspace: 'Hooks', smtp: true, env: { OUTBOUND_ALLOWED_CIDRS: '127.0.0.0/8' } });
let mia: Member;
let other: Owner;
let worker: DeliveryWorker;

test.before(async () => {
  mia = await inviteMember(app, smtp, owner);
  other = await signUpOwner(app, 'Elsewhere');
  worker = new DeliveryWorker(app.db, workerSettings(app.config));
});
test.after.always(() => worker?.close());


const apiSubscription = async (id: number, o: Owner = owner) =>
  ((await ok(o.client.get('/api/v1/webhooks'))).subscriptions as any[]).find((s) => s.id === id);
const apiDelivery = async (id: number, o: Owner = owner) => (await ok(o.client.get(`/api/v1/webhooks/deliveries/${id}`))).delivery;

/** A subscription made through the API (its secret from the API's answer). */
async function subscription(o: Owner = owner, fields: Record<string, unknown> = {}): Promise<any> {
  return (await ok(o.client.post('/api/v1/webhooks', { url: 'https://hooks.example.com/in', ...fields }), 201)).subscription;
}

const secretIn = (html: string) => /<input id="signing-secret" type="text" readonly value="(whsec_[^"]+)"/.exec(html)?.[1] ?? '';
const occurrences = (text: string, part: string) => text.split(part).length - 1;

/** A session of the owner's own: the flash message a POST leaves is this client's alone while other tests run. */
const ownSession = () => signedIn(app, owner);

async function newCustomer(o: Owner = owner) {
  return (await ok(o.client.post('/api/v1/customers', { email: uniqueEmail('c'), name: 'Cus Tomer' }), 201)).customer;
}

const answer = (status: number, body?: string) => (_req: http.IncomingMessage, res: http.ServerResponse) => {
  res.statusCode = status;
  res.setHeader('content-type', 'text/html');
  res.end(body);
};

test('without a session every webhooks page sends to sign-in, and no POST changes anything', async (t) => {
  const s = await subscription();
  const anon = app.client();
  for (const path of ['/app/settings/webhooks', '/app/settings/webhooks/new', `/app/settings/webhooks/${s.id}`, `/app/settings/webhooks/${s.id}/edit`,
    `/app/settings/webhooks/${s.id}/rotate`, `/app/settings/webhooks/${s.id}/delete`, `/app/settings/webhooks/${s.id}/deliveries/1`]) {
    const res = await anon.get(path);
    t.is(res.status, 302, path);
    t.is(res.headers.get('location'), `/login?next=${encodeURIComponent(path)}`, path);
  }
  for (const [path, fields] of [
    ['/app/settings/webhooks/new', { url: 'https://anon.example.com/' }],
    [`/app/settings/webhooks/${s.id}/edit`, { url: 'https://anon.example.com/' }],
    [`/app/settings/webhooks/${s.id}/pause`, {}],
    [`/app/settings/webhooks/${s.id}/rotate`, { overlap_seconds: '0' }],
    [`/app/settings/webhooks/${s.id}/delete`, {}],
  ] as const) {
    const res = await postForm(anon, path, fields);
    t.is(res.status, 303, path);
    t.regex(res.headers.get('location') ?? '', /^\/login/, path);
  }
  t.like(await apiSubscription(s.id), { url: 'https://hooks.example.com/in', active: true });
});

test('create: the event types as checkboxes by group; 422 keeps the input; 403 from another origin; the signing secret shown once', async (t) => {
  const form = await page(owner.client, '/app/settings/webhooks/new');
  for (const value of ['*', 'quote.*', 'order.*', 'customer.*', ...eventTypes]) t.true(form.text.includes(`<input type="checkbox" name="event_types" value="${value}"`), value);
  for (const legend of ['Quotes', 'Orders', 'Customers']) t.true(form.text.includes(`<legend>${legend}</legend>`), legend);
  t.true(form.text.includes('<label for="f-url">'));
  t.false(form.text.includes(' checked'), 'nothing ticked: every event');

  const invalid = await postForm(owner.client, '/app/settings/webhooks/new', { url: 'ftp://nope', description: 'Kept <i>text</i>', event_types: ['quote.*', 'customer.created'] });
  t.is(invalid.status, 422);
  t.true(invalid.text.includes('<p class="field-error" id="f-url-error">url: must be an absolute http:// or https:// URL.</p>'));
  t.true(invalid.text.includes('value="ftp://nope"'));
  t.true(invalid.text.includes('value="Kept &lt;i&gt;text&lt;/i&gt;"'));
  t.true(invalid.text.includes('value="quote.*" checked'));
  t.true(invalid.text.includes('value="customer.created" checked'));
  t.false(invalid.text.includes('value="order.*" checked'));

  const unknownType = await postForm(owner.client, '/app/settings/webhooks/new', { url: 'https://hooks.example.com/x', event_types: ['quote.*', 'quote.nope'] });
  t.is(unknownType.status, 422);
  t.regex(unknownType.text, /<p class="field-error" id="f-event_types-error">event_types\.1: must be &quot;\*&quot;, one of quote\.\*, order\.\*, customer\.\*, or an event type/);
  t.true(unknownType.text.includes('value="quote.*" checked'));

  const url = `https://hooks.example.com/${Date.now()}`;
  const evil = await postForm(owner.client, '/app/settings/webhooks/new', { url }, { origin: 'https://evil.example' });
  t.is(evil.status, 403);

  const { result: created, logs } = await captureLogs(() =>
    postForm(owner.client, '/app/settings/webhooks/new', { url, description: '<b>Shop</b> sync', event_types: ['quote.*', 'customer.created'] }),
  );
  t.is(created.status, 200);
  t.is(created.headers.get('location'), null);
  const secret = secretIn(created.text);
  t.regex(secret, /^whsec_/);
  t.is(occurrences(created.text, secret), 1);
  t.true(created.text.includes('data-copy="#signing-secret"'));
  t.false(JSON.stringify(logs).includes(secret));
  t.false(created.headers.getSetCookie().some((c) => c.includes(secret)));

  const made = ((await ok(owner.client.get('/api/v1/webhooks'))).subscriptions as any[]).filter((s) => s.url === url);
  t.is(made.length, 1, 'one subscription, none from the other origin');
  t.like(made[0], { event_types: ['quote.*', 'customer.created'], description: '<b>Shop</b> sync', active: true });
  t.true(created.text.includes(`href="/app/settings/webhooks/${made[0].id}"`));

  for (const path of ['/app/settings/webhooks', `/app/settings/webhooks/${made[0].id}`, `/app/settings/webhooks/${made[0].id}/edit`, `/app/settings/webhooks/${made[0].id}/rotate`, '/app']) {
    const later = await page(owner.client, path);
    t.false(later.text.includes(secret), path);
    t.false(later.text.includes('<b>Shop</b>'), path);
  }
  // No boxes ticked is every event, as in the API.
  const all = await postForm(owner.client, '/app/settings/webhooks/new', { url: `${url}/all` });
  t.is(all.status, 200);
  t.deepEqual(((await ok(owner.client.get('/api/v1/webhooks'))).subscriptions as any[]).find((s) => s.url === `${url}/all`).event_types, ['*']);
});

test('the list: URL, filter, active or paused, and the last delivery', async (t) => {
  const ws = await signUpOwner(app, 'Listing');
  const empty = await page(ws.client, '/app/settings/webhooks');
  t.regex(visibleText(empty.text), /No webhooks yet/);
  const a = await subscription(ws, { url: 'https://a.example.com/<x>', event_types: ['order.*'] });
  const b = await subscription(ws, { url: 'https://b.example.com/' });
  await ok(ws.client.patch(`/api/v1/webhooks/${b.id}`, { active: false }));
  const list = await page(ws.client, '/app/settings/webhooks');
  t.true(list.text.includes(`<a href="/app/settings/webhooks/${a.id}" class="url">https://a.example.com/&lt;x&gt;</a>`));
  const text = visibleText(list.text);
  t.regex(text, /https:\/\/a\.example\.com\/<x> order\.\* Active None yet/);
  t.regex(text, /https:\/\/b\.example\.com\/ All events Paused None yet/);
  t.true(list.text.includes('href="/app/settings/webhooks/new"'));
});

test('edit: the form holds the subscription; 303 and the change through the API; 422 keeps the input; 403 from another origin', async (t) => {
  const s = await subscription(owner, { event_types: ['order.*'], description: 'old' });
  const form = await page(owner.client, `/app/settings/webhooks/${s.id}/edit`);
  t.true(form.text.includes('value="https://hooks.example.com/in"'));
  t.true(form.text.includes('value="order.*" checked'));
  t.true(form.text.includes('value="old"'));

  const invalid = await postForm(owner.client, `/app/settings/webhooks/${s.id}/edit`, { url: 'not a url', description: 'kept', event_types: ['quote.sent'] });
  t.is(invalid.status, 422);
  t.true(invalid.text.includes('<p class="field-error" id="f-url-error">'));
  t.true(invalid.text.includes('value="not a url"'));
  t.true(invalid.text.includes('value="quote.sent" checked'));

  const evil = await postForm(owner.client, `/app/settings/webhooks/${s.id}/edit`, { url: 'https://evil.example/' }, { origin: 'https://evil.example' });
  t.is(evil.status, 403);

  const saved = await postForm(owner.client, `/app/settings/webhooks/${s.id}/edit`, { url: 'https://new.example.com/hook', description: '', event_types: ['quote.sent', 'customer.*'] });
  t.is(saved.status, 303);
  t.is(saved.headers.get('location'), `/app/settings/webhooks/${s.id}`);
  t.like(await apiSubscription(s.id), { url: 'https://new.example.com/hook', description: null, event_types: ['quote.sent', 'customer.*'], active: true });
});

test('pause and resume: 303, the state through the API and on the page; 403 from another origin', async (t) => {
  const s = await subscription();
  const own = await ownSession();
  t.is((await postForm(own, `/app/settings/webhooks/${s.id}/pause`, {}, { origin: 'https://evil.example' })).status, 403);
  t.true((await apiSubscription(s.id)).active);
  const paused = await postForm(own, `/app/settings/webhooks/${s.id}/pause`, {});
  t.is(paused.status, 303);
  t.is(paused.headers.get('location'), `/app/settings/webhooks/${s.id}`);
  t.false((await apiSubscription(s.id)).active);
  const view = await page(own, `/app/settings/webhooks/${s.id}`);
  t.true(view.text.includes(`<form method="post" action="/app/settings/webhooks/${s.id}/resume"><button type="submit">Resume</button></form>`));
  t.regex(visibleText(view.text), /Webhook paused/);
  t.is((await postForm(own, `/app/settings/webhooks/${s.id}/resume`, {}, { origin: 'https://evil.example' })).status, 403);
  t.false((await apiSubscription(s.id)).active);
  const resumed = await postForm(own, `/app/settings/webhooks/${s.id}/resume`, {});
  t.is(resumed.status, 303);
  t.true((await apiSubscription(s.id)).active);
  t.regex(visibleText((await page(own, `/app/settings/webhooks/${s.id}`)).text), /Webhook resumed.*Active/);
});

test('delete: a confirmation page, then 303 to the list, gone from the API, its page 404; 403 from another origin', async (t) => {
  const s = await subscription(owner, { url: 'https://gone.example.com/' });
  const confirm = await page(owner.client, `/app/settings/webhooks/${s.id}/delete`);
  t.true(confirm.text.includes(`<form method="post" action="/app/settings/webhooks/${s.id}/delete"`));
  t.is((await postForm(owner.client, `/app/settings/webhooks/${s.id}/delete`, {}, { origin: 'https://evil.example' })).status, 403);
  t.truthy(await apiSubscription(s.id));
  const deleted = await postForm(owner.client, `/app/settings/webhooks/${s.id}/delete`, {});
  t.is(deleted.status, 303);
  t.is(deleted.headers.get('location'), '/app/settings/webhooks');
  t.is(await apiSubscription(s.id), undefined);
  t.is((await owner.client.get(`/app/settings/webhooks/${s.id}`)).status, 404);
  t.is((await postForm(owner.client, `/app/settings/webhooks/${s.id}/delete`, {})).status, 404);
});

test("another workspace's subscription or delivery, and a malformed id, are the 404 page", async (t) => {
  const theirs = await subscription(other);
  for (const path of [`/app/settings/webhooks/${theirs.id}`, `/app/settings/webhooks/${theirs.id}/edit`, `/app/settings/webhooks/${theirs.id}/rotate`,
    `/app/settings/webhooks/${theirs.id}/delete`, '/app/settings/webhooks/abc', '/app/settings/webhooks/0', `/app/settings/webhooks/${theirs.id}/deliveries/x`]) {
    t.is((await owner.client.get(path)).status, 404, path);
  }
  for (const path of [`/app/settings/webhooks/${theirs.id}/pause`, `/app/settings/webhooks/${theirs.id}/delete`, `/app/settings/webhooks/${theirs.id}/rotate`]) {
    t.is((await postForm(owner.client, path, { overlap_seconds: '0' })).status, 404, path);
  }
  t.like(await apiSubscription(theirs.id, other), { active: true });
});

test.serial('rotate: the overlap explained, the new secret shown once; during the overlap deliveries carry both signatures', async (t) => {
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  const ws = await signUpOwner(app, 'Rotating hooks');
  const s = await subscription(ws, { url: `${receiver.url}/hook` });

  const form = await page(ws.client, `/app/settings/webhooks/${s.id}/rotate`);
  t.regex(visibleText(form.text), /two v1= signatures, one per secret/);
  const invalid = await postForm(ws.client, `/app/settings/webhooks/${s.id}/rotate`, { overlap_seconds: '90000' });
  t.is(invalid.status, 422);
  t.true(invalid.text.includes('<p class="field-error" id="f-overlap_seconds-error">overlap_seconds: must be from 0 to 86400.</p>'));
  t.true(invalid.text.includes('value="90000"'));
  t.is((await postForm(ws.client, `/app/settings/webhooks/${s.id}/rotate`, { overlap_seconds: '60' }, { origin: 'https://evil.example' })).status, 403);

  const { result: rotated, logs } = await captureLogs(() => postForm(ws.client, `/app/settings/webhooks/${s.id}/rotate`, { overlap_seconds: '3600' }));
  t.is(rotated.status, 200);
  const secret = secretIn(rotated.text);
  t.regex(secret, /^whsec_/);
  t.not(secret, s.signing_secret);
  t.is(occurrences(rotated.text, secret), 1);
  t.regex(visibleText(rotated.text), /Until .+ each delivery is signed with both the old and the new secret/);
  t.false(JSON.stringify(logs).includes(secret));
  t.false((await page(ws.client, `/app/settings/webhooks/${s.id}`)).text.includes(secret));

  receiver.secrets.push(s.signing_secret, secret);
  await newCustomer(ws);
  await worker.runOnce();
  const [got] = await receiver.waitFor(1);
  t.deepEqual(got.verifiedWith.sort(), [s.signing_secret, secret].sort());

  // Without an overlap the previous secret signs nothing more.
  const again = await postForm(ws.client, `/app/settings/webhooks/${s.id}/rotate`, { overlap_seconds: '0' });
  t.is(again.status, 200);
  const third = secretIn(again.text);
  t.regex(visibleText(again.text), /The old secret no longer signs deliveries/);
  receiver.secrets.push(third);
  await newCustomer(ws);
  await worker.runOnce();
  const [, second] = await receiver.waitFor(2);
  t.deepEqual(second.verifiedWith, [third]);
});

test.serial('deliveries: the list, a failing delivery with its response body escaped, on the home page; resend queues it again and it succeeds signed', async (t) => {
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  const ws = await signUpOwner(app, 'Delivering');
  const created = await postForm(ws.client, '/app/settings/webhooks/new', { url: `${receiver.url}/hook`, event_types: ['customer.*'] });
  const secret = secretIn(created.text);
  receiver.secrets.push(secret);
  const s = ((await ok(ws.client.get('/api/v1/webhooks'))).subscriptions as any[])[0];

  t.regex(visibleText((await page(ws.client, `/app/settings/webhooks/${s.id}`)).text), /No deliveries yet/);
  t.false((await page(ws.client, '/app')).text.includes('id="failing"'), 'no box while all is well');

  receiver.respondWith(answer(500, '<script>alert(1)</script><b>broken</b> & more'));
  await newCustomer(ws);
  await worker.runOnce();
  await receiver.waitFor(1);
  const [failed] = (await ok(ws.client.get(`/api/v1/webhooks/${s.id}/deliveries`))).deliveries;
  t.like(failed, { status: 'failed', attempts: 1, last_status_code: 500 });

  const list = await page(ws.client, `/app/settings/webhooks/${s.id}`);
  t.true(list.text.includes(`<a href="/app/settings/webhooks/${s.id}/deliveries/${failed.id}">#${failed.id}</a>`));
  const row = visibleText(list.text);
  t.regex(row, new RegExp(`#${failed.id} customer\\.created Retrying 1 500 `));
  t.regex(visibleText((await page(ws.client, '/app/settings/webhooks')).text), /Retrying .* HTTP 500/);

  const detail = await page(ws.client, `/app/settings/webhooks/${s.id}/deliveries/${failed.id}`);
  t.true(detail.text.includes('<pre class="response-body">&lt;script&gt;alert(1)&lt;/script&gt;&lt;b&gt;broken&lt;/b&gt; &amp; more</pre>'));
  t.false(detail.text.includes('<script>alert(1)'));
  t.false(detail.text.includes('<b>broken'));
  t.true(detail.text.includes(`<form method="post" action="/app/settings/webhooks/${s.id}/deliveries/${failed.id}/resend"`));

  const home = await page(ws.client, '/app');
  t.true(home.text.includes('id="failing"'));
  t.true(home.text.includes(`<a href="/app/settings/webhooks/${s.id}/deliveries/${failed.id}">customer.created</a>`));

  // The delivery under another subscription's path is not there.
  const s2 = await subscription(ws, { url: 'https://elsewhere.example.com/' });
  t.is((await ws.client.get(`/app/settings/webhooks/${s2.id}/deliveries/${failed.id}`)).status, 404);
  t.is((await postForm(ws.client, `/app/settings/webhooks/${s2.id}/deliveries/${failed.id}/resend`, {})).status, 404);
  t.is((await owner.client.get(`/app/settings/webhooks/${s.id}/deliveries/${failed.id}`)).status, 404, "another workspace's");

  t.is((await postForm(ws.client, `/app/settings/webhooks/${s.id}/deliveries/${failed.id}/resend`, {}, { origin: 'https://evil.example' })).status, 403);
  receiver.respondWith(answer(200, 'thanks'));
  const resent = await postForm(ws.client, `/app/settings/webhooks/${s.id}/deliveries/${failed.id}/resend`, {});
  t.is(resent.status, 303);
  t.is(resent.headers.get('location'), `/app/settings/webhooks/${s.id}/deliveries/${failed.id}`);
  t.like(await apiDelivery(failed.id, ws), { status: 'pending', attempts: 0 });
  t.false((await page(ws.client, '/app')).text.includes('id="failing"'), 'a resent delivery is no longer failing');
  await worker.runOnce();
  const [, second] = await receiver.waitFor(2);
  t.deepEqual(second.verifiedWith, [secret]);
  t.like(await apiDelivery(failed.id, ws), { status: 'succeeded', last_status_code: 200 });
  t.regex(visibleText((await page(ws.client, `/app/settings/webhooks/${s.id}/deliveries/${failed.id}`)).text), /Delivered .* thanks/);

  // A paused subscription's delivery cannot be resent: the delivery page with the API's message, 409.
  await ok(ws.client.patch(`/api/v1/webhooks/${s.id}`, { active: false }));
  const refused = await postForm(ws.client, `/app/settings/webhooks/${s.id}/deliveries/${failed.id}/resend`, {});
  t.is(refused.status, 409);
  t.regex(visibleText(refused.text), /cannot be resent: its subscription is paused or was deleted/);
});

test.serial('the home box lists dead deliveries too, for owners only', async (t) => {
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  receiver.respondWith(answer(410, 'gone'));
  const s = await subscription(owner, { url: `${receiver.url}/dead`, event_types: ['customer.created'] });
  await newCustomer();
  await worker.runOnce();
  const [delivery] = (await ok(owner.client.get(`/api/v1/webhooks/${s.id}/deliveries`))).deliveries;
  // Past its retries: given up.
  await app.db('webhook_deliveries').where({ id: delivery.id }).update({ status: 'dead' });
  const home = await page(owner.client, '/app');
  t.true(home.text.includes(`<a href="/app/settings/webhooks/${s.id}/deliveries/${delivery.id}">customer.created</a>`));
  t.regex(visibleText(home.text), /Failing webhook deliveries .* Failed · HTTP 410/);
  const member = await page(mia.client, '/app');
  t.false(member.text.includes('id="failing"'));
  t.false(member.text.includes('/app/settings/webhooks'));
  await ok(owner.client.delete(`/api/v1/webhooks/${s.id}`));
  t.false((await page(owner.client, '/app')).text.includes(`/deliveries/${delivery.id}"`), 'a deleted subscription cannot be resent: not listed');
});

test('a member reads the webhooks as the API lets them, without actions; 403 on every owner-only page and POST, nothing changed', async (t) => {
  const s = await subscription(owner, { url: 'https://member-view.example.com/' });
  await newCustomer();
  const [delivery] = (await ok(owner.client.get(`/api/v1/webhooks/${s.id}/deliveries`))).deliveries;
  const list = await page(mia.client, '/app/settings/webhooks');
  t.true(list.text.includes(`href="/app/settings/webhooks/${s.id}"`));
  t.false(list.text.includes('/app/settings/webhooks/new'));
  const view = await page(mia.client, `/app/settings/webhooks/${s.id}`);
  for (const action of ['edit', 'pause', 'rotate', 'delete']) t.false(view.text.includes(`/app/settings/webhooks/${s.id}/${action}`), action);
  const detail = await page(mia.client, `/app/settings/webhooks/${s.id}/deliveries/${delivery.id}`);
  t.false(detail.text.includes('/resend'));
  t.false(detail.text.includes('href="/app/settings"'));

  for (const path of ['/app/settings/webhooks/new', `/app/settings/webhooks/${s.id}/edit`, `/app/settings/webhooks/${s.id}/rotate`, `/app/settings/webhooks/${s.id}/delete`]) {
    t.is((await mia.client.get(path)).status, 403, path);
  }
  const posts: [string, FormFields][] = [
    ['/app/settings/webhooks/new', { url: 'https://member.example.com/' }],
    [`/app/settings/webhooks/${s.id}/edit`, { url: 'https://member.example.com/' }],
    [`/app/settings/webhooks/${s.id}/pause`, {}],
    [`/app/settings/webhooks/${s.id}/resume`, {}],
    [`/app/settings/webhooks/${s.id}/rotate`, { overlap_seconds: '0' }],
    [`/app/settings/webhooks/${s.id}/delete`, {}],
    [`/app/settings/webhooks/${s.id}/deliveries/${delivery.id}/resend`, {}],
  ];
  for (const [path, fields] of posts) {
    const res = await postForm(mia.client, path, fields);
    t.is(res.status, 403, path);
    t.false(/whsec_/.test(res.text), path);
  }
  t.like(await apiSubscription(s.id), { url: 'https://member-view.example.com/', active: true });
  t.false(((await ok(owner.client.get('/api/v1/webhooks'))).subscriptions as any[]).some((x) => x.url === 'https://member.example.com/'));
  t.like(await apiDelivery(delivery.id), { status: delivery.status, attempts: delivery.attempts, updated_at: delivery.updated_at });
});
