import http from 'node:http';
import test from 'ava';
import { useOwnerApp } from '../helpers/fixture.js';

/**
 * Defects real export files found in the import (issue 33, section 1): a large multipart body refused early still
 * gets its answer; single-line fields refuse line breaks as the API does; malformed quoting is never stored; generated
 * Shopify SKUs fit; a product whose first row failed says so on its later rows; errors name the line a record starts on.
 */

const { app, owner } = useOwnerApp(test);

const cookie = () => [...owner.client.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
const boundary = 'import-defects-boundary';

/** A request over a plain socket, resolving with the answer or with status 0 if none came within `ms`. */
function post(path: string, contentType: string, body: string, ms = 20_000): Promise<{ status: number; body: any }> {
  return new Promise((resolve) => {
    const req = http.request(`${app.url}${path}`, { method: 'POST', headers: { cookie: cookie(), 'content-type': contentType, 'content-length': Buffer.byteLength(body) } });
    const timer = setTimeout(() => {
      req.destroy();
      resolve({ status: 0, body: undefined });
    }, ms);
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
      res.on('end', () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined });
      });
    });
    req.on('error', () => {
      clearTimeout(timer);
      resolve({ status: 0, body: undefined });
    });
    req.end(body);
  });
}

const multipart = (csv: string) =>
  `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="export.csv"\r\nContent-Type: text/csv\r\n\r\n${csv}\r\n--${boundary}--\r\n`;
const importMultipart = (kind: string, csv: string, query = '') => post(`/api/v1/${kind}/import${query}`, `multipart/form-data; boundary=${boundary}`, multipart(csv));
const importRaw = (kind: string, csv: string, query = '') => post(`/api/v1/${kind}/import${query}`, 'text/csv', csv);

for (const [kind, header, row, missing] of [
  ['products', 'product_sku,variant_sku,price', (i: number) => `P-${i},P-${i}-V,${i}.00,with some text to fill the line\n`, /no name column/],
  ['orders', 'order_number,sku,quantity', (i: number) => `SO-${i},SKU-${i},2,and more text to fill the line\n`, /no price column/],
] as const) {
  test.serial(`${kind}: a multipart body over 70 KB whose header lacks a required column is answered 422 at once`, async (t) => {
    let csv = `${header}\n`;
    for (let i = 0; csv.length < 200_000; i++) csv += row(i);
    t.true(multipart(csv).length > 70_000);
    const res = await importMultipart(kind, csv);
    t.is(res.status, 422, JSON.stringify(res.body));
    t.regex(res.body?.error ?? '', missing);
    const raw = await importRaw(kind, csv);
    t.is(raw.status, 422);
    // The connection and the server are still fine for the next import.
    const good = await importMultipart(kind, kind === 'products' ? 'product_sku,name,variant_sku\nOK,Ok,OK-1\n' : 'order_number,sku,description,quantity,price\nOK-1,S,Thing,1,1.00\n');
    t.is(good.status, 200, JSON.stringify(good.body));
  });
}

test.serial('early refusals of a 200 KB multipart body (a bad option, no session) are answered', async (t) => {
  let csv = 'product_sku,name,variant_sku\n';
  for (let i = 0; csv.length < 200_000; i++) csv += `E-${i},Early ${i},E-${i}-V\n`;
  const bad = await importMultipart('products', csv, '?on_error=bogus');
  t.is(bad.status, 422);
  t.regex(bad.body.error, /on_error/);
  const anonymous = await new Promise<number>((resolve) => {
    const req = http.request(`${app.url}/api/v1/orders/import`, { method: 'POST', headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } });
    req.on('response', (res) => (res.resume(), resolve(res.statusCode ?? 0)));
    req.on('error', () => resolve(0));
    req.end(multipart(csv));
  });
  t.is(anonymous, 401);
});

const productCsv = (header: string, ...rows: string[]) => [header, ...rows].join('\n') + '\n';

