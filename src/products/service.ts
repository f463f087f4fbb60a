import type { Access } from '../access.js';
import type { Knex } from 'knex';
import type { Db } from '../db/database.js';
import { listPages, type JsonPage } from '../db/keyset.js';
import { textsList, type ListQuery } from '../db/list-query.js';
import { numberedListPage, type NumberedPage } from '../db/numbered-pages.js';
import { givenFields } from '../db/fields.js';
import { likePattern, scoped, unfiltered, whereExact } from '../db/scoped.js';
import { Conflict, NotFound } from '../errors.js';
import type { ProductChanges, ProductFilters, ProductInput, VariantChanges, VariantInput } from './schema.js';

/** The API shape of a variant: its stored JSON text (`api_json`, rendered by a trigger on every write), as json. */
export const variantJson = (v = 'v') => `${v}.api_json::json`;

/**
 * A product with its variants (by id) as JSON text: stored in its row (`list_json`), kept by the statements that
 * write the product or its variants (migration 20261125120000_product_list_json).
 */
const productText = (p = 'p') => `${p}.list_json`;

/** The API shape of a product, variants embedded, as json: single reads, the list and every write response agree to the byte. */
export const productJson = (p = 'p') => `${productText(p)}::json`;

export type VariantJson = Record<string, unknown> & { id: number; sku: string; price: string | null };
export type ProductJson = Record<string, unknown> & { id: number; sku: string; variants: VariantJson[] };

type Kind = 'product' | 'variant';

const skuTaken = (kind: Kind, sku: string) => new Conflict(`SKU "${sku}" is already used by another ${kind}.`);

const uniqueConstraints: Record<string, Kind> = {
  products_workspace_id_sku_unique: 'product',
  variants_workspace_id_sku_unique: 'variant',
};

/**
 * A unique violation on a SKU (a concurrent writer got there between our check and our insert)
 * becomes the same 409 the check gives; anything else is not ours to map.
 */
export function skuConflict(err: unknown): Conflict | undefined {
  const e = err as { code?: string; constraint?: string; detail?: string } | null;
  if (e?.code !== '23505') return undefined;
  const kind = uniqueConstraints[e.constraint ?? ''];
  if (!kind) return undefined;
  const sku = /^Key \(workspace_id, sku\)=\(\d+, (.*)\) already exists\.?$/s.exec(e.detail ?? '')?.[1];
  return sku !== undefined ? skuTaken(kind, sku) : new Conflict(`That SKU is already used by another ${kind}.`);
}

async function guardSku<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    throw skuConflict(err) ?? err;
  }
}

async function assertSkusFree(trx: Db, workspaceId: number, kind: Kind, skus: string[], exceptId?: number): Promise<void> {
  if (skus.length === 0) return;
  const query = scoped(trx, kind === 'product' ? 'products' : 'variants', workspaceId).whereIn('sku', skus);
  if (exceptId !== undefined) query.whereNot('id', exceptId);
  const taken = await query.first('sku');
  if (taken) throw skuTaken(kind, taken.sku);
}

const productEditable = ['sku', 'name', 'type', 'status', 'brand', 'category', 'description'] as const;
const variantEditable = ['sku', 'name', 'price', 'attributes'] as const;

/** Column values of a variant; attributes go in as JSON text (an object would be sent as a pg array literal). */
function variantColumns(input: VariantChanges): Record<string, unknown> {
  const columns: Record<string, unknown> = givenFields(input, variantEditable);
  if (columns.attributes !== undefined) columns.attributes = JSON.stringify(columns.attributes);
  return columns;
}

export async function getProduct(db: Db, access: Access, id: number): Promise<ProductJson> {
  const row = await scoped(db, 'products as p', access.workspaceId).where('p.id', id).first(db.raw(`${productJson()} as json`));
  if (!row) throw new NotFound('Product not found.');
  return row.json;
}

