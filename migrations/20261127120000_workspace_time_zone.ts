import type { Knex } from 'knex';

/** The time zone a workspace's pages show dates in: an IANA name (`Europe/Paris`), or null for UTC. */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('workspaces', (t) => {
    t.text('time_zone');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('workspaces', (t) => {
    t.dropColumn('time_zone');
  });
}
