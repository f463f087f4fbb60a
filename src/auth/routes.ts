import { z } from 'zod';
import { Forbidden } from '../errors.js';
import { jsonText, type Api } from '../http/api.js';
import type { AppDeps } from '../http/deps.js';
import {
  acceptInviteBody, acceptInviteOut, changePasswordBody, inviteBody, inviteOut, loginBody, loginOut, meOut, resetConfirmBody, resetRequestBody, signupBody, signupOut,
} from './schema.js';
import { acceptInvite, changePassword, checkCredentials, confirmPasswordReset, signUp } from './service.js';
import { inviteByMail, mailPasswordReset } from './mails.js';
import { clearSessionCookie, createSession, deleteSession, setSessionCookie } from './sessions.js';

/** `GET /auth/me`'s `data`, by the user object of a resolved session (which comes with its workspace and role). */
const meAnswers = new WeakMap<object, string>();

export function authRoutes(api: Api, { db, config, mailer }: AppDeps): void {
  api.tag('Auth', 'Sign-up, sign-in, sessions, passwords and invitations to a workspace');
  const tag = 'Auth';
  const mail = { mailer, appUrl: config.APP_URL };

  api.route(
    {
      method: 'post', path: '/auth/signup', tag, auth: 'none', status: 201, body: signupBody,
      summary: 'Create an account (and a workspace when workspace_name is given); signs in',
      response: signupOut,
      errors: { 403: 'Sign-up is closed (SIGNUP=closed): accounts come from invites and the CLI', 409: 'Email already taken', 422: 'Invalid field' },
    },
    async ({ ctx, body }) => {
      if (config.SIGNUP === 'closed') throw new Forbidden('Sign-up is closed: ask a workspace owner for an invite.');
      const workspace = body.workspace_name ? { name: body.workspace_name, trialDays: config.TRIAL_DAYS } : undefined;
      const result = await db.transaction((trx) => signUp(trx, { email: body.email, password: body.password, name: body.name, workspace }));
      setSessionCookie(ctx, await createSession(db, result.user.id));
      return result;
    },
  );

  api.route(
    {
      method: 'post', path: '/auth/login', tag, auth: 'none', body: loginBody,
      summary: 'Sign in; sets the quoting_session cookie',
      response: loginOut,
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
      clearSessionCookie(ctx);
      return {};
    },
  );

  api.route(
    {
      method: 'get', path: '/auth/me', tag, auth: 'session:user', summary: 'The signed-in user, their workspace and role',
      response: meOut,
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
    async ({ body, auth }) => ({
      invite: await db.transaction((trx) => inviteByMail(trx, { workspace: auth.workspace, inviter: auth.user, email: body.email, role: body.role }, mail)),
    }),
  );

  api.route(
    {
      method: 'post', path: '/invites/accept', tag, auth: 'none', status: 201, body: acceptInviteBody,
      summary: 'Accept an invite: creates the account in the workspace and signs in',
      response: acceptInviteOut,
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
      await mailPasswordReset(db, body.email, mail);
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
      await db.transaction((trx) => confirmPasswordReset(trx, body.token, body.password));
      return {};
    },
  );

}
