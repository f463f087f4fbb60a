import type { Knex } from 'knex';

/**
 * Each list's texts in narrow rows of their own: `quote_texts`, `order_texts`, `customer_texts` and `product_texts`
 * hold (workspace_id, id, json), a copy of the stored API text of each row of their table (`api_json`, and products'
 * `list_json`), which an unfiltered list reads instead of the table itself.
 *
 * Why: to find the text, PostgreSQL walks every column of the row before it (the text was added last, by a
 * migration), and reads pages that hold the rest of the row too. bench/embedded-reads.ts (50,000 of each, PGlite):
 * the app's page queries took 1.17–1.45 × as long on the tables as on the same texts alone (quotes 118 against 88.8
 * ms), before any thread, socket or HTTP; the lists' limit (bench/lists.ts) is the texts alone.
 *
 * Kept by the statements that write the rows, so it cannot go stale: an AFTER … FOR EACH STATEMENT trigger per event
 * with its transition table, set-based (an import's 50,000 rows are one statement), in the statement's transaction:
 * - INSERT: the new rows' texts inserted (an upsert's inserted rows: PostgreSQL gives INSERT … ON CONFLICT DO UPDATE
 *   both statement triggers, each with its own rows);
 * - UPDATE: the changed rows' texts replaced (a row never changes its id or workspace; the join leaves the copy's text
 *   out of the hash, so a large statement's hash of (workspace_id, id) stays in memory and is not split in batches);
 * - DELETE: the removed rows' texts deleted (a workspace's deletion cascades here through the tables' own triggers).
 * The tests hold every copy to its table after each test file (test/helpers/app.ts), and test/api/lists-follow-writes.test.ts
 * each trigger through the API.
 *
 * `toast_tuple_target` at the page's size, as for products (20261125120000): a text stays inline and uncompressed
 * until it no longer fits a page (a product with many variants passes 2 KB).
 */
const LISTS = [
  { texts: 'quote_texts', table: 'quotes', text: 'api_json' },
  { texts: 'order_texts', table: 'orders', text: 'api_json' },
  { texts: 'customer_texts', table: 'customers', text: 'api_json' },
  { texts: 'product_texts', table: 'products', text: 'list_json' },
];

export async function up(knex: Knex): Promise<void> {
  for (const { texts, table, text } of LISTS) {
    await knex.raw(`create table ${texts} (workspace_id int not null, id int not null, json text not null, primary key (workspace_id, id))
      with (toast_tuple_target = 8160)`);
    await knex.raw(`insert into ${texts} select workspace_id, id, ${text} from ${table} order by workspace_id, id`);
    await knex.raw(`
      create function ${texts}_keep() returns trigger language plpgsql as $$
      begin
        if tg_op = 'INSERT' then
          insert into ${texts} select workspace_id, id, ${text} from added;
        elsif tg_op = 'UPDATE' then
          update ${texts} t set json = c.${text} from changed c where t.workspace_id = c.workspace_id and t.id = c.id;
        else
          delete from ${texts} t using removed r where t.workspace_id = r.workspace_id and t.id = r.id;
        end if;
        return null;
      end $$`);
    const on = { insert: 'new table as added', update: 'new table as changed', delete: 'old table as removed' };
    for (const [event, referencing] of Object.entries(on)) {
      await knex.raw(`create trigger ${texts}_${event} after ${event} on ${table} referencing ${referencing}
        for each statement execute function ${texts}_keep()`);
    }
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const { texts, table } of LISTS) {
    for (const event of ['insert', 'update', 'delete']) await knex.raw(`drop trigger ${texts}_${event} on ${table}`);
    await knex.raw(`drop function ${texts}_keep()`);
    await knex.raw(`drop table ${texts}`);
  }
}
