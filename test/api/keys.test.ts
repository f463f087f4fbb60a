import test from 'ava';
import { signUpOwner, type Owner } from '../helpers/app.js';
import { useOwnerApp } from '../helpers/fixture.js';
import { inviteMember, type Member } from '../helpers/members.js';

const { app, smtp, owner: a } = useOwnerApp(test, { workspace: 'Alpha Keys', smtp: true });
let b: Owner;
test.before(async () => {
  b = await signUpOwner(app, 'Beta Keys');
});

const whoami = (authorization?: string, path = '/api/v1/auth/key') =>
  app.client().get(path, authorization === undefined ? {} : { headers: { authorization } });

test('Authorization: Public <pk> identifies the workspace: 200 key_type public, only public fields', async (t) => {
  const res = await whoami(`Public ${a.keys.public_key}`);
  t.is(res.status, 200);
  t.is(res.body.version, 'v1');
  t.is(res.body.data.key_type, 'public');
  t.deepEqual(res.body.data.workspace, { id: a.workspace.id, name: 'Alpha Keys', slug: a.workspace.slug, status: a.workspace.status });
  t.false(res.text.includes(a.keys.secret_key));
});

test('Authorization: Bearer <sk> identifies the workspace: 200 key_type secret', async (t) => {
  const res = await whoami(`Bearer ${a.keys.secret_key}`);
  t.is(res.status, 200);
  t.is(res.body.data.key_type, 'secret');
  t.is(res.body.data.workspace.id, a.workspace.id);
  t.false(res.text.includes(a.keys.secret_key));
});

test('the scheme name is case-insensitive', async (t) => {
  t.is((await whoami(`public ${a.keys.public_key}`)).body.data?.key_type, 'public');
  t.is((await whoami(`BEARER ${a.keys.secret_key}`)).body.data?.key_type, 'secret');
});

test('a key of workspace A identifies A, and one of B identifies B', async (t) => {
  for (const [owner, other] of [[a, b], [b, a]] as const) {
    for (const header of [`Public ${owner.keys.public_key}`, `Bearer ${owner.keys.secret_key}`]) {
      const res = await whoami(header);
      t.is(res.status, 200);
      t.is(res.body.data.workspace.id, owner.workspace.id);
      t.not(res.body.data.workspace.id, other.workspace.id);
    }
  }
});

test('mixing up the prefixes is 401: Bearer <pk> and Public <sk>', async (t) => {
  for (const header of [`Bearer ${a.keys.public_key}`, `Public ${a.keys.secret_key}`]) {
    const res = await whoami(header);
    t.is(res.status, 401, header.split(' ')[0]);
    t.is(typeof res.body.error, 'string');
    t.is(res.body.data, undefined);
  }
});

test('bad keys and a missing or malformed header are 401', async (t) => {
  const cases = [
    undefined,
    '',
    'Public',
    'Bearer',
    'Public pk_live_',
    'Bearer sk_live_',
    'Public pk_live_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
    'Bearer sk_live_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
    `Public ${a.keys.public_key}x`,
    `Bearer ${a.keys.secret_key}x`,
    `Public ${a.keys.public_key.slice(0, -1)}`,
    `Public ${a.keys.public_key.replace('pk_live_', '')}`,
    `Bearer ${a.keys.secret_key.replace('sk_live_', '')}`,
    `Basic ${Buffer.from('user:pass').toString('base64')}`,
    `Token ${a.keys.secret_key}`,
    a.keys.secret_key,
  ];
  for (const header of cases) {
    const res = await whoami(header);
    t.is(res.status, 401, String(header));
    t.is(typeof res.body.error, 'string');
  }
});

test('the key endpoint takes only the header: ?key= and a session cookie are 401', async (t) => {
  t.is((await whoami(undefined, `/api/v1/auth/key?key=${a.keys.public_key}`)).status, 401);
  t.is((await a.client.get('/api/v1/auth/key')).status, 401);
});

test('the secret key is not usable as a session, nor the public key as a cookie', async (t) => {
  const res = await app.client().get('/api/v1/workspace', { headers: { authorization: `Bearer ${a.keys.secret_key}` } });
  t.is(res.status, 401);
  const cookie = await app.client().get('/api/v1/auth/me', { headers: { cookie: `quoting_session=${a.keys.secret_key}` } });
  t.is(cookie.status, 401);
});

// --- rotation -----------------------------------------------------------------------------

