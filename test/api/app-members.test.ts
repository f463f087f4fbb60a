import test from 'ava';
import { signUpOwner, uniqueEmail, type Owner } from '../helpers/app.js';
import { useOwnerApp } from '../helpers/fixture.js';
import { inviteMember, tokenFromMail, type Member } from '../helpers/members.js';
import { ok, type Client } from '../helpers/client.js';
import { captureLogs } from '../helpers/logs.js';
import { postForm, signInPage, visibleText, ownSession as signedIn } from '../helpers/pages.js';
import { postgresTest } from '../helpers/skip.js';

const { app, smtp, owner } = useOwnerApp(test, { workspace: 'App members', smtp: true });
const PATH = '/app/settings/members';
let mia: Member;
let other: Owner;

test.before(async () => {
  mia = await inviteMember(app, smtp, owner);
  other = await signUpOwner(app, 'Elsewhere');
});

/** A session of the owner's own: the flash message a POST leaves is this client's alone while other tests run. */
const ownSession = (o: { email: string; password: string } = owner) => signedIn(app, o);

/** Someone added through the page: their id, email and one-time password. */
async function addPerson(client: Client, fields: Record<string, string> = {}) {
  const email = uniqueEmail('added');
  const res = await postForm(client, `${PATH}/add`, { email, name: 'Ada Added', role: 'member', ...fields });
  if (res.status !== 201) throw new Error(`add: ${res.status} ${visibleText(res.text).slice(0, 400)}`);
  const password = /id="one-time-password" type="text" readonly value="([^"]+)"/.exec(res.text)?.[1];
  if (!password) throw new Error('no one-time password on the page');
  const user = await app.db('users').where({ email: fields.email ?? email }).first('id', 'email', 'role', 'workspace_id', 'name');
  return { res, email: fields.email ?? email, password, user };
}

const role = async (id: number) => (await app.db('users').where({ id }).first('role'))?.role;

test('without a session the members page sends to sign-in; a member gets the 403 page and sees no owner page in the navigation', async (t) => {
  const away = await app.client().get(PATH);
  t.is(away.status, 302);
  t.is(away.headers.get('location'), `/login?next=${encodeURIComponent(PATH)}`);
  const forbidden = await mia.client.get(PATH);
  t.is(forbidden.status, 403);
  t.true(visibleText(forbidden.text).includes('Only a workspace owner may do this.'));
  const account = await mia.client.get('/app/settings/account');
  t.is(account.status, 200);
  for (const owners of ['href="/app/settings"', `href="${PATH}"`]) t.false(account.text.includes(owners), owners);
  t.true(account.text.includes('href="/app/settings/account"'));
});

test('the list shows each person with role and last sign-in, and the pending invites', async (t) => {
  const invited = uniqueEmail('pending');
  await ok(owner.client.post('/api/v1/invites', { email: invited, role: 'owner' }), 201);
  await smtp.waitFor(invited);
  const res = await owner.client.get(PATH);
  t.is(res.status, 200);
  const text = visibleText(res.text);
  t.regex(text, new RegExp(`Olive Owner \\(you\\) ${owner.email.replace(/\./g, '\\.')} Owner \\d+ \\w+ \\d{4}, \\d\\d:\\d\\d UTC`));
  t.regex(text, new RegExp(`Mia Member ${mia.email.replace(/\./g, '\\.')} Member \\d+ \\w+ \\d{4}, \\d\\d:\\d\\d UTC`));
  t.regex(text, new RegExp(`Pending invites \\d+ .*${invited.replace(/\./g, '\\.')} Owner`));
  t.false(text.includes(other.email), "another workspace's owner is not listed");
});

test('invite by mail: the invite goes out and is listed; a bad or taken email is shown beside its field', async (t) => {
  const client = await ownSession();
  const email = uniqueEmail('invitee');
  const sent = await postForm(client, `${PATH}/invite`, { email, role: 'member' });
  t.is(sent.status, 303);
  t.is(sent.headers.get('location'), PATH);
  const mail = await smtp.waitFor(email);
  t.truthy(tokenFromMail(mail));
  const after = await client.get(PATH);
  t.true(visibleText(after.text).includes(`An invite is on its way to ${email}.`));
  t.true(visibleText(after.text).includes(email));
  t.is((await app.db('invites').where({ email }).first('role')).role, 'member');

  const bad = await postForm(client, `${PATH}/invite`, { email: 'not an email', role: 'member' });
  t.is(bad.status, 422);
  t.regex(bad.text, /<p class="field-error" id="invite-email-error">email: [^<]+<\/p>/);
  t.true(bad.text.includes('value="not an email"'), 'the input is kept');
  const taken = await postForm(client, `${PATH}/invite`, { email: mia.email, role: 'member' });
  t.is(taken.status, 409);
  t.regex(taken.text, /id="invite-email-error">That email is already taken\.</);
});

