import type { Access } from '../access.js';
import type { Db } from '../db/database.js';
import { jsonPages, textPages, type JsonPage } from '../db/keyset.js';
import { scoped, unfiltered, whereExact, whereSearch } from '../db/scoped.js';
import { Conflict, NotFound, Validation } from '../errors.js';
import { givenFields } from '../db/fields.js';
import { isNumericOverflow } from '../db/errors.js';
import { lineTotalFits } from '../money.js';
import { emit, emittingStatement, type FoldedEvent } from '../events/outbox.js';
import { assertChannelAccess, assertChannelExists, whereReadable } from '../channels/access.js';
import { upsertCustomer } from '../customers/service.js';
import { lockedQuoteForUser } from '../quotes/service.js';
import type { ExternalOrderInput, ItemInput, OrderFilters } from './schema.js';

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

async function orderById(db: Db, workspaceId: number, id: number, lock = false): Promise<OrderJson> {
  const query = scoped(db, 'orders as o', workspaceId).where('o.id', id);
  const row = await (lock ? query.forUpdate() : query).first(db.raw(`${orderJson()} as json`));
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

/** The order, after the caller's channel access is checked. `lock`: read with its row locked until the transaction ends. */
async function accessibleOrder(db: Db, access: Access, id: number, need: 'read' | 'write', lock = false): Promise<OrderJson> {
  const order = await orderById(db, access.workspaceId, id, lock);
  await assertChannelAccess(db, access, order.channel_id, need);
  return order;
}

export async function getOrder(db: Db, access: Access, id: number) {
  await accessibleOrder(db, access, id, 'read');
  return withItems(db, access.workspaceId, id);
}

/** The orders the caller may read, filtered, by id, as JSON pages. */
export function listOrders(db: Db, access: Access, filters: OrderFilters): AsyncGenerator<JsonPage> {
  if (access.channels === 'all' && unfiltered(filters)) return textPages(db, 'order_texts', access.workspaceId);
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
    .catch(totalTooLarge);
}

/** An order total past numeric(14,2), from any statement that computes one: a 422 naming the items. */
function totalTooLarge(err: unknown): never {
  if (isNumericOverflow(err)) throw new Validation('items', 'items: the order total must be less than 1000000000000.');
  throw err;
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
 * also a concurrent one, returns the same order with `created: false`. The quote is locked first, so a
 * concurrent conversion waits for this one and then finds its order.
 */
export async function convertQuote(trx: Db, access: Access, quoteId: number) {
  const workspaceId = access.workspaceId;
  const quote = await lockedQuoteForUser(trx, access, quoteId);
  const existing = await scoped(trx, 'orders', workspaceId).where({ external_source: 'quote', external_id: `quote:${quote.id}` }).first('id');
  if (existing) return { ...(await withItems(trx, workspaceId, existing.id)), created: false };
  if (quote.status !== 'accepted' && quote.status !== 'paid') {
    throw new Conflict(`Quote ${quote.quote_number} is ${quote.status}; only an accepted or paid quote can be converted.`);
  }
  const values = [workspaceId, quote.id, quote.id, workspaceId, quote.id, workspaceId, workspaceId, quote.id, access.actor, quote.quote_number];
  const [row] = await convert(trx, access, 'order.created', values).catch(totalTooLarge);
  return { order: row.order, items: row.items, created: true };
}

/** The `order.created` event's data as `emit` would write it, JSON.stringify({order, items}): both texts are compact. */
const ORDER_CONVERTED = { from: 'o, items', data: `('{"order":' || o.api_json || ',"items":' || items.text || '}')::json` };

/**
 * A conversion in one statement: the order with the quote's fields and its totals (the lines' sum, the quote's
 * discount and tax), its items copied from the lines in their order, the quote's `converted` activity, and the
 * event with its deliveries (or, with events off or after an event's failure, without): one round trip, where a
 * statement each, the order updated again for its totals and read back with its items would cost several times the
 * writes.
 */
const convertingText = (event: FoldedEvent | null) => `
  with q as (
    select * from quotes where workspace_id = ? and id = ?
  ), t as (
    select coalesce(sum(line_total), 0) as subtotal from quote_lines where quote_id = ? and workspace_id = ?
  ), o as (
    insert into orders (workspace_id, order_number, external_source, external_id, status, customer_id, channel_id, quote_id, currency,
                        subtotal, discount_amount, tax_amount, total, placed_at)
    select q.workspace_id, q.quote_number, 'quote', 'quote:' || q.id, case when q.status = 'paid' then 'paid' else 'pending' end,
           q.customer_id, q.channel_id, q.id, q.currency, t.subtotal, q.discount_amount, q.tax_amount, t.subtotal - q.discount_amount + q.tax_amount, now()
    from q, t
    returning id, api_json
  ), i as (
    insert into order_items (workspace_id, order_id, sku, description, quantity, price, line_total)
    select l.workspace_id, o.id, l.sku, l.description, l.quantity, l.price, l.line_total
    from o, quote_lines l where l.quote_id = ? and l.workspace_id = ? order by l.id
    returning *
  ), items as (
    select '[' || coalesce(string_agg(${itemJsonText('i')}, ',' order by i.id), '') || ']' as text from i
  ), a as (
    insert into quote_activities (workspace_id, quote_id, type, actor, message)
    select ?, ?, 'converted', ?, 'Converted to order ' || ? || ' (id ' || o.id || ').' from o
  )${event ? `, ${event.ctes}` : ''}
  select o.api_json::json as "order", items.text::json as items${event ? `, ${event.column}` : ''} from o, items`;
const convert = emittingStatement<{ order: OrderJson; items: ItemJson[] }>('quoting_convert_quote', ORDER_CONVERTED, convertingText);
