/** The people of a workspace as its owner manages them: who they are, their roles, adding and removing them. */
import type { Access } from '../access.js';
import type { Db } from '../db/database.js';
import { scoped } from '../db/scoped.js';
import { Conflict, NotFound } from '../errors.js';
import { randomToken } from '../crypto.js';
import type { Role, User } from '../accounts.js';
import { userColumns } from '../workspaces/model.js';
import { authChanged } from '../workspaces/auth-changes.js';
import { createUser, type Invite } from './service.js';
import { deleteUserSessions } from './sessions.js';

export interface MemberChannelRole {
  channel_id: number;
  channel_name: string;
  role: 'viewer' | 'editor' | 'manager';
}

export interface Member extends User {
  /** When they last signed in: their newest session's start (sessions end at sign-out and expiry, so null may mean "not lately"). */
  last_sign_in_at: Date | null;
  channel_roles: MemberChannelRole[];
}

/** The workspace's users, owners first then by name, with their last sign-in and their roles on channels. */
export async function listMembers(db: Db, access: Access): Promise<Member[]> {
  const users = (await scoped(db, 'users', access.workspaceId)
    .orderByRaw(`case role when 'owner' then 0 else 1 end`)
    .orderBy(['name', 'email', 'id'])
    .select(userColumns)) as User[];
  if (users.length === 0) return [];
  const ids = users.map((u) => u.id);
  const signIns = (await db('sessions').whereIn('user_id', ids).groupBy('user_id').select('user_id', db.raw('max(created_at) as at'))) as { user_id: number; at: Date }[];
  const lastSignIn = new Map(signIns.map((s) => [s.user_id, s.at]));
  const roles = (await scoped(db, 'channel_members as m', access.workspaceId)
    .join('channels as c', (j) => j.on('c.workspace_id', 'm.workspace_id').andOn('c.id', 'm.channel_id'))
    .orderBy(['c.name', 'c.id'])
    .select('m.user_id', 'm.channel_id', 'c.name as channel_name', 'm.role')) as (MemberChannelRole & { user_id: number })[];
  return users.map((user) => ({
    ...user,
    last_sign_in_at: lastSignIn.get(user.id) ?? null,
    channel_roles: roles.filter((r) => r.user_id === user.id).map(({ user_id: _omit, ...role }) => role),
  }));
}

/** Invites not yet accepted and not expired, newest first. */
export async function pendingInvites(db: Db, access: Access): Promise<Invite[]> {
  return (await scoped(db, 'invites', access.workspaceId)
    .whereNull('accepted_at')
    .where('expires_at', '>', db.raw('statement_timestamp()'))
    .orderBy('id', 'desc')
    .select('id', 'workspace_id', 'email', 'role', 'expires_at', 'accepted_at', 'created_at')) as Invite[];
}

/**
 * An account in the workspace without mail: the password is generated, returned this once and stored only as its
 * hash. They sign in with it and change it themselves.
 */
export async function addMember(trx: Db, access: Access, input: { email: string; name: string; role: Role }): Promise<{ user: User; password: string }> {
  const password = randomToken(12);
  const user = await createUser(trx, { ...input, password, workspaceId: access.workspaceId });
  return { user, password };
}

/**
 * The workspace row locked, then the user: role changes and removals of one workspace queue here, so two owners
 * demoting each other at once cannot leave it without one.
 */
async function lockedMember(trx: Db, access: Access, userId: number): Promise<User> {
  await trx('workspaces').where({ id: access.workspaceId }).forUpdate().first('id');
  const user = (await scoped(trx, 'users', access.workspaceId).where({ id: userId }).first(userColumns)) as User | undefined;
  if (!user) throw new NotFound('There is no such member in this workspace.');
  return user;
}

/** A workspace always keeps an owner: the last one can be neither made a member nor removed. */
async function assertNotLastOwner(trx: Db, access: Access, user: User, doing: string): Promise<void> {
  if (user.role !== 'owner') return;
  const { owners } = (await scoped(trx, 'users', access.workspaceId).where({ role: 'owner' }).first(trx.raw('count(*)::int as owners'))) as { owners: number };
  if (owners <= 1) throw new Conflict(`${user.name || user.email} is the workspace's only owner and cannot be ${doing}: make someone else an owner first.`);
}

/** Owner only (checked by the caller's access kind). Their sessions pick the new role up on their next request. */
export async function changeMemberRole(trx: Db, access: Access, userId: number, role: Role): Promise<User> {
  const user = await lockedMember(trx, access, userId);
  if (user.role === role) return user;
  if (role === 'member') await assertNotLastOwner(trx, access, user, 'made a member');
  const [changed] = (await scoped(trx, 'users', access.workspaceId).where({ id: userId }).update({ role, updated_at: trx.fn.now() }).returning(userColumns)) as User[];
  await authChanged(trx, { userId });
  return changed;
}

/**
 * Owner only. The account goes, with its sessions (ended at once, in every process) and its channel roles; the
 * email is free to be invited again. An owner does not remove themselves here: another owner does.
 */
export async function removeMember(trx: Db, access: Access, userId: number): Promise<User> {
  const user = await lockedMember(trx, access, userId);
  if (userId === access.userId) throw new Conflict('You cannot remove yourself: another owner can.');
  await assertNotLastOwner(trx, access, user, 'removed');
  await deleteUserSessions(trx, userId);
  await scoped(trx, 'users', access.workspaceId).where({ id: userId }).delete();
  return user;
}
