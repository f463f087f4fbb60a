import test from 'ava';
import { uniqueEmail } from '../helpers/app.js';
import { useOwnerApp } from '../helpers/fixture.js';
import { Client } from '../helpers/client.js';

const { app, owner } = useOwnerApp(test);

// Line breaks (CR, LF, NEL, U+2028), tabs and other control characters, inside the value (edges are trimmed).
const hostile = ['Evil\r\nBcc: victim@example.com', 'Two\nLines', 'Tab\there', 'Nel\u0085line', 'Sep\u2028arator', 'Bell\u0007', 'Esc\u001b[31m', 'Del\u007f'];

const counts = async () => {
  const tables = ['workspaces', 'users', 'customers', 'products', 'variants', 'channels', 'quotes', 'quote_lines', 'orders', 'order_items'];
  return Object.fromEntries(await Promise.all(tables.map(async (table) => [table, Number((await app.db(table).count({ n: '*' }))[0].n)])));
};

/** Each case: a request whose `field` holds the value; the answer must be 422 naming that field. */
type Case = { field: string; send: (value: string) => Promise<{ status: number; body: any; text: string }> };

const secret = () => ({ headers: { authorization: `Bearer ${owner.keys.secret_key}` } });
const cases: Case[] = [
  { field: 'name', send: (v) => new Client(app.url).post('/api/v1/auth/signup', { email: uniqueEmail(), password: 'correct horse battery', name: v }) },
  { field: 'workspace_name', send: (v) => new Client(app.url).post('/api/v1/auth/signup', { email: uniqueEmail(), password: 'correct horse battery', name: 'Ann', workspace_name: v }) },
  { field: 'name', send: (v) => owner.client.post('/api/v1/customers', { email: uniqueEmail('c'), name: v }) },
  { field: 'company', send: (v) => owner.client.post('/api/v1/customers', { email: uniqueEmail('c'), company: v }) },
  { field: 'phone', send: (v) => owner.client.post('/api/v1/customers', { email: uniqueEmail('c'), phone: v }) },
  { field: 'name', send: (v) => owner.client.post('/api/v1/products', { sku: 'S-1', name: v }) },
  { field: 'sku', send: (v) => owner.client.post('/api/v1/products', { sku: v, name: 'Chair' }) },
  { field: 'brand', send: (v) => owner.client.post('/api/v1/products', { sku: 'S-1', name: 'Chair', brand: v }) },
  { field: 'category', send: (v) => owner.client.post('/api/v1/products', { sku: 'S-1', name: 'Chair', category: v }) },
  { field: 'variants.0.name', send: (v) => owner.client.post('/api/v1/products', { sku: 'S-1', name: 'Chair', variants: [{ sku: 'V-1', name: v }] }) },
  { field: 'variants.0.sku', send: (v) => owner.client.post('/api/v1/products', { sku: 'S-1', name: 'Chair', variants: [{ sku: v }] }) },
  { field: 'name', send: (v) => owner.client.post('/api/v1/channels', { name: v }) },
  { field: 'customer.name', send: (v) => owner.client.post('/api/v1/quotes', { customer: { email: uniqueEmail('q'), name: v } }) },
  { field: 'customer.company', send: (v) => owner.client.post('/api/v1/quotes', { customer: { email: uniqueEmail('q'), company: v } }) },
  { field: 'lines.0.sku', send: (v) => owner.client.post('/api/v1/quotes', { customer: { email: uniqueEmail('q') }, lines: [{ sku: v, price: '1.00' }] }) },
  { field: 'external_id', send: (v) => owner.client.post('/api/v1/quotes/external', { customer: { email: uniqueEmail('q') }, external_id: v }, secret()) },
  { field: 'external_id', send: (v) => owner.client.post('/api/v1/orders/external', { external_source: 'shop', external_id: v, items: [] }, secret()) },
  { field: 'order_number', send: (v) => owner.client.post('/api/v1/orders/external', { external_source: 'shop', external_id: 'E-1', order_number: v }, secret()) },
  { field: 'customer.name', send: (v) => owner.client.post('/api/v1/orders/external', { external_source: 'shop', external_id: 'E-1', customer: { email: uniqueEmail('o'), name: v } }, secret()) },
  { field: 'items.0.sku', send: (v) => owner.client.post('/api/v1/orders/external', { external_source: 'shop', external_id: 'E-1', items: [{ sku: v, price: '1.00' }] }, secret()) },
];

