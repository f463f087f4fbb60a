/**
 * /app/settings/webhooks: subscriptions and their last outcome; create, edit, pause, resume, rotate the signing secret
 * and delete (owner); a subscription's recent deliveries, and a delivery with its stored response and a resend button.
 */
import type { AppDeps } from '../http/deps.js';
import type { Principal } from '../http/principal.js';
import { NotFound, type HttpError, type Validation } from '../errors.js';
import { parseInput } from '../schema/parse.js';
import { html, type Html } from '../templates.js';
import { timeText } from '../dates.js';
import { eventTypes } from '../events/outbox.js';
import { createSubscriptionBody, rotateSecretBody, updateSubscriptionBody } from '../webhooks/schema.js';
import {
  createSubscription, deleteSubscription, findSubscription, getDelivery, lastDeliveries, listDeliveries, listSubscriptions,
  resendDelivery, rotateSecret, updateSubscription, type DeliveryJson, type SubscriptionJson,
} from '../webhooks/service.js';
import { page, redirect, Rendered, type PageDef, type PageInput } from './page.js';
import { shell } from './layout.js';
import type { Flash } from './flash.js';
import { field, fieldErrors, formList, formProblem, formText, type FieldErrors } from './forms.js';
import { badge } from './lists.js';

interface Subscription {
  id: number;
  url: string;
  event_types: string[];
  active: boolean;
  description: string | null;
  created_at: string;
  updated_at: string;
  signing_secret?: string;
  previous_secret_expires_at?: string | null;
}

interface Delivery {
  id: number;
  subscription_id: number;
  event_id: string;
  event_type: string;
  status: 'pending' | 'succeeded' | 'failed' | 'dead';
  attempts: number;
  next_attempt_at: string;
  last_status_code: number | null;
  last_error: string | null;
  response_body?: string | null;
  created_at: string;
  updated_at: string;
  delivered_at: string | null;
}

const asSubscription = (s: SubscriptionJson) => s as unknown as Subscription;
const asDelivery = (d: DeliveryJson) => d as unknown as Delivery;

/** The stored response is at most 8 KB already; the page never shows more. */
const RESPONSE_SHOWN = 8192;

/** The event types by resource, as the checkboxes group them: `quote` → quote.created, quote.sent, … */
const groups = [...new Set(eventTypes.map((type) => type.split('.')[0]))].map((resource) => ({
  resource,
  types: eventTypes.filter((type) => type.startsWith(`${resource}.`)),
}));
const groupTitle: Record<string, string> = { quote: 'Quotes', order: 'Orders', customer: 'Customers' };

const deliveryLabel: Record<Delivery['status'], string> = { pending: 'Pending', succeeded: 'Delivered', failed: 'Retrying', dead: 'Failed' };
const deliveryBadge = (d: Delivery) => badge(d.status === 'succeeded' ? 'paid' : d.status === 'pending' ? 'sent' : 'declined', deliveryLabel[d.status]);
const activeBadge = (s: Subscription) => (s.active ? badge('active', 'Active') : badge('draft', 'Paused'));

/** What a delivery's last attempt came to, in a few words. */
function outcome(d: Delivery): string {
  const parts = [d.last_status_code !== null ? `HTTP ${d.last_status_code}` : '', d.last_error ?? ''].filter(Boolean);
  return parts.join(' · ') || (d.attempts ? '' : 'Not attempted yet');
}

const filterText = (types: string[]) => (types.includes('*') ? 'All events' : types.join(', '));

interface Values {
  url: string;
  description: string;
  event_types: string[];
}

