import type { Knex } from 'knex';
import type { Access } from '../access.js';
import type { Db } from '../db/database.js';
import { listPages, type JsonPage } from '../db/keyset.js';
import { textsList, type ListQuery } from '../db/list-query.js';
import { numberedListPage, type NumberedPage } from '../db/numbered-pages.js';
import { scoped, scopedById, unfiltered, whereExact, whereSearch } from '../db/scoped.js';
import { Conflict, NotFound, Validation } from '../errors.js';
import { givenFields } from '../db/fields.js';
import { isNumericOverflow } from '../db/errors.js';
import { CENTS_LIMIT, lineTotalCents } from '../money.js';
import { emit, emitSelected, emittingStatement, type FoldedEvent } from '../events/outbox.js';
import { assertChannelAccess, assertChannelExists, whereReadable } from '../channels/access.js';
import { upsertCustomers } from '../customers/service.js';
import { lockedQuoteForUser } from '../quotes/service.js';
import type { ExternalOrderInput, OrderFilters } from './schema.js';

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

/**
 * The orders the caller may read (channel roles: a member sees no order of a channel they hold no role on), filtered:
 * the one query behind the JSON list, the app's numbered page and the home page's recent orders.
 */
function readableOrders(db: Db, access: Access, filters: Partial<OrderFilters>): Knex.QueryBuilder {
  const query = whereReadable(scoped(db, 'orders as o', access.workspaceId), db, access, 'o.channel_id');
  // The customer is joined only to search its name and email.
  if (filters.q) query.leftJoin('customers as c', 'c.id', 'o.customer_id');
  whereExact(query, { 'o.status': filters.status, 'o.channel_id': filters.channel_id, 'o.customer_id': filters.customer_id });
  return whereSearch(query, ['o.order_number', 'o.external_id', 'c.name', 'c.email'], filters.q);
}

/** The list of orders the caller may read, filtered; the whole list of a caller who reads every channel from its texts. */
function orderList(db: Db, access: Access, filters: Partial<OrderFilters>): ListQuery {
  if (access.channels === 'all' && unfiltered(filters)) return textsList(db, 'order_texts', access.workspaceId);
  return { base: () => readableOrders(db, access, filters), idColumn: 'o.id', json: 'o.api_json' };
}

/** The orders the caller may read, filtered, by id, as JSON pages. */
export function listOrders(db: Db, access: Access, filters: OrderFilters): AsyncGenerator<JsonPage> {
  return listPages(db, orderList(db, access, filters));
}

/** Page `page` of the orders the caller may read, filtered, newest first, with their count (the app's list). */
export function orderPage(db: Db, access: Access, filters: Partial<OrderFilters>, page: number): Promise<NumberedPage<OrderJson>> {
  return numberedListPage<OrderJson>(db, orderList(db, access, filters), page);
}

/** The caller's `limit` newest orders (by id) they may read: the home page's. */
export async function recentOrders(db: Db, access: Access, limit: number): Promise<OrderJson[]> {
  const rows = await readableOrders(db, access, {}).orderBy('o.id', 'desc').limit(limit).select(db.raw(`${orderJson()} as json`));
  return rows.map((r: { json: OrderJson }) => r.json);
}

