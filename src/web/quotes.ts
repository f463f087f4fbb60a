/** The quotes' pages: the list with its status tabs and filters, and a quote's page with the actions its status allows. */
import type { z } from 'zod';
import { Forbidden, NotFound, type HttpError } from '../errors.js';
import type { Access } from '../access.js';
import type { Db } from '../db/database.js';
import type { AppDeps } from '../http/deps.js';
import { amountText } from '../money.js';
import { dateText, timeText } from './dates.js';
import { parseInput } from '../schema/parse.js';
import { html, type Html } from '../templates.js';
import { assertChannelAccess } from '../channels/access.js';
import { getChannel } from '../channels/service.js';
import { getCustomer } from '../customers/service.js';
import { convertQuote, orderOfQuote } from '../orders/service.js';
import { listQuotesQuery, quoteStatuses, sendQuoteBody, type QuoteStatus } from '../quotes/schema.js';
import { deleteQuote, duplicateQuote, getQuote, quoteListPage, readableQuote, type QuoteJson, type QuoteListRow } from '../quotes/service.js';
import { publicUrl, sendQuote } from '../quotes/send.js';
import { expiredOn, transitionQuote, utcDay, type UtcDay } from '../quotes/transitions.js';
import { quoteBrowsing, type EventJson } from '../tracking/service.js';
import { page, redirect, type PageDef, type PageInput, type Redirect } from './page.js';
import { shell } from './layout.js';
import { formText } from './forms.js';
import { badge, cursorId, cursorOf, pageNumber, pager, visible, withQuery } from './lists.js';
import type { Flash } from './flash.js';

const listQuery = listQuotesQuery.extend({ page: pageNumber, before: cursorId, after: cursorId });
type ListQuery = z.output<typeof listQuery>;

const statusLabel = (status: string) => status.charAt(0).toUpperCase() + status.slice(1);

/** Statuses in which a passed valid_until still matters: the quote can no longer be sent, accepted or paid. */
const open: readonly QuoteStatus[] = ['draft', 'sent', 'accepted'];

/** The quote's last valid day, marked "expired" once it has passed (by `now`) while the quote is still open. */
function validity(quote: Readonly<Record<string, unknown>> & { status: QuoteStatus }, now: Date | UtcDay = new Date()): Html {
  if (!quote.valid_until) return html`<span class="muted">No limit</span>`;
  const expired = open.includes(quote.status) && expiredOn(quote, now);
  return html`${dateText(quote.valid_until)}${expired ? html` <span class="expired">expired</span>` : ''}`;
}

/** validity for a list's rows, each distinct day and state written once (a list's quotes share a few validities). */
function validities(now = new Date()): (quote: QuoteListRow) => Html {
  const today = utcDay(now);
  // By the quote's state (open or not), then its last valid day.
  const seen = [new Map<string | null, Html>(), new Map<string | null, Html>()];
  return (quote) => {
    const days = seen[open.includes(quote.status) ? 1 : 0];
    let text = days.get(quote.valid_until);
    if (!text) days.set(quote.valid_until, (text = validity(quote, today)));
    return text;
  };
}

const customerText = (quote: Readonly<Record<string, unknown>>) => String(quote.customer_name || quote.customer_email || '—');

/** The customer a list is narrowed to, by name; their id alone when they are not in this workspace. */
async function customerLabel(db: Db, access: Access, id: number): Promise<string> {
  try {
    const customer = await getCustomer(db, access, id);
    return String(customer.name || customer.email);
  } catch (err) {
    if (err instanceof NotFound) return `customer ${id}`;
    throw err;
  }
}

