/**
 * The files of bench/shopify-imports.ts: one catalogue written as a Shopify product export (products_export.csv) and
 * in the service's own product columns, and one set of orders written as a Shopify orders export (orders_export.csv)
 * and in the service's own order columns. Each pair stores the same products, variants, orders, items and customers.
 */
import { ordersHeader } from '../test/helpers/shopify-exports.js';

/** A cell as a spreadsheet writes it: quoted when it holds a comma, a quote or a line break. */
const cell = (value: string) => (/[",\r\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value);
const csvLine = (header: string[], row: Record<string, string>) => header.map((name) => cell(row[name] ?? '')).join(',');

const words = ['organic', 'cotton', 'classic', 'slim', 'relaxed', 'heavyweight', 'recycled', 'merino', 'linen', 'waterproof', 'lightweight', 'premium'];
const pick = (i: number, n: number) => words[(i * 7 + n * 3) % words.length];
const kinds = ['Shirts', 'Trousers', 'Jackets', 'Socks', 'Hats', 'Bags'];
const sizes = ['S', 'M', 'L', 'XL'];
const colours = ['Navy', 'Sand', 'Olive', 'Black'];

/** The columns of a current product export, in Shopify's order. */
const productHeader = [
  'Handle', 'Title', 'Body (HTML)', 'Vendor', 'Product Category', 'Type', 'Tags', 'Published', 'Option1 Name', 'Option1 Value',
  'Option1 Linked To', 'Option2 Name', 'Option2 Value', 'Option2 Linked To', 'Option3 Name', 'Option3 Value', 'Option3 Linked To',
  'Variant SKU', 'Variant Grams', 'Variant Inventory Tracker', 'Variant Inventory Qty', 'Variant Inventory Policy',
  'Variant Fulfillment Service', 'Variant Price', 'Variant Compare At Price', 'Variant Requires Shipping', 'Variant Taxable',
  'Unit Price Total Measure', 'Unit Price Total Measure Unit', 'Unit Price Base Measure', 'Unit Price Base Measure Unit',
  'Variant Barcode', 'Image Src', 'Image Position', 'Image Alt Text', 'Gift Card', 'SEO Title', 'SEO Description',
  'Google Shopping / Google Product Category', 'Google Shopping / Gender', 'Google Shopping / Age Group', 'Variant Image',
  'Variant Weight Unit', 'Variant Tax Code', 'Cost per item', 'Status',
];
const ownProductHeader = ['product_sku', 'name', 'type', 'status', 'brand', 'category', 'description', 'variant_sku', 'variant_name', 'price', 'attr:Size', 'attr:Color'];

export interface Files {
  shopify: string;
  own: string;
  /** What the own file's import reports: rows (variants), and products. */
  variants: number;
  products: number;
  /** Shopify rows with nothing but an image (skipped). */
  imageRows: number;
}

/**
 * `rows` Shopify rows: products of 1 to 8 variants (Size × Color; every 16th product a single `Default Title`
 * variant), the product's columns on its first row only, every 20th product's variants without a SKU (made from the
 * handle and option values), every 25th product one image-only row after its variants, every 7th product a draft.
 * Body (HTML) holds commas, quotes and now and then a line break. The own file: the same variants, one row each,
 * every product column on every row.
 */
export function productFiles(rows: number): Files {
  const shopify = [productHeader.join(',')];
  const own = [ownProductHeader.join(',')];
  let variants = 0;
  let products = 0;
  let imageRows = 0;
  for (let p = 0; shopify.length - 1 < rows; p++) {
    products++;
    const handle = `${pick(p, 1)}-${pick(p, 2)}-${kinds[p % kinds.length].toLowerCase()}-${p}`;
    const title = `${pick(p, 1)} ${pick(p, 2)} ${kinds[p % kinds.length].toLowerCase().replace(/s$/, '')} no. ${p}`;
    const body =
      `<p>A <strong>${pick(p, 3)}</strong>, ${pick(p, 4)} piece in ${pick(p, 5)} fabric; cut for everyday wear, ` +
      `machine washable at 30 degrees.</p>${p % 5 === 0 ? '\n' : ''}<p>Made in Portugal. <a href="https://shop.example/care">Care</a>, style ${p}.</p>`;
    const vendor = `Brand ${p % 40}`;
    const type = kinds[p % kinds.length];
    const status = p % 7 === 0 ? 'draft' : 'active';
    const single = p % 16 === 0;
    const withSku = p % 20 !== 0;
    const options: [string, string][] = single ? [] : sizes.slice(0, 1 + (p % 4)).flatMap((s) => colours.slice(0, 1 + ((p >> 2) % 2)).map((c) => [s, c] as [string, string]));
    const count = Math.max(1, options.length);
    for (let v = 0; v < count && shopify.length - 1 < rows; v++) {
      const [size, colour] = options[v] ?? ['', ''];
      const sku = withSku ? `${handle.toUpperCase()}${single ? '' : `-${size}-${colour.toUpperCase()}`}` : '';
      const madeSku = single ? handle : `${handle}-${size}-${colour}`;
      const price = (19 + (p % 50) + (size === 'XL' ? 2 : 0)).toFixed(2);
      const row: Record<string, string> = {
        Handle: handle,
        'Option1 Value': single ? 'Default Title' : size,
        'Option2 Value': colour,
        'Variant SKU': sku,
        'Variant Grams': '250',
        'Variant Inventory Tracker': 'shopify',
        'Variant Inventory Qty': String((p * 13 + v) % 90),
        'Variant Inventory Policy': 'deny',
        'Variant Fulfillment Service': 'manual',
        'Variant Price': price,
        'Variant Compare At Price': p % 3 === 0 ? (Number(price) + 10).toFixed(2) : '',
        'Variant Requires Shipping': 'true',
        'Variant Taxable': 'true',
        'Variant Barcode': `40${String(p * 10 + v).padStart(11, '0')}`,
        'Variant Weight Unit': 'kg',
      };
      if (v === 0) {
        Object.assign(row, {
          Title: title, 'Body (HTML)': body, Vendor: vendor, 'Product Category': `Apparel & Accessories > Clothing > ${type}`, Type: type,
          Tags: `${pick(p, 6)}, ${pick(p, 7)}, summer`, Published: status === 'active' ? 'true' : 'false',
          'Option1 Name': single ? 'Title' : 'Size', 'Option2 Name': single ? '' : 'Color',
          'Image Src': `https://cdn.shopify.com/s/files/1/0000/0001/products/${handle}.jpg?v=1700000000`, 'Image Position': '1',
          'Image Alt Text': title, 'Gift Card': 'false', 'SEO Title': title, 'SEO Description': `${title}, ${pick(p, 8)} and ${pick(p, 9)}.`,
          Status: status,
        });
      }
      shopify.push(csvLine(productHeader, row));
      own.push(
        csvLine(ownProductHeader, {
          product_sku: handle, name: title, type: 'physical', status, brand: vendor, category: type, description: body,
          variant_sku: sku || madeSku, variant_name: single ? '' : `${size} / ${colour}`, price, 'attr:Size': size, 'attr:Color': colour,
        }),
      );
      variants++;
    }
    if (p % 25 === 0 && shopify.length - 1 < rows) {
      shopify.push(csvLine(productHeader, { Handle: handle, 'Image Src': `https://cdn.shopify.com/s/files/1/0000/0001/products/${handle}-2.jpg?v=1700000000`, 'Image Position': '2' }));
      imageRows++;
    }
  }
  return { shopify: `${shopify.join('\n')}\n`, own: `${own.join('\n')}\n`, variants, products, imageRows };
}

export interface OrderFiles {
  shopify: string;
  own: string;
  orders: number;
  customers: number;
}

const financial = ['paid', 'paid', 'paid', 'paid', 'pending', 'authorized', 'partially_refunded', 'refunded', 'voided', 'paid'];
const statusOf: Record<string, string> = { paid: 'paid', partially_refunded: 'paid', pending: 'pending', authorized: 'pending', refunded: 'refunded', voided: 'cancelled' };
const cents = (value: bigint) => `${value / 100n}.${String(value % 100n).padStart(2, '0')}`;

/**
 * `items` line items, 1 to 4 per order (2.5 on average), a customer per 3 orders; prices without tax (-0500), taxes
 * 8% of the subtotal, every 5th order with a discount code, free shipping (a Shipping item would make the own file's
 * rows more than the Shopify file's). The own file: the same orders by their Shopify Id, one row per item, with the
 * status Shopify's statuses map to; it has no discount or tax columns, the one difference in what is stored.
 */
export function orderFiles(items: number): OrderFiles {
  const shopify = [ordersHeader.join(',')];
  const own = ['order_number,external_id,external_source,status,currency,customer_email,customer_name,channel_id,placed_at,sku,description,quantity,price'];
  let orders = 0;
  for (let o = 0, i = 0; i < items; o++) {
    orders++;
    const count = Math.min(1 + (o % 4), items - i);
    const c = Math.floor(o / 3);
    const email = `customer${c}@example.com`;
    const billing = `Customer ${c} ${pick(c, 1)}`;
    const name = `#${1001 + o}`;
    const id = String(5_500_000_000_000 + o);
    const fin = financial[o % financial.length];
    const fulfilled = fin === 'paid' && o % 3 === 0;
    const day = String(1 + (o % 28)).padStart(2, '0');
    const hour = String(o % 24).padStart(2, '0');
    const lines = Array.from({ length: count }, (_, k) => {
      const n = i + k;
      return { sku: `SKU-${String(n % 16000).padStart(6, '0')}`, name: `${pick(n, 1)} shirt - ${sizes[n % 4]}`, quantity: 1 + (n % 3), price: BigInt(1900 + (n % 50) * 100 + (n % 4) * 25) };
    });
    const lineCents = lines.reduce((sum, l) => sum + BigInt(l.quantity) * l.price, 0n);
    const discount = o % 5 === 0 ? lineCents / 10n : 0n;
    const subtotal = lineCents - discount;
    const taxes = (subtotal * 8n) / 100n;
    lines.forEach((l, k) => {
      const row: Record<string, string> = {
        Name: name, Email: email, 'Lineitem quantity': String(l.quantity), 'Lineitem name': l.name, 'Lineitem price': cents(l.price),
        'Lineitem compare at price': '', 'Lineitem sku': l.sku, 'Lineitem requires shipping': 'true', 'Lineitem taxable': 'true',
        'Lineitem fulfillment status': fulfilled ? 'fulfilled' : 'pending', 'Lineitem discount': discount ? cents((BigInt(l.quantity) * l.price) / 10n) : '0.00',
      };
      if (k === 0) {
        Object.assign(row, {
          'Financial Status': fin, 'Paid at': fin === 'paid' ? `2026-03-${day} ${hour}:16:01 -0500` : '', 'Fulfillment Status': fulfilled ? 'fulfilled' : 'unfulfilled',
          'Fulfilled at': fulfilled ? `2026-03-${day} 23:00:00 -0500` : '', 'Accepts Marketing': o % 2 ? 'yes' : 'no', Currency: 'USD',
          Subtotal: cents(subtotal), Shipping: '0.00', Taxes: cents(taxes), Total: cents(subtotal + taxes), 'Discount Code': discount ? 'WELCOME10' : '',
          'Discount Amount': cents(discount), 'Shipping Method': 'Free shipping', 'Created at': `2026-03-${day} ${hour}:15:42 -0500`,
          'Billing Name': billing, 'Billing Street': `${o % 900} Elm St`, 'Billing Address1': `${o % 900} Elm St`, 'Billing City': 'Albany', 'Billing Zip': '12207',
          'Billing Province': 'NY', 'Billing Country': 'US', 'Shipping Name': billing, 'Shipping Street': `${o % 900} Elm St`, 'Shipping Address1': `${o % 900} Elm St`,
          'Shipping City': 'Albany', 'Shipping Zip': '12207', 'Shipping Province': 'NY', 'Shipping Country': 'US',
          Notes: o % 11 === 0 ? 'Gift wrap, please.\nLeave at the door.' : '', 'Payment Method': 'Shopify Payments', Id: id, Source: 'web',
          'Tax 1 Name': 'NY State Tax 8.0%', 'Tax 1 Value': cents(taxes), 'Billing Province Name': 'New York', 'Shipping Province Name': 'New York',
          'Payment ID': `c${id}.1`, 'Payment References': `c${id}.1`,
        });
      }
      shopify.push(csvLine(ordersHeader, row));
      own.push(
        csvLine(
          ['order_number', 'external_id', 'external_source', 'status', 'currency', 'customer_email', 'customer_name', 'channel_id', 'placed_at', 'sku', 'description', 'quantity', 'price'],
          {
            order_number: name, external_id: id, external_source: 'shopify', status: fulfilled ? 'fulfilled' : statusOf[fin], currency: 'USD', customer_email: email,
            customer_name: billing, placed_at: `2026-03-${day}T${hour}:15:42-05:00`, sku: l.sku, description: l.name, quantity: String(l.quantity), price: cents(l.price),
          },
        ),
      );
    });
    i += count;
  }
  return { shopify: `${shopify.join('\n')}\n`, own: `${own.join('\n')}\n`, orders, customers: Math.ceil(orders / 3) };
}