/** The order converted from the quote (orders.quote_id), when the caller may read it; null when there is none. */
export async function orderOfQuote(db: Db, access: Access, quoteId: number): Promise<OrderJson | null> {
  const row = await whereReadable(scoped(db, 'orders as o', access.workspaceId), db, access, 'o.channel_id')
    .where('o.quote_id', quoteId)
    .orderBy('o.id')
    .first(db.raw(`${orderJson()} as json`));
  return row ? row.json : null;
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

/** An order item as written: line total = round(quantity × price, 2). */
export interface ItemValues {
  sku: string | null;
  description: string | null;
  quantity: string;
  price: string;
}

/** An external order as it will be stored, keyed by (external_source, external_id); its items replace the stored ones. */
export interface OrderValues {
  external_source: string;
  external_id: string;
  order_number: string | null;
  status: string;
  currency: string;
  customer_id: number | null;
  channel_id: number | null;
  placed_at: Date | string | null;
  /** Omitted (on every order of a write): a stored order keeps its notes, a new one has none. */
  notes?: string | null;
  /** Given on every order of a write or on none (then a stored order keeps its own, a new one has 0). */
  discount_amount?: string;
  tax_amount?: string;
  items: ItemValues[];
}

/**
 * Where an order's amounts break numeric(14,2), to refuse it before any write: the first item whose total is too
 * large (`item`, its index), or else the order's total (`order`). Undefined when they fit.
 */
export function amountsOverflow(items: readonly { quantity: string; price: string }[]): { item: number } | 'order' | undefined {
  let cents = 0n;
  for (const [index, item] of items.entries()) {
    const total = lineTotalCents(item.quantity, item.price);
    if (total >= CENTS_LIMIT) return { item: index };
    cents += total;
  }
  return cents >= CENTS_LIMIT ? 'order' : undefined;
}

/** An order total past numeric(14,2), from any statement that computes one: a 422 naming the items. */
function totalTooLarge(err: unknown): never {
  if (isNumericOverflow(err)) throw new Validation('items', 'items: the order total must be less than 1000000000000.');
  throw err;
}

/**
 * Creates or updates external orders by (external_source, external_id), many at once: the orders in one statement,
 * their totals summed by PostgreSQL in numeric in it (subtotal = Σ round(quantity × price, 2); total = subtotal −
 * discount + tax), the stored items deleted and the new ones inserted in one statement each. A new order emits
 * `order.created`, a stored one `order.updated`, with the order and its items rendered from the rows. The caller has
 * checked the amounts (amountsOverflow), the channels and the customers. Answers each order's id, in input order.
 */
export async function writeOrders(trx: Db, access: Access, orders: OrderValues[]): Promise<{ id: number; created: boolean }[]> {
  if (orders.length === 0) return [];
  const workspaceId = access.workspaceId;
  const notes = orders[0].notes !== undefined;
  const amounts = orders[0].discount_amount !== undefined;
  // Items first in JSON, so that the order's subtotal is summed in the statement that writes the order.
  const { rows: upserted } = await trx
    .raw(
      `insert into orders (workspace_id, external_source, external_id, order_number, status, currency, customer_id, channel_id, placed_at${notes ? ', notes' : ''}${amounts ? ', discount_amount, tax_amount' : ''}, subtotal, total)
       select ?, r.external_source, r.external_id, r.order_number, r.status, r.currency, r.customer_id, r.channel_id, r.placed_at${notes ? ', r.notes' : ''}${amounts ? ', r.discount_amount, r.tax_amount' : ''},
              t.subtotal, t.subtotal${amounts ? ' - r.discount_amount + r.tax_amount' : ''}
         from json_to_recordset(?::json) as r(external_source text, external_id text, order_number text, status text, currency text,
                                             customer_id int, channel_id int, placed_at timestamptz, notes text, discount_amount numeric, tax_amount numeric, items json)
         cross join lateral (select coalesce(sum(round(i.quantity * i.price, 2)), 0) as subtotal
                               from json_to_recordset(r.items) as i(quantity numeric, price numeric)) t
       on conflict (workspace_id, external_source, external_id) do update set order_number = excluded.order_number, status = excluded.status,
         currency = excluded.currency, customer_id = excluded.customer_id, channel_id = excluded.channel_id, placed_at = excluded.placed_at,${notes ? ' notes = excluded.notes,' : ''}
         subtotal = excluded.subtotal,${amounts ? ' discount_amount = excluded.discount_amount, tax_amount = excluded.tax_amount, total = excluded.total,' : ' total = excluded.subtotal - orders.discount_amount + orders.tax_amount,'} updated_at = now()
       returning id, external_source, external_id, (xmax = 0) as created`,
      [workspaceId, JSON.stringify(orders.map(({ items, ...order }) => ({ ...order, items: items.map(({ quantity, price }) => ({ quantity, price })) })))],
    )
    .catch(totalTooLarge);
  const byKey = new Map<string, { id: number; created: boolean }>();
  for (const row of upserted as { id: number; external_source: string; external_id: string; created: boolean }[]) {
    byKey.set(orderKey(row.external_source, row.external_id), { id: row.id, created: Boolean(row.created) });
  }
  const written = orders.map((order) => byKey.get(orderKey(order.external_source, order.external_id))!);
  const replaced = written.filter((w) => !w.created).map((w) => w.id);
  if (replaced.length) await scoped(trx, 'order_items', workspaceId).whereRaw('order_id = any(?::int[])', [`{${replaced.join(',')}}`]).delete();
  const items = orders.flatMap((order, i) => order.items.map((item) => ({ order_id: written[i].id, ...item })));
  if (items.length) {
    await trx.raw(
      `insert into order_items (workspace_id, order_id, sku, description, quantity, price, line_total)
       select ?, r.order_id, r.sku, r.description, r.quantity, r.price, round(r.quantity * r.price, 2)
         from json_to_recordset(?::json) as r(order_id int, sku text, description text, quantity numeric, price numeric)`,
      [workspaceId, JSON.stringify(items)],
    );
  }
  // The events' bodies are the stored order JSON and its items, rendered where the rows are (compact, as
  // JSON.stringify prints them): nothing is read back into node.
  const events = [...byKey.values()].sort((a, b) => a.id - b.id);
  await emitSelected(
    trx,
    access,
    events.map((w) => (w.created ? 'order.created' : 'order.updated')),
    `select k.type, '{"order":' || o.api_json || ',"items":[' || coalesce((
              select string_agg(${itemJsonText('i')}, ',' order by i.id) from order_items i
               where i.order_id = o.id and i.workspace_id = o.workspace_id), '') || ']}' as data
       from unnest(?::int[], ?::text[]) with ordinality as k(id, type, n) cross join lateral (${scopedById('orders')}) o order by k.n`,
    [`{${events.map((w) => w.id).join(',')}}`, `{${events.map((w) => (w.created ? 'order.created' : 'order.updated')).join(',')}}`, workspaceId],
  );
  return written;
}

/** An external order's key as one string, for maps. */
export const orderKey = (source: string, externalId: string) => `${source}\u0000${externalId}`;

/** A stored external order, as a set-based write compares it with what it would write. */
export interface StoredOrder extends Omit<OrderValues, 'placed_at' | 'notes' | 'items' | 'discount_amount' | 'tax_amount'> {
  id: number;
  /** As PostgreSQL prints numeric(14,2). */
  discount_amount: string;
  tax_amount: string;
  /** Epoch milliseconds, to compare with another time whatever its spelling. */
  placed_at: number | null;
  /** [sku, description, quantity, price], as PostgreSQL prints them, by id. */
  items: [string | null, string | null, string, string][];
}

/** Whether the workspace holds any order. */
export async function holdsOrders(db: Db, workspaceId: number): Promise<boolean> {
  const { rows } = await db.raw('select exists (select 1 from orders where workspace_id = ?) as stored', [workspaceId]);
  return (rows as { stored: boolean }[])[0].stored;
}

/** The stored orders of these keys, with their items, by orderKey. */
export async function ordersByKey(db: Db, workspaceId: number, keys: { source: string; external_id: string }[]): Promise<Map<string, StoredOrder>> {
  // One probe of the unique index per key, planned so whatever the statistics say (see scopedById); a row-value
  // `(source, id) in (...)` list of this length is planned as a scan.
  const { rows } = await db.raw(
    `select o.* from json_to_recordset(?::json) as k(source text, external_id text)
       cross join lateral (
         select o.id, o.external_source, o.external_id, o.order_number, o.status, o.currency, o.customer_id, o.channel_id,
                o.discount_amount::text as discount_amount, o.tax_amount::text as tax_amount,
                (extract(epoch from o.placed_at) * 1000)::float8 as placed_at,
                coalesce((select json_agg(json_build_array(i.sku, i.description, trim_scale(i.quantity)::text, i.price::text) order by i.id)
                            from order_items i where i.order_id = o.id and i.workspace_id = o.workspace_id), '[]'::json) as items
           from orders o where o.workspace_id = (select ?::int) and o.external_source = k.source and o.external_id = k.external_id limit 1) o`,
    [JSON.stringify(keys), workspaceId],
  );
  return new Map((rows as StoredOrder[]).map((row) => [orderKey(row.external_source, row.external_id), row]));
}

/**
 * `POST /orders/external`: upsert by (workspace, external_source, external_id), through writeOrders. A new order
 * emits `order.created`; a match is updated (its items replaced) and emits `order.updated`.
 */
export async function upsertExternalOrder(trx: Db, access: Access, input: ExternalOrderInput) {
  const workspaceId = access.workspaceId;
  await assertChannelExists(trx, workspaceId, input.channel_id);
  const overflow = amountsOverflow(input.items as { quantity: string; price: string }[]);
  if (overflow === 'order') throw new Validation('items', 'items: the order total must be less than 1000000000000.');
  if (overflow) throw new Validation(`items.${overflow.item}.quantity`, `items.${overflow.item}.quantity: quantity × price must be less than 1000000000000.`);
  const customer = input.customer ? (await upsertCustomers(trx, access, [input.customer], 'replace')).get(input.customer.email)! : null;
  const [{ id, created }] = await writeOrders(trx, access, [
    {
      external_source: input.external_source,
      external_id: input.external_id,
      order_number: input.order_number ?? null,
      status: input.status,
      currency: input.currency,
      customer_id: customer?.id ?? null,
      channel_id: input.channel_id ?? null,
      placed_at: input.placed_at ?? null,
      notes: input.notes ?? null,
      items: input.items.map((item) => ({ sku: item.sku ?? null, description: item.description ?? null, quantity: item.quantity, price: item.price! })),
    },
  ]);
  return { ...(await withItems(trx, workspaceId, id)), created };
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
