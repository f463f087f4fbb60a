import test from 'ava';
import { useOwnerApp } from '../helpers/fixture.js';
import { exportCsv, ordersHeader, taxExcludedOrders, taxIncludedOrders } from '../helpers/shopify-exports.js';

/**
 * Shopify exports as shops download them, in the spellings of different years: products (category, description and
 * status columns, image-only rows, line numbers of records that span lines) and orders (one row per line item).
 */

const { owner } = useOwnerApp(test);

const csvPost = (path: string, csv: string) => owner.client.request('POST', path, { raw: csv, contentType: 'text/csv' });

async function productBySku(sku: string) {
  const res = await owner.client.get(`/api/v1/products?q=${encodeURIComponent(sku)}`);
  return res.body.data.products.find((p: { sku: string }) => p.sku === sku);
}

const variantColumns = [
  'Option1 Name', 'Option1 Value', 'Option2 Name', 'Option2 Value', 'Option3 Name', 'Option3 Value', 'Variant SKU', 'Variant Grams',
  'Variant Inventory Tracker', 'Variant Inventory Qty', 'Variant Inventory Policy', 'Variant Fulfillment Service', 'Variant Price',
  'Variant Compare At Price', 'Variant Requires Shipping', 'Variant Taxable', 'Variant Barcode', 'Image Src', 'Image Position', 'Image Alt Text',
  'Gift Card', 'SEO Title', 'SEO Description',
];

/** Before 2021: Type, Published and no Status. */
const header2019 = ['Handle', 'Title', 'Body (HTML)', 'Vendor', 'Type', 'Tags', 'Published', ...variantColumns, 'Variant Image', 'Variant Weight Unit'];
/** 2021–2022: Standardized Product Type (a taxonomy path) and Custom Product Type, then Status. */
const header2021 = [
  'Handle', 'Title', 'Body (HTML)', 'Vendor', 'Standardized Product Type', 'Custom Product Type', 'Tags', 'Published', ...variantColumns,
  'Variant Image', 'Variant Weight Unit', 'Variant Tax Code', 'Cost per item', 'Status',
];
/** From 2023: Product Category (a taxonomy path) and Type, Status last. */
const header2023 = [
  'Handle', 'Title', 'Body (HTML)', 'Vendor', 'Product Category', 'Type', 'Tags', 'Published', ...variantColumns,
  'Google Shopping / Google Product Category', 'Variant Image', 'Variant Weight Unit', 'Variant Tax Code', 'Cost per item',
  'Price / International', 'Compare At Price / International', 'Status',
];
/** A shorter spelling some tools and older templates write: Body, Standard Product Type. */
const headerBody = ['Handle', 'Title', 'Body', 'Vendor', 'Standard Product Type', 'Published', 'Option1 Name', 'Option1 Value', 'Variant SKU', 'Variant Price', 'Image Src', 'Status'];

const stock = { 'Variant Grams': '200', 'Variant Inventory Tracker': 'shopify', 'Variant Inventory Qty': '12', 'Variant Inventory Policy': 'deny', 'Variant Fulfillment Service': 'manual', 'Variant Requires Shipping': 'TRUE', 'Variant Taxable': 'TRUE', 'Variant Weight Unit': 'kg' };

test.serial('products, before 2021: Type is the category, Published the status; image-only rows are skipped and counted', async (t) => {
  const csv = exportCsv(header2019, [
    { Handle: 'linen-apron', Title: 'Linen Apron', 'Body (HTML)': '<p>Stone-washed linen.</p>\n<p>Adjustable strap.</p>', Vendor: 'Fold & Co', Type: 'Aprons', Tags: 'kitchen, linen', Published: 'FALSE', 'Option1 Name': 'Color', 'Option1 Value': 'Natural', 'Variant SKU': 'APRON-NAT', 'Variant Price': '34.00', 'Image Src': 'https://cdn.example/apron.jpg', 'Image Position': '1', 'Gift Card': 'FALSE', ...stock },
    { Handle: 'linen-apron', 'Option1 Value': 'Charcoal', 'Variant SKU': 'APRON-CHA', 'Variant Price': '34.00', ...stock },
    { Handle: 'linen-apron', 'Image Src': 'https://cdn.example/apron-back.jpg', 'Image Position': '2' },
    { Handle: 'linen-apron', 'Image Src': 'https://cdn.example/apron-detail.jpg', 'Image Position': '3', 'Image Alt Text': 'Strap, close up' },
    { Handle: 'tea-towel', Title: 'Tea Towel', 'Body (HTML)': '<p>Waffle cotton.</p>', Vendor: 'Fold & Co', Type: 'Towels', Published: 'TRUE', 'Option1 Name': 'Title', 'Option1 Value': 'Default Title', 'Variant SKU': 'TOWEL-1', 'Variant Price': '9.50', 'Gift Card': 'FALSE', ...stock },
  ]);
  const res = await csvPost('/api/v1/products/import', csv);
  t.is(res.status, 200, res.text);
  t.deepEqual(res.body.data.import, { rows: 3, created: 3, updated: 0, unchanged: 0, failed: 0, skipped: 2, notes: [], errors: [] });
  t.like(await productBySku('linen-apron'), { name: 'Linen Apron', category: 'Aprons', status: 'draft', brand: 'Fold & Co', description: '<p>Stone-washed linen.</p>\n<p>Adjustable strap.</p>' });
  t.like(await productBySku('tea-towel'), { category: 'Towels', status: 'active' });
  const again = await csvPost('/api/v1/products/import', csv);
  t.deepEqual(again.body.data.import, { rows: 3, created: 0, updated: 0, unchanged: 3, failed: 0, skipped: 2, notes: [], errors: [] });
});

