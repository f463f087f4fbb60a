/**
 * Writing a quote: /app/quotes/new and /app/quotes/{id}/edit. One form holds the customer, the channel, the lines and
 * the quote's fields, and saves in one request. Its buttons that add, remove and move lines or find a customer send the
 * form back to be shown again with the change (nothing saved), so it all works without script; public/quote-form.js
 * does the same in the browser and shows live totals.
 */
import { z } from 'zod';
import { Conflict, HttpError, NotFound, Validation } from '../errors.js';
import type { AppDeps } from '../http/deps.js';
import type { Principal } from '../http/principal.js';
import { amountText } from '../money.js';
import { SKU_MAX } from '../schema/input.js';
import { inputIssues } from '../schema/parse.js';
import { html, type Html, type Markup } from '../templates.js';
import { channelsAllowed } from '../channels/service.js';
import { customerPage, getCustomer, type CustomerJson } from '../customers/service.js';
import { createQuoteBody, draftBody } from '../quotes/schema.js';
import { assertDraft, createQuote, getQuote, readableQuote, type QuoteJson } from '../quotes/service.js';
import { saveDraft } from '../quotes/draft.js';
import { catalogueLine } from '../quotes/pricing.js';
import { assetUrl } from './assets.js';
import { field, formList, formText, select, textarea, type FieldErrors } from './forms.js';
import { shell } from './layout.js';
import { badge, visible } from './lists.js';
import { page, redirect, Rendered, type PageDef, type PageInput } from './page.js';

/** One line row of the form, as typed. */
export interface LineRow {
  id: string;
  sku: string;
  description: string;
  quantity: string;
  price: string;
}

/** The form as typed: what every re-render shows again. */
export interface QuoteForm {
  customer_q: string;
  /** A customer's id, `new` for the typed one, or '' (none picked). */
  customer_id: string;
  customer_email: string;
  customer_name: string;
  customer_company: string;
  channel_id: string;
  currency: string;
  discount_amount: string;
  tax_rate: string;
  notes: string;
  valid_until: string;
  lines: LineRow[];
}

const lineNames = ['id', 'sku', 'description', 'quantity', 'price'] as const;

/** The form's fields from a POST (repeated `line_*` names give the rows, in order). */
export function readForm(form: Record<string, unknown>): QuoteForm {
  const columns = Object.fromEntries(lineNames.map((name) => [name, formList(form, `line_${name}`)])) as Record<(typeof lineNames)[number], string[]>;
  const count = Math.min(500, Math.max(0, ...lineNames.map((name) => columns[name].length)));
  const lines: LineRow[] = [];
  for (let i = 0; i < count; i += 1) {
    lines.push({ id: columns.id[i] ?? '', sku: columns.sku[i] ?? '', description: columns.description[i] ?? '', quantity: columns.quantity[i] ?? '', price: columns.price[i] ?? '' });
  }
  const text = (name: string) => formText(form, name);
  return {
    customer_q: text('customer_q'), customer_id: text('customer_id'), customer_email: text('customer_email'), customer_name: text('customer_name'),
    customer_company: text('customer_company'), channel_id: text('channel_id'), currency: text('currency'), discount_amount: text('discount_amount'),
    tax_rate: text('tax_rate'), notes: text('notes'), valid_until: text('valid_until'), lines,
  };
}

const emptyLine = (): LineRow => ({ id: '', sku: '', description: '', quantity: '1', price: '' });

/**
 * A button other than save: `add`, `remove:N`, `up:N`, `down:N` change the rows; `find` looks the customer up.
 * Gives the form to show again (an unknown button changes nothing), or null for a save.
 */
export function applyAction(form: QuoteForm, action: string): QuoteForm | null {
  if (action === '' || action === 'save') return null;
  const lines = [...form.lines];
  const [verb, at] = action.split(':');
  const index = Number(at);
  const valid = Number.isInteger(index) && index >= 0 && index < lines.length;
  if (verb === 'add') lines.push(emptyLine());
  else if (verb === 'remove' && valid) lines.splice(index, 1);
  else if (verb === 'up' && valid && index > 0) [lines[index - 1], lines[index]] = [lines[index], lines[index - 1]];
  else if (verb === 'down' && valid && index < lines.length - 1) [lines[index + 1], lines[index]] = [lines[index], lines[index + 1]];
  return { ...form, lines };
}

