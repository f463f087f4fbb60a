import test from 'ava';
import { signUpOwner, uniqueEmail, type Owner } from '../helpers/app.js';
import { useOwnerApp } from '../helpers/fixture.js';
import { inviteMember, tokenFromMail, type Member } from '../helpers/members.js';
import { ok, type Client } from '../helpers/client.js';
import { postForm, visibleText, getPage as page, rowText, ownSession as signedIn } from '../helpers/pages.js';

const { app, smtp, owner } = useOwnerApp(test, { workspace: 'App channels', smtp: true });
let mia: Member;
let other: Owner;
/** Mia has no role on `hidden`, is a viewer on `viewed` and the manager of `managed`. */
let hidden: any;
let viewed: any;
let managed: any;

async function channel(fields: Record<string, unknown> = {}, o: Owner = owner): Promise<any> {
  return (await ok(o.client.post('/api/v1/channels', { name: `Shop ${uniqueEmail('c')}`, ...fields }), 201)).channel;
}
const grant = (channelId: number, userId: number, role: string) => ok(owner.client.put(`/api/v1/channels/${channelId}/members/${userId}`, { role }));
const apiChannel = async (id: number, client: Client = owner.client) => (await client.get(`/api/v1/channels/${id}`)).body?.data;

/** The channel links of a page, in order. */
const links = (html: string) => [...html.matchAll(/<a href="\/app\/channels\/(\d+)">/g)].map((m) => Number(m[1]));

/** A session of the owner's own: the flash message a POST leaves is this client's alone while other tests run. */
const ownSession = () => signedIn(app, owner);

test.before(async () => {
  mia = await inviteMember(app, smtp, owner);
  other = await signUpOwner(app, 'Elsewhere');
  hidden = await channel({ name: 'Hidden shop' });
  viewed = await channel({ name: 'Viewed shop' });
  managed = await channel({ name: 'Managed shop' });
  await grant(viewed.id, mia.user.id, 'viewer');
  await grant(managed.id, mia.user.id, 'manager');
});

test('without a session every channels page sends to sign-in, and no POST changes anything', async (t) => {
  const c = await channel({ name: 'Anon target' });
  const anon = app.client();
  for (const path of ['/app/channels', '/app/channels?type=web', '/app/channels/new', `/app/channels/${c.id}`, `/app/channels/${c.id}/edit`, `/app/channels/${c.id}/delete`]) {
    const res = await anon.get(path);
    t.is(res.status, 302, path);
    t.is(res.headers.get('location'), `/login?next=${encodeURIComponent(path)}`, path);
  }
  for (const [path, fields] of [
    ['/app/channels/new', { name: 'Anon channel' }],
    [`/app/channels/${c.id}/edit`, { name: 'Changed' }],
    [`/app/channels/${c.id}/delete`, {}],
    [`/app/channels/${c.id}/members`, { user_id: String(mia.user.id), role: 'manager' }],
  ] as const) {
    const res = await postForm(anon, path, fields);
    t.is(res.status, 303, path);
    t.regex(res.headers.get('location') ?? '', /^\/login/, path);
  }
  t.like(await apiChannel(c.id), { channel: { name: 'Anon target' }, members: [] });
});