test.serial('adding a person shows a one-time password once: it signs in, and is on no later page nor in the log', async (t) => {
  const client = await ownSession();
  const { result: added, logs } = await captureLogs(async () => {
    const added = await addPerson(client, { name: 'Otto <script>x</script>' });
    const login = await app.client().post('/api/v1/auth/login', { email: added.email, password: added.password });
    return { ...added, login };
  }, 'debug');
  t.is(added.res.status, 201);
  t.true(added.res.text.includes('data-copy="#one-time-password"'), 'with a copy button');
  t.true(added.res.text.includes('href="/app/settings/password"'), 'and where to change it');
  t.false(added.res.text.includes('<script>x</script>'));
  t.true(added.res.text.includes('Otto &lt;script&gt;x&lt;/script&gt;'));
  t.is(added.login.status, 200, 'the password signs in');
  t.like(added.user, { role: 'member', name: 'Otto <script>x</script>' });
  t.is(added.user.workspace_id, owner.workspace.id);
  t.true(logs.length > 0, 'the requests were logged');
  t.false(JSON.stringify(logs).includes(added.password), 'the password is in no log line');
  t.false(added.res.headers.getSetCookie().some((c) => c.includes(added.password)), 'nor in a cookie');

  const list = await client.get(PATH);
  t.true(list.text.includes(added.email));
  t.false(list.text.includes(added.password), 'the members page does not show it again');
  t.true(list.text.includes('Otto &lt;script&gt;x&lt;/script&gt;'));
  t.false(list.text.includes('<script>x</script>'));

  const taken = await postForm(client, `${PATH}/add`, { email: added.email, name: 'Again', role: 'member' });
  t.is(taken.status, 409);
  t.regex(taken.text, /id="add-email-error">That email is already taken\.</);
  const noName = await postForm(client, `${PATH}/add`, { email: uniqueEmail('nameless'), name: '', role: 'member' });
  t.is(noName.status, 422);
  t.regex(noName.text, /id="add-name-error">/);
});

test('without mail the page offers only the one-time password', async (t) => {
  const { startApp } = await import('../helpers/app.js');
  const noMail = await startApp();
  t.teardown(() => noMail.close());
  const boss = await signUpOwner(noMail, 'No mail');
  const res = await boss.client.get(PATH);
  t.is(res.status, 200);
  t.false(res.text.includes(`action="${PATH}/invite"`));
  t.true(res.text.includes(`action="${PATH}/add"`));
  t.true(visibleText(res.text).includes('This server sends no mail'));
});

