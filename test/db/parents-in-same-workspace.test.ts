import test from 'ava';
import { signUpOwner, uniqueEmail } from '../helpers/app.js';
import { useApp } from '../helpers/fixture.js';
import { ok } from '../helpers/client.js';
import { refusal } from '../helpers/database.js';

// A quote's lines, an order's items and a product's variants name their parent with its workspace (migration
// 20261126220000_parent_keys_with_workspace): the database refuses a row whose parent belongs to another workspace,
// and a parent's deletion still takes its rows.

const { app } = useApp(test);

test("a line, an item or a variant naming another workspace's quote, order or product is refused; its own are taken", async (t) => {
  const mine = await signUpOwner(app, 'Mine');
  const theirs = await signUpOwner(app, 'Theirs');
  const c = theirs.client;
  const product = (await ok(c.post('/api/v1/products', { sku: 'PK-1', name: 'Thing', variants: [{ sku: 'PK-1-A', price: '5.00' }] }), 201)).product;
  const customer = (await ok(c.post('/api/v1/customers', { email: uniqueEmail('pk'), name: 'Pat' }), 201)).customer.id;
  const quote = (await ok(c.post('/api/v1/quotes', { customer_id: customer, lines: [{ sku: 'PK-1-A', quantity: '2' }] }), 201)).quote.id;
  await ok(c.post(`/api/v1/quotes/${quote}/send`, { notify: false }));
  await ok(c.post(`/api/v1/quotes/${quote}/accept`));
  const order = (await ok(c.post(`/api/v1/quotes/${quote}/convert`), 201)).order.id;

  const rows = [
    { table: 'quote_lines', constraint: 'quote_lines_quotes_foreign', sql: `insert into quote_lines (workspace_id, quote_id, description, quantity, price, line_total) values (?, ?, 'x', 1, 1, 1)`, parent: quote },
    { table: 'order_items', constraint: 'order_items_orders_foreign', sql: `insert into order_items (workspace_id, order_id, description, quantity, price, line_total) values (?, ?, 'x', 1, 1, 1)`, parent: order },
    { table: 'variants', constraint: 'variants_products_foreign', sql: `insert into variants (workspace_id, product_id, sku, name) values (?, ?, 'PK-1-' || ?, 'x')`, parent: product.id },
  ];
  for (const { table, constraint, sql, parent } of rows) {
    const bindings = (workspace: number) => (table === 'variants' ? [workspace, parent, workspace] : [workspace, parent]);
    t.deepEqual(await refusal(app.db, sql, bindings(mine.workspace.id)), { code: '23503', constraint }, `${table}: another workspace's parent`);
    t.is(await refusal(app.db, sql, bindings(theirs.workspace.id)), null, `${table}: its own workspace's parent`);
  }
  t.is((await app.db('quote_lines').where({ workspace_id: mine.workspace.id })).length, 0);

  // A parent's deletion still takes its rows, through the API.
  await ok(c.delete(`/api/v1/orders/${order}`));
  t.is((await app.db('order_items').where({ order_id: order })).length, 0, "the order's items went with it");
  await ok(c.delete(`/api/v1/products/${product.id}`));
  t.is((await app.db('variants').where({ product_id: product.id })).length, 0, "the product's variants went with it");
  const draft = (await ok(c.post('/api/v1/quotes', { customer_id: customer, lines: [{ description: 'Work', quantity: '1', price: '3.00' }] }), 201)).quote.id;
  await ok(c.delete(`/api/v1/quotes/${draft}`));
  t.is((await app.db('quote_lines').where({ quote_id: draft })).length, 0, "the quote's lines went with it");
});