test('the list: 50 a page newest first, the API filters as a GET form, the roles counted; nothing found says so', async (t) => {
  const ws = await signUpOwner(app, 'Many channels');
  const made = [];
  for (let i = 0; i < 53; i++) made.push(await channel({ name: `Outlet ${i}` }, ws));
  const special = await channel({ name: 'Findable Market', type: 'marketplace', ownership: 'third_party', status: 'paused', country: 'de', currency: 'eur' }, ws);
  await ok(ws.client.put(`/api/v1/channels/${special.id}/members/${ws.user.id}`, { role: 'viewer' }));

  const one = await page(ws.client, '/app/channels');
  t.is(links(one.text).length, 50);
  t.is(links(one.text)[0], special.id);
  t.regex(visibleText(one.text), /1–50 of 54 channels/);
  t.true(one.text.includes('<a class="button primary" href="/app/channels/new">New channel</a>'));
  t.is(rowText(one.text, `/app/channels/${special.id}`), 'Findable Market Marketplace Third party Paused DE EUR 1');
  t.is(rowText(one.text, `/app/channels/${made[52].id}`), 'Outlet 52 Web Owned Active 0');
  t.deepEqual(links((await page(ws.client, '/app/channels?page=2')).text), made.slice(0, 4).map((c) => c.id).reverse());
  for (const name of ['q', 'type', 'ownership', 'status', 'country']) t.true(one.text.includes(`<label for="f-${name}">`), name);

  for (const query of ['q=findable', 'type=marketplace', 'ownership=third_party', 'status=paused', 'country=de', 'q=market&type=marketplace&ownership=third_party&status=paused&country=DE']) {
    t.deepEqual(links((await page(ws.client, `/app/channels?${query}`)).text), [special.id], query);
  }
  const filtered = await page(ws.client, '/app/channels?type=marketplace&status=paused');
  t.true(filtered.text.includes('<option value="marketplace" selected>'));
  t.true(filtered.text.includes('<option value="paused" selected>'));
  const none = await page(ws.client, '/app/channels?type=retail');
  t.deepEqual(links(none.text), []);
  t.regex(visibleText(none.text), /No channels match these filters\./);
  const bad = await ws.client.get('/app/channels?type=shop');
  t.is(bad.status, 422);
  t.regex(visibleText(bad.text), /type: must be one of web, marketplace, retail, wholesale, b2b/);

  const empty = await signUpOwner(app, 'No channels');
  t.regex(visibleText((await page(empty.client, '/app/channels')).text), /No channels yet\. Create the first one/);
});

test("a member sees the channels the API shows them, no owner's controls, and a manager's controls only where they manage", async (t) => {
  // A member of her own: other tests grant Mia roles meanwhile.
  const ben = await inviteMember(app, smtp, owner);
  await grant(viewed.id, ben.user.id, 'viewer');
  await grant(managed.id, ben.user.id, 'manager');
  const list = await page(ben.client, '/app/channels');
  t.deepEqual(links(list.text).sort(), [viewed.id, managed.id].sort());
  t.false(list.text.includes('/app/channels/new'), 'no New channel link');
  t.true(list.text.includes('<a href="/app/channels" aria-current="page">Channels</a>'), 'Channels in the navigation');
  const apiIds = (await ben.client.get('/api/v1/channels')).body.data.channels.map((c: any) => c.id);
  t.deepEqual(links(list.text).sort(), apiIds.sort());
  t.deepEqual(links((await page(ben.client, '/app/channels?q=hidden')).text), []);

  t.is((await ben.client.get(`/app/channels/${hidden.id}`)).status, 404);
  const asViewer = await page(ben.client, `/app/channels/${viewed.id}`);
  const viewerText = visibleText(asViewer.text);
  t.regex(viewerText, /Viewed shop/);
  t.regex(viewerText, new RegExp(`Mia Member ${ben.email.replace(/[.+]/g, '\\$&')} Viewer`));
  for (const absent of [`/app/channels/${viewed.id}/edit`, `/app/channels/${viewed.id}/delete`, `/app/channels/${viewed.id}/members`, '/revoke']) {
    t.false(asViewer.text.includes(absent), absent);
  }
  const asManager = await page(ben.client, `/app/channels/${managed.id}`);
  t.true(asManager.text.includes(`href="/app/channels/${managed.id}/edit"`));
  t.true(asManager.text.includes(`action="/app/channels/${managed.id}/members"`));
  t.true(asManager.text.includes(`action="/app/channels/${managed.id}/members/${ben.user.id}/revoke"`));
  t.false(asManager.text.includes(`/app/channels/${managed.id}/delete`), 'deleting is the owner\'s');
  t.true((await page(owner.client, `/app/channels/${viewed.id}`)).text.includes(`href="/app/channels/${viewed.id}/delete"`));
});

