import type { Knex } from 'knex';
import type { Access } from '../access.js';
import type { Db } from '../db/database.js';
import { countReferences, scoped, whereExact, whereSearch } from '../db/scoped.js';
import { listPages, type JsonPage } from '../db/keyset.js';
import type { ListQuery } from '../db/list-query.js';
import { numberedListPage, type NumberedPage } from '../db/numbered-pages.js';
import { givenFields } from '../db/fields.js';
import { Conflict, Forbidden, NotFound } from '../errors.js';
import { assertChannelAccess, whereAllowing, whereReadable, type ChannelNeed, type ChannelRole } from './access.js';
import type { ChannelChanges, ChannelFilters } from './schema.js';

/**
 * The API shape of a channel, built in SQL as compact JSON (row_to_json: no spaces, what
 * JSON.stringify makes of it) so that lists and single reads agree to the byte.
 */
export const channelJson = (c = 'c') =>
  `(select row_to_json(r) from (select ${c}.id as id, ${c}.name as name, ${c}.type as type, ${c}.ownership as ownership, ${c}.status as status, ` +
  `${c}.country as country, ${c}.currency as currency, iso_time(${c}.created_at) as created_at, iso_time(${c}.updated_at) as updated_at) r)`;

/** The API shape of a channel role. */
export const memberJson = (m = 'm') =>
  `json_build_object('channel_id', ${m}.channel_id, 'user_id', ${m}.user_id, 'role', ${m}.role, ` +
  `'created_at', iso_time(${m}.created_at), 'updated_at', iso_time(${m}.updated_at))`;

export type ChannelJson = Record<string, unknown> & { id: number; name: string };
export type MemberJson = { channel_id: number; user_id: number; role: ChannelRole; created_at: string; updated_at: string };

const editable = ['name', 'type', 'ownership', 'status', 'country', 'currency'] as const;


async function channelRow(db: Db, workspaceId: number, id: number): Promise<ChannelJson | undefined> {
  const row = await scoped(db, 'channels as c', workspaceId).where('c.id', id).first(db.raw(`${channelJson()} as json`));
  return row?.json;
}

/** The channel, whatever the caller's role: for internal use once access is settled. */
async function loadChannel(db: Db, workspaceId: number, id: number): Promise<ChannelJson> {
  const channel = await channelRow(db, workspaceId, id);
  if (!channel) throw new NotFound('Channel not found.');
  return channel;
}

/** 404 for a channel outside the workspace comes first, then 403 without the needed role. */
async function assertChannel(db: Db, access: Access, id: number, need: 'manage', lock?: 'share' | 'update'): Promise<void> {
  const query = scoped(db, 'channels', access.workspaceId).where({ id });
  if (lock === 'share') query.forShare();
  if (lock === 'update') query.forUpdate();
  if (!(await query.first('id'))) throw new NotFound('Channel not found.');
  await assertChannelAccess(db, access, id, need);
}

/** One channel the caller may read (any role; owners all), with the roles granted on it. */
export async function getChannel(db: Db, access: Access, id: number): Promise<{ channel: ChannelJson; members: MemberJson[] }> {
  const channel = await loadChannel(db, access.workspaceId, id);
  await assertChannelAccess(db, access, id, 'read');
  const members = await scoped(db, 'channel_members as m', access.workspaceId).where('m.channel_id', id).orderBy('m.user_id').select(db.raw(`${memberJson()} as json`));
  return { channel, members: members.map((m: { json: MemberJson }) => m.json) };
}

/** The channels the caller may read (owners: all; members: those they have a role on), filtered. */
function channelList(db: Db, access: Access, filters: Partial<ChannelFilters>): ListQuery {
  const filtered = () => {
    const query = whereReadable(scoped(db, 'channels as c', access.workspaceId), db, access, 'c.id');
    whereExact(query, { 'c.type': filters.type, 'c.ownership': filters.ownership, 'c.status': filters.status, 'c.country': filters.country });
    return whereSearch(query, ['c.name'], filters.q);
  };
  return { base: filtered, idColumn: 'c.id', json: channelJson() };
}

/** The select of the channels the caller may read, by name (id, name), for a filter's choices: at most `limit`. */
export function readableChannelNamesQuery(db: Db, access: Access, limit = 500): Knex.QueryBuilder {
  return whereReadable(scoped(db, 'channels as c', access.workspaceId), db, access, 'c.id').orderBy('c.name').orderBy('c.id').limit(limit, { skipBinding: true }).select('c.id', 'c.name');
}

/** The channels the caller may read, by name, for a filter's choices: one query. */
export async function readableChannelNames(db: Db, access: Access): Promise<{ id: number; name: string }[]> {
  return readableChannelNamesQuery(db, access);
}

/** The channels the caller may read, filtered, as JSON pages. */
export function listChannels(db: Db, access: Access, filters: ChannelFilters): AsyncGenerator<JsonPage> {
  return listPages(db, channelList(db, access, filters));
}

/** Page `page` of the channels the caller may read, filtered, newest first, with their count (the app's list). */
export function channelPage(db: Db, access: Access, filters: Partial<ChannelFilters>, page: number): Promise<NumberedPage<ChannelJson>> {
  return numberedListPage<ChannelJson>(db, channelList(db, access, filters), page);
}

