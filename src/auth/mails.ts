import type { Db } from '../db/database.js';
import { requireMailer, type Mailer } from '../mail/mailer.js';
import { renderMail } from '../templates.js';
import type { Role, User, Workspace } from '../accounts.js';
import { inviteLink, passwordResetLink } from './links.js';
import { createInvite, createPasswordReset, type Invite } from './service.js';

/** Where the mails' links point, and what sends them (null: mail is not configured, 503). */
export interface AuthMail {
  mailer: Mailer | null;
  appUrl: string;
}

/**
 * Invites someone to the workspace by mail. The mail goes out inside the transaction, so a refused
 * mail (502) leaves no invite; without a mailer it is 503 before anything else.
 */
export async function inviteByMail(
  trx: Db,
  input: { workspace: Workspace; inviter: User; email: string; role: Role },
  mail: AuthMail,
): Promise<Invite> {
  const mailer = requireMailer(mail.mailer);
  const { invite, token } = await createInvite(trx, { workspaceId: input.workspace.id, email: input.email, role: input.role, invitedBy: input.inviter.id });
  await mailer.send({
    to: invite.email,
    ...renderMail('invite', {
      workspace: input.workspace.name,
      inviter: input.inviter.name || input.inviter.email,
      role: invite.role,
      link: inviteLink(mail.appUrl, token),
      token,
      expires: invite.expires_at.toISOString(),
    }),
  });
  return invite;
}

/**
 * Mails a password reset link to the account with that email, if there is one. The mail is sent in
 * the background (mailer.send logs a failure): neither the answer nor the time taken may tell whether
 * the account exists. Without a mailer it is 503, account or not.
 */
export async function mailPasswordReset(db: Db, email: string, mail: AuthMail): Promise<void> {
  const mailer = requireMailer(mail.mailer);
  const reset = await createPasswordReset(db, email);
  if (!reset) return;
  void mailer
    .send({
      to: reset.user.email,
      ...renderMail('password-reset', {
        name: reset.user.name || reset.user.email,
        link: passwordResetLink(mail.appUrl, reset.token),
        token: reset.token,
        expires: reset.expiresAt.toISOString(),
      }),
    })
    .catch(() => undefined);
}
