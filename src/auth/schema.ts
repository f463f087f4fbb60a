import { z } from 'zod';
import { emailInput, passwordInput, requiredText } from '../schema/input.js';
import { id, timestamp } from '../schema/output.js';
import { keysOut, userOut, workspaceNameInput, workspaceOut } from '../workspaces/schema.js';

/** A person's name (sign-up, invites, the CLI's --name and --owner-name). */
export const nameInput = requiredText(200);

export const signupBody = z.object({
  email: emailInput,
  password: passwordInput,
  name: nameInput,
  workspace_name: workspaceNameInput.optional(),
});

export const loginBody = z.object({
  email: emailInput,
  password: z.string().min(1, 'must not be empty').max(1024),
});

export const inviteBody = z.object({
  email: emailInput,
  role: z.enum(['owner', 'member'], { error: 'must be "owner" or "member"' }).default('member'),
});

const roleInput = z.enum(['owner', 'member'], { error: 'must be "owner" or "member"' });

/** An owner adds someone without mail: they get a one-time password. */
export const addMemberBody = z.object({ email: emailInput, name: nameInput, role: roleInput.default('member') });

export const memberRoleBody = z.object({ role: roleInput });

export const renameBody = z.object({ name: nameInput });

const tokenInput = z.string().trim().min(1, 'must not be empty').max(200);

export const acceptInviteBody = z.object({ token: tokenInput, name: nameInput, password: passwordInput });

export const resetRequestBody = z.object({ email: emailInput });

export const resetConfirmBody = z.object({ token: tokenInput, password: passwordInput });

export const changePasswordBody = z.object({
  current_password: z.string().min(1, 'must not be empty').max(1024, 'must be at most 1024 characters'),
  password: passwordInput,
});

export const signupOut = z.object({ user: userOut, workspace: workspaceOut.optional(), keys: keysOut.optional() });

export const loginOut = z.object({ user: userOut, workspace: workspaceOut.nullable() });

export const meOut = z.object({ user: userOut, workspace: workspaceOut.nullable(), role: z.enum(['owner', 'member']).nullable() });

export const inviteOut = z.object({ id, workspace_id: id, email: z.string(), role: z.enum(['owner', 'member']), expires_at: timestamp, accepted_at: timestamp.nullable(), created_at: timestamp }).meta({ id: 'Invite' });

export const acceptInviteOut = z.object({ user: userOut });
