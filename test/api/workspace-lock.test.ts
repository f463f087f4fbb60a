import test from 'ava';
import { signUpOwner, uniqueEmail, type Owner } from '../helpers/app.js';
import { useApp } from '../helpers/fixture.js';
import { inviteMember, type Member } from '../helpers/members.js';
import type { Client } from '../helpers/client.js';

const ADMIN_KEY = 'admin-key-for-tests-0123456789';
const DAY = 86_400_000;

const { app, smtp } = useApp(test, { env: { ADMIN_API_KEY: ADMIN_KEY, TRIAL_DAYS: '14' }, smtp: true }); // mail configured
const { app: plain } = useApp(test); // nothing set

const admin = { headers: { 'x-admin-key': ADMIN_KEY } };
const patch = (id: number | string, body: unknown, method: 'PATCH' | 'PUT' = 'PATCH') =>
  app.client().request(method, `/api/v1/admin/workspaces/${id}`, { json: body, ...admin });

const keyCall = (authorization: string) => app.client().get('/api/v1/auth/key', { headers: { authorization } });

/** A workspace with its owner and one member, each signed in. */
async function team(name: string): Promise<{ owner: Owner; member: Member }> {
  const owner = await signUpOwner(app, name);
  return { owner, member: await inviteMember(app, smtp, owner) };
}

/** Every way into the workspace: owner and member sessions (two endpoints each), the public and the secret key. */
async function statuses(owner: Owner, member: Member): Promise<{ status: number; error?: string }[]> {
  const calls = [
    owner.client.get('/api/v1/workspace'),
    owner.client.get('/api/v1/auth/me'),
    member.client.get('/api/v1/workspace'),
    member.client.get('/api/v1/auth/me'),
    keyCall(`Public ${owner.keys.public_key}`),
    keyCall(`Bearer ${owner.keys.secret_key}`),
  ];
  return (await Promise.all(calls)).map((r) => ({ status: r.status, error: r.body?.error }));
}

// --- admin credentials ----------------------------------------------------------------------

test('admin endpoints are 403 when ADMIN_API_KEY is unset, whatever key is sent', async (t) => {
  const owner = await signUpOwner(plain, 'Plain Admin');
  for (const options of [{}, { headers: { 'x-admin-key': ADMIN_KEY } }]) {
    const list = await plain.client().get('/api/v1/admin/workspaces', options);
    t.is(list.status, 403);
    t.regex(list.body.error, /ADMIN_API_KEY/);
    const res = await plain.client().patch(`/api/v1/admin/workspaces/${owner.workspace.id}`, { status: 'suspended' }, options);
    t.is(res.status, 403);
  }
  t.is((await plain.client().get(`/api/v1/admin/workspaces?key=${ADMIN_KEY}`)).status, 403);
  t.is((await owner.client.get('/api/v1/workspace')).body.data.workspace.status, 'active');
});

test('admin endpoints are 401 with a wrong or missing key', async (t) => {
  const owner = await signUpOwner(app, 'Wrong Key');
  for (const options of [{}, { headers: { 'x-admin-key': 'wrong' } }, { headers: { 'x-admin-key': `${ADMIN_KEY}x` } }, { headers: { 'x-admin-key': ADMIN_KEY.slice(0, -1) } }]) {
    const list = await app.client().get('/api/v1/admin/workspaces', options);
    t.is(list.status, 401);
    t.is(typeof list.body.error, 'string');
    t.is((await app.client().patch(`/api/v1/admin/workspaces/${owner.workspace.id}`, { status: 'suspended' }, options)).status, 401);
  }
  t.is((await app.client().get('/api/v1/admin/workspaces?key=wrong')).status, 401);
  // A session or a workspace key is no admin credential.
  t.is((await owner.client.get('/api/v1/admin/workspaces')).status, 401);
  t.is((await app.client().get('/api/v1/admin/workspaces', { headers: { authorization: `Bearer ${owner.keys.secret_key}` } })).status, 401);
  t.is((await owner.client.get('/api/v1/workspace')).body.data.workspace.status, 'trialing');
});