test.serial('single-line fields refuse line breaks, tabs and other control characters: 422 naming the field, nothing written', async (t) => {
  const before = await counts();
  for (const { field, send } of cases) {
    for (const value of hostile) {
      const res = await send(value);
      t.is(res.status, 422, `${field} ${JSON.stringify(value)}: ${res.text}`);
      t.true(res.body?.error?.startsWith(`${field}: `), `${field}: ${res.body?.error}`);
    }
  }
  t.deepEqual(await counts(), before);
});

test.serial('updates are held to the same rule: workspace, customer, product, variant and channel names', async (t) => {
  const fresh = new Client(app.url);
  t.is((await fresh.post('/api/v1/auth/signup', { email: uniqueEmail(), password: 'correct horse battery', name: 'No Workspace' })).status, 201);
  const workspace = await fresh.post('/api/v1/workspace', { name: 'Acme\r\nInc' });
  t.is(workspace.status, 422);
  t.regex(workspace.body.error, /^name: /);

  const customer = (await owner.client.post('/api/v1/customers', { email: uniqueEmail('u'), name: 'Cleo' })).body.data.customer;
  const product = (await owner.client.post('/api/v1/products', { sku: 'UPD-1', name: 'Desk', variants: [{ sku: 'UPD-1-V' }] })).body.data.product;
  const channel = (await owner.client.post('/api/v1/channels', { name: 'Web shop' })).body.data.channel;
  for (const [path, field] of [
    [`/api/v1/customers/${customer.id}`, 'name'],
    [`/api/v1/customers/${customer.id}`, 'company'],
    [`/api/v1/products/${product.id}`, 'name'],
    [`/api/v1/products/${product.id}`, 'sku'],
    [`/api/v1/products/${product.id}/variants/${product.variants[0].id}`, 'name'],
    [`/api/v1/channels/${channel.id}`, 'name'],
  ]) {
    const res = await owner.client.patch(path, { [field]: 'Line\nBreak' });
    t.is(res.status, 422, `${path} ${field}: ${res.text}`);
    t.regex(res.body.error, new RegExp(`^${field}: .*single line`));
  }
  t.like((await owner.client.get(`/api/v1/customers/${customer.id}`)).body.data.customer, { name: 'Cleo', company: null });
});

test.serial('free text keeps its line breaks and tabs (notes, descriptions); line breaks at the edges of a name are trimmed away', async (t) => {
  const customer = await owner.client.post('/api/v1/customers', { email: uniqueEmail('m'), name: '\r\nMaya Multi\n', notes: 'first line\r\nsecond\tline' });
  t.is(customer.status, 201, customer.text);
  t.like(customer.body.data.customer, { name: 'Maya Multi', notes: 'first line\r\nsecond\tline' });

  const product = await owner.client.post('/api/v1/products', { sku: 'ML-1', name: 'Lamp', description: 'Warm light.\nDimmable.' });
  t.is(product.status, 201, product.text);
  t.is(product.body.data.product.description, 'Warm light.\nDimmable.');

  const quote = await owner.client.post('/api/v1/quotes', {
    customer: { email: uniqueEmail('m'), name: 'Quinn Unicode ✓ Ünïcödé' },
    notes: 'Terms:\n1. Pay within 30 days',
    lines: [{ description: 'Installation\nand setup', price: '10.00' }],
  });
  t.is(quote.status, 201, quote.text);
  t.is(quote.body.data.quote.notes, 'Terms:\n1. Pay within 30 days');
  t.is(quote.body.data.quote.customer_name, 'Quinn Unicode ✓ Ünïcödé');
  t.is(quote.body.data.lines[0].description, 'Installation\nand setup');

  const hook = await owner.client.post('/api/v1/webhooks', { url: 'https://hooks.example.com/in', description: 'CRM\nsync' });
  t.is(hook.status, 201, hook.text);
  t.is(hook.body.data.subscription.description, 'CRM\nsync');
});
