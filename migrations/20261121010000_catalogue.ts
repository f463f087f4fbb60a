import type { Knex } from 'knex';

/**
 * Customers, products and variants, channels and channel roles, the event outbox, and the tables
 * that depend on customers (quotes, orders, visitors), so that the customer cascade rule holds
 * from the start. Every tenant table carries workspace_id.
 */
export async function up(knex: Knex): Promise<void> {
  // One timestamp format everywhere, for JSON built in SQL: 2026-11-21T10:00:00.000Z.
  await knex.raw(`
    create function iso_time(t timestamptz) returns text language sql stable parallel safe as
    $$ select to_char(t at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') $$
  `);

  await knex.schema.createTable('channels', (t) => {
    t.increments('id');
    t.integer('workspace_id').notNullable().references('workspaces.id').onDelete('CASCADE');
    t.text('name').notNullable();
    t.text('type').notNullable().defaultTo('web');
    t.text('ownership').notNullable().defaultTo('owned');
    t.text('status').notNullable().defaultTo('active');
    t.text('country');
    t.text('currency');
    t.timestamps(true, true);
    t.index(['workspace_id', 'id']); // lists are read in pages by id within a workspace
  });

  await knex.schema.createTable('channel_members', (t) => {
    t.integer('channel_id').notNullable().references('channels.id').onDelete('CASCADE');
    t.integer('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.integer('workspace_id').notNullable().references('workspaces.id').onDelete('CASCADE');
    t.text('role').notNullable();
    t.timestamps(true, true);
    t.primary(['channel_id', 'user_id']);
    t.index(['workspace_id', 'user_id']);
  });

  await knex.schema.createTable('customers', (t) => {
    t.increments('id');
    t.integer('workspace_id').notNullable().references('workspaces.id').onDelete('CASCADE');
    t.text('email').notNullable();
    t.text('name');
    t.text('company');
    t.text('phone');
    t.text('country');
    t.text('notes');
    t.timestamps(true, true);
    t.unique(['workspace_id', 'email']);
    t.index(['workspace_id', 'id']);
  });

  await knex.schema.createTable('products', (t) => {
    t.increments('id');
    t.integer('workspace_id').notNullable().references('workspaces.id').onDelete('CASCADE');
    t.text('sku').notNullable();
    t.text('name').notNullable();
    t.text('type').notNullable().defaultTo('physical');
    t.text('status').notNullable().defaultTo('active');
    t.text('brand');
    t.text('category');
    t.text('description');
    t.timestamps(true, true);
    t.unique(['workspace_id', 'sku']);
    t.index(['workspace_id', 'id']);
  });

  await knex.schema.createTable('variants', (t) => {
    t.increments('id');
    t.integer('workspace_id').notNullable().references('workspaces.id').onDelete('CASCADE');
    t.integer('product_id').notNullable().references('products.id').onDelete('CASCADE');
    t.text('sku').notNullable();
    t.text('name');
    t.decimal('price', 14, 2);
    t.jsonb('attributes').notNullable().defaultTo('{}');
    t.timestamps(true, true);
    t.unique(['workspace_id', 'sku']);
    t.index(['product_id']);
  });

  await knex.schema.createTable('events', (t) => {
    t.text('id').primary();
    t.integer('workspace_id').notNullable().references('workspaces.id').onDelete('CASCADE');
    t.text('type').notNullable();
    t.json('data').notNullable(); // json keeps the text as written: a delivery body has the API's key order
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['workspace_id', 'created_at']);
  });

  await knex.schema.createTable('quotes', (t) => {
    t.increments('id');
    t.integer('workspace_id').notNullable().references('workspaces.id').onDelete('CASCADE');
    t.text('quote_number').notNullable();
    t.text('status').notNullable().defaultTo('draft');
    t.integer('customer_id').references('customers.id').onDelete('RESTRICT');
    t.text('customer_name');
    t.text('customer_email');
    t.integer('channel_id').references('channels.id').onDelete('RESTRICT');
    t.text('currency').notNullable().defaultTo('USD');
    t.decimal('subtotal', 14, 2).notNullable().defaultTo(0);
    t.decimal('discount_amount', 14, 2).notNullable().defaultTo(0);
    t.decimal('tax_rate', 7, 4).notNullable().defaultTo(0);
    t.decimal('tax_amount', 14, 2).notNullable().defaultTo(0);
    t.decimal('total', 14, 2).notNullable().defaultTo(0);
    t.text('notes');
    t.date('valid_until');
    t.text('public_token').notNullable().unique();
    t.text('external_id');
    t.timestamps(true, true);
    t.unique(['workspace_id', 'quote_number']);
    t.index(['workspace_id', 'customer_id']);
    t.index(['workspace_id', 'channel_id']);
  });

  await knex.schema.createTable('orders', (t) => {
    t.increments('id');
    t.integer('workspace_id').notNullable().references('workspaces.id').onDelete('CASCADE');
    t.text('order_number');
    t.text('external_source').notNullable().defaultTo('api');
    t.text('external_id').notNullable();
    t.text('status').notNullable().defaultTo('pending');
    t.integer('customer_id').references('customers.id').onDelete('RESTRICT');
    t.integer('channel_id').references('channels.id').onDelete('RESTRICT');
    t.text('currency').notNullable().defaultTo('USD');
    t.decimal('subtotal', 14, 2).notNullable().defaultTo(0);
    t.decimal('discount_amount', 14, 2).notNullable().defaultTo(0);
    t.decimal('tax_amount', 14, 2).notNullable().defaultTo(0);
    t.decimal('total', 14, 2).notNullable().defaultTo(0);
    t.text('notes');
    t.timestamp('placed_at', { useTz: true });
    t.timestamps(true, true);
    t.unique(['workspace_id', 'external_source', 'external_id']);
    t.index(['workspace_id', 'customer_id']);
    t.index(['workspace_id', 'channel_id']);
  });

  await knex.schema.createTable('visitors', (t) => {
    t.increments('id');
    t.integer('workspace_id').notNullable().references('workspaces.id').onDelete('CASCADE');
    t.text('visitor_id').notNullable();
    t.integer('customer_id').references('customers.id').onDelete('RESTRICT');
    t.timestamp('first_seen_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('last_seen_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['workspace_id', 'visitor_id']);
    t.index(['workspace_id', 'customer_id']);
  });

  for (const [table, column, values] of [
    ['channels', 'type', ['web', 'marketplace', 'retail', 'wholesale', 'b2b']],
    ['channels', 'ownership', ['owned', 'third_party']],
    ['channels', 'status', ['active', 'paused', 'archived']],
    ['channel_members', 'role', ['viewer', 'editor', 'manager']],
    ['products', 'type', ['physical', 'digital', 'service']],
    ['products', 'status', ['active', 'draft', 'archived']],
    ['quotes', 'status', ['draft', 'sent', 'accepted', 'declined', 'cancelled', 'paid']],
    ['orders', 'status', ['pending', 'paid', 'fulfilled', 'cancelled', 'refunded']],
  ] as const) {
    // DDL takes no bind parameters; the values are constants of this file.
    await knex.raw(`alter table ${table} add constraint ${table}_${column}_check check (${column} in (${values.map((v) => `'${v}'`).join(', ')}))`);
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['visitors', 'orders', 'quotes', 'events', 'variants', 'products', 'customers', 'channel_members', 'channels']) {
    await knex.schema.dropTableIfExists(table);
  }
  await knex.raw('drop function if exists iso_time(timestamptz)');
}
