import type { Access } from '../access.js';
import type { Db } from '../db/database.js';
import { jsonPages, type JsonPage } from '../db/pages.js';
import { scoped, whereExact, whereSearch } from '../db/scoped.js';
import { Conflict, NotFound, Validation } from '../errors.js';
import { givenFields } from '../db/fields.js';
import { isNumericOverflow } from '../db/errors.js';
import { lineTotalFits } from '../money.js';
import { emit } from '../events/outbox.js';
import { assertChannelAccess, assertChannelExists, whereReadable } from '../channels/access.js';
import { upsertCustomer } from '../customers/service.js';
import { lockedQuoteForUser, recordActivity } from '../quotes/service.js';
import type { ExternalOrderInput, ItemInput } from './schema.js';

export type OrderJson = Record<string, unknown> & { id: number; channel_id: number | null };
export type ItemJson = Record<string, unknown> & { id: number };

/** The order's stored API JSON (`api_json`, rendered by a trigger on every write), as json. */
export const orderJson = (o = 'o') => `${o}.api_json::json`;

const itemFields = (i: string): [string, string][] => [
  ['id', `${i}.id`], ['order_id', `${i}.order_id`], ['sku', `${i}.sku`], ['description', `${i}.description`],
  ['quantity', `trim_scale(${i}.quantity)::text`], ['price', `${i}.price::text`], ['line_total', `${i}.line_total::text`],
  ['created_at', `iso_time(${i}.created_at)`], ['updated_at', `iso_time(${i}.updated_at)`],
];

export const itemJson = (i = 'i') => `json_build_object(${itemFields(i).map(([key, expr]) => `'${key}', ${expr}`).join(', ')})`;

/** The same item as compact JSON text (row_to_json's output, what JSON.stringify prints): for bodies built in SQL. */
export const itemJsonText = (i = 'i') => `row_to_json((select r from (select ${itemFields(i).map(([key, expr]) => `${expr} as "${key}"`).join(', ')}) r))::text`;

async function orderById(db: Db, workspaceId: number, id: number): Promise<OrderJson> {
  const row = await scoped(db, 'orders as o', workspaceId).where('o.id', id).first(db.raw(`${orderJson()} as json`));
  if (!row) throw new NotFound('Order not found.');
  return row.json;
}

async function itemsOf(db: Db, workspaceId: number, orderId: number): Promise<ItemJson[]> {
  const rows = await scoped(db, 'order_items as i', workspaceId).where('i.order_id', orderId).orderBy('i.id').select(db.raw(`${itemJson()} as json`));
  return rows.map((r: { json: ItemJson }) => r.json);
}

async function withItems(db: Db, workspaceId: number, id: number) {
  return { order: await orderById(db, workspaceId, id), items: await itemsOf(db, workspaceId, id) };
}

async function accessibleOrder(db: Db, access: Access, id: number, need: 'read' | 'write', lock = false): Promise<OrderJson> {
  if (lock && !(await scoped(db, 'orders', access.workspaceId).where({ id }).forUpdate().first('id'))) throw new NotFound('Order not found.');
  const order = await orderById(db, access.workspaceId, id);
  await assertChannelAccess(db, access, order.channel_id, need);
  return order;
}

export async function getOrder(db: Db, access: Access, id: number) {
  await accessibleOrder(db, access, id, 'read');
  return withItems(db, access.workspaceId, id);
}

export interface OrderFilters {
  status?: string;
  channel_id?: number;
  customer_id?: number;
  q?: string;
}

/** The orders the caller may read, filtered, by id, as JSON pages. */
export function listOrders(db: Db, access: Access, filters: OrderFilters): AsyncGenerator<JsonPage> {
  const filtered = () => {
    const query = whereReadable(scoped(db, 'orders as o', access.workspaceId), db, access, 'o.channel_id');
    // The customer is joined only to search its name and email.
    if (filters.q) query.leftJoin('customers as c', 'c.id', 'o.customer_id');
    whereExact(query, { 'o.status': filters.status, 'o.channel_id': filters.channel_id, 'o.customer_id': filters.customer_id });
    return whereSearch(query, ['o.order_number', 'o.external_id', 'c.name', 'c.email'], filters.q);
  };
  return jsonPages(db, filtered, 'o.id', 'o.api_json');
}

/** Status and notes; `order.updated` with the order and its items. */
export async function updateOrder(trx: Db, access: Access, id: number, changes: { status?: string; notes?: string | null }) {
  await accessibleOrder(trx, access, id, 'write', true);
  const given = givenFields(changes);
  if (Object.keys(given).length === 0) return withItems(trx, access.workspaceId, id);
  await scoped(trx, 'orders', access.workspaceId).where({ id }).update({ ...given, updated_at: trx.fn.now() });
  const result = await withItems(trx, access.workspaceId, id);
  await emit(trx, access, 'order.updated', result);
  return result;
}

/** Hard delete; `order.deleted` with the snapshot. */
export async function deleteOrder(trx: Db, access: Access, id: number): Promise<OrderJson> {
  const order = await accessibleOrder(trx, access, id, 'write', true);
  await scoped(trx, 'orders', access.workspaceId).where({ id }).delete();
  await emit(trx, access, 'order.deleted', { order });
  return order;
}