test('GET /admin/workspaces with X-Admin-Key or ?key= lists every workspace with its user count and owner', async (t) => {
  const { owner } = await team('Listed Co');
  for (const res of [await app.client().get('/api/v1/admin/workspaces', admin), await app.client().get(`/api/v1/admin/workspaces?key=${encodeURIComponent(ADMIN_KEY)}`)]) {
    t.is(res.status, 200);
    t.true(Array.isArray(res.body.data.workspaces));
    const row = res.body.data.workspaces.find((w: any) => w.id === owner.workspace.id);
    t.truthy(row);
    t.is(row.name, 'Listed Co');
    t.is(row.slug, owner.workspace.slug);
    t.is(row.status, 'trialing');
    t.is(row.users, 2);
    t.is(row.owner_email, owner.email);
    t.is(row.public_key, owner.keys.public_key);
    t.false('secret_key_hash' in row);
    t.false(res.text.includes(owner.keys.secret_key));
  }
});

test('PATCH /admin/workspaces/{id} with ?key= works too', async (t) => {
  const owner = await signUpOwner(app, 'Query Key');
  const res = await app.client().patch(`/api/v1/admin/workspaces/${owner.workspace.id}?key=${encodeURIComponent(ADMIN_KEY)}`, { status: 'active' });
  t.is(res.status, 200);
  t.is(res.body.data.workspace.status, 'active');
});

// --- suspension -----------------------------------------------------------------------------

test('suspending a workspace: 402 for every user and both keys, identically; another workspace keeps working; reactivating restores 200', async (t) => {
  const { owner, member } = await team('Suspended Co');
  const other = await signUpOwner(app, 'Bystander');
  t.deepEqual((await statuses(owner, member)).map((s) => s.status), [200, 200, 200, 200, 200, 200]);

  const res = await patch(owner.workspace.id, { status: 'suspended' });
  t.is(res.status, 200);
  t.is(res.body.data.workspace.id, owner.workspace.id);
  t.is(res.body.data.workspace.status, 'suspended');
  t.false('secret_key_hash' in res.body.data.workspace);

  const locked = await statuses(owner, member);
  t.deepEqual(locked.map((s) => s.status), [402, 402, 402, 402, 402, 402]);
  t.regex(locked[0].error!, /suspended/);
  t.is(new Set(locked.map((s) => s.error)).size, 1, 'the same answer for every user and key');
  // Owner-only and write endpoints are locked as well.
  t.is((await owner.client.post('/api/v1/workspace/keys/rotate')).status, 402);
  t.is((await owner.client.post('/api/v1/invites', { email: uniqueEmail() })).status, 402);
  t.is((await member.client.post('/api/v1/invites', { email: uniqueEmail() })).status, 402);
  // A fresh login still signs in, but the session is locked too.
  const again = app.client();
  t.is((await again.post('/api/v1/auth/login', { email: member.email, password: member.password })).status, 200);
  t.is((await again.get('/api/v1/auth/me')).status, 402);

  // Another workspace is not affected.
  t.is((await other.client.get('/api/v1/workspace')).status, 200);
  t.is((await keyCall(`Public ${other.keys.public_key}`)).status, 200);
  t.is((await keyCall(`Bearer ${other.keys.secret_key}`)).status, 200);

  const back = await patch(owner.workspace.id, { status: 'active' });
  t.is(back.status, 200);
  t.is(back.body.data.workspace.status, 'active');
  t.deepEqual((await statuses(owner, member)).map((s) => s.status), [200, 200, 200, 200, 200, 200]);
});

test('logout still works for a locked workspace and deletes the session', async (t) => {
  const owner = await signUpOwner(app, 'Locked Logout');
  t.is((await patch(owner.workspace.id, { status: 'suspended' })).status, 200);
  t.is((await owner.client.get('/api/v1/auth/me')).status, 402);
  const res = await owner.client.post('/api/v1/auth/logout');
  t.is(res.status, 200);
  t.truthy(res.headers.getSetCookie().find((c) => /^quoting_session=;/.test(c)));
  t.is(await app.db('sessions').where({ user_id: owner.user.id }).first(), undefined);
  t.is((await owner.client.get('/api/v1/auth/me')).status, 401);
});

