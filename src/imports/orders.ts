import type { Access } from '../access.js';
import { channelsAllowing, existingChannels, noSuchChannel, rolesFor } from '../channels/access.js';
import { upsertCustomers, type CustomerRow } from '../customers/service.js';
import type { Db } from '../db/database.js';
import { Validation } from '../errors.js';
import { amountsOverflow, holdsOrders, orderKey, ordersByKey, writeOrders, type ItemValues, type OrderValues, type StoredOrder } from '../orders/service.js';
import { moneyText, quantityText } from '../money.js';
import { inputIssues } from '../schema/parse.js';
import { columnIndex } from './csv.js';
import { BatchOutcome, type Importer, type ImportReport, type RowError } from './report.js';
import { orderRow, type OrderRow } from './schema.js';
import { isShopifyOrderHeader, shopifyIssue, shopifyOrderRows, shopifyTotals, type Figures } from './shopify-orders.js';

const columns = [
  'order_number', 'external_id', 'external_source', 'status', 'currency', 'customer_email', 'customer_name',
  'channel_id', 'placed_at', 'sku', 'description', 'quantity', 'price',
] as const;

interface Line {
  line: number;
  data?: OrderRow;
  errors: RowError[];
  /** A Shopify export's order figures (read from the order's first row). */
  figures?: Figures;
}

interface PendingOrder {
  source: string;
  externalId: string;
  lines: Line[];
  /** Set once its rows passed: the items to write (a Shopify order's Shipping item among them), and its discount and tax if the file gives them. */
  items?: ItemValues[];
  amounts?: { discount_amount: string; tax_amount: string };
}

/** The order as it will be stored; compared with the stored one to tell updated from unchanged. */
interface Resolved {
  existing?: StoredOrder;
  values: OrderValues & { placed_at: string | null; items: ItemValues[] };
}

/**
 * Order import: one row per item; adjacent rows with the same key make one order. The key is
 * (external_source, external_id), or (external_source, order_number) when external_id is empty.
 * An order whose rows all pass is written as `POST /orders/external` writes one (writeOrders: items replaced,
 * totals, `order.created` or `order.updated`); a row that fails fails its whole order. An empty cell keeps the stored
 * order's value, and an order identical to the stored one is left alone and emits nothing. Customers are upserted
 * by email (upsertCustomers, `fill`: an empty name keeps the stored one). A Shopify orders export is mapped row by row
 * (shopify-orders.ts), and each of its orders is checked against its figures and written with its discount and tax.
 */
export function orderImporter(header: string[]): Importer {
  const index = columnIndex(header);
  const shopify = isShopifyOrderHeader(header) ? shopifyOrderRows(header) : undefined;
  if (!shopify && !index.has('price')) throw new Validation('price', 'The CSV has no price column (required for an order import).');
  if (!shopify && !index.has('external_id') && !index.has('order_number')) {
    throw new Validation('order_number', 'The CSV has neither an order_number nor an external_id column; one of them identifies each order.');
  }
  const cell = (values: string[], name: string) => {
    const i = index.get(name);
    return i === undefined ? undefined : (values[i] ?? '');
  };
  /** Keys of orders already complete: their rows must be adjacent. */
  const finished = new Map<string, number>();
  let open: PendingOrder | undefined;
  /** The channels whose orders the caller may write (undefined: all), read by the first write. */
  let writable: Set<number> | undefined | null = null;
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
        finished.set(orderKey(open.source, open.externalId), open.lines[0].line);
        complete.push(open);
        open = undefined;
      };
      for (const row of rows) {
        outcome.rows++;
        const mapped = shopify?.(row.values, row.line);
        const raw: Record<string, string | undefined> = mapped?.raw ?? {};
        if (!mapped) {
          for (const column of columns) {
            const value = cell(row.values, column);
            if (value !== undefined && !(column === 'quantity' && value.trim() === '')) raw[column] = value;
          }
        }
        const source = (raw.external_source ?? '').trim() || 'import';
        const externalId = (raw.external_id ?? '').trim() || (raw.order_number ?? '').trim();
        if (!externalId) {
          outcome.failed++;
          if (shopify) outcome.fail(row.line, 'Name', 'Name: is empty; each row names its order.');
          else outcome.fail(row.line, 'order_number', 'order_number: give an order_number or an external_id to say which order the row belongs to.');
          continue;
        }
        const checked = inputIssues(orderRow, raw);
        const issues = checked.ok ? [] : checked.issues.map((i) => ({ row: row.line, ...i }));
        const errors = mapped ? [...mapped.errors, ...issues.map(shopifyIssue)] : issues;
        const line: Line = { line: row.line, data: checked.ok && !errors.length ? checked.data : undefined, errors, figures: mapped?.figures };
        if (open && open.source === source && open.externalId === externalId) {
          open.lines.push(line);
          continue;
        }
        close();
        const earlier = finished.get(orderKey(source, externalId));
        if (earlier !== undefined) {
          outcome.failed++;
          outcome.fail(row.line, shopify ? 'Name' : index.has('external_id') ? 'external_id' : 'order_number', `order ${externalId}: its rows must be adjacent; it started on line ${earlier} and another order came in between.`);
          continue;
        }
        open = { source, externalId, lines: [line] };
      }
      if (last) close();
      return async (trx, access, report) => {
        outcome.addTo(report);
        if (complete.length === 0) return;
        if (writable === null) writable = await channelsAllowing(trx, access, 'write');
        ordersBefore ??= await holdsOrders(trx, access.workspaceId);
        await importOrders(trx, access, complete, report, writable, ordersBefore);
      };
    },
  };
}

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

