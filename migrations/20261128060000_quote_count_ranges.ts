import type { Knex } from 'knex';

/**
 * `quote_ranges`: quote_counts (20261127160000) kept again by id range, `bucket = id >> 10`, so that the quotes page
 * reached by its number alone finds its first quote without walking the quotes before it: it sums the ranges from
 * the newest down to the one where the skipped quotes end, and walks that range's quotes only (an order statistic
 * from the counts). A range of 1,024 ids bounds both walks: the quotes read within a range, and the ranges summed (a
 * row per channel, status and 1,024 ids of the workspace's quotes); a shift, as ids are positive, is that division.
 *
 * The same rules as quote_counts, in the same trigger function, so that each statement on quotes fires one trigger
 * for both tables (counts first, then ranges: every statement takes their rows in the same order): grouped sums of
 * the transition tables, upserted in key order; an UPDATE that moves a quote to another status or channel moves it
 * within its range (an id never changes); a DELETE subtracts from the rows that are there; a range that falls to
 * zero stays, its rows going with their workspace or channel; `nulls not distinct` for no channel.
 *
 * quotes is locked against writes before the function is replaced, so that none is written between the backfill
 * and the new function's first call.
 */

const upsertCounts = `insert into quote_counts as c (workspace_id, channel_id, status, n)`;
const countsConflict = `on conflict (workspace_id, channel_id, status) do update set n = c.n + excluded.n`;
const upsertRanges = `insert into quote_ranges as r (workspace_id, channel_id, status, bucket, n)`;
const rangesConflict = `on conflict (workspace_id, channel_id, status, bucket) do update set n = r.n + excluded.n`;

/** The function as 20261127160000 wrote it (counts alone), or with the ranges' statements after each of its own. */
const keep = (ranges: boolean) => `
  create or replace function quote_counts_keep() returns trigger language plpgsql as $$
  begin
    if tg_op = 'INSERT' then
      ${upsertCounts}
        select workspace_id, channel_id, status, count(*) from added group by 1, 2, 3 order by 1, 2, 3
        ${countsConflict};${ranges ? `
      ${upsertRanges}
        select workspace_id, channel_id, status, id >> 10, count(*) from added group by 1, 2, 3, 4 order by 1, 2, 3, 4
        ${rangesConflict};` : ''}
    elsif tg_op = 'UPDATE' then
      ${upsertCounts}
        select workspace_id, channel_id, status, sum(d) from (
          select workspace_id, channel_id, status, -1 as d from old_rows
          union all
          select workspace_id, channel_id, status, 1 from new_rows
        ) m group by 1, 2, 3 having sum(d) <> 0 order by 1, 2, 3
        ${countsConflict};${ranges ? `
      ${upsertRanges}
        select workspace_id, channel_id, status, bucket, sum(d) from (
          select workspace_id, channel_id, status, id >> 10 as bucket, -1 as d from old_rows
          union all
          select workspace_id, channel_id, status, id >> 10, 1 from new_rows
        ) m group by 1, 2, 3, 4 having sum(d) <> 0 order by 1, 2, 3, 4
        ${rangesConflict};` : ''}
    else
      update quote_counts c set n = c.n - r.n
        from (select workspace_id, channel_id, status, count(*) as n from removed group by 1, 2, 3) r
        where c.workspace_id = r.workspace_id and c.channel_id is not distinct from r.channel_id and c.status = r.status;${ranges ? `
      update quote_ranges r set n = r.n - d.n
        from (select workspace_id, channel_id, status, id >> 10 as bucket, count(*) as n from removed group by 1, 2, 3, 4) d
        where r.workspace_id = d.workspace_id and r.channel_id is not distinct from d.channel_id and r.status = d.status and r.bucket = d.bucket;` : ''}
    end if;
    return null;
  end $$`;

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`create table quote_ranges (
      workspace_id int not null references workspaces (id) on delete cascade,
      channel_id int,
      status text not null,
      bucket int not null,
      n int not null,
      constraint quote_ranges_key unique nulls not distinct (workspace_id, channel_id, status, bucket),
      constraint quote_ranges_channels_foreign foreign key (workspace_id, channel_id) references channels (workspace_id, id) on delete cascade
    )`);
  await knex.raw('lock table quotes in share row exclusive mode');
  await knex.raw(keep(true));
  await knex.raw(`insert into quote_ranges (workspace_id, channel_id, status, bucket, n)
    select workspace_id, channel_id, status, id >> 10, count(*) from quotes group by 1, 2, 3, 4 order by 1, 2, 3, 4`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(keep(false));
  await knex.raw('drop table quote_ranges');
}
