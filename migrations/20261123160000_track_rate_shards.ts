import type { Knex } from 'knex';

/**
 * The rate window of a workspace and minute is split into shard rows, each allowed its share of the cap,
 * so that concurrent events update different rows instead of queuing on one row lock (see recordEvent).
 * An existing row becomes shard 0.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('alter table track_rate_windows add column shard smallint not null default 0');
  await knex.raw('alter table track_rate_windows drop constraint track_rate_windows_pkey');
  await knex.raw('alter table track_rate_windows add primary key (workspace_id, window_start, shard)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('delete from track_rate_windows where shard <> 0');
  await knex.raw('alter table track_rate_windows drop constraint track_rate_windows_pkey');
  await knex.raw('alter table track_rate_windows drop column shard');
  await knex.raw('alter table track_rate_windows add primary key (workspace_id, window_start)');
}
