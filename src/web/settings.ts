/** /app/settings: the workspace as its owner sees it (name and time zone editable), and the tabs of the settings pages. */
import { html, type Html } from '../templates.js';
import type { AppDeps } from '../http/deps.js';
import type { Principal } from '../http/principal.js';
import type { Workspace } from '../accounts.js';
import { parseInput } from '../schema/parse.js';
import { reminderSettingsBody, workspaceSettingsBody } from '../workspaces/schema.js';
import { reminderSettings, updateReminderSettings, updateWorkspaceSettings } from '../workspaces/service.js';
import { lockReason } from '../workspaces/model.js';
import { dateText } from './dates.js';
import { page, redirect, type PageDef, type PageInput } from './page.js';
import { shell } from './layout.js';
import { field, fieldErrors, formProblem, formText, type FieldErrors } from './forms.js';

const statusText: Record<string, string> = { trialing: 'Trial', active: 'Active', suspended: 'Suspended' };

/** The settings pages a caller may open: the owner's, then everyone's own account. */
const tabs: { href: string; label: string; owner: boolean }[] = [
  { href: '/app/settings', label: 'Workspace', owner: true },
  { href: '/app/settings/members', label: 'Members', owner: true },
  { href: '/app/settings/keys', label: 'Keys and tracking', owner: true },
  { href: '/app/settings/webhooks', label: 'Webhooks', owner: true },
  { href: '/app/settings/account', label: 'Your account', owner: false },
];

/** The settings tabs, the owner's only for an owner: a member sees their own account's. */
export function settingsTabs(auth: Principal, current: string): Html {
  const shown = tabs.filter((t) => !t.owner || auth.role === 'owner');
  return html`<nav aria-label="Settings"><ul class="tabs">${shown.map(
    (t) => html`<li><a href="${t.href}"${t.href === current ? html` aria-current="page"` : ''}>${t.label}</a></li>`,
  )}</ul></nav>`;
}

/** Every zone this server knows, for the field's suggestions (any IANA name Intl accepts is taken). */
const zoneOptions = html`<datalist id="time-zones">${['UTC', ...Intl.supportedValuesOf('timeZone')].map((zone) => html`<option value="${zone}"></option>`)}</datalist>`;

/** Trial days left, or why the workspace is locked, or its status. */
function statusLine(workspace: Workspace, now = new Date()): string {
  const locked = lockReason(workspace, now);
  if (locked) return `Locked: ${locked}`;
  if (workspace.status === 'trialing' && workspace.trial_ends_at) {
    const days = Math.ceil((workspace.trial_ends_at.getTime() - now.getTime()) / 86_400_000);
    return `Trial: ${days} day${days === 1 ? '' : 's'} left (until ${dateText(workspace.trial_ends_at.toISOString())})`;
  }
  return statusText[workspace.status] ?? workspace.status;
}

export function settingsPages({ db, mailer }: AppDeps): PageDef[] {
  const workspacePage = async (input: PageInput<unknown>, values: { name: string; time_zone: string; reminder_days?: string }, errors: FieldErrors) => {
    const { auth } = input;
    const reminderDays = values.reminder_days ?? String((await reminderSettings(db, auth.access)).reminder_days ?? '');
    const workspace = auth.workspace;
    return shell(auth, {
      title: 'Settings',
      section: 'settings',
      flash: input.flash,
      content: html`<h1>Settings</h1>
${settingsTabs(auth, '/app/settings')}
<div class="grid">
<section class="card" aria-labelledby="ws-heading">
  <h2 id="ws-heading">Workspace</h2>
  ${formProblem(errors, ['name', 'time_zone'])}
  <form method="post" action="/app/settings" class="stack" novalidate>
    ${field({ name: 'name', label: 'Name', value: values.name, errors, required: true, autocomplete: 'organization', hint: 'Customers see it on quotes.' })}
    ${field({ name: 'time_zone', label: 'Time zone', value: values.time_zone, errors, autocomplete: 'off', hint: 'The pages show dates and times in it: an IANA name such as Europe/Paris. Empty means UTC.', attrs: html` list="time-zones" spellcheck="false"` })}
    ${zoneOptions}
    <div class="actions"><button type="submit" class="primary">Save</button></div>
  </form>
</section>
<section class="card" aria-labelledby="reminders-heading">
  <h2 id="reminders-heading">Reminders before a quote expires</h2>
  ${formProblem(errors, ['reminder_days'])}
  <form method="post" action="/app/settings/reminders" class="stack" novalidate>
    ${field({ name: 'reminder_days', label: 'Days before the end of validity', type: 'number', value: reminderDays, errors, autocomplete: 'off', hint: 'The customer of a sent quote is mailed once, this many days before its valid until date (1 to 365). Empty: no reminders.', attrs: html` min="1" max="365" step="1" inputmode="numeric"` })}
    ${mailer ? '' : html`<p class="hint">Mail is not set up on this server (SMTP_URL): no reminder is sent until it is.</p>`}
    <div class="actions"><button type="submit" class="primary">Save</button></div>
  </form>
</section>
<section class="card" aria-labelledby="about-heading">
  <h2 id="about-heading">About this workspace</h2>
  <dl class="meta">
    <div><dt>Slug</dt><dd><code>${workspace.slug}</code></dd></div>
    <div><dt>Status</dt><dd>${statusLine(workspace)}</dd></div>
    <div><dt>Time zone</dt><dd>${workspace.time_zone ?? 'UTC'}</dd></div>
    <div><dt>Created</dt><dd>${dateText(new Date(workspace.created_at).toISOString())}</dd></div>
  </dl>
</section>
</div>`,
    });
  };

  return [
    page({
      method: 'get', path: '/app/settings', who: 'owner',
      handle: async (input) => workspacePage(input, { name: input.auth.workspace.name, time_zone: input.auth.workspace.time_zone ?? '' }, {}),
    }),
    page({
      method: 'post', path: '/app/settings', who: 'owner',
      handle: async ({ form, auth }) => {
        const body = parseInput(workspaceSettingsBody, { name: formText(form, 'name'), time_zone: formText(form, 'time_zone') });
        await updateWorkspaceSettings(db, auth.access, body);
        return redirect('/app/settings', 'The workspace settings are saved.');
      },
      invalid: async (input, error) => workspacePage(input, { name: formText(input.form, 'name'), time_zone: formText(input.form, 'time_zone') }, fieldErrors(error)),
    }),
    page({
      method: 'post', path: '/app/settings/reminders', who: 'owner',
      handle: async ({ form, auth }) => {
        const body = parseInput(reminderSettingsBody, { reminder_days: formText(form, 'reminder_days') });
        const { reminder_days: days } = await updateReminderSettings(db, auth.access, body);
        return redirect('/app/settings', days === null ? 'Reminders are off.' : `Customers are reminded ${days} day${days === 1 ? '' : 's'} before a quote's validity ends.`);
      },
      invalid: async (input, error) =>
        workspacePage(input, { name: input.auth.workspace.name, time_zone: input.auth.workspace.time_zone ?? '', reminder_days: formText(input.form, 'reminder_days') }, fieldErrors(error)),
    }),
  ];
}
