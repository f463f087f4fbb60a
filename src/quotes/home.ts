/** The app's home page lists of quotes: those waiting for an answer, those expiring soon, those accepted and not yet converted. */
import type { Knex } from 'knex';
import type { Access } from '../access.js';
import type { Db } from '../db/database.js';
import { scoped } from '../db/scoped.js';
import { quoteJson, readableQuotes, type QuoteJson } from './service.js';

/** Today in UTC, the calendar valid_until is read in (see transitions.ts expiredOn). */
const TODAY = `(now() at time zone 'utc')::date`;

async function quotesOf(db: Db, query: Knex.QueryBuilder, limit: number): Promise<QuoteJson[]> {
  const rows = await query.limit(limit).select(db.raw(`${quoteJson()} as json`));
  return rows.map((r: { json: QuoteJson }) => r.json);
}

/** Sent quotes the caller may read that can still be answered (no valid_until, or not past it), the longest waiting first. */
export function quotesAwaitingAnswer(db: Db, access: Access, limit: number): Promise<QuoteJson[]> {
  const query = readableQuotes(db, access, { status: 'sent' })
    .where((w) => w.whereNull('q.valid_until').orWhereRaw(`q.valid_until >= ${TODAY}`))
    .orderBy([{ column: 'q.sent_at', order: 'asc' }, { column: 'q.id', order: 'asc' }]);
  return quotesOf(db, query, limit);
}

/** Sent quotes the caller may read whose last valid day is today or within `days` days of it, the soonest first. */
export function quotesExpiringSoon(db: Db, access: Access, days: number, limit: number): Promise<QuoteJson[]> {
  const query = readableQuotes(db, access, { status: 'sent' })
    .whereRaw(`q.valid_until between ${TODAY} and ${TODAY} + ?::int`, [days])
    .orderBy([{ column: 'q.valid_until', order: 'asc' }, { column: 'q.id', order: 'asc' }]);
  return quotesOf(db, query, limit);
}

/** Accepted quotes the caller may read that no order was made from (orders.quote_id), the most recently accepted first. */
export function acceptedNotConverted(db: Db, access: Access, limit: number): Promise<QuoteJson[]> {
  const query = readableQuotes(db, access, { status: 'accepted' })
    .whereNotExists(scoped(db, 'orders as o', access.workspaceId).whereRaw('o.quote_id = q.id').select(db.raw('1')))
    .orderBy([{ column: 'q.accepted_at', order: 'desc' }, { column: 'q.id', order: 'desc' }]);
  return quotesOf(db, query, limit);
}
