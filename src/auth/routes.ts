import { z } from 'zod';
import { Forbidden } from '../errors.js';
import { jsonText, type Api } from '../http/api.js';
import type { AppDeps } from '../http/deps.js';
import { requireMailer } from '../mail/mailer.js';
import { renderMail } from '../templates.js';
import { createWorkspace } from '../workspaces/service.js';
import { keysOut, userOut, workspaceOut } from '../workspaces/schema.js';
import { timestamp, id } from '../schema/output.js';
import { acceptInviteBody, changePasswordBody, inviteBody, loginBody, resetConfirmBody, resetRequestBody, signupBody } from './schema.js';
import { acceptInvite, changePassword, checkCredentials, confirmPasswordReset, createInvite, createPasswordReset, createUser } from './service.js';
import { inviteLink, passwordResetLink } from './links.js';
import { clearSessionCookie, createSession, deleteSession, setSessionCookie } from './sessions.js';
import { authChanged } from './session-cache.js';

const inviteOut = z.object({ id, workspace_id: id, email: z.string(), role: z.enum(['owner', 'member']), expires_at: timestamp, accepted_at: timestamp.nullable(), created_at: timestamp }).meta({ id: 'Invite' });

/** `GET /auth/me`'s `data`, by the user object of a resolved session (which comes with its workspace and role). */
const meAnswers = new WeakMap<object, string>();

