import http from 'node:http';
import type { AddressInfo } from 'node:net';
import test from 'ava';
import { startApp, signUpOwner } from '../helpers/app.js';
import { useOwnerApp } from '../helpers/fixture.js';

/**
 * CSV imports over HTTP: multipart, raw text/csv and {url}; products (our columns and a Shopify
 * export) and orders; dry runs, skip and abort, the limits, and what a re-import does.
 */

const { app, owner } = useOwnerApp(test, { env: { OUTBOUND_ALLOWED_CIDRS: '127.0.0.1/32' } });

const csvPost = (path: string, csv: string | Buffer, contentType = 'text/csv') =>
  owner.client.request('POST', path, { raw: csv as string, contentType });

async function multipartPost(path: string, csv: string | Buffer, field = 'file') {
  const form = new FormData();
  form.append(field, new Blob([typeof csv === 'string' ? csv : new Uint8Array(csv)], { type: 'text/csv' }), 'import.csv');
  const res = await fetch(app.url + path, { method: 'POST', body: form, headers: { cookie: [...owner.client.cookies].map(([k, v]) => `${k}=${v}`).join('; ') } });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, text };
}

async function counts() {
  const { rows } = await app.db.raw(
    `select (select count(*)::int from products where workspace_id = ?) as products, (select count(*)::int from variants where workspace_id = ?) as variants,
            (select count(*)::int from orders where workspace_id = ?) as orders, (select count(*)::int from order_items where workspace_id = ?) as items`,
    [owner.workspace.id, owner.workspace.id, owner.workspace.id, owner.workspace.id],
  );
  return rows[0] as { products: number; variants: number; orders: number; items: number };
}

async function productBySku(sku: string) {
  const res = await owner.client.get(`/api/v1/products?q=${encodeURIComponent(sku)}`);
  return res.body.data.products.find((p: { sku: string }) => p.sku === sku);
}

test.serial('products: our columns, quoting and delimiters; a re-import is unchanged, a changed price updated', async (t) => {
  const csv =
    '\uFEFFproduct_sku,name,type,status,brand,category,description,variant_sku,variant_name,price,attr:size,attr:color\r\n' +
    'TEE,"Tee, classic",physical,active,Acme,Shirts,"A ""soft"" tee\nwith two lines",TEE-S,Small,12.5,S,Red\r\n' +
    'TEE,,,,,,,TEE-M,Medium,12.50,M,Red\r\n' +
    'MUG,Mug,physical,draft,,,,MUG-1,,8,,\r\n' +
    '\r\n\r\n';
  const first = await csvPost('/api/v1/products/import', csv);
  t.is(first.status, 200, first.text);
  t.deepEqual(first.body.data.import, { rows: 3, created: 3, updated: 0, unchanged: 0, failed: 0, skipped: 0, notes: [], errors: [] });
  const tee = await productBySku('TEE');
  t.is(tee.name, 'Tee, classic');
  t.is(tee.description, 'A "soft" tee\nwith two lines');
  t.is(tee.brand, 'Acme');
  t.deepEqual(tee.variants.map((v: any) => [v.sku, v.name, v.price, v.attributes]), [
    ['TEE-S', 'Small', '12.50', { size: 'S', color: 'Red' }],
    ['TEE-M', 'Medium', '12.50', { size: 'M', color: 'Red' }],
  ]);
  t.is((await productBySku('MUG')).status, 'draft');

  const again = await multipartPost('/api/v1/products/import', csv);
  t.is(again.status, 200, again.text);
  t.deepEqual(again.body.data.import, { rows: 3, created: 0, updated: 0, unchanged: 3, failed: 0, skipped: 0, notes: [], errors: [] });

  const semicolons = 'product_sku;name;variant_sku;price\nTEE;Tee, classic;TEE-S;13.00\nTEE;;TEE-M;12.50\n';
  const changed = await csvPost('/api/v1/products/import', semicolons);
  t.is(changed.status, 200, changed.text);
  t.deepEqual(changed.body.data.import, { rows: 2, created: 0, updated: 1, unchanged: 1, failed: 0, skipped: 0, notes: [], errors: [] });
  const after = await productBySku('TEE');
  t.is(after.variants.find((v: any) => v.sku === 'TEE-S').price, '13.00');
  t.is(after.brand, 'Acme', 'a column the file does not have keeps its value');

  const tabs = 'product_sku\tname\tvariant_sku\tprice\nPEN\tPen\tPEN-1\t1.20\n';
  const tabbed = await csvPost('/api/v1/products/import', tabs);
  t.deepEqual(tabbed.body.data.import, { rows: 1, created: 1, updated: 0, unchanged: 0, failed: 0, skipped: 0, notes: [], errors: [] });
});

