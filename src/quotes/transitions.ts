/** A quote's status changes (sent, accepted, declined, cancelled, paid) and its expiry, as the addendum allows them. */
import type { Access } from '../access.js';
import type { Db } from '../db/database.js';
import { Conflict } from '../errors.js';
import { emittingStatement, type FoldedEvent } from '../events/outbox.js';
import type { QuoteStatus } from './schema.js';
import { lockedQuoteForUser, type QuoteJson } from './service.js';

/** The addendum's transitions; anything else is 409 naming the current status. */
const transitions: Record<QuoteStatus, QuoteStatus[]> = {
  draft: ['sent', 'cancelled'],
  sent: ['accepted', 'declined', 'cancelled'],
  accepted: ['paid', 'cancelled'],
  declined: [],
  cancelled: [],
  paid: [],
};

/** The column a status stamps with the time the quote took it. */
const timestampOf: Partial<Record<QuoteStatus, string>> = {
  sent: 'sent_at',
  accepted: 'accepted_at',
  declined: 'declined_at',
  cancelled: 'cancelled_at',
  paid: 'paid_at',
};

/**
 * The day the quote's validity ended, or null while it holds (or it has no valid_until). valid_until is the last
 * day, in UTC, on which the quote may be accepted or paid; the statuses stay the addendum's six, expiry is no status.
 */
export function expiredOn(quote: Readonly<Record<string, unknown>>, now: Date | UtcDay = new Date()): string | null {
  const until = quote.valid_until;
  return typeof until === 'string' && until < (typeof now === 'string' ? now : utcDay(now)) ? until : null;
}

/** A day in UTC as ISO text (`2030-01-31`): what expiredOn compares, for a list to work out once for all its rows. */
export type UtcDay = string;
export const utcDay = (now: Date): UtcDay => now.toISOString().slice(0, 10);

/** 409 naming valid_until when the quote has expired: it can no longer be accepted or paid. */
export function assertNotExpired(quote: QuoteJson, to: Extract<QuoteStatus, 'accepted' | 'paid'>): void {
  const expired = expiredOn(quote);
  if (expired) {
    throw new Conflict(`Quote ${quote.quote_number} expired on ${expired} (valid_until); it can no longer be ${to === 'accepted' ? 'accepted' : 'paid'}.`);
  }
}

/** 409 naming the current status unless the addendum allows the quote to become `to`. */
export function assertTransition(quote: QuoteJson, to: QuoteStatus): void {
  if (!transitions[quote.status].includes(to)) {
    throw new Conflict(`Quote ${quote.quote_number} is ${quote.status}; it cannot become ${to}.`);
  }
}

/**
 * Moves the quote to `to` if the addendum allows it (409 naming the current status otherwise),
 * stamps the time, writes the activity and emits the event named after the new status.
 */
export async function transition(trx: Db, access: Access, quote: QuoteJson, to: QuoteStatus, message?: string): Promise<QuoteJson> {
  assertTransition(quote, to);
  const workspaceId = access.workspaceId;
  // The new status, for the status and for each timestamp's case (movingText), then the row, then the activity.
  const statuses = new Array<string>(1 + Object.keys(timestampOf).length).fill(to);
  const values = [...statuses, workspaceId, quote.id, workspaceId, quote.id, to, access.actor, message ?? `Quote ${quote.quote_number} ${to}.`];
  const [row] = await moveQuote(trx, access, `quote.${to}` as 'quote.sent', values);
  return row.quote;
}

/** A transition's event data as `emit` would write it, JSON.stringify({quote}): api_json is that compact text. */
const QUOTE_MOVED = { from: 'q', data: `('{"quote":' || q.api_json || '}')::json` };

/**
 * A transition in one statement: the status and its timestamp (the column named after the new status, when it has
 * one), the activity, and the event with its deliveries (or, with events off or after an event's failure, without):
 * one round trip, where a statement each and the quote read back would cost several times the writes.
 */
const movingText = (event: FoldedEvent | null) => `
  with q as (
    update quotes set status = ?,
      ${Object.entries(timestampOf).map(([status, column]) => `${column} = case when ? = '${status}' then now() else ${column} end`).join(',\n      ')},
      updated_at = now()
    where workspace_id = ? and id = ?
    returning api_json
  ), a as (
    insert into quote_activities (workspace_id, quote_id, type, actor, message) select ?, ?, ?, ?, ? from q
  )${event ? `, ${event.ctes}` : ''}
  select api_json::json as quote${event ? `, ${event.column}` : ''} from q`;
const moveQuote = emittingStatement<{ quote: QuoteJson }>('quoting_move_quote', QUOTE_MOVED, movingText);

/**
 * A transition requested through the API by a signed-in user (write access to the quote's channel). Past its
 * valid_until a quote can no longer be accepted or marked paid (409); it can still be declined or cancelled.
 */
export async function transitionQuote(trx: Db, access: Access, id: number, to: QuoteStatus): Promise<QuoteJson> {
  const quote = await lockedQuoteForUser(trx, access, id);
  assertTransition(quote, to);
  if (to === 'accepted' || to === 'paid') assertNotExpired(quote, to);
  return transition(trx, access, quote, to);
}
