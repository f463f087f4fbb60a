import test from 'ava';
import { startApp, signUpOwner, uniqueEmail, type Owner } from '../helpers/app.js';
import { useApp } from '../helpers/fixture.js';
import { inviteMember, tokenFromMail } from '../helpers/members.js';
import type { Client, Response } from '../helpers/client.js';
import { PATIENCE_MS } from '../helpers/patience.js';

const { app, smtp } = useApp(test, { env: { MAIL_FROM: 'Quoting Tests <quotes@example.com>' }, smtp: true });

const NEW_PASSWORD = 'brand new password 42';

function sessionCookie(res: Response): string | undefined {
  return res.headers.getSetCookie().find((c) => c.startsWith('quoting_session='));
}

/** Invites `email` as the owner and returns the invite and the token from the mail. */
async function invite(owner: Owner, email = uniqueEmail('invitee'), role?: string): Promise<{ email: string; token: string; res: Response }> {
  const res = await owner.client.post('/api/v1/invites', role ? { email, role } : { email });
  if (res.status !== 201) throw new Error(`invite failed: ${res.status} ${res.text}`);
  return { email, token: tokenFromMail(await smtp.waitFor(email)), res };
}

// --- invites ------------------------------------------------------------------------------

test('an owner invites: 201 data.invite, and the invitee receives a mail with the token and the link', async (t) => {
  const owner = await signUpOwner(app, 'Invite Works');
  const email = uniqueEmail('invitee');
  const res = await owner.client.post('/api/v1/invites', { email: email.toUpperCase() });
  t.is(res.status, 201);
  t.is(res.body.version, 'v1');
  const inv = res.body.data.invite;
  t.is(inv.email, email);
  t.is(inv.role, 'member', 'role defaults to member');
  t.is(inv.workspace_id, owner.workspace.id);
  t.is(inv.accepted_at, null);
  t.is(typeof inv.id, 'number');
  t.true(Math.abs(new Date(inv.expires_at).getTime() - (Date.now() + 7 * 86_400_000)) < 60_000, 'invite lives 7 days');
  t.false('token' in inv);
  t.false('token_hash' in inv);

  const mail = await smtp.waitFor(email);
  t.deepEqual(mail.to, [email]);
  t.is(mail.from, 'quotes@example.com');
  const token = tokenFromMail(mail);
  t.true(mail.text.includes(`${app.url}/invite/${token}`), 'the mail carries the accept link');
  t.regex(mail.text, /Subject: You are invited to Invite Works/);
  t.regex(mail.text, /Olive Owner/, 'names the inviter');
  t.false(res.text.includes(token), 'the token is only in the mail');
  const row = await app.db('invites').where({ id: inv.id }).first();
  t.not(row.token_hash, token, 'only a hash of the token is stored');
  t.false(JSON.stringify(row).includes(token));
});

test('accepting an invite: 201 data.user, cookie set, the new user is a member of the owner workspace', async (t) => {
  const owner = await signUpOwner(app, 'Accept Co');
  const { email, token } = await invite(owner);
  const client = app.client();
  const res = await client.post('/api/v1/invites/accept', { token, name: 'Nina New', password: NEW_PASSWORD });
  t.is(res.status, 201);
  t.is(res.body.data.user.email, email);
  t.is(res.body.data.user.name, 'Nina New');
  t.is(res.body.data.user.role, 'member');
  t.is(res.body.data.user.workspace_id, owner.workspace.id);
  t.false('password_hash' in res.body.data.user);
  const cookie = sessionCookie(res)!;
  t.truthy(cookie);
  t.regex(cookie, /httponly/i);

  const me = await client.get('/api/v1/auth/me');
  t.is(me.status, 200);
  t.is(me.body.data.role, 'member');
  t.is(me.body.data.user.email, email);
  t.is(me.body.data.workspace.id, owner.workspace.id);
  const ws = await client.get('/api/v1/workspace');
  t.is(ws.status, 200);
  t.is(ws.body.data.workspace.id, owner.workspace.id);

  const row = await app.db('invites').where({ email }).first();
  t.truthy(row.accepted_at, 'the invite is spent');

  // The chosen password works for login.
  const login = await app.client().post('/api/v1/auth/login', { email, password: NEW_PASSWORD });
  t.is(login.status, 200);
  t.is(login.body.data.workspace.id, owner.workspace.id);
});