/** A row left empty (no SKU, description or price) is no line: the form keeps a spare row to type into. */
const blank = (line: LineRow) => !line.sku.trim() && !line.description.trim() && !line.price.trim();

/** The rows that are lines, with their place on the form (a message about `lines.1` is about the form's row `shown[1]`). */
function filledRows(form: QuoteForm): { rows: LineRow[]; shown: number[] } {
  const shown = form.lines.flatMap((line, index) => (blank(line) ? [] : [index]));
  return { rows: shown.map((index) => form.lines[index]), shown };
}

/** A line's fields as the API takes them: an empty input is not given (a SKU's variant then fills description and price). */
function lineBody(line: LineRow, withId: boolean): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of lineNames) {
    if (name === 'id' && !withId) continue;
    const value = line[name].trim();
    if (value !== '') out[name] = value;
  }
  return out;
}

/** The messages of `issues`, keyed by field, with line numbers as the form shows its rows. */
function messagesAt(issues: { field: string; message: string }[], shown: number[]): FieldErrors {
  const out: FieldErrors = {};
  for (const { field: name, message } of issues) {
    const match = /^lines\.(\d+)(\..*)?$/.exec(name);
    const key = match && shown[Number(match[1])] !== undefined ? `lines.${shown[Number(match[1])]}${match[2] ?? ''}` : name;
    const text = match ? message.replace(`lines.${match[1]}`, key.split('.').slice(0, 2).join('.')) : message;
    out[key] ??= text;
  }
  return out;
}

/** POST /quotes's body from the new-quote form: the picked customer's id, or the typed customer. */
function createBody(form: QuoteForm, rows: LineRow[]): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (/^\d+$/.test(form.customer_id)) body.customer_id = form.customer_id;
  else if (form.customer_id === 'new' || form.customer_email.trim() || form.customer_name.trim() || form.customer_company.trim()) {
    body.customer = { email: form.customer_email, name: form.customer_name, company: form.customer_company };
  }
  for (const name of ['channel_id', 'currency', 'discount_amount', 'tax_rate', 'notes', 'valid_until'] as const) {
    if (form[name].trim() !== '') body[name] = form[name];
  }
  body.lines = rows.map((line) => lineBody(line, false));
  return body;
}

/** The edit form's body: every field given (an empty one clears it, as null does in PATCH), except an empty currency (kept). */
function draftInput(form: QuoteForm, rows: LineRow[]): Record<string, unknown> {
  const body: Record<string, unknown> = { discount_amount: form.discount_amount, tax_rate: form.tax_rate, notes: form.notes, valid_until: form.valid_until };
  if (form.currency.trim() !== '') body.currency = form.currency;
  body.lines = rows.map((line) => lineBody(line, true));
  return body;
}

/** A stored draft as its form shows it. */
function storedForm(quote: QuoteJson, lines: Record<string, unknown>[]): QuoteForm {
  const text = (value: unknown) => (value === null || value === undefined ? '' : String(value));
  return {
    customer_q: '', customer_id: text(quote.customer_id), customer_email: '', customer_name: '', customer_company: '', channel_id: text(quote.channel_id),
    currency: text(quote.currency), discount_amount: text(quote.discount_amount), tax_rate: text(quote.tax_rate), notes: text(quote.notes),
    valid_until: text(quote.valid_until),
    lines: lines.map((line) => ({ id: text(line.id), sku: text(line.sku), description: text(line.description), quantity: text(line.quantity), price: text(line.price) })),
  };
}

type Channel = { id: number; name: string; currency: string | null };

/** What a render of the form needs besides the typed input. */
interface FormView {
  auth: Principal;
  /** Null for a new quote. */
  quote: QuoteJson | null;
  channels: Channel[];
  /** The picked customer (shown whatever the search finds) and the search's matches. */
  customers: CustomerJson[];
  searched: boolean;
  errors: FieldErrors;
  flash?: PageInput<unknown>['flash'];
}

const customerLabel = (c: CustomerJson) => {
  const name = [c.name, c.company].filter((v) => typeof v === 'string' && v !== '').join(', ');
  return name ? `${name} <${c.email}>` : c.email;
};

