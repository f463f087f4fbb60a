import type { Access } from '../access.js';
import type { Db } from '../db/database.js';
import { Validation } from '../errors.js';
import { moneyText } from '../money.js';
import {
  catalogueHeld, productsBySku, touchProducts, upsertProducts, upsertVariants, variantsBySku,
  type ProductValues, type StoredProduct, type StoredVariant, type VariantValues,
} from '../products/service.js';
import { inputIssues } from '../schema/parse.js';
import type { CsvRow } from './csv.js';
import { columnIndex } from './csv.js';
import { generatedSku, renamed, type Format, type Mapped, type ProductState, type RowIssue } from './product-format.js';
import { BatchOutcome, canonicalJson, type Importer, type ImportReport } from './report.js';
import { productRow, variantRow, type ProductRow, type VariantRow } from './schema.js';
import { isWooHeader, wooFormat } from './woocommerce.js';

const productColumns = ['type', 'status', 'brand', 'category', 'description'] as const;

/** Our own columns: product_sku, name, type, status, brand, category, description, variant_sku, variant_name, price, attr:<name>. */
function genericFormat(header: string[]): Format {
  const index = columnIndex(header);
  for (const required of ['product_sku', 'name', 'variant_sku']) {
    if (!index.has(required)) throw new Validation(required, `The CSV has no ${required} column (required for a product import).`);
  }
  /** [attribute name, column]: the name is what follows `attr:`. */
  const attributes = header
    .map((name, i) => [name.trim(), i] as const)
    .filter(([name]) => /^attr:/i.test(name) && name.length > 5)
    .map(([name, i]) => [name.slice(5).trim(), i] as const);
  const present = new Set([...productColumns, 'variant_name', 'price'].filter((c) => index.has(c)));
  if (attributes.length) present.add('attributes');
  const cell = (values: string[], name: string) => {
    const i = index.get(name);
    return i === undefined ? undefined : (values[i] ?? '');
  };
  return {
    present,
    map(values) {
      const product: Record<string, string | undefined> = { name: cell(values, 'name') };
      for (const column of productColumns) if (present.has(column)) product[column] = cell(values, column);
      const variant: Record<string, unknown> = { product_sku: cell(values, 'product_sku'), variant_sku: cell(values, 'variant_sku') };
      if (present.has('variant_name')) variant.variant_name = cell(values, 'variant_name');
      if (present.has('price')) variant.price = cell(values, 'price');
      if (attributes.length) {
        const given: [string, string][] = [];
        for (const [name, i] of attributes) {
          const value = (values[i] ?? '').trim();
          if (value !== '') given.push([name, value]);
        }
        // fromEntries defines each name as its own property, `__proto__` included.
        variant.attributes = Object.fromEntries(given);
      }
      return { product_sku: String(variant.product_sku ?? '').trim(), product, variant };
    },
  };
}

export function isShopifyHeader(header: string[]): boolean {
  const index = columnIndex(header);
  return index.has('handle') && index.has('title') && (index.has('variant sku') || index.has('variant price'));
}

/**
 * A Shopify product export, old and new spellings: Handle → product SKU, Title → name, Body (HTML) or Body →
 * description, Vendor → brand, the category (shopifyCategory), Status (or, when empty or absent, Published) → status,
 * OptionN Name/Value → variant attributes and name, Variant SKU / Variant Price. A product's later rows leave Title
 * and the option names empty; image-only rows carry no variant and are skipped (and counted as skipped).
 */
