import test from 'ava';
import { signUpOwner, type Owner } from '../helpers/app.js';
import { ok } from '../helpers/client.js';
import { useOwnerApp } from '../helpers/fixture.js';
import { inviteMember, type Member } from '../helpers/members.js';
import { postForm, visibleText } from '../helpers/pages.js';

const { app, owner, smtp } = useOwnerApp(test, { smtp: true });

let other: Owner;
let member: Member;
test.serial.before(async () => {
  other = await signUpOwner(app, 'Other Co');
  member = await inviteMember(app, smtp, owner);
});

let counter = 0;
const sku = (prefix = 'SKU') => `${prefix}-${process.pid}-${++counter}`;

async function apiProduct(who: Owner | Member, body: Record<string, unknown> = {}) {
  const data = await ok(who.client.post('/api/v1/products', { sku: sku('API'), name: 'Api product', ...body }), 201);
  return data.product;
}

const productForm = (fields: Record<string, string> = {}) => ({
  sku: sku('P'), name: 'Desk lamp', type: 'physical', status: 'active', brand: '', category: '', description: '', ...fields,
});

test('every product page sends a visitor without a session to sign in, coming back to the page', async (t) => {
  const product = await apiProduct(owner, { variants: [{ sku: sku('V') }] });
  const variant = product.variants[0];
  const visitor = app.client();
  for (const path of [
    '/app/products',
    '/app/products?type=digital',
    '/app/products/new',
    `/app/products/${product.id}`,
    `/app/products/${product.id}/edit`,
    `/app/products/${product.id}/variants/new`,
    `/app/products/${product.id}/variants/${variant.id}/edit`,
  ]) {
    const res = await visitor.get(path);
    t.is(res.status, 302, path);
    t.is(res.headers.get('location'), `/login?next=${encodeURIComponent(path)}`, path);
  }
  for (const path of ['/app/products/new', `/app/products/${product.id}/edit`, `/app/products/${product.id}/variants/${variant.id}/delete`]) {
    const res = await postForm(visitor, path, { name: 'x' });
    t.is(res.status, 303, path);
    t.regex(res.headers.get('location') ?? '', /^\/login/, path);
  }
  t.is((await owner.client.get(`/api/v1/products/${product.id}`)).body.data.product.variants.length, 1, 'nothing was deleted');
});

test('create a product through the page: 303 to its page, visible through the JSON API, on the list', async (t) => {
  const form = productForm({ name: 'Oak desk', type: 'service', status: 'draft', brand: 'Woodco', category: 'Furniture', description: 'Solid oak.\nTwo drawers.' });
  const res = await postForm(owner.client, '/app/products/new', form);
  t.is(res.status, 303);
  const id = Number(/^\/app\/products\/(\d+)$/.exec(res.headers.get('location') ?? '')?.[1]);
  t.true(id > 0, res.headers.get('location') ?? '');
  const product = (await ok(owner.client.get(`/api/v1/products/${id}`))).product;
  t.like(product, { sku: form.sku, name: 'Oak desk', type: 'service', status: 'draft', brand: 'Woodco', category: 'Furniture', description: 'Solid oak.\nTwo drawers.', variants: [] });

  const shown = await owner.client.get(`/app/products/${id}`);
  t.is(shown.status, 200);
  const text = visibleText(shown.text);
  t.true(text.includes(`Product Oak desk created.`), 'the flash');
  for (const part of ['Oak desk', form.sku, 'Draft', 'Service', 'Woodco', 'Furniture', 'Two drawers.', 'This product has no variants yet.']) t.true(text.includes(part), part);

  const list = visibleText((await owner.client.get(`/app/products?q=${encodeURIComponent(form.sku)}`)).text);
  t.true(list.includes('Oak desk'));
  t.true(list.includes('1–1 of 1 products'));
});

test('edit a product: the form shows its values; 303, the change is visible through the JSON API; emptying a field clears it', async (t) => {
  const product = await apiProduct(owner, { name: 'Chair', brand: 'Sitco', category: 'Seats' });
  const form = await owner.client.get(`/app/products/${product.id}/edit`);
  t.is(form.status, 200);
  t.true(form.text.includes(`value="${product.sku}"`));
  t.true(form.text.includes('value="Sitco"'));
  t.regex(form.text, /<option value="active" selected>/);

  const res = await postForm(owner.client, `/app/products/${product.id}/edit`, { sku: product.sku, name: 'Armchair', type: 'physical', status: 'archived', brand: '', category: 'Seats', description: '' });
  t.is(res.status, 303);
  t.is(res.headers.get('location'), `/app/products/${product.id}`);
  t.like((await ok(owner.client.get(`/api/v1/products/${product.id}`))).product, { name: 'Armchair', status: 'archived', brand: null, category: 'Seats' });
});

