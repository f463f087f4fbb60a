import test from 'ava';
import { signUpOwner, type Owner } from '../helpers/app.js';
import { useOwnerApp } from '../helpers/fixture.js';
import { inviteMember, type Member } from '../helpers/members.js';
import { captureLogs } from '../helpers/logs.js';
import type { Client } from '../helpers/client.js';
import { postForm, visibleText, getPage as page } from '../helpers/pages.js';

const { app, smtp, owner } = useOwnerApp(test, { workspace: 'Keys <b>Shop</b>', smtp: true });
let mia: Member;

test.before(async () => {
  mia = await inviteMember(app, smtp, owner);
});


/** How a shop's server checks its key: GET /api/v1/auth/key with `Authorization: Bearer`. */
const keyType = async (secret: string) => {
  const res = await app.client().get('/api/v1/auth/key', { headers: { authorization: `Bearer ${secret}` } });
  return res.status === 200 ? res.body.data.key_type : res.status;
};

const join = (secret: string, visitor: string) =>
  app.client().post('/api/v1/track/join', { visitor_id: visitor, email: `${visitor}@example.com` }, { headers: { authorization: `Bearer ${secret}` } });

const occurrences = (text: string, part: string) => text.split(part).length - 1;

test('without a session the keys pages send to sign-in, and the POST rotates nothing', async (t) => {
  const anon = app.client();
  for (const path of ['/app/settings/keys', '/app/settings/keys/rotate']) {
    const res = await anon.get(path);
    t.is(res.status, 302, path);
    t.is(res.headers.get('location'), `/login?next=${encodeURIComponent(path)}`, path);
  }
  const res = await postForm(anon, '/app/settings/keys/rotate', { confirm: 'yes' });
  t.is(res.status, 303);
  t.regex(res.headers.get('location') ?? '', /^\/login/);
  t.is(await keyType(owner.keys.secret_key), 'secret');
});

test("the keys page: the public key and the tag naming the workspace's slug, each with a copy button; what the secret key is for; no secret", async (t) => {
  const res = await page(owner.client, '/app/settings/keys');
  const text = visibleText(res.text);
  t.true(res.text.includes(`<input id="public-key" type="text" readonly value="${owner.keys.public_key}"`));
  t.true(res.text.includes('data-copy="#public-key"'));
  const tag = `<script src="${app.config.APP_URL}/tag/${owner.workspace.slug}.js" async></script>`;
  t.true(res.text.includes(`<textarea id="tag-snippet" rows="2" readonly spellcheck="false">${tag.replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')}</textarea>`));
  t.true(res.text.includes('data-copy="#tag-snippet"'));
  t.regex(text, /Global Privacy Control/);
  t.regex(text, /POST \/api\/v1\/track\/join/);
  t.regex(text, /external quotes and orders/);
  t.true(res.text.includes('href="/app/settings/keys/rotate"'));
  t.false(res.text.includes(owner.keys.secret_key));
  t.false(res.text.includes('<b>Shop</b>'), 'the workspace name is escaped');
  t.true(res.text.includes('Keys &lt;b&gt;Shop&lt;/b&gt;'));
  // The tag it names is the one the site serves, with this public key in it.
  const script = await app.client().get(`/tag/${owner.workspace.slug}.js`);
  t.is(script.status, 200);
  t.true(script.text.includes(owner.keys.public_key));
});

test('rotating asks first: the confirm page, then 422 without the box ticked (nothing rotated), 403 from another origin', async (t) => {
  const ws = await signUpOwner(app, 'Confirming');
  const confirm = await page(ws.client, '/app/settings/keys/rotate');
  t.true(confirm.text.includes('<form method="post" action="/app/settings/keys/rotate"'));
  t.regex(confirm.text, /<input type="checkbox" name="confirm" value="yes" required/);
  t.regex(visibleText(confirm.text), /stop working at once/);

  const unticked = await postForm(ws.client, '/app/settings/keys/rotate', {});
  t.is(unticked.status, 422);
  t.true(unticked.text.includes('<p class="field-error" id="f-confirm-error">Tick the box to confirm'));
  t.is(await keyType(ws.keys.secret_key), 'secret');

  const evil = await postForm(ws.client, '/app/settings/keys/rotate', { confirm: 'yes' }, { origin: 'https://evil.example' });
  t.is(evil.status, 403);
  t.is(await keyType(ws.keys.secret_key), 'secret');
  t.is((await join(ws.keys.secret_key, 'v-still')).status, 200);
});