test("owner-only writes and a viewer's writes are the 403 page for a member; a hidden channel is 404; nothing changes", async (t) => {
  const target = await channel({ name: 'Owner target' });
  await grant(target.id, mia.user.id, 'viewer');
  const forbidden: [string, string, Record<string, string>?][] = [
    ['get', '/app/channels/new'],
    ['post', '/app/channels/new', { name: 'Mia channel' }],
    ['get', `/app/channels/${target.id}/delete`],
    ['post', `/app/channels/${target.id}/delete`, {}],
    ['post', `/app/channels/${managed.id}/delete`, {}],
    ['get', `/app/channels/${target.id}/edit`],
    ['post', `/app/channels/${target.id}/edit`, { name: 'Viewer rename' }],
    ['post', `/app/channels/${target.id}/members`, { user_id: String(mia.user.id), role: 'manager' }],
    ['post', `/app/channels/${target.id}/members/${mia.user.id}/revoke`, {}],
  ];
  for (const [method, path, fields] of forbidden) {
    const res = method === 'get' ? await mia.client.get(path) : await postForm(mia.client, path, fields ?? {});
    t.is(res.status, 403, `${method} ${path}`);
    t.regex(visibleText(res.text), /You may not do this/, path);
  }
  for (const [method, path, fields] of [
    ['get', `/app/channels/${hidden.id}/edit`],
    ['post', `/app/channels/${hidden.id}/edit`, { name: 'Hidden rename' }],
    ['post', `/app/channels/${hidden.id}/edit`, { name: '' }],
    ['post', `/app/channels/${hidden.id}/members`, { user_id: String(mia.user.id), role: 'viewer' }],
    ['post', `/app/channels/${hidden.id}/members/${mia.user.id}/revoke`, {}],
  ] as [string, string, Record<string, string>?][]) {
    const res = method === 'get' ? await mia.client.get(path) : await postForm(mia.client, path, fields ?? {});
    t.is(res.status, 404, `${method} ${path}`);
    t.false(res.text.includes('Hidden shop'), path);
  }
  t.like(await apiChannel(target.id), { channel: { name: 'Owner target' }, members: [{ user_id: mia.user.id, role: 'viewer' }] });
  t.like(await apiChannel(hidden.id), { channel: { name: 'Hidden shop' }, members: [] });
  t.false((await owner.client.get('/api/v1/channels')).body.data.channels.some((c: any) => c.name === 'Mia channel'));
});

test("a channel's manager edits it and grants and revokes roles on it, as the API lets them", async (t) => {
  const mine = await channel({ name: 'Mia managed' });
  await grant(mine.id, mia.user.id, 'manager');
  const form = await page(mia.client, `/app/channels/${mine.id}/edit`);
  t.true(form.text.includes('value="Mia managed"'));
  const saved = await postForm(mia.client, `/app/channels/${mine.id}/edit`, { name: 'Mia renamed', type: 'retail', ownership: 'owned', status: 'active', country: 'fr', currency: '' });
  t.is(saved.status, 303);
  t.like(await apiChannel(mine.id), { channel: { name: 'Mia renamed', type: 'retail', country: 'FR' } });

  const granted = await postForm(mia.client, `/app/channels/${mine.id}/members`, { user_id: String(owner.user.id), role: 'editor' });
  t.is(granted.status, 303);
  t.is(granted.headers.get('location'), `/app/channels/${mine.id}`);
  t.like((await apiChannel(mine.id)).members.find((m: any) => m.user_id === owner.user.id), { role: 'editor' });
  t.is((await postForm(mia.client, `/app/channels/${mine.id}/members/${owner.user.id}/revoke`, {})).status, 303);
  t.false((await apiChannel(mine.id)).members.some((m: any) => m.user_id === owner.user.id));

  // Giving up her own role: she can no longer read the channel, so she is sent back to the list.
  const self = await postForm(mia.client, `/app/channels/${mine.id}/members/${mia.user.id}/revoke`, {});
  t.is(self.status, 303);
  t.is(self.headers.get('location'), '/app/channels');
  t.is((await mia.client.get(`/app/channels/${mine.id}`)).status, 404);
});