async function getVariant(db: Db, workspaceId: number, id: number): Promise<VariantJson> {
  const row = await scoped(db, 'variants as v', workspaceId).where('v.id', id).first(db.raw(`${variantJson()} as json`));
  if (!row) throw new NotFound('Variant not found.');
  return row.json;
}

/** The products, filtered, variants embedded; the whole list from its texts. */
function productList(db: Db, access: Access, filters: Partial<ProductFilters>): ListQuery {
  if (unfiltered(filters)) return textsList(db, 'product_texts', access.workspaceId);
  return { base: () => filteredProducts(db, access.workspaceId, filters), idColumn: 'p.id', json: productText() };
}

/** The filtered list, by id, variants embedded, as JSON pages rendered by the database. */
export function listProducts(db: Db, access: Access, filters: ProductFilters): AsyncGenerator<JsonPage> {
  return listPages(db, productList(db, access, filters));
}

/** Page `page` of the products, filtered, newest first, variants embedded as getProduct gives them, with their count. */
export function productPage(db: Db, access: Access, filters: Partial<ProductFilters>, page: number): Promise<NumberedPage<ProductJson>> {
  return numberedListPage<ProductJson>(db, productList(db, access, filters), page);
}

function filteredProducts(db: Db, workspaceId: number, filters: Partial<ProductFilters>): Knex.QueryBuilder {
  const query = scoped(db, 'products as p', workspaceId);
  whereExact(query, { 'p.type': filters.type, 'p.status': filters.status, 'p.brand': filters.brand });
  if (filters.q) {
    const pattern = likePattern(filters.q);
    query.where((w) =>
      w
        .orWhereILike('p.name', pattern)
        .orWhereILike('p.sku', pattern)
        .orWhereExists((sub) => sub.select(db.raw('1')).from('variants as v').whereRaw('v.product_id = p.id and v.workspace_id = p.workspace_id').whereILike('v.sku', pattern)),
    );
  }
  return query;
}

async function insertVariants(trx: Db, workspaceId: number, productId: number, variants: VariantInput[]): Promise<number[]> {
  if (variants.length === 0) return [];
  await assertSkusFree(trx, workspaceId, 'variant', variants.map((v) => v.sku));
  const rows = await guardSku(() =>
    trx('variants')
      .insert(variants.map((v) => ({ name: null, price: null, attributes: '{}', ...variantColumns(v), workspace_id: workspaceId, product_id: productId })))
      .returning('id'),
  );
  return rows.map((r: { id: number }) => r.id);
}

/** Creates the product and its variants in the caller's transaction: a bad variant rolls the whole thing back. */
export async function createProduct(trx: Db, access: Access, input: ProductInput): Promise<ProductJson> {
  await assertSkusFree(trx, access.workspaceId, 'product', [input.sku]);
  const [row] = await guardSku(() => trx('products').insert({ ...givenFields(input, productEditable), workspace_id: access.workspaceId }).returning('id'));
  await insertVariants(trx, access.workspaceId, row.id, input.variants ?? []);
  return getProduct(trx, access, row.id);
}

async function lockProduct(trx: Db, workspaceId: number, id: number): Promise<void> {
  const locked = await scoped(trx, 'products', workspaceId).where({ id }).forUpdate().first('id');
  if (!locked) throw new NotFound('Product not found.');
}

/** Partial update: omitted fields keep their value. Variants are changed through their own endpoints. */
export async function updateProduct(trx: Db, access: Access, id: number, input: ProductChanges): Promise<ProductJson> {
  await lockProduct(trx, access.workspaceId, id);
  const changes = givenFields(input, productEditable);
  if (Object.keys(changes).length === 0) return getProduct(trx, access, id);
  if (typeof changes.sku === 'string') await assertSkusFree(trx, access.workspaceId, 'product', [changes.sku], id);
  await guardSku(() => scoped(trx, 'products', access.workspaceId).where({ id }).update({ ...changes, updated_at: trx.fn.now() }));
  return getProduct(trx, access, id);
}

