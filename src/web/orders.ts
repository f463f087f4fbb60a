/** The orders pages: the list with the JSON list's filters, and an order with its items, source and quote. */
import type { z } from 'zod';
import type { AppDeps } from '../http/deps.js';
import type { Access } from '../access.js';
import type { Db } from '../db/database.js';
import type { Principal } from '../http/principal.js';
import { Forbidden, HttpError, type Validation } from '../errors.js';
import { parseInput } from '../schema/parse.js';
import { html, type Html } from '../templates.js';
import { amountText } from '../money.js';
import { dateText, timeText } from './dates.js';
import { listOrdersQuery, orderStatuses, updateOrderBody, type OrderFilters } from '../orders/schema.js';
import { getOrder, orderPage, updateOrder } from '../orders/service.js';
import type { itemOut, orderOut } from '../orders/schema.js';
import type { customerOut } from '../customers/schema.js';
import { customersById } from '../customers/service.js';
import { readableQuote } from '../quotes/service.js';
import { getChannel, readableChannelNames } from '../channels/service.js';
import { assertChannelAccess } from '../channels/access.js';
import type { NumberedPage } from '../db/numbered-pages.js';
import { page, redirect, type PageDef } from './page.js';
import { shell } from './layout.js';
import type { Flash } from './flash.js';
import { field, fieldErrors, formProblem, formText, select, textarea, type FieldErrors } from './forms.js';
import { badge, pageNumber, pager, visible, withQuery } from './lists.js';

const ordersQuery = listOrdersQuery.extend({ page: pageNumber });

/** The services' JSON rows as the API's response schemas type them. */
export type Order = z.output<typeof orderOut>;
type Item = z.output<typeof itemOut>;
export type Customer = z.output<typeof customerOut>;

/** The workspace's customers among these ids, typed. */
export const customersOf = (db: Db, access: Access, ids: Iterable<number>) => customersById(db, access, ids) as Promise<unknown> as Promise<Map<number, Customer>>;

/** Where an order came from, in a word or two for the list. */
export function sourceLabel(order: Order): string {
  const source = order.external_source;
  if (source === 'quote') return 'Quote';
  if (source === 'import') return 'Import';
  return `External (${source})`;
}

/** The order's number as people know it: the shop's or the quote's number, else its id. */
export const orderName = (order: Order): string => (order.order_number ? String(order.order_number) : `Order ${order.id}`);

/** A customer as a list shows them: name, else email; with the company when there is one. */
const customerName = (customer: Customer | undefined): string =>
  customer ? `${customer.name || customer.email}${customer.company ? ` (${customer.company})` : ''}` : '';

/** The channel filter: the channels the caller may read, as the quotes list offers them; nothing when there are none. */
async function channelFilter(db: Db, access: Access, current: number | undefined): Promise<Html> {
  const channels = await readableChannelNames(db, access);
  if (channels.length === 0 && current === undefined) return html``;
  return select({
    name: 'channel_id', label: 'Channel', value: current === undefined ? '' : String(current),
    options: [{ value: '', label: 'All channels' }, ...channels.map((c) => ({ value: String(c.id), label: c.name }))],
  });
}

/** What a page shows beside a record, or nothing when the caller may not read it (or it is gone): the record itself is shown either way. */
async function unlessRefused<T>(read: Promise<T>): Promise<T | undefined> {
  try {
    return await read;
  } catch (err) {
    if (err instanceof HttpError && (err.status === 403 || err.status === 404)) return undefined;
    throw err;
  }
}

