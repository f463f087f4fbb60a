import type { Knex } from 'knex';

/**
 * A product keeps its API text once, in `list_json` (with its variants), where it kept it twice: `api_json`, its own
 * text without the variants (~440 of a row's ~1,900 bytes), was read by nothing but the triggers that build
 * `list_json` from it. Without it the products' heap of bench/embedded-reads.ts (50,000 seeded) is 118.6 MB instead of
 * 166.8, and a product's write renders one text instead of two; the list's reads did not get faster for it (185 ms
 * either way: finding the text in the row, not the row's bytes, is what costs there). The product's own fields
 * are now rendered straight into the head of `list_json`, and `list_head_chars` (the head's length in characters: the
 * product's text without its closing brace) says where the variants' part begins:
 * - a product's own write (BEFORE, `products_list_json`): the head rendered afresh (the expression and composite type
 *   of 20261123180000), the variants' part kept from the row (none for a new product);
 * - a variant statement (AFTER, `variants_product_list_json`): each product's head kept, its variants' part read
 *   afresh, the products locked and updated in id order as in 20261125120000.
 * The texts are byte for byte those of before (the response-schema check and test/api/lists.test.ts hold them to the
 * API). Every product row is rewritten once, without the dropped text.
 */

// Frozen here, as in 20261123180000_api_json_expression (a later change of shape is a new migration).
const PRODUCT_TEXT = `row_to_json(row(new.id, new.sku, new.name, new.type, new.status, new.brand, new.category, new.description,
  iso_time(new.created_at), iso_time(new.updated_at))::products_api)::text`;

/** A statement's products get their variants' part again (20261125120000), around a head given by `head`. */
const variantsStatement = (head: string) => `
  create or replace function variants_product_list_json() returns trigger language plpgsql as $$
  declare
    ids int[] := array(select distinct product_id from changed order by product_id);
  begin
    perform 1 from products p where p.id = any(ids) order by p.id for update;
    update products p set list_json = ${head} || ',"variants":[' ||
        coalesce((select string_agg(x.api_json, ',' order by x.id) from variants x
                   where x.workspace_id = p.workspace_id and x.product_id = p.id), '') || ']}'
     where p.id = any(ids);
    return null;
  end $$`;

export async function up(knex: Knex): Promise<void> {
  await knex.raw('alter table products add column list_head_chars int');
  await knex.raw(`
    create or replace function products_list_json() returns trigger language plpgsql as $$
    declare
      head text;
    begin
      -- Written by a variant statement (variants_product_list_json): already whole, its head unchanged.
      if tg_op = 'UPDATE' and new.list_json is distinct from old.list_json then
        return new;
      end if;
      head := left(${PRODUCT_TEXT}, -1);
      new.list_json := head || case when tg_op = 'INSERT' then ',"variants":[]}' else substr(old.list_json, old.list_head_chars + 1) end;
      new.list_head_chars := char_length(head);
      return new;
    end $$`);
  await knex.raw(variantsStatement('left(p.list_json, p.list_head_chars)'));
  await knex.raw('drop trigger products_api_json on products');
  await knex.raw('drop function products_api_json()');
  await knex.raw('alter table products drop column api_json');
  // Every row once more, without the dropped text (PostgreSQL only forgets a dropped column; the bytes stay in a row
  // until it is written again). The head ends where the variants' part begins: the product's text is a JSON object
  // of fixed keys, none "variants", and in its string values a quote is escaped, so the first `,"variants":[` is it.
  await knex.raw('alter table products disable trigger user');
  await knex.raw(`update products set list_head_chars = position(',"variants":[' in list_json) - 1`);
  await knex.raw('alter table products enable trigger user');
  await knex.raw('alter table products alter column list_head_chars set not null');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('alter table products add column api_json text');
  await knex.raw(`alter table products disable trigger user`);
  await knex.raw(`update products set api_json = left(list_json, list_head_chars) || '}'`);
  await knex.raw(`alter table products enable trigger user`);
  await knex.raw('alter table products alter column api_json set not null');
  await knex.raw(`
    create function products_api_json() returns trigger language plpgsql as $$
    begin
      new.api_json := ${PRODUCT_TEXT};
      return new;
    end $$`);
  await knex.raw('create trigger products_api_json before insert or update on products for each row execute function products_api_json()');
  await knex.raw(`
    create or replace function products_list_json() returns trigger language plpgsql as $$
    begin
      if tg_op = 'UPDATE' and new.list_json is distinct from old.list_json then
        return new;
      end if;
      new.list_json := left(new.api_json, -1) ||
        case when tg_op = 'INSERT' then ',"variants":[]}' else substr(old.list_json, char_length(old.api_json)) end;
      return new;
    end $$`);
  await knex.raw(variantsStatement('left(p.api_json, -1)'));
  await knex.raw('alter table products drop column list_head_chars');
}