test.serial('products, 2021: Custom Product Type, else the last segment of Standardized Product Type; an empty Status leaves it to Published', async (t) => {
  const csv = exportCsv(header2021, [
    { Handle: 'trail-runner', Title: 'Trail Runner', 'Body (HTML)': '<p>Grippy sole.</p>', Vendor: 'Peak', 'Standardized Product Type': 'Apparel & Accessories > Shoes > Athletic Shoes', 'Custom Product Type': 'Running shoes', Published: 'TRUE', 'Option1 Name': 'Size', 'Option1 Value': '42', 'Variant SKU': 'TR-42', 'Variant Price': '120.00', Status: 'archived', ...stock },
    { Handle: 'trail-runner', 'Option1 Value': '43', 'Variant SKU': 'TR-43', 'Variant Price': '120.00', ...stock },
    { Handle: 'wool-socks', Title: 'Wool Socks', 'Body (HTML)': '<p>Merino.</p>', Vendor: 'Peak', 'Standardized Product Type': 'Apparel & Accessories > Clothing > Underwear & Socks > Socks', Published: 'FALSE', 'Option1 Name': 'Title', 'Option1 Value': 'Default Title', 'Variant SKU': 'SOCK-1', 'Variant Price': '15.00', Status: '', ...stock },
    { Handle: 'gift-card', Title: 'Gift Card', Vendor: 'Peak', Published: 'TRUE', 'Option1 Name': 'Denominations', 'Option1 Value': '$25', 'Variant Price': '25.00', 'Gift Card': 'TRUE', Status: 'active' },
  ]);
  const res = await csvPost('/api/v1/products/import', csv);
  t.is(res.status, 200, res.text);
  t.deepEqual(res.body.data.import, { rows: 4, created: 4, updated: 0, unchanged: 0, failed: 0, skipped: 0, notes: [], errors: [] });
  t.like(await productBySku('trail-runner'), { category: 'Running shoes', status: 'archived' });
  t.like(await productBySku('wool-socks'), { category: 'Socks', status: 'draft' });
  t.like(await productBySku('gift-card'), { category: null, status: 'active' });
});

test.serial('products, 2023: Type, else the last segment of Product Category; Status wins over Published', async (t) => {
  const csv = exportCsv(header2023, [
    { Handle: 'desk-lamp', Title: 'Desk Lamp', 'Body (HTML)': '<p>Brass, 40 cm.</p>', Vendor: 'Lumen', 'Product Category': 'Home & Garden > Lighting > Lamps', Type: '', Published: 'FALSE', 'Option1 Name': 'Finish', 'Option1 Value': 'Brass', 'Variant SKU': 'LAMP-BR', 'Variant Price': '89.00', 'Image Src': 'https://cdn.example/lamp.jpg', 'Image Position': '1', Status: 'active', ...stock },
    { Handle: 'desk-lamp', 'Image Src': 'https://cdn.example/lamp-2.jpg', 'Image Position': '2' },
    { Handle: 'bulb', Title: 'Bulb', 'Body (HTML)': '', Vendor: 'Lumen', 'Product Category': 'Home & Garden > Lighting > Light Bulbs', Type: 'Spare parts', Published: 'TRUE', 'Option1 Name': 'Title', 'Option1 Value': 'Default Title', 'Variant SKU': 'BULB-1', 'Variant Price': '4.00', Status: 'draft', ...stock },
  ]);
  const res = await csvPost('/api/v1/products/import', csv);
  t.is(res.status, 200, res.text);
  t.deepEqual(res.body.data.import, { rows: 2, created: 2, updated: 0, unchanged: 0, failed: 0, skipped: 1, notes: [], errors: [] });
  t.like(await productBySku('desk-lamp'), { category: 'Lamps', status: 'active', description: '<p>Brass, 40 cm.</p>' });
  t.like(await productBySku('bulb'), { category: 'Spare parts', status: 'draft' });
});

