import type { Access } from '../access.js';
import type { Db } from '../db/database.js';
import { isNumericOverflow } from '../db/errors.js';
import { scoped } from '../db/scoped.js';
import { Validation } from '../errors.js';
import { emitSelected } from '../events/outbox.js';
import { itemJsonText } from '../orders/service.js';
import { CENTS_LIMIT, lineTotalCents, moneyText, quantityText } from '../money.js';
import { inputIssues } from '../schema/parse.js';
import { columnIndex, type CsvRow } from './csv.js';
import { BatchOutcome, type Importer, type ImportReport, type RowError } from './report.js';
import { orderRow, type OrderRow } from './schema.js';

const columns = [
  'order_number', 'external_id', 'external_source', 'status', 'currency', 'customer_email', 'customer_name',
  'channel_id', 'placed_at', 'sku', 'description', 'quantity', 'price',
] as const;

interface Line {
  line: number;
  data?: OrderRow;
  errors: RowError[];
}

interface PendingOrder {
  source: string;
  externalId: string;
  lines: Line[];
}

/** The order's own columns, as both the stored order and the imported one carry them. */
interface OrderColumns {
  external_source: string;
  external_id: string;
  order_number: string | null;
  status: string;
  currency: string;
  customer_id: number | null;
  channel_id: number | null;
}

interface StoredOrder extends OrderColumns {
  id: number;
  /** Epoch milliseconds, to compare with the imported time whatever its spelling. */
  placed_at: number | null;
  items: [string | null, string | null, string, string][];
}

/** The order as it will be stored; compared with the stored one to tell updated from unchanged. */
interface Resolved {
  order: PendingOrder;
  first: OrderRow;
  existing?: StoredOrder;
  values: OrderColumns & { placed_at: string | null };
  items: { sku: string | null; description: string | null; quantity: string; price: string }[];
}

/**
 * Order import: one row per item; adjacent rows with the same key make one order. The key is
 * (external_source, external_id), or (external_source, order_number) when external_id is empty.
 * An order whose rows all pass is upserted with its items replaced and totals computed in SQL numeric
 * exactly as `POST /orders/external` does; a row that fails fails its whole order. New orders emit
 * `order.created`, changed ones `order.updated`; an order identical to the stored one is left alone
 * and emits nothing. Customers are upserted by email (an empty name keeps the stored one).
 */
export function orderImporter(header: string[]): Importer {
  const index = columnIndex(header);
  if (!index.has('price')) throw new Validation('price', 'The CSV has no price column (required for an order import).');
  if (!index.has('external_id') && !index.has('order_number')) {
    throw new Validation('order_number', 'The CSV has neither an order_number nor an external_id column; one of them identifies each order.');
  }
  const cell = (values: string[], name: string) => {
    const i = index.get(name);
    return i === undefined ? undefined : (values[i] ?? '');
  };
  /** Keys of orders already complete: their rows must be adjacent. */
  const finished = new Map<string, number>();
  let open: PendingOrder | undefined;
  let writable: Set<number> | undefined;
  /**
   * Whether the workspace held any orders when the import began (read by the first write). If not, it holds none
   * but this import's own, whose keys are `finished` (a later row with one fails as non-adjacent before any write):
   * a first import into it looks no order up.
   */
  let ordersBefore: boolean | undefined;

  return {
    tables: ['orders', 'order_items', 'customers', 'order_texts', 'customer_texts'],
    rewritten: [],
    prepare(rows, last) {
      const outcome = new BatchOutcome();
      /** Orders complete by the end of this batch (an order still open may go on in the next). */
      const complete: PendingOrder[] = [];
      const close = () => {
        if (!open) return;
        finished.set(keyOf(open.source, open.externalId), open.lines[0].line);
        complete.push(open);
        open = undefined;
      };
      for (const row of rows) {
        outcome.rows++;
        const raw: Record<string, string | undefined> = {};
        for (const column of columns) {
          const value = cell(row.values, column);
          if (value !== undefined && !(column === 'quantity' && value.trim() === '')) raw[column] = value;
        }
        const source = (raw.external_source ?? '').trim() || 'import';
        const externalId = (raw.external_id ?? '').trim() || (raw.order_number ?? '').trim();
        if (!externalId) {
          outcome.failed++;
          outcome.fail(row.line, 'order_number', 'order_number: give an order_number or an external_id to say which order the row belongs to.');
          continue;
        }
        const checked = inputIssues(orderRow, raw);
        const line: Line = { line: row.line, data: checked.ok ? checked.data : undefined, errors: checked.ok ? [] : checked.issues.map((i) => ({ row: row.line, ...i })) };
        if (open && open.source === source && open.externalId === externalId) {
          open.lines.push(line);
          continue;
        }
        close();
        const earlier = finished.get(keyOf(source, externalId));
        if (earlier !== undefined) {
          outcome.failed++;
          outcome.fail(row.line, index.has('external_id') ? 'external_id' : 'order_number', `order ${externalId}: its rows must be adjacent; it started on line ${earlier} and another order came in between.`);
          continue;
        }
        open = { source, externalId, lines: [line] };
      }
      if (last) close();
      return async (trx, access, report) => {
        outcome.addTo(report);
        if (complete.length === 0) return;
        if (access.channels === 'roles' && writable === undefined) {
          const rows = await scoped(trx, 'channel_members', access.workspaceId).where({ user_id: access.userId }).whereIn('role', ['editor', 'manager']).select('channel_id');
          writable = new Set(rows.map((r: { channel_id: number }) => r.channel_id));
        }
        if (ordersBefore === undefined) {
          const { rows } = await trx.raw('select exists (select 1 from orders where workspace_id = ?) as stored', [access.workspaceId]);
          ordersBefore = (rows as { stored: boolean }[])[0].stored;
        }
        await writeOrders(trx, access, complete, report, writable, ordersBefore);
      };
    },
  };
}