export function orderPages({ db }: AppDeps): PageDef[] {
  const view = async (auth: Principal, id: number, flash: Flash | null, form?: Record<string, unknown>, errors: FieldErrors = {}): Promise<Html> => {
    const { order, items } = (await visible(getOrder(db, auth.access, id))) as unknown as { order: Order; items: Item[] };
    const access = auth.access;
    const [customer, quote, channel, canWrite] = await Promise.all([
      order.customer_id ? customersOf(db, access, [order.customer_id]).then((m) => m.get(order.customer_id!)) : undefined,
      order.quote_id ? unlessRefused(readableQuote(db, access, order.quote_id)) : undefined,
      order.channel_id ? unlessRefused(getChannel(db, access, order.channel_id).then((c) => c.channel)) : undefined,
      // The status form is offered when the channel's role would let it save (the service's own check).
      assertChannelAccess(db, access, order.channel_id, 'write').then(
        () => true,
        (err: unknown) => {
          if (err instanceof Forbidden) return false;
          throw err;
        },
      ),
    ]);
    const currency = order.currency;
    const status = form ? formText(form, 'status') : order.status;
    const notes = form ? formText(form, 'notes') : (order.notes ?? '');
    const source = order.external_source;
    const sourceText =
      source === 'quote'
        ? html`Converted from ${order.quote_id ? html`<a href="/app/quotes/${order.quote_id}">quote ${quote?.quote_number ?? order.quote_id}</a>` : 'a quote that has since been deleted'}`
        : source === 'import'
          ? html`Imported from a CSV file (external id <code>${order.external_id}</code>)`
          : html`External order from <strong>${source}</strong> (external id <code>${order.external_id}</code>)`;
    return shell(auth, {
      title: orderName(order),
      section: 'orders',
      flash,
      content: html`<div class="page-head"><h1>${orderName(order)} ${badge(order.status)}</h1><a class="button" href="/app/orders">All orders</a></div>
${formProblem(errors, ['status', 'notes'])}
<section class="card">
  <dl class="meta">
    <div><dt>Total</dt><dd>${amountText(currency, order.total)}</dd></div>
    <div><dt>Customer</dt><dd>${customer ? html`<a href="/app/customers/${customer.id}">${customerName(customer)}</a>` : html`<span class="muted">None</span>`}</dd></div>
    <div><dt>Source</dt><dd>${sourceText}</dd></div>
    ${source !== 'quote' && order.quote_id ? html`<div><dt>Quote</dt><dd><a href="/app/quotes/${order.quote_id}">${quote?.quote_number ?? `Quote ${order.quote_id}`}</a></dd></div>` : ''}
    <div><dt>Channel</dt><dd>${channel ? channel.name : html`<span class="muted">None</span>`}</dd></div>
    <div><dt>Placed</dt><dd>${order.placed_at ? timeText(order.placed_at) : html`<span class="muted">Not given</span>`}</dd></div>
    <div><dt>Created</dt><dd>${timeText(order.created_at)}</dd></div>
    <div><dt>Last change</dt><dd>${timeText(order.updated_at)}</dd></div>
  </dl>
</section>
<section class="card">
  <h2>Items</h2>
  ${items.length ? itemsTable(currency, items) : html`<p class="empty">This order has no items.</p>`}
  <table class="totals">
    <tr><th scope="row">Subtotal</th><td>${amountText(currency, order.subtotal)}</td></tr>
    ${Number(order.discount_amount) ? html`<tr><th scope="row">Discount</th><td>−${amountText(currency, order.discount_amount)}</td></tr>` : ''}
    ${Number(order.tax_amount) ? html`<tr><th scope="row">Tax</th><td>${amountText(currency, order.tax_amount)}</td></tr>` : ''}
    <tr class="grand"><th scope="row">Total</th><td>${amountText(currency, order.total)}</td></tr>
  </table>
</section>
${canWrite
  ? html`<section class="card">
  <h2>Status and notes</h2>
  <form method="post" action="/app/orders/${order.id}" class="stack" novalidate>
    ${select({ name: 'status', label: 'Status', value: status, errors, required: true, options: orderStatuses.map((s) => ({ value: s, label: s.charAt(0).toUpperCase() + s.slice(1) })) })}
    ${textarea({ name: 'notes', label: 'Notes', value: notes, errors })}
    <div><button type="submit" class="primary">Save</button></div>
  </form>
</section>`
  : html`<section class="card">
  <h2>Notes</h2>
  ${order.notes ? html`<p class="notes">${order.notes}</p>` : html`<p class="muted">No notes.</p>`}
  <p class="muted">Your role on this order's channel lets you read it, not change it.</p>
</section>`}`,
    });
  };

  return [
    page({
      method: 'get', path: '/app/orders', who: 'member', query: ordersQuery,
      handle: async ({ auth, query, flash }) => {
        const { page: number, ...filters } = query;
        const found = (await orderPage(db, auth.access, filters, number)) as unknown as NumberedPage<Order>;
        const customers = await customersOf(db, auth.access, found.rows.flatMap((o) => (o.customer_id ? [o.customer_id] : [])));
        const filtered = Object.values(filters).some((v) => v !== undefined);
        const filterCustomer = filters.customer_id ? (await customersOf(db, auth.access, [filters.customer_id])).get(filters.customer_id) : undefined;
        return shell(auth, {
          title: 'Orders',
          section: 'orders',
          flash,
          content: html`<div class="page-head"><h1>Orders</h1></div>
${await filterForm(db, auth.access, filters, filterCustomer)}
${found.rows.length ? ordersTable(found.rows, customers) : html`<p class="empty">${filtered ? 'No orders match these filters.' : found.page > 1 ? 'There are no orders on this page.' : 'No orders yet.'}</p>`}
${pager('/app/orders', filters, found, 'orders')}`,
        });
      },
    }),
    page({
      method: 'get', path: '/app/orders/{id}', who: 'member',
      handle: async ({ auth, params, flash }) => view(auth, params.id, flash),
    }),
    page({
      method: 'post', path: '/app/orders/{id}', who: 'member',
      handle: async ({ auth, params, form }) => {
        // A hidden order is the 404 page; a viewer's refused change stays the 403 page.
        await visible(getOrder(db, auth.access, params.id));
        const body = parseInput(updateOrderBody, { status: formText(form, 'status'), notes: formText(form, 'notes') });
        await db.transaction((trx) => updateOrder(trx, auth.access, params.id, body));
        return redirect(`/app/orders/${params.id}`, 'Order saved.');
      },
      invalid: async ({ auth, params, form }, error: Validation) => view(auth, params.id, null, form, fieldErrors(error)),
    }),
  ];
}

