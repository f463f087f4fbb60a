import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('workspaces', (t) => {
    t.increments('id');
    t.text('name').notNullable();
    t.text('slug').notNullable().unique();
    t.text('status').notNullable().defaultTo('active');
    t.timestamp('trial_ends_at', { useTz: true });
    t.text('public_key').notNullable().unique();
    t.text('secret_key_hash').notNullable().unique();
    t.timestamps(true, true);
  });
  await knex.raw(`alter table workspaces add constraint workspaces_status_check check (status in ('trialing', 'active', 'suspended'))`);

  await knex.schema.createTable('users', (t) => {
    t.increments('id');
    t.text('email').notNullable().unique();
    t.text('name').notNullable().defaultTo('');
    t.text('password_hash').notNullable();
    t.integer('workspace_id').references('workspaces.id').onDelete('SET NULL');
    t.text('role');
    t.timestamps(true, true);
    t.index(['workspace_id']);
  });
  await knex.raw(`alter table users add constraint users_role_check check (role in ('owner', 'member'))`);

  await knex.schema.createTable('sessions', (t) => {
    t.increments('id');
    t.text('token_hash').notNullable().unique();
    t.integer('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['user_id']);
  });

  await knex.schema.createTable('invites', (t) => {
    t.increments('id');
    t.integer('workspace_id').notNullable().references('workspaces.id').onDelete('CASCADE');
    t.text('email').notNullable();
    t.text('role').notNullable();
    t.text('token_hash').notNullable().unique();
    t.integer('invited_by').references('users.id').onDelete('SET NULL');
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('accepted_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['workspace_id']);
  });

  await knex.schema.createTable('password_resets', (t) => {
    t.increments('id');
    t.integer('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.text('token_hash').notNullable().unique();
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('used_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['password_resets', 'invites', 'sessions', 'users', 'workspaces']) await knex.schema.dropTableIfExists(table);
}
