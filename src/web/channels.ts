/** The channels pages: the list with the API's filters, a channel with the roles granted on it, and the forms that write them. */
import { z } from 'zod';
import { Forbidden, type HttpError, type Validation } from '../errors.js';
import type { AppDeps } from '../http/deps.js';
import type { Principal } from '../http/principal.js';
import { parseInput } from '../schema/parse.js';
import { html, type Html } from '../templates.js';
import { dateText } from '../dates.js';
import {
  channelOut, channelOwnerships, channelRoles, channelStatuses, channelTypes, createChannelBody, listChannelsQuery, memberBody, memberOut, updateChannelBody,
} from '../channels/schema.js';
import {
  channelPage, createChannel, deleteChannel, getChannel, grantRole, mayManageChannel, memberCounts, revokeRole, updateChannel, type Dependents,
} from '../channels/service.js';
import { workspaceUsers, type WorkspaceUser } from '../workspaces/users.js';
import { page, redirect, type PageDef, type PageInput } from './page.js';
import { shell } from './layout.js';
import type { Flash } from './flash.js';
import { field, fieldErrors, formProblem, formText, given, select, type FieldErrors } from './forms.js';
import { badge, pageNumber, pager, visible, withQuery } from './lists.js';

/** A channel and a role as the API answers them. */
type Channel = z.output<typeof channelOut>;
type Member = z.output<typeof memberOut>;

const channelsQuery = listChannelsQuery.extend({ page: pageNumber });

/** The channel form's fields, as the API's channel bodies name them. */
const channelFields = ['name', 'type', 'ownership', 'status', 'country', 'currency'] as const;
/** The grant form: the API's role body, and the user its path names, picked from a list. */
const grantFields = ['user_id', 'role'] as const;
const grantBody = memberBody.extend({ user_id: z.string().trim().regex(/^[1-9]\d{0,9}$/, 'choose a person from the list').transform(Number) });

const words: Record<string, string> = { b2b: 'B2B', third_party: 'Third party' };
const label = (value: string) => words[value] ?? value.charAt(0).toUpperCase() + value.slice(1);
const options = (values: readonly string[]) => values.map((value) => ({ value, label: label(value) }));

type Values = Record<string, string>;

const valuesOf = (c: Channel): Values => ({ name: c.name, type: c.type, ownership: c.ownership, status: c.status, country: c.country ?? '', currency: c.currency ?? '' });

const sentValues = (form: Record<string, unknown>): Values => Object.fromEntries(channelFields.map((name) => [name, formText(form, name)]));

/** A user as a page names them: name and email, or the id of one no longer in the workspace. */
function userText(users: Map<number, WorkspaceUser>, id: number): string {
  const user = users.get(id);
  return user ? user.name || user.email : `User ${id}`;
}

function channelForm(action: string, cancel: string, values: Values, errors: FieldErrors, submit: string): Html {
  return html`${formProblem(errors, channelFields)}
<form method="post" action="${action}" class="stack" novalidate>
  <div class="form-grid">
    ${field({ name: 'name', label: 'Name', value: values.name, errors, required: true, autocomplete: 'off' })}
    ${select({ name: 'type', label: 'Type', value: values.type || 'web', errors, required: true, options: options(channelTypes) })}
    ${select({ name: 'ownership', label: 'Ownership', value: values.ownership || 'owned', errors, required: true, options: options(channelOwnerships) })}
    ${select({ name: 'status', label: 'Status', value: values.status || 'active', errors, required: true, options: options(channelStatuses) })}
    ${field({ name: 'country', label: 'Country', value: values.country, errors, hint: 'Two-letter code, such as DE or US.', attrs: html` maxlength="2" autocomplete="off"` })}
    ${field({ name: 'currency', label: 'Currency', value: values.currency, errors, hint: 'Three-letter code, such as EUR. Quotes on this channel use it.', attrs: html` maxlength="3" autocomplete="off"` })}
  </div>
  <div class="actions"><button type="submit" class="primary">${submit}</button><a class="button" href="${cancel}">Cancel</a></div>
</form>`;
}

