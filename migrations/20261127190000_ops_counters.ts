import type { Knex } from 'knex';

/**
 * `ops_counters`: counters of what any process did (webhook deliveries by outcome, the worker's runs, imports and
 * their rows), kept in the database so that /metrics on any server reads the sum of every process, the worker's
 * and the CLI's included. No workspace column: the counts are of the whole installation and carry no tenant data.
 * `updated_at` is when a counter last moved (the worker's runs: its last run).
 *
 * The dead deliveries' partial index keeps their count, read at every scrape, an index-only scan of a few rows
 * (the due ones have theirs already: webhook_deliveries_due_index).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`create table ops_counters (
      metric text not null,
      label text not null,
      value bigint not null default 0,
      updated_at timestamptz not null default now(),
      primary key (metric, label)
    )`);
  await knex.raw(`create index webhook_deliveries_dead_index on webhook_deliveries (id) where status = 'dead'`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index webhook_deliveries_dead_index');
  await knex.raw('drop table ops_counters');
}
