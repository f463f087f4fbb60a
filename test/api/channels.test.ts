import test from 'ava';
import { signUpOwner, type Owner } from '../helpers/app.js';
import { useOwnerApp } from '../helpers/fixture.js';
import { inviteMember, type Member } from '../helpers/members.js';
import type { Client } from '../helpers/client.js';
import type { Access } from '../../src/access.js';
import { Principal } from '../../src/http/principal.js';
import { assertChannelAccess, whereReadable, type ChannelNeed } from '../../src/channels/access.js';
import { scoped } from '../../src/db/scoped.js';

const { app, smtp, owner } = useOwnerApp(test, { workspace: 'Channels', smtp: true });
let other: Owner;
let mia: Member;
let max: Member;
test.before(async () => {
  other = await signUpOwner(app, 'Elsewhere');
  mia = await inviteMember(app, smtp, owner);
  max = await inviteMember(app, smtp, owner);
});

let counter = 0;
async function newChannel(fields: Record<string, unknown> = {}, by: Owner = owner): Promise<any> {
  const res = await by.client.post('/api/v1/channels', { name: `Channel ${++counter}`, ...fields });
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.text}`);
  return res.body.data.channel;
}

const grant = (client: Client, channelId: number, userId: number, role: string) => client.put(`/api/v1/channels/${channelId}/members/${userId}`, { role });
const revoke = (client: Client, channelId: number, userId: number) => client.delete(`/api/v1/channels/${channelId}/members/${userId}`);
const listIds = async (client: Client, query = ''): Promise<number[]> => {
  const res = await client.get(`/api/v1/channels${query}`);
  if (res.status !== 200) throw new Error(`list failed: ${res.status} ${res.text}`);
  return res.body.data.channels.map((c: { id: number }) => c.id);
};

test('create with defaults, read, partial update (PUT = PATCH), list, delete with snapshot', async (t) => {
  const created = await owner.client.post('/api/v1/channels', { name: '  Web shop  ' });
  t.is(created.status, 201);
  const channel = created.body.data.channel;
  t.like(channel, { name: 'Web shop', type: 'web', ownership: 'owned', status: 'active', country: null, currency: null });
  t.deepEqual(Object.keys(channel).sort(), ['country', 'created_at', 'currency', 'id', 'name', 'ownership', 'status', 'type', 'updated_at']);
  t.regex(channel.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

  const full = await owner.client.post('/api/v1/channels', { name: 'Amazon DE', type: 'marketplace', ownership: 'third_party', status: 'paused', country: 'de', currency: ' eur ' });
  t.is(full.status, 201);
  t.like(full.body.data.channel, { type: 'marketplace', ownership: 'third_party', status: 'paused', country: 'DE', currency: 'EUR' });

  const got = await owner.client.get(`/api/v1/channels/${channel.id}`);
  t.is(got.status, 200);
  t.deepEqual(got.body.data, { channel, members: [] });

  const patched = await owner.client.patch(`/api/v1/channels/${channel.id}`, { country: 'gb', currency: 'gbp' });
  t.is(patched.status, 200);
  t.like(patched.body.data.channel, { name: 'Web shop', type: 'web', country: 'GB', currency: 'GBP' });
  const put = await owner.client.put(`/api/v1/channels/${channel.id}`, { status: 'archived', country: null, currency: '' });
  t.like(put.body.data.channel, { name: 'Web shop', status: 'archived', country: null, currency: null });
  const unchanged = await owner.client.patch(`/api/v1/channels/${channel.id}`, {});
  t.deepEqual(unchanged.body.data.channel, put.body.data.channel);

  const list = await owner.client.get('/api/v1/channels');
  t.is(list.body.version, 'v1');
  t.deepEqual(list.body.data.channels.find((c: { id: number }) => c.id === channel.id), put.body.data.channel);

  const deleted = await owner.client.delete(`/api/v1/channels/${channel.id}`);
  t.is(deleted.status, 200);
  t.deepEqual(deleted.body.data.channel, put.body.data.channel);
  t.is((await owner.client.get(`/api/v1/channels/${channel.id}`)).status, 404);
  t.is((await owner.client.delete(`/api/v1/channels/${channel.id}`)).status, 404);
  t.is((await app.db('events').where({ workspace_id: owner.workspace.id }).whereLike('type', 'channel%')).length, 0, 'no channel events');
});

test('filters: type, ownership, status, country (case-insensitive), q; empty values ignored', async (t) => {
  const ws = await signUpOwner(app, 'Filters');
  const web = await newChannel({ name: 'Main Web Store', country: 'us' }, ws);
  const market = await newChannel({ name: 'eBay US', type: 'marketplace', ownership: 'third_party', country: 'US' }, ws);
  const retail = await newChannel({ name: 'Berlin 100% Store', type: 'retail', status: 'paused', country: 'DE' }, ws);
  const b2b = await newChannel({ name: 'Partner portal', type: 'b2b', status: 'archived' }, ws);
  const ids = (query: string) => listIds(ws.client, query);
  t.deepEqual(await ids(''), [web.id, market.id, retail.id, b2b.id]);
  t.deepEqual(await ids('?type=marketplace'), [market.id]);
  t.deepEqual(await ids('?type=wholesale'), []);
  t.deepEqual(await ids('?ownership=owned'), [web.id, retail.id, b2b.id]);
  t.deepEqual(await ids('?ownership=third_party'), [market.id]);
  t.deepEqual(await ids('?status=active'), [web.id, market.id]);
  t.deepEqual(await ids('?status=archived'), [b2b.id]);
  t.deepEqual(await ids('?country=US'), [web.id, market.id]);
  t.deepEqual(await ids('?country=de'), [retail.id], 'country is upper-cased before matching');
  t.deepEqual(await ids('?country=FR'), []);
  t.deepEqual(await ids('?q=store'), [web.id, retail.id]);
  t.deepEqual(await ids('?q=EBAY'), [market.id]);
  t.deepEqual(await ids('?q=%25'), [retail.id], 'q is a plain substring: % matches only a literal %');
  t.deepEqual(await ids('?q=_'), [], '_ is not a wildcard');
  t.deepEqual(await ids('?type=retail&country=de&status=paused&q=berlin'), [retail.id]);
  t.deepEqual(await ids('?type=retail&country=US'), []);
  t.deepEqual(await ids('?type=&ownership=&status=&country=&q='), [web.id, market.id, retail.id, b2b.id], 'empty filters are ignored');
  t.deepEqual(await ids('?type=%20&country=%20%20'), [web.id, market.id, retail.id, b2b.id], 'blank filters are ignored');
  for (const [query, field] of [
    ['?type=shop', 'type'],
    ['?ownership=mine', 'ownership'],
    ['?status=deleted', 'status'],
    ['?country=USA', 'country'],
  ]) {
    const res = await ws.client.get(`/api/v1/channels${query}`);
    t.is(res.status, 422, query);
    t.regex(res.body.error, new RegExp(`^${field}`), query);
  }
});

test('validation: 422 naming the field; nothing written', async (t) => {
  const ws = await signUpOwner(app, 'Validation');
  for (const [input, field] of [
    [{}, 'name'],
    [{ name: '   ' }, 'name'],
    [{ name: 'n'.repeat(201) }, 'name'],
    [{ name: 'x', type: 'shop' }, 'type'],
    [{ name: 'x', type: 'WEB' }, 'type'],
    [{ name: 'x', ownership: 'mine' }, 'ownership'],
    [{ name: 'x', status: 'deleted' }, 'status'],
    [{ name: 'x', country: 'USA' }, 'country'],
    [{ name: 'x', currency: 'eu' }, 'currency'],
    [{ name: 'x', currency: 'EURO' }, 'currency'],
    [{ name: 'x', currency: 978 }, 'currency'],
  ] as const) {
    const res = await ws.client.post('/api/v1/channels', input);
    t.is(res.status, 422, JSON.stringify(input));
    t.regex(res.body.error, new RegExp(`^${field}`), JSON.stringify(input));
  }
  t.regex((await ws.client.post('/api/v1/channels', { name: 'x', type: 'shop' })).body.error, /web, marketplace, retail, wholesale, b2b/);
  const channel = await newChannel({ name: 'Valid' }, ws);
  for (const [input, field] of [
    [{ name: '' }, 'name'],
    [{ name: null }, 'name'],
    [{ type: 'shop' }, 'type'],
    [{ status: 'gone' }, 'status'],
    [{ country: 'USA' }, 'country'],
    [{ currency: 'eu' }, 'currency'],
  ] as const) {
    const res = await ws.client.patch(`/api/v1/channels/${channel.id}`, input);
    t.is(res.status, 422, JSON.stringify(input));
    t.regex(res.body.error, new RegExp(`^${field}`), JSON.stringify(input));
  }
  const rows = await app.db('channels').where({ workspace_id: ws.workspace.id });
  t.is(rows.length, 1);
  t.like(rows[0], { name: 'Valid', type: 'web', status: 'active', country: null, currency: null });
});

test('create and delete are owner-only: 403 for a member, even a manager of the channel', async (t) => {
  const created = await mia.client.post('/api/v1/channels', { name: 'Sneaky' });
  t.is(created.status, 403);
  t.truthy(created.body.error);
  t.is((await app.db('channels').where({ workspace_id: owner.workspace.id, name: 'Sneaky' })).length, 0);
  const channel = await newChannel();
  t.is((await grant(owner.client, channel.id, mia.user.id, 'manager')).status, 200);
  t.is((await mia.client.delete(`/api/v1/channels/${channel.id}`)).status, 403);
  t.is((await owner.client.get(`/api/v1/channels/${channel.id}`)).status, 200);
  t.is((await mia.client.patch(`/api/v1/channels/${channel.id}`, { name: 'Managed' })).status, 200, 'a manager may change it');
});

test('a member sees only channels they have a role on; viewer and editor may read but not change; manager may', async (t) => {
  const channel = await newChannel({ name: 'Visibility' });
  const hidden = await newChannel({ name: 'Hidden' });
  t.false((await listIds(max.client)).includes(channel.id));
  const denied = await max.client.get(`/api/v1/channels/${channel.id}`);
  t.is(denied.status, 403);
  t.regex(denied.body.error, /no access/);
  t.is((await max.client.patch(`/api/v1/channels/${channel.id}`, { name: 'x' })).status, 403);

  const granted = await grant(owner.client, channel.id, max.user.id, 'viewer');
  t.is(granted.status, 200);
  t.like(granted.body.data.member, { channel_id: channel.id, user_id: max.user.id, role: 'viewer' });
  const visible = await listIds(max.client);
  t.true(visible.includes(channel.id), 'visible at once after the grant');
  t.false(visible.includes(hidden.id));
  t.deepEqual(await listIds(max.client, '?q=Visibility'), [channel.id], 'filters apply within the readable set');
  const read = await max.client.get(`/api/v1/channels/${channel.id}`);
  t.is(read.status, 200);
  t.deepEqual(read.body.data.channel, channel);
  t.deepEqual(read.body.data.members, [granted.body.data.member]);
  t.is((await max.client.get(`/api/v1/channels/${hidden.id}`)).status, 403);

  const asViewer = await max.client.patch(`/api/v1/channels/${channel.id}`, { name: 'Renamed' });
  t.is(asViewer.status, 403);
  t.regex(asViewer.body.error, /viewer/);
  t.is((await grant(owner.client, channel.id, max.user.id, 'editor')).status, 200);
  t.is((await max.client.put(`/api/v1/channels/${channel.id}`, { name: 'Renamed' })).status, 403, 'editor may not change the channel');
  t.is((await grant(owner.client, channel.id, max.user.id, 'manager')).status, 200);
  const asManager = await max.client.patch(`/api/v1/channels/${channel.id}`, { name: 'Renamed' });
  t.is(asManager.status, 200);
  t.is(asManager.body.data.channel.name, 'Renamed');

  const revoked = await revoke(owner.client, channel.id, max.user.id);
  t.is(revoked.status, 200);
  t.like(revoked.body.data.member, { channel_id: channel.id, user_id: max.user.id, role: 'manager' });
  t.is((await max.client.get(`/api/v1/channels/${channel.id}`)).status, 403, 'revocation is effective at once');
  t.false((await listIds(max.client)).includes(channel.id));
  t.is((await max.client.patch(`/api/v1/channels/${channel.id}`, { name: 'Again' })).status, 403);
});

test('granting and revoking roles: owner or a manager of that channel; idempotent PUT; 404 without a role', async (t) => {
  const channel = await newChannel({ name: 'Roles' });
  const elsewhere = await newChannel({ name: 'Roles elsewhere' });
  t.is((await grant(mia.client, channel.id, max.user.id, 'viewer')).status, 403, 'no role: may not grant');
  t.is((await grant(owner.client, channel.id, mia.user.id, 'editor')).status, 200);
  t.is((await grant(mia.client, channel.id, max.user.id, 'viewer')).status, 403, 'an editor may not grant');
  t.is((await revoke(mia.client, channel.id, mia.user.id)).status, 403, 'an editor may not revoke, even their own role');

  const first = await grant(owner.client, channel.id, mia.user.id, 'manager');
  t.is(first.status, 200);
  const again = await grant(owner.client, channel.id, mia.user.id, 'manager');
  t.is(again.status, 200);
  t.deepEqual(again.body.data.member, first.body.data.member, 'granting the same role again changes nothing');

  const changed = await grant(owner.client, channel.id, mia.user.id, 'viewer');
  t.is(changed.body.data.member.role, 'viewer', 'PUT changes the role');
  t.is(changed.body.data.member.created_at, first.body.data.member.created_at);
  t.is((await grant(owner.client, channel.id, mia.user.id, 'manager')).body.data.member.role, 'manager');

  const byManager = await grant(mia.client, channel.id, max.user.id, 'editor');
  t.is(byManager.status, 200, 'a manager grants roles on their channel');
  t.is((await max.client.get(`/api/v1/channels/${channel.id}`)).status, 200);
  t.is((await grant(mia.client, elsewhere.id, max.user.id, 'viewer')).status, 403, 'but not on a channel they do not manage');
  const roles = (await owner.client.get(`/api/v1/channels/${channel.id}`)).body.data.members;
  const expected = [{ user_id: mia.user.id, role: 'manager' }, { user_id: max.user.id, role: 'editor' }].sort((a, b) => a.user_id - b.user_id);
  t.deepEqual(roles.map(({ user_id, role }: { user_id: number; role: string }) => ({ user_id, role })), expected, 'GET lists the roles by user_id');

  const removed = await revoke(mia.client, channel.id, max.user.id);
  t.is(removed.status, 200);
  t.deepEqual(removed.body.data.member, byManager.body.data.member);
  t.is((await max.client.get(`/api/v1/channels/${channel.id}`)).status, 403);
  const missing = await revoke(mia.client, channel.id, max.user.id);
  t.is(missing.status, 404, 'no role to revoke');
  t.regex(missing.body.error, /no role/);

  for (const [body, label] of [[{ role: 'admin' }, 'admin'], [{}, 'missing'], [{ role: 'Manager' }, 'case'], [{ role: 3 }, 'number']] as const) {
    const res = await owner.client.put(`/api/v1/channels/${channel.id}/members/${max.user.id}`, body);
    t.is(res.status, 422, label);
    t.regex(res.body.error, /^role/, label);
  }
  const form = await owner.client.request('PUT', `/api/v1/channels/${channel.id}/members/${max.user.id}`, { form: { role: 'viewer' } });
  t.is(form.status, 200, 'form-encoded body works too');
  t.is(form.body.data.member.role, 'viewer');
});

test('granting a role to an owner is allowed and stored; owners see every channel anyway', async (t) => {
  const channel = await newChannel({ name: 'Owner role' });
  const res = await grant(owner.client, channel.id, owner.user.id, 'viewer');
  t.is(res.status, 200);
  t.like(res.body.data.member, { user_id: owner.user.id, role: 'viewer' });
  const patched = await owner.client.patch(`/api/v1/channels/${channel.id}`, { name: 'Still editable' });
  t.is(patched.status, 200, 'a viewer role does not restrict an owner');
  t.is((await revoke(owner.client, channel.id, owner.user.id)).status, 200);
});

test('users and channels of another workspace are 404', async (t) => {
  const channel = await newChannel({ name: 'Private' });
  const foreign = await newChannel({ name: 'Foreign' }, other);
  const notUser = await grant(owner.client, channel.id, other.user.id, 'viewer');
  t.is(notUser.status, 404, 'user of another workspace');
  t.regex(notUser.body.error, /User not found/);
  t.is((await revoke(owner.client, channel.id, other.user.id)).status, 404);
  t.is((await grant(owner.client, channel.id, 2147483647, 'viewer')).status, 404, 'no such user');
  t.is((await app.db('channel_members').where({ channel_id: channel.id })).length, 0);

  // The owner of another workspace.
  t.is((await other.client.get(`/api/v1/channels/${channel.id}`)).status, 404);
  t.is((await other.client.patch(`/api/v1/channels/${channel.id}`, { name: 'x' })).status, 404);
  t.is((await other.client.delete(`/api/v1/channels/${channel.id}`)).status, 404);
  t.is((await grant(other.client, channel.id, other.user.id, 'viewer')).status, 404);
  t.is((await revoke(other.client, channel.id, other.user.id)).status, 404);
  t.false((await listIds(other.client)).includes(channel.id));
  t.is((await app.db('channels').where({ id: channel.id }).first()).name, 'Private');
  // A member of this workspace: another workspace's channel is 404 before any role check (not 403).
  t.is((await mia.client.get(`/api/v1/channels/${foreign.id}`)).status, 404);
  t.is((await mia.client.patch(`/api/v1/channels/${foreign.id}`, { name: 'x' })).status, 404);
  t.is((await grant(mia.client, foreign.id, mia.user.id, 'viewer')).status, 404);
  t.is((await grant(owner.client, foreign.id, owner.user.id, 'viewer')).status, 404);
  t.is((await owner.client.get(`/api/v1/channels/${foreign.id}`)).status, 404);
  t.is((await app.db('channels').where({ id: foreign.id }).first()).name, 'Foreign');
});

test('delete while quotes or orders use the channel: 409 with counts, nothing removed; then 200 and its roles go', async (t) => {
  const channel = await newChannel({ name: 'In use' });
  await grant(owner.client, channel.id, mia.user.id, 'viewer');
  const ws = owner.workspace.id;
  await app.db('quotes').insert({ workspace_id: ws, quote_number: `Q-CH-${channel.id}`, public_token: `tok-ch-${channel.id}`, channel_id: channel.id });
  const refused = await owner.client.delete(`/api/v1/channels/${channel.id}`);
  t.is(refused.status, 409);
  t.regex(refused.body.error, /1 quote/);
  t.deepEqual(refused.body.data, { dependents: { quotes: 1, orders: 0 } });
  await app.db('orders').insert([1, 2].map((n) => ({ workspace_id: ws, external_id: `ext-ch-${channel.id}-${n}`, channel_id: channel.id })));
  t.deepEqual((await owner.client.delete(`/api/v1/channels/${channel.id}`)).body.data, { dependents: { quotes: 1, orders: 2 } });
  t.is((await owner.client.get(`/api/v1/channels/${channel.id}`)).status, 200);
  t.is((await mia.client.get(`/api/v1/channels/${channel.id}`)).status, 200, 'roles are kept');

  await app.db('quotes').where({ channel_id: channel.id }).delete();
  await app.db('orders').where({ channel_id: channel.id }).delete();
  const deleted = await owner.client.delete(`/api/v1/channels/${channel.id}`);
  t.is(deleted.status, 200);
  t.is(deleted.body.data.channel.id, channel.id);
  t.is((await app.db('channel_members').where({ channel_id: channel.id })).length, 0);
  t.is((await mia.client.get(`/api/v1/channels/${channel.id}`)).status, 404);
});

/** A customer of the owner's workspace with a quote and an order on each of `channels` (null: none) and a visitor. */
async function customerWithRecords(channels: (number | null)[]): Promise<{ id: number; quotes: number[]; orders: number[] }> {
  const ws = owner.workspace.id;
  const customer = (await owner.client.post('/api/v1/customers', { email: `cascade.${++counter}.${process.pid}@example.com` })).body.data.customer;
  const quotes: number[] = [];
  const orders: number[] = [];
  for (const channelId of channels) {
    const onChannel = channelId === null ? {} : { channel_id: channelId };
    const quote = await owner.client.post('/api/v1/quotes', { customer_id: customer.id, ...onChannel });
    if (quote.status !== 201) throw new Error(`quote failed: ${quote.status} ${quote.text}`);
    quotes.push(quote.body.data.quote.id);
    const order = await owner.client.post(
      '/api/v1/orders/external',
      { external_source: 'shop', external_id: `cascade-${customer.id}-${orders.length}`, currency: 'EUR', customer: { email: customer.email }, ...onChannel, items: [{ description: 'x', quantity: 1, price: '1.00' }] },
      { headers: { authorization: `Bearer ${owner.keys.secret_key}` } },
    );
    if (order.status !== 201) throw new Error(`order failed: ${order.status} ${order.text}`);
    orders.push(order.body.data.order.id);
  }
  await app.db('visitors').insert({ workspace_id: ws, visitor_id: `v-cascade-${customer.id}`, customer_id: customer.id });
  return { id: customer.id, quotes, orders };
}

const remaining = async (records: { id: number; quotes: number[]; orders: number[] }) => ({
  customer: (await app.db('customers').where({ id: records.id })).length,
  quotes: (await app.db('quotes').whereIn('id', records.quotes)).length,
  orders: (await app.db('orders').whereIn('id', records.orders)).length,
  visitors: (await app.db('visitors').where({ customer_id: records.id })).length,
});

test('cascade delete of a customer goes no further than channel roles: 403 naming the channel a member cannot delete on, nothing deleted', async (t) => {
  const member = await inviteMember(app, smtp, owner);
  const [hidden, viewed, edited] = [await newChannel({ name: 'Cascade hidden' }), await newChannel({ name: 'Cascade viewed' }), await newChannel({ name: 'Cascade edited' })];
  t.is((await grant(owner.client, viewed.id, member.user.id, 'viewer')).status, 200);
  t.is((await grant(owner.client, edited.id, member.user.id, 'editor')).status, 200);

  // The case: a quote and an order on a channel the member has no role on.
  const records = await customerWithRecords([null, hidden.id]);
  for (const id of records.quotes.slice(1)) t.is((await member.client.delete(`/api/v1/quotes/${id}`)).status, 403, 'one by one: 403');
  for (const id of records.orders.slice(1)) t.is((await member.client.delete(`/api/v1/orders/${id}`)).status, 403, 'one by one: 403');
  const refused = await member.client.delete(`/api/v1/customers/${records.id}?cascade=1`);
  t.is(refused.status, 403, refused.text);
  t.regex(refused.body.error, new RegExp(`channel ${hidden.id}, where you have no role`));
  t.deepEqual(await remaining(records), { customer: 1, quotes: 2, orders: 2, visitors: 1 }, 'nothing deleted');
  t.is((await app.db('events').where({ workspace_id: owner.workspace.id, type: 'customer.deleted' })).filter((e) => e.data.customer.id === records.id).length, 0);

  // A viewer reads them but could not delete them one by one: 403 naming the channel and the role.
  const viewedOnly = await customerWithRecords([viewed.id]);
  const asViewer = await member.client.delete(`/api/v1/customers/${viewedOnly.id}?cascade=1`);
  t.is(asViewer.status, 403);
  t.regex(asViewer.body.error, new RegExp(`channel ${viewed.id}, where your role \\(viewer\\) does not allow deleting them \\(it needs editor or manager\\)`));
  t.deepEqual(await remaining(viewedOnly), { customer: 1, quotes: 1, orders: 1, visitors: 1 });

  // Records with no channel, or on a channel they edit: the cascade goes through, as one by one it would.
  const writable = await customerWithRecords([null, edited.id]);
  const deleted = await member.client.delete(`/api/v1/customers/${writable.id}?cascade=1`);
  t.is(deleted.status, 200, deleted.text);
  t.deepEqual(await remaining(writable), { customer: 0, quotes: 0, orders: 0, visitors: 0 });

  // The owner may cascade over every channel.
  t.is((await owner.client.delete(`/api/v1/customers/${records.id}?cascade=1`)).status, 200);
  t.deepEqual(await remaining(records), { customer: 0, quotes: 0, orders: 0, visitors: 0 });
});

test('the 409 of a customer delete counts only the dependents the member can see, and the rest as one number, hidden', async (t) => {
  const member = await inviteMember(app, smtp, owner);
  const [hidden, alsoHidden, viewed] = [await newChannel({ name: 'Counted hidden' }), await newChannel({ name: 'Counted hidden 2' }), await newChannel({ name: 'Counted viewed' })];
  t.is((await grant(owner.client, viewed.id, member.user.id, 'viewer')).status, 200);
  const records = await customerWithRecords([null, viewed.id, hidden.id, alsoHidden.id, hidden.id]);
  const asMember = await member.client.delete(`/api/v1/customers/${records.id}`);
  t.is(asMember.status, 409);
  // Seen: the quote and order with no channel and the ones on the viewed channel; hidden: 3 quotes and 3 orders, one number.
  t.deepEqual(asMember.body.data, { dependents: { quotes: 2, orders: 2, visitors: 1, hidden: 6 } });
  t.regex(asMember.body.error, /6 of them are on channels you have no role on/);
  t.notRegex(asMember.body.error, new RegExp(`channel ${hidden.id}|channel ${alsoHidden.id}`), 'the 409 names no hidden channel');
  const asOwner = await owner.client.delete(`/api/v1/customers/${records.id}`);
  t.is(asOwner.status, 409);
  t.deepEqual(asOwner.body.data, { dependents: { quotes: 5, orders: 5, visitors: 1, hidden: 0 } });
  t.notRegex(asOwner.body.error, /no role/);
  // A role granted later shows them.
  t.is((await grant(owner.client, hidden.id, member.user.id, 'viewer')).status, 200);
  t.deepEqual((await member.client.delete(`/api/v1/customers/${records.id}`)).body.data, { dependents: { quotes: 4, orders: 4, visitors: 1, hidden: 2 } });
  t.deepEqual(await remaining(records), { customer: 1, quotes: 5, orders: 5, visitors: 1 });
});

test('bad ids are 400', async (t) => {
  const channel = await newChannel();
  for (const path of ['/channels/abc', '/channels/0', '/channels/-1', '/channels/1.5', '/channels/99999999999']) {
    const res = await owner.client.get(`/api/v1${path}`);
    t.is(res.status, 400, path);
    t.regex(res.body.error, /^Invalid id/);
  }
  t.is((await owner.client.patch('/api/v1/channels/abc', { name: 'x' })).status, 400);
  t.is((await owner.client.delete('/api/v1/channels/abc')).status, 400);
  const badUser = await grant(owner.client, channel.id, 'x' as unknown as number, 'viewer');
  t.is(badUser.status, 400);
  t.regex(badUser.body.error, /^Invalid user_id/);
  t.is((await revoke(owner.client, channel.id, 0)).status, 400);
});

test('without a session: 401', async (t) => {
  const anonymous = app.client();
  t.is((await anonymous.get('/api/v1/channels')).status, 401);
  t.is((await anonymous.post('/api/v1/channels', { name: 'x' })).status, 401);
  t.is((await anonymous.put('/api/v1/channels/1/members/1', { role: 'viewer' })).status, 401);
});

test('assertChannelAccess and whereReadable: the one access check, by role and need', async (t) => {
  const workspace = owner.workspace;
  const user = (id: number, role: 'owner' | 'member') => ({ id, role, workspace_id: workspace.id }) as never;
  const asMember = new Principal(user(max.user.id, 'member'), workspace).access;
  const asOwner = new Principal(user(owner.user.id, 'owner'), workspace).access;
  const asSecretKey = new Principal(null, workspace, null, 'secret').access;
  const channel = await newChannel({ name: 'Access unit' });
  const check = async (auth: Access, need: ChannelNeed, channelId: number | null = channel.id) => {
    try {
      await assertChannelAccess(app.db, auth, channelId, need);
      return 200;
    } catch (err) {
      return (err as { status: number }).status;
    }
  };
  const needs: ChannelNeed[] = ['read', 'write', 'manage'];
  t.deepEqual(await Promise.all(needs.map((need) => check(asMember, need))), [403, 403, 403], 'no role');
  t.deepEqual(await Promise.all(needs.map((need) => check(asMember, need, null))), [200, 200, 200], 'no channel: open to every member');
  t.deepEqual(await Promise.all(needs.map((need) => check(asOwner, need))), [200, 200, 200], 'owner');
  t.deepEqual(await Promise.all(needs.map((need) => check(asSecretKey, need))), [200, 200, 200], 'secret key');
  const expected = { viewer: [200, 403, 403], editor: [200, 200, 403], manager: [200, 200, 200] };
  for (const [role, statuses] of Object.entries(expected)) {
    await grant(owner.client, channel.id, max.user.id, role);
    const got = [];
    for (const need of needs) got.push(await check(asMember, need));
    t.deepEqual(got, statuses, role);
  }
  const readable = async (auth: Access) =>
    (await whereReadable(scoped(app.db, 'channels as c', workspace.id), app.db, auth, 'c.id').pluck('c.id')) as number[];
  t.true((await readable(asMember)).includes(channel.id));
  await revoke(owner.client, channel.id, max.user.id);
  t.false((await readable(asMember)).includes(channel.id));
  t.true((await readable(asOwner)).includes(channel.id));
  t.is(await check(asMember, 'read'), 403);
});
