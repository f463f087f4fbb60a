import type { Knex } from 'knex';

/**
 * The seller's details a workspace's quotes, mails and PDFs show: one row per workspace, written by its owner.
 * No row is the unset profile (the quote page looks as it did before). The logo's bytes live here too, checked
 * on the way in (PNG or JPEG, at most 512 KB), so the pages serve them without a file store.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('workspace_profiles', (t) => {
    t.integer('workspace_id').primary().references('id').inTable('workspaces').onDelete('CASCADE');
    t.text('legal_name');
    t.text('address');
    t.text('tax_number');
    t.text('email');
    t.text('phone');
    t.text('website');
    t.text('default_terms');
    t.integer('default_validity_days');
    t.string('default_currency', 3);
    t.binary('logo');
    t.text('logo_type');
    t.timestamp('logo_updated_at', { useTz: true });
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('workspace_profiles');
}