test('a role changes both ways and the person\'s session follows at once; the last owner stays an owner', async (t) => {
  const client = await ownSession();
  const person = await addPerson(client);
  const them = app.client();
  await signInPage(them, person.email, person.password);
  t.is((await them.get('/app/settings')).status, 403);

  const up = await postForm(client, `${PATH}/${person.user.id}/role`, { role: 'owner' });
  t.is(up.status, 303);
  t.is(await role(person.user.id), 'owner');
  t.is((await them.get('/api/v1/auth/me')).body.data.role, 'owner', 'their cached session has the new role');
  t.is((await them.get('/app/settings')).status, 200);

  const down = await postForm(client, `${PATH}/${person.user.id}/role`, { role: 'member' });
  t.is(down.status, 303);
  t.is(await role(person.user.id), 'member');
  t.is((await them.get('/app/settings')).status, 403);

  const bad = await postForm(client, `${PATH}/${person.user.id}/role`, { role: 'admin' });
  t.is(bad.status, 422);
  t.true(visibleText(bad.text).includes('role: must be "owner" or "member"'));

  // A workspace of one owner: they cannot make themselves a member.
  const solo = await signUpOwner(app, 'Solo');
  const lonely = await postForm(solo.client, `${PATH}/${solo.user.id}/role`, { role: 'member' });
  t.is(lonely.status, 409);
  t.regex(visibleText(lonely.text), /is the workspace's only owner and cannot be made a member: make someone else an owner first\./);
  t.is(await role(solo.user.id), 'owner');
  t.is((await postForm(solo.client, `${PATH}/${solo.user.id}/remove`, {})).status, 409, 'nor remove themselves');
  // With a second owner, the first may step down: the workspace still has one.
  const second = await addPerson(solo.client, { role: 'owner' });
  const stepDown = await postForm(solo.client, `${PATH}/${solo.user.id}/role`, { role: 'member' });
  t.is(stepDown.status, 303);
  t.is(stepDown.headers.get('location'), '/app', 'no longer an owner, they go to the app');
  t.is(await role(solo.user.id), 'member');
  const secondClient = app.client();
  await signInPage(secondClient, second.email, second.password);
  t.is((await postForm(secondClient, `${PATH}/${second.user.id}/role`, { role: 'member' })).status, 409, 'the remaining owner stays');
});

test("another workspace's user, and a malformed id, are the 404 page", async (t) => {
  t.is((await postForm(owner.client, `${PATH}/${other.user.id}/role`, { role: 'member' })).status, 404);
  t.is((await postForm(owner.client, `${PATH}/${other.user.id}/remove`, {})).status, 404);
  t.is(await role(other.user.id), 'owner');
  t.is((await postForm(owner.client, `${PATH}/abc/remove`, {})).status, 404);
});

test('removing someone signs them out at once: their next page is the sign-in page', async (t) => {
  const client = await ownSession();
  const person = await addPerson(client);
  const them = app.client();
  await signInPage(them, person.email, person.password);
  t.is((await them.get('/app')).status, 200, 'signed in (and the session cached)');
  const channel = (await ok(owner.client.post('/api/v1/channels', { name: 'Removal shop' }), 201)).channel;
  await ok(owner.client.put(`/api/v1/channels/${channel.id}/members/${person.user.id}`, { role: 'editor' }));

  const removed = await postForm(client, `${PATH}/${person.user.id}/remove`, {});
  t.is(removed.status, 303);
  t.true(visibleText((await client.get(PATH)).text).includes('is removed and signed out.'));
  const next = await them.get('/app/quotes');
  t.is(next.status, 302);
  t.is(next.headers.get('location'), `/login?next=${encodeURIComponent('/app/quotes')}`);
  t.is((await them.get('/api/v1/auth/me')).status, 401);
  t.is(await app.db('users').where({ id: person.user.id }).first('id'), undefined);
  t.is(await app.db('sessions').where({ user_id: person.user.id }).first('id'), undefined);
  t.deepEqual((await ok(owner.client.get(`/api/v1/channels/${channel.id}`))).members, [], 'their channel role went with them');
  t.is((await app.client().post('/api/v1/auth/login', { email: person.email, password: person.password })).status, 401);
});

test('channel roles are granted and revoked from the member row, and shown on it', async (t) => {
  const client = await ownSession();
  const channel = (await ok(owner.client.post('/api/v1/channels', { name: 'Shop <b>one</b>' }), 201)).channel;
  const granted = await postForm(client, `${PATH}/${mia.user.id}/channels`, { channel_id: String(channel.id), role: 'editor' });
  t.is(granted.status, 303);
  const members = (await ok(owner.client.get(`/api/v1/channels/${channel.id}`))).members;
  t.like(members.find((m: any) => m.user_id === mia.user.id), { role: 'editor' });
  t.true((await ok(mia.client.get('/api/v1/channels'))).channels.some((c: any) => c.id === channel.id), 'she sees the channel now');
  const list = await client.get(PATH);
  t.true(visibleText(list.text).includes('Shop <b>one</b>: editor'));
  t.false(list.text.includes('Shop <b>one</b>'), 'the channel name is escaped');
  t.true(list.text.includes(`action="${PATH}/${mia.user.id}/channels/${channel.id}/revoke"`));

  const bad = await postForm(client, `${PATH}/${mia.user.id}/channels`, { channel_id: String(channel.id), role: 'boss' });
  t.is(bad.status, 422);
  t.true(visibleText(bad.text).includes('role: must be one of viewer, editor, manager.'));
  t.is((await postForm(client, `${PATH}/${mia.user.id}/channels`, { channel_id: '999999', role: 'viewer' })).status, 404);

  const revoked = await postForm(client, `${PATH}/${mia.user.id}/channels/${channel.id}/revoke`, {});
  t.is(revoked.status, 303);
  t.deepEqual((await ok(owner.client.get(`/api/v1/channels/${channel.id}`))).members, []);
  t.false((await ok(mia.client.get('/api/v1/channels'))).channels.some((c: any) => c.id === channel.id));
  t.is((await postForm(client, `${PATH}/${mia.user.id}/channels/${channel.id}/revoke`, {})).status, 404, 'a role she no longer has');
});

test('a member posting any owner-only form gets the 403 page, and nothing changes', async (t) => {
  const channel = (await ok(owner.client.post('/api/v1/channels', { name: 'Forbidden shop' }), 201)).channel;
  const email = uniqueEmail('by-member');
  const forms: [string, Record<string, string>][] = [
    ['/app/settings', { name: 'Taken over', time_zone: 'Asia/Tokyo' }],
    [`${PATH}/invite`, { email, role: 'owner' }],
    [`${PATH}/add`, { email, name: 'Sneaky', role: 'owner' }],
    [`${PATH}/${mia.user.id}/role`, { role: 'owner' }],
    [`${PATH}/${owner.user.id}/role`, { role: 'member' }],
    [`${PATH}/${owner.user.id}/remove`, {}],
    [`${PATH}/${mia.user.id}/channels`, { channel_id: String(channel.id), role: 'manager' }],
    [`${PATH}/${mia.user.id}/channels/${channel.id}/revoke`, {}],
  ];
  for (const [path, fields] of forms) {
    const res = await postForm(mia.client, path, fields);
    t.is(res.status, 403, path);
    t.true(visibleText(res.text).includes('Only a workspace owner may do this.'), path);
  }
  t.is(await role(mia.user.id), 'member');
  t.is(await role(owner.user.id), 'owner');
  t.is(await app.db('users').where({ email }).first('id'), undefined);
  t.is(await app.db('invites').where({ email }).first('id'), undefined);
  t.deepEqual((await ok(owner.client.get(`/api/v1/channels/${channel.id}`))).members, []);
  t.like((await ok(owner.client.get('/api/v1/workspace'))).workspace, { name: 'App members', time_zone: null });
});

test('every form passes the Origin check: another site gets the 403 page and nothing changes', async (t) => {
  const channel = (await ok(owner.client.post('/api/v1/channels', { name: 'Origin shop' }), 201)).channel;
  const email = uniqueEmail('evil');
  const forms: [string, Record<string, string>][] = [
    [`${PATH}/invite`, { email, role: 'owner' }],
    [`${PATH}/add`, { email, name: 'Evil', role: 'owner' }],
    [`${PATH}/${mia.user.id}/role`, { role: 'owner' }],
    [`${PATH}/${mia.user.id}/remove`, {}],
    [`${PATH}/${mia.user.id}/channels`, { channel_id: String(channel.id), role: 'manager' }],
    [`${PATH}/${mia.user.id}/channels/${channel.id}/revoke`, {}],
  ];
  for (const [path, fields] of forms) {
    const res = await postForm(owner.client, path, fields, { origin: 'https://evil.example' });
    t.is(res.status, 403, path);
    t.true(visibleText(res.text).includes('Cross-site request refused'), path);
  }
  t.is(await role(mia.user.id), 'member');
  t.is(await app.db('users').where({ email }).first('id'), undefined);
  t.is(await app.db('invites').where({ email }).first('id'), undefined);
  t.deepEqual((await ok(owner.client.get(`/api/v1/channels/${channel.id}`))).members, []);
});

postgresTest('two owners demoting each other at once: one of them stays an owner', async (t) => {
  for (let round = 0; round < 5; round++) {
    const first = await signUpOwner(app, `Pair ${round}`);
    const second = await addPerson(first.client, { role: 'owner' });
    const secondClient = app.client();
    await signInPage(secondClient, second.email, second.password);
    const answers = await Promise.all([
      postForm(first.client, `${PATH}/${second.user.id}/role`, { role: 'member' }),
      postForm(secondClient, `${PATH}/${first.user.id}/role`, { role: 'member' }),
    ]);
    // The loser is refused by the rule (409), or, when the winner committed before it was let in, as no owner (403).
    const [won, lost] = answers.map((a) => a.status).sort();
    t.is(won, 303, `round ${round}`);
    t.true(lost === 409 || lost === 403, `round ${round}: ${lost}`);
    const owners = await app.db('users').where({ workspace_id: first.workspace.id, role: 'owner' }).pluck('id');
    t.is(owners.length, 1, `round ${round}`);
  }
});