test.serial('products: bad values are row errors naming the line and field; a SKU of another product is refused', async (t) => {
  const before = await counts();
  const csv =
    'product_sku,name,type,variant_sku,price\n' +
    'LAMP,Lamp,physical,LAMP-1,9.999\n' +
    'LAMP,Lamp,physical,LAMP-2,10\n' +
    'DESK,Desk,boat,DESK-1,100\n' +
    'CHAIR,Chair,physical,TEE-S,5\n' +
    'CHAIR,Chair,physical,CHAIR-1,5\n' +
    'CHAIR,Chair,physical,CHAIR-1,6\n';
  const abort = await csvPost('/api/v1/products/import?on_error=abort', csv);
  t.is(abort.status, 422, abort.text);
  t.regex(abort.body.error, /4 of 6 rows failed/);
  t.deepEqual(await counts(), before, 'abort writes nothing');
  t.deepEqual(abort.body.data.import.errors, [
    { row: 2, field: 'price', message: 'price: must have at most 2 decimal places.' },
    { row: 4, field: 'type', message: 'type: must be one of physical, digital, service.' },
    { row: 5, field: 'variant_sku', message: 'variant_sku: SKU "TEE-S" is already used by a variant of another product (TEE).' },
    { row: 7, field: 'variant_sku', message: 'variant_sku: SKU "CHAIR-1" is already on line 6 of this file.' },
  ]);

  const dry = await csvPost('/api/v1/products/import?dry_run=1', csv);
  t.is(dry.status, 200);
  t.like(dry.body.data.import, { rows: 6, created: 2, failed: 4 });
  t.deepEqual(await counts(), before, 'a dry run writes nothing');

  const skip = await csvPost('/api/v1/products/import', csv);
  t.is(skip.status, 200);
  t.like(skip.body.data.import, { rows: 6, created: 2, updated: 0, unchanged: 0, failed: 4 });
  t.deepEqual(await counts(), { ...before, products: before.products + 2, variants: before.variants + 2 });
});

test.serial('products: a missing required column is a 422 naming it; broken CSV is a 422, never a 500', async (t) => {
  const missing = await csvPost('/api/v1/products/import', 'product_sku,name,price\nA,A,1\n');
  t.is(missing.status, 422);
  t.regex(missing.body.error, /variant_sku/);
  const empty = await csvPost('/api/v1/products/import', '');
  t.is(empty.status, 422);
  const unclosed = await csvPost('/api/v1/products/import', 'product_sku,name,variant_sku\nA,"unclosed,A-1\n');
  t.is(unclosed.status, 422, unclosed.text);
  t.regex(unclosed.body.error, /^file: the CSV cannot be read/);
  const none = await owner.client.post('/api/v1/products/import', {});
  t.is(none.status, 422);
  t.regex(none.body.error, /file is required/);
  const anonymous = await app.client().request('POST', '/api/v1/products/import', { raw: 'a', contentType: 'text/csv' });
  t.is(anonymous.status, 401);
});

