/** The catalogue's pages: the product list with the API's filters, a product with its variants, and the forms that write them. */
import type { z } from 'zod';
import { NotFound, Validation, type HttpError } from '../errors.js';
import type { AppDeps } from '../http/deps.js';
import type { Principal } from '../http/principal.js';
import { parseInput } from '../schema/parse.js';
import { html, type Html } from '../templates.js';
import { dateText, timeText } from './dates.js';
import { moneyText } from '../money.js';
import { createProductBody, createVariantBody, listProductsQuery, productOut, productStatuses, productTypes, updateProductBody, updateVariantBody, variantOut } from '../products/schema.js';
import { addVariant, createProduct, deleteVariant, getProduct, productPage, updateProduct, updateVariant } from '../products/service.js';
import { page, redirect, type PageDef, type PageInput } from './page.js';
import { shell } from './layout.js';
import { field, fieldErrors, formProblem, formText, select, textarea, type FieldErrors } from './forms.js';
import { badge, pageNumber, pager, withQuery } from './lists.js';

const productsQuery = listProductsQuery.extend({ page: pageNumber });

/** A product and a variant as the API answers them (getProduct's JSON). */
type Product = z.output<typeof productOut>;
type Variant = z.output<typeof variantOut>;

const productFields = ['sku', 'name', 'type', 'status', 'brand', 'category', 'description'] as const;
const variantFields = ['sku', 'name', 'price', 'attributes'] as const;

const label = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);
const options = (values: readonly string[]) => values.map((value) => ({ value, label: label(value) }));

/** A price as a number of cents, to order prices without a float. */
const cents = (price: string) => BigInt((moneyText(price) ?? '0').replace('.', ''));

/**
 * The variants' prices as one text: "12.50", "12.50–20.00", or "—" when none has a price. The catalogue stores
 * prices without a currency (a quote's currency applies when a line takes one), so none is shown.
 */
export function priceRange(variants: readonly { price: string | null }[]): string {
  const prices = variants.map((v) => v.price).filter((p): p is string => p !== null);
  if (prices.length === 0) return '—';
  const sorted = [...prices].sort((a, b) => (cents(a) < cents(b) ? -1 : cents(a) > cents(b) ? 1 : 0));
  const [low, high] = [moneyText(sorted[0])!, moneyText(sorted[sorted.length - 1])!];
  return low === high ? low : `${low}–${high}`;
}

// ---------------------------------------------------------------------------------------------
// Attributes: a textarea of `key: value` lines, or a JSON object for values that are not text
// ---------------------------------------------------------------------------------------------

const attributesHelp = 'One "key: value" per line, e.g. "colour: red". For values other than text, write a JSON object instead.';

/**
 * The attributes textarea in the API's shape (`attributes`, a JSON object): `key: value` lines give text values; a
 * text starting with `{` is read as JSON, so a number or a list can be kept too. The API's schema then checks it.
 */
export function attributesFromText(text: string): unknown {
  const trimmed = text.trim();
  if (trimmed === '') return {};
  if (trimmed.startsWith('{')) {
    try {
      return JSON.parse(trimmed);
    } catch {
      throw new Validation('attributes', 'attributes: that is not valid JSON. Write one "key: value" per line, or a JSON object.');
    }
  }
  // A Map, then fromEntries: a key such as "__proto__" stays an ordinary key.
  const entries = new Map<string, string>();
  text.split(/\r?\n/).forEach((line, index) => {
    if (line.trim() === '') return;
    const colon = line.indexOf(':');
    const key = colon === -1 ? '' : line.slice(0, colon).trim();
    if (key === '') throw new Validation('attributes', `attributes: line ${index + 1} must be "key: value".`);
    if (entries.has(key)) throw new Validation('attributes', `attributes: the key "${key}" is given twice.`);
    entries.set(key, line.slice(colon + 1).trim());
  });
  return Object.fromEntries(entries);
}