test('an invite with role owner makes a second owner', async (t) => {
  const owner = await signUpOwner(app, 'Two Owners');
  const { token } = await invite(owner, undefined, 'owner');
  const client = app.client();
  const res = await client.post('/api/v1/invites/accept', { token, name: 'Co Owner', password: NEW_PASSWORD });
  t.is(res.status, 201);
  t.is((await client.get('/api/v1/auth/me')).body.data.role, 'owner');
  t.is((await client.post('/api/v1/workspace/keys/rotate')).status, 200, 'the second owner may do owner-only things');
});

test('reusing an invite token is 410 and creates nothing', async (t) => {
  const owner = await signUpOwner(app, 'Reuse Co');
  const { token } = await invite(owner);
  t.is((await app.client().post('/api/v1/invites/accept', { token, name: 'First', password: NEW_PASSWORD })).status, 201);
  const again = await app.client().post('/api/v1/invites/accept', { token, name: 'Second', password: NEW_PASSWORD });
  t.is(again.status, 410);
  t.is(typeof again.body.error, 'string');
  t.is(sessionCookie(again), undefined);
  t.is(await app.db('users').where({ name: 'Second' }).first(), undefined);
});

test('an expired invite is 410', async (t) => {
  const owner = await signUpOwner(app, 'Expired Co');
  const { email, token } = await invite(owner);
  await app.db('invites').where({ email }).update({ expires_at: new Date(Date.now() - 1000) });
  const res = await app.client().post('/api/v1/invites/accept', { token, name: 'Late', password: NEW_PASSWORD });
  t.is(res.status, 410);
  t.regex(res.body.error, /expired/i);
  t.is(sessionCookie(res), undefined);
  t.is(await app.db('users').where({ email }).first(), undefined);
});

test('an unknown invite token is 404', async (t) => {
  const res = await app.client().post('/api/v1/invites/accept', { token: 'no-such-token-aaaaaaaaaaaaaaaaaaaaaaaa', name: 'Who', password: NEW_PASSWORD });
  t.is(res.status, 404);
  t.is(typeof res.body.error, 'string');
  t.is(sessionCookie(res), undefined);
});

test('accept with a missing token is 422 naming token; a short password is 422 and the invite stays usable', async (t) => {
  const noToken = await app.client().post('/api/v1/invites/accept', { name: 'X', password: NEW_PASSWORD });
  t.is(noToken.status, 422);
  t.regex(noToken.body.error, /token/);
  const owner = await signUpOwner(app, 'Short Pw');
  const { token } = await invite(owner);
  const short = await app.client().post('/api/v1/invites/accept', { token, name: 'Shorty', password: 'short' });
  t.is(short.status, 422);
  t.regex(short.body.error, /password/);
  const noName = await app.client().post('/api/v1/invites/accept', { token, password: NEW_PASSWORD });
  t.is(noName.status, 422);
  t.regex(noName.body.error, /name/);
  t.is((await app.client().post('/api/v1/invites/accept', { token, name: 'Fine', password: NEW_PASSWORD })).status, 201);
});

test('inviting the email of an existing user is 409 (any case, any workspace) and sends no mail', async (t) => {
  const owner = await signUpOwner(app, 'Taken Co');
  const other = await signUpOwner(app, 'Other Co');
  for (const email of [other.email, other.email.toUpperCase(), owner.email]) {
    const res = await owner.client.post('/api/v1/invites', { email });
    t.is(res.status, 409, email);
    t.regex(res.body.error, /already taken/i);
  }
  t.false(smtp.mails.some((m) => m.to.includes(other.email) || m.to.includes(owner.email)));
  t.is(await app.db('invites').where({ email: other.email }).first(), undefined);
});

test('accepting an invite whose email was taken meanwhile is 409', async (t) => {
  const owner = await signUpOwner(app, 'Race Co');
  const { email, token } = await invite(owner);
  t.is((await app.client().post('/api/v1/auth/signup', { email, password: NEW_PASSWORD, name: 'Quick' })).status, 201);
  const res = await app.client().post('/api/v1/invites/accept', { token, name: 'Slow', password: NEW_PASSWORD });
  t.is(res.status, 409);
  t.regex(res.body.error, /already taken/i);
});