test('create: 303 to the new channel, seen through the API; 422 keeps the input with the message beside its field; Origin checked', async (t) => {
  const form = await page(owner.client, '/app/channels/new');
  for (const name of ['name', 'type', 'ownership', 'status', 'country', 'currency']) t.true(form.text.includes(`<label for="f-${name}">`), name);

  const invalid = await postForm(owner.client, '/app/channels/new', { name: 'Kept Name', type: 'b2b', ownership: 'third_party', status: 'paused', country: 'AT', currency: 'EURO' });
  t.is(invalid.status, 422);
  t.true(invalid.text.includes('<p class="field-error" id="f-currency-error">currency: must be a 3-letter ISO currency code.</p>'));
  t.true(invalid.text.includes('value="Kept Name"'));
  t.true(invalid.text.includes('value="EURO"'));
  t.true(invalid.text.includes('value="AT"'));
  t.true(invalid.text.includes('<option value="b2b" selected>'));
  t.true(invalid.text.includes('<option value="third_party" selected>'));
  const unnamed = await postForm(owner.client, '/app/channels/new', { name: '  ', type: 'web' });
  t.is(unnamed.status, 422);
  t.true(unnamed.text.includes('<p class="field-error" id="f-name-error">name is required.</p>'));
  const badType = await postForm(owner.client, '/app/channels/new', { name: 'Typed', type: 'shop' });
  t.is(badType.status, 422);
  t.true(badType.text.includes('<p class="field-error" id="f-type-error">type: must be one of web, marketplace, retail, wholesale, b2b.</p>'));

  const name = `Created ${uniqueEmail('n')}`;
  t.is((await postForm(owner.client, '/app/channels/new', { name }, { origin: 'https://evil.example' })).status, 403);
  const own = await ownSession();
  const created = await postForm(own, '/app/channels/new', { name, type: 'wholesale', ownership: 'owned', status: 'active', country: 'nl', currency: 'eur' });
  t.is(created.status, 303);
  const id = Number(/^\/app\/channels\/(\d+)$/.exec(created.headers.get('location') ?? '')?.[1]);
  t.like(await apiChannel(id), { channel: { name, type: 'wholesale', ownership: 'owned', status: 'active', country: 'NL', currency: 'EUR' }, members: [] });
  const shown = visibleText((await page(own, `/app/channels/${id}`)).text);
  t.regex(shown, /Channel created\./);
  t.regex(shown, /Wholesale .*Owned .*Active .*NL .*EUR/);
  t.is((await owner.client.get('/api/v1/channels')).body.data.channels.filter((c: any) => c.name === name).length, 1, 'the evil origin created nothing');
});

