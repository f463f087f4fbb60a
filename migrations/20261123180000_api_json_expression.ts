import type { Knex } from 'knex';

/**
 * The stored-JSON triggers (20261123120000_stored_json) render the same text, but as one expression
 * (`row_to_json(row(...)::<table>_api)`) instead of a query (`select row_to_json(r) into ... from (select ...) r`).
 * PL/pgSQL evaluates a query through the executor, set up and torn down for every row, and an expression
 * without one: on a bulk write (an import of 50,000 variants) the query form cost as much again as the
 * insert itself, the expression about half of that. A composite type per table gives the fields their
 * names, in the same order, so the text is byte-identical (row_to_json prints both the same way).
 */

// Frozen here, as in 20261123120000_stored_json: a later change of shape is a new migration.
const renderings: Record<string, [string, string][]> = {
  customers: [
    ['id', 'new.id'], ['email', 'new.email'], ['name', 'new.name'], ['company', 'new.company'], ['phone', 'new.phone'], ['country', 'new.country'],
    ['notes', 'new.notes'], ['created_at', 'iso_time(new.created_at)'], ['updated_at', 'iso_time(new.updated_at)'],
  ],
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

/** A bare column keeps its column's type in the composite; every other field is text. */
async function fieldTypes(knex: Knex, table: string, fields: [string, string][]): Promise<string[]> {
  const { rows } = await knex.raw(
    `select a.attname as name, format_type(a.atttypid, a.atttypmod) as type from pg_attribute a
      where a.attrelid = ?::regclass and a.attnum > 0 and not a.attisdropped`,
    [table],
  );
  const types = new Map((rows as { name: string; type: string }[]).map((r) => [r.name, r.type]));
  return fields.map(([, expr]) => {
    const column = /^new\.(\w+)$/.exec(expr)?.[1];
    if (column === undefined) return 'text';
    const type = types.get(column);
    if (!type) throw new Error(`${table}.${column} does not exist`);
    return type;
  });
}

export async function up(knex: Knex): Promise<void> {
  for (const [table, fields] of Object.entries(renderings)) {
    const types = await fieldTypes(knex, table, fields);
    await knex.raw(`create type ${table}_api as (${fields.map(([key], i) => `"${key}" ${types[i]}`).join(', ')})`);
    await knex.raw(`
      create or replace function ${table}_api_json() returns trigger language plpgsql as $$
      begin
        new.api_json := row_to_json(row(${fields.map(([, expr]) => expr).join(', ')})::${table}_api)::text;
        return new;
      end $$`);
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const [table, fields] of Object.entries(renderings)) {
    const columns = fields.map(([key, expr]) => `${expr} as "${key}"`).join(', ');
    await knex.raw(`
      create or replace function ${table}_api_json() returns trigger language plpgsql as $$
      begin
        select row_to_json(r)::text into new.api_json from (select ${columns}) r;
        return new;
      end $$`);
    await knex.raw(`drop type if exists ${table}_api`);
  }
}