test.serial('products: a Shopify export is recognised and mapped', async (t) => {
  const csv = [
    'Handle,Title,Body (HTML),Vendor,Product Category,Type,Tags,Published,Option1 Name,Option1 Value,Option2 Name,Option2 Value,Option3 Name,Option3 Value,Variant SKU,Variant Grams,Variant Inventory Tracker,Variant Inventory Qty,Variant Inventory Policy,Variant Fulfillment Service,Variant Price,Variant Compare At Price,Variant Requires Shipping,Variant Taxable,Variant Barcode,Image Src,Image Position,Image Alt Text,Gift Card,SEO Title,SEO Description,Status',
    'ocean-blue-shirt,Ocean Blue Shirt,"<p>Ocean blue cotton shirt, with a narrow collar.</p>",partners-demo,Apparel & Accessories > Clothing,Shirts,"men, summer",TRUE,Size,XS,Color,Blue,,,SHIRT-XS-BLUE,0,shopify,50,deny,manual,50.00,,TRUE,TRUE,,https://cdn.example/shirt.jpg,1,,FALSE,,,active',
    'ocean-blue-shirt,,,,,,,,,S,,Blue,,,SHIRT-S-BLUE,0,shopify,50,deny,manual,50.00,,TRUE,TRUE,,,,,,,,',
    'ocean-blue-shirt,,,,,,,,,M,,Blue,,,SHIRT-M-BLUE,0,shopify,50,deny,manual,55.00,,TRUE,TRUE,,,,,,,,',
    'ocean-blue-shirt,,,,,,,,,,,,,,,,,,,,,,,,,https://cdn.example/shirt-back.jpg,2,,,,,',
    'classic-mug,Classic Mug,<p>Mug</p>,Mugs & Co,,Kitchen,,FALSE,Title,Default Title,,,,,,0,shopify,10,deny,manual,12.00,,TRUE,TRUE,,,,,FALSE,,,draft',
  ].join('\n');
  const res = await multipartPost('/api/v1/products/import', csv);
  t.is(res.status, 200, res.text);
  t.deepEqual(res.body.data.import, { rows: 4, created: 4, updated: 0, unchanged: 0, failed: 0, skipped: 1, notes: [], errors: [] });
  const shirt = await productBySku('ocean-blue-shirt');
  t.like(shirt, { name: 'Ocean Blue Shirt', brand: 'partners-demo', category: 'Shirts', status: 'active', description: '<p>Ocean blue cotton shirt, with a narrow collar.</p>' });
  t.deepEqual(shirt.variants.map((v: any) => [v.sku, v.name, v.price, v.attributes]), [
    ['SHIRT-XS-BLUE', 'XS / Blue', '50.00', { Size: 'XS', Color: 'Blue' }],
    ['SHIRT-S-BLUE', 'S / Blue', '50.00', { Size: 'S', Color: 'Blue' }],
    ['SHIRT-M-BLUE', 'M / Blue', '55.00', { Size: 'M', Color: 'Blue' }],
  ]);
  const mug = await productBySku('classic-mug');
  t.like(mug, { name: 'Classic Mug', status: 'draft', brand: 'Mugs & Co' });
  t.deepEqual(mug.variants.map((v: any) => [v.sku, v.name, v.attributes]), [['classic-mug', null, {}]]);
  const again = await csvPost('/api/v1/products/import', csv);
  t.like(again.body.data.import, { rows: 4, created: 0, updated: 0, unchanged: 4, failed: 0 });
});

test.serial('products: past the import window nothing is written', async (t) => {
  const timed = await startApp({ IMPORT_WINDOW_SECONDS: '0' });
  t.teardown(() => timed.close());
  const who = await signUpOwner(timed);
  const res = await who.client.request('POST', '/api/v1/products/import', { raw: 'product_sku,name,variant_sku\nA,A,A-1\n', contentType: 'text/csv' });
  t.is(res.status, 422);
  t.regex(res.body.error, /window and was stopped; nothing was written/);
  const { rows } = await timed.db.raw('select count(*)::int as n from products');
  t.is(rows[0].n, 0);
});

test.serial('limits: over 20 MB is 413 and over 50,000 rows is 422, writing nothing', async (t) => {
  const before = await counts();
  const header = 'product_sku,name,variant_sku,price\n';
  const row = (i: number) => `BIG-${i},Big product number ${i} with a longer name to fill the file,BIG-${i}-V,1.00\n`;
  let big = header;
  for (let i = 0; big.length <= 20 * 1024 * 1024; i++) big += row(i);
  const raw = await csvPost('/api/v1/products/import', big);
  t.is(raw.status, 413, raw.text.slice(0, 200));
  const multipart = await multipartPost('/api/v1/products/import', big);
  t.is(multipart.status, 413, multipart.text.slice(0, 200));

  // Counted before anything is written, whatever ends the lines.
  for (const eol of ['\n', '\r\n', '\r']) {
    let many = header.replace('\n', eol);
    for (let i = 0; i <= 50_000; i++) many += `M-${i},M,M-${i}-V,1${eol}`;
    const rows = await csvPost('/api/v1/products/import', many);
    t.is(rows.status, 422, `${JSON.stringify(eol)}: ${rows.text.slice(0, 200)}`);
    t.regex(rows.body.error, /more than 50000 rows/);
  }
  t.deepEqual(await counts(), before);
});

test.serial('limits: rows are counted, not lines: blank lines and a cell of many lines do not count toward the 50,000', async (t) => {
  const csv = 'product_sku,name,variant_sku,price,description\n' + '\n'.repeat(50_000) + 'LINES-1,Lines,LINES-1-V,1,"' + 'a\n'.repeat(10) + '"\n' + ',,,,\n'.repeat(10) + 'LINES-2,Lines,LINES-2-V,2,\n';
  const res = await csvPost('/api/v1/products/import', csv);
  t.is(res.status, 200, res.text.slice(0, 200));
  t.like(res.body.data.import, { rows: 2, created: 2, failed: 0 });
  t.is((await productBySku('LINES-1'))?.description, 'a\n'.repeat(9) + 'a');
});

