import test from 'ava';
import { migratorConfig } from '../../src/db/migrations.js';
import { freshDatabase, type TestDatabase } from '../helpers/database.js';

// 20261126180000_product_text_once on a database that already holds products: the migration (and those after it)
// rolled back, products and variants written in the schema before it (the product's own text in api_json), then
// migrated again.
let database: TestDatabase;
test.before(async () => {
  database = await freshDatabase();
});
test.after.always(() => database?.close());

const MIGRATION = '20261126180000_product_text_once';
/** The migrations after it, rolled back first (newest first) and applied again with it. */
const LATER = ['20261128120000_quotes_by_status', '20261128100000_quote_ranges_by_bucket', '20261128060000_quote_count_ranges', '20261128020000_quote_create_function', '20261127210000_quote_answers_reminders', '20261127200000_workspace_profiles', '20261127190000_ops_counters', '20261127160000_quote_counts', '20261127120000_workspace_time_zone', '20261127030000_references_with_workspace', '20261126220000_parent_keys_with_workspace', '20261126200000_list_texts'];
/** A product's text as the API renders it (the composite of 20261123180000), and its variants' part, from its rows. */
const expected = `left(row_to_json(row(p.id, p.sku, p.name, p.type, p.status, p.brand, p.category, p.description,
    iso_time(p.created_at), iso_time(p.updated_at))::products_api)::text, -1) || ',"variants":[' ||
  coalesce((select string_agg(v.api_json, ',' order by v.id) from variants v where v.product_id = p.id), '') || ']}'`;

test('migrating keeps every product text byte for byte, and later writes of a product or its variants render it as before', async (t) => {
  const { knex } = database;
  const rolledBack: string[] = [];
  while (!rolledBack.includes(MIGRATION)) {
    const [, files] = (await knex.migrate.down(migratorConfig)) as [number, string[]];
    if (!files.length) break;
    rolledBack.push(...files.map((file) => file.replace(/\.js$/, '').replace(/^.*\//, '')));
  }
  t.deepEqual(rolledBack, [...LATER, MIGRATION], 'the migrations after this one are LATER');

  const [{ id: ws }] = (await knex.raw(`insert into workspaces (name, slug, public_key, secret_key_hash) values ('T', 'product-text', 'pk_t', 'h_t') returning id`)).rows;
  // Quotes, backslashes, control characters and text beyond Latin-1 in every text field; one product without variants.
  await knex.raw(
    `insert into products (workspace_id, sku, name, brand, category, description)
     select ?, 'P-' || g, 'Zoë "the" Ł\\ukasiewicz ✓ ' || g, case when g % 2 = 0 then 'Brand' end, 'Cat', E'line\\n\\ttab \\u0001 😀 ,"variants":[ ' || g
     from generate_series(1, 30) g`,
    [ws],
  );
  await knex.raw(
    `insert into variants (workspace_id, product_id, sku, name, price, attributes)
     select p.workspace_id, p.id, p.sku || '-' || v, 'V' || v, 9.90 + v, jsonb_build_object('size', v, 'note', '"q" ,"variants":[')
     from products p, generate_series(1, 3) v where p.workspace_id = ? and p.sku <> 'P-30'`,
    [ws],
  );
  const before = (await knex.raw(`select id, list_json from products where workspace_id = ? order by id`, [ws])).rows;
  t.is(before.length, 30);

  await knex.migrate.latest(migratorConfig);
  const after = (await knex.raw(`select id, list_json, ${expected} as expected, left(list_json, list_head_chars) as head from products p where workspace_id = ? order by id`, [ws])).rows;
  t.deepEqual(after.map((r: { id: number; list_json: string }) => [r.id, r.list_json]), before.map((r: { id: number; list_json: string }) => [r.id, r.list_json]));
  for (const row of after) t.is(row.list_json, row.expected);
  t.false(after.some((r: { head: string }) => r.head.endsWith(',"variants":[')), 'the head stops before the variants');
  // 20261126200000_list_texts copied the existing texts for the unfiltered list.
  const copies = (await knex.raw(`select id, json from product_texts where workspace_id = ? order by id`, [ws])).rows;
  t.deepEqual(copies.map((r: { id: number; json: string }) => [r.id, r.json]), before.map((r: { id: number; list_json: string }) => [r.id, r.list_json]));

  // Later writes: a product's own fields, a variant changed, one added, one deleted, a product's first variant.
  await knex.raw(`update products set name = 'Renamed "x" ,"variants":[', description = null where workspace_id = ? and sku in ('P-1', 'P-30')`, [ws]);
  await knex.raw(`update variants set price = 1.23 where workspace_id = ? and sku = 'P-2-1'`, [ws]);
  await knex.raw(`delete from variants where workspace_id = ? and sku = 'P-3-2'`, [ws]);
  await knex.raw(
    `insert into variants (workspace_id, product_id, sku, name) select workspace_id, id, sku || '-new', 'New' from products where workspace_id = ? and sku in ('P-4', 'P-30')`,
    [ws],
  );
  const rows = (await knex.raw(`select sku, list_json, ${expected} as expected from products p where workspace_id = ? order by id`, [ws])).rows;
  for (const row of rows) t.is(row.list_json, row.expected, row.sku);
  t.true(rows.find((r: { sku: string }) => r.sku === 'P-30').list_json.includes('"name":"Renamed \\"x\\" ,\\"variants\\":["'));
});