/** The event type checkboxes: everything, or by resource (all of it, or some of its types). */
function eventChoices(checked: Set<string>, error: string | undefined): Html {
  const box = (value: string, label: Html | string) =>
    html`<label class="check"><input type="checkbox" name="event_types" value="${value}"${checked.has(value) ? html` checked` : ''}> <span>${label}</span></label>`;
  return html`<fieldset class="event-types${error ? ' invalid' : ''}"${error ? html` aria-describedby="f-event_types-error"` : ''}>
  <legend>Events</legend>
  <p class="hint">Tick nothing for every event. A resource's "every" box takes its future event types too.</p>
  ${box('*', html`<strong>Every event</strong> <code>*</code>`)}
  <div class="event-groups">
  ${groups.map(
    (g) => html`<fieldset>
    <legend>${groupTitle[g.resource] ?? g.resource}</legend>
    ${box(`${g.resource}.*`, html`Every ${g.resource} event <code>${g.resource}.*</code>`)}
    ${g.types.map((type) => box(type, html`<code>${type}</code>`))}
  </fieldset>`,
  )}
  </div>
  ${error ? html`<p class="field-error" id="f-event_types-error">${error}</p>` : ''}
</fieldset>`;
}

function subscriptionForm(action: string, cancel: string, values: Values, errors: FieldErrors, submit: string): Html {
  const typesError = Object.entries(errors).find(([name]) => name.startsWith('event_types'))?.[1];
  const shown = ['url', 'description', ...Object.keys(errors).filter((name) => name.startsWith('event_types'))];
  return html`${formProblem(errors, shown)}
<form method="post" action="${action}" class="stack" novalidate>
  ${field({ name: 'url', label: 'URL', type: 'url', value: values.url, errors, required: true, autocomplete: 'off', hint: 'Where each event is POSTed, signed: an http:// or https:// address your server answers with a 2xx.' })}
  ${field({ name: 'description', label: 'Description', value: values.description, errors, autocomplete: 'off' })}
  ${eventChoices(new Set(values.event_types), typesError)}
  <div class="actions"><button type="submit" class="primary">${submit}</button><a class="button" href="${cancel}">Cancel</a></div>
</form>`;
}

const sentValues = (form: Record<string, unknown>): Values => ({
  url: formText(form, 'url'),
  description: formText(form, 'description'),
  event_types: formList(form, 'event_types'),
});

const valuesOf = (s: Subscription): Values => ({ url: s.url, description: s.description ?? '', event_types: s.event_types });

/** A secret shown on the page that issued it, once, with its copy button. */
function secretBox(secret: string, hint: Html | string): Html {
  return html`<div class="field"><label for="signing-secret">Signing secret</label><div class="copy-row"><input id="signing-secret" type="text" readonly value="${secret}" spellcheck="false"><button type="button" class="small" data-copy="#signing-secret">Copy</button></div><p class="hint">${hint}</p></div>`;
}

const verifyHint = html`Your server checks each delivery's <code>Service-Signature</code> header with it (HMAC-SHA256 of the timestamp, a dot and the raw body).`;

function deliveriesTable(subscriptionId: number, deliveries: Delivery[]): Html {
  return html`<div class="table-wrap"><table class="list">
  <thead><tr><th scope="col">Delivery</th><th scope="col">Event</th><th scope="col">Status</th><th scope="col" class="num">Attempts</th><th scope="col" class="num">Last HTTP status</th><th scope="col">Last error</th><th scope="col">Next attempt</th><th scope="col">Created</th></tr></thead>
  <tbody>${deliveries.map(
    (d) => html`<tr>
    <td data-label="Delivery"><a href="/app/settings/webhooks/${subscriptionId}/deliveries/${d.id}">#${d.id}</a></td>
    <td data-label="Event"><code>${d.event_type}</code></td>
    <td data-label="Status">${deliveryBadge(d)}</td>
    <td data-label="Attempts" class="num">${d.attempts}</td>
    <td data-label="Last HTTP status" class="num">${d.last_status_code ?? '—'}</td>
    <td data-label="Last error">${d.last_error ?? '—'}</td>
    <td data-label="Next attempt">${d.status === 'pending' || d.status === 'failed' ? timeText(d.next_attempt_at) : '—'}</td>
    <td data-label="Created">${timeText(d.created_at)}</td>
  </tr>`,
  )}</tbody>
</table></div>`;
}

