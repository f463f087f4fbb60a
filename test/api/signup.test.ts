import test from 'ava';
import { signUpOwner, uniqueEmail } from '../helpers/app.js';
import { useApp } from '../helpers/fixture.js';

const { app } = useApp(test);

test('signup with a workspace answers 201 with user, workspace and keys, and sets the session cookie', async (t) => {
  const client = app.client();
  const email = uniqueEmail();
  const res = await client.post('/api/v1/auth/signup', { email: email.toUpperCase(), password: 'long enough pw', name: 'Ann', workspace_name: 'Ann & Co' });
  t.is(res.status, 201);
  t.is(res.body.version, 'v1');
  t.is(res.body.data.user.email, email);
  t.is(res.body.data.user.role, 'owner');
  t.is(res.body.data.workspace.slug, 'ann-co');
  t.regex(res.body.data.keys.public_key, /^pk_live_[A-Za-z0-9_-]{32,}$/);
  t.regex(res.body.data.keys.secret_key, /^sk_live_[A-Za-z0-9_-]{32,}$/);
  t.false('password_hash' in res.body.data.user);
  t.false('secret_key_hash' in res.body.data.workspace);
  const cookie = res.headers.getSetCookie().find((c) => c.startsWith('quoting_session='))!;
  t.truthy(cookie);
  t.regex(cookie, /httponly/i);
  t.regex(cookie, /samesite=lax/i);
  t.notRegex(cookie, /secure/i);
  const expires = new Date(/expires=([^;]+)/i.exec(cookie)![1]).getTime();
  t.true(Math.abs(expires - (Date.now() + 14 * 86_400_000)) < 60_000, 'cookie lives 14 days');
  const me = await client.get('/api/v1/auth/me');
  t.is(me.status, 200);
  t.is(me.body.data.user.email, email);
  t.is(me.body.data.role, 'owner');
  t.is(me.body.data.workspace.id, res.body.data.workspace.id);
});

test('secrets are stored only as hashes', async (t) => {
  const owner = await signUpOwner(app);
  const row = await app.db('workspaces').where({ id: owner.workspace.id }).first();
  t.not(row.secret_key_hash, owner.keys.secret_key);
  t.false(JSON.stringify(row).includes(owner.keys.secret_key));
  const sessions = await app.db('sessions').where({ user_id: owner.user.id }).pluck('token_hash');
  t.false(sessions.includes(owner.client.cookies.get('quoting_session')));
  const user = await app.db('users').where({ id: owner.user.id }).first();
  t.false(user.password_hash.includes(owner.password));
});

test('concurrent signups naming their workspaces alike all succeed, each with its own slug', async (t) => {
  const name = `Same Name ${process.pid}`;
  const answers = await Promise.all(
    Array.from({ length: 8 }, () => app.client().post('/api/v1/auth/signup', { email: uniqueEmail('alike'), password: 'long enough pw', name: 'A', workspace_name: name })),
  );
  t.deepEqual(answers.map((res) => res.status), Array(8).fill(201), answers.map((res) => res.text).join('\n'));
  const slugs = answers.map((res) => res.body.data.workspace.slug as string);
  t.is(new Set(slugs).size, 8);
});
