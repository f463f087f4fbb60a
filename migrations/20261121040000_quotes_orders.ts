import type { Knex } from 'knex';

/** Quote lines, activities and numbering; order items; what conversion, external creation and payments need. */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('quotes', (t) => {
    for (const column of ['sent_at', 'viewed_at', 'accepted_at', 'declined_at', 'cancelled_at', 'paid_at']) t.timestamp(column, { useTz: true });
    t.text('checkout_session_id');
    t.index(['workspace_id', 'id']);
  });
  // A repeat of POST /quotes/external with the same external_id finds the first quote.
  await knex.raw('create unique index quotes_external_id_unique on quotes (workspace_id, external_id) where external_id is not null');

  // Gap-free numbering: one counter row per workspace and year, taken under a row lock.
  await knex.schema.createTable('quote_numbers', (t) => {
    t.integer('workspace_id').notNullable().references('workspaces.id').onDelete('CASCADE');
    t.integer('year').notNullable();
    t.integer('last_number').notNullable();
    t.primary(['workspace_id', 'year']);
  });

  await knex.schema.createTable('quote_lines', (t) => {
    t.increments('id');
    t.integer('workspace_id').notNullable().references('workspaces.id').onDelete('CASCADE');
    t.integer('quote_id').notNullable().references('quotes.id').onDelete('CASCADE');
    t.integer('variant_id').references('variants.id').onDelete('SET NULL');
    t.text('sku');
    t.text('description');
    t.decimal('quantity', 14, 3).notNullable();
    t.decimal('price', 14, 2).notNullable();
    t.decimal('line_total', 14, 2).notNullable();
    t.timestamps(true, true);
    t.index(['quote_id', 'id']);
  });

  await knex.schema.createTable('quote_activities', (t) => {
    t.increments('id');
    t.integer('workspace_id').notNullable().references('workspaces.id').onDelete('CASCADE');
    t.integer('quote_id').notNullable().references('quotes.id').onDelete('CASCADE');
    t.text('type').notNullable();
    t.text('actor').notNullable();
    t.text('message').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['quote_id', 'id']);
  });
  await knex.raw(`alter table quote_activities add constraint quote_activities_actor_check check (actor in ('user', 'customer', 'api', 'system'))`);

  await knex.schema.alterTable('orders', (t) => {
    t.integer('quote_id').references('quotes.id').onDelete('SET NULL');
    t.index(['workspace_id', 'id']);
  });

  await knex.schema.createTable('order_items', (t) => {
    t.increments('id');
    t.integer('workspace_id').notNullable().references('workspaces.id').onDelete('CASCADE');
    t.integer('order_id').notNullable().references('orders.id').onDelete('CASCADE');
    t.text('sku');
    t.text('description');
    t.decimal('quantity', 14, 3).notNullable();
    t.decimal('price', 14, 2).notNullable();
    t.decimal('line_total', 14, 2).notNullable();
    t.timestamps(true, true);
    t.index(['order_id', 'id']);
  });

  // Stripe may repeat an event: each one is applied once.
  await knex.schema.createTable('payment_events', (t) => {
    t.text('id').primary();
    t.integer('workspace_id').references('workspaces.id').onDelete('CASCADE');
    t.text('type').notNullable();
    t.timestamp('received_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['payment_events', 'order_items', 'quote_activities', 'quote_lines', 'quote_numbers']) await knex.schema.dropTableIfExists(table);
  await knex.schema.alterTable('orders', (t) => {
    t.dropIndex(['workspace_id', 'id']);
    t.dropColumn('quote_id');
  });
  await knex.raw('drop index if exists quotes_external_id_unique');
  await knex.schema.alterTable('quotes', (t) => {
    t.dropIndex(['workspace_id', 'id']);
    t.dropColumns('sent_at', 'viewed_at', 'accepted_at', 'declined_at', 'cancelled_at', 'paid_at', 'checkout_session_id');
  });
}
