import type { Knex } from 'knex';

/**
 * quote_ranges by workspace and range, and by workspace, status and range: a page typed in by number sums its ranges
 * from the newest down, in one of these indexes' order (the second when it is filtered by status), and stops at the
 * range where its skip ends (src/quotes/service.ts keptFirstId), rather than reading, grouping and sorting all of the
 * workspace's ranges first. n is in neither, so the counts' updates stay HOT.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('create index quote_ranges_workspace_bucket on quote_ranges (workspace_id, bucket)');
  await knex.raw('create index quote_ranges_workspace_status_bucket on quote_ranges (workspace_id, status, bucket)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index quote_ranges_workspace_status_bucket');
  await knex.raw('drop index quote_ranges_workspace_bucket');
}
