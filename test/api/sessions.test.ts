import test from 'ava';
import { startApp, signUpOwner, uniqueEmail } from '../helpers/app.js';
import { useApp } from '../helpers/fixture.js';
import type { Client, Response } from '../helpers/client.js';
import { createSession, resolveSession } from '../../src/auth/sessions.js';
import { SessionCache } from '../../src/auth/session-cache.js';
import { sha256 } from '../../src/crypto.js';

const PASSWORD = 'a good long password';

const { app } = useApp(test);

function sessionCookie(res: Response): string | undefined {
  return res.headers.getSetCookie().find((c) => c.startsWith('quoting_session='));
}

/** Signs up a user without a workspace; the client holds the session. */
async function signUpUser(name = 'Una User'): Promise<{ client: Client; email: string; user: any }> {
  const client = app.client();
  const email = uniqueEmail('user');
  const res = await client.post('/api/v1/auth/signup', { email, password: PASSWORD, name });
  if (res.status !== 201) throw new Error(`signup failed: ${res.status} ${res.text}`);
  return { client, email, user: res.body.data.user };
}

// --- signup -------------------------------------------------------------------------------

test('signup without workspace_name answers 201 with the user only, no workspace and no keys', async (t) => {
  const client = app.client();
  const email = uniqueEmail();
  const res = await client.post('/api/v1/auth/signup', { email, password: PASSWORD, name: 'Solo' });
  t.is(res.status, 201);
  t.is(res.body.data.user.email, email);
  t.is(res.body.data.user.workspace_id, null);
  t.is(res.body.data.user.role, null);
  t.false('workspace' in res.body.data && res.body.data.workspace != null);
  t.false('keys' in res.body.data && res.body.data.keys != null);
  t.false('password_hash' in res.body.data.user);
  t.truthy(sessionCookie(res));
  const me = await client.get('/api/v1/auth/me');
  t.is(me.status, 200);
  t.is(me.body.data.workspace, null);
  t.is(me.body.data.role, null);
});

test('signup with a password under 10 characters is 422 naming password', async (t) => {
  const res = await app.client().post('/api/v1/auth/signup', { email: uniqueEmail(), password: '123456789', name: 'Shorty' });
  t.is(res.status, 422);
  t.regex(res.body.error, /password/);
  t.regex(res.body.error, /10/);
  t.is(sessionCookie(res), undefined);
});

test('a password of exactly 10 characters is accepted', async (t) => {
  const res = await app.client().post('/api/v1/auth/signup', { email: uniqueEmail(), password: '1234567890', name: 'Tenner' });
  t.is(res.status, 201);
});

test('signup with a missing or invalid email is 422 naming email', async (t) => {
  const missing = await app.client().post('/api/v1/auth/signup', { password: PASSWORD, name: 'No Mail' });
  t.is(missing.status, 422);
  t.regex(missing.body.error, /email/);
  const invalid = await app.client().post('/api/v1/auth/signup', { email: 'not-an-email', password: PASSWORD, name: 'Bad Mail' });
  t.is(invalid.status, 422);
  t.regex(invalid.body.error, /email/);
});

test('signup with a missing name is 422 naming name', async (t) => {
  const res = await app.client().post('/api/v1/auth/signup', { email: uniqueEmail(), password: PASSWORD });
  t.is(res.status, 422);
  t.regex(res.body.error, /name/);
});

test('signup with an email already taken is 409, whatever its case', async (t) => {
  const { email } = await signUpUser();
  for (const variant of [email, email.toUpperCase(), `  ${email.replace(/^u/, 'U')}  `]) {
    const res = await app.client().post('/api/v1/auth/signup', { email: variant, password: PASSWORD, name: 'Again' });
    t.is(res.status, 409, variant);
    t.regex(res.body.error, /already taken/i);
    t.is(sessionCookie(res), undefined);
  }
  t.is((await app.db('users').where({ email }).count<{ count: string | number }[]>('* as count'))[0].count.toString(), '1');
});