const back = (href: string, text: string) => html`<p class="back"><a href="${href}">← ${text}</a></p>`;

export function channelPages({ db }: AppDeps): PageDef[] {
  /** The channel as the API reads it: a channel the member has no role on is the 404 page. */
  const channelOf = async (auth: Principal, id: number) =>
    (await visible(getChannel(db, auth.access, id))) as unknown as { channel: Channel; members: Member[] };

  /** The form pages that change a channel are a manager's (owners always), as the API's PATCH is. */
  const managedChannel = async (auth: Principal, id: number): Promise<Channel> => {
    const { channel } = await channelOf(auth, id);
    if (!(await mayManageChannel(db, auth.access, id))) throw new Forbidden(`Changing channel ${id} needs the manager role on it.`);
    return channel;
  };

  const listPage = async ({ auth, query, flash }: PageInput<z.output<typeof channelsQuery>>) => {
    const { page: number, ...filters } = query;
    const found = await channelPage(db, auth.access, filters, number);
    const channels = found.rows as unknown as Channel[];
    const counts = await memberCounts(db, auth.access, channels.map((c) => c.id));
    const filtered = Object.values(filters).some((v) => v !== undefined);
    const isOwner = auth.role === 'owner';
    const anyOption = (noun: string) => [{ value: '', label: `Any ${noun}` }];
    const rows = channels.map(
      (c) => html`<tr>
  <td data-label="Name"><a href="/app/channels/${c.id}">${c.name}</a></td>
  <td data-label="Type">${label(c.type)}</td>
  <td data-label="Ownership">${label(c.ownership)}</td>
  <td data-label="Status">${badge(c.status)}</td>
  <td data-label="Country">${c.country ?? ''}</td>
  <td data-label="Currency">${c.currency ?? ''}</td>
  <td data-label="Roles" class="num">${counts.get(c.id) ?? 0}</td>
</tr>`,
    );
    const empty = found.total > 0
      ? html`This page is past the end of the list. <a href="${withQuery('/app/channels', query, { page: 1 })}">Go to the first page</a>.`
      : filtered
        ? 'No channels match these filters.'
        : isOwner
          ? html`No channels yet. <a href="/app/channels/new">Create the first one</a>.`
          : 'You have no role on any channel yet. An owner can grant you one.';
    return shell(auth, {
      title: 'Channels',
      section: 'channels',
      flash,
      content: html`<div class="page-head"><h1>Channels</h1>${isOwner ? html`<a class="button primary" href="/app/channels/new">New channel</a>` : ''}</div>
<form method="get" action="/app/channels" class="filters" role="search" aria-label="Filter channels">
  ${field({ name: 'q', label: 'Name', type: 'search', value: query.q ?? '' })}
  ${select({ name: 'type', label: 'Type', value: query.type ?? '', options: [...anyOption('type'), ...options(channelTypes)] })}
  ${select({ name: 'ownership', label: 'Ownership', value: query.ownership ?? '', options: [...anyOption('ownership'), ...options(channelOwnerships)] })}
  ${select({ name: 'status', label: 'Status', value: query.status ?? '', options: [...anyOption('status'), ...options(channelStatuses)] })}
  ${field({ name: 'country', label: 'Country', value: query.country ?? '', attrs: html` maxlength="2" autocomplete="off"` })}
  <button type="submit">Filter</button>
  ${filtered ? html`<a class="button" href="/app/channels">Clear</a>` : ''}
</form>
${
  channels.length
    ? html`<div class="table-wrap"><table class="list">
  <thead><tr><th scope="col">Name</th><th scope="col">Type</th><th scope="col">Ownership</th><th scope="col">Status</th><th scope="col">Country</th><th scope="col">Currency</th><th scope="col" class="num">Roles</th></tr></thead>
  <tbody>${rows}</tbody>
</table></div>`
    : html`<p class="empty">${empty}</p>`
}
${pager('/app/channels', filters, found, 'channels')}`,
    });
  };

  const detail = async (auth: Principal, id: number, flash: Flash | null, grant: { values: Values; errors: FieldErrors } = { values: {}, errors: {} }) => {
    const { channel, members } = await channelOf(auth, id);
    const [manages, people] = await Promise.all([mayManageChannel(db, auth.access, id), workspaceUsers(db, auth.access)]);
    const users = new Map(people.map((u) => [u.id, u]));
    const isOwner = auth.role === 'owner';
    const missing = html`<span class="muted">Not given</span>`;
    const memberRows = members.map((m) => {
      const user = users.get(m.user_id);
      const name = userText(users, m.user_id);
      return html`<tr>
    <td data-label="Name">${name}${user?.role === 'owner' ? html` <span class="muted">(owner)</span>` : ''}</td>
    <td data-label="Email">${user?.email ?? ''}</td>
    <td data-label="Role">${label(m.role)}</td>
    <td data-label="Since">${dateText(m.created_at)}</td>
    ${manages ? html`<td data-label="Revoke"><form method="post" action="/app/channels/${channel.id}/members/${m.user_id}/revoke" data-confirm="Revoke the ${m.role} role of ${name}?"><button type="submit" class="small danger" aria-label="Revoke the role of ${name}">Revoke</button></form></td>` : ''}
  </tr>`;
    });
    const errors = grant.errors;
    return shell(auth, {
      title: channel.name,
      section: 'channels',
      flash,
      content: html`${back('/app/channels', 'Channels')}
<div class="page-head"><h1>${channel.name}</h1>
  ${manages || isOwner ? html`<p class="actions">${manages ? html`<a class="button" href="/app/channels/${channel.id}/edit">Edit</a>` : ''}${isOwner ? html`<a class="button danger" href="/app/channels/${channel.id}/delete">Delete</a>` : ''}</p>` : ''}
</div>
<section class="card">
  <dl class="meta">
    <div><dt>Type</dt><dd>${label(channel.type)}</dd></div>
    <div><dt>Ownership</dt><dd>${label(channel.ownership)}</dd></div>
    <div><dt>Status</dt><dd>${badge(channel.status)}</dd></div>
    <div><dt>Country</dt><dd>${channel.country ?? missing}</dd></div>
    <div><dt>Currency</dt><dd>${channel.currency ?? missing}</dd></div>
    <div><dt>Created</dt><dd>${dateText(channel.created_at)}</dd></div>
    <div><dt>Last change</dt><dd>${dateText(channel.updated_at)}</dd></div>
  </dl>
</section>
<section class="card">
  <h2>Roles <span class="count">${members.length}</span></h2>
  <p class="muted">A member sees a channel's quotes and orders with any role, changes them as editor or manager, and changes the channel and its roles as manager. Owners may do everything on every channel.</p>
  ${
    members.length
      ? html`<div class="table-wrap"><table class="list">
  <thead><tr><th scope="col">Name</th><th scope="col">Email</th><th scope="col">Role</th><th scope="col">Since</th>${manages ? html`<th scope="col"><span class="visually-hidden">Revoke</span></th>` : ''}</tr></thead>
  <tbody>${memberRows}</tbody>
</table></div>`
      : html`<p class="empty">No roles on this channel yet.</p>`
  }
  ${
    manages
      ? html`<h3>Grant a role</h3>
  ${formProblem(errors, grantFields)}
  <form method="post" action="/app/channels/${channel.id}/members" class="filters" novalidate>
    ${select({ name: 'user_id', label: 'Person', value: grant.values.user_id ?? '', errors, required: true, options: [{ value: '', label: 'Choose a person' }, ...people.map((u) => ({ value: String(u.id), label: `${u.name || u.email} (${u.email})` }))] })}
    ${select({ name: 'role', label: 'Role', value: grant.values.role || 'viewer', errors, required: true, options: options(channelRoles) })}
    <button type="submit">Grant</button>
  </form>
  <p class="hint">Granting a role to someone who has one changes it.</p>`
      : ''
  }
</section>`,
    });
  };

  const newPage = (auth: Principal, values: Values, errors: FieldErrors) =>
    shell(auth, {
      title: 'New channel',
      section: 'channels',
      content: html`${back('/app/channels', 'Channels')}
<div class="page-head"><h1>New channel</h1></div>
<section class="card">${channelForm('/app/channels/new', '/app/channels', values, errors, 'Create channel')}</section>`,
    });

  const editPage = (auth: Principal, channel: Channel, values: Values, errors: FieldErrors) =>
    shell(auth, {
      title: `Edit ${channel.name}`,
      section: 'channels',
      content: html`${back(`/app/channels/${channel.id}`, channel.name)}
<div class="page-head"><h1>Edit ${channel.name}</h1></div>
<section class="card">${channelForm(`/app/channels/${channel.id}/edit`, `/app/channels/${channel.id}`, values, errors, 'Save')}</section>`,
    });

  const deletePage = (auth: Principal, channel: Channel, members: number) =>
    shell(auth, {
      title: `Delete ${channel.name}`,
      section: 'channels',
      content: html`${back(`/app/channels/${channel.id}`, channel.name)}
<h1>Delete ${channel.name}?</h1>
<section class="card">
  <p>Deleting a channel cannot be undone.${members ? ` The ${members === 1 ? 'role' : `${members} roles`} granted on it ${members === 1 ? 'goes' : 'go'} with it.` : ''} A channel that quotes or orders use is not deleted: archive it instead.</p>
  <div class="actions">
    <form method="post" action="/app/channels/${channel.id}/delete"><button type="submit" class="danger">Delete channel</button></form>
    <a class="button" href="/app/channels/${channel.id}">Keep the channel</a>
  </div>
</section>`,
    });

  const refusedDelete = async (auth: Principal, id: number, error: HttpError) => {
    const { channel } = await channelOf(auth, id);
    const dependents = (error.data?.dependents ?? {}) as Partial<Dependents>;
    const counted = (n: number | undefined, one: string, many: string) => (n ? html`<li>${n} ${n === 1 ? one : many}</li>` : '');
    return shell(auth, {
      title: `${channel.name} cannot be deleted`,
      section: 'channels',
      content: html`${back(`/app/channels/${channel.id}`, channel.name)}
<h1>${channel.name} cannot be deleted</h1>
<section class="card">
  <p>It is used by:</p>
  <ul>
    ${counted(dependents.quotes, 'quote', 'quotes')}
    ${counted(dependents.orders, 'order', 'orders')}
  </ul>
  <p>A channel in use cannot be deleted. You can archive it instead.</p>
  <div class="actions">
    ${channel.status === 'archived' ? '' : html`<form method="post" action="/app/channels/${channel.id}/edit">
      <input type="hidden" name="status" value="archived">
      <button type="submit" class="primary">Archive it instead</button>
    </form>`}
    <a class="button" href="/app/channels/${channel.id}">Back to the channel</a>
  </div>
</section>`,
    });
  };

  return [
    page({ method: 'get', path: '/app/channels', who: 'member', query: channelsQuery, handle: listPage }),
    page({
      method: 'get', path: '/app/channels/new', who: 'owner',
      handle: async ({ auth }) => newPage(auth, sentValues({}), {}),
    }),
    page({
      method: 'post', path: '/app/channels/new', who: 'owner',
      handle: async ({ auth, form }) => {
        // As POST /channels: an empty optional field is one not given (the API's defaults apply).
        const body = parseInput(createChannelBody, given(form, channelFields));
        const channel = await db.transaction((trx) => createChannel(trx, auth.access, body));
        return redirect(`/app/channels/${channel.id}`, 'Channel created.');
      },
      invalid: async ({ auth, form }, error: Validation) => newPage(auth, sentValues(form), fieldErrors(error)),
    }),
    page({
      method: 'get', path: '/app/channels/{id}', who: 'member',
      handle: async ({ auth, params, flash }) => detail(auth, params.id, flash),
    }),
    page({
      method: 'get', path: '/app/channels/{id}/edit', who: 'member',
      handle: async ({ auth, params }) => {
        const channel = await managedChannel(auth, params.id);
        return editPage(auth, channel, valuesOf(channel), {});
      },
    }),
    page({
      method: 'post', path: '/app/channels/{id}/edit', who: 'member',
      handle: async ({ auth, params, form }) => {
        await channelOf(auth, params.id);
        // As PATCH /channels/{id}: the fields sent change (the edit form sends all, "archive instead" only status);
        // an emptied country or currency is cleared.
        const sent = Object.fromEntries(channelFields.filter((name) => form[name] !== undefined).map((name) => [name, formText(form, name)]));
        const body = parseInput(updateChannelBody, sent);
        await db.transaction((trx) => updateChannel(trx, auth.access, params.id, body));
        return redirect(`/app/channels/${params.id}`, 'Channel saved.');
      },
      invalid: async ({ auth, params, form }, error: Validation) => {
        const { channel } = await channelOf(auth, params.id);
        return editPage(auth, channel, { ...valuesOf(channel), ...sentValues(form) }, fieldErrors(error));
      },
    }),
    page({
      method: 'get', path: '/app/channels/{id}/delete', who: 'owner',
      handle: async ({ auth, params }) => {
        const { channel, members } = await channelOf(auth, params.id);
        return deletePage(auth, channel, members.length);
      },
    }),
    page({
      method: 'post', path: '/app/channels/{id}/delete', who: 'owner',
      handle: async ({ auth, params }) => {
        const channel = await db.transaction((trx) => deleteChannel(trx, auth.access, params.id));
        return redirect('/app/channels', `${channel.name} is deleted.`);
      },
      conflict: async ({ auth, params }, error: HttpError) => refusedDelete(auth, params.id, error),
    }),
    page({
      method: 'post', path: '/app/channels/{id}/members', who: 'member',
      handle: async ({ auth, params, form }) => {
        const { channel } = await channelOf(auth, params.id);
        // As PUT /channels/{id}/members/{user_id}: the role from the API's body, the user from the form's choice.
        const body = parseInput(grantBody, { user_id: formText(form, 'user_id'), role: formText(form, 'role') });
        await db.transaction((trx) => grantRole(trx, auth.access, params.id, body.user_id, body.role));
        const users = new Map((await workspaceUsers(db, auth.access)).map((u) => [u.id, u]));
        return redirect(`/app/channels/${params.id}`, `${userText(users, body.user_id)} is now ${body.role} on ${channel.name}.`);
      },
      invalid: async ({ auth, params, form }, error: Validation) =>
        detail(auth, params.id, null, { values: { user_id: formText(form, 'user_id'), role: formText(form, 'role') }, errors: fieldErrors(error) }),
    }),
    page({
      method: 'post', path: '/app/channels/{id}/members/{userId}/revoke', who: 'member',
      handle: async ({ auth, params }) => {
        const { channel } = await channelOf(auth, params.id);
        await db.transaction((trx) => revokeRole(trx, auth.access, params.id, params.userId));
        const users = new Map((await workspaceUsers(db, auth.access)).map((u) => [u.id, u]));
        // A member who gave up their own role may no longer read the channel: back to the list.
        const self = params.userId === auth.user.id && auth.access.channels !== 'all';
        return redirect(self ? '/app/channels' : `/app/channels/${params.id}`, `${userText(users, params.userId)} no longer has a role on ${channel.name}.`);
      },
    }),
  ];
}