/** The customer radios: the picked one and the matches, then "a new customer". Also the suggestions endpoint's answer. */
export function customerChoices(form: Pick<QuoteForm, 'customer_id' | 'customer_q'>, customers: CustomerJson[], searched: boolean): Html {
  const picked = form.customer_id === '' ? (customers.length === 0 ? 'new' : '') : form.customer_id;
  return html`<div id="customer-choices" class="choices" aria-live="polite">
  ${searched && customers.every((c) => String(c.id) === form.customer_id) ? html`<p class="muted">No customer matches “${form.customer_q}”.</p>` : ''}
  ${customers.map(
    (c) => html`<label class="check"><input type="radio" name="customer_id" value="${c.id}"${String(c.id) === picked ? html` checked` : ''}> <span>${customerLabel(c)}</span></label>`,
  )}
  <label class="check"><input type="radio" name="customer_id" value="new"${picked === 'new' ? html` checked` : ''}> A new customer (below)</label>
</div>`;
}

function lineRow(line: LineRow, index: number, count: number, errors: FieldErrors): Html {
  const n = index + 1;
  const cell = (name: 'sku' | 'description' | 'quantity' | 'price', label: string, attrs: Html) => {
    const id = `line-${index}-${name}`;
    const error = errors[`lines.${index}.${name}`];
    return html`<td data-label="${label}"${error ? html` class="invalid"` : ''}>
  <label class="visually-hidden" for="${id}">Line ${n} ${name === 'sku' ? label : label.toLowerCase()}</label>
  <input id="${id}" name="line_${name}" value="${line[name]}"${attrs}${error ? html` aria-invalid="true" aria-describedby="${id}-error"` : ''}>
  ${error ? html`<p class="field-error" id="${id}-error">${error}</p>` : ''}
</td>`;
  };
  const rowError = errors[`lines.${index}`] ?? errors[`lines.${index}.id`];
  return html`<tr class="line-row">
  ${cell('sku', 'SKU', html` autocomplete="off" maxlength="${SKU_MAX}"`)}
  ${cell('description', 'Description', html` maxlength="2000"`)}
  ${cell('quantity', 'Quantity', html` inputmode="decimal" class="num"`)}
  ${cell('price', 'Price', html` inputmode="decimal" class="num" placeholder="From catalogue"`)}
  <td class="num line-total" data-label="Total" aria-live="off"></td>
  <td data-label="Move or remove">
    <input type="hidden" name="line_id" value="${line.id}">
    <div class="line-actions">
    <button type="submit" class="small" name="action" value="up:${index}"${index === 0 ? html` disabled` : ''} aria-label="Move line ${n} up">↑</button>
    <button type="submit" class="small" name="action" value="down:${index}"${index === count - 1 ? html` disabled` : ''} aria-label="Move line ${n} down">↓</button>
    <button type="submit" class="small danger" name="action" value="remove:${index}" aria-label="Remove line ${n}">Remove</button>
    </div>
    ${rowError ? html`<p class="field-error">${rowError}</p>` : ''}
  </td>
</tr>`;
}

/** The server's figures for a saved draft; the script recomputes them live while lines are typed. */
function totals(quote: QuoteJson | null): Html {
  const amount = (value: unknown) => (quote ? amountText(quote.currency as string, value) : '—');
  return html`<table class="totals" id="quote-totals" aria-label="Totals">
  <tbody>
    <tr><th scope="row">Subtotal</th><td data-total="subtotal">${amount(quote?.subtotal)}</td></tr>
    <tr><th scope="row">Discount</th><td data-total="discount">${amount(quote?.discount_amount)}</td></tr>
    <tr><th scope="row">Tax</th><td data-total="tax">${amount(quote?.tax_amount)}</td></tr>
    <tr class="grand"><th scope="row">Total</th><td data-total="total">${amount(quote?.total)}</td></tr>
  </tbody>
</table>
<p class="hint" id="totals-note">${quote ? 'As last saved; the' : 'The'} totals are computed when you save.</p>`;
}