test('signup with a workspace that fails (email taken) creates no workspace', async (t) => {
  const { email } = await signUpUser();
  const name = `Ghost ${Date.now()}`;
  const res = await app.client().post('/api/v1/auth/signup', { email, password: PASSWORD, name: 'Ghost', workspace_name: name });
  t.is(res.status, 409);
  t.is(await app.db('workspaces').where({ name }).first(), undefined);
});

test('a malformed JSON body is read as empty: 422 naming the first missing field', async (t) => {
  const res = await app.client().request('POST', '/api/v1/auth/login', { raw: '{"email": "x@example.com",', contentType: 'application/json' });
  t.is(res.status, 422);
  t.regex(res.body.error, /email/);
});

// --- login --------------------------------------------------------------------------------

test('login answers 200 with data.user and data.workspace, and sets an HttpOnly SameSite=Lax cookie', async (t) => {
  const owner = await signUpOwner(app, 'Login Co');
  const client = app.client();
  const res = await client.post('/api/v1/auth/login', { email: owner.email.toUpperCase(), password: owner.password });
  t.is(res.status, 200);
  t.is(res.body.version, 'v1');
  t.is(res.body.data.user.id, owner.user.id);
  t.is(res.body.data.user.email, owner.email);
  t.is(res.body.data.user.role, 'owner');
  t.false('password_hash' in res.body.data.user);
  t.is(res.body.data.workspace.id, owner.workspace.id);
  t.is(res.body.data.workspace.slug, owner.workspace.slug);
  t.false('secret_key_hash' in res.body.data.workspace);
  t.false(res.text.includes(owner.keys.secret_key));
  const cookie = sessionCookie(res)!;
  t.truthy(cookie);
  t.regex(cookie, /httponly/i);
  t.regex(cookie, /samesite=lax/i);
  t.regex(cookie, /path=\//i);
  t.notRegex(cookie, /;\s*secure/i);
  const expires = new Date(/expires=([^;]+)/i.exec(cookie)![1]).getTime();
  t.true(Math.abs(expires - (Date.now() + 14 * 86_400_000)) < 60_000, 'cookie lives 14 days');
  const row = await app.db('sessions').where({ user_id: owner.user.id }).orderBy('id', 'desc').first();
  t.true(Math.abs(new Date(row.expires_at).getTime() - (Date.now() + 14 * 86_400_000)) < 60_000, 'session row lives 14 days');
  const me = await client.get('/api/v1/auth/me');
  t.is(me.status, 200);
  t.is(me.body.data.user.id, owner.user.id);
  t.is(me.body.data.role, 'owner');
  t.is(me.body.data.workspace.id, owner.workspace.id);
});

test('login of a user without a workspace answers data.workspace null', async (t) => {
  const { email } = await signUpUser();
  const res = await app.client().post('/api/v1/auth/login', { email, password: PASSWORD });
  t.is(res.status, 200);
  t.is(res.body.data.user.email, email);
  t.true('workspace' in res.body.data);
  t.is(res.body.data.workspace, null);
});

test('each login is a new session; two clients of one user are signed in side by side', async (t) => {
  const { email, client: first } = await signUpUser();
  const second = app.client();
  t.is((await second.post('/api/v1/auth/login', { email, password: PASSWORD })).status, 200);
  t.not(first.cookies.get('quoting_session'), second.cookies.get('quoting_session'));
  t.is((await first.get('/api/v1/auth/me')).status, 200);
  t.is((await second.get('/api/v1/auth/me')).status, 200);
});

test('login with an unknown email and with a wrong password answer the same 401', async (t) => {
  const { email } = await signUpUser();
  const wrong = await app.client().post('/api/v1/auth/login', { email, password: 'not the password' });
  const unknown = await app.client().post('/api/v1/auth/login', { email: uniqueEmail('nobody'), password: PASSWORD });
  t.is(wrong.status, 401);
  t.is(unknown.status, 401);
  t.is(wrong.body.error, unknown.body.error);
  t.deepEqual(Object.keys(wrong.body), ['error']);
  t.deepEqual(Object.keys(unknown.body), ['error']);
  t.is(sessionCookie(wrong), undefined);
  t.is(sessionCookie(unknown), undefined);
});

test('login with a missing or invalid email is 422 naming email; a missing password is 422 naming password', async (t) => {
  const missing = await app.client().post('/api/v1/auth/login', { password: PASSWORD });
  t.is(missing.status, 422);
  t.regex(missing.body.error, /email/);
  const invalid = await app.client().post('/api/v1/auth/login', { email: 'nope', password: PASSWORD });
  t.is(invalid.status, 422);
  t.regex(invalid.body.error, /email/);
  const noPassword = await app.client().post('/api/v1/auth/login', { email: uniqueEmail() });
  t.is(noPassword.status, 422);
  t.regex(noPassword.body.error, /password/);
});

test('login accepts a form-encoded body', async (t) => {
  const { email } = await signUpUser();
  const res = await app.client().request('POST', '/api/v1/auth/login', { form: { email, password: PASSWORD } });
  t.is(res.status, 200);
  t.is(res.body.data.user.email, email);
});

// --- sessions, logout ---------------------------------------------------------------------

test('GET /auth/me without a cookie is 401', async (t) => {
  const res = await app.client().get('/api/v1/auth/me');
  t.is(res.status, 401);
  t.is(typeof res.body.error, 'string');
});

test('GET /auth/me with a garbage or overlong cookie is 401', async (t) => {
  for (const value of ['garbage', 'x'.repeat(500), '%00%ff', '']) {
    const res = await app.client().get('/api/v1/auth/me', { headers: { cookie: `quoting_session=${value}` } });
    t.is(res.status, 401, value.slice(0, 20));
  }
});

test('the session hash stored in the database is not a usable cookie', async (t) => {
  const { client } = await signUpUser();
  const me = await client.get('/api/v1/auth/me');
  const row = await app.db('sessions').where({ user_id: me.body.data.user.id }).first();
  const res = await app.client().get('/api/v1/auth/me', { headers: { cookie: `quoting_session=${row.token_hash}` } });
  t.is(res.status, 401);
});

test('logout answers 200, deletes the session row and clears the cookie; /auth/me is then 401', async (t) => {
  const { client, user } = await signUpUser();
  const token = client.cookies.get('quoting_session')!;
  t.is(await app.db('sessions').where({ user_id: user.id }).count<{ c: number }[]>('* as c').then((r) => Number(r[0].c)), 1);
  const res = await client.post('/api/v1/auth/logout');
  t.is(res.status, 200);
  t.deepEqual(res.body, { version: 'v1', data: {} });
  const cookie = sessionCookie(res)!;
  t.truthy(cookie, 'logout sends a Set-Cookie for quoting_session');
  t.regex(cookie, /^quoting_session=;/);
  t.regex(cookie, /expires=thu, 01 jan 1970/i);
  t.false(client.cookies.has('quoting_session'));
  t.is(await app.db('sessions').where({ user_id: user.id }).first(), undefined);
  // The old token, replayed, no longer works.
  const replay = await app.client().get('/api/v1/auth/me', { headers: { cookie: `quoting_session=${token}` } });
  t.is(replay.status, 401);
  t.is((await client.get('/api/v1/auth/me')).status, 401);
  t.is((await client.post('/api/v1/auth/logout')).status, 401);
});

test('logout deletes only its own session', async (t) => {
  const { client, email } = await signUpUser();
  const other = app.client();
  await other.post('/api/v1/auth/login', { email, password: PASSWORD });
  t.is((await client.post('/api/v1/auth/logout')).status, 200);
  t.is((await client.get('/api/v1/auth/me')).status, 401);
  t.is((await other.get('/api/v1/auth/me')).status, 200);
});

test('an expired session is 401', async (t) => {
  const { client, user } = await signUpUser();
  t.is((await client.get('/api/v1/auth/me')).status, 200);
  await app.db('sessions').where({ user_id: user.id }).update({ expires_at: new Date(Date.now() - 1000) });
  app.sessionCache.evict({ userId: user.id });
  const res = await client.get('/api/v1/auth/me');
  t.is(res.status, 401);
  t.is((await client.get('/api/v1/workspace')).status, 401);
});

// --- POST /workspace, GET /workspace --------------------------------------------------------

test('a user without a workspace: GET /workspace is 409 "No workspace yet"; POST /workspace creates it (201, keys once)', async (t) => {
  const { client, user } = await signUpUser();
  const before = await client.get('/api/v1/workspace');
  t.is(before.status, 409);
  t.regex(before.body.error, /No workspace yet/);

  const name = `Beta Corp ${process.pid}${Date.now()}`;
  const res = await client.post('/api/v1/workspace', { name });
  t.is(res.status, 201);
  const { workspace, keys } = res.body.data;
  t.is(workspace.name, name);
  t.regex(workspace.slug, /^beta-corp-\d+$/);
  t.true(['active', 'trialing'].includes(workspace.status));
  t.regex(keys.public_key, /^pk_live_[A-Za-z0-9_-]{32,}$/);
  t.regex(keys.secret_key, /^sk_live_[A-Za-z0-9_-]{32,}$/);
  t.is(workspace.public_key, keys.public_key);
  t.false('secret_key_hash' in workspace);
  t.false('secret_key' in workspace);

  const me = await client.get('/api/v1/auth/me');
  t.is(me.body.data.role, 'owner');
  t.is(me.body.data.workspace.id, workspace.id);
  t.is(me.body.data.user.workspace_id, workspace.id);

  const got = await client.get('/api/v1/workspace');
  t.is(got.status, 200);
  t.is(got.body.data.workspace.id, workspace.id);
  for (const field of ['id', 'name', 'slug', 'status', 'trial_ends_at', 'public_key']) t.true(field in got.body.data.workspace, field);
  t.false(got.text.includes(keys.secret_key), 'GET /workspace never shows the secret key');
  t.false(got.text.includes('secret'), 'no secret field of any kind');
  const row = await app.db('workspaces').where({ id: workspace.id }).first();
  t.false(got.text.includes(row.secret_key_hash));
  t.is((await app.db('users').where({ id: user.id }).first()).role, 'owner');
});

test('POST /workspace a second time is 409 and creates nothing', async (t) => {
  const owner = await signUpOwner(app, 'First Only');
  const name = `Second ${process.pid}${Date.now()}`;
  const res = await owner.client.post('/api/v1/workspace', { name });
  t.is(res.status, 409);
  t.regex(res.body.error, /already have a workspace/);
  t.is(await app.db('workspaces').where({ name }).first(), undefined);
  t.is((await owner.client.get('/api/v1/workspace')).body.data.workspace.id, owner.workspace.id);
});

test('POST /workspace with a taken slug is 409; with a free explicit slug it is used as given', async (t) => {
  const first = await signUpUser();
  const slug = `taken-${process.pid}-${Date.now()}`;
  const made = await first.client.post('/api/v1/workspace', { name: 'Anything', slug });
  t.is(made.status, 201);
  t.is(made.body.data.workspace.slug, slug);
  const second = await signUpUser();
  const res = await second.client.post('/api/v1/workspace', { name: 'Other', slug: slug.toUpperCase() });
  t.is(res.status, 409);
  t.regex(res.body.error, /slug/i);
  t.is((await second.client.get('/api/v1/workspace')).status, 409, 'the user still has no workspace');
});

test('POST /workspace with a bad slug is 422 naming slug; a missing name is 422 naming name', async (t) => {
  const { client } = await signUpUser();
  for (const slug of ['-leading', 'trailing-', 'has space', 'ümlaut', 'a'.repeat(49), '']) {
    const res = await client.post('/api/v1/workspace', { name: 'Fine', slug });
    t.is(res.status, 422, JSON.stringify(slug));
    t.regex(res.body.error, /slug/, JSON.stringify(slug));
  }
  const noName = await client.post('/api/v1/workspace', { slug: 'fine' });
  t.is(noName.status, 422);
  t.regex(noName.body.error, /name/);
  t.is((await client.get('/api/v1/workspace')).status, 409);
});

test('two workspaces with the same name get distinct generated slugs', async (t) => {
  const name = `Same Name ${process.pid}${Date.now()}`;
  const a = await signUpUser();
  const b = await signUpUser();
  const ra = await a.client.post('/api/v1/workspace', { name });
  const rb = await b.client.post('/api/v1/workspace', { name });
  t.is(ra.status, 201);
  t.is(rb.status, 201);
  t.not(ra.body.data.workspace.slug, rb.body.data.workspace.slug);
  t.is(rb.body.data.workspace.slug, `${ra.body.data.workspace.slug}-2`);
});

test('POST /workspace and GET /workspace without a session are 401', async (t) => {
  t.is((await app.client().post('/api/v1/workspace', { name: 'Anon' })).status, 401);
  t.is((await app.client().get('/api/v1/workspace')).status, 401);
});

// --- Secure cookie behind a proxy -----------------------------------------------------------

test('behind a trusted proxy (TRUST_PROXY=1) with X-Forwarded-Proto: https the session cookie is Secure', async (t) => {
  const proxied = await startApp({ TRUST_PROXY: '1' });
  t.teardown(() => proxied.close());
  const client = proxied.client();
  const email = uniqueEmail('proxy');
  const headers = { 'x-forwarded-proto': 'https' };
  const signup = await client.post('/api/v1/auth/signup', { email, password: PASSWORD, name: 'Proxy' }, { headers });
  t.is(signup.status, 201);
  t.regex(sessionCookie(signup)!, /;\s*secure/i);
  const login = await client.post('/api/v1/auth/login', { email, password: PASSWORD }, { headers });
  t.is(login.status, 200);
  t.regex(sessionCookie(login)!, /;\s*secure/i);
  t.is((await client.get('/api/v1/auth/me', { headers })).status, 200);
  const logout = await client.post('/api/v1/auth/logout', undefined, { headers });
  t.is(logout.status, 200);
  t.regex(sessionCookie(logout)!, /^quoting_session=;/);
  // Plain HTTP through the same trusted proxy: not Secure.
  const plain = await proxied.client().post('/api/v1/auth/login', { email, password: PASSWORD }, { headers: { 'x-forwarded-proto': 'http' } });
  t.is(plain.status, 200);
  t.notRegex(sessionCookie(plain)!, /;\s*secure/i);
});

test('without TRUST_PROXY, X-Forwarded-Proto: https is ignored: the cookie is not Secure', async (t) => {
  const { email } = await signUpUser();
  const res = await app.client().post('/api/v1/auth/login', { email, password: PASSWORD }, { headers: { 'x-forwarded-proto': 'https' } });
  t.is(res.status, 200);
  t.notRegex(sessionCookie(res)!, /;\s*secure/i);
});

test('a cached session still expires on time', async (t) => {
  const { client, user } = await signUpUser();
  // The session must be read (and cached) before it expires: on a slow machine the first read may
  // come too late, so the expiry moves further out until it does not.
  let expiresAt = 0;
  for (let margin = 1000; ; margin *= 2) {
    expiresAt = Date.now() + margin;
    await app.db('sessions').where({ user_id: user.id }).update({ expires_at: new Date(expiresAt) });
    app.sessionCache.evict({ userId: user.id });
    const first = await client.get('/api/v1/auth/me'); // cached now, with its expiry
    if (first.status === 200) break;
    t.is(first.status, 401);
    if (margin >= 16_000) return t.fail('the session expired before its first read, however far its expiry was set');
  }
  await new Promise((resolve) => setTimeout(resolve, expiresAt - Date.now() + 100));
  t.is((await client.get('/api/v1/auth/me')).status, 401);
});

test('a session past its expiry is refused while another transaction, begun before the expiry, is still open', async (t) => {
  // On the embedded database a read may run inside another session's open transaction, whose now() is its start.
  const { client, user } = await signUpUser();
  const expiresAt = Date.now() + 1500;
  await app.db('sessions').where({ user_id: user.id }).update({ expires_at: new Date(expiresAt) });
  app.sessionCache.evict({ userId: user.id });
  const open = await app.db.transaction();
  let answer: Promise<{ status: number }> | undefined;
  try {
    await open.raw('select now()');
    await new Promise((resolve) => setTimeout(resolve, expiresAt - Date.now() + 200));
    app.sessionCache.evict({ userId: user.id });
    // Not awaited while the transaction is open: refusing the session writes, and a write waits for it to end.
    answer = client.get('/api/v1/auth/me');
    await new Promise((resolve) => setTimeout(resolve, 1000));
  } finally {
    await open.rollback();
  }
  t.is((await answer!).status, 401);
});

// --- concurrent cache misses (one query for the misses of the moment) ---------------------------

test('concurrent requests with distinct sessions each get their own user; unknown tokens among them are 401', async (t) => {
  const users = await Promise.all([1, 2, 3, 4].map((n) => signUpUser(`Concurrent ${n}`)));
  const requests: { token: string; userId: number | null }[] = [];
  for (const { user } of users) {
    for (let i = 0; i < 6; i++) requests.push({ token: await createSession(app.db, user.id), userId: user.id });
  }
  for (let i = 0; i < 6; i++) requests.push({ token: `unknown-${i}-${'x'.repeat(40)}`, userId: null });
  // Twice: the first time every session is a cache miss (read together), the second time cached.
  for (const round of ['uncached', 'cached']) {
    const answers = await Promise.all(
      requests.map(({ token }) => app.client().get('/api/v1/auth/me', { headers: { cookie: `quoting_session=${token}` } })),
    );
    answers.forEach((res, i) => {
      const { userId } = requests[i];
      if (userId === null) t.is(res.status, 401, `${round}: unknown token ${i}`);
      else t.is(res.body?.data?.user?.id, userId, `${round}: session ${i} (status ${res.status})`);
    });
  }
});

test('a session logged out while other sessions are being read is refused at once', async (t) => {
  const { user } = await signUpUser('Busy User');
  const others = await Promise.all(Array.from({ length: 8 }, () => createSession(app.db, user.id)));
  let stop = false;
  const readers = others.map(async (token) => {
    while (!stop) await app.client().get('/api/v1/auth/me', { headers: { cookie: `quoting_session=${token}` } });
  });
  try {
    for (let i = 0; i < 5; i++) {
      const token = await createSession(app.db, user.id);
      const headers = { cookie: `quoting_session=${token}` };
      // The logout races a read of the same session that may still be in flight: whatever that read saw,
      // it must not be cached past the logout.
      const [inFlight, logout] = await Promise.all([app.client().get('/api/v1/auth/me', { headers }), app.client().post('/api/v1/auth/logout', {}, { headers })]);
      t.true([200, 401].includes(inFlight.status));
      t.is(logout.status, 200);
      t.is((await app.client().get('/api/v1/auth/me', { headers })).status, 401, `logout ${i}`);
    }
  } finally {
    stop = true;
    await Promise.all(readers);
  }
});

test('a session read while something was evicted is answered but not cached', async (t) => {
  const { user } = await signUpUser('Raced User');
  const token = await createSession(app.db, user.id);
  const cache = new SessionCache();
  const reading = resolveSession(app.db, token, cache); // its query is sent after this turn of the event loop
  cache.evict({ sessionId: 0 }); // any eviction while it is read: the read may predate the change
  t.is((await reading)?.user.id, user.id);
  t.is(cache.get(sha256(token)), undefined);
  // A read with nothing evicted meanwhile is cached.
  await resolveSession(app.db, token, cache);
  t.is(cache.get(sha256(token))?.user.id, user.id);
});