const keyOf = (source: string, externalId: string) => `${source}\u0000${externalId}`;

function failOrder(order: PendingOrder, report: ImportReport, cause: RowError): void {
  report.failed += order.lines.length;
  const bad = new Set<number>();
  for (const line of order.lines) {
    for (const error of line.errors) {
      report.errors.push(error);
      bad.add(line.line);
    }
  }
  if (!bad.has(cause.row)) {
    report.errors.push(cause);
    bad.add(cause.row);
  }
  for (const line of order.lines) {
    if (!bad.has(line.line)) report.errors.push({ row: line.line, field: 'order', message: `order ${order.externalId}: not imported because line ${cause.row} failed.` });
  }
}

async function writeOrders(
  trx: Db,
  access: Access,
  orders: PendingOrder[],
  report: ImportReport,
  writable: Set<number> | undefined,
  ordersBefore: boolean,
): Promise<void> {
  const workspaceId = access.workspaceId;
  // Rows that failed validation fail their order; so do totals numeric(14,2) cannot hold.
  let candidates: PendingOrder[] = [];
  for (const order of orders) {
    const bad = order.lines.find((l) => l.errors.length > 0);
    if (bad) {
      failOrder(order, report, bad.errors[0]);
      continue;
    }
    let cents = 0n;
    let overflow: RowError | undefined;
    for (const { line, data } of order.lines) {
      const total = lineTotalCents(data!.quantity, data!.price!);
      cents += total;
      if (total >= CENTS_LIMIT) overflow ??= { row: line, field: 'quantity', message: 'quantity: quantity × price must be less than 1000000000000.' };
    }
    if (!overflow && cents >= CENTS_LIMIT) overflow = { row: order.lines[0].line, field: 'price', message: 'price: the order total must be less than 1000000000000.' };
    if (overflow) failOrder(order, report, overflow);
    else candidates.push(order);
  }
  if (candidates.length === 0) return;

  const stored = ordersBefore ? await storedOrders(trx, workspaceId, candidates) : new Map<string, StoredOrder>();

  // Channels must exist, and a member needs editor or manager on the channel of a new or a stored order.
  const channelIds = new Set<number>();
  for (const order of candidates) {
    const given = order.lines[0].data!.channel_id;
    if (given !== undefined) channelIds.add(given);
  }
  const known = channelIds.size
    ? new Set((await scoped(trx, 'channels', workspaceId).whereIn('id', [...channelIds]).select('id')).map((r: { id: number }) => r.id))
    : new Set<number>();
  candidates = candidates.filter((order) => {
    const first = order.lines[0];
    const given = first.data!.channel_id;
    if (given !== undefined && !known.has(given)) {
      failOrder(order, report, { row: first.line, field: 'channel_id', message: `channel_id: no channel ${given} in this workspace.` });
      return false;
    }
    if (writable) {
      for (const channel of [given, stored.get(keyOf(order.source, order.externalId))?.channel_id]) {
        if (channel !== undefined && channel !== null && !writable.has(channel)) {
          failOrder(order, report, { row: first.line, field: 'channel_id', message: `channel_id: writing orders of channel ${channel} needs the editor or manager role on it.` });
          return false;
        }
      }
    }
    return true;
  });
  if (candidates.length === 0) return;

  const customers = await upsertCustomers(trx, access, candidates);

  const resolved: Resolved[] = candidates.map((order) => {
    const first = order.lines[0].data!;
    const existing = stored.get(keyOf(order.source, order.externalId));
    const email = first.customer_email;
    return {
      order,
      first,
      existing,
      values: {
        external_source: order.source,
        external_id: order.externalId,
        order_number: first.order_number ?? existing?.order_number ?? order.externalId,
        status: first.status ?? existing?.status ?? 'pending',
        currency: first.currency ?? existing?.currency ?? 'USD',
        customer_id: email !== undefined ? customers.get(email)! : (existing?.customer_id ?? null),
        channel_id: first.channel_id ?? existing?.channel_id ?? null,
        placed_at: first.placed_at ? first.placed_at.toISOString() : existing?.placed_at != null ? new Date(existing.placed_at).toISOString() : null,
      },
      items: order.lines.map(({ data }) => ({ sku: data!.sku ?? null, description: data!.description ?? null, quantity: data!.quantity, price: data!.price! })),
    };
  });

  const changed = resolved.filter((r) => {
    if (!r.existing) return true;
    const e = r.existing;
    const v = r.values;
    const same =
      e.order_number === v.order_number && e.status === v.status && e.currency === v.currency && e.customer_id === v.customer_id &&
      e.channel_id === v.channel_id && (e.placed_at === null ? v.placed_at === null : v.placed_at !== null && e.placed_at === Date.parse(v.placed_at)) &&
      e.items.length === r.items.length &&
      e.items.every(([sku, description, quantity, price], i) => {
        const item = r.items[i];
        return sku === item.sku && description === item.description && quantity === quantityText(item.quantity) && price === moneyText(item.price);
      });
    if (same) report.unchanged++;
    return !same;
  });
  if (changed.length === 0) return;

  // Items first in JSON, so that the order's subtotal is summed by PostgreSQL in numeric in the same statement
  // (line total = round(quantity × price, 2); total = subtotal − discount + tax, as POST /orders/external).
  const { rows: upserted } = await trx
    .raw(
      `insert into orders (workspace_id, external_source, external_id, order_number, status, currency, customer_id, channel_id, placed_at, subtotal, total)
       select ?, r.external_source, r.external_id, r.order_number, r.status, r.currency, r.customer_id, r.channel_id, r.placed_at, t.subtotal, t.subtotal
         from json_to_recordset(?::json) as r(external_source text, external_id text, order_number text, status text, currency text,
                                             customer_id int, channel_id int, placed_at timestamptz, items json)
         cross join lateral (select coalesce(sum(round(i.quantity * i.price, 2)), 0) as subtotal
                               from json_to_recordset(r.items) as i(quantity numeric, price numeric)) t
       on conflict (workspace_id, external_source, external_id) do update set order_number = excluded.order_number, status = excluded.status,
         currency = excluded.currency, customer_id = excluded.customer_id, channel_id = excluded.channel_id, placed_at = excluded.placed_at,
         subtotal = excluded.subtotal, total = excluded.subtotal - orders.discount_amount + orders.tax_amount, updated_at = now()
       returning id, external_source, external_id, (xmax = 0) as created`,
      [workspaceId, JSON.stringify(changed.map((r) => ({ ...r.values, items: r.items.map(({ quantity, price }) => ({ quantity, price })) })))],
    )
    .catch((err: unknown) => {
      if (isNumericOverflow(err)) throw new Validation('price', 'price: an order total (after its stored discount and tax) must be less than 1000000000000.');
      throw err;
    });
  const ids = new Map<string, { id: number; created: boolean }>();
  for (const row of upserted as { id: number; external_source: string; external_id: string; created: boolean }[]) {
    ids.set(keyOf(row.external_source, row.external_id), { id: row.id, created: Boolean(row.created) });
  }
  const orderIds = [...ids.values()].map((v) => v.id);
  const replaced = [...ids.values()].filter((v) => !v.created).map((v) => v.id);
  if (replaced.length) await scoped(trx, 'order_items', workspaceId).whereRaw('order_id = any(?::int[])', [`{${replaced.join(',')}}`]).delete();
  const items = changed.flatMap((r) => r.items.map((item) => ({ order_id: ids.get(keyOf(r.order.source, r.order.externalId))!.id, ...item })));
  await trx.raw(
    `insert into order_items (workspace_id, order_id, sku, description, quantity, price, line_total)
     select ?, r.order_id, r.sku, r.description, r.quantity, r.price, round(r.quantity * r.price, 2)
       from json_to_recordset(?::json) as r(order_id int, sku text, description text, quantity numeric, price numeric)`,
    [workspaceId, JSON.stringify(items)],
  );

  for (const r of changed) {
    if (ids.get(keyOf(r.order.source, r.order.externalId))!.created) report.created++;
    else report.updated++;
  }
  // The events' bodies are the stored order JSON and its items, rendered where the rows are (compact, as
  // JSON.stringify prints them): nothing is read back into node.
  const createdIds = [...ids.values()].filter((v) => v.created).map((v) => v.id);
  await emitSelected(
    trx,
    access,
    orderIds.length,
    `select case when o.id = any(?::int[]) then 'order.created' else 'order.updated' end as type,
            '{"order":' || o.api_json || ',"items":[' || coalesce((
              select string_agg(${itemJsonText('i')}, ',' order by i.id) from order_items i
               where i.order_id = o.id and i.workspace_id = o.workspace_id), '') || ']}' as data
       from unnest(?::int[]) as k(id) cross join lateral (${byId('orders')}) o order by o.id`,
    [`{${createdIds.join(',')}}`, `{${orderIds.join(',')}}`, workspaceId],
  );
}