function quoteFormPage(form: QuoteForm, view: FormView): Html {
  const { quote, errors } = view;
  const editing = quote !== null;
  const action = editing ? `/app/quotes/${quote.id}/edit` : '/app/quotes/new';
  const title = editing ? `Edit ${quote.quote_number}` : 'New quote';
  const lines = form.lines.length > 0 ? form.lines : [emptyLine()];
  const shownKeys = new Set([
    'customer', 'customer_id', 'customer.email', 'customer.name', 'customer.company', 'channel_id', 'currency', 'discount_amount', 'tax_rate', 'notes', 'valid_until',
  ]);
  const other = Object.entries(errors).filter(([key]) => !shownKeys.has(key) && !/^lines\.\d+(\.(sku|description|quantity|price|id))?$/.test(key));
  const channelName = (id: string) => view.channels.find((c) => String(c.id) === id)?.name ?? `Channel ${id}`;
  const customerError = errors.customer ?? errors.customer_id;

  const customerPart: Markup = editing
    ? html`<dl class="meta"><div><dt>Customer</dt><dd>${String(quote.customer_name ?? '')} ${quote.customer_email ? html`&lt;${String(quote.customer_email)}&gt;` : ''}</dd></div>
  <div><dt>Channel</dt><dd>${quote.channel_id === null ? 'No channel' : channelName(String(quote.channel_id))}</dd></div></dl>`
    : html`<fieldset class="customer${customerError ? ' invalid' : ''}"${customerError ? html` aria-describedby="customer-error"` : ''}>
  <legend>Customer</legend>
  ${customerError ? html`<p class="field-error" id="customer-error">${customerError}</p>` : ''}
  <div class="filters">
    ${field({ name: 'customer_q', label: 'Find a customer by name or email', value: form.customer_q, attrs: html` autocomplete="off" data-suggest="/app/quotes/new/customers"` })}
    <button type="submit" name="action" value="find">Find</button>
  </div>
  ${customerChoices(form, view.customers, view.searched)}
  <div class="form-grid">
    ${field({ name: 'customer_email', label: 'New customer’s email', type: 'email', value: form.customer_email, errors, errorKey: 'customer.email', autocomplete: 'off' })}
    ${field({ name: 'customer_name', label: 'Name', value: form.customer_name, errors, errorKey: 'customer.name', autocomplete: 'off' })}
    ${field({ name: 'customer_company', label: 'Company', value: form.customer_company, errors, errorKey: 'customer.company', autocomplete: 'off' })}
  </div>
  <p class="hint">A new customer is matched by email: an existing one with that email is updated.</p>
</fieldset>
${select({
  name: 'channel_id', label: 'Channel', value: form.channel_id, errors,
  options: [{ value: '', label: 'No channel' }, ...view.channels.map((c) => ({ value: String(c.id), label: c.currency ? `${c.name} (${c.currency})` : c.name }))],
  hint: 'Only the channels you may write quotes for.',
  attrs: html` data-currencies="${JSON.stringify(Object.fromEntries(view.channels.flatMap((c) => (c.currency ? [[String(c.id), c.currency]] : []))))}"`,
})}`;

  const content = html`<div class="page-head"><h1>${title}</h1>${editing ? html`<a href="/app/quotes/${quote.id}">Back to the quote</a>` : ''}</div>
${other.length ? html`<div class="flash flash-error" role="alert">${other.map(([, message]) => html`<p>${message}</p>`)}</div>` : ''}
<form method="post" action="${action}" class="stack quote-form" id="quote-form" novalidate>
<button type="submit" class="visually-hidden" tabindex="-1" aria-hidden="true">Save</button>
<section class="card stack">
  ${customerPart}
</section>
<section class="card" aria-labelledby="lines-heading">
  <h2 id="lines-heading">Lines</h2>
  <p class="hint">A SKU from the catalogue fills the description and price you leave empty. A line without a SKU needs a price. A row left empty is not saved.</p>
  <div class="table-wrap">
  <table class="lines quote-lines">
    <thead><tr><th scope="col">SKU</th><th scope="col">Description</th><th scope="col" class="num">Quantity</th><th scope="col" class="num">Price</th><th scope="col" class="num">Total</th><th scope="col"><span class="visually-hidden">Move or remove</span></th></tr></thead>
    <tbody id="quote-lines">
      ${lines.map((line, index) => lineRow(line, index, lines.length, errors))}
    </tbody>
  </table>
  </div>
  <div class="actions"><button type="submit" name="action" value="add">Add a line</button></div>
  ${totals(quote)}
</section>
<section class="card stack">
  <div class="form-grid">
    ${field({
      name: 'currency', label: 'Currency', value: form.currency, errors,
      attrs: html` maxlength="3" autocomplete="off"`,
      hint: editing ? 'Three letters, e.g. EUR.' : 'Empty: the channel’s currency (USD when it has none).',
    })}
    ${field({ name: 'discount_amount', label: 'Discount', value: form.discount_amount, errors, attrs: html` inputmode="decimal"`, hint: 'An amount off the subtotal.' })}
    ${field({ name: 'tax_rate', label: 'Tax rate (%)', value: form.tax_rate, errors, attrs: html` inputmode="decimal"` })}
    ${field({ name: 'valid_until', label: 'Valid until', type: 'date', value: form.valid_until, errors })}
  </div>
  ${textarea({ name: 'notes', label: 'Notes', value: form.notes, errors, hint: 'Shown to the customer on the quote.' })}
</section>
<div class="actions">
  <button type="submit" class="primary">${editing ? 'Save changes' : 'Save quote'}</button>
  <a href="${editing ? `/app/quotes/${quote.id}` : '/app/quotes'}">Cancel</a>
</div>
</form>
<script src="${assetUrl('quote-form.js')}" defer></script>`;
  return shell(view.auth, { title, section: 'quotes', flash: view.flash, content });
}