test('edit: the form holds the channel; 303 and the change through the API; an emptied currency is cleared; 422 keeps the input; Origin checked', async (t) => {
  const c = await channel({ name: 'Before', type: 'b2b', country: 'US', currency: 'USD' });
  const form = await page(owner.client, `/app/channels/${c.id}/edit`);
  t.true(form.text.includes('value="Before"'));
  t.true(form.text.includes('value="USD"'));
  t.true(form.text.includes('<option value="b2b" selected>'));

  const invalid = await postForm(owner.client, `/app/channels/${c.id}/edit`, { name: 'Kept', type: 'web', ownership: 'owned', status: 'active', country: 'USA', currency: '' });
  t.is(invalid.status, 422);
  t.true(invalid.text.includes('<p class="field-error" id="f-country-error">country: must be a 2-letter ISO country code.</p>'));
  t.true(invalid.text.includes('value="Kept"'));
  t.true(invalid.text.includes('value="USA"'));
  t.is((await postForm(owner.client, `/app/channels/${c.id}/edit`, { name: 'Evil' }, { origin: 'https://evil.example' })).status, 403);
  t.like(await apiChannel(c.id), { channel: { name: 'Before', country: 'US', currency: 'USD' } });

  const own = await ownSession();
  const saved = await postForm(own, `/app/channels/${c.id}/edit`, { name: 'After', type: 'retail', ownership: 'third_party', status: 'paused', country: '', currency: '' });
  t.is(saved.status, 303);
  t.is(saved.headers.get('location'), `/app/channels/${c.id}`);
  t.like(await apiChannel(c.id), { channel: { name: 'After', type: 'retail', ownership: 'third_party', status: 'paused', country: null, currency: null } });
  t.regex(visibleText((await page(own, `/app/channels/${c.id}`)).text), /Channel saved\./);
});

test('delete: a confirmation page, then 303 and gone from the API; a used channel shows its quotes and orders and can be archived instead; Origin checked', async (t) => {
  const lone = await channel({ name: 'Lone channel' });
  await grant(lone.id, mia.user.id, 'viewer');
  const asked = await page(owner.client, `/app/channels/${lone.id}/delete`);
  t.regex(visibleText(asked.text), /Delete Lone channel\? .*The role granted on it goes with it\./);
  t.true(asked.text.includes(`<form method="post" action="/app/channels/${lone.id}/delete"><button type="submit" class="danger">Delete channel</button></form>`));
  t.is((await postForm(owner.client, `/app/channels/${lone.id}/delete`, {}, { origin: 'https://evil.example' })).status, 403);
  t.like(await apiChannel(lone.id), { channel: { id: lone.id } });
  const own = await ownSession();
  const gone = await postForm(own, `/app/channels/${lone.id}/delete`, {});
  t.is(gone.status, 303);
  t.is(gone.headers.get('location'), '/app/channels');
  t.is((await owner.client.get(`/api/v1/channels/${lone.id}`)).status, 404);
  t.regex(visibleText((await page(own, '/app/channels')).text), /Lone channel is deleted\./);

  const used = await channel({ name: 'Busy channel' });
  const customer = (await ok(owner.client.post('/api/v1/customers', { email: uniqueEmail('cust') }), 201)).customer;
  for (let i = 0; i < 2; i++) {
    await ok(owner.client.post('/api/v1/quotes', { customer_id: customer.id, channel_id: used.id, lines: [{ description: 'Work', price: '10.00' }] }), 201);
  }
  await ok(app.client().post('/api/v1/orders/external', { external_id: `busy-${process.pid}`, channel_id: used.id, items: [{ description: 'Box', quantity: 1, price: '3.00' }] }, { headers: { authorization: `Bearer ${owner.keys.secret_key}` } }), 201);
  const refused = await postForm(owner.client, `/app/channels/${used.id}/delete`, {});
  t.is(refused.status, 409);
  const text = visibleText(refused.text);
  t.regex(text, /Busy channel cannot be deleted/);
  t.regex(text, /It is used by: 2 quotes 1 order A channel in use cannot be deleted\. You can archive it instead\./);
  t.true(refused.text.includes('<input type="hidden" name="status" value="archived">'));
  t.like(await apiChannel(used.id), { channel: { id: used.id, status: 'active' } });

  const archived = await postForm(owner.client, `/app/channels/${used.id}/edit`, { status: 'archived' });
  t.is(archived.status, 303);
  t.like(await apiChannel(used.id), { channel: { name: 'Busy channel', status: 'archived' } });
});