test('422: the form again with the input kept and the message beside its field; nothing written', async (t) => {
  const form = productForm({ name: '   ', brand: 'Kept brand' });
  const res = await postForm(owner.client, '/app/products/new', form);
  t.is(res.status, 422);
  t.true(res.text.includes(`value="${form.sku}"`), 'the SKU is kept');
  t.true(res.text.includes('value="Kept brand"'), 'the brand is kept');
  t.regex(res.text, /<input id="f-name" name="name"[^>]*aria-invalid="true"[^>]*aria-describedby="f-name-error"/);
  t.regex(res.text, /<p class="field-error" id="f-name-error">name: must not be empty\.<\/p>/);
  const listed = (await ok(owner.client.get(`/api/v1/products?q=${encodeURIComponent(form.sku)}`))).products;
  t.deepEqual(listed, []);

  const product = await apiProduct(owner);
  const bad = await postForm(owner.client, `/app/products/${product.id}/edit`, { sku: product.sku, name: 'Fine', type: 'gadget', status: 'active', brand: '', category: '', description: '' });
  t.is(bad.status, 422);
  t.regex(bad.text, /id="f-type-error">type: invalid option/);
  t.true(bad.text.includes('value="Fine"'));
  t.is((await ok(owner.client.get(`/api/v1/products/${product.id}`))).product.name, 'Api product');
});

test('a SKU already taken: 409 with the message beside the SKU field and the input kept', async (t) => {
  const taken = await apiProduct(owner);
  const form = productForm({ sku: taken.sku, name: 'Second' });
  const res = await postForm(owner.client, '/app/products/new', form);
  t.is(res.status, 409);
  t.regex(res.text, new RegExp(`id="f-sku-error">SKU &quot;${taken.sku}&quot; is already used by another product\\.`));
  t.true(res.text.includes('value="Second"'));

  const mine = await apiProduct(owner);
  const edit = await postForm(owner.client, `/app/products/${mine.id}/edit`, { ...productForm({ sku: taken.sku, name: 'Renamed' }) });
  t.is(edit.status, 409);
  t.true(edit.text.includes('id="f-sku-error"'));
  t.is((await ok(owner.client.get(`/api/v1/products/${mine.id}`))).product.sku, mine.sku);

  const variant = (await apiProduct(owner, { variants: [{ sku: sku('V') }] })).variants[0];
  const dup = await postForm(owner.client, `/app/products/${mine.id}/variants/new`, { sku: variant.sku, name: 'Dup', price: '5', attributes: 'size: M' });
  t.is(dup.status, 409);
  t.regex(dup.text, /id="f-sku-error">SKU &quot;[^&]+&quot; is already used by another variant\./);
  t.true(dup.text.includes('size: M</textarea>'), 'the attributes are kept');
});

