import type { Db } from '../db/database.js';
import { Conflict, Gone, NotFound, Unauthorized, Validation } from '../errors.js';
import { userColumns, workspaceColumns } from '../workspaces/model.js';
import type { Role, User, Workspace } from '../accounts.js';
import { createWorkspace, type KeyPair } from '../workspaces/service.js';
import { hashPassword, randomToken, sha256, verifyPassword } from '../crypto.js';
import { deleteUserSessions, endOtherSessions } from './sessions.js';
import { authChanged } from '../workspaces/auth-changes.js';

const INVITE_DAYS = 7;
const RESET_MINUTES = 60;
/** A new account's set-password link (`quoting user add`) lasts as long as an invite: it stands for one. */
export const WELCOME_LINK_MINUTES = INVITE_DAYS * 24 * 60;

async function assertEmailFree(db: Db, email: string): Promise<void> {
  if (await db('users').where({ email }).comment('all workspaces: an email is one account, whichever workspace holds it').first('id')) throw new Conflict('That email is already taken.');
}

export async function createUser(
  db: Db,
  input: { email: string; password: string; name: string; workspaceId?: number; role?: Role },
): Promise<User> {
  await assertEmailFree(db, input.email);
  const [user] = (await db('users')
    .insert({
      email: input.email,
      name: input.name,
      password_hash: await hashPassword(input.password),
      workspace_id: input.workspaceId ?? null,
      role: input.role ?? null,
    })
    .returning(userColumns)) as User[];
  return user;
}

interface NewAccount {
  email: string;
  password: string;
  name: string;
  /** The workspace the account creates and owns. */
  workspace?: { name: string; slug?: string; trialDays?: number };
}

/**
 * A new account, and when `workspace` is given a new workspace it owns (keys shown this once):
 * `POST /auth/signup` and `quoting workspace create`. Run in a transaction: a workspace that fails
 * (its slug taken) leaves no account.
 */
export async function signUp(db: Db, input: NewAccount & Required<Pick<NewAccount, 'workspace'>>): Promise<{ user: User; workspace: Workspace; keys: KeyPair }>;
export async function signUp(db: Db, input: NewAccount): Promise<{ user: User; workspace?: Workspace; keys?: KeyPair }>;
export async function signUp(db: Db, input: NewAccount): Promise<{ user: User; workspace?: Workspace; keys?: KeyPair }> {
  const user = await createUser(db, { email: input.email, password: input.password, name: input.name });
  if (!input.workspace) return { user };
  const { workspace, keys } = await createWorkspace(db, { ...input.workspace, ownerId: user.id });
  return { user: { ...user, workspace_id: workspace.id, role: 'owner' }, workspace, keys };
}

/** Checks the credentials; unknown email and wrong password give the same answer in the same time. */
export async function checkCredentials(db: Db, email: string, password: string): Promise<{ user: User; workspace: Workspace | null }> {
  const row = await db('users').where({ email }).comment('all workspaces: signing in finds the account, and so its workspace, by email').first([...userColumns, 'password_hash']);
  const ok = await verifyPassword(row?.password_hash, password);
  if (!row || !ok) throw new Unauthorized('Invalid email or password.');
  const { password_hash: _omit, ...user } = row;
  const workspace = user.workspace_id
    ? ((await db('workspaces').where({ id: user.workspace_id }).first(workspaceColumns)) as Workspace)
    : null;
  return { user: user as User, workspace };
}

export interface Invite {
  id: number;
  workspace_id: number;
  email: string;
  role: Role;
  expires_at: Date;
  accepted_at: Date | null;
  created_at: Date;
}

const inviteColumns = ['id', 'workspace_id', 'email', 'role', 'expires_at', 'accepted_at', 'created_at'] as const;

/** Creates an invite and returns it with its one-time token (only the hash is stored). */
export async function createInvite(
  db: Db,
  input: { workspaceId: number; email: string; role: Role; invitedBy: number },
): Promise<{ invite: Invite; token: string }> {
  await assertEmailFree(db, input.email);
  const token = randomToken(32);
  const [invite] = (await db('invites')
    .insert({
      workspace_id: input.workspaceId,
      email: input.email,
      role: input.role,
      invited_by: input.invitedBy,
      token_hash: sha256(token),
      expires_at: new Date(Date.now() + INVITE_DAYS * 86_400_000),
    })
    .returning(inviteColumns)) as Invite[];
  return { invite, token };
}