/** Deletes the product; its variants go with it (FK cascade). Returns the snapshot taken before removal. */
export async function deleteProduct(trx: Db, access: Access, id: number): Promise<ProductJson> {
  await lockProduct(trx, access.workspaceId, id);
  const product = await getProduct(trx, access, id);
  await scoped(trx, 'products', access.workspaceId).where({ id }).delete();
  return product;
}

/** A variant change also changes the product's JSON, so the product's updated_at moves with it. */
export async function touchProducts(trx: Db, workspaceId: number, productIds: number[]): Promise<void> {
  if (productIds.length) await scoped(trx, 'products', workspaceId).whereIn('id', productIds).update({ updated_at: trx.fn.now() });
}

const touchProduct = (trx: Db, workspaceId: number, productId: number) => touchProducts(trx, workspaceId, [productId]);

async function lockVariant(trx: Db, workspaceId: number, productId: number, variantId: number): Promise<void> {
  await lockProduct(trx, workspaceId, productId);
  const locked = await scoped(trx, 'variants', workspaceId).where({ id: variantId, product_id: productId }).forUpdate().first('id');
  if (!locked) throw new NotFound('Variant not found.');
}

export interface VariantResult {
  variant: VariantJson;
  product: ProductJson;
}

export async function addVariant(trx: Db, access: Access, productId: number, input: VariantInput): Promise<VariantResult> {
  await lockProduct(trx, access.workspaceId, productId);
  const [variantId] = await insertVariants(trx, access.workspaceId, productId, [input]);
  await touchProduct(trx, access.workspaceId, productId);
  return { variant: await getVariant(trx, access.workspaceId, variantId), product: await getProduct(trx, access, productId) };
}

export async function updateVariant(trx: Db, access: Access, productId: number, variantId: number, input: VariantChanges): Promise<VariantResult> {
  await lockVariant(trx, access.workspaceId, productId, variantId);
  const changes = variantColumns(input);
  if (Object.keys(changes).length > 0) {
    if (typeof changes.sku === 'string') await assertSkusFree(trx, access.workspaceId, 'variant', [changes.sku], variantId);
    await guardSku(() => scoped(trx, 'variants', access.workspaceId).where({ id: variantId }).update({ ...changes, updated_at: trx.fn.now() }));
    await touchProduct(trx, access.workspaceId, productId);
  }
  return { variant: await getVariant(trx, access.workspaceId, variantId), product: await getProduct(trx, access, productId) };
}

export async function deleteVariant(trx: Db, access: Access, productId: number, variantId: number): Promise<VariantResult> {
  await lockVariant(trx, access.workspaceId, productId, variantId);
  const variant = await getVariant(trx, access.workspaceId, variantId);
  await scoped(trx, 'variants', access.workspaceId).where({ id: variantId }).delete();
  await touchProduct(trx, access.workspaceId, productId);
  return { variant, product: await getProduct(trx, access, productId) };
}

// ---------------------------------------------------------------------------------------------
// Many at once, by SKU (an import's batch)
// ---------------------------------------------------------------------------------------------

/** A product as a set-based write stores it, keyed by SKU. */
export interface ProductValues {
  sku: string;
  name: string;
  type: string;
  status: string;
  brand: string | null;
  category: string | null;
  description: string | null;
}

export interface StoredProduct extends ProductValues {
  id: number;
}

/** A variant as a set-based write stores it, keyed by SKU; price as numeric(14,2) prints it. */
export interface VariantValues {
  sku: string;
  product_id: number;
  name: string | null;
  price: string | null;
  attributes: Record<string, unknown>;
}

export interface StoredVariant {
  sku: string;
  product_sku: string;
  name: string | null;
  price: string | null;
  attributes: Record<string, unknown>;
}