test.serial('products: Body and Standard Product Type; a row error in a record over several lines names the line it starts on', async (t) => {
  const csv = exportCsv(headerBody, [
    { Handle: 'oak-board', Title: 'Oak Board', Body: 'Oiled oak.\nHand finished.', Vendor: 'Grain', 'Standard Product Type': 'Home & Garden > Kitchen & Dining > Cutting Boards', Published: 'TRUE', 'Option1 Name': 'Size', 'Option1 Value': 'Small', 'Variant SKU': 'OAK-S', 'Variant Price': '25.00' },
    { Handle: 'oak-board', 'Option1 Value': 'Large', 'Variant SKU': 'OAK-L', 'Variant Price': '35.00' },
    { Handle: 'ash-board', Title: 'Ash Board', Body: '<p>Ash.</p>\n<p>Three\nlines.</p>', Vendor: 'Grain', Published: 'TRUE', 'Option1 Name': 'Title', 'Option1 Value': 'Default Title', 'Variant SKU': 'ASH-1', 'Variant Price': '19.999' },
    { Handle: 'ash-board', 'Image Src': 'https://cdn.example/ash.jpg' },
    { Handle: 'elm-board', Title: 'Elm Board', Body: 'Elm.', Vendor: 'Grain', Published: 'FALSE', 'Option1 Name': 'Title', 'Option1 Value': 'Default Title', 'Variant SKU': 'ELM-1', 'Variant Price': '21.00', Status: '' },
  ]);
  // Lines: header 1; oak-board 2–3 and 4; ash-board 5–7; its image 8; elm-board 9.
  const res = await csvPost('/api/v1/products/import', csv);
  t.is(res.status, 200, res.text);
  t.deepEqual(res.body.data.import, {
    rows: 4, created: 3, updated: 0, unchanged: 0, failed: 1, skipped: 1, notes: [],
    errors: [{ row: 5, field: 'price', message: 'price: must have at most 2 decimal places.' }],
  });
  t.like(await productBySku('oak-board'), { category: 'Cutting Boards', description: 'Oiled oak.\nHand finished.', status: 'active' });
  t.like(await productBySku('elm-board'), { description: 'Elm.', status: 'draft' });
});

async function orderByNumber(number: string) {
  const list = (await owner.client.get(`/api/v1/orders?q=${encodeURIComponent(number)}`)).body.data.orders;
  const found = list.find((o: { order_number: string }) => o.order_number === number);
  if (!found) return undefined;
  const res = await owner.client.get(`/api/v1/orders/${found.id}`);
  return { ...res.body.data.order, items: res.body.data.items.map((i: any) => [i.sku, i.description, i.quantity, i.price]) };
}

async function customerEmail(id: number | null) {
  if (id === null) return null;
  return (await owner.client.get(`/api/v1/customers/${id}`)).body.data.customer.email;
}

test.serial('orders, prices without tax: statuses, customers, discount, tax and shipping; the total is the export\'s; figures that disagree are a row error', async (t) => {
  const res = await csvPost('/api/v1/orders/import', taxExcludedOrders);
  t.is(res.status, 200, res.text);
  t.deepEqual(res.body.data.import, {
    rows: 7, created: 4, updated: 0, unchanged: 0, failed: 2, skipped: 0, notes: [],
    errors: [
      { row: 8, field: 'Subtotal', message: 'Subtotal: the line items come to 23.00, less the discount of 0.00 that is 23.00, not the Subtotal of 25.00.' },
      { row: 9, field: 'order', message: 'order 5501234567894: not imported because line 8 failed.' },
    ],
  });
  const first = await orderByNumber('#1001');
  t.like(first, {
    external_source: 'shopify', external_id: '5501234567890', status: 'fulfilled', currency: 'USD',
    subtotal: '82.50', discount_amount: '7.75', tax_amount: '6.18', total: '80.93', placed_at: '2026-03-04T15:15:42.000Z',
  });
  t.deepEqual(first.items, [['APRON-NAT', 'Linen Apron - Natural', '2', '34.00'], ['TOWEL-1', 'Tea Towel', '1', '9.50'], [null, 'Shipping', '1', '5.00']]);
  t.is(await customerEmail(first.customer_id), 'ann@example.com');
  const ann = (await owner.client.get(`/api/v1/customers/${first.customer_id}`)).body.data.customer;
  t.is(ann.name, 'Ann Archer');

  const noEmail = await orderByNumber('#1002');
  t.like(noEmail, { status: 'pending', customer_id: null, tax_amount: '9.60', total: '129.60', placed_at: '2026-03-06T22:45:00.000Z' });
  t.deepEqual(noEmail.items, [['TR-42', 'Trail Runner - 42', '1', '120.00']]);
  t.like(await orderByNumber('#1003'), { status: 'refunded', total: '20.52', subtotal: '19.00' });
  t.like(await orderByNumber('#1004'), { status: 'cancelled', total: '4.32' });
  t.is(await orderByNumber('#1005'), undefined);

  const again = await csvPost('/api/v1/orders/import', taxExcludedOrders);
  t.like(again.body.data.import, { rows: 7, created: 0, updated: 0, unchanged: 4, failed: 2 });
  // A changed tax on a stored order updates it (the figures are the order's, not only its items).
  const changed = taxExcludedOrders.replace(',1.52,20.52,', ',1.62,20.62,');
  const third = await csvPost('/api/v1/orders/import', changed);
  t.like(third.body.data.import, { created: 0, updated: 1, unchanged: 3, failed: 2 });
  t.like(await orderByNumber('#1003'), { tax_amount: '1.62', total: '20.62' });
});

