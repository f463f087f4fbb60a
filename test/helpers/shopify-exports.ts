/** Shopify exports as shops download them, written by column name (a test names only the cells it cares about). */

/** A cell as a spreadsheet writes it: quoted when it holds a comma, a quote or a line break. */
const quoted = (value: string) => (/[",\r\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value);

/** An export: the header, then each row's cells by column name (missing ones empty). */
export function exportCsv(header: string[], rows: Record<string, string>[]): string {
  return [header.join(','), ...rows.map((row) => header.map((name) => quoted(row[name] ?? '')).join(','))].join('\n') + '\n';
}

/** The orders export's header (orders_export.csv), all its columns. */
export const ordersHeader = [
  'Name', 'Email', 'Financial Status', 'Paid at', 'Fulfillment Status', 'Fulfilled at', 'Accepts Marketing', 'Currency', 'Subtotal',
  'Shipping', 'Taxes', 'Total', 'Discount Code', 'Discount Amount', 'Shipping Method', 'Created at', 'Lineitem quantity', 'Lineitem name',
  'Lineitem price', 'Lineitem compare at price', 'Lineitem sku', 'Lineitem requires shipping', 'Lineitem taxable', 'Lineitem fulfillment status',
  'Billing Name', 'Billing Street', 'Billing Address1', 'Billing Address2', 'Billing Company', 'Billing City', 'Billing Zip', 'Billing Province',
  'Billing Country', 'Billing Phone', 'Shipping Name', 'Shipping Street', 'Shipping Address1', 'Shipping Address2', 'Shipping Company',
  'Shipping City', 'Shipping Zip', 'Shipping Province', 'Shipping Country', 'Shipping Phone', 'Notes', 'Note Attributes', 'Cancelled at',
  'Payment Method', 'Payment Reference', 'Refunded Amount', 'Vendor', 'Outstanding Balance', 'Employee', 'Location', 'Device ID', 'Id', 'Tags',
  'Risk Level', 'Source', 'Lineitem discount', 'Tax 1 Name', 'Tax 1 Value', 'Tax 2 Name', 'Tax 2 Value', 'Phone', 'Receipt Number', 'Duties',
  'Billing Province Name', 'Shipping Province Name', 'Payment ID', 'Payment Terms Name', 'Next Payment Due At', 'Payment References',
];

const annAddress = { 'Billing Street': '12 Elm St', 'Billing Address1': '12 Elm St', 'Billing City': 'Albany', 'Billing Zip': '12207', 'Billing Province': 'NY', 'Billing Country': 'US' };

/**
 * A US shop, prices without tax (-0500): a fulfilled order of two items with a discount code and shipping, an
 * authorized one without an email, a refunded and a voided one, and one whose line items do not make its Subtotal.
 * Lines: header 1; #1001 2–4 (its Notes cell spans lines 2–3); #1002 5; #1003 6; #1004 7; #1005 8–9.
 */
export const taxExcludedOrders = exportCsv(ordersHeader, [
  {
    Name: '#1001', Email: 'ann@example.com', 'Financial Status': 'paid', 'Paid at': '2026-03-04 10:16:01 -0500', 'Fulfillment Status': 'fulfilled',
    'Fulfilled at': '2026-03-05 08:00:00 -0500', 'Accepts Marketing': 'yes', Currency: 'USD', Subtotal: '69.75', Shipping: '5.00', Taxes: '6.18',
    Total: '80.93', 'Discount Code': 'WELCOME10', 'Discount Amount': '7.75', 'Shipping Method': 'Standard', 'Created at': '2026-03-04 10:15:42 -0500',
    'Lineitem quantity': '2', 'Lineitem name': 'Linen Apron - Natural', 'Lineitem price': '34.00', 'Lineitem sku': 'APRON-NAT',
    'Lineitem requires shipping': 'true', 'Lineitem taxable': 'true', 'Lineitem fulfillment status': 'fulfilled', 'Billing Name': 'Ann Archer', ...annAddress,
    'Shipping Name': 'Ann Archer', Notes: 'Gift wrap, please.\nLeave at the door.', 'Payment Method': 'Shopify Payments', Id: '5501234567890',
    Source: 'web', 'Lineitem discount': '6.80', 'Tax 1 Name': 'NY State Tax 4.0%', 'Tax 1 Value': '2.99', 'Tax 2 Name': 'Albany County Tax 4.0%', 'Tax 2 Value': '3.19',
  },
  {
    Name: '#1001', Email: 'ann@example.com', 'Lineitem quantity': '1', 'Lineitem name': 'Tea Towel', 'Lineitem price': '9.50', 'Lineitem sku': 'TOWEL-1',
    'Lineitem requires shipping': 'true', 'Lineitem taxable': 'true', 'Lineitem fulfillment status': 'fulfilled', 'Lineitem discount': '0.95',
  },
  {
    Name: '#1002', 'Financial Status': 'authorized', 'Fulfillment Status': 'unfulfilled', Currency: 'USD', Subtotal: '120.00', Shipping: '0.00', Taxes: '9.60',
    Total: '129.60', 'Discount Amount': '0.00', 'Created at': '2026-03-06 17:45:00 -0500', 'Lineitem quantity': '1', 'Lineitem name': 'Trail Runner - 42',
    'Lineitem price': '120.00', 'Lineitem sku': 'TR-42', 'Billing Name': 'Walk-in customer', Id: '5501234567891', Source: 'pos',
  },
  {
    Name: '#1003', Email: 'bo@example.com', 'Financial Status': 'refunded', 'Fulfillment Status': 'unfulfilled', Currency: 'USD', Subtotal: '15.00', Shipping: '4.00',
    Taxes: '1.52', Total: '20.52', 'Discount Amount': '0.00', 'Created at': '2026-03-07 09:00:00 -0500', 'Lineitem quantity': '1', 'Lineitem name': 'Wool Socks',
    'Lineitem price': '15.00', 'Lineitem sku': 'SOCK-1', 'Billing Name': 'Bo Buyer', 'Refunded Amount': '20.52', Id: '5501234567892',
  },
  {
    Name: '#1004', Email: 'bo@example.com', 'Financial Status': 'voided', Currency: 'USD', Subtotal: '4.00', Shipping: '0.00', Taxes: '0.32', Total: '4.32',
    'Discount Amount': '0.00', 'Created at': '2026-03-07 09:30:00 -0500', 'Cancelled at': '2026-03-07 10:00:00 -0500', 'Lineitem quantity': '1',
    'Lineitem name': 'Bulb', 'Lineitem price': '4.00', 'Lineitem sku': 'BULB-1', 'Billing Name': 'Bo Buyer', Id: '5501234567893',
  },
  {
    Name: '#1005', Email: 'cy@example.com', 'Financial Status': 'paid', Currency: 'USD', Subtotal: '25.00', Shipping: '0.00', Taxes: '0.00', Total: '25.00',
    'Discount Amount': '0.00', 'Created at': '2026-03-08 12:00:00 -0500', 'Lineitem quantity': '2', 'Lineitem name': 'Tea Towel', 'Lineitem price': '9.50',
    'Lineitem sku': 'TOWEL-1', 'Billing Name': 'Cy', Id: '5501234567894',
  },
  { Name: '#1005', Email: 'cy@example.com', 'Lineitem quantity': '1', 'Lineitem name': 'Bulb', 'Lineitem price': '4.00', 'Lineitem sku': 'BULB-1' },
]);

/** An older export without the Id column. */
const headerWithoutId = ordersHeader.filter((name) => name !== 'Id');

/**
 * A shop in Dubai, prices with VAT included (+0400): Total is Subtotal + Shipping, Taxes the VAT inside the prices.
 * A paid one with shipping, a partially refunded fulfilled one with a discount, a partially paid one, and one whose
 * Total agrees with neither reading. Lines: header 1; #2001 2; #2002 3–4; #2003 5; #2004 6.
 */
export const taxIncludedOrders = exportCsv(headerWithoutId, [
  {
    Name: '#2001', Email: 'dana@example.ae', 'Financial Status': 'paid', 'Fulfillment Status': 'unfulfilled', Currency: 'AED', Subtotal: '31.50', Shipping: '5.00',
    Taxes: '1.74', Total: '36.50', 'Discount Amount': '0.00', 'Created at': '2026-03-05 09:00:00 +0400', 'Lineitem quantity': '3', 'Lineitem name': 'Date Cookies',
    'Lineitem price': '10.50', 'Lineitem sku': 'COOKIE-1', 'Billing Name': 'Dana Haddad', 'Tax 1 Name': 'VAT 5%', 'Tax 1 Value': '1.74',
  },
  {
    Name: '#2002', Email: 'eli@example.ae', 'Financial Status': 'partially_refunded', 'Fulfillment Status': 'fulfilled', Currency: 'AED', Subtotal: '135.00',
    Shipping: '0.00', Taxes: '6.43', Total: '135.00', 'Discount Code': 'SPRING', 'Discount Amount': '15.00', 'Created at': '2026-03-06 23:30:00 +0400',
    'Lineitem quantity': '1', 'Lineitem name': 'Brass Lantern', 'Lineitem price': '100.00', 'Lineitem sku': 'LANTERN-1', 'Billing Name': 'Eli Noor', 'Refunded Amount': '25.00',
  },
  { Name: '#2002', Email: 'eli@example.ae', 'Lineitem quantity': '2', 'Lineitem name': 'Candle', 'Lineitem price': '25.00', 'Lineitem sku': 'CANDLE-1' },
  {
    Name: '#2003', Email: 'eli@example.ae', 'Financial Status': 'partially_paid', Currency: 'AED', Subtotal: '80.00', Shipping: '10.00', Taxes: '4.29', Total: '90.00',
    'Discount Amount': '0.00', 'Created at': '2026-03-07 10:00:00 +0400', 'Lineitem quantity': '1', 'Lineitem name': 'Rug', 'Lineitem price': '80.00',
    'Lineitem sku': 'RUG-1', 'Billing Name': 'Eli Noor',
  },
  {
    Name: '#2004', Email: 'dana@example.ae', 'Financial Status': 'paid', Currency: 'AED', Subtotal: '50.00', Shipping: '0.00', Taxes: '2.38', Total: '55.00',
    'Discount Amount': '0.00', 'Created at': '2026-03-08 10:00:00 +0400', 'Lineitem quantity': '1', 'Lineitem name': 'Tray', 'Lineitem price': '50.00',
    'Lineitem sku': 'TRAY-1', 'Billing Name': 'Dana Haddad',
  },
]);
