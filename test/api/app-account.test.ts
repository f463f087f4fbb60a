import test from 'ava';
import { useOwnerApp } from '../helpers/fixture.js';
import { startApp, uniqueEmail } from '../helpers/app.js';
import { tokenFromMail } from '../helpers/members.js';
import { postForm, signInPage, visibleText } from '../helpers/pages.js';

const { app, owner, smtp } = useOwnerApp(test, { smtp: true, workspace: 'Acme <b>Tools</b>' });

test('GET / sends a visitor to the sign-in page and a signed-in user to the app', async (t) => {
  const visitor = await app.client().get('/');
  t.is(visitor.status, 302);
  t.is(visitor.headers.get('location'), '/login');
  const member = await owner.client.get('/');
  t.is(member.status, 302);
  t.is(member.headers.get('location'), '/app');
});

test('an app page without a session is 302 to /login with next; signing in goes back there, and only to this site', async (t) => {
  const client = app.client();
  const away = await client.get('/app/quotes?status=sent');
  t.is(away.status, 302);
  t.is(away.headers.get('location'), `/login?next=${encodeURIComponent('/app/quotes?status=sent')}`);

  const form = await client.get(`/login?next=${encodeURIComponent('/app/quotes?status=sent')}`);
  t.is(form.status, 200);
  t.regex(form.text, /name="next" value="\/app\/quotes\?status=sent"/);
  const signedIn = await postForm(client, '/login', { email: owner.email, password: owner.password, next: '/app/quotes?status=sent' });
  t.is(signedIn.status, 303);
  t.is(signedIn.headers.get('location'), '/app/quotes?status=sent');

  for (const next of ['//evil.example/x', 'https://evil.example/', '/\\evil.example']) {
    const other = app.client();
    const res = await postForm(other, '/login', { email: owner.email, password: owner.password, next });
    t.is(res.headers.get('location'), '/app', next);
  }
});

test('a wrong password shows the sign-in form again with the email kept and a message', async (t) => {
  const res = await postForm(app.client(), '/login', { email: owner.email, password: 'not the password' });
  t.is(res.status, 401);
  t.true(res.text.includes(`value="${owner.email}"`));
  t.true(visibleText(res.text).includes('That email and password do not match an account.'));
  t.false(res.headers.getSetCookie().some((c) => c.startsWith('quoting_session=') && !/quoting_session=;/.test(c)));
});

test('the shell shows the workspace name escaped, the navigation with Settings for an owner, the user and sign-out', async (t) => {
  const res = await owner.client.get('/app');
  t.is(res.status, 200);
  t.true(res.text.includes('Acme &lt;b&gt;Tools&lt;/b&gt;'));
  t.false(res.text.includes('<b>Tools</b>'));
  const nav = [...(/<nav aria-label="Main">([\s\S]*?)<\/nav>/.exec(res.text)?.[1] ?? '').matchAll(/<a href="([^"]+)"[^>]*>([^<]+)<\/a>/g)].map((m) => [m[2], m[1]]);
  t.deepEqual(nav, [
    ['Quotes', '/app/quotes'], ['Orders', '/app/orders'], ['Customers', '/app/customers'], ['Products', '/app/products'], ['Channels', '/app/channels'],
    ['Imports', '/app/imports'], ['Settings', '/app/settings'],
  ]);
  t.regex(res.text, /<form method="post" action="\/logout">/);
  t.is(res.headers.get('content-security-policy'), "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'");
  t.is(res.headers.get('cache-control'), 'no-store');
});

test('sign out ends the session: the cookie is cleared and the app asks to sign in again', async (t) => {
  const client = app.client();
  await signInPage(client, owner.email, owner.password);
  t.is((await client.get('/app')).status, 200);
  const out = await postForm(client, '/logout', {});
  t.is(out.status, 303);
  t.is(out.headers.get('location'), '/login');
  t.is((await client.get('/app')).status, 302);
  const login = await client.get('/login');
  t.true(visibleText(login.text).includes('You are signed out.'), 'the flash message reaches the next page');
  t.false(visibleText((await client.get('/login')).text).includes('You are signed out.'), 'and only that one');
});

test('every POST passes the Origin check: another site is refused with the 403 page', async (t) => {
  for (const path of ['/login', '/logout', '/forgot', '/signup', '/app/settings/password']) {
    const res = await postForm(owner.client, path, { email: owner.email, password: owner.password }, { origin: 'https://evil.example' });
    t.is(res.status, 403, path);
    t.regex(res.headers.get('content-type') ?? '', /text\/html/);
    t.true(visibleText(res.text).includes('Cross-site request refused'), path);
  }
});