test('variants: add, edit and delete through the pages; each change visible through the JSON API; the detail shows them', async (t) => {
  const product = await apiProduct(owner, { name: 'T-shirt' });
  const vsku = sku('TS');
  const added = await postForm(owner.client, `/app/products/${product.id}/variants/new`, { sku: vsku, name: 'Small red', price: '12.5', attributes: 'size: S\ncolour: red\n\n' });
  t.is(added.status, 303);
  t.is(added.headers.get('location'), `/app/products/${product.id}`);
  let [variant] = (await ok(owner.client.get(`/api/v1/products/${product.id}`))).product.variants;
  t.like(variant, { sku: vsku, name: 'Small red', price: '12.50' });
  t.deepEqual(variant.attributes, { size: 'S', colour: 'red' });

  const second = await postForm(owner.client, `/app/products/${product.id}/variants/new`, { sku: sku('TS'), name: '', price: '20', attributes: '{"weight": 120, "tags": ["a"]}' });
  t.is(second.status, 303);

  const detail = await owner.client.get(`/app/products/${product.id}`);
  const text = visibleText(detail.text);
  for (const part of [vsku, 'Small red', '12.50', 'size: S', 'colour: red', 'weight: 120', 'tags: ["a"]', '12.50–20.00']) t.true(text.includes(part), part);

  const list = visibleText((await owner.client.get(`/app/products?q=${encodeURIComponent(product.sku)}`)).text);
  t.regex(list, /T-shirt \S+ 2 12\.50–20\.00 Active/);

  // The edit form reads the stored attributes back as they were written.
  const editForm = await owner.client.get(`/app/products/${product.id}/variants/${variant.id}/edit`);
  t.is(editForm.status, 200);
  t.true(editForm.text.includes('>size: S\ncolour: red</textarea>'));
  const secondId = (await ok(owner.client.get(`/api/v1/products/${product.id}`))).product.variants[1].id;
  const jsonForm = await owner.client.get(`/app/products/${product.id}/variants/${secondId}/edit`);
  t.true(jsonForm.text.includes('&quot;weight&quot;: 120'), 'non-text values are shown as JSON');

  const edited = await postForm(owner.client, `/app/products/${product.id}/variants/${variant.id}/edit`, { sku: vsku, name: 'Small blue', price: '', attributes: 'colour: blue' });
  t.is(edited.status, 303);
  [variant] = (await ok(owner.client.get(`/api/v1/products/${product.id}`))).product.variants;
  t.like(variant, { name: 'Small blue', price: null });
  t.deepEqual(variant.attributes, { colour: 'blue' }, 'replaced as a whole');

  const deleted = await postForm(owner.client, `/app/products/${product.id}/variants/${variant.id}/delete`, {});
  t.is(deleted.status, 303);
  t.is(deleted.headers.get('location'), `/app/products/${product.id}`);
  const after = (await ok(owner.client.get(`/api/v1/products/${product.id}`))).product.variants;
  t.deepEqual(after.map((v: { id: number }) => v.id), [secondId]);
  t.true(visibleText((await owner.client.get(`/app/products/${product.id}`)).text).includes(`Variant ${vsku} deleted.`));

  // A deleted variant's pages are gone.
  t.is((await owner.client.get(`/app/products/${product.id}/variants/${variant.id}/edit`)).status, 404);
  t.is((await postForm(owner.client, `/app/products/${product.id}/variants/${variant.id}/delete`, {})).status, 404);
});

test('variant 422s: a bad price and bad attributes show beside their field, input kept', async (t) => {
  const product = await apiProduct(owner);
  const vsku = sku('V');
  const price = await postForm(owner.client, `/app/products/${product.id}/variants/new`, { sku: vsku, name: 'N', price: '12.345', attributes: 'a: b' });
  t.is(price.status, 422);
  t.regex(price.text, /id="f-price-error">price: must have at most 2 decimal places\./);
  t.true(price.text.includes('value="12.345"'));
  t.true(price.text.includes(`value="${vsku}"`));

  for (const [attributes, message] of [
    ['no colon here', /id="f-attributes-error">attributes: line 1 must be &quot;key: value&quot;\./],
    ['a: 1\na: 2', /id="f-attributes-error">attributes: the key &quot;a&quot; is given twice\./],
    ['{"a": ', /id="f-attributes-error">attributes: that is not valid JSON/],
    ['{"a": "\\u0000"}', /id="f-attributes-error">attributes: must not contain NUL/],
  ] as const) {
    const res = await postForm(owner.client, `/app/products/${product.id}/variants/new`, { sku: vsku, name: 'N', price: '1', attributes });
    t.is(res.status, 422, attributes);
    t.regex(res.text, message, attributes);
  }
  t.deepEqual((await ok(owner.client.get(`/api/v1/products/${product.id}`))).product.variants, []);
});

