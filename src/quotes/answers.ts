/**
 * The evidence of a customer's answer: who accepted or declined a quote, when, from which address and browser, and for
 * an acceptance a SHA-256 of the content they accepted, kept on the quote (`acceptance`, `decline`) and in its activity.
 */
import canonicalize from 'canonicalize';
import type { Access } from '../access.js';
import type { Db } from '../db/database.js';
import { scoped } from '../db/scoped.js';
import { sha256 } from '../crypto.js';
import { linesOf, lockedQuoteForUser, type LineJson, type QuoteJson } from './service.js';
import { assertNotExpired, assertTransition, transition } from './transitions.js';
import { sellerOf } from '../workspaces/profile.js';

/** Where an answer came from: the client's address (X-Forwarded-For only with TRUST_PROXY=1) and its User-Agent. */
export interface AnswerOrigin {
  ip: string | null;
  userAgent: string | null;
}

export interface Answer {
  name?: string | null;
  reason?: string | null;
}

/** A User-Agent is kept to this many characters: it is evidence, not storage. */
const USER_AGENT_CHARS = 500;

/**
 * What the customer accepted, as hashed: the quote's number, currency, lines, totals, validity, notes and terms.
 * `terms` is the seller's standing terms shown under the notes (null while the workspace has none).
 */
export function acceptedContent(quote: QuoteJson, lines: LineJson[], terms: string | null) {
  return {
    quote_number: quote.quote_number,
    currency: quote.currency,
    lines: lines.map((l) => ({ sku: l.sku, description: l.description, quantity: l.quantity, price: l.price, line_total: l.line_total })),
    subtotal: quote.subtotal,
    discount_amount: quote.discount_amount,
    tax_rate: quote.tax_rate,
    tax_amount: quote.tax_amount,
    total: quote.total,
    valid_until: quote.valid_until,
    notes: quote.notes,
    terms,
  };
}

/** SHA-256 (hex) of the content's RFC 8785 canonical JSON: the same content gives the same hash wherever it is computed. */
export function contentHash(content: ReturnType<typeof acceptedContent>): string {
  return sha256(canonicalize(content) as string);
}

/**
 * Records the answer on the quote, then moves it to `to` (its activity says who, from where, and for an acceptance
 * the hash): the transition's statement writes the quote's text again, so its event carries `acceptance` or `decline`.
 * The caller holds the quote's row lock and has checked that the quote may take the answer.
 */
export async function recordAnswer(
  trx: Db,
  access: Access,
  quote: QuoteJson,
  to: 'accepted' | 'declined',
  answer: Answer,
  origin: AnswerOrigin,
  where: string,
): Promise<QuoteJson> {
  const { rows } = await trx.raw('select iso_time(now()) as now');
  const at: string = rows[0].now;
  const userAgent = origin.userAgent ? origin.userAgent.slice(0, USER_AGENT_CHARS) : null;
  const who = answer.name ? ` by ${answer.name}` : '';
  const from = `from ${origin.ip ?? 'an unknown address'}${userAgent ? ` (${userAgent})` : ''}`;
  let message: string;
  if (to === 'accepted') {
    // The terms the page and PDF show under the notes are part of what was accepted.
    const [lines, seller] = await Promise.all([linesOf(trx, access, quote.id), sellerOf(trx, access)]);
    const hash = contentHash(acceptedContent(quote, lines, seller.terms));
    const acceptance = { name: answer.name ?? null, accepted_at: at, ip: origin.ip, user_agent: userAgent, actor: access.actor, content_sha256: hash };
    await scoped(trx, 'quotes', access.workspaceId).where({ id: quote.id }).update({ acceptance: JSON.stringify(acceptance) });
    message = `Quote ${quote.quote_number} accepted${who} ${where} ${from}; SHA-256 of the content accepted: ${hash}.`;
  } else {
    const reason = answer.reason ?? null;
    const decline = { name: answer.name ?? null, declined_at: at, ip: origin.ip, user_agent: userAgent, actor: access.actor, reason };
    await scoped(trx, 'quotes', access.workspaceId).where({ id: quote.id }).update({ decline: JSON.stringify(decline) });
    message = `Quote ${quote.quote_number} declined${who} ${where} ${from}${reason ? `. Reason: ${reason}` : ''}.`;
  }
  return transition(trx, access, quote, to, message);
}

/**
 * `POST /quotes/{id}/accept` and `/decline`: a user (or backend) records the customer's answer, with the customer's
 * name when given and the caller's address. The rules are transitionQuote's: 409 from another status, and past
 * valid_until no acceptance.
 */
export async function recordAnswerThroughApi(trx: Db, access: Access, id: number, to: 'accepted' | 'declined', answer: Answer, origin: AnswerOrigin): Promise<QuoteJson> {
  const quote = await lockedQuoteForUser(trx, access, id);
  assertTransition(quote, to);
  if (to === 'accepted') assertNotExpired(quote, to);
  return recordAnswer(trx, access, quote, to, answer, origin, 'through the API');
}
