import { Validation } from '../errors.js';
import { CENTS_LIMIT, lineTotalCents } from '../money.js';
import { columnIndex } from './csv.js';
import type { RowError } from './report.js';

/**
 * A Shopify orders export (orders_export.csv): one row per line item, the order's own columns (statuses, figures,
 * customer, date) on its first row. Each row is mapped onto the import's own order columns; the order's figures are
 * checked against its line items when the order is complete (shopifyTotals).
 */

export function isShopifyOrderHeader(header: string[]): boolean {
  const index = columnIndex(header);
  return index.has('name') && index.has('financial status') && index.has('lineitem price');
}

/** Shopify's columns by the field they fill, so that a row error names the column of the file. */
const columnOf: Record<string, string> = {
  order_number: 'Name', external_id: 'Id', currency: 'Currency', customer_email: 'Email', customer_name: 'Billing Name',
  placed_at: 'Created at', sku: 'Lineitem sku', description: 'Lineitem name', quantity: 'Lineitem quantity', price: 'Lineitem price',
};

/** The field's name as the file spells it, and the message with it in front. */
export function shopifyIssue(error: RowError): RowError {
  const column = columnOf[error.field];
  if (!column) return error;
  const message = error.message.startsWith(`${error.field}:`) ? `${column}:${error.message.slice(error.field.length + 1)}` : error.message;
  return { ...error, field: column, message };
}

/** Financial status → order status; `paid` becomes `fulfilled` once the order is fulfilled. */
const statuses: Record<string, string> = {
  paid: 'paid', partially_refunded: 'paid', pending: 'pending', authorized: 'pending', partially_paid: 'pending', refunded: 'refunded', voided: 'cancelled',
};

/** An order's figures, in cents, from its first row. Null: the cell was empty. */
export interface Figures {
  subtotal: bigint | null;
  shipping: bigint;
  taxes: bigint;
  total: bigint | null;
  discount: bigint;
}

export interface ShopifyRow {
  /** The row under the import's own column names. */
  raw: Record<string, string | undefined>;
  figures: Figures;
  errors: RowError[];
}

/** Maps the rows of an export in file order (a row without an Id takes its order's, given on the order's first row). */
export function shopifyOrderRows(header: string[]): (values: string[], line: number) => ShopifyRow {
  const index = columnIndex(header);
  for (const required of ['subtotal', 'total']) {
    if (!index.has(required)) throw new Validation(required, `The Shopify orders export has no ${required === 'total' ? 'Total' : 'Subtotal'} column; export the orders again with all columns.`);
  }
  const cell = (values: string[], name: string) => {
    const i = index.get(name);
    return i === undefined ? '' : (values[i] ?? '').trim();
  };
  /** Each order's Id by its Name, as its first row with an Id gave it (at most a file's 50,000 rows). */
  const ids = new Map<string, string>();
  return (values, line) => {
    const errors: RowError[] = [];
    const name = cell(values, 'name');
    const id = ids.get(name) || cell(values, 'id');
    if (id) ids.set(name, id);

    const financial = cell(values, 'financial status').toLowerCase();
    let status = statuses[financial];
    if (financial && !status) {
      errors.push({ row: line, field: 'Financial Status', message: `Financial Status: "${financial}" is not one of ${Object.keys(statuses).join(', ')}.` });
    }
    if (status === 'paid' && cell(values, 'fulfillment status').toLowerCase() === 'fulfilled') status = 'fulfilled';

    const created = cell(values, 'created at');
    const money = (column: string, label: string): bigint | null => {
      const text = cell(values, column);
      if (text === '') return null;
      const cents = centsOf(text);
      if (cents === undefined) errors.push({ row: line, field: label, message: `${label}: "${text}" is not an amount (digits, at most 2 decimals, below 1000000000000).` });
      return cents ?? null;
    };
    const figures: Figures = {
      subtotal: money('subtotal', 'Subtotal'),
      shipping: money('shipping', 'Shipping') ?? 0n,
      taxes: money('taxes', 'Taxes') ?? 0n,
      total: money('total', 'Total'),
      discount: money('discount amount', 'Discount Amount') ?? 0n,
    };
    const raw: Record<string, string | undefined> = {
      order_number: name,
      external_id: id,
      external_source: 'shopify',
      status,
      currency: cell(values, 'currency'),
      customer_email: cell(values, 'email'),
      customer_name: cell(values, 'billing name'),
      placed_at: created === '' ? undefined : isoInstant(created),
      sku: cell(values, 'lineitem sku'),
      description: cell(values, 'lineitem name'),
      price: cell(values, 'lineitem price'),
    };
    const quantity = cell(values, 'lineitem quantity');
    if (quantity !== '') raw.quantity = quantity;
    return { raw, figures, errors };
  };
}

