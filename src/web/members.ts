/**
 * /app/settings/members (owner): the workspace's people with their role, last sign-in and channel roles; inviting by
 * mail, adding someone with a one-time password, changing a role, removing someone, granting and revoking channel roles.
 */
import type { HttpError } from '../errors.js';
import type { AppDeps } from '../http/deps.js';
import type { Principal } from '../http/principal.js';
import { idInput } from '../schema/input.js';
import { parseInput } from '../schema/parse.js';
import { html, type Html } from '../templates.js';
import { addMemberBody, inviteBody, memberRoleBody } from '../auth/schema.js';
import { inviteByMail } from '../auth/mails.js';
import { addMember, changeMemberRole, listMembers, pendingInvites, removeMember, type Member } from '../auth/members.js';
import { channelRoles, memberBody } from '../channels/schema.js';
import { channelsAllowed, grantRole, revokeRole } from '../channels/service.js';
import { dateText, timeText } from './dates.js';
import { page, redirect, Rendered, type PageDef, type PageInput } from './page.js';
import { shell } from './layout.js';
import { settingsTabs } from './settings.js';
import { field, fieldErrors, formProblem, formText, select, type FieldErrors } from './forms.js';

const PATH = '/app/settings/members';

const roleOptions = [
  { value: 'member', label: 'Member' },
  { value: 'owner', label: 'Owner' },
];
const channelRoleOptions = channelRoles.map((role) => ({ value: role, label: role[0].toUpperCase() + role.slice(1) }));

/** Which of the page's forms a 422 or 409 belongs to, with what was typed into it. */
interface Posted {
  form: 'invite' | 'add' | 'row';
  values: Record<string, unknown>;
  errors: FieldErrors;
}

const grantBody = memberBody.extend({ channel_id: idInput });

