import test from 'ava';
import { signUpOwner, uniqueEmail, type Owner } from '../helpers/app.js';
import { useOwnerApp } from '../helpers/fixture.js';
import { inviteMember, type Member } from '../helpers/members.js';
import { ok, type Client } from '../helpers/client.js';
import { postForm, signInPage, visibleText } from '../helpers/pages.js';
import { dateText, longDateText, timeText } from '../../src/dates.js';

const { app, smtp, owner } = useOwnerApp(test, { workspace: 'Settings <i>Co</i>', smtp: true });
let mia: Member;

test.before(async () => {
  mia = await inviteMember(app, smtp, owner);
});

const workspaceOf = async (o: Owner) => (await ok(o.client.get('/api/v1/workspace'))).workspace;

test('without a session the settings pages send to sign-in; a member gets the 403 page for the workspace', async (t) => {
  for (const path of ['/app/settings', '/app/settings/account']) {
    const res = await app.client().get(path);
    t.is(res.status, 302, path);
    t.is(res.headers.get('location'), `/login?next=${encodeURIComponent(path)}`);
  }
  t.is((await mia.client.get('/app/settings')).status, 403);
  const posted = await postForm(mia.client, '/app/settings', { name: 'Mine now', time_zone: 'Asia/Tokyo' });
  t.is(posted.status, 403);
  t.like(await workspaceOf(owner), { name: 'Settings <i>Co</i>', time_zone: null });
});

test('the workspace page shows name, slug, status and time zone, escaped; trial days left; a locked workspace says why', async (t) => {
  const res = await owner.client.get('/app/settings');
  t.is(res.status, 200);
  t.true(res.text.includes('value="Settings &lt;i&gt;Co&lt;/i&gt;"'));
  t.false(res.text.includes('<i>Co</i>'));
  const text = visibleText(res.text);
  t.true(text.includes(`Slug ${owner.workspace.slug}`));
  t.true(text.includes('Status Active'));
  t.true(text.includes('Time zone UTC'));
  t.true(res.text.includes('list="time-zones"') && res.text.includes('<option value="Europe/Paris">'));

  const trial = await signUpOwner(app, 'On trial');
  const setTrialEnd = async (at: Date) => {
    await app.db('workspaces').where({ id: trial.workspace.id }).update({ status: 'trialing', trial_ends_at: at });
    app.sessionCache.evict({ workspaceId: trial.workspace.id });
  };
  await setTrialEnd(new Date(Date.now() + 3.5 * 86_400_000));
  t.regex(visibleText((await trial.client.get('/app/settings')).text), /Status Trial: 4 days left \(until \d+ \w+ \d{4}\)/);
  await setTrialEnd(new Date(Date.now() - 1000));
  const locked = await trial.client.get('/app/settings');
  t.is(locked.status, 402);
  t.true(visibleText(locked.text).includes('The trial of this workspace has expired.'));
});

test('renaming the workspace and setting a time zone: 303, visible through the API and on the next page', async (t) => {
  const boss = await signUpOwner(app, 'Renamed later');
  const saved = await postForm(boss.client, '/app/settings', { name: 'Renamed <b>now</b>', time_zone: 'europe/paris' });
  t.is(saved.status, 303);
  t.is(saved.headers.get('location'), '/app/settings');
  t.like(await workspaceOf(boss), { name: 'Renamed <b>now</b>', time_zone: 'Europe/Paris' });
  const next = await boss.client.get('/app/settings');
  t.true(visibleText(next.text).includes('The workspace settings are saved.'));
  t.true(next.text.includes('Renamed &lt;b&gt;now&lt;/b&gt;'), 'the bar shows the new name (the cached session was refreshed)');
  t.true(visibleText(next.text).includes('Time zone Europe/Paris'));
  const cleared = await postForm(boss.client, '/app/settings', { name: 'Renamed', time_zone: '' });
  t.is(cleared.status, 303);
  t.like(await workspaceOf(boss), { name: 'Renamed', time_zone: null });
});

test('the time zone changes how a date shows on a page; a calendar date stays that day', async (t) => {
  const boss = await signUpOwner(app, 'Zoned');
  // 23:30 UTC on 10 March is 08:30 on 11 March in Tokyo.
  const body = { external_id: 'zoned-1', customer: { email: uniqueEmail('zoned') }, placed_at: '2026-03-10T23:30:00Z', items: [{ description: 'Box', quantity: 1, price: '3.00' }] };
  const order = (await ok(app.client().post('/api/v1/orders/external', body, { headers: { authorization: `Bearer ${boss.keys.secret_key}` } }), 201)).order;
  const detail = async () => visibleText((await boss.client.get(`/app/orders/${order.id}`)).text);
  const list = async () => visibleText((await boss.client.get('/app/orders')).text);
  t.true((await detail()).includes('Placed 10 Mar 2026, 23:30 UTC'));
  t.true((await list()).includes('10 Mar 2026'));

  t.is((await postForm(boss.client, '/app/settings', { name: 'Zoned', time_zone: 'Asia/Tokyo' })).status, 303);
  t.true((await detail()).includes('Placed 11 Mar 2026, 08:30 GMT+9'), await detail());
  t.true((await list()).includes('11 Mar 2026'));
  t.false((await list()).includes('10 Mar 2026'));
  // Another workspace's pages keep their own zone.
  t.is(visibleText((await owner.client.get('/app/orders')).text).includes('GMT+9'), false);

  // A calendar date (valid until) is the same day in any zone; an instant moves with it.
  t.is(dateText('2030-01-31', 'America/New_York'), '31 Jan 2030');
  t.is(longDateText('2030-01-31', 'Pacific/Kiritimati'), '31 January 2030');
  t.is(dateText('2030-01-31T02:00:00Z', 'America/New_York'), '30 Jan 2030');
  t.is(timeText('2030-01-31T14:05:00Z'), '31 Jan 2030, 14:05 UTC');
  t.is(timeText('2030-01-31T14:05:00Z', 'Europe/Paris'), '31 Jan 2030, 15:05 CET');
});

