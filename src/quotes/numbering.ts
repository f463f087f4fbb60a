/** Quote numbers, `Q-<year>-<6 digits>`, taken gap-free per workspace and year by the statement that creates the quote. */

/**
 * The CTE `n`: the workspace's next number of the year (`last`, as text). Its counter row stays locked until the
 * creating transaction ends, so concurrent creations in a workspace queue here: the statement that takes it is the
 * creation's last before its commit. Values: the workspace's id, then numberValues().year.
 */
export const NEXT_NUMBER = `n as (
    insert into quote_numbers (workspace_id, year, last_number) values (?, ?, 1)
    on conflict (workspace_id, year) do update set last_number = quote_numbers.last_number + 1
    returning last_number::text as last
  )`;

/** The number made from `n`: its one value is numberValues().prefix. */
export const NUMBER_FROM_N = `? || lpad(n.last, greatest(6, length(n.last)), '0')`;

/** The year a quote created now is numbered in, and its numbers' prefix. */
export function numberValues(): { year: number; prefix: string } {
  const year = new Date().getUTCFullYear();
  return { year, prefix: `Q-${year}-` };
}