test('grant and revoke: a person and a role picked on the channel page, seen through the API; 422 beside the field; Origin checked', async (t) => {
  const c = await channel({ name: 'Roles channel' });
  const shown = await page(owner.client, `/app/channels/${c.id}`);
  t.regex(visibleText(shown.text), /No roles on this channel yet\./);
  t.true(shown.text.includes(`<option value="${mia.user.id}">Mia Member (${mia.email})</option>`));
  t.true(shown.text.includes('<label for="f-user_id">Person</label>'));
  t.true(shown.text.includes('<label for="f-role">Role</label>'));

  t.is((await postForm(owner.client, `/app/channels/${c.id}/members`, { user_id: String(mia.user.id), role: 'editor' }, { origin: 'https://evil.example' })).status, 403);
  t.deepEqual((await apiChannel(c.id)).members, []);
  const own = await ownSession();
  const granted = await postForm(own, `/app/channels/${c.id}/members`, { user_id: String(mia.user.id), role: 'editor' });
  t.is(granted.status, 303);
  t.is(granted.headers.get('location'), `/app/channels/${c.id}`);
  t.like(await apiChannel(c.id), { members: [{ user_id: mia.user.id, role: 'editor' }] });
  const after = await page(own, `/app/channels/${c.id}`);
  t.regex(visibleText(after.text), /Mia Member is now editor on Roles channel\./);
  t.regex(visibleText(after.text), /Roles 1 /);
  t.regex(visibleText(after.text), new RegExp(`Mia Member ${mia.email.replace(/[.+]/g, '\\$&')} Editor`));
  t.true((await mia.client.get(`/app/channels/${c.id}`)).status === 200, 'the role lets her read it');

  t.is((await postForm(own, `/app/channels/${c.id}/members`, { user_id: String(mia.user.id), role: 'manager' })).status, 303);
  t.like(await apiChannel(c.id), { members: [{ user_id: mia.user.id, role: 'manager' }] });

  const noUser = await postForm(owner.client, `/app/channels/${c.id}/members`, { user_id: '', role: 'viewer' });
  t.is(noUser.status, 422);
  t.true(noUser.text.includes('<p class="field-error" id="f-user_id-error">user_id: choose a person from the list.</p>'));
  t.true(noUser.text.includes('<option value="viewer" selected>'));
  const badRole = await postForm(owner.client, `/app/channels/${c.id}/members`, { user_id: String(mia.user.id), role: 'boss' });
  t.is(badRole.status, 422);
  t.true(badRole.text.includes('<p class="field-error" id="f-role-error">role: must be one of viewer, editor, manager.</p>'));
  t.true(badRole.text.includes(`<option value="${mia.user.id}" selected>`));
  t.is((await postForm(owner.client, `/app/channels/${c.id}/members`, { user_id: String(other.user.id), role: 'viewer' })).status, 404, "another workspace's user");

  t.is((await postForm(owner.client, `/app/channels/${c.id}/members/${mia.user.id}/revoke`, {}, { origin: 'https://evil.example' })).status, 403);
  t.like(await apiChannel(c.id), { members: [{ user_id: mia.user.id }] });
  const revoked = await postForm(own, `/app/channels/${c.id}/members/${mia.user.id}/revoke`, {});
  t.is(revoked.status, 303);
  t.is(revoked.headers.get('location'), `/app/channels/${c.id}`);
  t.deepEqual((await apiChannel(c.id)).members, []);
  t.regex(visibleText((await page(own, `/app/channels/${c.id}`)).text), /Mia Member no longer has a role on Roles channel\./);
  t.is((await mia.client.get(`/app/channels/${c.id}`)).status, 404, 'without a role she no longer reads it');
  t.is((await postForm(owner.client, `/app/channels/${c.id}/members/${mia.user.id}/revoke`, {})).status, 404, 'no role to revoke');
});

