import test from 'ava';
import { useOwnerApp } from '../helpers/fixture.js';
import { wooCatalogue, wooCatalogueNotes, wooCsv, wooHeader } from '../helpers/woocommerce-exports.js';

/**
 * WooCommerce product exports as Products → Export writes them: variable products and their variations (linked by
 * Parent, `id:N` or SKU), an "any" attribute, sale prices with and without dates, Published 1/0/-1/2, category
 * paths, the exporter's escapes, and grouped and external products imported with a note.
 */

const { owner } = useOwnerApp(test);

const csvPost = (path: string, csv: string) => owner.client.request('POST', path, { raw: csv, contentType: 'text/csv' });

async function productBySku(sku: string) {
  const res = await owner.client.get(`/api/v1/products?q=${encodeURIComponent(sku)}`);
  return res.body.data.products.find((p: { sku: string }) => p.sku === sku);
}

/** A product's variants as [sku, name, price, attributes], by SKU. */
const variants = (product: any) =>
  product.variants.map((v: any) => [v.sku, v.name, v.price, v.attributes]).sort((a: string[], b: string[]) => a[0].localeCompare(b[0]));

/** A UTC date `days` from now, as the exporter writes a sale date. */
const day = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString().slice(0, 10) + ' 0:00:00';

test.serial('a whole catalogue: variations become their product\'s variants, simple products one variant; grouped and external products get a note', async (t) => {
  const res = await csvPost('/api/v1/products/import', wooCatalogue);
  t.is(res.status, 200, res.text);
  // Lines 2 and 3 are the variable products' own rows: their variations (10–13) are the variants.
  t.deepEqual(res.body.data.import, { rows: 10, created: 10, updated: 0, unchanged: 0, failed: 0, skipped: 2, errors: [], notes: wooCatalogueNotes });

  const tee = await productBySku('woo-vneck-tee');
  t.like(tee, { name: 'V-Neck T-Shirt', status: 'active', type: 'physical', category: 'Tshirts', description: 'Soft cotton jersey.\nMachine wash cold.', brand: null });
  // Size is "any" on the red variation: it is not one of that variant's attributes. The green one has no SKU: made from the parent's and its values.
  t.deepEqual(variants(tee), [
    ['woo-vneck-tee-Green-Large', 'Green / Large', '20.00', { Color: 'Green', Size: 'Large' }],
    ['woo-vneck-tee-red', 'Red', '20.00', { Color: 'Red' }],
  ]);

  // No SKU: the product is named as WooCommerce names it in Parent, id:45; drafts stay drafts; the first category path's last segment.
  const hoodie = await productBySku('id:45');
  t.like(hoodie, { name: 'Hoodie', status: 'draft', category: 'Hoodies', description: '<p>Brushed fleece.</p>' });
  t.deepEqual(variants(hoodie), [
    ['woo-hoodie-blue-logo', 'Blue / Yes', '45.00', { Color: 'Blue', Logo: 'Yes' }],
    ['woo-hoodie-red', 'Red / No', '42.00', { Color: 'Red', Logo: 'No' }],
  ]);

  // Private → archived; downloadable → digital; a sale that ended is not the price.
  const album = await productBySku('woo-album');
  // The exporter writes a line break as \n and a \n of the text as \\n.
  t.like(album, { status: 'archived', type: 'digital', category: 'Music', description: 'Ten songs.\nFiles in C:\\new albums.' });
  t.deepEqual(variants(album), [['woo-album', null, '15.00', {}]]);
  // A sale without dates wins; a simple product's attributes are kept.
  const beanie = await productBySku('woo-beanie');
  t.like(beanie, { name: 'Beanie, knitted', status: 'active', category: 'Accessories' });
  t.deepEqual(variants(beanie), [['woo-beanie', null, '18.00', { Color: 'Red' }]]);
  // Pending → draft; a sale within its dates wins; a list of values stays a list.
  const cap = await productBySku('woo-cap');
  t.like(cap, { status: 'draft' });
  t.deepEqual(variants(cap), [['woo-cap', null, '16.00', { Material: 'Cotton, Polyester' }]]);

  t.deepEqual(variants(await productBySku('logo-collection')), [['logo-collection', null, null, {}]]);
  t.like(await productBySku('wp-pennant'), { name: 'WordPress Pennant', status: 'active', category: 'Decor' });
  // The exporter's `'` before a leading "-" comes off; `\,` is a comma inside a category.
  t.like(await productBySku('parka-40'), { name: '-40° Parka', category: 'Jackets, coats' });

  const again = await csvPost('/api/v1/products/import', wooCatalogue);
  t.deepEqual(again.body.data.import, { rows: 10, created: 0, updated: 0, unchanged: 10, failed: 0, skipped: 2, errors: [], notes: wooCatalogueNotes });
});