test("another workspace's product, a variant of another product, and malformed ids are the 404 page", async (t) => {
  const theirs = await apiProduct(other, { variants: [{ sku: sku('THEIRS') }] });
  const mine = await apiProduct(owner, { variants: [{ sku: sku('MINE') }] });
  const theirVariant = theirs.variants[0];
  for (const path of [
    `/app/products/${theirs.id}`,
    `/app/products/${theirs.id}/edit`,
    `/app/products/${theirs.id}/variants/new`,
    `/app/products/${theirs.id}/variants/${theirVariant.id}/edit`,
    `/app/products/${mine.id}/variants/${theirVariant.id}/edit`,
    '/app/products/abc',
    '/app/products/0',
    '/app/products/99999999999',
    '/app/products/1.5/edit',
    `/app/products/${mine.id}/variants/x/edit`,
  ]) {
    const res = await owner.client.get(path);
    t.is(res.status, 404, path);
    t.true(res.text.includes('Page not found'), path);
  }
  for (const [path, fields] of [
    [`/app/products/${theirs.id}/edit`, productForm({ name: 'Stolen' })],
    [`/app/products/${theirs.id}/variants/new`, { sku: sku('X'), name: '', price: '', attributes: '' }],
    [`/app/products/${theirs.id}/variants/${theirVariant.id}/edit`, { sku: 'x', name: '', price: '', attributes: '' }],
    [`/app/products/${theirs.id}/variants/${theirVariant.id}/delete`, {}],
    [`/app/products/${mine.id}/variants/${theirVariant.id}/delete`, {}],
  ] as const) {
    const res = await postForm(owner.client, path, fields);
    t.is(res.status, 404, path);
  }
  const still = (await ok(other.client.get(`/api/v1/products/${theirs.id}`))).product;
  t.is(still.name, 'Api product');
  t.is(still.variants.length, 1);
});

test('every POST checks the Origin: 403 from another site, nothing written', async (t) => {
  const product = await apiProduct(owner, { variants: [{ sku: sku('V') }] });
  const variant = product.variants[0];
  for (const [path, fields] of [
    ['/app/products/new', productForm({ name: 'Evil' })],
    [`/app/products/${product.id}/edit`, productForm({ sku: product.sku, name: 'Evil' })],
    [`/app/products/${product.id}/variants/new`, { sku: sku('EVIL'), name: '', price: '', attributes: '' }],
    [`/app/products/${product.id}/variants/${variant.id}/edit`, { sku: variant.sku, name: 'Evil', price: '', attributes: '' }],
    [`/app/products/${product.id}/variants/${variant.id}/delete`, {}],
  ] as const) {
    const res = await postForm(owner.client, path, fields, { origin: 'https://evil.example' });
    t.is(res.status, 403, path);
  }
  const after = (await ok(owner.client.get(`/api/v1/products/${product.id}`))).product;
  t.deepEqual(after, product);
  t.deepEqual((await ok(owner.client.get('/api/v1/products?q=Evil'))).products, []);
});

test('a member may list, create and edit products and variants, as the API lets them', async (t) => {
  const res = await postForm(member.client, '/app/products/new', productForm({ name: 'Member made' }));
  t.is(res.status, 303);
  const id = Number(/(\d+)$/.exec(res.headers.get('location') ?? '')?.[1]);
  t.is((await postForm(member.client, `/app/products/${id}/variants/new`, { sku: sku('MV'), name: '', price: '3', attributes: '' })).status, 303);
  const page = await member.client.get('/app/products');
  t.is(page.status, 200);
  t.true(visibleText(page.text).includes('Member made'));
  t.true(page.text.includes('href="/app/products/new"'));
  t.is((await ok(owner.client.get(`/api/v1/products/${id}`))).product.variants.length, 1);
});

test('the list: the API filters as a GET form, 50 a page newest first, a message when nothing matches', async (t) => {
  const brand = `Pager ${process.pid}`;
  const made: number[] = [];
  for (let i = 0; i < 52; i++) {
    const body = { sku: sku('PG'), name: `Pager item ${String(i).padStart(2, '0')}`, brand, type: i % 2 ? 'digital' : 'physical' };
    made.push((await ok(owner.client.post('/api/v1/products', body), 201)).product.id);
  }
  const first = await owner.client.get(`/app/products?brand=${encodeURIComponent(brand)}`);
  t.is(first.status, 200);
  const names = [...first.text.matchAll(/>Pager item (\d\d)</g)].map((m) => Number(m[1]));
  t.is(names.length, 50);
  t.deepEqual(names.slice(0, 3), [51, 50, 49], 'newest first');
  t.true(visibleText(first.text).includes('1–50 of 52 products · page 1 of 2'));
  t.true(first.text.includes(`href="/app/products?brand=${encodeURIComponent(brand).replace(/%20/g, '+')}&amp;page=2"`), 'next keeps the filter');
  t.true(first.text.includes(`value="${brand}"`), 'the form shows the filter');

  const second = await owner.client.get(`/app/products?brand=${encodeURIComponent(brand)}&page=2`);
  t.deepEqual([...second.text.matchAll(/>Pager item (\d\d)</g)].map((m) => Number(m[1])), [1, 0]);

  const digital = await owner.client.get(`/app/products?brand=${encodeURIComponent(brand)}&type=digital&status=`);
  t.true(visibleText(digital.text).includes('1–26 of 26 products'));
  t.regex(digital.text, /<option value="digital" selected>/);

  const none = await owner.client.get(`/app/products?brand=${encodeURIComponent(brand)}&status=archived`);
  t.is(none.status, 200);
  t.true(visibleText(none.text).includes('No products match these filters.'));

  const bad = await owner.client.get('/app/products?type=gadget');
  t.is(bad.status, 422);
  t.true(visibleText(bad.text).includes('type: must be one of physical, digital, service'));

  const past = await owner.client.get(`/app/products?brand=${encodeURIComponent(brand)}&page=9`);
  t.true(visibleText(past.text).includes('This page is past the end of the list.'));
});

