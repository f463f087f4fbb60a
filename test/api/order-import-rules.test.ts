import test from 'ava';
import { useOwnerApp } from '../helpers/fixture.js';

/** Rules of the order import that a client relies on, each pinned on its own. */

const { app, owner } = useOwnerApp(test);

const importOrders = (csv: string) => owner.client.request('POST', '/api/v1/orders/import', { raw: csv, contentType: 'text/csv' });

/** Every order numbered `number`, as "source: sku×quantity, …", by source. */
async function ordersNumbered(number: string): Promise<Record<string, string>> {
  const list = await owner.client.get(`/api/v1/orders?q=${number}&limit=100`);
  const found: Record<string, string> = {};
  for (const summary of list.body.data.orders as { id: number }[]) {
    const { order, items } = (await owner.client.get(`/api/v1/orders/${summary.id}`)).body.data;
    if (order.order_number !== number) continue;
    found[order.external_source] = (items as { sku: string; quantity: string }[]).map((i) => `${i.sku}×${i.quantity}`).join(', ');
  }
  return found;
}

/** How many order events of each type the workspace has. */
async function orderEvents(): Promise<Record<string, number>> {
  const rows = await app.db('events').where({ workspace_id: owner.workspace.id }).whereLike('type', 'order.%').select('type');
  const counts: Record<string, number> = {};
  for (const { type } of rows as { type: string }[]) counts[type] = (counts[type] ?? 0) + 1;
  return counts;
}

test('orders are told apart by (external_source, order_number): 1001 from shop and 1001 from amazon are two orders, adjacent or not', async (t) => {
  const csv =
    'order_number,external_source,currency,customer_email,sku,quantity,price\n' +
    '1001,shop,EUR,ann@example.com,A,1,10.00\n' +
    '1001,shop,EUR,ann@example.com,B,2,10.00\n' +
    // Adjacent to shop's 1001: a new order, not more rows of it.
    '1001,amazon,EUR,bob@example.com,C,3,10.00\n' +
    '1002,shop,EUR,ann@example.com,D,4,10.00\n' +
    // After shop's and amazon's 1001 are complete: a third order, not a repeat of theirs out of place.
    '1001,ebay,EUR,cy@example.com,E,5,10.00\n';
  const first = await importOrders(csv);
  t.is(first.status, 200, first.text);
  t.deepEqual(first.body.data.import.errors, []);
  t.is(first.body.data.import.failed, 0);
  t.deepEqual(await ordersNumbered('1001'), { shop: 'A×1, B×2', amazon: 'C×3', ebay: 'E×5' });
  t.deepEqual(await ordersNumbered('1002'), { shop: 'D×4' });

  // The same file again: each row finds its own source's order, identical, so nothing is written or announced.
  const same = await importOrders(csv);
  t.is(same.status, 200, same.text);
  t.like(same.body.data.import, { created: 0, updated: 0, failed: 0, errors: [] });
  t.deepEqual(await orderEvents(), { 'order.created': 4 });

  // A re-import from one source finds that source's stored order and leaves the others as they were.
  const again = await importOrders('order_number,external_source,currency,customer_email,sku,quantity,price\n1001,amazon,EUR,bob@example.com,C,7,10.00\n');
  t.is(again.status, 200, again.text);
  t.deepEqual(again.body.data.import.errors, []);
  t.deepEqual(await ordersNumbered('1001'), { shop: 'A×1, B×2', amazon: 'C×7', ebay: 'E×5' });
  const { rows } = await app.db.raw('select count(*)::int as n from orders where workspace_id = ?', [owner.workspace.id]);
  t.is(rows[0].n, 4);
  t.deepEqual(await orderEvents(), { 'order.created': 4, 'order.updated': 1 });
});