export function authRoutes(api: Api, { db, config, mailer, sessionCache }: AppDeps): void {
  const tag = 'Auth';

  api.route(
    {
      method: 'post', path: '/auth/signup', tag, auth: 'none', status: 201, body: signupBody,
      summary: 'Create an account (and a workspace when workspace_name is given); signs in',
      response: z.object({ user: userOut, workspace: workspaceOut.optional(), keys: keysOut.optional() }),
      errors: { 403: 'Sign-up is closed (SIGNUP=closed): accounts come from invites and the CLI', 409: 'Email already taken', 422: 'Invalid field' },
    },
    async ({ ctx, body }) => {
      if (config.SIGNUP === 'closed') throw new Forbidden('Sign-up is closed: ask a workspace owner for an invite.');
      const result = await db.transaction(async (trx) => {
        const user = await createUser(trx, { email: body.email, password: body.password, name: body.name });
        if (!body.workspace_name) return { user };
        const { workspace, keys } = await createWorkspace(trx, { name: body.workspace_name, ownerId: user.id, trialDays: config.TRIAL_DAYS });
        return { user: { ...user, workspace_id: workspace.id, role: 'owner' as const }, workspace, keys };
      });
      setSessionCookie(ctx, await createSession(db, result.user.id));
      return result;
    },
  );

  api.route(
    {
      method: 'post', path: '/auth/login', tag, auth: 'none', body: loginBody,
      summary: 'Sign in; sets the quoting_session cookie',
      response: z.object({ user: userOut, workspace: workspaceOut.nullable() }),
      errors: { 401: 'Invalid email or password', 422: 'Invalid field' },
    },
    async ({ ctx, body }) => {
      const { user, workspace } = await checkCredentials(db, body.email, body.password);
      setSessionCookie(ctx, await createSession(db, user.id));
      return { user, workspace };
    },
  );

  api.route(
    { method: 'post', path: '/auth/logout', tag, auth: 'session:any', summary: 'Sign out: deletes the session and clears the cookie', response: z.object({}) },
    async ({ ctx, auth }) => {
      await deleteSession(db, auth.sessionId!);
      await authChanged(db, sessionCache, { sessionId: auth.sessionId! });
      clearSessionCookie(ctx);
      return {};
    },
  );

  api.route(
    {
      method: 'get', path: '/auth/me', tag, auth: 'session:user', summary: 'The signed-in user, their workspace and role',
      response: z.object({ user: userOut, workspace: workspaceOut.nullable(), role: z.enum(['owner', 'member']).nullable() }),
    },
    async ({ auth }) => {
      // A cached session answers with the same user and workspace objects (frozen) on every request, so its
      // answer is serialised once, on the first, and kept as long as those objects are (the session cache's entry).
      let text = meAnswers.get(auth.user);
      if (text === undefined) meAnswers.set(auth.user, (text = JSON.stringify({ user: auth.user, workspace: auth.maybeWorkspace, role: auth.role })));
      return jsonText(text);
    },
  );

  api.route(
    {
      method: 'post', path: '/auth/password', tag, auth: 'session:user', body: changePasswordBody,
      summary: "Change the signed-in user's password; signs out the user's other sessions (this one stays)",
      response: z.object({}),
      errors: { 422: 'Invalid field, or current_password is wrong' },
    },
    async ({ body, auth }) => {
      await db.transaction((trx) =>
        changePassword(trx, { userId: auth.user.id, sessionId: auth.sessionId!, currentPassword: body.current_password, password: body.password }),
      );
      await authChanged(db, sessionCache, { userId: auth.user.id });
      return {};
    },
  );

  api.route(
    {
      method: 'post', path: '/invites', tag, auth: 'session:owner', status: 201, body: inviteBody,
      summary: 'Invite someone to the workspace by mail (owner only)',
      response: z.object({ invite: inviteOut }),
      errors: { 409: 'Email already taken', 503: 'Mail is not configured' },
    },
    async ({ body, auth }) => {
      const mail = requireMailer(mailer);
      const workspace = auth.workspace;
      return db.transaction(async (trx) => {
        const { invite, token } = await createInvite(trx, { workspaceId: workspace.id, email: body.email, role: body.role, invitedBy: auth.user.id });
        await mail.send({
          to: invite.email,
          ...renderMail('invite', {
            workspace: workspace.name,
            inviter: auth.user.name || auth.user.email,
            role: invite.role,
            link: inviteLink(config.APP_URL, token),
            token,
            expires: invite.expires_at.toISOString(),
          }),
        });
        return { invite };
      });
    },
  );

  api.route(
    {
      method: 'post', path: '/invites/accept', tag, auth: 'none', status: 201, body: acceptInviteBody,
      summary: 'Accept an invite: creates the account in the workspace and signs in',
      response: z.object({ user: userOut }),
      errors: { 404: 'Unknown invite token', 409: 'Email already taken', 410: 'Invite expired or already used' },
    },
    async ({ ctx, body }) => {
      const user = await db.transaction((trx) => acceptInvite(trx, body));
      setSessionCookie(ctx, await createSession(db, user.id));
      return { user };
    },
  );

  api.route(
    {
      method: 'post', path: '/auth/password-reset', tag, auth: 'none', body: resetRequestBody,
      summary: 'Mail a password reset link; answers 200 whether or not the account exists',
      response: z.object({}),
      errors: { 503: 'Mail is not configured' },
    },
    async ({ body }) => {
      const mail = requireMailer(mailer);
      const reset = await createPasswordReset(db, body.email);
      if (reset) {
        // Sent in the background (mailer.send logs a failure): neither the status nor the time taken
        // may tell whether the account exists.
        void mail.send({
          to: reset.user.email,
          ...renderMail('password-reset', {
            name: reset.user.name || reset.user.email,
            link: passwordResetLink(config.APP_URL, reset.token),
            token: reset.token,
            expires: reset.expiresAt.toISOString(),
          }),
        }).catch(() => undefined);
      }
      return {};
    },
  );

  api.route(
    {
      method: 'post', path: '/auth/password-reset/confirm', tag, auth: 'none', body: resetConfirmBody,
      summary: 'Set a new password with a reset token; revokes every session of the user',
      response: z.object({}),
      errors: { 404: 'Unknown reset token', 410: 'Reset link expired or already used' },
    },
    async ({ body }) => {
      const userId = await db.transaction((trx) => confirmPasswordReset(trx, body.token, body.password));
      await authChanged(db, sessionCache, { userId });
      return {};
    },
  );

}
