/** The customers pages: list and search, create and edit, a customer with their quotes, orders and events, and delete. */
import type { z } from 'zod';
import type { AppDeps } from '../http/deps.js';
import type { Principal } from '../http/principal.js';
import { HttpError, type Validation } from '../errors.js';
import { parseInput } from '../schema/parse.js';
import { html, type Html } from '../templates.js';
import { amountText } from '../money.js';
import { dateText, timeText } from './dates.js';
import { createCustomerBody, deleteCustomerQuery, listCustomersQuery, updateCustomerBody } from '../customers/schema.js';
import { customerPage, deleteCustomer, getCustomer, updateCustomer, upsertCustomer, type Dependents } from '../customers/service.js';
import { orderPage } from '../orders/service.js';
import type { quoteOut } from '../quotes/schema.js';
import { quotePage } from '../quotes/service.js';
import { customerEvents } from '../tracking/service.js';
import { customerEventsQuery, type eventOut } from '../tracking/schema.js';
import type { NumberedPage } from '../db/numbered-pages.js';
import type { Access } from '../access.js';
import { page, redirect, type PageDef } from './page.js';
import { shell } from './layout.js';
import type { Flash } from './flash.js';
import { field, fieldErrors, formProblem, formText, given, textarea, type FieldErrors } from './forms.js';
import { badge, pageNumber, pager } from './lists.js';
import { ordersTable, type Customer, type Order } from './orders.js';

type Quote = z.output<typeof quoteOut>;
type TrackEvent = z.output<typeof eventOut>;

const customersQuery = listCustomersQuery.extend({ page: pageNumber });

/** The form's fields, as the API's customer bodies name them. */
const customerFields = ['email', 'name', 'company', 'phone', 'country', 'notes'] as const;

/** A customer as a heading or link shows them: name, else email. */
const customerTitle = (customer: Customer): string => String(customer.name || customer.email);

type Values = Record<string, string>;

const valuesOf = (customer: Customer): Values =>
  Object.fromEntries(customerFields.map((name) => [name, customer[name] === null || customer[name] === undefined ? '' : String(customer[name])]));

const sentValues = (form: Record<string, unknown>): Values => Object.fromEntries(customerFields.map((name) => [name, formText(form, name)]));

function customerForm(action: string, cancel: string, values: Values, errors: FieldErrors, submit: string): Html {
  return html`${formProblem(errors, customerFields)}
<form method="post" action="${action}" class="stack" novalidate>
  <div class="form-grid">
    ${field({ name: 'email', label: 'Email', type: 'email', value: values.email, errors, required: true, autocomplete: 'off' })}
    ${field({ name: 'name', label: 'Name', value: values.name, errors, autocomplete: 'off' })}
    ${field({ name: 'company', label: 'Company', value: values.company, errors, autocomplete: 'off' })}
    ${field({ name: 'phone', label: 'Phone', type: 'tel', value: values.phone, errors, autocomplete: 'off' })}
    ${field({ name: 'country', label: 'Country', value: values.country, errors, hint: 'Two-letter code, such as DE or US.', attrs: html` maxlength="2" autocomplete="off"` })}
  </div>
  ${textarea({ name: 'notes', label: 'Notes', value: values.notes, errors })}
  <div class="actions"><button type="submit" class="primary">${submit}</button><a class="button" href="${cancel}">Cancel</a></div>
</form>`;
}