test.serial('orders, prices with tax included: the total is Subtotal + Shipping, the tax inside the prices; a Total that fits neither is a row error', async (t) => {
  const res = await csvPost('/api/v1/orders/import', taxIncludedOrders);
  t.is(res.status, 200, res.text);
  t.deepEqual(res.body.data.import, {
    rows: 5, created: 3, updated: 0, unchanged: 0, failed: 1, skipped: 0, notes: [],
    errors: [{ row: 6, field: 'Total', message: 'Total: 55.00 is neither Subtotal + Shipping + Taxes (52.38) nor, with taxes included in the prices, Subtotal + Shipping (50.00).' }],
  });
  const dubai = await orderByNumber('#2001');
  // No Id column: the order number is the external id.
  t.like(dubai, { external_source: 'shopify', external_id: '#2001', status: 'paid', currency: 'AED', subtotal: '36.50', tax_amount: '0.00', total: '36.50', placed_at: '2026-03-05T05:00:00.000Z' });
  t.deepEqual(dubai.items, [['COOKIE-1', 'Date Cookies', '3', '10.50'], [null, 'Shipping', '1', '5.00']]);
  const discounted = await orderByNumber('#2002');
  t.like(discounted, { status: 'fulfilled', subtotal: '150.00', discount_amount: '15.00', tax_amount: '0.00', total: '135.00', placed_at: '2026-03-06T19:30:00.000Z' });
  t.is(discounted.items.length, 2);
  t.like(await orderByNumber('#2003'), { status: 'pending', total: '90.00' });
  t.is(await orderByNumber('#2004'), undefined);
});

test.serial('orders: an unknown financial status and a bad amount are row errors naming the Shopify column; a file without Total is refused', async (t) => {
  const csv = exportCsv(ordersHeader, [
    { Name: '#3001', Email: 'x@example.com', 'Financial Status': 'expired', Currency: 'USD', Subtotal: '5.00', Total: '5.00', 'Created at': '2026-03-09 10:00:00 +0000', 'Lineitem quantity': '1', 'Lineitem name': 'Pin', 'Lineitem price': '5.00' },
    { Name: '#3002', Email: 'x@example.com', 'Financial Status': 'paid', Currency: 'USD', Subtotal: '5.00', Total: '5,00', 'Lineitem quantity': '1', 'Lineitem name': 'Pin', 'Lineitem price': '5.001' },
  ]);
  const res = await csvPost('/api/v1/orders/import', csv);
  t.is(res.status, 200, res.text);
  t.deepEqual(res.body.data.import.errors, [
    { row: 2, field: 'Financial Status', message: 'Financial Status: "expired" is not one of paid, partially_refunded, pending, authorized, partially_paid, refunded, voided.' },
    { row: 3, field: 'Total', message: 'Total: "5,00" is not an amount (digits, at most 2 decimals, below 1000000000000).' },
    { row: 3, field: 'Lineitem price', message: 'Lineitem price: must have at most 2 decimal places.' },
  ]);
  const header = ordersHeader.filter((name) => name !== 'Total');
  const noTotal = await csvPost('/api/v1/orders/import', exportCsv(header, [{ Name: '#3003', 'Lineitem price': '1.00' }]));
  t.is(noTotal.status, 422);
  t.regex(noTotal.body.error, /no Total column/);
});
