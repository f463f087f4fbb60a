import type { Knex } from 'knex';

/**
 * quotes by workspace, status and id: a list filtered by status (the app's status tabs, `GET /api/v1/quotes?status=`)
 * reads its rows in id order from this index, the matching ones only, where the primary key walked every status's
 * rows to find them (about six for each one shown). The walk of a page typed in by number (keptFirstId) is an
 * index-only scan of it. A quote's change of status is then no longer a HOT update; it happens a few times in a
 * quote's life, its other changes stay HOT.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('create index quotes_workspace_status_id on quotes (workspace_id, status, id)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index quotes_workspace_status_id');
}
