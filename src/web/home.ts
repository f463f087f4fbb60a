/** The home page, /app: what needs the salesperson's attention today. */
import type { z } from 'zod';
import { html, type Html } from '../templates.js';
import { NotFound } from '../errors.js';
import type { AppDeps } from '../http/deps.js';
import type { Access } from '../access.js';
import type { Db } from '../db/database.js';
import { amountText } from '../money.js';
import { dateText, timeText } from './dates.js';
import { acceptedNotConverted, quotesAwaitingAnswer, quotesExpiringSoon } from '../quotes/home.js';
import type { quoteOut } from '../quotes/schema.js';
import { recentOrders } from '../orders/service.js';
import type { orderOut } from '../orders/schema.js';
import { failingDeliveries, type FailingDelivery } from '../webhooks/service.js';
import { getCustomer } from '../customers/service.js';
import { page, type PageDef } from './page.js';
import { shell } from './layout.js';

/** Rows in each box: the page is a summary; the lists behind "See all" have the rest. */
const BOX_ROWS = 10;
const EXPIRING_DAYS = 7;

/** A quote and an order as the API answers them. */
type Quote = z.output<typeof quoteOut>;
type Order = z.output<typeof orderOut>;

interface Column<T> {
  label: string;
  cell: (row: T) => Html | string;
  num?: boolean;
}

/** A box of the page: a heading (with how many, "10+" when there are more than it shows), a table, or why it is empty. */
function box<T>(o: { id: string; title: string; all?: string; counted?: boolean; empty: string; rows: T[]; columns: Column<T>[] }): Html {
  const more = o.rows.length > BOX_ROWS;
  const rows = o.rows.slice(0, BOX_ROWS);
  const count = o.counted === false ? '' : html` <span class="count">${rows.length}${more ? '+' : ''}</span>`;
  return html`<section class="card" aria-labelledby="${o.id}">
  <h2 id="${o.id}">${o.title}${count}</h2>
  ${
    rows.length
      ? html`<div class="table-wrap"><table class="list">
    <thead><tr>${o.columns.map((c) => html`<th scope="col"${c.num ? html` class="num"` : ''}>${c.label}</th>`)}</tr></thead>
    <tbody>${rows.map((row) => html`<tr>${o.columns.map((c) => html`<td data-label="${c.label}"${c.num ? html` class="num"` : ''}>${c.cell(row)}</td>`)}</tr>`)}</tbody>
  </table></div>`
      : html`<p class="empty">${o.empty}</p>`
  }
  ${o.all && rows.length ? html`<p><a href="${o.all}">See all</a></p>` : ''}
</section>`;
}

const customerOf = (q: Quote) => q.customer_name || q.customer_email || '—';

const quoteColumns = (date: Column<Quote>): Column<Quote>[] => [
  { label: 'Quote', cell: (q) => html`<a href="/app/quotes/${q.id}">${q.quote_number}</a>` },
  { label: 'Customer', cell: customerOf },
  { label: 'Total', cell: (q) => amountText(q.currency, q.total), num: true },
  date,
];

/** The orders' customers by id, for their names; a customer removed since reads as none. */
async function customerNames(db: Db, access: Access, orders: Order[]): Promise<Map<number, string>> {
  const ids = [...new Set(orders.map((o) => o.customer_id).filter((id): id is number => id !== null))];
  const names = await Promise.all(
    ids.map(async (id) => {
      try {
        const c = (await getCustomer(db, access, id)) as { name?: string | null; email: string };
        return [id, c.name || c.email] as const;
      } catch (err) {
        if (err instanceof NotFound) return [id, '—'] as const;
        throw err;
      }
    }),
  );
  return new Map(names);
}

export function homePages({ db }: AppDeps): PageDef[] {
  return [
    page({
      method: 'get', path: '/app', who: 'member',
      handle: async ({ auth, flash }) => {
        const access = auth.access;
        const [awaiting, expiring, accepted, orders, failing] = (await Promise.all([
          // One more than shown: whether the box says "10+".
          quotesAwaitingAnswer(db, access, BOX_ROWS + 1),
          quotesExpiringSoon(db, access, EXPIRING_DAYS, BOX_ROWS + 1),
          acceptedNotConverted(db, access, BOX_ROWS + 1),
          recentOrders(db, access, BOX_ROWS),
          // Webhooks are the owner's to fix; the box is not shown at all while nothing fails.
          auth.role === 'owner' ? failingDeliveries(db, access, BOX_ROWS + 1) : [],
        ])) as unknown as [Quote[], Quote[], Quote[], Order[], FailingDelivery[]];
        const customers = await customerNames(db, access, orders);
        return shell(auth, {
          title: 'Home',
          section: 'home',
          flash,
          content: html`<div class="page-head"><h1>${auth.workspace.name}</h1><a class="button primary" href="/app/quotes/new">New quote</a></div>
<div class="grid boxes">
${failing.length ? box<FailingDelivery>({
  id: 'failing', title: 'Failing webhook deliveries', all: '/app/settings/webhooks', rows: failing,
  empty: '',
  columns: [
    { label: 'Delivery', cell: (d) => html`<a href="/app/settings/webhooks/${String(d.subscription_id)}/deliveries/${d.id}">${String(d.event_type)}</a>` },
    { label: 'To', cell: (d) => html`<span class="url">${d.url}</span>` },
    { label: 'Outcome', cell: (d) => [d.status === 'dead' ? 'Failed' : 'Retrying', d.last_status_code === null ? '' : `HTTP ${String(d.last_status_code)}`, String(d.last_error ?? '')].filter(Boolean).join(' · ') },
    { label: 'When', cell: (d) => timeText(d.updated_at) },
  ],
}) : ''}
${box({
  id: 'awaiting', title: 'Waiting for an answer', all: '/app/quotes?status=sent', rows: awaiting,
  empty: 'No sent quotes are waiting for an answer.',
  columns: quoteColumns({ label: 'Sent', cell: (q) => dateText(q.sent_at) }),
})}
${box({
  id: 'expiring', title: `Expiring within ${EXPIRING_DAYS} days`, rows: expiring,
  empty: `No sent quotes expire in the next ${EXPIRING_DAYS} days.`,
  columns: quoteColumns({ label: 'Valid until', cell: (q) => dateText(q.valid_until) }),
})}
${box({
  id: 'accepted', title: 'Accepted, not yet converted', all: '/app/quotes?status=accepted', rows: accepted,
  empty: 'No accepted quotes are waiting to become orders.',
  columns: quoteColumns({ label: 'Accepted', cell: (q) => dateText(q.accepted_at) }),
})}
${box<Order>({
  id: 'orders', title: 'Recent orders', all: '/app/orders', counted: false, rows: orders,
  empty: 'No orders yet.',
  columns: [
    { label: 'Order', cell: (o) => html`<a href="/app/orders/${o.id}">${o.order_number ?? `Order ${o.id}`}</a>` },
    { label: 'Customer', cell: (o) => (o.customer_id === null ? '—' : (customers.get(o.customer_id) ?? '—')) },
    { label: 'Total', cell: (o) => amountText(o.currency, o.total), num: true },
    { label: 'Placed', cell: (o) => dateText(o.placed_at ?? o.created_at) },
  ],
})}
</div>`,
        });
      },
    }),
  ];
}