export function quotePages({ db, config, mailer }: AppDeps): PageDef[] {
  const mail = { mailer, appUrl: config.APP_URL };

  /** The list page: status tabs with counts under the other filters, the filters' form, 50 rows, the pager. */
  async function listView(input: PageInput<ListQuery>): Promise<Html> {
    const { auth, query, flash } = input;
    const access = auth.access;
    const { page: pageNo, before, after, ...filters } = query;
    const { page: found, counts, channels } = await quoteListPage(db, access, filters, pageNo, { before, after });
    // The customer the list is narrowed to names itself on its quotes; asked for only when it has none here.
    const first = found.rows[0];
    const customer = !filters.customer_id ? null : first ? customerText(first) : await customerLabel(db, access, filters.customer_id);
    const all = quoteStatuses.reduce((sum, status) => sum + counts[status], 0);
    const tab = (status: QuoteStatus | undefined, label: string, count: number) =>
      html`<li><a href="${withQuery('/app/quotes', query, { status, page: undefined, before: undefined, after: undefined })}"${status === filters.status ? html` aria-current="page"` : ''}>${label}<span class="count">${count}</span></a></li>`;
    const filtered = Boolean(filters.status || filters.channel_id || filters.customer_id || filters.q);
    const validUntil = validities();
    const rows = found.rows.map(
      (quote) => html`<tr>
  <td data-label="Number" class="nowrap"><a href="/app/quotes/${quote.id}">${quote.quote_number}</a></td>
  <td data-label="Customer">${customerText(quote)}${quote.customer_name && quote.customer_email ? html`<span class="sku">${String(quote.customer_email)}</span>` : ''}</td>
  <td data-label="Status">${badge(quote.status)}</td>
  <td data-label="Total" class="num">${amountText(String(quote.currency), quote.total)}</td>
  <td data-label="Valid until">${validUntil(quote)}</td>
  <td data-label="Last change">${timeText(quote.updated_at)}</td>
</tr>`,
    );
    const table = found.rows.length
      ? html`<div class="table-wrap"><table class="list">
<thead><tr><th scope="col">Number</th><th scope="col">Customer</th><th scope="col">Status</th><th scope="col" class="num">Total</th><th scope="col">Valid until</th><th scope="col">Last change</th></tr></thead>
<tbody>${rows}</tbody>
</table></div>`
      : html`<p class="empty">${filtered ? 'No quotes match these filters.' : found.total > 0 ? 'There are no quotes on this page.' : html`No quotes yet. <a href="/app/quotes/new">Write the first one</a>.`}</p>`;
    return shell(auth, {
      title: 'Quotes',
      section: 'quotes',
      flash,
      content: html`<div class="page-head"><h1>Quotes</h1><a class="button primary" href="/app/quotes/new">New quote</a></div>
<nav aria-label="Quote status"><ul class="tabs">
  ${tab(undefined, 'All', all)}
  ${quoteStatuses.map((status) => tab(status, statusLabel(status), counts[status]))}
</ul></nav>
<form method="get" action="/app/quotes" class="filters" role="search">
  ${filters.status ? html`<input type="hidden" name="status" value="${filters.status}">` : ''}
  ${filters.customer_id ? html`<input type="hidden" name="customer_id" value="${filters.customer_id}">` : ''}
  <div class="field"><label for="f-q">Number, customer or email</label><input id="f-q" name="q" type="search" value="${filters.q ?? ''}"></div>
  <div class="field"><label for="f-channel">Channel</label><select id="f-channel" name="channel_id">
    <option value="">All channels</option>
    ${channels.map((c) => html`<option value="${c.id}"${c.id === filters.channel_id ? html` selected` : ''}>${c.name}</option>`)}
  </select></div>
  <button type="submit">Filter</button>
  ${filtered ? html`<a class="button" href="/app/quotes">Clear</a>` : ''}
</form>
${customer ? html`<p class="muted">Quotes of <strong>${customer}</strong> · <a href="${withQuery('/app/quotes', query, { customer_id: undefined, page: undefined, before: undefined, after: undefined })}">all customers</a></p>` : ''}
${table}
${pager('/app/quotes', query, found, 'quotes', cursorOf(found.rows))}`,
    });
  }

  /** A quote's page; `notice`: what an action left to say at the top (a 409's or 422's message). */
  async function quoteView(input: PageInput<unknown>, notice: Flash | null = input.flash): Promise<Html> {
    const { auth } = input;
    const access = auth.access;
    const id = input.params.id;
    const { quote, lines, activities } = await visible(getQuote(db, access, id));
    const [channel, order, browsing, canWrite] = await Promise.all([
      quote.channel_id === null ? Promise.resolve(null) : getChannel(db, access, quote.channel_id).then((c) => c.channel),
      orderOfQuote(db, access, id),
      quoteBrowsing(db, access, id),
      assertChannelAccess(db, access, quote.channel_id, 'write').then(
        () => true,
        (err: unknown) => {
          if (err instanceof Forbidden) return false;
          throw err;
        },
      ),
    ]);
    const currency = String(quote.currency);
    const money = (amount: unknown) => amountText(currency, amount);
    const number = quote.quote_number;
    const status = quote.status;
    const expired = expiredOn(quote);
    const button = (path: string, label: string, cls: string, confirm?: string, fields: Html = html``) =>
      html`<form method="post" action="/app/quotes/${quote.id}/${path}"${confirm ? html` data-confirm="${confirm}"` : ''}>${fields}<button type="submit" class="${cls}">${label}</button></form>`;
    const actions: Html[] = [];
    if (canWrite) {
      if (status === 'draft') {
        actions.push(html`<a class="button" href="/app/quotes/${quote.id}/edit">Edit</a>`);
        if (mailer) actions.push(button('send', 'Send by mail', 'primary', undefined, html`<input type="hidden" name="notify" value="true">`));
        actions.push(button('send', 'Mark as sent without mail', mailer ? '' : 'primary', undefined, html`<input type="hidden" name="notify" value="false">`));
      }
      if ((status === 'accepted' || status === 'paid') && !order) actions.push(button('convert', 'Convert to order', 'good'));
      if (status === 'draft' || status === 'sent' || status === 'accepted') actions.push(button('cancel', 'Cancel quote', 'danger', `Cancel quote ${number}?`));
      if (status === 'draft') actions.push(button('delete', 'Delete draft', 'danger', `Delete the draft ${number}? This cannot be undone.`));
      actions.push(button('duplicate', 'Copy quote', ''));
    }
    const url = status === 'draft' ? null : publicUrl(config.APP_URL, quote);
    const lineRows = lines.map(
      (line) => html`<tr>
  <td data-label="Item">${String(line.description ?? '')}${line.sku ? html`<span class="sku">${String(line.sku)}</span>` : ''}</td>
  <td data-label="Quantity" class="num">${String(line.quantity)}</td>
  <td data-label="Price" class="num">${money(line.price)}</td>
  <td data-label="Total" class="num">${money(line.line_total)}</td>
</tr>`,
    );
    const stamps: [string, unknown][] = [
      ['Created', quote.created_at], ['Sent', quote.sent_at], ['Viewed', quote.viewed_at], ['Accepted', quote.accepted_at],
      ['Declined', quote.declined_at], ['Cancelled', quote.cancelled_at], ['Paid', quote.paid_at],
    ];
    return shell(auth, {
      title: `Quote ${number}`,
      section: 'quotes',
      flash: notice,
      content: html`<div class="page-head"><h1>Quote ${number} ${badge(status)}</h1><div class="actions"><a class="button" href="/api/v1/quotes/${Number(quote.id)}/pdf">Download PDF</a><a class="button" href="/app/quotes">All quotes</a></div></div>
<div class="grid">
<section class="card" aria-labelledby="h-details">
  <h2 id="h-details">Details</h2>
  <dl class="meta">
    <div><dt>Status</dt><dd>${statusLabel(status)}</dd></div>
    <div><dt>Customer</dt><dd>${quote.customer_id ? html`<a href="/app/customers/${Number(quote.customer_id)}">${customerText(quote)}</a>` : customerText(quote)}${quote.customer_name && quote.customer_email ? html`<span class="sku">${String(quote.customer_email)}</span>` : ''}</dd></div>
    <div><dt>Channel</dt><dd>${channel ? channel.name : html`<span class="muted">None</span>`}</dd></div>
    <div><dt>Currency</dt><dd>${currency}</dd></div>
    <div><dt>Valid until</dt><dd>${validity(quote)}</dd></div>
    <div><dt>Total</dt><dd>${money(quote.total)}</dd></div>
    ${stamps.filter(([, at]) => at).map(([label, at]) => html`<div><dt>${label}</dt><dd>${timeText(at)}</dd></div>`)}
    ${answerRecord(quote)}
  </dl>
</section>
<section class="card" aria-labelledby="h-actions">
  <h2 id="h-actions">Actions</h2>
  ${url
    ? html`<div class="field"><label for="public-link">Public link</label><div class="copy-row"><input id="public-link" type="text" readonly value="${url}"><button type="button" class="small" data-copy="#public-link">Copy</button></div><p class="hint">The page the customer opens to accept, decline or pay.</p></div>`
    : html`<p class="muted">The public link opens once the quote is sent.</p>`}
  ${order ? html`<p>Converted to order <a href="/app/orders/${order.id}">${String(order.order_number ?? order.id)}</a>.</p>` : ''}
  ${status === 'draft' && expired ? html`<p class="expired">Its validity ended on ${dateText(expired)}: edit the quote (set a later date or none) before sending it.</p>` : ''}
  ${status === 'draft' && !mailer && canWrite ? html`<p class="hint">Mail is not set up on this server: mark the quote as sent, then give the customer its public link.</p>` : ''}
  ${canWrite ? '' : html`<p class="muted">Your role on this quote's channel lets you read it, not change it.</p>`}
  ${actions.length ? html`<div class="actions">${actions}</div>` : canWrite ? html`<p class="muted">No action applies to a ${status} quote.</p>` : ''}
</section>
</div>
<section class="card" aria-labelledby="h-lines">
  <h2 id="h-lines">Lines</h2>
  ${lines.length
    ? html`<div class="table-wrap"><table class="list">
<thead><tr><th scope="col">Item</th><th scope="col" class="num">Quantity</th><th scope="col" class="num">Price</th><th scope="col" class="num">Total</th></tr></thead>
<tbody>${lineRows}</tbody>
</table></div>`
    : html`<p class="empty">No lines.</p>`}
  <table class="totals">
    <tr><th scope="row">Subtotal</th><td>${money(quote.subtotal)}</td></tr>
    ${Number(quote.discount_amount) ? html`<tr><th scope="row">Discount</th><td>−${money(quote.discount_amount)}</td></tr>` : ''}
    ${Number(quote.tax_rate) ? html`<tr><th scope="row">Tax (${String(quote.tax_rate)}%)</th><td>${money(quote.tax_amount)}</td></tr>` : ''}
    <tr class="grand"><th scope="row">Total</th><td>${money(quote.total)}</td></tr>
  </table>
</section>
<section class="card" aria-labelledby="h-notes">
  <h2 id="h-notes">Notes</h2>
  ${quote.notes ? html`<p class="notes">${String(quote.notes)}</p>` : html`<p class="muted">No notes.</p>`}
</section>
<div class="grid">
<section class="card" aria-labelledby="h-activity">
  <h2 id="h-activity">Activity</h2>
  ${activities.length
    ? html`<ul class="plain">${[...activities].reverse().map(
        (a) => html`<li><time datetime="${String(a.created_at)}">${timeText(a.created_at)}</time> <strong>${statusLabel(String(a.type).replace(/_/g, ' '))}</strong> <span class="muted">by ${String(a.actor)}</span><br>${String(a.message)}</li>`,
      )}</ul>`
    : html`<p class="muted">No activity yet.</p>`}
</section>
<section class="card" aria-labelledby="h-browsing">
  <h2 id="h-browsing">The customer's recent browsing</h2>
  ${browsingList(browsing)}
</section>
</div>`,
    });
  }

  /** An action on the quote: it must be readable (else the 404 page, as on its page); its answer then says what happened. */
  const action = (name: string, run: (input: PageInput<unknown>, quote: QuoteJson) => Promise<Redirect>): PageDef =>
    page({
      method: 'post', path: `/app/quotes/{id}/${name}`, who: 'member',
      handle: async (input) => run(input, await visible(readableQuote(db, input.auth.access, input.params.id))),
      conflict: (input, err: HttpError) => quoteView(input, { kind: 'error', text: err.message }),
      invalid: (input, err) => quoteView(input, { kind: 'error', text: err.message }),
    });

  const back = (id: number) => `/app/quotes/${id}`;

  return [
    page({ method: 'get', path: '/app/quotes', who: 'member', query: listQuery, handle: listView }),
    page({ method: 'get', path: '/app/quotes/{id}', who: 'member', handle: (input) => quoteView(input) }),
    action('send', async ({ auth, params, form }, quote) => {
      const body = parseInput(sendQuoteBody, { notify: formText(form, 'notify') || undefined });
      await db.transaction((trx) => sendQuote(trx, auth.access, params.id, body, mail));
      const text = body.notify === false ? `Quote ${quote.quote_number} marked as sent: give the customer its public link.` : `Quote ${quote.quote_number} sent to ${String(quote.customer_email)}.`;
      return redirect(back(params.id), text);
    }),
    action('cancel', async ({ auth, params }, quote) => {
      await db.transaction((trx) => transitionQuote(trx, auth.access, params.id, 'cancelled'));
      return redirect(back(params.id), `Quote ${quote.quote_number} cancelled.`);
    }),
    action('convert', async ({ auth, params }, quote) => {
      const { order, created } = await db.transaction((trx) => convertQuote(trx, auth.access, params.id));
      const name = String(order.order_number ?? order.id);
      return redirect(`/app/orders/${order.id}`, created ? `Quote ${quote.quote_number} converted to order ${name}.` : `Quote ${quote.quote_number} was converted before: this is its order ${name}.`);
    }),
    action('duplicate', async ({ auth, params }, quote) => {
      const copy = JSON.parse((await db.transaction((trx) => duplicateQuote(trx, auth.access, params.id))).quote) as QuoteJson;
      return redirect(back(copy.id), `Quote ${copy.quote_number} is a new draft copied from ${quote.quote_number}: edit it, then send it.`);
    }),
    action('delete', async ({ auth, params }, quote) => {
      await db.transaction((trx) => deleteQuote(trx, auth.access, params.id));
      return redirect('/app/quotes', `Quote ${quote.quote_number} deleted.`);
    }),
  ];
}

/** Who accepted or declined the quote, from where, and the hash of what was accepted (the evidence the quote keeps). */
function answerRecord(quote: QuoteJson): Html {
  const accepted = quote.acceptance as { name: string | null; ip: string | null; content_sha256: string } | null;
  const declined = quote.decline as { name: string | null; ip: string | null; reason: string | null } | null;
  const from = (ip: string | null) => html`<span class="sku">from ${ip ?? 'an unknown address'}</span>`;
  return html`${accepted ? html`<div><dt>Accepted by</dt><dd>${accepted.name ?? html`<span class="muted">No name given</span>`}${from(accepted.ip)}<span class="sku">SHA-256 ${accepted.content_sha256}</span></dd></div>` : ''}
    ${declined ? html`<div><dt>Declined by</dt><dd>${declined.name ?? html`<span class="muted">No name given</span>`}${from(declined.ip)}${declined.reason ? html`<span class="sku">${declined.reason}</span>` : ''}</dd></div>` : ''}`;
}

/** The latest tracking events of the quote's customer: when, what, and which page or product. */
function browsingList(events: EventJson[]): Html {
  if (!events.length) return html`<p class="muted">No browsing recorded.</p>`;
  const rows = events.map((e) => {
    const where = e.title || e.url;
    return html`<tr>
  <td data-label="When">${timeText(e.occurred_at)}</td>
  <td data-label="Event">${String(e.type).replace(/_/g, ' ')}</td>
  <td data-label="Page or product">${where ? String(where) : ''}${e.sku ? html`<span class="sku">${String(e.sku)}</span>` : ''}${!where && !e.sku && e.category ? String(e.category) : ''}</td>
</tr>`;
  });
  return html`<div class="table-wrap"><table class="list">
<thead><tr><th scope="col">When</th><th scope="col">Event</th><th scope="col">Page or product</th></tr></thead>
<tbody>${rows}</tbody>
</table></div>`;
}