/** Creates or updates products by SKU in one statement; answers each SKU's id. */
export async function upsertProducts(trx: Db, workspaceId: number, products: ProductValues[]): Promise<Map<string, number>> {
  if (products.length === 0) return new Map();
  const { rows } = await trx.raw(
    `insert into products (workspace_id, sku, name, type, status, brand, category, description)
     select ?, r.sku, r.name, r.type, r.status, r.brand, r.category, r.description
       from json_to_recordset(?::json) as r(sku text, name text, type text, status text, brand text, category text, description text)
     on conflict (workspace_id, sku) do update set name = excluded.name, type = excluded.type, status = excluded.status,
       brand = excluded.brand, category = excluded.category, description = excluded.description, updated_at = now()
     returning id, sku`,
    [workspaceId, JSON.stringify(products)],
  );
  return new Map((rows as { id: number; sku: string }[]).map(({ id, sku }) => [sku, id]));
}

/** Creates or updates variants by SKU in one statement. Their products' updated_at is the caller's (touchProducts). */
export async function upsertVariants(trx: Db, workspaceId: number, variants: VariantValues[]): Promise<void> {
  if (variants.length === 0) return;
  await trx.raw(
    `insert into variants (workspace_id, product_id, sku, name, price, attributes)
     select ?, r.product_id, r.sku, r.name, r.price, coalesce(r.attributes, '{}'::json)
       from json_to_recordset(?::json) as r(product_id int, sku text, name text, price numeric, attributes json)
     on conflict (workspace_id, sku) do update set name = excluded.name, price = excluded.price, attributes = excluded.attributes, updated_at = now()`,
    [workspaceId, JSON.stringify(variants)],
  );
}

/** Whether the workspace holds any products, and any variants. */
export async function catalogueHeld(db: Db, workspaceId: number): Promise<{ products: boolean; variants: boolean }> {
  const { rows } = await db.raw(
    `select exists (select 1 from products where workspace_id = ?) as products, exists (select 1 from variants where workspace_id = ?) as variants`,
    [workspaceId, workspaceId],
  );
  return rows[0];
}

/*
 * Lookups by key are driven from the batch's keys, one probe of the unique index each, whatever the
 * statistics say. Two things keep it so: a LATERAL with LIMIT 1 is never flattened into a join, and the
 * workspace id is given as `(select ?)`, a value unknown when planning. A literal id of a workspace the
 * statistics have not seen (a new one, whose rows this very import is adding) is estimated at one row,
 * and then any index starting with workspace_id looks as good, e.g. (workspace_id, id): a scan of every
 * row of the workspace per key, quadratic over an import. ANALYZE after the import cannot help here.
 */

/** The stored variants of these SKUs, with their product's SKU, by SKU. */
export async function variantsBySku(db: Db, workspaceId: number, skus: string[]): Promise<Map<string, StoredVariant>> {
  const { rows } = await db.raw(
    `select v.sku, v.product_sku, v.name, v.price, v.attributes
       from json_array_elements_text(?::json) as k(sku)
       cross join lateral (select v.sku, p.sku as product_sku, v.name, v.price::text as price, v.attributes
                             from variants v join products p on p.id = v.product_id
                            where v.workspace_id = (select ?::int) and v.sku = k.sku limit 1) v`,
    [JSON.stringify(skus), workspaceId],
  );
  return new Map((rows as StoredVariant[]).map((row) => [row.sku, row]));
}

/** The stored products of these SKUs, by SKU. */
export async function productsBySku(db: Db, workspaceId: number, skus: string[]): Promise<Map<string, StoredProduct>> {
  if (skus.length === 0) return new Map();
  const { rows } = await db.raw(
    `select p.* from json_array_elements_text(?::json) as k(sku)
       cross join lateral (select id, sku, name, type, status, brand, category, description
                             from products where workspace_id = (select ?::int) and sku = k.sku limit 1) p`,
    [JSON.stringify(skus), workspaceId],
  );
  return new Map((rows as StoredProduct[]).map((row) => [row.sku, row]));
}