async function importOrders(
  trx: Db,
  access: Access,
  orders: PendingOrder[],
  report: ImportReport,
  writable: Set<number> | undefined,
  ordersBefore: boolean,
): Promise<void> {
  const workspaceId = access.workspaceId;
  // Rows that failed validation fail their order; so do amounts numeric(14,2) cannot hold.
  let candidates: PendingOrder[] = [];
  for (const order of orders) {
    const bad = order.lines.find((l) => l.errors.length > 0);
    if (bad) {
      failOrder(order, report, bad.errors[0]);
      continue;
    }
    order.items = order.lines.map(({ data }) => ({ sku: data!.sku ?? null, description: data!.description ?? null, quantity: data!.quantity, price: data!.price! }));
    const first = order.lines[0];
    if (first.figures) {
      // A Shopify order: its figures must agree with its line items, and its discount, tax and shipping are kept.
      const totals = shopifyTotals(first.line, first.figures, order.items);
      if ('row' in totals) {
        failOrder(order, report, totals);
        continue;
      }
      order.items = totals.items;
      order.amounts = { discount_amount: totals.discount_amount, tax_amount: totals.tax_amount };
    }
    const overflow = amountsOverflow(order.items);
    // A Shopify order's Shipping item comes after its rows' items (and holds less than the limit).
    const itemLine = (item: number) => order.lines[Math.min(item, order.lines.length - 1)].line;
    const [quantityField, priceField] = first.figures ? ['Lineitem quantity', 'Lineitem price'] : ['quantity', 'price'];
    if (overflow === 'order') failOrder(order, report, { row: first.line, field: priceField, message: `${priceField}: the order total must be less than 1000000000000.` });
    else if (overflow) failOrder(order, report, { row: itemLine(overflow.item), field: quantityField, message: `${quantityField}: quantity × price must be less than 1000000000000.` });
    else candidates.push(order);
  }
  if (candidates.length === 0) return;

  const stored = ordersBefore ? await ordersByKey(trx, workspaceId, candidates.map((o) => ({ source: o.source, external_id: o.externalId }))) : new Map<string, StoredOrder>();

  // Channels must exist, and writing a new or a stored order needs the write role on its channel (and on the stored one's).
  const known = await existingChannels(trx, workspaceId, candidates.flatMap((order) => order.lines[0].data!.channel_id ?? []));
  candidates = candidates.filter((order) => {
    const first = order.lines[0];
    const given = first.data!.channel_id;
    if (given !== undefined && !known.has(given)) {
      failOrder(order, report, { row: first.line, field: 'channel_id', message: noSuchChannel('channel_id', given) });
      return false;
    }
    if (writable) {
      for (const channel of [given, stored.get(orderKey(order.source, order.externalId))?.channel_id]) {
        if (channel !== undefined && channel !== null && !writable.has(channel)) {
          failOrder(order, report, { row: first.line, field: 'channel_id', message: `channel_id: writing orders of channel ${channel} needs the ${rolesFor('write')} role on it.` });
          return false;
        }
      }
    }
    return true;
  });
  if (candidates.length === 0) return;

  const customers = await upsertCustomers(trx, access, customerRows(candidates), 'fill');

  const resolved: Resolved[] = candidates.map((order) => {
    const first = order.lines[0].data!;
    const existing = stored.get(orderKey(order.source, order.externalId));
    const email = first.customer_email;
    return {
      existing,
      values: {
        external_source: order.source,
        external_id: order.externalId,
        order_number: first.order_number ?? existing?.order_number ?? order.externalId,
        status: first.status ?? existing?.status ?? 'pending',
        currency: first.currency ?? existing?.currency ?? 'USD',
        customer_id: email !== undefined ? customers.get(email)!.id : (existing?.customer_id ?? null),
        channel_id: first.channel_id ?? existing?.channel_id ?? null,
        placed_at: first.placed_at ? first.placed_at.toISOString() : existing?.placed_at != null ? new Date(existing.placed_at).toISOString() : null,
        items: order.items!,
        ...order.amounts,
      },
    };
  });

  const changed = resolved.filter((r) => {
    if (!r.existing) return true;
    const e = r.existing;
    const v = r.values;
    const same =
      e.order_number === v.order_number && e.status === v.status && e.currency === v.currency && e.customer_id === v.customer_id &&
      e.channel_id === v.channel_id &&
      (v.discount_amount === undefined || (e.discount_amount === moneyText(v.discount_amount) && e.tax_amount === moneyText(v.tax_amount!))) &&
      (e.placed_at === null ? v.placed_at === null : v.placed_at !== null && e.placed_at === Date.parse(v.placed_at)) &&
      e.items.length === v.items.length &&
      e.items.every(([sku, description, quantity, price], i) => {
        const item = v.items[i];
        return sku === item.sku && description === item.description && quantity === quantityText(item.quantity) && price === moneyText(item.price);
      });
    if (same) report.unchanged++;
    return !same;
  });

  for (const { created } of await writeOrders(trx, access, changed.map((r) => r.values))) {
    if (created) report.created++;
    else report.updated++;
  }
}

/**
 * One customer row per email, from the orders' first rows: the first name given for an email wins, and an email
 * given only without a name keeps the stored one.
 */
function customerRows(orders: PendingOrder[]): CustomerRow[] {
  const names = new Map<string, string | null>();
  for (const order of orders) {
    const { customer_email: email, customer_name: name } = order.lines[0].data!;
    if (email !== undefined && (!names.has(email) || (names.get(email) == null && name))) names.set(email, name ?? null);
  }
  return [...names].map(([email, name]) => ({ email, name }));
}