test('POST /invites: 422 naming email or role for bad input; 401 without a session', async (t) => {
  const owner = await signUpOwner(app, 'Bad Input Co');
  const noEmail = await owner.client.post('/api/v1/invites', { role: 'member' });
  t.is(noEmail.status, 422);
  t.regex(noEmail.body.error, /email/);
  const badEmail = await owner.client.post('/api/v1/invites', { email: 'nope' });
  t.is(badEmail.status, 422);
  t.regex(badEmail.body.error, /email/);
  const badRole = await owner.client.post('/api/v1/invites', { email: uniqueEmail(), role: 'admin' });
  t.is(badRole.status, 422);
  t.regex(badRole.body.error, /role/);
  t.is((await app.client().post('/api/v1/invites', { email: uniqueEmail() })).status, 401);
});

test('a member calling POST /invites is 403 and nothing is mailed', async (t) => {
  const owner = await signUpOwner(app, 'Member Co');
  const member = await inviteMember(app, smtp, owner);
  const email = uniqueEmail('by-member');
  const res = await member.client.post('/api/v1/invites', { email });
  t.is(res.status, 403);
  t.is(typeof res.body.error, 'string');
  t.false(smtp.mails.some((m) => m.to.includes(email)));
  t.is(await app.db('invites').where({ email }).first(), undefined);
});

test('a user without a workspace calling POST /invites is 409 "No workspace yet"', async (t) => {
  const client = app.client();
  await client.post('/api/v1/auth/signup', { email: uniqueEmail(), password: NEW_PASSWORD, name: 'Lonely' });
  const res = await client.post('/api/v1/invites', { email: uniqueEmail() });
  t.is(res.status, 409);
  t.regex(res.body.error, /No workspace yet/);
});

// --- password reset -----------------------------------------------------------------------

/** A user with a workspace and two signed-in clients. */
async function userWithTwoSessions(): Promise<{ owner: Owner; second: Client }> {
  const owner = await signUpOwner(app, 'Reset Co');
  const second = app.client();
  await second.post('/api/v1/auth/login', { email: owner.email, password: owner.password });
  return { owner, second };
}

async function requestReset(email: string): Promise<string> {
  const res = await app.client().post('/api/v1/auth/password-reset', { email });
  if (res.status !== 200) throw new Error(`reset failed: ${res.status} ${res.text}`);
  return tokenFromMail(await smtp.waitFor(email));
}

test('password reset answers the same 200 for a known and an unknown email; only the known one gets a mail', async (t) => {
  const owner = await signUpOwner(app, 'Enum Co');
  const unknown = uniqueEmail('ghost');
  const known = await app.client().post('/api/v1/auth/password-reset', { email: owner.email.toUpperCase() });
  const ghost = await app.client().post('/api/v1/auth/password-reset', { email: unknown });
  t.is(known.status, 200);
  t.is(ghost.status, 200);
  t.deepEqual(known.body, ghost.body);
  t.deepEqual(known.body, { version: 'v1', data: {} });
  const mail = await smtp.waitFor(owner.email);
  const token = tokenFromMail(mail);
  t.true(mail.text.includes(`${app.url}/reset/${token}`));
  t.regex(mail.text, /Subject: Reset your Quoting password/);
  t.false(smtp.mails.some((m) => m.to.includes(unknown)), 'no mail for an unknown email');
  t.false(known.text.includes(token));
  const row = await app.db('password_resets').where({ user_id: owner.user.id }).first();
  t.not(row.token_hash, token);
  t.true(Math.abs(new Date(row.expires_at).getTime() - (Date.now() + 3_600_000)) < 60_000);
});

test('password reset with a missing or invalid email is 422 naming email', async (t) => {
  const res = await app.client().post('/api/v1/auth/password-reset', {});
  t.is(res.status, 422);
  t.regex(res.body.error, /email/);
  const bad = await app.client().post('/api/v1/auth/password-reset', { email: 'x' });
  t.is(bad.status, 422);
  t.regex(bad.body.error, /email/);
});