// --- trials ---------------------------------------------------------------------------------

test('with TRIAL_DAYS=14 a new workspace is trialing and its trial ends in 14 days (signup and POST /workspace)', async (t) => {
  const owner = await signUpOwner(app, 'Trial Co');
  t.is(owner.workspace.status, 'trialing');
  t.true(Math.abs(new Date(owner.workspace.trial_ends_at).getTime() - (Date.now() + 14 * DAY)) < 60_000);

  const client = app.client();
  await client.post('/api/v1/auth/signup', { email: uniqueEmail(), password: 'long enough pw', name: 'Later' });
  const made = await client.post('/api/v1/workspace', { name: 'Later Co' });
  t.is(made.status, 201);
  t.is(made.body.data.workspace.status, 'trialing');
  t.true(Math.abs(new Date(made.body.data.workspace.trial_ends_at).getTime() - (Date.now() + 14 * DAY)) < 60_000);
  const ws = await client.get('/api/v1/workspace');
  t.is(ws.status, 200);
  t.is(ws.body.data.workspace.trial_ends_at, made.body.data.workspace.trial_ends_at);
});

test('TRIAL_DAYS unset: a new workspace is active with no trial end', async (t) => {
  const owner = await signUpOwner(plain, 'Active Co');
  t.is(owner.workspace.status, 'active');
  t.is(owner.workspace.trial_ends_at, null);
  const ws = await owner.client.get('/api/v1/workspace');
  t.is(ws.body.data.workspace.status, 'active');
});

test('a trial that has ended locks the workspace (402 for every user and key); extending it unlocks', async (t) => {
  const { owner, member } = await team('Expiring Trial');
  const past = new Date(Date.now() - 60_000).toISOString();
  const res = await patch(owner.workspace.id, { trial_ends_at: past });
  t.is(res.status, 200);
  t.is(res.body.data.workspace.status, 'trialing', 'the status is kept');
  t.is(new Date(res.body.data.workspace.trial_ends_at).toISOString(), past);

  const locked = await statuses(owner, member);
  t.deepEqual(locked.map((s) => s.status), [402, 402, 402, 402, 402, 402]);
  t.regex(locked[0].error!, /trial/i);
  t.is(new Set(locked.map((s) => s.error)).size, 1);

  const extended = await patch(owner.workspace.id, { trial_ends_at: new Date(Date.now() + 7 * DAY).toISOString() });
  t.is(extended.status, 200);
  t.deepEqual((await statuses(owner, member)).map((s) => s.status), [200, 200, 200, 200, 200, 200]);
});

test('a trial that ended (set in the database) locks; making the workspace active unlocks it', async (t) => {
  const owner = await signUpOwner(app, 'DB Trial');
  await app.db('workspaces').where({ id: owner.workspace.id }).update({ trial_ends_at: new Date(Date.now() - 1000) });
  t.is((await owner.client.get('/api/v1/workspace')).status, 402);
  t.is((await keyCall(`Bearer ${owner.keys.secret_key}`)).status, 402);
  const res = await patch(owner.workspace.id, { status: 'active' });
  t.is(res.status, 200);
  t.is(res.body.data.workspace.status, 'active');
  t.is((await owner.client.get('/api/v1/workspace')).status, 200);
  t.is((await keyCall(`Bearer ${owner.keys.secret_key}`)).status, 200);
});

// --- PATCH / PUT semantics and validation ---------------------------------------------------