/** A quote that is no longer a draft: its status, the 409's message, and the way back to it. */
function notDraftPage(auth: Principal, quote: QuoteJson, message: string): Html {
  return shell(auth, {
    title: `Edit ${quote.quote_number}`,
    section: 'quotes',
    content: html`<div class="flash flash-error" role="alert">${message}</div>
<div class="page-head"><h1>${quote.quote_number}</h1>${badge(quote.status)}</div>
<section class="card"><p>This quote is ${quote.status}: only a draft can be edited.</p>
<p><a class="button" href="/app/quotes/${quote.id}">Back to ${quote.quote_number}</a></p></section>`,
  });
}

const customerQuery = z.object({ q: z.string().max(200).optional().catch(undefined), customer_id: z.string().max(20).optional().catch(undefined) });

const startQuery = z.object({ customer_id: z.string().regex(/^\d{1,9}$/).optional().catch(undefined) });
const skuQuery = z.object({ sku: z.string().trim().max(SKU_MAX).optional().catch(undefined) });

/** How many of a search's matches the form offers. */
const MATCHES = 10;

export function quoteFormPages({ db }: AppDeps): PageDef[] {
  /** The picked customer (when the id names one) and, when searched, the matches. */
  async function customersFor(auth: Principal, form: Pick<QuoteForm, 'customer_id' | 'customer_q'>, search: boolean): Promise<{ customers: CustomerJson[]; searched: boolean }> {
    const customers: CustomerJson[] = [];
    if (/^\d{1,9}$/.test(form.customer_id)) {
      try {
        customers.push(await getCustomer(db, auth.access, Number(form.customer_id)));
      } catch (err) {
        if (!(err instanceof NotFound)) throw err;
      }
    }
    const q = form.customer_q.trim();
    if (!search || q === '') return { customers, searched: false };
    const found = await customerPage(db, auth.access, { q }, 1);
    for (const c of found.rows.slice(0, MATCHES)) if (!customers.some((known) => known.id === c.id)) customers.push(c);
    return { customers, searched: true };
  }

  async function newForm(input: PageInput<unknown>, form: QuoteForm, errors: FieldErrors, search = form.customer_q.trim() !== ''): Promise<Html> {
    const channels = await channelsAllowed(db, input.auth.access, 'write');
    const found = await customersFor(input.auth, form, search);
    return quoteFormPage(form, { auth: input.auth, quote: null, channels, ...found, errors, flash: input.flash });
  }

  async function editForm(input: PageInput<unknown>, quote: QuoteJson, form: QuoteForm, errors: FieldErrors): Promise<Html> {
    const channels = await channelsAllowed(db, input.auth.access, 'write');
    return quoteFormPage(form, { auth: input.auth, quote, channels, customers: [], searched: false, errors, flash: input.flash });
  }

  /** The 422 of a service: the form again with the message beside its field (line numbers as the form shows them). */
  const serviceErrors = (form: QuoteForm, error: Validation) => messagesAt([{ field: error.field, message: error.message }], filledRows(form).shown);

  return [
    page({
      method: 'get', path: '/app/quotes/new', who: 'member', query: startQuery,
      // `?customer_id=` (a customer's page links here): that customer picked.
      handle: async (input) => newForm(input, readForm({ customer_id: input.query.customer_id ?? '' }), {}, false),
    }),
    page({
      method: 'post', path: '/app/quotes/new', who: 'member',
      handle: async (input) => {
        const form = readForm(input.form);
        const changed = applyAction(form, formText(input.form, 'action'));
        if (changed) return newForm(input, changed, {});
        const { rows, shown } = filledRows(form);
        const parsed = inputIssues(createQuoteBody, createBody(form, rows));
        if (!parsed.ok) return new Rendered(422, await newForm(input, form, messagesAt(parsed.issues, shown)));
        const created = await db.transaction((trx) => createQuote(trx, input.auth.access, parsed.data));
        const quote = JSON.parse(created.quote) as QuoteJson;
        return redirect(`/app/quotes/${quote.id}`, `Quote ${quote.quote_number} is saved as a draft.`);
      },
      invalid: async (input, error) => {
        const form = readForm(input.form);
        return newForm(input, form, serviceErrors(form, error));
      },
    }),
    page({
      method: 'get', path: '/app/quotes/new/customers', who: 'member', query: customerQuery,
      handle: async (input) => {
        const form = { customer_q: input.query.q ?? '', customer_id: input.query.customer_id ?? '' };
        const found = await customersFor(input.auth, form, true);
        return customerChoices(form, found.customers, found.searched);
      },
    }),
    page({
      method: 'get', path: '/app/quotes/new/sku', who: 'member', query: skuQuery,
      handle: async ({ auth, query }) => {
        const variant = query.sku ? await catalogueLine(db, auth.access, query.sku) : undefined;
        return html`<p data-sku="${query.sku ?? ''}"${variant ? html` data-description="${variant.description}"${variant.price === null ? '' : html` data-price="${variant.price}"`}` : ''}></p>`;
      },
    }),
    page({
      method: 'get', path: '/app/quotes/{id}/edit', who: 'member',
      handle: async (input) => {
        const { quote, lines } = await visible(getQuote(db, input.auth.access, input.params.id));
        try {
          assertDraft(quote);
        } catch (err) {
          if (err instanceof Conflict) return new Rendered(409, notDraftPage(input.auth, quote, err.message));
          throw err;
        }
        return editForm(input, quote, storedForm(quote, lines), {});
      },
    }),
    page({
      method: 'post', path: '/app/quotes/{id}/edit', who: 'member',
      handle: async (input) => {
        const id = input.params.id;
        // A quote the member may not read is not there (404); one they may read but not write is refused (403) on saving.
        const quote = await visible(readableQuote(db, input.auth.access, id));
        assertDraft(quote);
        const form = readForm(input.form);
        const changed = applyAction(form, formText(input.form, 'action'));
        if (changed) return editForm(input, quote, changed, {});
        const { rows, shown } = filledRows(form);
        const parsed = inputIssues(draftBody, draftInput(form, rows));
        if (!parsed.ok) return new Rendered(422, await editForm(input, quote, form, messagesAt(parsed.issues, shown)));
        const { lines, ...changes } = parsed.data;
        const saved = await db.transaction((trx) => saveDraft(trx, input.auth.access, id, changes, lines));
        return redirect(`/app/quotes/${id}`, `Quote ${saved.quote_number} is saved.`);
      },
      invalid: async (input, error) => {
        const quote = await visible(readableQuote(db, input.auth.access, input.params.id));
        const form = readForm(input.form);
        return editForm(input, quote, form, serviceErrors(form, error));
      },
      conflict: async (input, error: HttpError) => {
        const quote = await visible(readableQuote(db, input.auth.access, input.params.id));
        return notDraftPage(input.auth, quote, error.message);
      },
    }),
  ];
}