async function product(sku: string) {
  const res = await owner.client.get(`/api/v1/products?q=${encodeURIComponent(sku)}`);
  return res.body.data.products.find((p: { sku: string }) => p.sku === sku);
}

test.serial('single-line fields refuse line breaks and tabs in the import as the API does', async (t) => {
  const api = await owner.client.post('/api/v1/products', { sku: 'LINE-API', name: 'Line', brand: 'Acme\nInc' });
  t.is(api.status, 422);
  const csv = productCsv(
    'product_sku,name,brand,category,variant_sku,variant_name,price',
    'LINE-1,One,"Acme\nInc",Shirts,LINE-1-V,,1.00',
    'LINE-2,Two,Acme,"Shi\trts",LINE-2-V,,1.00',
    'LINE-3,Three,Acme,Shirts,LINE-3-V,"Small\r\nBlue",1.00',
    'LINE-4,Four,Acme,Shirts,LINE-4-V,Small,1.00',
  );
  for (const send of [importRaw, importMultipart]) {
    const res = await send('products', csv);
    t.is(res.status, 200, JSON.stringify(res.body));
    const report = res.body.data.import;
    t.is(report.failed, 3);
    // LINE-1's record takes lines 2 and 3; LINE-3's starts on line 5.
    t.deepEqual(report.errors.map((e: any) => [e.row, e.field]), [[2, 'brand'], [4, 'category'], [5, 'variant_name']]);
    for (const e of report.errors) t.regex(e.message, /single line/);
    t.is(await product('LINE-1'), undefined);
    t.is(await product('LINE-2'), undefined);
    t.truthy(await product('LINE-4'));
  }
  const shopify = productCsv('Handle,Title,Vendor,Type,Variant SKU,Variant Price', 'vendor-tab,Vendor Tab,"Acme\tInc",Shirts,VT-1,1.00');
  const vendor = await importRaw('products', shopify);
  t.deepEqual(vendor.body.data.import.errors.map((e: any) => [e.row, e.field]), [[2, 'brand']]);
  const orders = 'order_number,customer_email,customer_name,sku,description,quantity,price\nNL-1,nl@example.com,"Ann\nLee",S,Thing,1,1.00\n';
  for (const send of [importRaw, importMultipart]) {
    const res = await send('orders', orders);
    t.deepEqual(res.body.data.import.errors.map((e: any) => [e.row, e.field]), [[2, 'customer_name']]);
  }
});

test.serial('quoting: whitespace after a closing quote is dropped, other text after it is a row error naming its line; a record over several lines is named by its first', async (t) => {
  const csv = productCsv(
    'product_sku,name,variant_sku,description,price',
    'Q-1,"Quoted one"   ,Q-1-V,"<p>x</p>"   ,1.00',
    'Q-2,Two,Q-2-V,"say ""hi"""  ,2.00',
    'Q-3,"Three"x,Q-3-V,,3.00',
    'Q-4,Four,Q-4-V,"two\nlines",4.00',
    'Q-5,Five,Q-5-V,,not a price',
    'Q-6,"Six" "more",Q-6-V,,6.00',
  );
  for (const send of [importRaw, importMultipart]) {
    const res = await send('products', csv);
    t.is(res.status, 200, JSON.stringify(res.body));
    const report = res.body.data.import;
    t.deepEqual(report.errors.map((e: any) => [e.row, e.field]), [[4, 'name'], [7, 'price'], [8, 'name']]);
    t.regex(report.errors[0].message, /closing quote.*line 4/);
    const one = await product('Q-1');
    t.is(one.name, 'Quoted one');
    t.is(one.description, '<p>x</p>');
    t.is((await product('Q-2')).description, 'say "hi"');
    t.is((await product('Q-4')).description, 'two\nlines');
    t.is(await product('Q-3'), undefined);
    t.is(await product('Q-6'), undefined);
  }
});

