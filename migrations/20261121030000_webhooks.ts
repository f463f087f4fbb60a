import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('webhook_subscriptions', (t) => {
    t.increments('id');
    t.integer('workspace_id').notNullable().references('workspaces.id').onDelete('CASCADE');
    t.text('url').notNullable();
    t.specificType('event_types', 'text[]').notNullable().defaultTo(knex.raw(`array['*']`));
    // Kept as given: it signs every delivery. The previous secret also signs until previous_secret_expires_at.
    t.text('signing_secret').notNullable();
    t.text('previous_secret');
    t.timestamp('previous_secret_expires_at', { useTz: true });
    t.boolean('active').notNullable().defaultTo(true);
    t.text('description');
    t.timestamps(true, true);
    t.index(['workspace_id', 'id']);
  });

  // No foreign key to the subscription: a deleted subscription's deliveries stay, dead, as history.
  await knex.schema.createTable('webhook_deliveries', (t) => {
    t.increments('id');
    t.integer('workspace_id').notNullable().references('workspaces.id').onDelete('CASCADE');
    t.integer('subscription_id').notNullable();
    t.text('event_id').notNullable().references('events.id').onDelete('CASCADE');
    t.text('event_type').notNullable();
    t.text('status').notNullable().defaultTo('pending');
    t.integer('attempts').notNullable().defaultTo(0);
    t.timestamp('next_attempt_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('last_attempt_at', { useTz: true });
    t.integer('last_status_code');
    t.text('last_error');
    t.text('response_body');
    t.text('claim_token');
    t.timestamp('lease_expires_at', { useTz: true });
    t.timestamps(true, true);
    t.timestamp('delivered_at', { useTz: true });
    t.index(['workspace_id', 'subscription_id', 'id']);
  });
  await knex.raw(`alter table webhook_deliveries add constraint webhook_deliveries_status_check check (status in ('pending', 'succeeded', 'failed', 'dead'))`);
  // The worker's queue: only rows still to be delivered are indexed.
  await knex.raw(`create index webhook_deliveries_due_index on webhook_deliveries (next_attempt_at, id) where status in ('pending', 'failed')`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('webhook_deliveries');
  await knex.schema.dropTableIfExists('webhook_subscriptions');
}