/** Stored attributes as the textarea shows them: `key: value` lines when that reads back the same, JSON otherwise. */
export function attributesAsText(attributes: Record<string, unknown>): string {
  const entries = Object.entries(attributes);
  if (entries.length === 0) return '';
  const plain = (s: string) => s === s.trim() && !/[\r\n]/.test(s);
  const asLines = entries.every(([key, value], i) => typeof value === 'string' && key !== '' && plain(key) && !key.includes(':') && plain(value) && !(i === 0 && key.startsWith('{')));
  return asLines ? entries.map(([key, value]) => `${key}: ${String(value)}`).join('\n') : JSON.stringify(attributes, null, 2);
}

const attributeValue = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value));

function attributeList(attributes: Record<string, unknown>): Html {
  const entries = Object.entries(attributes);
  if (entries.length === 0) return html`<span class="muted">—</span>`;
  return html`<ul class="attributes">${entries.map(([key, value]) => html`<li><span class="muted">${key}:</span> ${attributeValue(value)}</li>`)}</ul>`;
}

// ---------------------------------------------------------------------------------------------
// Forms
// ---------------------------------------------------------------------------------------------

/** The product form's fields as the API takes them; an empty optional field clears it, as `""` does there. */
const productBody = (form: Record<string, unknown>) => Object.fromEntries(productFields.map((name) => [name, formText(form, name)]));

function variantBody(form: Record<string, unknown>): Record<string, unknown> {
  return { sku: formText(form, 'sku'), name: formText(form, 'name'), price: formText(form, 'price'), attributes: attributesFromText(formText(form, 'attributes')) };
}

const productValues = (p: Product): Record<string, unknown> => ({
  sku: p.sku, name: p.name, type: p.type, status: p.status, brand: p.brand ?? '', category: p.category ?? '', description: p.description ?? '',
});

const variantValues = (v: Variant): Record<string, unknown> => ({ sku: v.sku, name: v.name ?? '', price: v.price ?? '', attributes: attributesAsText(v.attributes) });

function productForm(action: string, values: Record<string, unknown>, errors: FieldErrors, submit: string, cancel: string): Html {
  return html`<section class="card">
  ${formProblem(errors, productFields)}
  <form method="post" action="${action}" class="stack" novalidate>
    <div class="form-grid">
      ${field({ name: 'name', label: 'Name', value: formText(values, 'name'), errors, required: true })}
      ${field({ name: 'sku', label: 'SKU', value: formText(values, 'sku'), errors, required: true, hint: 'Unique in the workspace, compared exactly.' })}
      ${select({ name: 'type', label: 'Type', value: formText(values, 'type') || 'physical', errors, required: true, options: options(productTypes) })}
      ${select({ name: 'status', label: 'Status', value: formText(values, 'status') || 'active', errors, required: true, options: options(productStatuses) })}
      ${field({ name: 'brand', label: 'Brand', value: formText(values, 'brand'), errors })}
      ${field({ name: 'category', label: 'Category', value: formText(values, 'category'), errors })}
    </div>
    ${textarea({ name: 'description', label: 'Description', value: formText(values, 'description'), errors, rows: 5 })}
    <div class="actions"><button type="submit" class="primary">${submit}</button><a class="button" href="${cancel}">Cancel</a></div>
  </form>
</section>`;
}

function variantForm(action: string, values: Record<string, unknown>, errors: FieldErrors, submit: string, cancel: string): Html {
  return html`<section class="card">
  ${formProblem(errors, variantFields)}
  <form method="post" action="${action}" class="stack" novalidate>
    <div class="form-grid">
      ${field({ name: 'sku', label: 'SKU', value: formText(values, 'sku'), errors, required: true, hint: 'Unique among the workspace\u2019s variants.' })}
      ${field({ name: 'name', label: 'Name', value: formText(values, 'name'), errors })}
      ${field({ name: 'price', label: 'Price', value: formText(values, 'price'), errors, attrs: html` inputmode="decimal"`, hint: 'e.g. 12.50; a quote adds its currency.' })}
    </div>
    ${textarea({ name: 'attributes', label: 'Attributes', value: formText(values, 'attributes'), errors, rows: 5, hint: attributesHelp })}
    <div class="actions"><button type="submit" class="primary">${submit}</button><a class="button" href="${cancel}">Cancel</a></div>
  </form>
</section>`;
}

