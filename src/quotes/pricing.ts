/** A quote's line pricing (a given price or its variant's) and its totals (subtotal, discount, tax), in PostgreSQL numeric. */
import type { Access } from '../access.js';
import type { Db } from '../db/database.js';
import { isNumericOverflow } from '../db/errors.js';
import { Validation } from '../errors.js';
import { lineTotalFits } from '../money.js';
import type { LineInput } from './schema.js';

/**
 * Totals in PostgreSQL numeric: line totals rounded half-up to cents, tax on (subtotal − discount).
 * `field` is the input named when a total would not fit its column.
 */
export async function recalculate(trx: Db, workspaceId: number, quoteId: number, field = 'lines'): Promise<void> {
  const { rows } = await trx.raw(
    `select t.subtotal::text as subtotal, q.discount_amount::text as discount, q.discount_amount > t.subtotal as too_much
     from quotes q, (select coalesce(sum(line_total), 0) as subtotal from quote_lines where quote_id = ? and workspace_id = ?) t
     where q.id = ? and q.workspace_id = ?`,
    [quoteId, workspaceId, quoteId, workspaceId],
  );
  if (rows[0]?.too_much) throw tooMuchDiscount(rows[0].discount, rows[0].subtotal);
  await trx
    .raw(
      `update quotes q set subtotal = t.subtotal,
         tax_amount = round((t.subtotal - q.discount_amount) * q.tax_rate / 100, 2),
         total = t.subtotal - q.discount_amount + round((t.subtotal - q.discount_amount) * q.tax_rate / 100, 2),
         updated_at = now()
       from (select coalesce(sum(line_total), 0) as subtotal from quote_lines where quote_id = ? and workspace_id = ?) t
       where q.id = ? and q.workspace_id = ?`,
      [quoteId, workspaceId, quoteId, workspaceId],
    )
    .catch(totalOverflow(field));
}

export const tooMuchDiscount = (discount: string, subtotal: string) =>
  new Validation('discount_amount', `discount_amount (${discount}) must not exceed the subtotal (${subtotal}).`);

export const totalOverflow = (field: string) => (err: unknown) => {
  if (isNumericOverflow(err)) throw new Validation(field, `${field}: the quote total must be less than 1000000000000.`);
  throw err;
};

export interface Variant {
  id: number;
  price: string | null;
  /** "T-Shirt, Small": the product's name, then the variant's when it has one. */
  description: string;
}

/** The variants the SKUs name, in one query. */
export async function variantsBySku(trx: Db, workspaceId: number, skus: string[]): Promise<Map<string, Variant>> {
  const wanted = [...new Set(skus)];
  if (wanted.length === 0) return new Map();
  const { rows } = await trx.raw(
    `select v.sku, v.id, v.price::text as price, p.name || coalesce(', ' || nullif(v.name, ''), '') as description
     from variants v join products p on p.id = v.product_id and p.workspace_id = v.workspace_id
     where v.workspace_id = ? and v.sku in (select json_array_elements_text(?::json))`,
    [workspaceId, JSON.stringify(wanted)],
  );
  return new Map(rows.map((r: Variant & { sku: string }) => [r.sku, { id: r.id, price: r.price, description: r.description }]));
}

/** The variant a SKU names, as a new line would take its description and price from it (the form's lookup as you type). */
export async function catalogueLine(db: Db, access: Access, sku: string): Promise<Variant | undefined> {
  return (await variantsBySku(db, access.workspaceId, [sku])).get(sku);
}

interface PricedLine {
  variant_id: number | null;
  sku: string | null;
  description: string | null;
  quantity: string;
  price: string;
}

/**
 * The line's price (given, or the price of the variant its SKU names; 422 `<field>.price` when
 * neither), variant and description (given, or the variant's).
 */
export function priceLine(line: LineInput, variant: Variant | undefined, field: string): PricedLine {
  const price = line.price ?? variant?.price ?? null;
  const at = (name: string) => (field ? `${field}.${name}` : name);
  if (price === null) {
    throw new Validation(at('price'), `${at('price')} is required${line.sku ? ` (no variant with SKU "${line.sku}" has a price)` : ''}.`);
  }
  if (!lineTotalFits(line.quantity, price)) throw new Validation(at('quantity'), `${at('quantity')}: quantity × price must be less than 1000000000000.`);
  return { variant_id: variant?.id ?? null, sku: line.sku ?? null, description: line.description ?? variant?.description ?? null, quantity: line.quantity, price };
}

export function assertLineFits(quantity: string, price: string, field: string): void {
  if (!lineTotalFits(quantity, price)) throw new Validation(field, `${field}: quantity × price must be less than 1000000000000.`);
}

export async function insertLine(trx: Db, workspaceId: number, quoteId: number, line: LineInput, field: string): Promise<number> {
  const variants = await variantsBySku(trx, workspaceId, line.sku ? [line.sku] : []);
  const priced = priceLine(line, line.sku ? variants.get(line.sku) : undefined, field);
  const [row] = await trx('quote_lines')
    .insert({ ...priced, workspace_id: workspaceId, quote_id: quoteId, line_total: trx.raw('round(?::numeric * ?::numeric, 2)', [priced.quantity, priced.price]) })
    .returning('id');
  return row.id;
}