test('forgot password mails a link to /reset/{token}; the reset page sets the password and signs other sessions out', async (t) => {
  const email = uniqueEmail('forgetful');
  const signup = await app.client().post('/api/v1/auth/signup', { email, password: 'first password 1', name: 'Fay' });
  t.is(signup.status, 201);
  const res = await postForm(app.client(), '/forgot', { email });
  t.is(res.status, 303);
  const mail = await smtp.waitFor(email);
  const token = tokenFromMail(mail);
  t.true(mail.text.includes(`${app.url}/reset/${token}`));

  const form = await app.client().get(`/reset/${token}`);
  t.is(form.status, 200);
  const short = await postForm(app.client(), `/reset/${token}`, { password: 'short' });
  t.is(short.status, 422);
  t.true(visibleText(short.text).includes('password: must be at least 10 characters.'));
  const done = await postForm(app.client(), `/reset/${token}`, { password: 'second password 2' });
  t.is(done.status, 303);
  t.is(done.headers.get('location'), '/login');
  const again = await postForm(app.client(), `/reset/${token}`, { password: 'third password 3' });
  t.is(again.status, 410);
  t.true(visibleText(again.text).includes('already been used'));
  const login = await app.client().post('/api/v1/auth/login', { email, password: 'second password 2' });
  t.is(login.status, 200);
  t.is((await postForm(app.client(), '/reset/not-a-token', { password: 'another password 4' })).status, 404);
});

test('an unknown email gets the same answer as a known one on the forgot page', async (t) => {
  const res = await postForm(app.client(), '/forgot', { email: uniqueEmail('nobody') });
  t.is(res.status, 303);
  t.is(res.headers.get('location'), '/login');
});

test('old reset and invite links (before the pages had paths) lead to the pages', async (t) => {
  const reset = await app.client().get('/password-reset?token=abc123');
  t.is(reset.status, 302);
  t.is(reset.headers.get('location'), '/reset/abc123');
  const invite = await app.client().get('/invites/accept?token=abc123');
  t.is(invite.headers.get('location'), '/invite/abc123');
});

test('an invite is accepted on /invite/{token}: the account is made, signed in, and lands in the workspace', async (t) => {
  const email = uniqueEmail('invitee');
  t.is((await owner.client.post('/api/v1/invites', { email, role: 'member' })).status, 201);
  const token = tokenFromMail(await smtp.waitFor(email));
  const client = app.client();
  t.is((await client.get(`/invite/${token}`)).status, 200);
  const missing = await postForm(client, `/invite/${token}`, { name: '', password: 'member password 1' });
  t.is(missing.status, 422);
  t.regex(missing.text, /id="f-name-error"/);
  const accepted = await postForm(client, `/invite/${token}`, { name: 'Ivy <i>Invitee</i>', password: 'member password 1' });
  t.is(accepted.status, 303);
  t.is(accepted.headers.get('location'), '/app');
  const home = await client.get('/app');
  t.is(home.status, 200);
  t.true(home.text.includes('Ivy &lt;i&gt;Invitee&lt;/i&gt;'));
  t.false(home.text.includes('href="/app/settings"'), 'a member has no Settings in the navigation');
  t.true(home.text.includes('href="/app/settings/account"'), 'but reaches their account (and from it their password) from their name');
  const settings = await client.get('/app/settings');
  t.is(settings.status, 403, 'the owner-only settings page is the 403 page for a member');
  t.true(visibleText(settings.text).includes('Only a workspace owner may do this.'));
  t.is((await postForm(app.client(), `/invite/${token}`, { name: 'Again', password: 'member password 1' })).status, 410);
});

test('sign-up makes an account and a workspace, signs in, and keeps the input on a 422', async (t) => {
  const client = app.client();
  const email = uniqueEmail('newcomer');
  const bad = await postForm(client, '/signup', { name: 'Nia', email, password: 'short', workspace_name: 'Nia & Co' });
  t.is(bad.status, 422);
  t.true(bad.text.includes(`value="${email}"`) && bad.text.includes('value="Nia &amp; Co"'));
  t.regex(bad.text, /<p class="field-error" id="f-password-error">password: must be at least 10 characters\.<\/p>/);
  const res = await postForm(client, '/signup', { name: 'Nia', email, password: 'long enough pass', workspace_name: 'Nia & Co' });
  t.is(res.status, 303);
  const me = await client.get('/api/v1/auth/me');
  t.is(me.body.data.workspace.name, 'Nia & Co');
  t.is(me.body.data.role, 'owner');
  const taken = await postForm(app.client(), '/signup', { name: 'Nia', email, password: 'long enough pass', workspace_name: 'Other' });
  t.is(taken.status, 409);
});

