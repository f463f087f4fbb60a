import type { Knex } from 'knex';

/**
 * `quote_references(...)` and `quote_create(...)`: the two statements of a quote's creation (with a customer given by
 * id), each inside a PL/pgSQL function. The function keeps the
 * statement's plan for the life of the database connection that runs it, across transactions: behind a
 * transaction-mode pooler (DATABASE_POOLER=transaction), where no named prepared statement survives a transaction,
 * the statements would otherwise be parsed and planned on every call, which costs more than running them. Direct
 * connections call the functions as prepared statements of their own, and they answer as fast as the statements did.
 *
 * quote_references reads the customer given by id (null when the workspace has none) and the variants the SKUs name.
 *
 * The statement takes the workspace's next gap-free number of the year (its counter row stays locked until the
 * creating transaction ends), writes the quote under it with its lines and totals, its `created` activity and, when
 * `p_event_id` is given (null: WEBHOOKS_ENABLED=0), the `quote.created` event with its deliveries and their NOTIFY
 * (the outbox's own statement, as src/events/outbox.ts folds it into its callers'). No quote is written when the
 * discount exceeds the subtotal: `id` is null, and the caller fails the transaction, the number with it. It answers
 * the quote's id, the subtotal, and the quote and its lines as the API shows them (JSON texts).
 */
const common = `
    input as (
      select * from json_to_recordset(p_lines) as i(ord int, variant_id int, sku text, description text, quantity numeric, price numeric)
    ), t as (
      select coalesce(sum(round(i.quantity * i.price, 2)), 0) as subtotal, p_discount as discount, p_tax_rate as rate from input i
    ), n as (
      insert into quote_numbers as c (workspace_id, year, last_number) values (p_workspace_id, p_year, 1)
      on conflict (workspace_id, year) do update set last_number = c.last_number + 1
      returning c.last_number::text as last
    ), q as (
      insert into quotes (workspace_id, quote_number, customer_id, customer_name, customer_email, channel_id, currency, notes, valid_until,
                          public_token, external_id, discount_amount, tax_rate, subtotal, tax_amount, total)
      select p_workspace_id, p_prefix || lpad(n.last, greatest(6, length(n.last)), '0'), p_customer_id, p_customer_name, p_customer_email,
             p_channel_id, coalesce(p_currency, p.default_currency, 'USD'), p_notes,
             coalesce(p_valid_until, (current_timestamp at time zone 'UTC')::date + p.default_validity_days), p_public_token, p_external_id,
             t.discount, t.rate, t.subtotal, round((t.subtotal - t.discount) * t.rate / 100, 2),
             t.subtotal - t.discount + round((t.subtotal - t.discount) * t.rate / 100, 2)
      from t cross join n left join workspace_profiles p on p.workspace_id = p_workspace_id where t.discount <= t.subtotal
      returning quotes.id, quotes.quote_number, quotes.api_json
    ), inserted as (
      insert into quote_lines (workspace_id, quote_id, variant_id, sku, description, quantity, price, line_total)
      select p_workspace_id, q.id, i.variant_id, i.sku, i.description, i.quantity, i.price, round(i.quantity * i.price, 2)
      from q, input i order by i.ord
      returning quote_lines.id, row_to_json(row(quote_lines.id, quote_lines.quote_id, quote_lines.variant_id, quote_lines.sku,
        quote_lines.description, trim_scale(quote_lines.quantity)::text, quote_lines.price::text, quote_lines.line_total::text,
        (select iso_time(now())), (select iso_time(now())))::quote_lines_api)::text as json
    ), lines as (
      select '[' || coalesce(string_agg(inserted.json, ',' order by inserted.id), '') || ']' as text from inserted
    ), a as (
      insert into quote_activities (workspace_id, quote_id, type, actor, message)
      select p_workspace_id, q.id, 'created', p_actor, 'Quote ' || q.quote_number || ' created.' from q
    )`;

const answer = `(select q.id from q), t.subtotal::text, (select q.api_json from q), (select lines.text from lines)`;

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create function quote_references(p_workspace_id int, p_customer_id int, p_skus json)
    returns table (customer json, variants json) language plpgsql as $fn$
    begin
      return query
      select (select json_build_object('id', c.id, 'name', c.name, 'email', c.email) from customers c
              where c.workspace_id = p_workspace_id and c.id = p_customer_id),
             (select json_agg(json_build_object('sku', v.sku, 'id', v.id, 'price', v.price::text, 'description', p.name || coalesce(', ' || nullif(v.name, ''), '')))
              from variants v join products p on p.id = v.product_id and p.workspace_id = v.workspace_id
              where v.workspace_id = p_workspace_id and v.sku in (select json_array_elements_text(p_skus)));
    end $fn$`);
  await knex.raw(`
    create function quote_create(
      p_lines json, p_discount numeric, p_tax_rate numeric, p_workspace_id int, p_year int, p_prefix text,
      p_customer_id int, p_customer_name text, p_customer_email text, p_channel_id int, p_currency text, p_notes text,
      p_valid_until date, p_public_token text, p_external_id text, p_actor text, p_event_id text
    ) returns table (id int, subtotal text, quote text, lines text) language plpgsql as $fn$
    #variable_conflict use_column
    begin
      if p_event_id is null then
        return query with ${common}
        select ${answer} from t;
      else
        return query with ${common}, outbox_event as (
          insert into events (id, workspace_id, type, data)
          select p_event_id, p_workspace_id, 'quote.created', ('{"quote":' || q.api_json || ',"lines":' || lines.text || '}')::json from q, lines
          returning events.id
        ), outbox_deliveries as (
          insert into webhook_deliveries (workspace_id, subscription_id, event_id, event_type)
          select s.workspace_id, s.id, e.id, 'quote.created' from outbox_event e
          join webhook_subscriptions s on s.workspace_id = p_workspace_id and s.active and s.event_types && array['*', 'quote.created', 'quote.*']::text[]
          returning 1
        ), outbox_notified as (
          select pg_notify('quoting_webhooks', '') from (select 1 from outbox_deliveries limit 1) d
        )
        -- Read, so that the NOTIFY runs when deliveries were queued.
        select ${answer} from t where (select count(*) from outbox_notified) >= 0;
      end if;
    end $fn$`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop function quote_references(int, int, json)');
  await knex.raw('drop function quote_create(json, numeric, numeric, int, int, text, int, text, text, int, text, text, date, text, text, text, text)');
}