test('PUT is a partial update like PATCH: omitted fields keep their value', async (t) => {
  const owner = await signUpOwner(app, 'Partial Co');
  const trialEnd = owner.workspace.trial_ends_at;
  const suspended = await patch(owner.workspace.id, { status: 'suspended' }, 'PUT');
  t.is(suspended.status, 200);
  t.is(suspended.body.data.workspace.status, 'suspended');
  t.is(suspended.body.data.workspace.trial_ends_at, trialEnd, 'trial_ends_at kept');
  t.is(suspended.body.data.workspace.name, 'Partial Co');

  const newEnd = new Date(Date.now() + 30 * DAY).toISOString();
  const moved = await patch(owner.workspace.id, { trial_ends_at: newEnd }, 'PUT');
  t.is(moved.status, 200);
  t.is(moved.body.data.workspace.status, 'suspended', 'status kept');
  t.is(new Date(moved.body.data.workspace.trial_ends_at).toISOString(), newEnd);

  const nothing = await patch(owner.workspace.id, {}, 'PUT');
  t.is(nothing.status, 200);
  t.is(nothing.body.data.workspace.status, 'suspended');
  t.is(new Date(nothing.body.data.workspace.trial_ends_at).toISOString(), newEnd);

  const viaPatch = await patch(owner.workspace.id, { status: 'trialing' });
  t.is(viaPatch.body.data.workspace.status, 'trialing');
  t.is(new Date(viaPatch.body.data.workspace.trial_ends_at).toISOString(), newEnd);

  const row = await app.db('workspaces').where({ id: owner.workspace.id }).first();
  t.is(row.status, 'trialing');
  t.is(new Date(row.trial_ends_at).toISOString(), newEnd);
  t.is((await owner.client.get('/api/v1/workspace')).status, 200);
});

test('trial_ends_at null clears the trial end', async (t) => {
  const owner = await signUpOwner(app, 'Clear Trial');
  const res = await patch(owner.workspace.id, { trial_ends_at: null });
  t.is(res.status, 200);
  t.is(res.body.data.workspace.trial_ends_at, null);
  t.is(res.body.data.workspace.status, 'trialing');
  t.is((await owner.client.get('/api/v1/workspace')).status, 200);
});

test('admin PATCH with a bad id is 400, an unknown id 404', async (t) => {
  for (const id of ['abc', '0', '-1', '1.5', '01', '99999999999', '1e3']) {
    const res = await patch(id, { status: 'active' });
    t.is(res.status, 400, id);
    t.regex(res.body.error, /id/, id);
  }
  const unknown = await patch(2147483647, { status: 'active' });
  t.is(unknown.status, 404);
  t.is(typeof unknown.body.error, 'string');
  t.is((await patch(2147483646, { status: 'active' }, 'PUT')).status, 404);
});

test('admin PATCH with a bad status is 422 naming status; a bad trial_ends_at is 422 naming trial_ends_at', async (t) => {
  const owner = await signUpOwner(app, 'Bad Patch');
  for (const status of ['locked', 'ACTIVE', '', 1, null]) {
    const res = await patch(owner.workspace.id, { status });
    t.is(res.status, 422, JSON.stringify(status));
    t.regex(res.body.error, /status/, JSON.stringify(status));
  }
  for (const trial_ends_at of ['not a date', 12, true]) {
    const res = await patch(owner.workspace.id, { trial_ends_at });
    t.is(res.status, 422, JSON.stringify(trial_ends_at));
    t.regex(res.body.error, /trial_ends_at/, JSON.stringify(trial_ends_at));
  }
  const ws = await owner.client.get('/api/v1/workspace');
  t.is(ws.status, 200);
  t.is(ws.body.data.workspace.status, 'trialing');
  t.is(ws.body.data.workspace.trial_ends_at, owner.workspace.trial_ends_at);
});

test('a user without a workspace is not affected by locks and sees 409 on workspace endpoints', async (t) => {
  const client: Client = app.client();
  await client.post('/api/v1/auth/signup', { email: uniqueEmail(), password: 'long enough pw', name: 'Free' });
  t.is((await client.get('/api/v1/auth/me')).status, 200);
  const res = await client.get('/api/v1/workspace');
  t.is(res.status, 409);
  t.regex(res.body.error, /No workspace yet/);
});