/** Shopify writes `2026-03-04 10:15:42 +0400`; that is ISO 8601 once the space becomes `T` and the offset gets its colon. */
function isoInstant(text: string): string {
  const m = /^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)\s*(?:([+-]\d{2}):?(\d{2})|(Z|UTC))$/i.exec(text);
  if (!m) return text;
  return `${m[1]}T${m[2]}${m[3] ? `${m[3]}:${m[4]}` : 'Z'}`;
}

/** Cents of an amount written with at most two decimals, exactly (never through a float); undefined if it is none or too large. */
function centsOf(text: string): bigint | undefined {
  const m = /^(\d+)(?:\.(\d{1,2}))?$/.exec(text);
  if (!m) return undefined;
  const cents = BigInt(m[1]) * 100n + BigInt((m[2] ?? '').padEnd(2, '0'));
  return cents < CENTS_LIMIT ? cents : undefined;
}

/** Cents as a decimal string: 1250n → "12.50", -5n → "-0.05". */
export function centsText(cents: bigint): string {
  const sign = cents < 0n ? '-' : '';
  const abs = cents < 0n ? -cents : cents;
  return `${sign}${abs / 100n}.${String(abs % 100n).padStart(2, '0')}`;
}

export interface ShopifyTotals {
  /** The line items, then Shipping as an item when the order has shipping (orders keep no shipping of their own). */
  items: { sku: string | null; description: string | null; quantity: string; price: string }[];
  discount_amount: string;
  tax_amount: string;
}

/**
 * The order as stored from its line items and first-row figures, so that its total (items − discount + tax) is the
 * export's Total. Subtotal is the line items less the discount. Total is Subtotal + Shipping + Taxes where prices
 * exclude tax, and Subtotal + Shipping where they include it: then the tax is inside the prices and tax_amount is 0.
 * Figures that agree with neither are an error on the order's first line, saying which.
 */
export function shopifyTotals(
  line: number,
  figures: Figures,
  items: { sku: string | null; description: string | null; quantity: string; price: string }[],
): ShopifyTotals | RowError {
  const { subtotal, shipping, taxes, total, discount } = figures;
  if (subtotal === null) return { row: line, field: 'Subtotal', message: 'Subtotal: is required on the first row of an order.' };
  if (total === null) return { row: line, field: 'Total', message: 'Total: is required on the first row of an order.' };
  const lines = items.reduce((sum, item) => sum + lineTotalCents(item.quantity, item.price), 0n);
  if (lines - discount !== subtotal) {
    return {
      row: line, field: 'Subtotal',
      message: `Subtotal: the line items come to ${centsText(lines)}, less the discount of ${centsText(discount)} that is ${centsText(lines - discount)}, not the Subtotal of ${centsText(subtotal)}.`,
    };
  }
  let tax: bigint;
  if (total === subtotal + shipping + taxes) tax = taxes;
  else if (total === subtotal + shipping) tax = 0n;
  else {
    return {
      row: line, field: 'Total',
      message:
        `Total: ${centsText(total)} is neither Subtotal + Shipping + Taxes (${centsText(subtotal + shipping + taxes)}) ` +
        `nor, with taxes included in the prices, Subtotal + Shipping (${centsText(subtotal + shipping)}).`,
    };
  }
  const shippingItem = shipping > 0n ? [{ sku: null, description: 'Shipping', quantity: '1', price: centsText(shipping) }] : [];
  return { items: [...items, ...shippingItem], discount_amount: centsText(discount), tax_amount: centsText(tax) };
}