function shopifyFormat(header: string[]): Format {
  const index = columnIndex(header);
  const cell = (values: string[], name: string) => {
    const i = index.get(name);
    return i === undefined ? '' : (values[i] ?? '').trim();
  };
  const present = new Set<string>(['brand', 'category', 'description', 'variant_name', 'attributes']);
  if (index.has('status') || index.has('published')) present.add('status');
  const description = index.has('body (html)') ? 'body (html)' : 'body';
  if (index.has('variant price')) present.add('price');
  const slots = [1, 2, 3];
  return {
    present,
    map(values, products) {
      const handle = cell(values, 'handle');
      const title = cell(values, 'title');
      const optionValues = slots.map((n) => cell(values, `option${n} value`));
      const sku = cell(values, 'variant sku');
      const price = cell(values, 'variant price');
      if (!title && !sku && !price && optionValues.every((v) => v === '')) return null;
      let state = products.get(handle);
      const names = slots.map((n) => cell(values, `option${n} name`));
      if (title || !state?.options) {
        state = { ...state, options: names };
        products.set(handle, state);
      }
      const options = state.options!;
      const attributes: Record<string, string> = {};
      const shown: string[] = [];
      optionValues.forEach((value, i) => {
        const name = options[i] || `Option${i + 1}`;
        if (!value || (name === 'Title' && value === 'Default Title')) return;
        attributes[name] = value;
        shown.push(value);
      });
      const variant: Record<string, unknown> = {
        product_sku: handle,
        variant_sku: sku || generatedSku([handle, ...shown]),
        variant_name: shown.join(' / '),
        attributes,
      };
      if (present.has('price')) variant.price = price;
      let mapped: Mapped = { product_sku: handle, variant, ...(sku ? {} : { generatedFrom: 'the handle and option values' }) };
      if (title) {
        // A non-empty Status wins; exports without one (or rows that leave it empty) say it with Published.
        const status = cell(values, 'status').toLowerCase() || published(cell(values, 'published'));
        mapped = {
          ...mapped,
          product: { name: title, status, brand: cell(values, 'vendor'), category: shopifyCategory((name) => cell(values, name)), description: cell(values, description) },
        };
      }
      return mapped;
    },
  };
}

/**
 * The category: the first non-empty of Type, Custom Product Type (a shop's own words), then the last segment of the
 * taxonomy path in Product Category, Standard Product Type or Standardized Product Type (`Apparel > Shirts` → `Shirts`),
 * as the exports of different years spell them.
 */
function shopifyCategory(cell: (name: string) => string): string {
  for (const name of ['type', 'custom product type']) {
    if (cell(name)) return cell(name);
  }
  for (const name of ['product category', 'standard product type', 'standardized product type']) {
    const last = cell(name).split('>').map((part) => part.trim()).filter(Boolean).pop();
    if (last) return last;
  }
  return '';
}

function published(value: string): string {
  if (value === '') return '';
  return /^(true|1|yes)$/i.test(value) ? 'active' : 'draft';
}

interface Candidate {
  line: number;
  variant: VariantRow;
  product?: Record<string, string | undefined>;
  /** Set when this row defines its product (the first good row of a product not yet stored by this import). */
  defines?: ProductRow;
  /** The file's names for our fields, for the messages of checks made when the batch is written. */
  columns?: Record<string, string>;
  /** Added to the report's notes once the row is sure to be written. */
  notes?: RowIssue[];
}

/**
 * Product import: one row per variant, grouped into products by product SKU; upsert by product
 * SKU, then variant SKU. Each batch reads what is stored for its SKUs once, decides in memory what
 * is new, changed or unchanged, and writes only the new and changed rows, each table in one
 * multi-row INSERT ... ON CONFLICT. Emits no events (the catalogue has none for products).
 */