test.serial('sale dates are read against the import\'s time: a sale that starts later or has ended leaves the regular price', async (t) => {
  const csv = wooCsv(wooHeader, [
    { ID: '101', Type: 'simple', SKU: 'sale-now', Name: 'Sale now', Published: '1', 'Regular price': '10', 'Sale price': '8', 'Date sale price starts': day(-2), 'Date sale price ends': day(2) },
    { ID: '102', Type: 'simple', SKU: 'sale-later', Name: 'Sale later', Published: '1', 'Regular price': '10', 'Sale price': '8', 'Date sale price starts': day(2) },
    { ID: '103', Type: 'simple', SKU: 'sale-over', Name: 'Sale over', Published: '1', 'Regular price': '10', 'Sale price': '8', 'Date sale price ends': day(-2).slice(0, 10) },
    { ID: '104', Type: 'simple', SKU: 'sale-open', Name: 'Sale open', Published: '1', 'Regular price': '10', 'Sale price': '8', 'Date sale price starts': day(-2).slice(0, 10) },
  ]);
  const res = await csvPost('/api/v1/products/import', csv);
  t.like(res.body.data.import, { rows: 4, created: 4, failed: 0 });
  const prices = await Promise.all(['sale-now', 'sale-later', 'sale-over', 'sale-open'].map(async (sku) => (await productBySku(sku)).variants[0].price));
  t.deepEqual(prices, ['8.00', '10.00', '10.00', '8.00']);

  // The sale ends: the next import (of the same file, later) takes the regular price and says the row was updated.
  const ended = csv.replace(day(2), day(-1));
  const after = await csvPost('/api/v1/products/import', ended);
  t.like(after.body.data.import, { rows: 4, updated: 1, unchanged: 3 });
  t.is((await productBySku('sale-now')).variants[0].price, '10.00');
});

