import type { Knex } from 'knex';

/**
 * The newest run of `quoting worker`, one row: `quoting doctor` reads it to tell a stopped worker
 * (timer or cron gone) from a quiet queue. Overwritten on every run, so it never grows.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table worker_runs (
      id smallint primary key default 1 check (id = 1),
      finished_at timestamptz not null,
      mode text not null,
      claimed integer not null default 0,
      host text not null,
      pid integer not null
    )`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('worker_runs');
}
