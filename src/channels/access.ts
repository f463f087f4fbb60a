import type { Knex } from 'knex';
import type { Db } from '../db/database.js';
import { scoped } from '../db/scoped.js';
import { Forbidden, Validation } from '../errors.js';
import { userOf, type Access } from '../access.js';

export type ChannelRole = 'viewer' | 'editor' | 'manager';
export type ChannelNeed = 'read' | 'write' | 'manage';

const allowed: Record<ChannelNeed, ChannelRole[]> = {
  read: ['viewer', 'editor', 'manager'],
  write: ['editor', 'manager'],
  manage: ['manager'],
};

/**
 * The one channel access check, for channels and for every record that belongs to one (quotes,
 * orders): a member reads a channel's records only with a role on it and writes them only as
 * editor or manager. Records with no channel are open to every member.
 */
export async function assertChannelAccess(db: Db, access: Access, channelId: number | null | undefined, need: ChannelNeed): Promise<void> {
  if (channelId === null || channelId === undefined || access.channels === 'all') return;
  const member = await scoped(db, 'channel_members', access.workspaceId).where({ channel_id: channelId, user_id: userOf(access) }).first('role');
  if (!member) throw new Forbidden(`You have no access to channel ${channelId}.`);
  if (!allowed[need].includes(member.role)) {
    throw new Forbidden(`Your role on channel ${channelId} (${member.role}) does not allow this; it needs ${allowed[need].join(' or ')}.`);
  }
}

/**
 * Of the channels `channelIds` selects (a subquery of one column, `channel_id`; nulls ignored), the first by id on
 * which the caller lacks `need`, with their role there (null: none). Undefined when there is none: for owners, always.
 * Several records' channels are checked in one query, e.g. everything a cascade would delete.
 */
export async function channelLacking(
  db: Db,
  access: Access,
  channelIds: Knex.QueryBuilder,
  need: ChannelNeed,
): Promise<{ channelId: number; role: ChannelRole | null } | undefined> {
  if (access.channels === 'all') return undefined;
  const row = await db
    .from(channelIds.as('d'))
    .leftJoin('channel_members as m', (join) =>
      join.on('m.channel_id', 'd.channel_id').andOnVal('m.workspace_id', access.workspaceId).andOnVal('m.user_id', userOf(access)),
    )
    .whereNotNull('d.channel_id')
    .where((w) => w.whereNull('m.role').orWhereNotIn('m.role', allowed[need]))
    .orderBy('d.channel_id')
    .first('d.channel_id', 'm.role');
  return row ? { channelId: row.channel_id, role: row.role ?? null } : undefined;
}

/**
 * The channels on which the caller holds `need`, for checking many records at once (an import's orders); undefined
 * when the caller may act on every channel (owners, keys). One query.
 */
export async function channelsAllowing(db: Db, access: Access, need: ChannelNeed): Promise<Set<number> | undefined> {
  if (access.channels === 'all') return undefined;
  const rows = await scoped(db, 'channel_members', access.workspaceId).where({ user_id: userOf(access) }).whereIn('role', allowed[need]).select('channel_id');
  return new Set(rows.map((r: { channel_id: number }) => r.channel_id));
}

/** The roles that allow `need`, as a message names them: "editor or manager". */
export const rolesFor = (need: ChannelNeed): string => allowed[need].join(' or ');

/** Limits a list query to the records the caller may read: all for owners, else no channel or a channel with a role. */
export function whereReadable(query: Knex.QueryBuilder, db: Db, access: Access, column: string): Knex.QueryBuilder {
  if (access.channels === 'all') return query;
  return query.where((w) =>
    w.whereNull(column).orWhereIn(column, scoped(db, 'channel_members', access.workspaceId).where('user_id', userOf(access)).select('channel_id')),
  );
}

/** Limits a channels query (`column`: the channel's id) to those on which the caller holds `need`: all for owners. */
export function whereAllowing(query: Knex.QueryBuilder, db: Db, access: Access, column: string, need: ChannelNeed): Knex.QueryBuilder {
  if (access.channels === 'all') return query;
  return query.whereIn(column, scoped(db, 'channel_members', access.workspaceId).where('user_id', userOf(access)).whereIn('role', allowed[need]).select('channel_id'));
}

/** Why a given channel id is refused: no such channel in the workspace. */
export const noSuchChannel = (field: string, channelId: number) => `${field}: no channel ${channelId} in this workspace.`;

/** Of the given channel ids, those that name a channel of the workspace: one query, for checking many records at once. */
export async function existingChannels(db: Db, workspaceId: number, channelIds: Iterable<number>): Promise<Set<number>> {
  const ids = [...new Set(channelIds)];
  if (ids.length === 0) return new Set();
  return new Set((await scoped(db, 'channels', workspaceId).whereIn('id', ids).select('id')).map((r: { id: number }) => r.id));
}

/**
 * A channel_id given in a request body must name a channel of the workspace (422 otherwise). Gives the channel's
 * currency (null when it has none), or undefined when no channel was given.
 */
export async function assertChannelExists(
  db: Db,
  workspaceId: number,
  channelId: number | null | undefined,
  field = 'channel_id',
): Promise<{ currency: string | null } | undefined> {
  if (channelId === null || channelId === undefined) return undefined;
  const channel = await scoped(db, 'channels', workspaceId).where({ id: channelId }).first('currency');
  if (!channel) throw new Validation(field, noSuchChannel(field, channelId));
  return channel;
}
