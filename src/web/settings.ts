/**
 * /app/settings: the workspace as its owner sees it (name and time zone editable), its profile (the seller's details
 * quotes show, the defaults of new quotes, the logo), and the tabs of the settings pages.
 */
import { html, type Html } from '../templates.js';
import type { AppDeps } from '../http/deps.js';
import type { Principal } from '../http/principal.js';
import type { Workspace } from '../accounts.js';
import { parseInput } from '../schema/parse.js';
import { profileBody, reminderSettingsBody, workspaceSettingsBody } from '../workspaces/schema.js';
import { getProfile, LOGO_MAX_BYTES, removeLogo, setLogo, updateProfile, type Profile } from '../workspaces/profile.js';
import { smallUpload } from '../http/bytes.js';
import { reminderSettings, updateReminderSettings, updateWorkspaceSettings } from '../workspaces/service.js';
import { lockReason } from '../workspaces/model.js';
import { dateText } from './dates.js';
import { page, redirect, type PageDef, type PageInput } from './page.js';
import { shell } from './layout.js';
import { field, fieldErrors, formProblem, formText, textarea, type FieldErrors } from './forms.js';

const current = (input: PageInput<unknown>) => ({ name: input.auth.workspace.name, time_zone: input.auth.workspace.time_zone ?? '' });

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

/** The profile's form fields, in the order the form shows them. */
const profileFields = ['legal_name', 'address', 'tax_number', 'email', 'phone', 'website', 'default_terms', 'default_validity_days', 'default_currency'] as const;
type ProfileValues = Record<(typeof profileFields)[number], string>;

const profileValues = (profile: Profile): ProfileValues =>
  Object.fromEntries(profileFields.map((name) => [name, profile[name] == null ? '' : String(profile[name])])) as ProfileValues;

function profileCard(profile: Profile, values: ProfileValues, errors: FieldErrors): Html {
  const logo = profile.logo;
  return html`<section class="card" aria-labelledby="profile-heading">
  <h2 id="profile-heading">Seller details</h2>
  <p class="hint">Shown on every quote: its page, its mail and its PDF. Left empty, quotes show the workspace name only.</p>
  ${formProblem(errors, [...profileFields])}
  <form method="post" action="/app/settings/profile" class="stack" novalidate>
    ${field({ name: 'legal_name', label: 'Legal name', value: values.legal_name, errors, autocomplete: 'organization', hint: 'The name quotes are issued under; the workspace name when empty.' })}
    ${textarea({ name: 'address', label: 'Address', value: values.address, errors, rows: 4, hint: 'One line per line, up to 8 lines.' })}
    ${field({ name: 'tax_number', label: 'Tax number', value: values.tax_number, errors, hint: 'VAT, GST or other registration number.' })}
    ${field({ name: 'email', label: 'Contact email', type: 'email', value: values.email, errors, autocomplete: 'email' })}
    ${field({ name: 'phone', label: 'Phone', type: 'tel', value: values.phone, errors, autocomplete: 'tel' })}
    ${field({ name: 'website', label: 'Website', value: values.website, errors, autocomplete: 'url' })}
    ${textarea({ name: 'default_terms', label: 'Terms', value: values.default_terms, errors, rows: 4, hint: "Shown under every quote's notes." })}
    ${field({ name: 'default_validity_days', label: 'Default validity (days)', type: 'number', value: values.default_validity_days, errors, hint: 'A new quote without an end date is valid this many days.', attrs: html` min="1" max="3650" inputmode="numeric"` })}
    ${field({ name: 'default_currency', label: 'Default currency', value: values.default_currency, errors, hint: 'A 3-letter code (EUR, INR) for new quotes whose channel names none; USD when empty.', attrs: html` maxlength="3" spellcheck="false"` })}
    <div class="actions"><button type="submit" class="primary">Save seller details</button></div>
  </form>
</section>
<section class="card" aria-labelledby="logo-heading">
  <h2 id="logo-heading">Logo</h2>
  ${logo ? html`<p><img src="/api/v1/workspace/profile/logo?v=${String(Date.parse(logo.updated_at))}" alt="The workspace logo" style="max-width: 240px; max-height: 96px"></p>` : html`<p class="muted">No logo yet.</p>`}
  ${formProblem(errors, ['logo'])}
  <form method="post" action="/app/settings/logo" enctype="multipart/form-data" class="stack" novalidate>
    <div class="field${errors.logo ? ' invalid' : ''}">
      <label for="f-logo">${logo ? 'Replace the logo' : 'Upload a logo'}</label>
      <input id="f-logo" name="logo" type="file" accept="image/png,image/jpeg"${errors.logo ? html` aria-invalid="true"` : ''} aria-describedby="f-logo-hint">
      <p class="hint" id="f-logo-hint">PNG or JPEG, at most ${String(LOGO_MAX_BYTES / 1024)} KB.</p>
      ${errors.logo ? html`<p class="error">${errors.logo}</p>` : ''}
    </div>
    <div class="actions"><button type="submit" class="primary">Upload</button></div>
  </form>
  ${logo ? html`<form method="post" action="/app/settings/logo/remove"><div class="actions"><button type="submit">Remove the logo</button></div></form>` : ''}
</section>`;
}