/** Spends an invite: creates the user in the invite's workspace. 410 when expired or used, 409 when the email is taken. */
export async function acceptInvite(db: Db, input: { token: string; name: string; password: string }): Promise<User> {
  const invite = await db('invites').where({ token_hash: sha256(input.token) }).comment('all workspaces: an invite is found by its token, and gives its workspace').forUpdate().first(inviteColumns);
  if (!invite) throw new NotFound('Invite not found.');
  if (invite.accepted_at) throw new Gone('This invite has already been used.');
  if (invite.expires_at.getTime() <= Date.now()) throw new Gone('This invite has expired.');
  const user = await createUser(db, {
    email: invite.email,
    name: input.name,
    password: input.password,
    workspaceId: invite.workspace_id,
    role: invite.role,
  });
  await db('invites').where({ id: invite.id, workspace_id: invite.workspace_id }).update({ accepted_at: db.fn.now() });
  return user;
}

/** Creates a reset token for the account with that email (valid `minutes`), or returns null when there is none. */
export async function createPasswordReset(db: Db, email: string, minutes = RESET_MINUTES): Promise<{ user: User; token: string; expiresAt: Date } | null> {
  const user = (await db('users').where({ email }).comment('all workspaces: a reset link is asked for by email').first(userColumns)) as User | undefined;
  if (!user) return null;
  const token = randomToken(32);
  const expiresAt = new Date(Date.now() + minutes * 60_000);
  await db('password_resets').insert({ user_id: user.id, token_hash: sha256(token), expires_at: expiresAt });
  return { user, token, expiresAt };
}

/** Sets the new password, spends the token (and the user's other outstanding ones) and revokes every session of the user. */
export async function confirmPasswordReset(db: Db, token: string, password: string): Promise<void> {
  const reset = await db('password_resets').where({ token_hash: sha256(token) }).forUpdate().first('id', 'user_id', 'expires_at', 'used_at');
  if (!reset) throw new NotFound('Reset link not found.');
  if (reset.used_at) throw new Gone('This reset link has already been used.');
  if (reset.expires_at.getTime() <= Date.now()) throw new Gone('This reset link has expired.');
  await db('users').where({ id: reset.user_id }).queryContext({ allWorkspaces: 'the account of a reset link' }).update({ password_hash: await hashPassword(password), updated_at: db.fn.now() });
  // Spends this link and every other outstanding one of the user: an older mail must not reset the new password.
  await db('password_resets').where({ user_id: reset.user_id }).whereNull('used_at').update({ used_at: db.fn.now() });
  await deleteUserSessions(db, reset.user_id);
}

/**
 * The signed-in user changes their password: the current one must be given (422 on
 * `current_password` otherwise: the session is fine, so not 401, which would sign the app out).
 * Every other session of the user is revoked; the one making the change stays.
 */
export async function changePassword(db: Db, input: { userId: number; sessionId: number; currentPassword: string; password: string }): Promise<void> {
  const row = await db('users').where({ id: input.userId }).comment('all workspaces: the signed-in account itself').forUpdate().first('password_hash');
  if (!row || !(await verifyPassword(row.password_hash, input.currentPassword))) {
    throw new Validation('current_password', 'current_password: is not your current password.');
  }
  await db('users').where({ id: input.userId }).queryContext({ allWorkspaces: 'the signed-in account itself' }).update({ password_hash: await hashPassword(input.password), updated_at: db.fn.now() });
  await endOtherSessions(db, input.userId, input.sessionId);
}

/** The signed-in user changes the name they go by. */
export async function renameUser(db: Db, userId: number, name: string): Promise<void> {
  await db('users').where({ id: userId }).queryContext({ allWorkspaces: 'the signed-in account itself' }).update({ name, updated_at: db.fn.now() });
  await authChanged(db, { userId }); // cached sessions carry the name
}

/** An operator sets a user's password (the CLI): every session of the user is revoked. */
export async function setPassword(db: Db, email: string, password: string): Promise<void> {
  const user = await db('users').where({ email }).comment('all workspaces: the operator names the account by email').forUpdate().first('id');
  if (!user) throw new NotFound(`no user with email ${email}`);
  await db('users').where({ id: user.id }).queryContext({ allWorkspaces: 'the account the operator named' }).update({ password_hash: await hashPassword(password), updated_at: db.fn.now() });
  await deleteUserSessions(db, user.id);
}