test.serial('Shopify: an empty Variant SKU makes a SKU that fits, is the same on a re-import, and has no spaces; SKUs take 255 characters', async (t) => {
  const handle = 'an-extremely-long-handle-' + 'for-a-product-with-a-very-descriptive-name-'.repeat(5);
  t.true(handle.length > 200 && handle.length <= 255);
  const csv = productCsv(
    'Handle,Title,Vendor,Type,Option1 Name,Option1 Value,Option2 Name,Option2 Value,Variant SKU,Variant Price',
    `${handle},Long One,Acme,Shirts,Size,Extra Large,Colour,Deep Ocean Blue,,10.00`,
    `${handle},,,,,Small,,Deep Ocean Blue,,10.00`,
    `short,Short,Acme,Shirts,Size,Extra Large,,,,5.00`,
  );
  const first = await importRaw('products', csv);
  t.is(first.status, 200, JSON.stringify(first.body));
  t.deepEqual(first.body.data.import.errors, []);
  t.is(first.body.data.import.created, 3);
  const long = await product(handle);
  const skus = long.variants.map((v: any) => v.sku);
  for (const sku of skus) {
    t.true(sku.length <= 255, sku);
    t.notRegex(sku, /\s/);
  }
  t.not(skus[0], skus[1]);
  t.deepEqual((await product('short')).variants.map((v: any) => v.sku), ['short-Extra-Large']);
  const again = await importMultipart('products', csv);
  t.deepEqual([again.body.data.import.unchanged, again.body.data.import.created], [3, 0]);
  t.deepEqual((await product(handle)).variants.map((v: any) => v.sku), skus);

  const api = await owner.client.post('/api/v1/products', { sku: 'S'.repeat(255), name: 'Long SKU', variants: [{ sku: `${'V'.repeat(254)}1` }] });
  t.is(api.status, 201, api.text);
  t.is((await owner.client.post('/api/v1/products', { sku: 'S'.repeat(256), name: 'Too long' })).status, 422);
  const generic = await importRaw('products', productCsv('product_sku,name,variant_sku', `${'G'.repeat(255)},G,${'H'.repeat(255)}`, `${'G'.repeat(256)},G2,H2`));
  t.deepEqual(generic.body.data.import.errors.map((e: any) => [e.row, e.field]), [[3, 'product_sku']]);
  // The API document states the new limit on the product's SKU.
  const document = await owner.client.get('/api/v1/openapi.json');
  const create = document.body.paths['/api/v1/products'].post.requestBody.content['application/json'].schema;
  const schema = create.$ref ? document.body.components.schemas[create.$ref.split('/').pop()] : create;
  t.is(schema.properties.sku.maxLength, 255);
});

test.serial("once a product's first row fails, its later rows say so", async (t) => {
  const shopify = productCsv(
    'Handle,Title,Vendor,Type,Option1 Name,Option1 Value,Variant SKU,Variant Price',
    'follow,Follow,Acme,Shirts,Size,S,FOLLOW-S,not money',
    'follow,,,,,M,FOLLOW-M,1.00',
    'follow,,,,,L,FOLLOW-L,1.00',
  );
  for (const send of [importRaw, importMultipart]) {
    const res = await send('products', shopify);
    const errors = res.body.data.import.errors;
    t.deepEqual(errors.map((e: any) => e.row), [2, 3, 4]);
    t.is(errors[1].message, 'product follow was not imported: its first row (line 2) failed.');
    t.is(errors[2].message, 'product follow was not imported: its first row (line 2) failed.');
  }
  const generic = await importRaw('products', productCsv('product_sku,name,brand,variant_sku', 'FG,Follow generic,"Bad\tBrand",FG-1', 'FG,,,FG-2'));
  t.deepEqual(generic.body.data.import.errors.map((e: any) => [e.row, e.message.startsWith('product FG was not imported: its first row (line 2) failed')]), [[2, false], [3, true]]);
});