export function settingsPages({ db, mailer }: AppDeps): PageDef[] {
  const workspacePage = async (
    input: PageInput<unknown>,
    values: { name: string; time_zone: string; reminder_days?: string },
    errors: FieldErrors,
    profile: Profile,
    profileForm: ProfileValues = profileValues(profile),
  ) => {
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
    <div class="actions"><button type="submit" class="primary">Save reminders</button></div>
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
${profileCard(profile, profileForm, errors)}
</div>`,
    });
  };

  return [
    page({
      method: 'get', path: '/app/settings', who: 'owner',
      handle: async (input) => workspacePage(input, current(input), {}, await getProfile(db, input.auth.access)),
    }),
    page({
      method: 'post', path: '/app/settings', who: 'owner',
      handle: async ({ form, auth }) => {
        const body = parseInput(workspaceSettingsBody, { name: formText(form, 'name'), time_zone: formText(form, 'time_zone') });
        await updateWorkspaceSettings(db, auth.access, body);
        return redirect('/app/settings', 'The workspace settings are saved.');
      },
      invalid: async (input, error) =>
        workspacePage(input, { name: formText(input.form, 'name'), time_zone: formText(input.form, 'time_zone') }, fieldErrors(error), await getProfile(db, input.auth.access)),
    }),
    page({
      method: 'post', path: '/app/settings/profile', who: 'owner',
      handle: async ({ form, auth }) => {
        // Only the fields the form sent: a form without one leaves it as it is.
        const given = Object.fromEntries(profileFields.filter((name) => Object.hasOwn(form, name)).map((name) => [name, formText(form, name)]));
        const body = parseInput(profileBody, given);
        await db.transaction((trx) => updateProfile(trx, auth.access, body));
        return redirect('/app/settings', 'The seller details are saved.');
      },
      invalid: async (input, error) => {
        const profile = await getProfile(db, input.auth.access);
        const form = Object.fromEntries(profileFields.map((name) => [name, formText(input.form, name)])) as ProfileValues;
        return workspacePage(input, current(input), fieldErrors(error), profile, form);
      },
    }),
    page({
      method: 'post', path: '/app/settings/logo', who: 'owner',
      handle: async ({ ctx, auth }) => {
        await setLogo(db, auth.access, await smallUpload(ctx, 'logo', LOGO_MAX_BYTES));
        return redirect('/app/settings', 'The logo is saved.');
      },
      invalid: async (input, error) => workspacePage(input, current(input), fieldErrors(error), await getProfile(db, input.auth.access)),
    }),
    page({
      method: 'post', path: '/app/settings/logo/remove', who: 'owner',
      handle: async ({ auth }) => {
        await removeLogo(db, auth.access);
        return redirect('/app/settings', 'The logo is removed.');
      },
    }),
    page({
      method: 'post', path: '/app/settings/reminders', who: 'owner',
      handle: async ({ form, auth }) => {
        const body = parseInput(reminderSettingsBody, { reminder_days: formText(form, 'reminder_days') });
        const { reminder_days: days } = await updateReminderSettings(db, auth.access, body);
        return redirect('/app/settings', days === null ? 'Reminders are off.' : `Customers are reminded ${days} day${days === 1 ? '' : 's'} before a quote's validity ends.`);
      },
      invalid: async (input, error) =>
        workspacePage(input, { ...current(input), reminder_days: formText(input.form, 'reminder_days') }, fieldErrors(error), await getProfile(db, input.auth.access)),
    }),
  ];
}