test.serial('a variation before its parent, a parent that is not variable, and a variable product without variations are row errors naming the line', async (t) => {
  const csv = wooCsv(wooHeader, [
    // Line 2: its parent comes later (line 3), which WooCommerce's exporter never writes.
    { ID: '211', Type: 'variation', SKU: 'mug-blue', Name: 'Mug - Blue', Published: '1', 'Regular price': '9', Parent: 'woo-mug', 'Attribute 1 name': 'Color', 'Attribute 1 value(s)': 'Blue' },
    { ID: '210', Type: 'variable', SKU: 'woo-mug', Name: 'Mug', Published: '1', 'Attribute 1 name': 'Color', 'Attribute 1 value(s)': 'Blue, White' },
    { ID: '212', Type: 'simple', SKU: 'saucer', Name: 'Saucer', Published: '1', 'Regular price': '4' },
    { ID: '213', Type: 'variation', SKU: 'saucer-white', Name: 'Saucer - White', Published: '1', 'Regular price': '4', Parent: 'id:212' },
    { ID: '214', Type: 'variation', SKU: 'plate-white', Name: 'Plate - White', Published: '1', 'Regular price': '6', Parent: 'id:999' },
    // A draft parent whose Published cell is wrong: its variation fails with it.
    { ID: '215', Type: 'variable', SKU: 'woo-bowl', Name: 'Bowl', Published: 'hidden' },
    { ID: '216', Type: 'variation', SKU: 'bowl-s', Name: 'Bowl - S', Published: '1', 'Regular price': '7', Parent: 'woo-bowl', 'Attribute 1 name': 'Size', 'Attribute 1 value(s)': 'S' },
    { ID: '217', Type: 'bundle', SKU: 'gift-box', Name: 'Gift box', Published: '1', 'Regular price': '30' },
  ]);
  const res = await csvPost('/api/v1/products/import', csv);
  t.is(res.status, 200, res.text);
  t.deepEqual(res.body.data.import, {
    rows: 8, created: 1, updated: 0, unchanged: 0, failed: 7, skipped: 0, notes: [],
    errors: [
      { row: 2, field: 'Parent', message: 'Parent: no product woo-mug on an earlier line (a variation comes after its variable product).' },
      { row: 3, field: 'Type', message: 'Type: variable product woo-mug has no variation rows in the file, so it was not imported.' },
      { row: 5, field: 'Parent', message: 'Parent: id:212 (line 4) is a simple product, not a variable one.' },
      { row: 6, field: 'Parent', message: 'Parent: no product id:999 on an earlier line (a variation comes after its variable product).' },
      { row: 7, field: 'Published', message: 'Published: "hidden" is not one of 1 (published), 0 (private), -1 (draft), 2 (pending).' },
      { row: 8, field: 'Parent', message: 'Parent: product woo-bowl was not imported: its row (line 7) failed.' },
      { row: 9, field: 'Type', message: 'Type: "bundle" is not one of simple, variable, variation, grouped, external (with virtual or downloadable).' },
    ],
  });
  t.truthy(await productBySku('saucer'));
  t.falsy(await productBySku('woo-mug'));
  t.falsy(await productBySku('woo-bowl'));
});

test.serial('prices and dates: a decimal comma is read, a bad amount names the price column it came from, a bad date names its column', async (t) => {
  const csv = wooCsv(wooHeader, [
    { ID: '301', Type: 'simple', SKU: 'kettle', Name: 'Kettle', Published: '1', 'Regular price': '34,90', 'Sale price': '29,50' },
    { ID: '302', Type: 'simple', SKU: 'teapot', Name: 'Teapot', Published: '1', 'Regular price': '40', 'Sale price': '35.999' },
    { ID: '303', Type: 'simple', SKU: 'cosy', Name: 'Tea cosy', Published: '1', 'Regular price': '12.345' },
    { ID: '304', Type: 'simple', SKU: 'strainer', Name: 'Strainer', Published: '1', 'Regular price': '5', 'Sale price': '4', 'Date sale price ends': '31/12/2026' },
    { ID: '305', Type: 'variable', SKU: 'woo-cup', Name: 'Cup', Published: '1' },
    { ID: '306', Type: 'variation', SKU: '', Name: 'Cup - Tall', Published: '1', 'Regular price': '6.001', Parent: 'woo-cup', 'Attribute 1 name': 'Size', 'Attribute 1 value(s)': 'Tall' },
  ]);
  const res = await csvPost('/api/v1/products/import', csv);
  t.is(res.status, 200, res.text);
  t.deepEqual(res.body.data.import, {
    rows: 5, created: 1, updated: 0, unchanged: 0, failed: 4, skipped: 1, notes: [],
    errors: [
      { row: 3, field: 'Sale price', message: 'Sale price: must have at most 2 decimal places.' },
      { row: 4, field: 'Regular price', message: 'Regular price: must have at most 2 decimal places.' },
      { row: 5, field: 'Date sale price ends', message: 'Date sale price ends: "31/12/2026" is not a date (YYYY-MM-DD, optionally with a time).' },
      { row: 7, field: 'Regular price', message: 'Regular price: must have at most 2 decimal places.' },
    ],
  });
  t.is((await productBySku('kettle')).variants[0].price, '29.50');
  // Its only variation failed: the cup's own row (skipped) is no error of its own, and the cup is not imported.
  t.falsy(await productBySku('woo-cup'));
});