export function memberPages({ db, config, mailer }: AppDeps): PageDef[] {
  const mail = { mailer, appUrl: config.APP_URL };

  const personName = (m: Member) => m.name || m.email;

  const memberRow = (auth: Principal, m: Member, channels: { id: number; name: string }[]): Html => {
    const you = m.id === auth.user.id;
    const granted = new Set(m.channel_roles.map((r) => r.channel_id));
    const grantable = channels.filter((c) => !granted.has(c.id));
    return html`<tr>
  <td data-label="Name"><strong>${personName(m)}</strong>${you ? html` <span class="muted">(you)</span>` : ''}<span class="sku">${m.email}</span></td>
  <td data-label="Role" class="nowrap">${m.role === 'owner' ? 'Owner' : 'Member'}</td>
  <td data-label="Last sign-in">${m.last_sign_in_at ? timeText(m.last_sign_in_at.toISOString()) : html`<span class="muted">Not signed in</span>`}</td>
  <td data-label="Channel roles">
    ${m.channel_roles.length
      ? html`<ul class="plain">${m.channel_roles.map(
          (r) => html`<li>${r.channel_name}: ${r.role} <form method="post" action="${PATH}/${m.id}/channels/${r.channel_id}/revoke" class="inline"><button type="submit" class="link" aria-label="Revoke ${personName(m)}'s role on ${r.channel_name}">Revoke</button></form></li>`,
        )}</ul>`
      : html`<span class="muted">${m.role === 'owner' ? 'Owners see every channel' : 'None: sees records without a channel only'}</span>`}
    ${grantable.length
      ? html`<form method="post" action="${PATH}/${m.id}/channels" class="row-form">
      ${select({ name: 'channel_id', id: `grant-channel-${m.id}`, label: 'Channel', options: grantable.map((c) => ({ value: String(c.id), label: c.name })), required: true })}
      ${select({ name: 'role', id: `grant-role-${m.id}`, label: 'Role', options: channelRoleOptions, value: 'viewer', required: true })}
      <button type="submit" class="small">Grant</button>
    </form>`
      : ''}
  </td>
  <td data-label="Actions">
    <div class="row-actions">
      <form method="post" action="${PATH}/${m.id}/role" class="row-form">
        ${select({ name: 'role', id: `role-${m.id}`, label: `Role of ${personName(m)}`, options: roleOptions, value: m.role ?? 'member', required: true })}
        <button type="submit" class="small">Change role</button>
      </form>
      ${you ? '' : html`<form method="post" action="${PATH}/${m.id}/remove" data-confirm="Remove ${personName(m)} from the workspace? They are signed out at once."><button type="submit" class="small danger" aria-label="Remove ${personName(m)}">Remove</button></form>`}
    </div>
  </td>
</tr>`;
  };

  const membersPage = async (input: PageInput<unknown>, posted?: Posted, top?: string): Promise<Html> => {
    const { auth } = input;
    const [members, invites, channels] = await Promise.all([listMembers(db, auth.access), pendingInvites(db, auth.access), channelsAllowed(db, auth.access, 'manage')]);
    const errorsOf = (form: Posted['form']) => (posted?.form === form ? posted.errors : {});
    const valueOf = (form: Posted['form'], name: string, otherwise = '') => (posted?.form === form ? formText(posted.values, name) : otherwise);
    const inviteErrors = errorsOf('invite');
    const addErrors = errorsOf('add');
    return shell(auth, {
      title: 'Members',
      section: 'settings',
      flash: input.flash,
      content: html`<h1>Members</h1>
${settingsTabs(auth, PATH)}
${top ? html`<div class="flash flash-error" role="alert">${top}</div>` : ''}
${posted?.form === 'row' ? formProblem(posted.errors, []) : ''}
<section class="card" aria-labelledby="people-heading">
  <h2 id="people-heading">People <span class="count">${members.length}</span></h2>
  <div class="table-wrap"><table class="list">
    <thead><tr><th scope="col">Name</th><th scope="col">Role</th><th scope="col">Last sign-in</th><th scope="col">Channel roles</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
    <tbody>${members.map((m) => memberRow(auth, m, channels))}</tbody>
  </table></div>
  <p class="hint">Owners see and change everything. A member sees the records of the channels they hold a role on, and those without a channel.</p>
</section>
${invites.length
  ? html`<section class="card" aria-labelledby="invites-heading">
  <h2 id="invites-heading">Pending invites <span class="count">${invites.length}</span></h2>
  <div class="table-wrap"><table class="list">
    <thead><tr><th scope="col">Email</th><th scope="col">Role</th><th scope="col">Sent</th><th scope="col">Expires</th></tr></thead>
    <tbody>${invites.map((i) => html`<tr><td data-label="Email">${i.email}</td><td data-label="Role">${i.role === 'owner' ? 'Owner' : 'Member'}</td><td data-label="Sent">${dateText(i.created_at.toISOString())}</td><td data-label="Expires">${timeText(i.expires_at.toISOString())}</td></tr>`)}</tbody>
  </table></div>
</section>`
  : ''}
<div class="grid">
${mailer
  ? html`<section class="card" aria-labelledby="invite-heading">
  <h2 id="invite-heading">Invite by mail</h2>
  <p>They get a link to choose their name and password; it works once, for 7 days.</p>
  ${formProblem(inviteErrors, ['email', 'role'])}
  <form method="post" action="${PATH}/invite" class="stack" novalidate>
    ${field({ name: 'email', id: 'invite-email', label: 'Email', type: 'email', value: valueOf('invite', 'email'), errors: inviteErrors, required: true, autocomplete: 'off' })}
    ${select({ name: 'role', id: 'invite-role', label: 'Role', options: roleOptions, value: valueOf('invite', 'role', 'member'), errors: inviteErrors, required: true })}
    <div class="actions"><button type="submit" class="primary">Send the invite</button></div>
  </form>
</section>`
  : ''}
<section class="card" aria-labelledby="add-heading">
  <h2 id="add-heading">Add with a one-time password</h2>
  <p>${mailer ? 'Or, without mail: ' : 'This server sends no mail, so people are added here: '}the next page shows a password once, for you to hand over. They sign in with it and change it under Your account.</p>
  ${formProblem(addErrors, ['email', 'name', 'role'])}
  <form method="post" action="${PATH}/add" class="stack" novalidate>
    ${field({ name: 'email', id: 'add-email', label: 'Email', type: 'email', value: valueOf('add', 'email'), errors: addErrors, required: true, autocomplete: 'off' })}
    ${field({ name: 'name', id: 'add-name', label: 'Name', value: valueOf('add', 'name'), errors: addErrors, required: true, autocomplete: 'off' })}
    ${select({ name: 'role', id: 'add-role', label: 'Role', options: roleOptions, value: valueOf('add', 'role', 'member'), errors: addErrors, required: true })}
    <div class="actions"><button type="submit" class="primary">Add the person</button></div>
  </form>
</section>
</div>`,
    });
  };

  /** The members page again after a refused row action (the last owner, a role they already lack): the message on top. */
  const refused = (input: PageInput<unknown>, error: HttpError) => membersPage(input, undefined, error.message);
  const rowInvalid = (input: PageInput<unknown>, error: { field: string; message: string }) =>
    membersPage(input, { form: 'row', values: input.form, errors: { [error.field]: error.message } });

  return [
    page({
      method: 'get', path: PATH, who: 'owner',
      handle: async (input) => membersPage(input),
    }),
    page({
      method: 'post', path: `${PATH}/invite`, who: 'owner',
      handle: async ({ form, auth }) => {
        const body = parseInput(inviteBody, { email: formText(form, 'email'), role: formText(form, 'role') || undefined });
        const invite = await db.transaction((trx) => inviteByMail(trx, { workspace: auth.workspace, inviter: auth.user, email: body.email, role: body.role }, mail));
        return redirect(PATH, `An invite is on its way to ${invite.email}.`);
      },
      invalid: async (input, error) => membersPage(input, { form: 'invite', values: input.form, errors: fieldErrors(error) }),
      conflict: async (input, error) => membersPage(input, { form: 'invite', values: input.form, errors: { email: error.message } }),
    }),
    page({
      method: 'post', path: `${PATH}/add`, who: 'owner',
      handle: async (input) => {
        const { form, auth } = input;
        const body = parseInput(addMemberBody, { email: formText(form, 'email'), name: formText(form, 'name'), role: formText(form, 'role') || undefined });
        const { user, password } = await db.transaction((trx) => addMember(trx, auth.access, body));
        // The password is on this answer only: not in a flash cookie, a redirect, or the members page.
        return new Rendered(
          201,
          shell(auth, {
            title: 'Person added',
            section: 'settings',
            content: html`<h1>${user.name || user.email} is added</h1>
<section class="card narrow">
  <p>${user.email} can sign in now as ${user.role === 'owner' ? 'an owner' : 'a member'}, with this password:</p>
  <div class="field"><label for="one-time-password">One-time password</label><div class="copy-row"><input id="one-time-password" type="text" readonly value="${password}" spellcheck="false" autocomplete="off"><button type="button" class="small" data-copy="#one-time-password">Copy</button></div>
  <p class="hint">Shown this once: copy it now and hand it over in person or another safe way. Ask them to choose their own at <a href="/app/settings/password">/app/settings/password</a> once signed in.</p></div>
  <p class="actions"><a class="button" href="${PATH}">Back to the members</a></p>
</section>`,
          }),
        );
      },
      invalid: async (input, error) => membersPage(input, { form: 'add', values: input.form, errors: fieldErrors(error) }),
      conflict: async (input, error) => membersPage(input, { form: 'add', values: input.form, errors: { email: error.message } }),
    }),
    page({
      method: 'post', path: `${PATH}/{id}/role`, who: 'owner',
      handle: async ({ params, form, auth }) => {
        const body = parseInput(memberRoleBody, { role: formText(form, 'role') });
        const user = await db.transaction((trx) => changeMemberRole(trx, auth.access, params.id, body.role));
        // Demoting yourself: the settings are an owner's, so the app's home is where you can go on.
        return redirect(user.id === auth.user.id && user.role !== 'owner' ? '/app' : PATH, `${user.name || user.email} is now ${user.role === 'owner' ? 'an owner' : 'a member'}.`);
      },
      invalid: rowInvalid,
      conflict: refused,
    }),
    page({
      method: 'post', path: `${PATH}/{id}/remove`, who: 'owner',
      handle: async ({ params, auth }) => {
        const user = await db.transaction((trx) => removeMember(trx, auth.access, params.id));
        return redirect(PATH, `${user.name || user.email} is removed and signed out.`);
      },
      conflict: refused,
    }),
    page({
      method: 'post', path: `${PATH}/{id}/channels`, who: 'owner',
      handle: async ({ params, form, auth }) => {
        const body = parseInput(grantBody, { channel_id: formText(form, 'channel_id'), role: formText(form, 'role') });
        await db.transaction((trx) => grantRole(trx, auth.access, body.channel_id, params.id, body.role));
        return redirect(PATH, 'The channel role is granted.');
      },
      invalid: rowInvalid,
    }),
    page({
      method: 'post', path: `${PATH}/{id}/channels/{channelId}/revoke`, who: 'owner',
      handle: async ({ params, auth }) => {
        await db.transaction((trx) => revokeRole(trx, auth.access, params.channelId, params.id));
        return redirect(PATH, 'The channel role is revoked.');
      },
    }),
  ];
}