export function customerPages({ db }: AppDeps): PageDef[] {
  /** The services' JSON rows as the API's response schemas type them. */
  const customerOf = (access: Access, id: number) => getCustomer(db, access, id) as Promise<unknown> as Promise<Customer>;

  const newPage = (auth: Principal, values: Values, errors: FieldErrors) =>
    shell(auth, {
      title: 'New customer',
      section: 'customers',
      content: html`<div class="page-head"><h1>New customer</h1></div>
<section class="card">
  <p class="muted">If a customer with this email exists, it is updated with what you enter here.</p>
  ${customerForm('/app/customers/new', '/app/customers', values, errors, 'Create customer')}
</section>`,
    });

  const editPage = (auth: Principal, customer: Customer, values: Values, errors: FieldErrors) =>
    shell(auth, {
      title: `Edit ${customerTitle(customer)}`,
      section: 'customers',
      content: html`<div class="page-head"><h1>Edit ${customerTitle(customer)}</h1></div>
<section class="card">${customerForm(`/app/customers/${customer.id}/edit`, `/app/customers/${customer.id}`, values, errors, 'Save')}</section>`,
    });

  const detail = async (auth: Principal, id: number, limit: number, flash: Flash | null): Promise<Html> => {
    const access = auth.access;
    const customer = await customerOf(access, id);
    const [quotes, orders, events] = await Promise.all([
      quotePage(db, access, { customer_id: id }, 1) as Promise<unknown> as Promise<NumberedPage<Quote>>,
      orderPage(db, access, { customer_id: id }, 1) as Promise<unknown> as Promise<NumberedPage<Order>>,
      customerEvents(db, access, id, limit) as Promise<unknown> as Promise<TrackEvent[]>,
    ]);
    return shell(auth, {
      title: customerTitle(customer),
      section: 'customers',
      flash,
      content: html`<div class="page-head"><h1>${customerTitle(customer)}</h1>
  <p class="actions"><a class="button" href="/app/customers/${customer.id}/edit">Edit</a><a class="button primary" href="/app/quotes/new?customer_id=${customer.id}">New quote</a></p>
</div>
<section class="card">
  <dl class="meta">
    <div><dt>Email</dt><dd><a href="mailto:${customer.email}">${customer.email}</a></dd></div>
    <div><dt>Name</dt><dd>${customer.name || html`<span class="muted">Not given</span>`}</dd></div>
    <div><dt>Company</dt><dd>${customer.company || html`<span class="muted">Not given</span>`}</dd></div>
    <div><dt>Phone</dt><dd>${customer.phone || html`<span class="muted">Not given</span>`}</dd></div>
    <div><dt>Country</dt><dd>${customer.country || html`<span class="muted">Not given</span>`}</dd></div>
    <div><dt>Created</dt><dd>${dateText(customer.created_at)}</dd></div>
  </dl>
  ${customer.notes ? html`<h2>Notes</h2><p class="notes">${customer.notes}</p>` : ''}
</section>
<section class="card">
  <h2>Quotes <span class="count">${quotes.total}</span></h2>
  ${quotes.rows.length ? quotesTable(quotes.rows) : html`<p class="empty">No quotes.</p>`}
  ${quotes.total > quotes.rows.length ? html`<p><a href="/app/quotes?customer_id=${customer.id}">All ${quotes.total} quotes of this customer</a></p>` : ''}
</section>
<section class="card">
  <h2>Orders <span class="count">${orders.total}</span></h2>
  ${orders.rows.length ? ordersTable(orders.rows, null) : html`<p class="empty">No orders.</p>`}
  ${orders.total > orders.rows.length ? html`<p><a href="/app/orders?customer_id=${customer.id}">All ${orders.total} orders of this customer</a></p>` : ''}
</section>
<section class="card">
  <h2>Browsing</h2>
  ${events.length ? eventsTable(events) : html`<p class="empty">No tracked events for this customer.</p>`}
  ${events.length ? html`<form method="get" action="/app/customers/${customer.id}" class="filters" aria-label="Events shown">
    ${field({ name: 'limit', label: 'Events shown', type: 'number', value: limit, attrs: html` min="1" max="200"`, required: true, hint: 'The newest, up to 200.' })}
    <button type="submit">Show</button>
  </form>` : ''}
</section>
<section class="card">
  <h2>Delete</h2>
  <p>Deleting a customer cannot be undone. If they have quotes, orders or tracked visitors, you are asked to confirm deleting those too.</p>
  <form method="post" action="/app/customers/${customer.id}/delete" data-confirm="Delete ${customerTitle(customer)}?"><button type="submit" class="danger">Delete customer</button></form>
</section>`,
    });
  };

  const confirmDelete = async (auth: Principal, id: number, error: HttpError): Promise<Html> => {
    const customer = await customerOf(auth.access, id);
    const dependents = (error.data?.dependents ?? {}) as Partial<Dependents>;
    const counted = (n: number | undefined, one: string, many: string) => (n ? html`<li>${n} ${n === 1 ? one : many}</li>` : '');
    return shell(auth, {
      title: `Delete ${customerTitle(customer)}`,
      section: 'customers',
      content: html`<h1>Delete ${customerTitle(customer)}?</h1>
<section class="card">
  <p>This customer has records that would be deleted with them:</p>
  <ul>
    ${counted(dependents.quotes, 'quote', 'quotes')}
    ${counted(dependents.orders, 'order', 'orders')}
    ${counted(dependents.visitors, 'tracked visitor, with their browsing events', 'tracked visitors, with their browsing events')}
    ${counted(dependents.hidden, 'quote or order on a channel you have no role on', 'quotes or orders on channels you have no role on')}
  </ul>
  <div class="actions">
    <form method="post" action="/app/customers/${customer.id}/delete">
      <input type="hidden" name="cascade" value="true">
      <button type="submit" class="danger">Delete with all of these</button>
    </form>
    <a class="button" href="/app/customers/${customer.id}">Keep the customer</a>
  </div>
</section>`,
    });
  };

  return [
    page({
      method: 'get', path: '/app/customers', who: 'member', query: customersQuery,
      handle: async ({ auth, query, flash }) => {
        const { page: number, ...filters } = query;
        const found = (await customerPage(db, auth.access, filters, number)) as unknown as NumberedPage<Customer>;
        return shell(auth, {
          title: 'Customers',
          section: 'customers',
          flash,
          content: html`<div class="page-head"><h1>Customers</h1><a class="button primary" href="/app/customers/new">New customer</a></div>
<form method="get" action="/app/customers" class="filters" role="search" aria-label="Search customers">
  ${field({ name: 'q', label: 'Search', type: 'search', value: filters.q ?? '', hint: 'Name, email or company' })}
  <button type="submit">Search</button>
  ${filters.q ? html`<a href="/app/customers">Clear</a>` : ''}
</form>
${found.rows.length ? customersTable(found.rows) : html`<p class="empty">${filters.q ? 'No customers match this search.' : found.page > 1 ? 'There are no customers on this page.' : 'No customers yet.'}</p>`}
${pager('/app/customers', filters, found, 'customers')}`,
        });
      },
    }),
    page({
      method: 'get', path: '/app/customers/new', who: 'member',
      handle: async ({ auth }) => newPage(auth, sentValues({}), {}),
    }),
    page({
      method: 'post', path: '/app/customers/new', who: 'member',
      handle: async ({ auth, form }) => {
        // As POST /customers: an upsert by email, where an empty field is one not given (the stored value stays).
        const body = parseInput(createCustomerBody, given(form, customerFields));
        const { customer, created } = await db.transaction((trx) => upsertCustomer(trx, auth.access, body));
        return redirect(`/app/customers/${customer.id}`, created ? 'Customer created.' : `A customer with the email ${customer.email} existed: it is updated.`);
      },
      invalid: async ({ auth, form }, error: Validation) => newPage(auth, sentValues(form), fieldErrors(error)),
    }),
    page({
      method: 'get', path: '/app/customers/{id}', who: 'member', query: customerEventsQuery,
      handle: async ({ auth, params, query, flash }) => detail(auth, params.id, query.limit, flash),
    }),
    page({
      method: 'get', path: '/app/customers/{id}/edit', who: 'member',
      handle: async ({ auth, params }) => {
        const customer = await customerOf(auth.access, params.id);
        return editPage(auth, customer, valuesOf(customer), {});
      },
    }),
    page({
      method: 'post', path: '/app/customers/{id}/edit', who: 'member',
      handle: async ({ auth, params, form }) => {
        // Every field is sent: an emptied one clears the stored value (PATCH with null), email stays required.
        const body = parseInput(updateCustomerBody, sentValues(form));
        await db.transaction((trx) => updateCustomer(trx, auth.access, params.id, body));
        return redirect(`/app/customers/${params.id}`, 'Customer saved.');
      },
      invalid: async ({ auth, params, form }, error: Validation) => editPage(auth, await customerOf(auth.access, params.id), sentValues(form), fieldErrors(error)),
      conflict: async ({ auth, params, form }, error: HttpError) => editPage(auth, await customerOf(auth.access, params.id), sentValues(form), { email: error.message }),
    }),
    page({
      method: 'post', path: '/app/customers/{id}/delete', who: 'member',
      handle: async ({ auth, params, form }) => {
        const { cascade } = parseInput(deleteCustomerQuery, { cascade: formText(form, 'cascade') || undefined });
        const customer = (await db.transaction((trx) => deleteCustomer(trx, auth.access, params.id, cascade ?? false))) as unknown as Customer;
        return redirect('/app/customers', `${customerTitle(customer)} is deleted.`);
      },
      conflict: async ({ auth, params }, error: HttpError) => confirmDelete(auth, params.id, error),
    }),
  ];
}