test('a bad time zone or an empty name is a 422 beside its field, with the input kept and nothing changed', async (t) => {
  const badZone = await postForm(owner.client, '/app/settings', { name: 'Kept name', time_zone: 'Mars/Olympus_Mons' });
  t.is(badZone.status, 422);
  t.regex(badZone.text, /<p class="field-error" id="f-time_zone-error">time_zone: must be an IANA time zone name, e\.g\. Europe\/Paris or America\/New_York\.<\/p>/);
  t.true(badZone.text.includes('value="Mars/Olympus_Mons"') && badZone.text.includes('value="Kept name"'));
  t.true(badZone.text.includes('aria-invalid="true"'));
  for (const offset of ['+01:00', 'GMT+1:00']) {
    t.is((await postForm(owner.client, '/app/settings', { name: 'Kept name', time_zone: offset })).status, 422, offset);
  }
  const noName = await postForm(owner.client, '/app/settings', { name: ' ', time_zone: 'Europe/Paris' });
  t.is(noName.status, 422);
  t.regex(noName.text, /id="f-name-error">name: /);
  t.like(await workspaceOf(owner), { name: 'Settings <i>Co</i>', time_zone: null });
});

test('the settings forms pass the Origin check', async (t) => {
  for (const [path, fields] of [
    ['/app/settings', { name: 'Evil', time_zone: 'Asia/Tokyo' }],
    ['/app/settings/account', { name: 'Evil' }],
    ['/app/settings/account/sessions', {}],
  ] as const) {
    const res = await postForm(owner.client, path, fields, { origin: 'https://evil.example' });
    t.is(res.status, 403, path);
    t.true(visibleText(res.text).includes('Cross-site request refused'), path);
  }
  t.like(await workspaceOf(owner), { name: 'Settings <i>Co</i>', time_zone: null });
  t.is((await ok(owner.client.get('/api/v1/auth/me'))).user.name, 'Olive Owner');
  t.is((await owner.client.get('/app')).status, 200, 'still signed in');
});

test('your account: everyone changes their name there (422 beside the field when empty), and reaches the password page', async (t) => {
  const client = app.client();
  await signInPage(client, mia.email, mia.password);
  const page = await client.get('/app/settings/account');
  t.is(page.status, 200);
  t.true(page.text.includes('value="Mia Member"') && page.text.includes('href="/app/settings/password"'));
  t.false(page.text.includes('href="/app/settings"'), 'no owner tab for a member');
  const empty = await postForm(client, '/app/settings/account', { name: '' });
  t.is(empty.status, 422);
  t.regex(empty.text, /id="f-name-error">name: /);
  const saved = await postForm(client, '/app/settings/account', { name: 'Mia <em>M</em>' });
  t.is(saved.status, 303);
  t.is((await ok(client.get('/api/v1/auth/me'))).user.name, 'Mia <em>M</em>');
  const after = await client.get('/app/settings/account');
  t.true(visibleText(after.text).includes('Your name is saved.'));
  t.true(after.text.includes('Mia &lt;em&gt;M&lt;/em&gt;'));
  t.false(after.text.includes('<em>M</em>'));
  t.true((await ok(owner.client.get('/api/v1/auth/me'))).user.name === 'Olive Owner', "the owner's name is not touched");
});

test('signing out every other session: they get the sign-in page at once, this one stays', async (t) => {
  const email = uniqueEmail('many');
  const password = 'many sessions 123';
  await ok(app.client().post('/api/v1/auth/signup', { email, password, name: 'Manny', workspace_name: 'Many' }), 201);
  const here = app.client();
  await signInPage(here, email, password);
  const others: Client[] = [];
  for (let i = 0; i < 2; i++) {
    const client = app.client();
    await signInPage(client, email, password);
    t.is((await client.get('/app')).status, 200);
    others.push(client);
  }
  // The signup's own session is a third: signed in elsewhere three times.
  const before = visibleText((await here.get('/app/settings/account')).text);
  t.true(before.includes('You are also signed in in 3 other places'), before);
  const res = await postForm(here, '/app/settings/account/sessions', {});
  t.is(res.status, 303);
  const done = visibleText((await here.get('/app/settings/account')).text);
  t.true(done.includes('3 other sessions are signed out.'), done);
  for (const client of others) {
    const next = await client.get('/app');
    t.is(next.status, 302);
    t.is(next.headers.get('location'), '/login?next=%2Fapp');
  }
  t.is((await here.get('/app')).status, 200);
  t.true(visibleText((await here.get('/app/settings/account')).text).includes('You are signed in here only.'));
  t.false((await here.get('/app/settings/account')).text.includes('action="/app/settings/account/sessions"'));
});
