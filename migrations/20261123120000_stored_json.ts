import type { Knex } from 'knex';

/**
 * Each listed record keeps its API JSON as text (`api_json`), rendered by a BEFORE trigger, so it is
 * rewritten by the very statement that writes the row and can never go stale. A list is then these
 * texts joined by commas: PostgreSQL no longer builds JSON per row on every read. The rendering is
 * compact (`{"id":1,"name":"x"}`, row_to_json's output) because that is exactly what JSON.stringify
 * makes of the parsed value: lists (the stored text) and single reads (parsed, re-serialised by
 * node) print the same bytes.
 *
 * Variant attributes become `json` (kept as written; the API writes JSON.stringify's compact text),
 * since jsonb's text output puts spaces after ':' and ','.
 *
 * Indexes: variants are read per product within a workspace ((workspace_id, product_id, id)), an
 * index the planner picks for that equality even before statistics exist (with only (product_id)
 * it combined the workspace's unique SKU index, re-reading all the workspace's variants per product).
 */

// Frozen here: a later change of shape is a new migration that replaces the function.
const renderings: Record<string, [string, string][]> = {
  customers: [
    ['id', 'new.id'], ['email', 'new.email'], ['name', 'new.name'], ['company', 'new.company'], ['phone', 'new.phone'], ['country', 'new.country'],
    ['notes', 'new.notes'], ['created_at', 'iso_time(new.created_at)'], ['updated_at', 'iso_time(new.updated_at)'],
  ],
  // The product's own fields; reads append its variants (`"variants":[…]`) before the closing brace.
  products: [
    ['id', 'new.id'], ['sku', 'new.sku'], ['name', 'new.name'], ['type', 'new.type'], ['status', 'new.status'], ['brand', 'new.brand'],
    ['category', 'new.category'], ['description', 'new.description'], ['created_at', 'iso_time(new.created_at)'], ['updated_at', 'iso_time(new.updated_at)'],
  ],
  variants: [
    ['id', 'new.id'], ['product_id', 'new.product_id'], ['sku', 'new.sku'], ['name', 'new.name'], ['price', 'new.price::text'], ['attributes', 'new.attributes'],
    ['created_at', 'iso_time(new.created_at)'], ['updated_at', 'iso_time(new.updated_at)'],
  ],
  quotes: [
    ['id', 'new.id'], ['quote_number', 'new.quote_number'], ['status', 'new.status'], ['currency', 'new.currency'], ['subtotal', 'new.subtotal::text'],
    ['discount_amount', 'new.discount_amount::text'], ['tax_rate', 'trim_scale(new.tax_rate)::text'], ['tax_amount', 'new.tax_amount::text'],
    ['total', 'new.total::text'], ['customer_id', 'new.customer_id'], ['customer_name', 'new.customer_name'], ['customer_email', 'new.customer_email'],
    ['channel_id', 'new.channel_id'], ['notes', 'new.notes'], ['valid_until', `to_char(new.valid_until, 'YYYY-MM-DD')`], ['public_token', 'new.public_token'],
    ['external_id', 'new.external_id'], ['sent_at', 'iso_time(new.sent_at)'], ['viewed_at', 'iso_time(new.viewed_at)'], ['accepted_at', 'iso_time(new.accepted_at)'],
    ['declined_at', 'iso_time(new.declined_at)'], ['cancelled_at', 'iso_time(new.cancelled_at)'], ['paid_at', 'iso_time(new.paid_at)'],
    ['created_at', 'iso_time(new.created_at)'], ['updated_at', 'iso_time(new.updated_at)'],
  ],
  orders: [
    ['id', 'new.id'], ['order_number', 'new.order_number'], ['external_source', 'new.external_source'], ['external_id', 'new.external_id'],
    ['status', 'new.status'], ['currency', 'new.currency'], ['subtotal', 'new.subtotal::text'], ['discount_amount', 'new.discount_amount::text'],
    ['tax_amount', 'new.tax_amount::text'], ['total', 'new.total::text'], ['customer_id', 'new.customer_id'], ['channel_id', 'new.channel_id'],
    ['quote_id', 'new.quote_id'], ['notes', 'new.notes'], ['placed_at', 'iso_time(new.placed_at)'], ['created_at', 'iso_time(new.created_at)'],
    ['updated_at', 'iso_time(new.updated_at)'],
  ],
};

/** jsonb's value as compact JSON text (used once, to convert the attributes already stored). */
const compactJsonb = `
  create function pg_temp.compact_jsonb(j jsonb) returns text language sql immutable as $$
    select case jsonb_typeof(j)
      when 'object' then '{' || coalesce((select string_agg(to_json(e.key)::text || ':' || pg_temp.compact_jsonb(e.value), ',' order by e.ord)
                                          from jsonb_each(j) with ordinality as e(key, value, ord)), '') || '}'
      when 'array' then '[' || coalesce((select string_agg(pg_temp.compact_jsonb(e.value), ',' order by e.ord)
                                         from jsonb_array_elements(j) with ordinality as e(value, ord)), '') || ']'
      else j::text end
  $$`;

export async function up(knex: Knex): Promise<void> {
  await knex.raw(compactJsonb);
  await knex.raw(`alter table variants alter column attributes drop default`);
  await knex.raw(`alter table variants alter column attributes type json using pg_temp.compact_jsonb(attributes)::json`);
  await knex.raw(`alter table variants alter column attributes set default '{}'::json`);

  for (const [table, fields] of Object.entries(renderings)) {
    const columns = fields.map(([key, expr]) => `${expr} as "${key}"`).join(', ');
    await knex.raw(`alter table ${table} add column api_json text`);
    // Runs before the row is stored: what the statement writes is what the text says.
    await knex.raw(`
      create function ${table}_api_json() returns trigger language plpgsql as $$
      begin
        select row_to_json(r)::text into new.api_json from (select ${columns}) r;
        return new;
      end $$`);
    await knex.raw(`create trigger ${table}_api_json before insert or update on ${table} for each row execute function ${table}_api_json()`);
    await knex.raw(`update ${table} set api_json = null`);
    await knex.raw(`alter table ${table} alter column api_json set not null`);
  }

  await knex.raw('create index variants_workspace_product_index on variants (workspace_id, product_id, id)');
  await knex.raw('drop index if exists variants_product_id_index');
  // Orders by quote (conversion looks the order of a quote up) within the workspace.
  await knex.raw('create index if not exists orders_workspace_quote_index on orders (workspace_id, quote_id)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index if exists orders_workspace_quote_index');
  await knex.raw('create index if not exists variants_product_id_index on variants (product_id)');
  await knex.raw('drop index if exists variants_workspace_product_index');
  for (const table of Object.keys(renderings)) {
    await knex.raw(`drop trigger if exists ${table}_api_json on ${table}`);
    await knex.raw(`drop function if exists ${table}_api_json()`);
    await knex.raw(`alter table ${table} drop column if exists api_json`);
  }
  await knex.raw(`alter table variants alter column attributes drop default`);
  await knex.raw(`alter table variants alter column attributes type jsonb using attributes::jsonb`);
  await knex.raw(`alter table variants alter column attributes set default '{}'::jsonb`);
}