test('confirming a reset: 200; the new password logs in, the old one does not; every earlier session is revoked', async (t) => {
  const { owner, second } = await userWithTwoSessions();
  t.is((await owner.client.get('/api/v1/auth/me')).status, 200);
  t.is((await second.get('/api/v1/auth/me')).status, 200);
  const token = await requestReset(owner.email);
  const res = await app.client().post('/api/v1/auth/password-reset/confirm', { token, password: NEW_PASSWORD });
  t.is(res.status, 200);
  t.deepEqual(res.body, { version: 'v1', data: {} });

  t.is((await owner.client.get('/api/v1/auth/me')).status, 401, 'the first old session is revoked');
  t.is((await second.get('/api/v1/auth/me')).status, 401, 'the second old session is revoked');
  t.is(await app.db('sessions').where({ user_id: owner.user.id }).first(), undefined);

  const oldLogin = await app.client().post('/api/v1/auth/login', { email: owner.email, password: owner.password });
  t.is(oldLogin.status, 401);
  const fresh = app.client();
  const newLogin = await fresh.post('/api/v1/auth/login', { email: owner.email, password: NEW_PASSWORD });
  t.is(newLogin.status, 200);
  t.is((await fresh.get('/api/v1/auth/me')).status, 200);
  t.truthy((await app.db('password_resets').where({ user_id: owner.user.id }).first()).used_at);
});

test('reusing a reset token is 410; the second password is not set', async (t) => {
  const owner = await signUpOwner(app, 'Reuse Reset');
  const token = await requestReset(owner.email);
  t.is((await app.client().post('/api/v1/auth/password-reset/confirm', { token, password: NEW_PASSWORD })).status, 200);
  const again = await app.client().post('/api/v1/auth/password-reset/confirm', { token, password: 'another password 99' });
  t.is(again.status, 410);
  t.regex(again.body.error, /already been used/);
  t.is((await app.client().post('/api/v1/auth/login', { email: owner.email, password: 'another password 99' })).status, 401);
  t.is((await app.client().post('/api/v1/auth/login', { email: owner.email, password: NEW_PASSWORD })).status, 200);
});

test('an expired reset token is 410 and leaves the password and sessions alone', async (t) => {
  const owner = await signUpOwner(app, 'Expired Reset');
  const token = await requestReset(owner.email);
  await app.db('password_resets').where({ user_id: owner.user.id }).update({ expires_at: new Date(Date.now() - 1000) });
  const res = await app.client().post('/api/v1/auth/password-reset/confirm', { token, password: NEW_PASSWORD });
  t.is(res.status, 410);
  t.regex(res.body.error, /expired/);
  t.is((await owner.client.get('/api/v1/auth/me')).status, 200);
  t.is((await app.client().post('/api/v1/auth/login', { email: owner.email, password: owner.password })).status, 200);
});

test('confirm with an unknown token is 404; a short password is 422 and the token stays usable', async (t) => {
  const unknown = await app.client().post('/api/v1/auth/password-reset/confirm', { token: 'unknown-token-aaaaaaaaaaaaaaaaaaaaa', password: NEW_PASSWORD });
  t.is(unknown.status, 404);
  const owner = await signUpOwner(app, 'Short Reset');
  const token = await requestReset(owner.email);
  const short = await app.client().post('/api/v1/auth/password-reset/confirm', { token, password: 'short' });
  t.is(short.status, 422);
  t.regex(short.body.error, /password/);
  const missing = await app.client().post('/api/v1/auth/password-reset/confirm', { password: NEW_PASSWORD });
  t.is(missing.status, 422);
  t.regex(missing.body.error, /token/);
  t.is((await app.client().post('/api/v1/auth/password-reset/confirm', { token, password: NEW_PASSWORD })).status, 200);
});

// --- mail unset ---------------------------------------------------------------------------

