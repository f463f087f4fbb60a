import type { Knex } from 'knex';

/**
 * A quote line's API shape as a composite type, so that `row_to_json(row(...)::quote_lines_api)` renders a line in one
 * expression as compact text: the fields in this order, no spaces, as JSON.stringify prints them (json_build_object
 * puts spaces around its colons and commas). A created quote's lines are then sent on as PostgreSQL wrote them
 * (src/quotes/service.ts), instead of being parsed into objects and serialised again, twice (event and answer).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create type quote_lines_api as (
      id integer, quote_id integer, variant_id integer, sku text, description text, quantity text, price text, line_total text,
      created_at text, updated_at text
    )`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop type quote_lines_api');
}