test('names, SKUs, brands, descriptions and attributes holding markup come out escaped on every page', async (t) => {
  const evil = '<script>alert(1)</script>';
  const product = await apiProduct(owner, {
    sku: `${evil}${sku('X')}`, name: `${evil} name`, brand: `${evil} brand`, category: `"><img src=x onerror=alert(2)>`, description: `${evil}\n</p><b>x</b>`,
    variants: [{ sku: `${evil}-v-${sku('V')}`, name: `${evil} variant`, price: '1', attributes: { [`${evil}key`]: `${evil}value`, n: { deep: evil } } }],
  });
  const variant = product.variants[0];
  for (const path of [
    '/app/products',
    `/app/products?q=${encodeURIComponent('<script>')}`,
    `/app/products?brand=${encodeURIComponent(`${evil} brand`)}`,
    `/app/products/${product.id}`,
    `/app/products/${product.id}/edit`,
    `/app/products/${product.id}/variants/new`,
    `/app/products/${product.id}/variants/${variant.id}/edit`,
  ]) {
    const res = await owner.client.get(path);
    t.is(res.status, 200, path);
    t.false(res.text.includes('<script>alert'), path);
    t.false(res.text.includes('<img src=x'), path);
    t.false(res.text.includes('<b>x</b>'), path);
  }
  const detail = await owner.client.get(`/app/products/${product.id}`);
  t.true(detail.text.includes('&lt;script&gt;alert(1)&lt;/script&gt; name'));
  t.true(visibleText(detail.text).includes(`${evil}key: ${evil}value`));

  // Markup typed into a form that fails comes back escaped too.
  const res = await postForm(owner.client, '/app/products/new', productForm({ name: '', sku: evil, brand: `"><script>x</script>` }));
  t.is(res.status, 422);
  t.false(res.text.includes('<script>'));
  t.true(res.text.includes('value="&quot;&gt;&lt;script&gt;x&lt;/script&gt;"'));
});

test('a locked workspace: every product page is the 402 page, and nothing is written', async (t) => {
  const locked = await signUpOwner(app, 'Locked Co');
  const product = await apiProduct(locked, { variants: [{ sku: sku('L') }] });
  const variant = product.variants[0];
  await app.db('workspaces').where({ id: locked.workspace.id }).update({ status: 'suspended' });
  app.sessionCache.evict('all');
  for (const path of ['/app/products', `/app/products/${product.id}`, '/app/products/new', `/app/products/${product.id}/edit`, `/app/products/${product.id}/variants/${variant.id}/edit`]) {
    const res = await locked.client.get(path);
    t.is(res.status, 402, path);
    t.true(res.text.includes('This workspace is locked'), path);
  }
  for (const [path, fields] of [
    ['/app/products/new', productForm()],
    [`/app/products/${product.id}/edit`, productForm({ sku: product.sku, name: 'Changed' })],
    [`/app/products/${product.id}/variants/${variant.id}/delete`, {}],
  ] as const) {
    t.is((await postForm(locked.client, path, fields)).status, 402, path);
  }
  await app.db('workspaces').where({ id: locked.workspace.id }).update({ status: 'active' });
  app.sessionCache.evict('all');
  t.deepEqual((await ok(locked.client.get(`/api/v1/products/${product.id}`))).product, product);
});