test('without SMTP_URL, invites and password reset answer 503 and store nothing', async (t) => {
  const noMail = await startApp();
  t.teardown(() => noMail.close());
  const owner = await signUpOwner(noMail, 'No Mail Co');
  const email = uniqueEmail('unmailed');
  const inv = await owner.client.post('/api/v1/invites', { email });
  t.is(inv.status, 503);
  t.regex(inv.body.error, /mail/i);
  t.is(await noMail.db('invites').where({ email }).first(), undefined);
  for (const target of [owner.email, uniqueEmail('ghost')]) {
    const reset = await noMail.client().post('/api/v1/auth/password-reset', { email: target });
    t.is(reset.status, 503);
    t.regex(reset.body.error, /mail/i);
  }
  t.is(await noMail.db('password_resets').where({ user_id: owner.user.id }).first(), undefined);
});

test('when the mail server refuses the connection, an invite is 502 and is not stored', async (t) => {
  const broken = await startApp({ SMTP_URL: 'smtp://127.0.0.1:1' });
  t.teardown(() => broken.close());
  const owner = await signUpOwner(broken, 'Broken Mail');
  const email = uniqueEmail('lost');
  const res = await owner.client.post('/api/v1/invites', { email });
  t.is(res.status, 502);
  t.is(typeof res.body.error, 'string');
  t.is(await broken.db('invites').where({ email }).first(), undefined);
});

test('when the mail server is down, password reset still answers the same 200 for a known and an unknown email', async (t) => {
  const broken = await startApp({ SMTP_URL: 'smtp://127.0.0.1:1' });
  t.teardown(() => broken.close());
  const owner = await signUpOwner(broken, 'Broken Reset');
  const known = await broken.client().post('/api/v1/auth/password-reset', { email: owner.email });
  const unknown = await broken.client().post('/api/v1/auth/password-reset', { email: uniqueEmail('ghost') });
  t.is(known.status, 200);
  t.is(unknown.status, 200);
  t.deepEqual(known.body, unknown.body);
});

/** Waits until `count` mails have reached `to` and returns the last of them. */
async function nthMail(to: string, count: number) {
  // Reset mails are sent in the background: wait for them, however slow the machine.
  for (const deadline = Date.now() + PATIENCE_MS; Date.now() < deadline; ) {
    const mails = smtp.mails.filter((m) => m.to.includes(to));
    if (mails.length >= count) return mails[count - 1];
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`fewer than ${count} mails reached ${to}`);
}

test('a successful reset spends every other outstanding reset link of the user', async (t) => {
  const owner = await signUpOwner(app, 'Two Links');
  const first = await requestReset(owner.email);
  t.is((await app.client().post('/api/v1/auth/password-reset', { email: owner.email })).status, 200);
  const second = tokenFromMail(await nthMail(owner.email, 2));
  t.not(first, second);
  t.is((await app.client().post('/api/v1/auth/password-reset/confirm', { token: second, password: NEW_PASSWORD })).status, 200);
  const older = await app.client().post('/api/v1/auth/password-reset/confirm', { token: first, password: 'attacker password 1' });
  t.is(older.status, 410);
  t.is((await app.client().post('/api/v1/auth/login', { email: owner.email, password: 'attacker password 1' })).status, 401);
  t.is((await app.client().post('/api/v1/auth/login', { email: owner.email, password: NEW_PASSWORD })).status, 200);
});

test('a line break in the workspace name stays out of the mail headers: the subject is one line', async (t) => {
  // The API refuses such a name (422); one stored before that rule, or by hand, still mails safely.
  const refused = await app.client().post('/api/v1/auth/signup', { email: uniqueEmail('lb'), password: 'correct horse battery', name: 'Lee', workspace_name: 'Line\nBreak Co' });
  t.is(refused.status, 422);
  t.regex(refused.body.error, /^workspace_name: /);
  const owner = await signUpOwner(app, 'Line Break Co');
  await app.db('workspaces').where({ id: owner.workspace.id }).update({ name: 'Line\nBreak Co' });
  app.sessionCache.evict('all');
  const { email, token } = await invite(owner);
  const mail = await smtp.waitFor(email);
  t.regex(mail.text, /^Subject: You are invited to Line Break Co on Quoting\r?$/m);
  t.true(mail.text.includes(`code: ${token}`));
  t.notRegex(mail.text, /^Break Co on Quoting/m);
});
