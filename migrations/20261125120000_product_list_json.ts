import type { Knex } from 'knex';

/**
 * A product's whole API text, its variants included, stored in its row (`list_json`), as every other listed record's
 * is (`api_json`): a list of products then reads one stored text a row. It was built at read time, the product's text
 * and its variants' joined per product through their index: three times the database's time of reading the same
 * texts stored (50k products: 343 against 113 ms for the rows alone, `COPY … TO STDOUT` to /dev/null), and the API
 * at 2.6 times its limit where the other lists were at 1.1–1.5.
 *
 * Kept by the statements that write the rows, so it cannot go stale:
 * - a product's own write (BEFORE trigger, after `products_api_json` by name): its new text, then its variants' part
 *   as the row held it (none for a new product: no variant can reference it yet). Plain string work, no query;
 * - a variant's write (AFTER … FOR EACH STATEMENT, with its transition table): every product whose variants the
 *   statement changed gets its text again, its variants read afresh in id order, set-based (an import's 150,000
 *   variants are one statement). Those products are locked first, by id, and read after in a statement of their
 *   own: under READ COMMITTED that statement sees every variant change committed by the time the lock was granted,
 *   and a concurrent writer of the same product's variants waits for this one and then reads this one's. A variant
 *   never moves to another product (no endpoint or import changes `product_id`), so the new rows name every product
 *   an UPDATE touched. The products are updated in id order (`id = any(sorted ids)`: an index scan in key order, or
 *   a scan of a freshly inserted table, which is in id order), so their new versions are written in the order a list
 *   reads them. Joined to the changed ids instead, a statement of 150,000 variants got a hash join too large for
 *   `work_mem`, which came out in hash batches: every row of the list's page on a page of its own (50k products:
 *   `COPY` of the list 173 → 99 ms, the limit's table of the same texts 107).
 * The list and single reads (src/products/service.ts) read `list_json`; the tests' response-schema check and
 * test/api/lists.test.ts (a product in the list follows its variants: added, changed, deleted) hold it to the API.
 * `api_json_head` (20261123200000), used only to build the text at read time, goes.
 *
 * A product's row, with both texts, passes 2 KB often enough (3 variants: ~2 KB) that PostgreSQL compressed 70% of
 * the stored texts, and a list then decompressed them all (50k products: 270 against 140–160 ms read uncompressed).
 * `toast_tuple_target` at the page's size leaves a row inline and uncompressed until it no longer fits a page.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('alter table products add column list_json text');
  await knex.raw('alter table products set (toast_tuple_target = 8160)');
  await knex.raw(`
    create function products_list_json() returns trigger language plpgsql as $$
    begin
      -- Written by the statement itself (the variants' trigger below, or the back-fill): already whole.
      if tg_op = 'UPDATE' and new.list_json is distinct from old.list_json then
        return new;
      end if;
      new.list_json := left(new.api_json, -1) ||
        case when tg_op = 'INSERT' then ',"variants":[]}' else substr(old.list_json, char_length(old.api_json)) end;
      return new;
    end $$`);
  await knex.raw('create trigger products_list_json before insert or update on products for each row execute function products_list_json()');
  await knex.raw(`
    create function variants_product_list_json() returns trigger language plpgsql as $$
    declare
      ids int[] := array(select distinct product_id from changed order by product_id);
    begin
      perform 1 from products p where p.id = any(ids) order by p.id for update;
      update products p set list_json = left(p.api_json, -1) || ',"variants":[' ||
          coalesce((select string_agg(x.api_json, ',' order by x.id) from variants x
                     where x.workspace_id = p.workspace_id and x.product_id = p.id), '') || ']}'
       where p.id = any(ids);
      return null;
    end $$`);
  for (const [event, table] of [['insert', 'new'], ['update', 'new'], ['delete', 'old']]) {
    await knex.raw(
      `create trigger variants_product_list_json_${event} after ${event} on variants referencing ${table} table as changed
       for each statement execute function variants_product_list_json()`,
    );
  }
  await knex.raw(`
    update products p set list_json = left(p.api_json, -1) || ',"variants":[' ||
      coalesce((select string_agg(x.api_json, ',' order by x.id) from variants x where x.workspace_id = p.workspace_id and x.product_id = p.id), '') || ']}'`);
  await knex.raw('alter table products alter column list_json set not null');
  await knex.raw('alter table products drop column api_json_head');
}

export async function down(knex: Knex): Promise<void> {
  for (const event of ['insert', 'update', 'delete']) await knex.raw(`drop trigger if exists variants_product_list_json_${event} on variants`);
  await knex.raw('drop function if exists variants_product_list_json()');
  await knex.raw('drop trigger if exists products_list_json on products');
  await knex.raw('drop function if exists products_list_json()');
  await knex.raw('alter table products drop column if exists list_json');
  await knex.raw(`alter table products add column api_json_head text generated always as (left(api_json, -1)) stored`);
  await knex.raw('alter table products reset (toast_tuple_target)');
}