/** How many roles are granted on each of the given channels (absent: none): one query, for a list's rows. */
export async function memberCounts(db: Db, access: Access, channelIds: readonly number[]): Promise<Map<number, number>> {
  if (channelIds.length === 0) return new Map();
  const rows = await scoped(db, 'channel_members', access.workspaceId).whereIn('channel_id', channelIds).groupBy('channel_id').select('channel_id', db.raw('count(*)::int as n'));
  return new Map(rows.map((r: { channel_id: number; n: number }) => [r.channel_id, r.n]));
}

/** Whether the caller may change the channel and its roles (the manager role; owners always): what a page offers. */
export async function mayManageChannel(db: Db, access: Access, id: number): Promise<boolean> {
  try {
    await assertChannelAccess(db, access, id, 'manage');
    return true;
  } catch (err) {
    if (err instanceof Forbidden) return false;
    throw err;
  }
}

/** The channels on which the caller holds `need` (owners: all), by name: what a form offers to pick from. */
export async function channelsAllowed(db: Db, access: Access, need: ChannelNeed): Promise<{ id: number; name: string; currency: string | null }[]> {
  const query = whereAllowing(scoped(db, 'channels as c', access.workspaceId), db, access, 'c.id', need);
  return query.orderBy(['c.name', 'c.id']).select('c.id', 'c.name', 'c.currency');
}

/** Owner only (checked by the route's access kind). */
export async function createChannel(trx: Db, access: Access, input: ChannelChanges & { name: string }): Promise<ChannelJson> {
  const [row] = await trx('channels').insert({ workspace_id: access.workspaceId, ...givenFields(input, editable) }).returning('id');
  return loadChannel(trx, access.workspaceId, row.id);
}

/** Partial update; needs the manager role on the channel (owners always may). */
export async function updateChannel(trx: Db, access: Access, id: number, input: ChannelChanges): Promise<ChannelJson> {
  await assertChannel(trx, access, id, 'manage', 'update');
  const changes = givenFields(input, editable);
  if (Object.keys(changes).length > 0) {
    await scoped(trx, 'channels', access.workspaceId).where({ id }).update({ ...changes, updated_at: trx.fn.now() });
  }
  return loadChannel(trx, access.workspaceId, id);
}

export interface Dependents {
  quotes: number;
  orders: number;
}

const dependentTables = ['quotes', 'orders'] as const;

/**
 * Owner only (checked by the route's access kind). A channel that quotes or orders reference is
 * never deleted (the foreign keys restrict): 409 with their counts. Its roles go with it.
 * The row lock taken first makes the count reliable: a concurrent insert of a quote or order
 * naming the channel waits for this transaction.
 */
export async function deleteChannel(trx: Db, access: Access, id: number): Promise<ChannelJson> {
  const locked = await scoped(trx, 'channels', access.workspaceId).where({ id }).forUpdate().first('id');
  if (!locked) throw new NotFound('Channel not found.');
  const channel = await loadChannel(trx, access.workspaceId, id);
  const dependents: Dependents = await countReferences(trx, access.workspaceId, dependentTables, 'channel_id', id);
  if (Object.values(dependents).some((n) => n > 0)) {
    throw new Conflict(
      `This channel is used by ${dependents.quotes} quote(s) and ${dependents.orders} order(s) and cannot be deleted; archive it instead (status archived).`,
      { dependents },
    );
  }
  await scoped(trx, 'channels', access.workspaceId).where({ id }).delete();
  return channel;
}

async function assertWorkspaceUser(db: Db, workspaceId: number, userId: number): Promise<void> {
  if (!(await scoped(db, 'users', workspaceId).where({ id: userId }).first('id'))) throw new NotFound('User not found in this workspace.');
}

async function memberRow(db: Db, workspaceId: number, channelId: number, userId: number): Promise<MemberJson | undefined> {
  const row = await scoped(db, 'channel_members as m', workspaceId).where({ 'm.channel_id': channelId, 'm.user_id': userId }).first(db.raw(`${memberJson()} as json`));
  return row?.json;
}

/**
 * Grants `role` on the channel to a user of the workspace, or changes the role they have.
 * Idempotent: granting the role a user already has changes nothing (not even updated_at).
 * Needs the manager role on the channel (owners always may). Granting a role to an owner is
 * stored but grants nothing more, since owners see every channel.
 */
export async function grantRole(trx: Db, access: Access, channelId: number, userId: number, role: ChannelRole): Promise<MemberJson> {
  const workspaceId = access.workspaceId;
  await assertChannel(trx, access, channelId, 'manage', 'share');
  await assertWorkspaceUser(trx, workspaceId, userId);
  await trx.raw(
    `insert into channel_members (channel_id, user_id, workspace_id, role) values (?, ?, ?, ?)
     on conflict (channel_id, user_id) do update set role = excluded.role,
       updated_at = case when channel_members.role = excluded.role then channel_members.updated_at else now() end`,
    [channelId, userId, workspaceId, role],
  );
  return (await memberRow(trx, workspaceId, channelId, userId))!;
}

/** Removes the user's role on the channel; 404 when they had none. Needs the manager role (owners always may). */
export async function revokeRole(trx: Db, access: Access, channelId: number, userId: number): Promise<MemberJson> {
  const workspaceId = access.workspaceId;
  await assertChannel(trx, access, channelId, 'manage');
  await assertWorkspaceUser(trx, workspaceId, userId);
  const member = await memberRow(trx, workspaceId, channelId, userId);
  if (!member) throw new NotFound(`User ${userId} has no role on channel ${channelId}.`);
  await scoped(trx, 'channel_members', workspaceId).where({ channel_id: channelId, user_id: userId }).delete();
  return member;
}