const back = (href: string, text: string) => html`<p class="back"><a href="${href}">← ${text}</a></p>`;

// ---------------------------------------------------------------------------------------------
// The pages
// ---------------------------------------------------------------------------------------------

export function productPages({ db }: AppDeps): PageDef[] {
  const productOf = async (auth: Principal, id: number) => (await getProduct(db, auth.access, id)) as unknown as Product;

  const variantOf = (product: Product, variantId: number): Variant => {
    const variant = product.variants.find((v) => v.id === variantId);
    if (!variant) throw new NotFound('Variant not found.');
    return variant;
  };

  const listPage = async ({ auth, query, flash }: PageInput<z.output<typeof productsQuery>>) => {
    const { page: number, ...filters } = query;
    const found = await productPage(db, auth.access, filters, number);
    const filtered = Object.values(filters).some((v) => v !== undefined);
    const rows = (found.rows as unknown as Product[]).map(
      (p) => html`<tr>
  <td data-label="Name"><a href="/app/products/${p.id}">${p.name}</a></td>
  <td data-label="SKU">${p.sku}</td>
  <td data-label="Variants" class="num">${p.variants.length}</td>
  <td data-label="Price" class="num">${priceRange(p.variants)}</td>
  <td data-label="Status">${badge(p.status)}</td>
  <td data-label="Updated">${dateText(p.updated_at)}</td>
</tr>`,
    );
    const anyOption = (noun: string) => [{ value: '', label: `Any ${noun}` }];
    return shell(auth, {
      title: 'Products',
      section: 'products',
      flash,
      content: html`<div class="page-head"><h1>Products</h1><a class="button primary" href="/app/products/new">New product</a></div>
<form method="get" action="/app/products" class="filters" role="search" aria-label="Filter products">
  ${field({ name: 'q', label: 'Name or SKU', type: 'search', value: query.q ?? '' })}
  ${select({ name: 'type', label: 'Type', value: query.type ?? '', options: [...anyOption('type'), ...options(productTypes)] })}
  ${select({ name: 'status', label: 'Status', value: query.status ?? '', options: [...anyOption('status'), ...options(productStatuses)] })}
  ${field({ name: 'brand', label: 'Brand (exact)', value: query.brand ?? '' })}
  <button type="submit">Filter</button>
  ${filtered ? html`<a class="button" href="/app/products">Clear</a>` : ''}
</form>
${
  found.rows.length
    ? html`<div class="table-wrap"><table class="list">
  <thead><tr><th scope="col">Name</th><th scope="col">SKU</th><th scope="col" class="num">Variants</th><th scope="col" class="num">Price</th><th scope="col">Status</th><th scope="col">Updated</th></tr></thead>
  <tbody>${rows}</tbody>
</table></div>`
    : html`<p class="empty">${
        found.total > 0
          ? html`This page is past the end of the list. <a href="${withQuery('/app/products', query, { page: 1 })}">Go to the first page</a>.`
          : filtered
            ? 'No products match these filters.'
            : html`No products yet. <a href="/app/products/new">Add the first one</a>.`
      }</p>`
}
${pager('/app/products', query, found, 'products')}`,
    });
  };

  const detailPage = (input: PageInput<unknown>, product: Product) =>
    shell(input.auth, {
      title: product.name,
      section: 'products',
      flash: input.flash,
      content: html`${back('/app/products', 'Products')}
<div class="page-head"><h1>${product.name}</h1>
  <div class="actions"><a class="button" href="/app/products/${product.id}/edit">Edit product</a><a class="button primary" href="/app/products/${product.id}/variants/new">Add a variant</a></div>
</div>
<section class="card">
  <dl class="meta">
    <div><dt>SKU</dt><dd>${product.sku}</dd></div>
    <div><dt>Status</dt><dd>${badge(product.status)}</dd></div>
    <div><dt>Type</dt><dd>${label(product.type)}</dd></div>
    <div><dt>Brand</dt><dd>${product.brand ?? '—'}</dd></div>
    <div><dt>Category</dt><dd>${product.category ?? '—'}</dd></div>
    <div><dt>Price</dt><dd>${priceRange(product.variants)}</dd></div>
    <div><dt>Created</dt><dd>${timeText(product.created_at)}</dd></div>
    <div><dt>Updated</dt><dd>${timeText(product.updated_at)}</dd></div>
  </dl>
  ${product.description ? html`<h2>Description</h2><p class="notes">${product.description}</p>` : ''}
</section>
<section class="card" aria-labelledby="variants-heading">
  <h2 id="variants-heading">Variants <span class="count">${product.variants.length}</span></h2>
  ${
    product.variants.length
      ? html`<div class="table-wrap"><table class="list">
  <thead><tr><th scope="col">SKU</th><th scope="col">Name</th><th scope="col" class="num">Price</th><th scope="col">Attributes</th><th scope="col">Actions</th></tr></thead>
  <tbody>${product.variants.map(
    (v) => html`<tr>
    <td data-label="SKU">${v.sku}</td>
    <td data-label="Name">${v.name ?? '—'}</td>
    <td data-label="Price" class="num">${v.price === null ? '—' : moneyText(v.price)}</td>
    <td data-label="Attributes">${attributeList(v.attributes)}</td>
    <td><div class="row-actions">
      <a class="button small" href="/app/products/${product.id}/variants/${v.id}/edit" aria-label="Edit variant ${v.sku}">Edit</a>
      <form method="post" action="/app/products/${product.id}/variants/${v.id}/delete" data-confirm="Delete the variant ${v.sku}?"><button type="submit" class="small danger" aria-label="Delete variant ${v.sku}">Delete</button></form>
    </div></td>
  </tr>`,
  )}</tbody>
</table></div>`
      : html`<p class="empty">This product has no variants yet. <a href="/app/products/${product.id}/variants/new">Add a variant</a>.</p>`
  }
</section>`,
    });

  const newProductPage = (input: PageInput<unknown>, values: Record<string, unknown>, errors: FieldErrors) =>
    shell(input.auth, {
      title: 'New product',
      section: 'products',
      flash: input.flash,
      content: html`${back('/app/products', 'Products')}<h1>New product</h1>
${productForm('/app/products/new', values, errors, 'Create product', '/app/products')}
<p class="hint">Add its variants (SKUs with prices) once it is created.</p>`,
    });

  const editProductPage = (input: PageInput<unknown>, product: Product, values: Record<string, unknown>, errors: FieldErrors) =>
    shell(input.auth, {
      title: `Edit ${product.name}`,
      section: 'products',
      flash: input.flash,
      content: html`${back(`/app/products/${product.id}`, product.name)}<h1>Edit product</h1>
${productForm(`/app/products/${product.id}/edit`, values, errors, 'Save product', `/app/products/${product.id}`)}`,
    });

  const variantPage = (input: PageInput<unknown>, product: Product, variant: Variant | null, values: Record<string, unknown>, errors: FieldErrors) => {
    const base = `/app/products/${product.id}`;
    return shell(input.auth, {
      title: variant ? `Edit variant ${variant.sku}` : `New variant of ${product.name}`,
      section: 'products',
      flash: input.flash,
      content: html`${back(base, product.name)}<h1>${variant ? 'Edit variant' : 'New variant'}</h1>
<p class="muted">Of ${product.name} (${product.sku})</p>
${variantForm(variant ? `${base}/variants/${variant.id}/edit` : `${base}/variants/new`, values, errors, variant ? 'Save variant' : 'Add variant', base)}`,
    });
  };

  const conflictErrors = (error: HttpError): FieldErrors => ({ sku: error.message });

  return [
    page({ method: 'get', path: '/app/products', who: 'member', query: productsQuery, handle: listPage }),

    page({
      method: 'get', path: '/app/products/new', who: 'member',
      handle: async (input) => newProductPage(input, {}, {}),
    }),
    page({
      method: 'post', path: '/app/products/new', who: 'member',
      handle: async ({ form, auth }) => {
        const body = parseInput(createProductBody, productBody(form));
        const product = await db.transaction((trx) => createProduct(trx, auth.access, body));
        return redirect(`/app/products/${product.id}`, `Product ${body.name} created.`);
      },
      invalid: async (input, error) => newProductPage(input, input.form, fieldErrors(error)),
      conflict: async (input, error) => newProductPage(input, input.form, conflictErrors(error)),
    }),

    page({
      method: 'get', path: '/app/products/{id}', who: 'member',
      handle: async (input) => detailPage(input, await productOf(input.auth, input.params.id)),
    }),

    page({
      method: 'get', path: '/app/products/{id}/edit', who: 'member',
      handle: async (input) => {
        const product = await productOf(input.auth, input.params.id);
        return editProductPage(input, product, productValues(product), {});
      },
    }),
    page({
      method: 'post', path: '/app/products/{id}/edit', who: 'member',
      handle: async ({ form, auth, params }) => {
        const body = parseInput(updateProductBody, productBody(form));
        await db.transaction((trx) => updateProduct(trx, auth.access, params.id, body));
        return redirect(`/app/products/${params.id}`, 'Product saved.');
      },
      invalid: async (input, error) => editProductPage(input, await productOf(input.auth, input.params.id), input.form, fieldErrors(error)),
      conflict: async (input, error) => editProductPage(input, await productOf(input.auth, input.params.id), input.form, conflictErrors(error)),
    }),

    page({
      method: 'get', path: '/app/products/{id}/variants/new', who: 'member',
      handle: async (input) => variantPage(input, await productOf(input.auth, input.params.id), null, {}, {}),
    }),
    page({
      method: 'post', path: '/app/products/{id}/variants/new', who: 'member',
      handle: async ({ form, auth, params }) => {
        const body = parseInput(createVariantBody, variantBody(form));
        await db.transaction((trx) => addVariant(trx, auth.access, params.id, body));
        return redirect(`/app/products/${params.id}`, `Variant ${body.sku} added.`);
      },
      invalid: async (input, error) => variantPage(input, await productOf(input.auth, input.params.id), null, input.form, fieldErrors(error)),
      conflict: async (input, error) => variantPage(input, await productOf(input.auth, input.params.id), null, input.form, conflictErrors(error)),
    }),

    page({
      method: 'get', path: '/app/products/{id}/variants/{variantId}/edit', who: 'member',
      handle: async (input) => {
        const product = await productOf(input.auth, input.params.id);
        const variant = variantOf(product, input.params.variantId);
        return variantPage(input, product, variant, variantValues(variant), {});
      },
    }),
    page({
      method: 'post', path: '/app/products/{id}/variants/{variantId}/edit', who: 'member',
      handle: async ({ form, auth, params }) => {
        const body = parseInput(updateVariantBody, variantBody(form));
        const { variant } = await db.transaction((trx) => updateVariant(trx, auth.access, params.id, params.variantId, body));
        return redirect(`/app/products/${params.id}`, `Variant ${variant.sku} saved.`);
      },
      invalid: async (input, error) => {
        const product = await productOf(input.auth, input.params.id);
        return variantPage(input, product, variantOf(product, input.params.variantId), input.form, fieldErrors(error));
      },
      conflict: async (input, error) => {
        const product = await productOf(input.auth, input.params.id);
        return variantPage(input, product, variantOf(product, input.params.variantId), input.form, conflictErrors(error));
      },
    }),

    page({
      method: 'post', path: '/app/products/{id}/variants/{variantId}/delete', who: 'member',
      handle: async ({ auth, params }) => {
        const { variant } = await db.transaction((trx) => deleteVariant(trx, auth.access, params.id, params.variantId));
        return redirect(`/app/products/${params.id}`, `Variant ${variant.sku} deleted.`);
      },
    }),
  ];
}