export function webhookPages({ db }: AppDeps): PageDef[] {
  const subscriptionOf = async (auth: Principal, id: number) => asSubscription(await findSubscription(db, auth.access, id));

  /** The delivery, when it is one of this subscription's (else the 404 page, as for another workspace's). */
  const deliveryOf = async (auth: Principal, id: number, deliveryId: number) => {
    const delivery = asDelivery(await getDelivery(db, auth.access, deliveryId));
    if (delivery.subscription_id !== id) throw new NotFound('Delivery not found.');
    return delivery;
  };

  const listView = async ({ auth, flash }: PageInput<unknown>): Promise<Html> => {
    const [subscriptions, last] = await Promise.all([listSubscriptions(db, auth.access), lastDeliveries(db, auth.access)]);
    const isOwner = auth.role === 'owner';
    const rows = subscriptions.map(asSubscription);
    return shell(auth, {
      title: 'Webhooks',
      section: 'settings',
      flash,
      content: html`<div class="page-head"><h1>Webhooks</h1>${isOwner ? html`<a class="button primary" href="/app/settings/webhooks/new">New webhook</a>` : ''}</div>
<section class="card">
  <p class="muted">Each event of the workspace that a subscription's filter takes is POSTed to its URL, signed with its secret, and retried for a while when it fails.</p>
  ${
    rows.length
      ? html`<div class="table-wrap"><table class="list">
    <thead><tr><th scope="col">URL</th><th scope="col">Events</th><th scope="col">State</th><th scope="col">Last delivery</th></tr></thead>
    <tbody>${rows.map((s) => {
      const d = last.get(s.id) ? asDelivery(last.get(s.id)!) : null;
      return html`<tr>
      <td data-label="URL"><a href="/app/settings/webhooks/${s.id}" class="url">${s.url}</a>${s.description ? html`<br><span class="muted">${s.description}</span>` : ''}</td>
      <td data-label="Events">${filterText(s.event_types)}</td>
      <td data-label="State">${activeBadge(s)}</td>
      <td data-label="Last delivery">${d ? html`<a href="/app/settings/webhooks/${s.id}/deliveries/${d.id}">${deliveryBadge(d)}</a> ${timeText(d.updated_at)}${outcome(d) ? html`<br><span class="muted">${outcome(d)}</span>` : ''}` : html`<span class="muted">None yet</span>`}</td>
    </tr>`;
    })}</tbody>
  </table></div>`
      : html`<p class="empty">No webhooks yet.</p>`
  }
</section>`,
    });
  };

  const newPage = (auth: Principal, values: Values, errors: FieldErrors) =>
    shell(auth, {
      title: 'New webhook',
      section: 'settings',
      content: html`<div class="page-head"><h1>New webhook</h1></div>
<section class="card">${subscriptionForm('/app/settings/webhooks/new', '/app/settings/webhooks', values, errors, 'Create webhook')}</section>`,
    });

  const editPage = (auth: Principal, s: Subscription, values: Values, errors: FieldErrors) =>
    shell(auth, {
      title: 'Edit webhook',
      section: 'settings',
      content: html`<div class="page-head"><h1>Edit webhook</h1></div>
<section class="card">${subscriptionForm(`/app/settings/webhooks/${s.id}/edit`, `/app/settings/webhooks/${s.id}`, values, errors, 'Save')}</section>`,
    });

  const subscriptionView = async (auth: Principal, id: number, flash: Flash | null): Promise<Html> => {
    const s = await subscriptionOf(auth, id);
    const deliveries = (await listDeliveries(db, auth.access, id)).map(asDelivery);
    const isOwner = auth.role === 'owner';
    const actions = isOwner
      ? html`<div class="actions">
  <a class="button" href="/app/settings/webhooks/${s.id}/edit">Edit</a>
  <form method="post" action="/app/settings/webhooks/${s.id}/${s.active ? 'pause' : 'resume'}"><button type="submit">${s.active ? 'Pause' : 'Resume'}</button></form>
  <a class="button" href="/app/settings/webhooks/${s.id}/rotate">Rotate secret…</a>
  <a class="button danger" href="/app/settings/webhooks/${s.id}/delete">Delete…</a>
</div>`
      : '';
    return shell(auth, {
      title: `Webhook ${s.url}`,
      section: 'settings',
      flash,
      content: html`<p class="back"><a href="/app/settings/webhooks">Webhooks</a></p>
<div class="page-head"><h1 class="url">${s.url}</h1></div>
<section class="card">
  <dl class="meta">
    <div><dt>State</dt><dd>${activeBadge(s)}</dd></div>
    <div><dt>Events</dt><dd>${filterText(s.event_types)}</dd></div>
    <div><dt>Description</dt><dd>${s.description || html`<span class="muted">Not given</span>`}</dd></div>
    <div><dt>Created</dt><dd>${timeText(s.created_at)}</dd></div>
  </dl>
  ${s.active ? '' : html`<p class="muted">Paused: no events are queued for it. Deliveries that were waiting were given up when it was paused; resend them once it is resumed.</p>`}
  ${actions}
</section>
<section class="card" aria-labelledby="deliveries-heading">
  <h2 id="deliveries-heading">Recent deliveries</h2>
  ${deliveries.length ? html`<p class="muted">Up to the 50 most recent, newest first.</p>${deliveriesTable(s.id, deliveries)}` : html`<p class="empty">No deliveries yet.</p>`}
</section>`,
    });
  };

  const deliveryView = async (auth: Principal, id: number, deliveryId: number, flash: Flash | null): Promise<Html> => {
    const s = await subscriptionOf(auth, id);
    const d = await deliveryOf(auth, id, deliveryId);
    const body = d.response_body ?? null;
    return shell(auth, {
      title: `Delivery #${d.id}`,
      section: 'settings',
      flash,
      content: html`<p class="back"><a href="/app/settings/webhooks/${s.id}">${s.url}</a></p>
<div class="page-head"><h1>Delivery #${d.id}</h1>
${auth.role === 'owner' ? html`<form method="post" action="/app/settings/webhooks/${s.id}/deliveries/${d.id}/resend" class="actions"><button type="submit" class="primary">Resend</button></form>` : ''}
</div>
<section class="card">
  <dl class="meta">
    <div><dt>Status</dt><dd>${deliveryBadge(d)}</dd></div>
    <div><dt>Event</dt><dd><code>${d.event_type}</code> <span class="muted">${d.event_id}</span></dd></div>
    <div><dt>Attempts</dt><dd>${d.attempts}</dd></div>
    <div><dt>Last HTTP status</dt><dd>${d.last_status_code ?? '—'}</dd></div>
    <div><dt>Last error</dt><dd>${d.last_error ?? '—'}</dd></div>
    <div><dt>Next attempt</dt><dd>${d.status === 'pending' || d.status === 'failed' ? timeText(d.next_attempt_at) : '—'}</dd></div>
    <div><dt>Delivered</dt><dd>${d.delivered_at ? timeText(d.delivered_at) : '—'}</dd></div>
    <div><dt>Created</dt><dd>${timeText(d.created_at)}</dd></div>
  </dl>
</section>
<section class="card" aria-labelledby="response-heading">
  <h2 id="response-heading">Response body</h2>
  ${
    body === null || body === ''
      ? html`<p class="empty">${body === null ? 'No response stored.' : 'The response was empty.'}</p>`
      : html`<p class="hint">The first 8 KB of the last response, as text.</p><pre class="response-body">${body.slice(0, RESPONSE_SHOWN)}</pre>`
  }
</section>`,
    });
  };

  /** A page that issued a signing secret: shown here once, never again. */
  const secretPage = (auth: Principal, s: Subscription, title: string, note: Html): Html =>
    shell(auth, {
      title,
      section: 'settings',
      content: html`<p class="back"><a href="/app/settings/webhooks">Webhooks</a></p>
<div class="page-head"><h1>${title}</h1></div>
<section class="card">
  <div class="flash flash-ok" role="status">${note}</div>
  ${secretBox(s.signing_secret ?? '', html`Copy it now: it is shown only on this page, this once. ${verifyHint}`)}
  <p class="actions"><a class="button primary" href="/app/settings/webhooks/${s.id}">Go to the webhook</a></p>
</section>`,
    });

  const rotatePage = (auth: Principal, s: Subscription, overlap: string, errors: FieldErrors) =>
    shell(auth, {
      title: 'Rotate the signing secret',
      section: 'settings',
      content: html`<p class="back"><a href="/app/settings/webhooks/${s.id}">${s.url}</a></p>
<div class="page-head"><h1>Rotate the signing secret</h1></div>
<section class="card">
  ${formProblem(errors, ['overlap_seconds'])}
  <p>A new secret is issued and shown once. Without an overlap the old secret stops signing at once. With one, every delivery until it ends carries two <code>v1=</code> signatures, one per secret, so your server can switch to the new secret without rejecting a delivery.</p>
  <form method="post" action="/app/settings/webhooks/${s.id}/rotate" class="stack" novalidate>
    ${field({ name: 'overlap_seconds', label: 'Overlap, in seconds', type: 'number', value: overlap, errors, required: true, hint: 'From 0 (none) to 86400 (a day).', attrs: html` min="0" max="86400" step="1"` })}
    <div class="actions"><button type="submit" class="primary">Rotate the secret</button><a class="button" href="/app/settings/webhooks/${s.id}">Cancel</a></div>
  </form>
</section>`,
    });

  const toggle = (name: 'pause' | 'resume') =>
    page({
      method: 'post', path: `/app/settings/webhooks/{id}/${name}`, who: 'owner',
      handle: async ({ auth, params }) => {
        const active = name === 'resume';
        await db.transaction((trx) => updateSubscription(trx, auth.access, params.id, { active }));
        return redirect(`/app/settings/webhooks/${params.id}`, active ? 'Webhook resumed: new events are delivered again.' : 'Webhook paused: its waiting deliveries were given up.');
      },
    });

  return [
    page({ method: 'get', path: '/app/settings/webhooks', who: 'member', handle: listView }),
    page({
      method: 'get', path: '/app/settings/webhooks/new', who: 'owner',
      handle: async ({ auth }) => newPage(auth, { url: '', description: '', event_types: [] }, {}),
    }),
    page({
      method: 'post', path: '/app/settings/webhooks/new', who: 'owner',
      handle: async ({ auth, form }) => {
        const values = sentValues(form);
        const body = parseInput(createSubscriptionBody, values);
        const created = asSubscription(await createSubscription(db, auth.access, body));
        // The secret is on this answer only: no redirect, no flash cookie, nothing in a URL.
        return secretPage(auth, created, 'Webhook created', html`The webhook to ${created.url} was created.`);
      },
      invalid: async ({ auth, form }, error: Validation) => newPage(auth, sentValues(form), fieldErrors(error)),
    }),
    page({
      method: 'get', path: '/app/settings/webhooks/{id}', who: 'member',
      handle: async ({ auth, params, flash }) => subscriptionView(auth, params.id, flash),
    }),
    page({
      method: 'get', path: '/app/settings/webhooks/{id}/edit', who: 'owner',
      handle: async ({ auth, params }) => {
        const s = await subscriptionOf(auth, params.id);
        return editPage(auth, s, valuesOf(s), {});
      },
    }),
    page({
      method: 'post', path: '/app/settings/webhooks/{id}/edit', who: 'owner',
      handle: async ({ auth, params, form }) => {
        const body = parseInput(updateSubscriptionBody, sentValues(form));
        await db.transaction((trx) => updateSubscription(trx, auth.access, params.id, body));
        return redirect(`/app/settings/webhooks/${params.id}`, 'Webhook saved.');
      },
      invalid: async ({ auth, params, form }, error: Validation) => editPage(auth, await subscriptionOf(auth, params.id), sentValues(form), fieldErrors(error)),
    }),
    toggle('pause'),
    toggle('resume'),
    page({
      method: 'get', path: '/app/settings/webhooks/{id}/rotate', who: 'owner',
      handle: async ({ auth, params }) => rotatePage(auth, await subscriptionOf(auth, params.id), '0', {}),
    }),
    page({
      method: 'post', path: '/app/settings/webhooks/{id}/rotate', who: 'owner',
      handle: async ({ auth, params, form }) => {
        const body = parseInput(rotateSecretBody, { overlap_seconds: formText(form, 'overlap_seconds') || undefined });
        const rotated = asSubscription(await db.transaction((trx) => rotateSecret(trx, auth.access, params.id, body.overlap_seconds)));
        const note = rotated.previous_secret_expires_at
          ? html`A new secret was issued. Until ${timeText(rotated.previous_secret_expires_at)} each delivery is signed with both the old and the new secret; after that, with the new one only.`
          : html`A new secret was issued. The old secret no longer signs deliveries.`;
        return secretPage(auth, rotated, 'New signing secret', note);
      },
      invalid: async ({ auth, params, form }, error: Validation) => rotatePage(auth, await subscriptionOf(auth, params.id), formText(form, 'overlap_seconds'), fieldErrors(error)),
    }),
    page({
      method: 'get', path: '/app/settings/webhooks/{id}/delete', who: 'owner',
      handle: async ({ auth, params }) => {
        const s = await subscriptionOf(auth, params.id);
        return shell(auth, {
          title: 'Delete the webhook',
          section: 'settings',
          content: html`<p class="back"><a href="/app/settings/webhooks/${s.id}">${s.url}</a></p>
<div class="page-head"><h1>Delete the webhook</h1></div>
<section class="card">
  <p>Delete the webhook to <strong class="url">${s.url}</strong> for good? No more events are sent to it. Deliveries still waiting are given up; past deliveries stay in the records but are no longer shown here.</p>
  <form method="post" action="/app/settings/webhooks/${s.id}/delete" class="actions"><button type="submit" class="danger">Delete the webhook</button><a class="button" href="/app/settings/webhooks/${s.id}">Cancel</a></form>
</section>`,
        });
      },
    }),
    page({
      method: 'post', path: '/app/settings/webhooks/{id}/delete', who: 'owner',
      handle: async ({ auth, params }) => {
        const deleted = asSubscription(await db.transaction((trx) => deleteSubscription(trx, auth.access, params.id)));
        return redirect('/app/settings/webhooks', `Webhook to ${deleted.url} deleted.`);
      },
    }),
    page({
      method: 'get', path: '/app/settings/webhooks/{id}/deliveries/{deliveryId}', who: 'member',
      handle: async ({ auth, params, flash }) => deliveryView(auth, params.id, params.deliveryId, flash),
    }),
    page({
      method: 'post', path: '/app/settings/webhooks/{id}/deliveries/{deliveryId}/resend', who: 'owner',
      handle: async ({ auth, params }) => {
        await deliveryOf(auth, params.id, params.deliveryId);
        await resendDelivery(db, auth.access, params.deliveryId);
        return redirect(`/app/settings/webhooks/${params.id}/deliveries/${params.deliveryId}`, 'Delivery queued again: it is sent within moments.');
      },
      conflict: async ({ auth, params }, error: HttpError) => deliveryView(auth, params.id, params.deliveryId, { kind: 'error', text: error.message }),
    }),
  ];
}
