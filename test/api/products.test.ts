import test from 'ava';
import { signUpOwner, type Owner } from '../helpers/app.js';
import { useOwnerApp } from '../helpers/fixture.js';
import { usingPostgres } from '../helpers/database.js';
import { testWhen } from '../helpers/skip.js';
import { skuConflict } from '../../src/products/service.js';

const { app, owner } = useOwnerApp(test);

let counter = 0;
/** A SKU no other test uses. */
const sku = (prefix = 'SKU') => `${prefix}-${++counter}`;

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

async function createProduct(who: Owner, body: Record<string, unknown>) {
  const res = await who.client.post('/api/v1/products', body);
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.text}`);
  return res.body.data.product;
}

async function rowCounts(workspaceId: number) {
  const [products, variants] = await Promise.all([
    app.db('products').where({ workspace_id: workspaceId }).count<{ count: string }[]>({ count: '*' }),
    app.db('variants').where({ workspace_id: workspaceId }).count<{ count: string }[]>({ count: '*' }),
  ]);
  return { products: Number(products[0].count), variants: Number(variants[0].count) };
}

test('create with variants: 201, defaults, embedded variants ordered by id, money as two-decimal strings', async (t) => {
  const productSku = sku('TEE');
  const res = await owner.client.post('/api/v1/products', {
    sku: `  ${productSku} `,
    name: ' Tee ',
    brand: 'Acme',
    variants: [
      { sku: `${productSku}-S`, name: 'Small', price: 12.5, attributes: { size: 'S' } },
      { sku: `${productSku}-M`, price: '13' },
      { sku: `${productSku}-L`, price: '0014.05' },
      { sku: `${productSku}-XL` },
    ],
  });
  t.is(res.status, 201);
  const product = res.body.data.product;
  t.like(product, { sku: productSku, name: 'Tee', type: 'physical', status: 'active', brand: 'Acme', category: null, description: null });
  t.regex(product.created_at, ISO);
  t.regex(product.updated_at, ISO);
  t.is(product.variants.length, 4);
  t.deepEqual(product.variants.map((v: { price: string | null }) => v.price), ['12.50', '13.00', '14.05', null]);
  t.deepEqual(product.variants.map((v: { sku: string }) => v.sku), [`${productSku}-S`, `${productSku}-M`, `${productSku}-L`, `${productSku}-XL`]);
  const ids = product.variants.map((v: { id: number }) => v.id);
  t.deepEqual(ids, [...ids].sort((a, b) => a - b));
  t.like(product.variants[0], { product_id: product.id, name: 'Small', attributes: { size: 'S' } });
  t.deepEqual(product.variants[1].attributes, {});
  t.is(product.variants[1].name, null);
  t.regex(product.variants[0].created_at, ISO);
  // The price is text in the raw JSON too, never a number.
  const raw = await owner.client.get(`/api/v1/products/${product.id}`);
  t.true(raw.text.includes('"price":"12.50"'));
  t.false(/"price":\d/.test(raw.text));
  t.deepEqual(raw.body.data.product, product);
  const list = await owner.client.get('/api/v1/products');
  t.deepEqual(list.body.data.products.find((p: { id: number }) => p.id === product.id), product, 'list and single read agree');
});

test('create without variants embeds an empty array; type and status can be chosen', async (t) => {
  const product = await createProduct(owner, { sku: sku(), name: 'Consulting hour', type: 'service', status: 'draft', category: 'Services', description: 'One hour' });
  t.like(product, { type: 'service', status: 'draft', category: 'Services', description: 'One hour' });
  t.deepEqual(product.variants, []);
});

test('read, partial update (PUT = PATCH), and delete with its variants', async (t) => {
  const product = await createProduct(owner, { sku: sku(), name: 'Mug', brand: 'Acme', variants: [{ sku: sku('MUG'), price: 8 }] });
  const patched = await owner.client.patch(`/api/v1/products/${product.id}`, { description: 'Ceramic', status: 'archived' });
  t.is(patched.status, 200);
  t.like(patched.body.data.product, { name: 'Mug', brand: 'Acme', description: 'Ceramic', status: 'archived', sku: product.sku });
  t.deepEqual(patched.body.data.product.variants, product.variants);
  const newSku = sku('MUG-NEW');
  const put = await owner.client.put(`/api/v1/products/${product.id}`, { name: 'Big mug', sku: newSku, brand: null });
  t.is(put.status, 200);
  t.like(put.body.data.product, { name: 'Big mug', sku: newSku, brand: null, description: 'Ceramic', status: 'archived', type: 'physical' });
  const empty = await owner.client.put(`/api/v1/products/${product.id}`, {});
  t.deepEqual(empty.body.data.product, put.body.data.product, 'an empty update changes nothing');
  const ignored = await owner.client.patch(`/api/v1/products/${product.id}`, { variants: [] });
  t.is(ignored.body.data.product.variants.length, 1, 'variants are not changed through the product');

  for (const [input, field] of [
    [{ name: '' }, 'name'],
    [{ name: null }, 'name'],
    [{ sku: '  ' }, 'sku'],
    [{ type: 'vapour' }, 'type'],
    [{ status: 'deleted' }, 'status'],
  ] as const) {
    const res = await owner.client.patch(`/api/v1/products/${product.id}`, input);
    t.is(res.status, 422, JSON.stringify(input));
    t.regex(res.body.error, new RegExp(`^${field}`));
  }

  const current = (await owner.client.get(`/api/v1/products/${product.id}`)).body.data.product;
  const deleted = await owner.client.delete(`/api/v1/products/${product.id}`);
  t.is(deleted.status, 200);
  t.deepEqual(deleted.body.data.product, current);
  t.is((await owner.client.get(`/api/v1/products/${product.id}`)).status, 404);
  t.is((await owner.client.delete(`/api/v1/products/${product.id}`)).status, 404);
  t.is((await app.db('variants').where({ product_id: product.id })).length, 0, 'variants cascade');
});

test('variants: add (201 with variant and product), partial update (PUT = PATCH), delete (snapshot)', async (t) => {
  const product = await createProduct(owner, { sku: sku(), name: 'Hoodie' });
  const variantSku = sku('HOOD');
  const added = await owner.client.post(`/api/v1/products/${product.id}/variants`, { sku: variantSku, name: 'Red', price: '39.9', attributes: { colour: 'red' } });
  t.is(added.status, 201);
  const variant = added.body.data.variant;
  t.like(variant, { product_id: product.id, sku: variantSku, name: 'Red', price: '39.90', attributes: { colour: 'red' } });
  t.deepEqual(added.body.data.product.variants, [variant]);
  t.deepEqual((await owner.client.get(`/api/v1/products/${product.id}`)).body.data.product, added.body.data.product);

  const base = `/api/v1/products/${product.id}/variants/${variant.id}`;
  const patched = await owner.client.patch(base, { price: 41 });
  t.is(patched.status, 200);
  t.like(patched.body.data.variant, { sku: variantSku, name: 'Red', price: '41.00', attributes: { colour: 'red' } });
  const put = await owner.client.put(base, { name: 'Crimson', attributes: { shade: 'dark' } });
  t.like(put.body.data.variant, { sku: variantSku, name: 'Crimson', price: '41.00' });
  t.deepEqual(put.body.data.variant.attributes, { shade: 'dark' }, 'attributes are replaced, not merged');
  t.deepEqual(put.body.data.product.variants, [put.body.data.variant]);
  const cleared = await owner.client.patch(base, { price: null, name: '' });
  t.like(cleared.body.data.variant, { price: null, name: null });
  const second = await owner.client.post(`/api/v1/products/${product.id}/variants`, { sku: sku('HOOD') });
  t.deepEqual(second.body.data.variant.attributes, {});
  t.deepEqual(second.body.data.product.variants.map((v: { id: number }) => v.id), [variant.id, second.body.data.variant.id]);

  const deleted = await owner.client.delete(base);
  t.is(deleted.status, 200);
  t.deepEqual(deleted.body.data.variant, cleared.body.data.variant);
  t.deepEqual(deleted.body.data.product.variants, [second.body.data.variant]);
  t.is((await owner.client.delete(base)).status, 404);
  t.is((await owner.client.patch(base, { name: 'x' })).status, 404);
});

test('a variant id of another product is 404; bad ids are 400; unknown product is 404', async (t) => {
  const a = await createProduct(owner, { sku: sku(), name: 'A', variants: [{ sku: sku('A') }] });
  const b = await createProduct(owner, { sku: sku(), name: 'B' });
  const variantId = a.variants[0].id;
  t.is((await owner.client.patch(`/api/v1/products/${b.id}/variants/${variantId}`, { name: 'x' })).status, 404);
  t.is((await owner.client.put(`/api/v1/products/${b.id}/variants/${variantId}`, { name: 'x' })).status, 404);
  t.is((await owner.client.delete(`/api/v1/products/${b.id}/variants/${variantId}`)).status, 404);
  t.is((await owner.client.get(`/api/v1/products/${a.id}`)).body.data.product.variants.length, 1);
  t.is((await owner.client.get('/api/v1/products/abc')).status, 400);
  t.is((await owner.client.delete(`/api/v1/products/${a.id}/variants/0`)).status, 400);
  t.is((await owner.client.patch(`/api/v1/products/${a.id}/variants/x1`, {})).status, 400);
  t.is((await owner.client.post('/api/v1/products/99999999/variants', { sku: sku() })).status, 404);
  t.is((await owner.client.get('/api/v1/products/99999999')).status, 404);
});

test('money validation: 422 naming the field, nothing written', async (t) => {
  const fresh = await signUpOwner(app, 'Money');
  for (const price of ['1.234', '-1', -1, 'abc', '1e3', '12.', '', 0.001, 1e-7, 1e21, '1000000000000', true, {}, [1]]) {
    const res = await fresh.client.post('/api/v1/products', { sku: 'P', name: 'P', variants: [{ sku: 'V1', price: '1' }, { sku: 'V2', price }] });
    if (price === '') {
      // An empty string means no price, as null does.
      t.is(res.status, 201);
      t.is(res.body.data.product.variants[1].price, null);
      await fresh.client.delete(`/api/v1/products/${res.body.data.product.id}`);
      continue;
    }
    t.is(res.status, 422, JSON.stringify(price));
    t.regex(res.body.error, /^variants\.1\.price: /, JSON.stringify(price));
  }
  t.regex((await fresh.client.post('/api/v1/products', { sku: 'P', name: 'P', variants: [{ sku: 'V', price: '-1' }] })).body.error, /zero or more/);
  t.regex((await fresh.client.post('/api/v1/products', { sku: 'P', name: 'P', variants: [{ sku: 'V', price: '1.234' }] })).body.error, /2 decimal/);
  t.deepEqual(await rowCounts(fresh.workspace.id), { products: 0, variants: 0 });

  const product = await createProduct(fresh, { sku: 'P', name: 'P' });
  const bad = await fresh.client.post(`/api/v1/products/${product.id}/variants`, { sku: 'V', price: '1.234' });
  t.is(bad.status, 422);
  t.regex(bad.body.error, /^price: /);
  const ok = await fresh.client.post(`/api/v1/products/${product.id}/variants`, { sku: 'V', price: '999999999999.99' });
  t.is(ok.body.data.variant.price, '999999999999.99');
  const variantUrl = `/api/v1/products/${product.id}/variants/${ok.body.data.variant.id}`;
  for (const price of ['abc', '-0.5', '0.125']) {
    const res = await fresh.client.patch(variantUrl, { price });
    t.is(res.status, 422);
    t.regex(res.body.error, /^price: /);
  }
  t.is((await fresh.client.patch(variantUrl, { price: 0 })).body.data.variant.price, '0.00');
  t.is((await fresh.client.patch(variantUrl, { price: '0.1' })).body.data.variant.price, '0.10');
  t.is((await fresh.client.patch(variantUrl, { price: 0.29 })).body.data.variant.price, '0.29');
  t.is((await fresh.client.patch(variantUrl, { price: ' 7.5 ' })).body.data.variant.price, '7.50');
});

test('other validation: 422 naming the field, nothing written', async (t) => {
  const fresh = await signUpOwner(app, 'Validation');
  for (const [input, field] of [
    [{}, 'sku'],
    [{ sku: 'P' }, 'name'],
    [{ sku: 'P', name: '  ' }, 'name'],
    [{ sku: 'P', name: 'P', type: 'food' }, 'type'],
    [{ sku: 'P', name: 'P', status: 'gone' }, 'status'],
    [{ sku: 'P', name: 'P', brand: 'b'.repeat(201) }, 'brand'],
    [{ sku: 'P', name: 'P', variants: 'none' }, 'variants'],
    [{ sku: 'P', name: 'P', variants: [{ name: 'no sku' }] }, 'variants.0.sku'],
    [{ sku: 'P', name: 'P', variants: [{ sku: 'V', attributes: [1, 2] }] }, 'variants.0.attributes'],
    [{ sku: 'P', name: 'P', variants: [{ sku: 'V', attributes: 'red' }] }, 'variants.0.attributes'],
  ] as const) {
    const res = await fresh.client.post('/api/v1/products', input);
    t.is(res.status, 422, JSON.stringify(input));
    t.regex(res.body.error, new RegExp(`^${field.replace(/\./g, '\\.')}[ :]`), JSON.stringify(input));
  }
  t.deepEqual(await rowCounts(fresh.workspace.id), { products: 0, variants: 0 });
});

test('duplicate SKUs: 409 naming the SKU (product and variant, across requests), 422 within one body, fine in another workspace', async (t) => {
  const fresh = await signUpOwner(app, 'Dupes');
  const product = await createProduct(fresh, { sku: 'ABC-1', name: 'First', variants: [{ sku: 'ABC-1-RED' }, { sku: 'ABC-1-BLUE' }] });

  const sameProduct = await fresh.client.post('/api/v1/products', { sku: 'ABC-1', name: 'Second' });
  t.is(sameProduct.status, 409);
  t.is(sameProduct.body.error, 'SKU "ABC-1" is already used by another product.');

  const sameVariant = await fresh.client.post('/api/v1/products', { sku: 'ABC-2', name: 'Second', variants: [{ sku: 'NEW-1' }, { sku: 'ABC-1-BLUE' }] });
  t.is(sameVariant.status, 409);
  t.is(sameVariant.body.error, 'SKU "ABC-1-BLUE" is already used by another variant.');

  const inBody = await fresh.client.post('/api/v1/products', { sku: 'ABC-3', name: 'Third', variants: [{ sku: 'TWIN' }, { sku: ' TWIN ' }] });
  t.is(inBody.status, 422);
  t.regex(inBody.body.error, /^variants\.1\.sku: .*"TWIN"/);

  const added = await fresh.client.post(`/api/v1/products/${product.id}/variants`, { sku: 'ABC-1-RED' });
  t.is(added.status, 409);
  t.is(added.body.error, 'SKU "ABC-1-RED" is already used by another variant.');

  const other = await createProduct(fresh, { sku: 'ABC-9', name: 'Other', variants: [{ sku: 'ABC-9-X' }] });
  const renamed = await fresh.client.patch(`/api/v1/products/${other.id}`, { sku: 'ABC-1' });
  t.is(renamed.status, 409);
  t.regex(renamed.body.error, /"ABC-1"/);
  const renamedVariant = await fresh.client.put(`/api/v1/products/${other.id}/variants/${other.variants[0].id}`, { sku: 'ABC-1-RED' });
  t.is(renamedVariant.status, 409);
  t.regex(renamedVariant.body.error, /"ABC-1-RED"/);
  // Keeping one's own SKU is no conflict; product and variant SKUs are separate namespaces.
  t.is((await fresh.client.patch(`/api/v1/products/${product.id}`, { sku: 'ABC-1' })).status, 200);
  t.is((await fresh.client.patch(`/api/v1/products/${product.id}/variants/${product.variants[0].id}`, { sku: 'ABC-1-RED' })).status, 200);
  t.is((await fresh.client.post(`/api/v1/products/${product.id}/variants`, { sku: 'ABC-9' })).status, 201);
  // SKUs are compared exactly.
  t.is((await fresh.client.post('/api/v1/products', { sku: 'abc-1', name: 'Lower' })).status, 201);

  // The same SKUs in another workspace are fine.
  const elsewhere = await signUpOwner(app, 'Elsewhere');
  const copy = await elsewhere.client.post('/api/v1/products', { sku: 'ABC-1', name: 'First', variants: [{ sku: 'ABC-1-RED' }] });
  t.is(copy.status, 201);
});

test('nothing half-written when a variant fails inside the create transaction', async (t) => {
  const fresh = await signUpOwner(app, 'Atomic');
  await createProduct(fresh, { sku: 'KEEP', name: 'Keep', variants: [{ sku: 'TAKEN' }] });
  const before = await rowCounts(fresh.workspace.id);
  t.deepEqual(before, { products: 1, variants: 1 });
  // The product row is inserted before the variants are checked: the 409 must roll it back.
  const res = await fresh.client.post('/api/v1/products', { sku: 'NEW', name: 'New', variants: [{ sku: 'FREE-1', price: 1 }, { sku: 'TAKEN' }] });
  t.is(res.status, 409);
  t.regex(res.body.error, /"TAKEN"/);
  t.deepEqual(await rowCounts(fresh.workspace.id), before);
  t.is((await app.db('products').where({ workspace_id: fresh.workspace.id, sku: 'NEW' })).length, 0);
  // And the SKU is free for a good request afterwards.
  t.is((await fresh.client.post('/api/v1/products', { sku: 'NEW', name: 'New', variants: [{ sku: 'FREE-1' }] })).status, 201);
});

test('concurrent creates with the same SKU: one 201, the others 409 naming it (never 500)', async (t) => {
  const fresh = await signUpOwner(app, 'Race');
  const results = await Promise.all(
    Array.from({ length: 8 }, (_, i) => fresh.client.post('/api/v1/products', { sku: `RACE-${i}`, name: 'Racer', variants: [{ sku: 'RACE-V' }] })),
  );
  const statuses = results.map((r) => r.status).sort();
  t.deepEqual(statuses, [201, 409, 409, 409, 409, 409, 409, 409]);
  for (const r of results.filter((r) => r.status === 409)) t.is(r.body.error, 'SKU "RACE-V" is already used by another variant.');
  t.deepEqual(await rowCounts(fresh.workspace.id), { products: 1, variants: 1 });
});

test('a unique violation from the database maps to the same 409 message', async (t) => {
  const fresh = await signUpOwner(app, 'Mapping');
  const product = await createProduct(fresh, { sku: 'MAP-"1"', name: 'Map', variants: [{ sku: 'MAP, V (1)' }] });
  const violation = async (fn: () => Promise<unknown>) => {
    try {
      await fn();
    } catch (err) {
      return err;
    }
    throw new Error('expected a unique violation');
  };
  const productErr = await violation(() => app.db('products').insert({ workspace_id: fresh.workspace.id, sku: 'MAP-"1"', name: 'Dup' }));
  t.is(skuConflict(productErr)?.message, 'SKU "MAP-"1"" is already used by another product.');
  t.is(skuConflict(productErr)?.status, 409);
  const variantErr = await violation(() => app.db('variants').insert({ workspace_id: fresh.workspace.id, product_id: product.id, sku: 'MAP, V (1)' }));
  t.is(skuConflict(variantErr)?.message, 'SKU "MAP, V (1)" is already used by another variant.');
  t.is(skuConflict(new Error('other')), undefined);
  t.is(skuConflict(Object.assign(new Error('dup'), { code: '23505', constraint: 'customers_workspace_id_email_unique' })), undefined);
});

test('list filters: type, status (422 outside their values), brand exact (empty ignored); q over name, SKU and variant SKU, case-insensitive, literal % and _', async (t) => {
  const fresh = await signUpOwner(app, 'Filters');
  const widget = await createProduct(fresh, { sku: 'WID-1', name: 'Blue Widget', type: 'physical', status: 'active', brand: 'Acme', variants: [{ sku: 'WID-1-ZZTOP' }] });
  const ebook = await createProduct(fresh, { sku: 'EB_2', name: 'Cooking 100% ebook', type: 'digital', status: 'draft', brand: 'Acme Books' });
  const service = await createProduct(fresh, { sku: 'SRV-3', name: 'Setup', type: 'service', status: 'archived', variants: [{ sku: 'SRV-3-a' }, { sku: 'SRV-3-b' }] });
  const ids = async (query: string) => {
    const res = await fresh.client.get(`/api/v1/products${query}`);
    t.is(res.status, 200, query);
    return res.body.data.products.map((p: { id: number }) => p.id);
  };
  t.deepEqual(await ids(''), [widget.id, ebook.id, service.id], 'ordered by id');
  t.deepEqual(await ids('?type=digital'), [ebook.id]);
  t.deepEqual(await ids('?status=archived'), [service.id]);
  t.deepEqual(await ids('?brand=Acme'), [widget.id], 'brand is exact, not a substring');
  t.deepEqual(await ids('?brand=acme'), [], 'brand is exact, case included');
  t.deepEqual(await ids('?type=physical&status=draft'), []);
  t.deepEqual(await ids('?type=&status=&brand=&q='), [widget.id, ebook.id, service.id], 'empty filters are ignored');
  const nonsense = await fresh.client.get('/api/v1/products?type=nonsense');
  t.is(nonsense.status, 422);
  t.regex(nonsense.body.error, /^type: must be one of physical, digital, service/);
  t.deepEqual(await ids('?q=widget'), [widget.id], 'name, case-insensitive');
  t.deepEqual(await ids('?q=BLUE%20W'), [widget.id]);
  t.deepEqual(await ids('?q=srv-3'), [service.id], 'product SKU');
  t.deepEqual(await ids('?q=zztop'), [widget.id], 'variant SKU, case-insensitive');
  t.deepEqual(await ids('?q=3-B'), [service.id]);
  t.deepEqual(await ids('?q=%25'), [ebook.id], '% is literal');
  t.deepEqual(await ids('?q=0%25%20e'), [ebook.id]);
  t.deepEqual(await ids('?q=_'), [ebook.id], '_ is literal');
  t.deepEqual(await ids('?q=W_D'), [], '_ is not a wildcard');
  t.deepEqual(await ids('?q=%5C'), [], 'a backslash is literal');
  t.deepEqual(await ids('?q=nothing-like-this'), []);
  t.deepEqual(await ids('?q=acme&brand=Acme'), [], 'q does not search the brand');
  t.deepEqual(await ids('?q=1&type=physical'), [widget.id], 'filters combine');
  const res = await fresh.client.get('/api/v1/products?q=zztop');
  t.deepEqual(res.body.data.products[0], widget, 'list items are the full product with every variant');
  const none = await fresh.client.get('/api/v1/products?q=nothing');
  t.is(none.text, '{"version":"v1","data":{"products":[]}}');
});

test('another workspace cannot see or touch the products or variants (404)', async (t) => {
  const product = await createProduct(owner, { sku: sku('PRIV'), name: 'Private', variants: [{ sku: sku('PRIV-V') }] });
  const variantUrl = `/api/v1/products/${product.id}/variants/${product.variants[0].id}`;
  const other = await signUpOwner(app, 'Other');
  t.is((await other.client.get(`/api/v1/products/${product.id}`)).status, 404);
  t.is((await other.client.patch(`/api/v1/products/${product.id}`, { name: 'x' })).status, 404);
  t.is((await other.client.put(`/api/v1/products/${product.id}`, { name: 'x' })).status, 404);
  t.is((await other.client.delete(`/api/v1/products/${product.id}`)).status, 404);
  t.is((await other.client.post(`/api/v1/products/${product.id}/variants`, { sku: sku() })).status, 404);
  t.is((await other.client.patch(variantUrl, { name: 'x' })).status, 404);
  t.is((await other.client.delete(variantUrl)).status, 404);
  const own = await createProduct(other, { sku: sku(), name: 'Mine' });
  t.is((await other.client.patch(`/api/v1/products/${own.id}/variants/${product.variants[0].id}`, { name: 'x' })).status, 404);
  t.deepEqual((await other.client.get(`/api/v1/products?q=${encodeURIComponent(product.sku)}`)).body.data.products, []);
  t.false((await other.client.get('/api/v1/products')).body.data.products.some((p: { id: number }) => p.id === product.id));
  t.deepEqual((await owner.client.get(`/api/v1/products/${product.id}`)).body.data.product, product, 'untouched');
  t.is((await app.client().get('/api/v1/products')).status, 401);
});

test('variant changes move the product updated_at; products emit no events', async (t) => {
  const fresh = await signUpOwner(app, 'Quiet');
  const product = await createProduct(fresh, { sku: 'Q', name: 'Q' });
  await app.db('products').where({ id: product.id }).update({ updated_at: new Date('2020-01-01T00:00:00Z') });
  const added = await fresh.client.post(`/api/v1/products/${product.id}/variants`, { sku: 'Q-1' });
  t.not(added.body.data.product.updated_at, '2020-01-01T00:00:00.000Z');
  await fresh.client.patch(`/api/v1/products/${product.id}`, { name: 'Q2' });
  await fresh.client.delete(`/api/v1/products/${product.id}`);
  t.is((await app.db('events').where({ workspace_id: fresh.workspace.id })).length, 0);
});

test.serial('the list is one query that stays fast with many products', async (t) => {
  const fresh = await signUpOwner(app, 'Bulk');
  const n = usingPostgres ? 10_000 : 1_000;
  const ws = fresh.workspace.id;
  await app.db.raw(
    `insert into products (workspace_id, sku, name, type, status, brand)
     select ?, 'BULK-' || i, 'Bulk product ' || i, (array['physical','digital','service'])[1 + i % 3], 'active', 'Brand ' || (i % 10)
     from generate_series(1, ?) i`,
    [ws, n],
  );
  await app.db.raw(
    `insert into variants (workspace_id, product_id, sku, name, price, attributes)
     select p.workspace_id, p.id, p.sku || '-' || k, 'V' || k, (k * 10 + 0.5)::numeric(14,2), jsonb_build_object('k', k)
     from products p cross join generate_series(1, 3) k where p.workspace_id = ?`,
    [ws],
  );
  await app.db.raw('analyze products');
  await app.db.raw('analyze variants');
  const started = performance.now();
  const res = await fresh.client.get('/api/v1/products');
  const ms = performance.now() - started;
  t.is(res.status, 200);
  t.is(res.body.data.products.length, n);
  t.deepEqual(res.body.data.products[0].variants.map((v: { price: string }) => v.price), ['10.50', '20.50', '30.50']);
  t.log(`${n} products × 3 variants listed in ${Math.round(ms)} ms`);
  const searched = await fresh.client.get('/api/v1/products?q=bulk-9999-3&brand=Brand%209');
  t.is(searched.body.data.products.length, usingPostgres ? 1 : 0);
});

test('text PostgreSQL cannot store (NUL, unpaired surrogates) is a 422 naming the field, never a 500', async (t) => {
  const fresh = await signUpOwner(app, 'Nul');
  for (const [input, field] of [
    [{ sku: 'P\u0000', name: 'P' }, 'sku'],
    [{ sku: 'P', name: 'P', description: 'a\u0000b' }, 'description'],
    [{ sku: 'P', name: 'P', variants: [{ sku: 'V', name: '\u0000' }] }, 'variants.0.name'],
    [{ sku: 'P', name: 'P', variants: [{ sku: 'V', attributes: { a: 'x\u0000' } }] }, 'variants.0.attributes'],
    [{ sku: 'P', name: 'P', variants: [{ sku: 'V', attributes: { 'k\u0000': 1 } }] }, 'variants.0.attributes'],
    [{ sku: 'P', name: 'P', variants: [{ sku: 'V', attributes: { a: ['\uD800'] } }] }, 'variants.0.attributes'],
  ] as const) {
    const res = await fresh.client.post('/api/v1/products', input);
    t.is(res.status, 422, JSON.stringify(input));
    t.true(res.body.error.startsWith(`${field}: `), res.body.error);
  }
  t.deepEqual(await rowCounts(fresh.workspace.id), { products: 0, variants: 0 });
  const ok = await fresh.client.post('/api/v1/products', { sku: 'P', name: 'P', variants: [{ sku: 'V', attributes: { emoji: '💥', nested: { list: [1, 'two', null] } } }] });
  t.is(ok.status, 201);
  t.deepEqual(ok.body.data.product.variants[0].attributes, { emoji: '💥', nested: { list: [1, 'two', null] } });
  const q = await fresh.client.get('/api/v1/products?q=%00');
  t.is(q.status, 422);
  t.regex(q.body.error, /^q: /);
});

// The product's stored text (list_json) is rewritten by the statement that writes a variant: see migration
// 20261125120000_product_list_json. Two transactions adding variants to one product at once must each read the
// other's committed variant, or the text keeps only one of them.
testWhen(usingPostgres, 'PGlite runs one transaction at a time: set TEST_DATABASE_URL to run it on PostgreSQL')('two transactions adding variants to one product at once: the product holds both, in its list and its read', async (t) => {
  const product = await createProduct(owner, { sku: sku('BOTH'), name: 'Two writers' });
  const insert = (trx: typeof app.db, variantSku: string) =>
    trx.raw(`insert into variants (workspace_id, product_id, sku, name, price) values (?, ?, ?, ?, 5)`, [owner.workspace.id, product.id, variantSku, variantSku]);
  const first = await app.db.transaction();
  const second = await app.db.transaction();
  try {
    await insert(first, `${product.sku}-A`);
    // Sent now (a knex query runs when awaited or then'd); it waits for the first to commit: the first holds the product.
    const waiting = insert(second, `${product.sku}-B`).then(() => undefined);
    // Committed only once the second is seen waiting for its lock, so that the two truly overlap.
    for (let tries = 0; ; tries++) {
      const { rows } = await app.db.raw(`select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`);
      if (rows[0].n > 0) break;
      if (tries > 600) throw new Error('the second transaction never waited for the first');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await first.commit();
    await waiting;
    await second.commit();
  } finally {
    if (!first.isCompleted()) await first.rollback();
    if (!second.isCompleted()) await second.rollback();
  }
  const read = await owner.client.get(`/api/v1/products/${product.id}`);
  t.deepEqual(read.body.data.product.variants.map((v: { sku: string }) => v.sku), [`${product.sku}-A`, `${product.sku}-B`]);
  const listed = (await owner.client.get('/api/v1/products')).body.data.products.find((p: { id: number }) => p.id === product.id);
  t.deepEqual(listed, read.body.data.product);
});
