import type { Knex } from 'knex';

/**
 * `quote_counts`: how many quotes each workspace has by channel (null: no channel, a key of its own) and status, so
 * that the quotes page's status tabs and its pager's total read a few rows instead of counting the workspace's quotes.
 *
 * Kept exact by the statements that write quotes, as the list texts are (20261126200000): an AFTER … FOR EACH
 * STATEMENT trigger per event, with its transition table, adding or subtracting grouped counts in one statement:
 * - INSERT: the new rows, grouped, added (an upsert of quotes fires the UPDATE trigger too, each with its own rows);
 * - UPDATE: the old rows subtracted and the new ones added in one grouped sum; a row whose channel and status stay
 *   the same sums to nothing and is left out, so an edit that changes neither writes no count;
 * - DELETE: the removed rows, grouped, subtracted from the rows that are there. An UPDATE rather than an upsert: when
 *   a workspace is deleted its counts may have gone before its quotes (the foreign keys below), and nothing is left
 *   to subtract from.
 * Rows are upserted in key order, so that two statements wait for each other's counts rather than deadlock.
 *
 * A count that falls to zero stays, as a row: a workspace has a few per channel. The rows go with their workspace or
 * channel (a channel is deleted only when no quote names it, so its counts are all zero by then).
 *
 * `channel_id` is null for no channel, and the key treats nulls as equal (`nulls not distinct`, PostgreSQL 15, the
 * oldest Quoting runs on): a member's counts are read with the same rule as their quotes (channels/access.ts
 * whereReadable), on the same column name.
 *
 * The triggers are created before the backfill: creating them locks quotes against writes until this migration
 * commits, so no quote is written between the count and the first trigger.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`create table quote_counts (
      workspace_id int not null references workspaces (id) on delete cascade,
      channel_id int,
      status text not null,
      n int not null,
      constraint quote_counts_key unique nulls not distinct (workspace_id, channel_id, status),
      constraint quote_counts_channels_foreign foreign key (workspace_id, channel_id) references channels (workspace_id, id) on delete cascade
    )`);
  const upsert = `insert into quote_counts as c (workspace_id, channel_id, status, n)`;
  const onConflict = `on conflict (workspace_id, channel_id, status) do update set n = c.n + excluded.n`;
  await knex.raw(`
    create function quote_counts_keep() returns trigger language plpgsql as $$
    begin
      if tg_op = 'INSERT' then
        ${upsert}
          select workspace_id, channel_id, status, count(*) from added group by 1, 2, 3 order by 1, 2, 3
          ${onConflict};
      elsif tg_op = 'UPDATE' then
        ${upsert}
          select workspace_id, channel_id, status, sum(d) from (
            select workspace_id, channel_id, status, -1 as d from old_rows
            union all
            select workspace_id, channel_id, status, 1 from new_rows
          ) m group by 1, 2, 3 having sum(d) <> 0 order by 1, 2, 3
          ${onConflict};
      else
        update quote_counts c set n = c.n - r.n
          from (select workspace_id, channel_id, status, count(*) as n from removed group by 1, 2, 3) r
          where c.workspace_id = r.workspace_id and c.channel_id is not distinct from r.channel_id and c.status = r.status;
      end if;
      return null;
    end $$`);
  const on = { insert: 'new table as added', update: 'old table as old_rows new table as new_rows', delete: 'old table as removed' };
  for (const [event, referencing] of Object.entries(on)) {
    await knex.raw(`create trigger quote_counts_${event} after ${event} on quotes referencing ${referencing}
      for each statement execute function quote_counts_keep()`);
  }
  await knex.raw(`insert into quote_counts (workspace_id, channel_id, status, n)
    select workspace_id, channel_id, status, count(*) from quotes group by 1, 2, 3 order by 1, 2, 3`);
}

export async function down(knex: Knex): Promise<void> {
  for (const event of ['insert', 'update', 'delete']) await knex.raw(`drop trigger quote_counts_${event} on quotes`);
  await knex.raw('drop function quote_counts_keep()');
  await knex.raw('drop table quote_counts');
}