test('with SIGNUP=closed the sign-up page is the 404 page and posting to it is refused', async (t) => {
  const closed = await startApp({ SIGNUP: 'closed' });
  t.teardown(() => closed.close());
  t.is((await closed.client().get('/signup')).status, 404);
  t.is((await postForm(closed.client(), '/signup', { name: 'A', email: uniqueEmail('x'), password: 'long enough pass', workspace_name: 'W' })).status, 403);
  t.false((await closed.client().get('/login')).text.includes('href="/signup"'));
});

test('without mail the forgot page says to ask an owner', async (t) => {
  const noMail = await startApp();
  t.teardown(() => noMail.close());
  const res = await noMail.client().get('/forgot');
  t.is(res.status, 200);
  t.true(visibleText(res.text).includes('Ask an owner of your workspace'));
  t.false(res.text.includes('<form method="post" action="/forgot"'));
});

test("the owner's settings page shows the workspace, and their account page the way to the password page", async (t) => {
  const res = await owner.client.get('/app/settings');
  t.is(res.status, 200);
  const text = visibleText(res.text);
  t.true(res.text.includes('value="Acme &lt;b&gt;Tools&lt;/b&gt;"'), 'the name, escaped, in its field');
  t.regex(text, /Status (Active|Trial: \d+ days? left)/);
  t.true(res.text.includes('href="/app/settings/account"'));
  const account = await owner.client.get('/app/settings/account');
  t.true(visibleText(account.text).includes(owner.email));
  t.true(account.text.includes('href="/app/settings/password"'));
});

test('the password page changes the password, checks the current one beside its field, and keeps this session', async (t) => {
  const client = app.client();
  const email = uniqueEmail('changer');
  await client.post('/api/v1/auth/signup', { email, password: 'old password 123', name: 'Cy', workspace_name: 'Cy Co' });
  const other = app.client();
  await signInPage(other, email, 'old password 123');
  const wrong = await postForm(client, '/app/settings/password', { current_password: 'nope nope nope', password: 'new password 123' });
  t.is(wrong.status, 422);
  t.regex(wrong.text, /id="f-current_password-error">current_password: is not your current password\./);
  const res = await postForm(client, '/app/settings/password', { current_password: 'old password 123', password: 'new password 123' });
  t.is(res.status, 303);
  t.is((await client.get('/app/settings/password')).status, 200, 'this session stays');
  t.is((await other.get('/app')).status, 302, 'the other session is signed out');
});

test('unknown paths under /app are the 404 page in the shell; another method is 405 naming the allowed ones', async (t) => {
  const unknown = await owner.client.get('/app/no-such-page/at-all');
  t.is(unknown.status, 404);
  t.true(visibleText(unknown.text).includes('Page not found'));
  t.regex(unknown.text, /<nav aria-label="Main">/, 'in the shell');
  const method = await owner.client.request('PUT', '/login');
  t.is(method.status, 405);
  t.is(method.headers.get('allow'), 'GET, POST, HEAD');
});

test('a locked workspace shows the 402 page, with a way to sign out', async (t) => {
  const client = app.client();
  const email = uniqueEmail('locked');
  const signup = await client.post('/api/v1/auth/signup', { email, password: 'locked password 1', name: 'Lo', workspace_name: 'Locked Co' });
  await app.db('workspaces').where({ id: signup.body.data.workspace.id }).update({ status: 'suspended' });
  const res = await client.get('/app');
  t.is(res.status, 402);
  t.true(visibleText(res.text).includes('This workspace is locked'));
  t.regex(res.text, /action="\/logout"/);
});

test('the stylesheet and script are served with their hash for a year, and the pages name them by it', async (t) => {
  const page = await app.client().get('/login');
  const css = /href="(\/assets\/app\.css\?v=\w+)"/.exec(page.text)?.[1];
  const js = /src="(\/assets\/app\.js\?v=\w+)"/.exec(page.text)?.[1];
  t.truthy(css);
  t.truthy(js);
  const sheet = await app.client().get(css!);
  t.is(sheet.status, 200);
  t.regex(sheet.headers.get('content-type') ?? '', /text\/css/);
  t.is(sheet.headers.get('cache-control'), 'public, max-age=31536000, immutable');
  const script = await app.client().get(js!);
  t.regex(script.headers.get('content-type') ?? '', /javascript/);
  t.is((await app.client().get('/assets/../package.json')).status, 404);
  t.is((await app.client().get('/assets/nothing.css')).status, 404);
});