test('rotation (owner): a new pair; old public and old secret are 401 at once, the new ones 200', async (t) => {
  const owner = await signUpOwner(app, 'Rotating');
  const old = owner.keys;
  t.is((await whoami(`Public ${old.public_key}`)).status, 200);
  t.is((await whoami(`Bearer ${old.secret_key}`)).status, 200);

  const res = await owner.client.post('/api/v1/workspace/keys/rotate');
  t.is(res.status, 200);
  const keys = res.body.data.keys;
  t.regex(keys.public_key, /^pk_live_[A-Za-z0-9_-]{32,}$/);
  t.regex(keys.secret_key, /^sk_live_[A-Za-z0-9_-]{32,}$/);
  t.not(keys.public_key, old.public_key);
  t.not(keys.secret_key, old.secret_key);

  t.is((await whoami(`Public ${old.public_key}`)).status, 401, 'old public key');
  t.is((await whoami(`Bearer ${old.secret_key}`)).status, 401, 'old secret key');
  const pub = await whoami(`Public ${keys.public_key}`);
  t.is(pub.status, 200);
  t.is(pub.body.data.workspace.id, owner.workspace.id);
  const sec = await whoami(`Bearer ${keys.secret_key}`);
  t.is(sec.status, 200);
  t.is(sec.body.data.workspace.id, owner.workspace.id);

  const ws = await owner.client.get('/api/v1/workspace');
  t.is(ws.body.data.workspace.public_key, keys.public_key);
  t.false(ws.text.includes(keys.secret_key));
  const row = await app.db('workspaces').where({ id: owner.workspace.id }).first();
  t.false(JSON.stringify(row).includes(keys.secret_key), 'the new secret is stored only as a hash');

  // Other workspaces are untouched.
  t.is((await whoami(`Bearer ${b.keys.secret_key}`)).status, 200);
});

test('rotating twice: only the latest pair works', async (t) => {
  const owner = await signUpOwner(app, 'Twice');
  const first = (await owner.client.post('/api/v1/workspace/keys/rotate')).body.data.keys;
  const second = (await owner.client.post('/api/v1/workspace/keys/rotate')).body.data.keys;
  t.is((await whoami(`Bearer ${first.secret_key}`)).status, 401);
  t.is((await whoami(`Public ${first.public_key}`)).status, 401);
  t.is((await whoami(`Bearer ${second.secret_key}`)).status, 200);
  t.is((await whoami(`Public ${second.public_key}`)).status, 200);
});

test('rotation without a session is 401, also with the secret key', async (t) => {
  t.is((await app.client().post('/api/v1/workspace/keys/rotate')).status, 401);
  const res = await app.client().post('/api/v1/workspace/keys/rotate', undefined, { headers: { authorization: `Bearer ${b.keys.secret_key}` } });
  t.is(res.status, 401);
  t.is((await whoami(`Bearer ${b.keys.secret_key}`)).status, 200, 'the keys did not change');
});

test('a user without a workspace: rotation is 409 "No workspace yet"', async (t) => {
  const client = app.client();
  await client.post('/api/v1/auth/signup', { email: `nows.${process.pid}.${Date.now()}@example.com`, password: 'long enough pw', name: 'No WS' });
  const res = await client.post('/api/v1/workspace/keys/rotate');
  t.is(res.status, 409);
  t.regex(res.body.error, /No workspace yet/);
});

// --- roles --------------------------------------------------------------------------------

let member: Member | undefined;
let memberOwner: Owner | undefined;
async function theMember(): Promise<{ owner: Owner; member: Member }> {
  memberOwner ??= await signUpOwner(app, 'Has Members');
  member ??= await inviteMember(app, smtp, memberOwner);
  return { owner: memberOwner, member };
}

test.serial('a member is signed in to the workspace with role member and may read it', async (t) => {
  const { owner, member } = await theMember();
  const me = await member.client.get('/api/v1/auth/me');
  t.is(me.status, 200);
  t.is(me.body.data.role, 'member');
  t.is(me.body.data.workspace.id, owner.workspace.id);
  const ws = await member.client.get('/api/v1/workspace');
  t.is(ws.status, 200);
  t.is(ws.body.data.workspace.id, owner.workspace.id);
});

test.serial('a member gets 403 on key rotation and the keys stay as they were', async (t) => {
  const { owner, member } = await theMember();
  const res = await member.client.post('/api/v1/workspace/keys/rotate');
  t.is(res.status, 403);
  t.is(typeof res.body.error, 'string');
  t.is(res.body.data, undefined);
  t.is((await whoami(`Public ${owner.keys.public_key}`)).status, 200);
  t.is((await whoami(`Bearer ${owner.keys.secret_key}`)).status, 200);
});

test.serial('a member gets 403 on invites', async (t) => {
  const { member } = await theMember();
  const res = await member.client.post('/api/v1/invites', { email: `x.${process.pid}.${Date.now()}@example.com` });
  t.is(res.status, 403);
});

test.serial('a member gets 409 creating a workspace of their own', async (t) => {
  const { owner, member } = await theMember();
  const res = await member.client.post('/api/v1/workspace', { name: 'Breakaway' });
  t.is(res.status, 409);
  t.is((await member.client.get('/api/v1/auth/me')).body.data.workspace.id, owner.workspace.id);
});