test('rotation shows the new secret key once (200, copy button, not in the logs, not on the keys page after); the old keys get 401 at once', async (t) => {
  const ws = await signUpOwner(app, 'Rotating');
  t.is((await join(ws.keys.secret_key, 'v-before')).status, 200);

  const { result: rotated, logs } = await captureLogs(() => postForm(ws.client, '/app/settings/keys/rotate', { confirm: 'yes' }));
  t.is(rotated.status, 200);
  t.is(rotated.headers.get('location'), null);
  t.is(rotated.headers.get('cache-control'), 'no-store');
  const secret = /<input id="secret-key" type="text" readonly value="(sk_live_[^"]+)"/.exec(rotated.text)?.[1] ?? '';
  t.truthy(secret);
  t.not(secret, ws.keys.secret_key);
  t.is(occurrences(rotated.text, secret), 1);
  t.true(rotated.text.includes('data-copy="#secret-key"'));
  t.regex(visibleText(rotated.text), /old public and secret keys no longer work/);
  const publicKey = (await page(ws.client, '/api/v1/workspace')).body.data.workspace.public_key;
  t.not(publicKey, ws.keys.public_key);
  t.true(rotated.text.includes(`value="${publicKey}"`), 'the answer shows the new public key');
  t.false(JSON.stringify(logs).includes(secret));
  t.false(rotated.headers.getSetCookie().some((c) => c.includes(secret)), 'no cookie carries it');

  // The old secret key stops at once; the new one works.
  t.is((await join(ws.keys.secret_key, 'v-old')).status, 401);
  t.is(await keyType(ws.keys.secret_key), 401);
  t.is((await join(secret, 'v-new')).status, 200);
  t.is(await keyType(secret), 'secret');
  const oldPublic = await app.client().post('/api/v1/track/event', { visitor_id: 'v-pub', type: 'page_view' }, { headers: { authorization: `Public ${ws.keys.public_key}` } });
  t.is(oldPublic.status, 401);

  // Shown once: the keys page (and the settings page) never show it again.
  for (const path of ['/app/settings/keys', '/app/settings', '/app/settings/keys/rotate', '/app']) {
    const later = await page(ws.client, path);
    t.false(later.text.includes(secret), path);
  }
  t.true((await page(ws.client, '/app/settings/keys')).text.includes(`value="${publicKey}"`));
});

test('a member: the keys page without the rotate action, 403 on the confirm page and on the POST (nothing rotated), and no Settings links', async (t) => {
  const keys = await page(mia.client, '/app/settings/keys');
  t.true(keys.text.includes(`value="${owner.keys.public_key}"`));
  t.true(keys.text.includes(`/tag/${owner.workspace.slug}.js`));
  t.false(keys.text.includes('/app/settings/keys/rotate'));
  t.is((await mia.client.get('/app/settings/keys/rotate')).status, 403);
  const post = await postForm(mia.client, '/app/settings/keys/rotate', { confirm: 'yes' });
  t.is(post.status, 403);
  t.false(/sk_live_/.test(post.text));
  t.is(await keyType(owner.keys.secret_key), 'secret');
  t.is((await page(owner.client, '/api/v1/workspace')).body.data.workspace.public_key, owner.keys.public_key);
  for (const path of ['/app', '/app/quotes', '/app/settings/keys']) {
    const res = await page(mia.client, path);
    t.false(res.text.includes('href="/app/settings"'), path);
    t.false(res.text.includes('href="/app/settings/webhooks"'), path);
  }
});