/**
 * The rows of a list of ids (`k.id`), each found by its own probe, however the statistics stand (see storedVariants
 * in products.ts). Written as `workspace_id = ? and id = any(?)`, it may be planned, on a workspace this import is
 * growing, as a scan of all the workspace's rows filtered by the list: each batch's events read every order so far.
 * Binds the workspace id.
 */
const byId = (table: 'orders' | 'customers') => `select * from ${table} where workspace_id = (select ?::int) and id = k.id limit 1`;

async function storedOrders(trx: Db, workspaceId: number, orders: PendingOrder[]): Promise<Map<string, StoredOrder>> {
  // One probe of the unique index per key, planned so whatever the statistics say (see storedVariants in
  // products.ts); a row-value `(source, id) in (...)` list of this length is planned as a scan.
  const { rows } = await trx.raw(
    `select o.* from json_to_recordset(?::json) as k(source text, external_id text)
       cross join lateral (
         select o.id, o.external_source, o.external_id, o.order_number, o.status, o.currency, o.customer_id, o.channel_id,
                (extract(epoch from o.placed_at) * 1000)::float8 as placed_at,
                coalesce((select json_agg(json_build_array(i.sku, i.description, trim_scale(i.quantity)::text, i.price::text) order by i.id)
                            from order_items i where i.order_id = o.id and i.workspace_id = o.workspace_id), '[]'::json) as items
           from orders o where o.workspace_id = (select ?::int) and o.external_source = k.source and o.external_id = k.external_id limit 1) o`,
    [JSON.stringify(orders.map((o) => ({ source: o.source, external_id: o.externalId }))), workspaceId],
  );
  return new Map((rows as StoredOrder[]).map((row) => [keyOf(row.external_source, row.external_id), row]));
}