/** A loopback server that answers each path as told. */
async function upstream(t: any, routes: Record<string, (res: http.ServerResponse) => void>) {
  const server = http.createServer((req, res) => (routes[req.url ?? ''] ?? ((r) => r.writeHead(404).end()))(res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    server.closeAllConnections();
    server.close();
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

test.serial('url: fetched under the outbound policy; non-2xx and broken answers are 502, too large 413', async (t) => {
  const base = await upstream(t, {
    '/ok.csv': (res) => res.writeHead(200, { 'content-type': 'text/csv' }).end('product_sku,name,variant_sku,price\nURL-1,From a URL,URL-1-A,3\n'),
    '/gone.csv': (res) => res.writeHead(500).end('no'),
    '/cut.csv': (res) => {
      res.writeHead(200, { 'content-length': '1000' });
      res.write('product_sku,name,variant_sku\n');
      setTimeout(() => res.destroy(), 50);
    },
    '/huge.csv': (res) => {
      res.writeHead(200, { 'content-type': 'text/csv' });
      res.write('product_sku,name,variant_sku\n');
      const line = 'H,H,' + 'x'.repeat(1000) + '\n';
      let sent = 0;
      const pump = () => {
        while (sent < 21 * 1024 * 1024) {
          sent += line.length;
          if (!res.write(line)) return void res.once('drain', pump);
        }
        res.end();
      };
      res.on('error', () => undefined);
      pump();
    },
  });
  const ok = await owner.client.post('/api/v1/products/import', { url: `${base}/ok.csv` });
  t.is(ok.status, 200, ok.text);
  t.like(ok.body.data.import, { rows: 1, created: 1 });
  const gone = await owner.client.post('/api/v1/products/import', { url: `${base}/gone.csv` });
  t.is(gone.status, 502);
  t.regex(gone.body.error, /answered 500/);
  const cut = await owner.client.post('/api/v1/products/import', { url: `${base}/cut.csv` });
  t.is(cut.status, 502, cut.text);
  const huge = await owner.client.post('/api/v1/products/import', { url: `${base}/huge.csv` });
  t.is(huge.status, 413, huge.text);
  const refused = await startApp();
  t.teardown(() => refused.close());
  const who = await signUpOwner(refused);
  const denied = await who.client.post('/api/v1/products/import', { url: `${base}/ok.csv` });
  t.is(denied.status, 422);
  t.regex(denied.body.error, /^url: refused to connect to 127\.0\.0\.1/);
  const bad = await who.client.post('/api/v1/products/import', { url: 'ftp://example.com/x.csv' });
  t.is(bad.status, 422);
  t.regex(bad.body.error, /^url:/);
});

test.serial('orders: grouped into orders, totals in numeric, customers by email; a re-import is unchanged, a change updates', async (t) => {
  // A subscription to orders: each imported order's event is queued for it, none for the customers.
  const hook = await owner.client.post('/api/v1/webhooks', { url: 'https://hooks.example.com/in', event_types: ['order.*'] });
  t.is(hook.status, 201, hook.text);
  const queued = async () =>
    (await app.db('webhook_deliveries').where({ workspace_id: owner.workspace.id, subscription_id: hook.body.data.subscription.id }).orderBy('id').select('event_type')).map((d: any) => d.event_type);
  const events = async () => (await app.db('events').where({ workspace_id: owner.workspace.id }).whereLike('type', 'order.%').orderBy('created_at').select('type', 'data')).map((e: any) => e.type);
  const csv =
    'order_number,external_id,external_source,status,currency,customer_email,customer_name,channel_id,placed_at,sku,description,quantity,price\n' +
    '1001,,shop,paid,eur,Ann@Example.com,Ann,,2026-11-01T10:00:00Z,TEE-S,"Tee, small",2,12.50\n' +
    '1001,,shop,,,,,,,MUG-1,Mug,1.5,3.333\n' +
    '1002,X-2,shop,pending,USD,bob@example.com,Bob,,,PEN-1,Pen,3,0.10\n' +
    '1003,,shop,pending,USD,bob@example.com,,,,,Service,1,99.99\n';
  const first = await csvPost('/api/v1/orders/import', csv);
  t.is(first.status, 200, first.text);
  t.deepEqual(first.body.data.import, {
    rows: 4, created: 2, updated: 0, unchanged: 0, failed: 2, skipped: 0, notes: [],
    // In line order: the order's own line (2) before the line that failed it (3).
    errors: [
      { row: 2, field: 'order', message: 'order 1001: not imported because line 3 failed.' },
      { row: 3, field: 'price', message: 'price: must have at most 2 decimal places.' },
    ],
  });
  const fixed = csv.replace('3.333', '3.33');
  const second = await csvPost('/api/v1/orders/import', fixed);
  t.deepEqual(second.body.data.import, { rows: 4, created: 1, updated: 0, unchanged: 2, failed: 0, skipped: 0, notes: [], errors: [] });
  const list = (await owner.client.get('/api/v1/orders?q=1001')).body.data.orders;
  t.is(list.length, 1);
  const order = (await owner.client.get(`/api/v1/orders/${list[0].id}`)).body.data;
  t.like(order.order, { order_number: '1001', external_source: 'shop', external_id: '1001', status: 'paid', currency: 'EUR', subtotal: '30.00', total: '30.00', placed_at: '2026-11-01T10:00:00.000Z' });
  t.deepEqual(order.items.map((i: any) => [i.sku, i.quantity, i.price, i.line_total]), [['TEE-S', '2', '12.50', '25.00'], ['MUG-1', '1.5', '3.33', '5.00']]);
  const customer = (await owner.client.get('/api/v1/customers?q=ann@example.com')).body.data.customers[0];
  t.is(order.order.customer_id, customer.id);
  t.is(customer.name, 'Ann');
  t.deepEqual(await events(), ['order.created', 'order.created', 'order.created']);
  // The event's body is the order as the API returns it, stored as compact JSON (the webhook body's bytes).
  const { rows: stored } = await app.db.raw(`select data::text as text from events where workspace_id = ? and type = 'order.created' and data->'order'->>'id' = ?`, [
    owner.workspace.id,
    String(order.order.id),
  ]);
  t.is(stored.length, 1);
  t.is(stored[0].text, JSON.stringify({ order: order.order, items: order.items }));
  t.deepEqual(await queued(), ['order.created', 'order.created', 'order.created']);
  // Each new customer has its customer.created event, whose body is the customer as the API returns it.
  const { rows: customerEvents } = await app.db.raw(`select data::text as text from events where workspace_id = ? and type = 'customer.created' order by created_at, id`, [owner.workspace.id]);
  const bob = (await owner.client.get('/api/v1/customers?q=bob@example.com')).body.data.customers[0];
  t.deepEqual(customerEvents.map((e: any) => e.text).sort(), [JSON.stringify({ customer: customer }), JSON.stringify({ customer: bob })].sort());

  const third = await csvPost('/api/v1/orders/import', fixed);
  t.deepEqual(third.body.data.import, { rows: 4, created: 0, updated: 0, unchanged: 3, failed: 0, skipped: 0, notes: [], errors: [] });
  t.is((await events()).length, 3, 'an identical re-import emits nothing');

  const changed = await multipartPost('/api/v1/orders/import', fixed.replace('Pen,3,0.10', 'Pen,4,0.10'));
  t.deepEqual(changed.body.data.import, { rows: 4, created: 0, updated: 1, unchanged: 2, failed: 0, skipped: 0, notes: [], errors: [] });
  t.deepEqual((await events()).slice(3), ['order.updated']);
  const pen = (await owner.client.get('/api/v1/orders?q=X-2')).body.data.orders[0];
  t.is(pen.total, '0.40');
  const { rows: updated } = await app.db.raw(`select data::text as text from events where workspace_id = ? and type = 'order.updated'`, [owner.workspace.id]);
  t.is(updated[0].text, JSON.stringify((await owner.client.get(`/api/v1/orders/${pen.id}`)).body.data));
  t.deepEqual((await queued()).slice(3), ['order.updated']);
  const { rows } = await app.db.raw('select count(*)::int as n from orders where workspace_id = ?', [owner.workspace.id]);
  t.is(rows[0].n, 3, 'never a duplicate');
});

test.serial('orders: missing columns, unknown channels, non-adjacent rows and abort', async (t) => {
  const none = await csvPost('/api/v1/orders/import', 'sku,quantity\nA,1\n');
  t.is(none.status, 422);
  t.regex(none.body.error, /price/);
  const keyless = await csvPost('/api/v1/orders/import', 'sku,price\nA,1\n');
  t.is(keyless.status, 422);
  t.regex(keyless.body.error, /order_number/);
  const before = await counts();
  const csv =
    'order_number,channel_id,external_source,sku,price\n' +
    'A-1,999999,shop,X,1\n' +
    'A-2,,shop,X,1\n' +
    'A-3,,quote,X,1\n' +
    'A-2,,shop,Y,1\n';
  const abort = await csvPost('/api/v1/orders/import?on_error=abort', csv);
  t.is(abort.status, 422);
  t.deepEqual(abort.body.data.import.errors, [
    // In line order, whether a check is of the field (4, 5) or against the database (2).
    { row: 2, field: 'channel_id', message: 'channel_id: no channel 999999 in this workspace.' },
    { row: 4, field: 'external_source', message: 'external_source: the source "quote" is reserved for orders converted from quotes.' },
    { row: 5, field: 'order_number', message: 'order A-2: its rows must be adjacent; it started on line 3 and another order came in between.' },
  ]);
  t.like(abort.body.data.import, { rows: 4, created: 1, failed: 3 });
  t.deepEqual(await counts(), before);
});

test.serial('big files: rows of later batches keep their line numbers and checks; a re-import of 12,000 rows is all unchanged', async (t) => {
  // Rows are read and written 5,000 at a time, the next batch read while the last is written.
  const other = await signUpOwner(app, 'Big');
  const post = (path: string, csv: string) => other.client.request('POST', path, { raw: csv, contentType: 'text/csv' });
  const products = ['product_sku,name,variant_sku,price'];
  for (let i = 0; i < 12_000; i++) products.push(`P${Math.floor(i / 3)},Product ${Math.floor(i / 3)},P${Math.floor(i / 3)}-${i % 3},${(10 + (i % 7)).toFixed(2)}`);
  products[7001] = products[7001].replace(/,[\d.]+$/, ',1.234'); // line 7002: a bad price in the second batch
  products[11001] = products[11001].replace(/^(P\d+),(Product \d+),P\d+-\d/, '$1,$2,P3-0'); // line 11002: a SKU already on line 11
  const expectedErrors = [
    { row: 7002, field: 'price', message: 'price: must have at most 2 decimal places.' },
    { row: 11002, field: 'variant_sku', message: 'variant_sku: SKU "P3-0" is already on line 11 of this file.' },
  ];
  const first = await post('/api/v1/products/import', `${products.join('\n')}\n`);
  t.is(first.status, 200, first.text);
  t.deepEqual(first.body.data.import, { rows: 12_000, created: 11_998, updated: 0, unchanged: 0, failed: 2, skipped: 0, notes: [], errors: expectedErrors });
  const again = await post('/api/v1/products/import', `${products.join('\n')}\n`);
  t.deepEqual(again.body.data.import, { rows: 12_000, created: 0, updated: 0, unchanged: 11_998, failed: 2, skipped: 0, notes: [], errors: expectedErrors });

  // 4,000 orders of 3 items: batches end inside orders (5,000 is no multiple of 3), which must not split them.
  const orders = ['order_number,external_source,customer_email,sku,quantity,price'];
  for (let i = 0; i < 12_000; i++) orders.push(`${Math.floor(i / 3)},shop,c${Math.floor(i / 9)}@example.com,P${i % 4000}-0,${1 + (i % 3)},${(10 + (i % 7)).toFixed(2)}`);
  const placed = await post('/api/v1/orders/import', `${orders.join('\n')}\n`);
  t.is(placed.status, 200, placed.text);
  t.deepEqual(placed.body.data.import, { rows: 12_000, created: 4000, updated: 0, unchanged: 0, failed: 0, skipped: 0, notes: [], errors: [] });
  const { rows } = await app.db.raw(
    `select count(*)::int as orders, count(*) filter (where (select count(*) from order_items i where i.order_id = o.id) = 3)::int as whole,
            (select count(*)::int from events e where e.workspace_id = ? and e.type = 'order.created') as events
       from orders o where o.workspace_id = ?`,
    [other.workspace.id, other.workspace.id],
  );
  t.deepEqual(rows[0], { orders: 4000, whole: 4000, events: 4000 });
  const replaced = await post('/api/v1/orders/import', `${orders.join('\n')}\n`);
  t.deepEqual(replaced.body.data.import, { rows: 12_000, created: 0, updated: 0, unchanged: 4000, failed: 0, skipped: 0, notes: [], errors: [] });
});