test("another workspace's channel and a malformed id are the 404 page, for every page and POST", async (t) => {
  const theirs = await channel({ name: 'Their channel' }, other);
  for (const path of [`/app/channels/${theirs.id}`, `/app/channels/${theirs.id}/edit`, `/app/channels/${theirs.id}/delete`, '/app/channels/abc', '/app/channels/0/edit', '/app/channels/1.5', '/app/channels/99999999999']) {
    const res = await owner.client.get(path);
    t.is(res.status, 404, path);
    t.false(res.text.includes('Their channel'), path);
  }
  for (const [path, fields] of [
    [`/app/channels/${theirs.id}/edit`, { name: 'Mine now' }],
    [`/app/channels/${theirs.id}/edit`, { name: '' }],
    [`/app/channels/${theirs.id}/delete`, {}],
    [`/app/channels/${theirs.id}/members`, { user_id: String(owner.user.id), role: 'viewer' }],
    [`/app/channels/${theirs.id}/members/${other.user.id}/revoke`, {}],
    [`/app/channels/${viewed.id}/members/abc/revoke`, {}],
    ['/app/channels/abc/delete', {}],
    ['/app/channels/abc/edit', { name: 'x' }],
  ] as const) {
    t.is((await postForm(owner.client, path, fields)).status, 404, path);
  }
  t.like(await apiChannel(theirs.id, other.client), { channel: { name: 'Their channel' } });
  t.false(links((await page(owner.client, '/app/channels?q=Their')).text).includes(theirs.id));
});

test('markup in a channel name and a person\'s name comes out escaped on every channels page', async (t) => {
  const evil = '<script>x</script>';
  const c = await channel({ name: `Name ${evil}` });
  await grant(c.id, mia.user.id, 'viewer');
  const email = uniqueEmail('evil');
  await ok(owner.client.post('/api/v1/invites', { email, role: 'member' }), 201);
  const token = tokenFromMail(await smtp.waitFor(email));
  const eve = (await ok(app.client().post('/api/v1/invites/accept', { token, name: `Eve ${evil}`, password: 'member password 123' }), 201)).user;
  await grant(c.id, eve.id, 'viewer');
  const customer = (await ok(owner.client.post('/api/v1/customers', { email: uniqueEmail('esc') }), 201)).customer;
  await ok(owner.client.post('/api/v1/quotes', { customer_id: customer.id, channel_id: c.id, lines: [{ description: 'Work', price: '10.00' }] }), 201);
  const own = await ownSession();
  t.is((await postForm(own, `/app/channels/${c.id}/members`, { user_id: String(eve.id), role: 'editor' })).status, 303);
  const refused = await postForm(owner.client, `/app/channels/${c.id}/delete`, {});
  const invalid = await postForm(owner.client, `/app/channels/${c.id}/edit`, { name: `Typed ${evil}`, country: 'xyz' });
  const badGrant = await postForm(owner.client, `/app/channels/${c.id}/members`, { user_id: '', role: 'viewer' });
  for (const [what, html] of [
    ['list', (await page(owner.client, '/app/channels')).text],
    ['search', (await page(owner.client, `/app/channels?q=${encodeURIComponent(evil)}`)).text],
    ['detail with flash', (await page(own, `/app/channels/${c.id}`)).text],
    ["member's detail", (await page(mia.client, `/app/channels/${c.id}`)).text],
    ['edit', (await page(owner.client, `/app/channels/${c.id}/edit`)).text],
    ['delete', (await page(owner.client, `/app/channels/${c.id}/delete`)).text],
    ['409', refused.text],
    ['422 edit', invalid.text],
    ['422 grant', badGrant.text],
  ]) {
    t.false(html.includes('<script>x'), what);
    t.true(html.includes('&lt;script&gt;x&lt;/script&gt;'), what);
  }
  const detail = (await page(own, `/app/channels/${c.id}`)).text;
  t.true(detail.includes(`Eve &lt;script&gt;x&lt;/script&gt; (${email})</option>`), 'the picker');
  t.true(detail.includes('<td data-label="Name">Eve &lt;script&gt;x&lt;/script&gt;</td>'), 'the roles table');
});