function customersTable(customers: Customer[]): Html {
  return html`<div class="table-wrap"><table class="list">
  <thead><tr><th scope="col">Name</th><th scope="col">Email</th><th scope="col">Company</th><th scope="col">Country</th><th scope="col">Created</th></tr></thead>
  <tbody>
  ${customers.map(
    (c) => html`<tr>
    <td data-label="Name"><a href="/app/customers/${c.id}">${customerTitle(c)}</a></td>
    <td data-label="Email">${c.email}</td>
    <td data-label="Company">${c.company || ''}</td>
    <td data-label="Country">${c.country || ''}</td>
    <td data-label="Created">${dateText(c.created_at)}</td>
  </tr>`,
  )}
  </tbody>
</table></div>`;
}

function quotesTable(quotes: Quote[]): Html {
  return html`<div class="table-wrap"><table class="list">
  <thead><tr><th scope="col">Quote</th><th scope="col">Status</th><th scope="col" class="num">Total</th><th scope="col">Valid until</th><th scope="col">Last change</th></tr></thead>
  <tbody>
  ${quotes.map(
    (q) => html`<tr>
    <td data-label="Quote" class="nowrap"><a href="/app/quotes/${q.id}">${q.quote_number}</a></td>
    <td data-label="Status">${badge(q.status)}</td>
    <td data-label="Total" class="num">${amountText(String(q.currency), q.total)}</td>
    <td data-label="Valid until">${q.valid_until ? dateText(q.valid_until) : html`<span class="muted">No limit</span>`}</td>
    <td data-label="Last change">${dateText(q.updated_at)}</td>
  </tr>`,
  )}
  </tbody>
</table></div>`;
}

function eventsTable(events: TrackEvent[]): Html {
  // A tracked URL is the browser's word: shown as text, never as a link the salesperson might follow.
  return html`<div class="table-wrap"><table class="list">
  <thead><tr><th scope="col">When</th><th scope="col">Event</th><th scope="col">Page or product</th></tr></thead>
  <tbody>
  ${events.map(
    (e) => html`<tr>
    <td data-label="When">${timeText(e.occurred_at)}</td>
    <td data-label="Event">${String(e.type).replace(/_/g, ' ')}</td>
    <td data-label="Page or product">${e.title || e.url || ''}${e.sku ? html`<span class="sku">SKU ${e.sku}</span>` : ''}${e.category ? html`<span class="sku">${e.category}</span>` : ''}${e.title && e.url ? html`<span class="sku">${e.url}</span>` : ''}</td>
  </tr>`,
  )}
  </tbody>
</table></div>`;
}