async function replaceItems(trx: Db, workspaceId: number, orderId: number, items: ItemInput[]): Promise<void> {
  items.forEach((item, index) => {
    if (!lineTotalFits(item.quantity, item.price!)) throw new Validation(`items.${index}.quantity`, `items.${index}.quantity: quantity × price must be less than 1000000000000.`);
  });
  await scoped(trx, 'order_items', workspaceId).where({ order_id: orderId }).delete();
  if (items.length) {
    await trx('order_items').insert(
      items.map((item) => ({
        workspace_id: workspaceId,
        order_id: orderId,
        sku: item.sku ?? null,
        description: item.description ?? null,
        quantity: item.quantity,
        price: item.price,
        line_total: trx.raw('round(?::numeric * ?::numeric, 2)', [item.quantity, item.price]),
      })),
    );
  }
}

/** subtotal = Σ line totals; total = subtotal − discount + tax (an external order has neither). */
async function totalOrder(trx: Db, workspaceId: number, orderId: number): Promise<void> {
  await trx
    .raw(
    `update orders o set subtotal = t.subtotal, total = t.subtotal - o.discount_amount + o.tax_amount, updated_at = now()
     from (select coalesce(sum(line_total), 0) as subtotal from order_items where order_id = ? and workspace_id = ?) t
     where o.id = ? and o.workspace_id = ?`,
    [orderId, workspaceId, orderId, workspaceId],
    )
    .catch((err: unknown) => {
      if (isNumericOverflow(err)) throw new Validation('items', 'items: the order total must be less than 1000000000000.');
      throw err;
    });
}

/**
 * `POST /orders/external`: upsert by (workspace, external_source, external_id). A new order emits
 * `order.created`; a match is updated (its items replaced) and emits `order.updated`.
 */
export async function upsertExternalOrder(trx: Db, access: Access, input: ExternalOrderInput) {
  const workspaceId = access.workspaceId;
  await assertChannelExists(trx, workspaceId, input.channel_id);
  const customer = input.customer ? (await upsertCustomer(trx, access, input.customer)).customer : null;
  const values = {
    order_number: input.order_number ?? null,
    status: input.status,
    currency: input.currency,
    customer_id: customer?.id ?? null,
    channel_id: input.channel_id ?? null,
    notes: input.notes ?? null,
    placed_at: input.placed_at ?? null,
  };
  const { rows } = await trx.raw(
    `insert into orders (workspace_id, external_source, external_id, ${Object.keys(values).join(', ')})
     values (?, ?, ?, ${Object.keys(values).map(() => '?').join(', ')})
     on conflict (workspace_id, external_source, external_id) do update set
       ${Object.keys(values).map((key) => `${key} = excluded.${key}`).join(', ')}, updated_at = now()
     returning id, (xmax = 0) as created`,
    [workspaceId, input.external_source, input.external_id, ...(Object.values(values) as (string | number | Date | null)[])],
  );
  const { id, created } = rows[0] as { id: number; created: boolean };
  await replaceItems(trx, workspaceId, id, input.items);
  await totalOrder(trx, workspaceId, id);
  const result = await withItems(trx, workspaceId, id);
  await emit(trx, access, created ? 'order.created' : 'order.updated', result);
  return { ...result, created: Boolean(created) };
}

/**
 * Converts an accepted or paid quote into its order (external_id `quote:{id}`), once: a repeat,
 * also a concurrent one, returns the same order with `created: false`.
 */
export async function convertQuote(trx: Db, access: Access, quoteId: number) {
  const workspaceId = access.workspaceId;
  const quote = await lockedQuoteForUser(trx, access, quoteId);
  const externalId = `quote:${quote.id}`;
  const existing = await scoped(trx, 'orders', workspaceId).where({ external_source: 'quote', external_id: externalId }).first('id');
  if (existing) return { ...(await withItems(trx, workspaceId, existing.id)), created: false };
  if (quote.status !== 'accepted' && quote.status !== 'paid') {
    throw new Conflict(`Quote ${quote.quote_number} is ${quote.status}; only an accepted or paid quote can be converted.`);
  }
  const [row] = await trx('orders')
    .insert({
      workspace_id: workspaceId,
      order_number: quote.quote_number,
      external_source: 'quote',
      external_id: externalId,
      status: quote.status === 'paid' ? 'paid' : 'pending',
      customer_id: quote.customer_id,
      channel_id: quote.channel_id,
      quote_id: quote.id,
      currency: quote.currency,
      discount_amount: quote.discount_amount,
      tax_amount: quote.tax_amount,
      placed_at: trx.fn.now(),
    })
    .returning('id');
  await trx.raw(
    `insert into order_items (workspace_id, order_id, sku, description, quantity, price, line_total)
     select workspace_id, ?, sku, description, quantity, price, line_total from quote_lines where quote_id = ? and workspace_id = ? order by id`,
    [row.id, quote.id, workspaceId],
  );
  await totalOrder(trx, workspaceId, row.id);
  const result = await withItems(trx, workspaceId, row.id);
  await recordActivity(trx, access, quote.id, 'converted', `Converted to order ${quote.quote_number} (id ${row.id}).`);
  await emit(trx, access, 'order.created', result);
  return { ...result, created: true };
}