async function filterForm(db: Db, access: Access, filters: Partial<OrderFilters>, customer: Customer | undefined): Promise<Html> {
  return html`<form method="get" action="/app/orders" class="filters" role="search" aria-label="Filter orders">
  ${field({ name: 'q', label: 'Search', type: 'search', value: filters.q ?? '', hint: 'Order number, external id, customer name or email' })}
  ${select({ name: 'status', label: 'Status', value: filters.status ?? '', options: [{ value: '', label: 'Any status' }, ...orderStatuses.map((s) => ({ value: s, label: s.charAt(0).toUpperCase() + s.slice(1) }))] })}
  ${await channelFilter(db, access, filters.channel_id)}
  ${filters.customer_id ? html`<input type="hidden" name="customer_id" value="${filters.customer_id}">` : ''}
  <button type="submit">Filter</button>
  ${Object.values(filters).some((v) => v !== undefined) ? html`<a href="/app/orders">Clear filters</a>` : ''}
</form>
${filters.customer_id ? html`<p>Orders of <a href="/app/customers/${filters.customer_id}">${customer ? customerName(customer) : `customer ${filters.customer_id}`}</a> · <a href="${withQuery('/app/orders', filters, { customer_id: undefined })}">all customers</a></p>` : ''}`;
}

/** Orders as the list shows them; a customer's page shows them without the customer column (`customers` null). */
export function ordersTable(orders: Order[], customers: Map<number, Customer> | null): Html {
  return html`<div class="table-wrap"><table class="list">
  <thead><tr><th scope="col">Order</th>${customers ? html`<th scope="col">Customer</th>` : ''}<th scope="col">Status</th><th scope="col" class="num">Total</th><th scope="col">Source</th><th scope="col">Placed</th></tr></thead>
  <tbody>
  ${orders.map((o) => {
    const customer = o.customer_id ? customers?.get(o.customer_id) : undefined;
    return html`<tr>
    <td data-label="Order"><a href="/app/orders/${o.id}">${orderName(o)}</a></td>
    ${customers ? html`<td data-label="Customer">${customer ? html`<a href="/app/customers/${customer.id}">${customerName(customer)}</a>` : html`<span class="muted">None</span>`}</td>` : ''}
    <td data-label="Status">${badge(o.status)}</td>
    <td data-label="Total" class="num">${amountText(o.currency, o.total)}</td>
    <td data-label="Source">${sourceLabel(o)}</td>
    <td data-label="Placed">${dateText(o.placed_at ?? o.created_at)}</td>
  </tr>`;
  })}
  </tbody>
</table></div>`;
}

function itemsTable(currency: string, items: Item[]): Html {
  return html`<div class="table-wrap"><table class="list">
  <thead><tr><th scope="col">Item</th><th scope="col" class="num">Quantity</th><th scope="col" class="num">Price</th><th scope="col" class="num">Line total</th></tr></thead>
  <tbody>
  ${items.map(
    (i) => html`<tr>
    <td data-label="Item">${i.description || i.sku || html`<span class="muted">No description</span>`}${i.sku && i.description ? html`<span class="sku">${i.sku}</span>` : ''}</td>
    <td data-label="Quantity" class="num">${String(i.quantity)}</td>
    <td data-label="Price" class="num">${amountText(currency, i.price)}</td>
    <td data-label="Line total" class="num">${amountText(currency, i.line_total)}</td>
  </tr>`,
  )}
  </tbody>
</table></div>`;
}