/**
 * Customers by email, as `POST /customers` would: a new email is created (`customer.created`), a
 * stored one gets the row's name when it differs (`customer.updated`); an empty name keeps it.
 * Returns the id of every email.
 */
async function upsertCustomers(trx: Db, access: Access, orders: PendingOrder[]): Promise<Map<string, number>> {
  const names = new Map<string, string | null>();
  for (const order of orders) {
    const { customer_email: email, customer_name: name } = order.lines[0].data!;
    if (email !== undefined && (!names.has(email) || (names.get(email) == null && name))) names.set(email, name ?? null);
  }
  if (names.size === 0) return new Map();
  // One statement upserts them and answers every email's id: the written rows from the upsert, the others (stored
  // and unchanged) from the table. The events are rendered from the rows by PostgreSQL, as the orders' are.
  const { rows: all } = await trx.raw(
    `with r as (select * from json_to_recordset(?::json) as r(email text, name text)),
          written as (
            insert into customers (workspace_id, email, name) select ?, r.email, r.name from r
            on conflict (workspace_id, email) do update set name = excluded.name, updated_at = now()
              where excluded.name is not null and customers.name is distinct from excluded.name
            returning id, email, (xmax = 0) as created)
     select r.email, coalesce(w.id, c.id) as id, w.created
       from r left join written w on w.email = r.email
       left join lateral (select id from customers where workspace_id = (select ?::int) and email = r.email limit 1) c on w.id is null`,
    [JSON.stringify([...names].map(([email, name]) => ({ email, name }))), access.workspaceId, access.workspaceId],
  );
  const ids = new Map<string, number>();
  const created: number[] = [];
  const changed: number[] = [];
  for (const { id, email, created: isNew } of all as { id: number; email: string; created: boolean | null }[]) {
    ids.set(email, id);
    if (isNew !== null) (isNew ? created : changed).push(id);
  }
  await emitSelected(
    trx,
    access,
    created.length + changed.length,
    `select case when c.id = any(?::int[]) then 'customer.created' else 'customer.updated' end as type, '{"customer":' || c.api_json || '}' as data
       from unnest(?::int[]) as k(id) cross join lateral (${byId('customers')}) c order by c.id`,
    [`{${created.join(',')}}`, `{${[...created, ...changed].join(',')}}`, access.workspaceId],
  );
  return ids;
}
