/** Quote numbers, `Q-<year>-<6 digits>`, taken gap-free per workspace and year as a quote is created. */
import type { Access } from '../access.js';
import type { Db } from '../db/database.js';
import { emittingStatement, type FoldedEvent } from '../events/outbox.js';

/** The `quote.created` event's data as `emit` would write it, JSON.stringify({quote, lines}): api_json is that compact text. */
const QUOTE_CREATED = { from: 'q', data: `('{"quote":' || q.api_json || ',"lines":' || ?::text || '}')::json` };

/** takeQuoteNumber's statement, with the event's CTEs (or, with events off or after an event's failure, without). */
const numberingText = (event: FoldedEvent | null) => `
  with n as (
    insert into quote_numbers (workspace_id, year, last_number) values (?, ?, 1)
    on conflict (workspace_id, year) do update set last_number = quote_numbers.last_number + 1
    returning last_number::text as last
  ), q as (
    update quotes set quote_number = ? || lpad(n.last, greatest(6, length(n.last)), '0') from n
    where quotes.id = ? and quotes.workspace_id = ?
    returning quotes.quote_number, quotes.api_json
  ), a as (
    insert into quote_activities (workspace_id, quote_id, type, actor, message)
    select ?, ?, 'created', ?, 'Quote ' || q.quote_number || ' created.' from q
  )${event ? `, ${event.ctes}` : ''}
  select api_json as quote${event ? `, ${event.column}` : ''} from q`;
const numberQuote = emittingStatement<{ quote: string }>('quoting_number_quote', QUOTE_CREATED, numberingText);

/**
 * `Q-<year>-<6 digits>`, gap-free per workspace and year: the counter row stays locked until the
 * creating transaction ends. One statement numbers the quote, records the `created` activity and
 * emits `quote.created` (the quote as numbered, with `lines`, a JSON array's text); returns the quote's JSON text.
 */
export async function takeQuoteNumber(trx: Db, access: Access, quoteId: number, lines: string): Promise<string> {
  const year = new Date().getUTCFullYear();
  const values = [access.workspaceId, year, `Q-${year}-`, quoteId, access.workspaceId, access.workspaceId, quoteId, access.actor];
  const [row] = await numberQuote(trx, access, 'quote.created', values, [lines]);
  return row.quote;
}
