/**
 * Seeding for bench/quotes.ts: quotes and orders of a workspace whose customers are already seeded
 * (bench/lists-seed.ts seedCustomers), one INSERT … SELECT generate_series per table, deterministic (no random()),
 * then ANALYZE. Totals add up as the app computes them. Lines and items are not seeded: the lists do not embed them.
 */
import type { Knex } from 'knex';

const literal = (s: string) => `'${s.replace(/'/g, "''")}'`;

/** `(ARRAY['a','b',…])[1 + (expr) % n]`: a deterministic pick from a list of SQL text literals. */
function pick(list: string[], expr: string): string {
  return `(ARRAY[${list.map(literal).join(', ')}])[(1 + ((${expr}) % ${list.length}))::int]`;
}

const NOTES =
  'Prices as agreed on the call; delivery in two batches, the second after the site inspection. Installation is quoted ' +
  'separately. Volume discount applies from the second pallet. Please quote the number on the purchase order.';
const CURRENCIES = ['USD', 'EUR', 'GBP', 'CHF'];
const QUOTE_STATUSES = ['draft', 'sent', 'accepted', 'declined', 'cancelled', 'paid'];
const ORDER_STATUSES = ['pending', 'paid', 'fulfilled', 'cancelled', 'refunded'];
const SOURCES = ['shopify', 'woocommerce', 'pos', 'api'];

/**
 * The workspace's customers numbered 0…n-1, to spread quotes and orders over them (i % n). n is its own CTE so
 * that the join is an equality the planner can hash (with n taken from c itself it compared every pair).
 */
const customersCte = `c as materialized (select id, name, email, row_number() over (order by id) - 1 as k from customers where workspace_id = ?),
  cn as (select count(*) as n from c)`;

/** A time within the last two years, from i. */
const when = `now() - interval '2 years' + ((i * 7919) % 63072000) * interval '1 second'`;

/**
 * Quotes `from`…`to` (1-based; a workspace grows by seeding the next range) numbered Q-<year>-000001… (the year given, so they never meet the numbers the app hands out now);
 * the year's counter is set to match. Every status, with its timestamps; a quarter have an external_id.
 */
export async function seedQuotes(knex: Knex, workspaceId: number, from: number, to: number, year = 2025, analyze = true): Promise<void> {
  await knex.raw(
    `with ${customersCte}
     insert into quotes (workspace_id, quote_number, status, customer_id, customer_name, customer_email, currency, subtotal, discount_amount,
                         tax_rate, tax_amount, total, notes, valid_until, public_token, external_id, sent_at, viewed_at, accepted_at,
                         declined_at, cancelled_at, paid_at, created_at, updated_at)
     select ?, 'Q-' || ? || '-' || lpad(i::text, 6, '0'), s.status, c.id, c.name, c.email, ${pick(CURRENCIES, 'i / 7')},
       m.subtotal, m.discount, m.rate, round((m.subtotal - m.discount) * m.rate / 100, 2),
       m.subtotal - m.discount + round((m.subtotal - m.discount) * m.rate / 100, 2),
       case when i % 10 < 3 then left(${literal(NOTES)}, (40 + (i * 31) % 200)::int) end,
       (t + interval '30 days')::date,
       md5(? || ':' || i),
       case when i % 4 = 0 then 'crm-' || i end,
       case when s.status <> 'draft' then t + interval '1 hour' end,
       case when s.status in ('accepted', 'declined', 'paid') then t + interval '3 hours' end,
       case when s.status in ('accepted', 'paid') then t + interval '1 day' end,
       case when s.status = 'declined' then t + interval '1 day' end,
       case when s.status = 'cancelled' then t + interval '2 days' end,
       case when s.status = 'paid' then t + interval '5 days' end,
       t, t + interval '5 days'
     from generate_series(?::bigint, ?::bigint) i
     cross join lateral (select ${when} as t) ts
     cross join lateral (select ${pick(QUOTE_STATUSES, 'i * 7')} as status) s
     cross join lateral (select round(((i * 7919) % 5000000) / 100.0 + 10, 2) as subtotal) sub
     cross join lateral (select sub.subtotal,
                                case when i % 5 = 0 then round(sub.subtotal * 0.05, 2) else 0 end as discount,
                                (ARRAY[0, 7.5, 8.25, 19, 20])[(1 + i % 5)::int]::numeric as rate) m
     cross join cn join c on c.k = i % cn.n`,
    [workspaceId, workspaceId, String(year), `bench-${workspaceId}`, from, to],
  );
  await knex.raw(
    `insert into quote_numbers (workspace_id, year, last_number) values (?, ?, ?)
     on conflict (workspace_id, year) do update set last_number = greatest(quote_numbers.last_number, excluded.last_number)`,
    [workspaceId, year, to],
  );
  if (analyze) await knex.raw('analyze quotes');
}

/** Orders `from`…`to` (1-based) from several external sources, nine in ten with a customer, every status. */
export async function seedOrders(knex: Knex, workspaceId: number, from: number, to: number, analyze = true): Promise<void> {
  await knex.raw(
    `with ${customersCte}
     insert into orders (workspace_id, order_number, external_source, external_id, status, customer_id, currency, subtotal,
                         discount_amount, tax_amount, total, notes, placed_at, created_at, updated_at)
     select ?, '#' || (100000 + i), ${pick(SOURCES, 'i')}, 'ord-' || i, ${pick(ORDER_STATUSES, 'i * 3')},
       case when i % 10 < 9 then c.id end, ${pick(CURRENCIES, 'i / 7')},
       m.subtotal, 0, m.tax, m.subtotal + m.tax,
       case when i % 10 < 2 then left(${literal(NOTES)}, (30 + (i * 17) % 150)::int) end,
       t, t, t + interval '2 days'
     from generate_series(?::bigint, ?::bigint) i
     cross join lateral (select ${when} as t) ts
     cross join lateral (select round(((i * 104729) % 2000000) / 100.0 + 5, 2) as subtotal) sub
     cross join lateral (select sub.subtotal, round(sub.subtotal * 0.08, 2) as tax) m
     cross join cn join c on c.k = i % cn.n`,
    [workspaceId, workspaceId, from, to],
  );
  if (analyze) await knex.raw('analyze orders');
}