export function productImporter(header: string[], now = new Date()): Importer {
  const format = isShopifyHeader(header) ? shopifyFormat(header) : isWooHeader(header) ? wooFormat(header, now) : genericFormat(header);
  const products = new Map<string, ProductState>();
  /** The first line of each product not (yet) imported whose row failed: its later rows name it. */
  const failedFirst = new Map<string, number>();
  const failedAt = (productSku: string, line: number) => {
    const earlier = failedFirst.get(productSku);
    if (earlier === undefined || line < earlier) failedFirst.set(productSku, line);
  };
  /** Variant SKUs already taken by an earlier row of this file. */
  const seen = new Map<string, number>();
  /** Whether the workspace held any products and any variants when the import began (read by the first write). */
  let before: { products: boolean; variants: boolean } | undefined;
  const setId = (sku: string, id: number) => {
    const state = products.get(sku);
    if (state) state.id = id;
    else products.set(sku, { id });
  };

  return {
    tables: ['products', 'variants'],
    rewritten: ['product_texts'],
    prepare(rows, last) {
      const outcome = new BatchOutcome();
      const candidates: Candidate[] = [];
      for (const row of rows) {
        const mapped = format.map(row.values, products, row.line);
        if (!mapped) {
          outcome.skipped++;
          continue;
        }
        outcome.rows++;
        const checked = mapped.variant ? inputIssues(variantRow, mapped.variant) : undefined;
        const issues = [...(mapped.errors ?? []), ...(checked && !checked.ok ? checked.issues.map((issue) => renamed(issue, mapped.columns)) : [])];
        if (!checked?.ok || issues.length) {
          outcome.failed++;
          if (products.get(mapped.product_sku)?.id === undefined) failedAt(mapped.product_sku, row.line);
          for (const issue of issues) {
            const generated = issue.field === (mapped.columns?.variant_sku ?? 'variant_sku') && mapped.generatedFrom;
            const shown = ` (the SKU made from ${mapped.generatedFrom}: "${String(mapped.variant?.variant_sku)}").`;
            outcome.fail(row.line, issue.field, generated ? issue.message.replace(/\.$/, '') + shown : issue.message);
          }
          continue;
        }
        candidates.push({ line: row.line, variant: checked.data, product: mapped.product, columns: mapped.columns, notes: mapped.notes });
      }
      if (last) {
        // Rows skipped while they might still have turned out good, that did not: read and failed after all.
        for (const error of format.finish?.() ?? []) {
          outcome.skipped--;
          outcome.rows++;
          outcome.failed++;
          outcome.fail(error.row, error.field, error.message);
        }
      }
      return (trx, access, report) => {
        outcome.addTo(report);
        return candidates.length ? write(trx, access, candidates, report) : Promise.resolve();
      };
    },
  };

  async function write(trx: Db, access: Access, candidates: Candidate[], report: ImportReport): Promise<void> {
    const fail = (line: number, field: string, message: string) => report.errors.push({ row: line, field, message });
    // A workspace with no variants (products) when the import began holds none but this import's own, and those
    // this import knows (`seen`, the ids in `products`): a first import into it looks nothing up.
    before ??= await catalogueHeld(trx, access.workspaceId);
    const stored = before.variants ? await variantsBySku(trx, access.workspaceId, candidates.map((c) => c.variant.variant_sku)) : new Map<string, StoredVariant>();
    const storedProducts = before.products
      ? await productsBySku(trx, access.workspaceId, [...new Set(candidates.map((c) => c.variant.product_sku))].filter((sku) => products.get(sku)?.id === undefined))
      : new Map<string, StoredProduct>();

    const good: Candidate[] = [];
    const definedHere = new Set<string>();
    for (const candidate of candidates) {
      const { variant } = candidate;
      const earlier = seen.get(variant.variant_sku);
      const undefinedProduct = products.get(variant.product_sku)?.id === undefined && !definedHere.has(variant.product_sku);
      if (earlier !== undefined) {
        if (undefinedProduct) failedAt(variant.product_sku, candidate.line);
        report.failed++;
        fail(candidate.line, 'variant_sku', `variant_sku: SKU "${variant.variant_sku}" is already on line ${earlier} of this file.`);
        continue;
      }
      const existing = stored.get(variant.variant_sku);
      if (existing && existing.product_sku !== variant.product_sku) {
        if (undefinedProduct) failedAt(variant.product_sku, candidate.line);
        report.failed++;
        fail(candidate.line, 'variant_sku', `variant_sku: SKU "${variant.variant_sku}" is already used by a variant of another product (${existing.product_sku}).`);
        continue;
      }
      const state = products.get(variant.product_sku);
      let defines: ProductRow | undefined;
      if (state?.id === undefined && !definedHere.has(variant.product_sku)) {
        const checked = inputIssues(productRow, candidate.product ?? { name: '' });
        if (!checked.ok) {
          report.failed++;
          const first = failedFirst.get(variant.product_sku);
          if (first !== undefined && first < candidate.line) {
            // An earlier row of this product failed; this row's product columns are not what went wrong.
            const column = candidate.columns?.product_sku;
            const message = `product ${variant.product_sku} was not imported: its first row (line ${first}) failed.`;
            fail(candidate.line, column ?? 'product_sku', column ? `${column}: ${message}` : message);
            continue;
          }
          failedAt(variant.product_sku, candidate.line);
          for (const issue of checked.issues.map((each) => renamed(each, candidate.columns))) {
            fail(candidate.line, issue.field, candidate.product ? issue.message : `name: the first row of product ${variant.product_sku} must give its name (Title).`);
          }
          continue;
        }
        defines = checked.data;
        definedHere.add(variant.product_sku);
      }
      seen.set(variant.variant_sku, candidate.line);
      candidate.defines = defines;
      good.push(candidate);
      for (const note of candidate.notes ?? []) report.notes.push({ row: candidate.line, ...note });
    }

    // Products first: new ones inserted, changed ones updated, in one statement.
    const productWrites: ProductValues[] = [];
    const productOutcome = new Map<string, 'created' | 'updated' | 'unchanged'>();
    for (const { defines, variant } of good) {
      if (!defines) continue;
      const current = storedProducts.get(variant.product_sku);
      const next = {
        sku: variant.product_sku,
        name: defines.name,
        type: defines.type ?? current?.type ?? 'physical',
        status: defines.status ?? current?.status ?? 'active',
        brand: format.present.has('brand') ? (defines.brand ?? null) : (current?.brand ?? null),
        category: format.present.has('category') ? (defines.category ?? null) : (current?.category ?? null),
        description: format.present.has('description') ? (defines.description ?? null) : (current?.description ?? null),
      };
      if (!current) productOutcome.set(next.sku, 'created');
      else {
        setId(next.sku, current.id);
        const same = (['name', 'type', 'status', 'brand', 'category', 'description'] as const).every((key) => current[key] === next[key]);
        productOutcome.set(next.sku, same ? 'unchanged' : 'updated');
        if (same) continue;
      }
      productWrites.push(next);
    }
    for (const [sku, id] of await upsertProducts(trx, access.workspaceId, productWrites)) setId(sku, id);

    // Then variants: the same, against the stored values read above.
    const variantWrites: VariantValues[] = [];
    const touched = new Set<number>();
    for (const { line, variant, defines } of good) {
      const productId = products.get(variant.product_sku)?.id;
      if (productId === undefined) throw new Error(`product ${variant.product_sku} has no id after its upsert (line ${line})`);
      const current = stored.get(variant.variant_sku);
      const next = {
        sku: variant.variant_sku,
        product_id: productId,
        name: format.present.has('variant_name') ? (variant.variant_name ?? null) : (current?.name ?? null),
        price: format.present.has('price') ? moneyText(variant.price) : (current?.price ?? null),
        attributes: format.present.has('attributes') ? (variant.attributes ?? {}) : (current?.attributes ?? {}),
      };
      const productChanged = defines !== undefined && productOutcome.get(variant.product_sku) === 'updated';
      if (!current) {
        report.created++;
      } else if (current.name === next.name && current.price === next.price && canonicalJson(current.attributes) === canonicalJson(next.attributes)) {
        if (productChanged) report.updated++;
        else report.unchanged++;
        continue;
      } else {
        report.updated++;
        if (!productChanged) touched.add(productId);
      }
      variantWrites.push(next);
    }
    await upsertVariants(trx, access.workspaceId, variantWrites);
    // A variant change changes the product's JSON too, so its updated_at moves (as with the variant endpoints).
    await touchProducts(trx, access.workspaceId, [...touched]);
  }
}

export type { CsvRow };
