import type Stripe from 'stripe';
import { systemAccess, type Access } from '../access.js';
import type { Config } from '../config.js';
import type { Db } from '../db/database.js';
import { Conflict, HttpError } from '../errors.js';
import { isZeroAmount } from '../money.js';
import { openQuote, type PublicQuote } from '../quotes/public.js';
import { quoteById } from '../quotes/service.js';
import { expiredOn, transition } from '../quotes/transitions.js';
import { callStripe, minorUnits, stripeClient } from './stripe.js';

/**
 * Paying an accepted quote through Stripe: the checkout its customer starts from the public page, and the
 * payment Stripe reports, which marks the quote paid.
 */

/**
 * Starts the customer's payment of the quote a token names: a Checkout Session for its total, returning
 * to the quote's page (`page`) either way. Returns the session's url, or null when the quote is not
 * payable now (not accepted, or expired). 404 when unknown, 402 when locked, 409 when nothing is due,
 * 503 when payments are not configured, 502 when Stripe fails.
 */
export async function startCheckout(db: Db, config: Config, token: string, page: string): Promise<string | null> {
  // The quote first: an unknown token or a locked workspace answers its page (404, 402) whether or not
  // payments are configured, as the quote page itself does.
  const found = await payableQuote(db, token, { events: config.WEBHOOKS_ENABLED });
  if (!found) return null;
  const stripe = stripeClient(config);
  const { quote, access } = found;
  const currency = String(quote.currency).toLowerCase();
  const unitAmount = minorUnits(String(quote.total), currency);
  const metadata = { quote_id: String(quote.id), workspace_id: String(access.workspaceId) };
  const params: Stripe.Checkout.SessionCreateParams = {
    mode: 'payment',
    line_items: [{ quantity: 1, price_data: { currency, unit_amount: unitAmount, product_data: { name: `Quote ${quote.quote_number}` } } }],
    success_url: page,
    cancel_url: page,
    client_reference_id: `quote_${quote.id}`,
    metadata,
    payment_intent_data: { metadata },
    ...(quote.customer_email ? { customer_email: String(quote.customer_email) } : {}),
  };
  const session = await callStripe('start the checkout', () => stripe.checkout.sessions.create(params));
  if (!session.url) throw new HttpError(502, 'The payment processor (Stripe) returned a checkout session without a payment page.');
  await recordCheckoutSession(db, access, quote.id, session.id);
  return session.url;
}

/**
 * The quote the customer may pay now, or null when it is not accepted, or expired (the page then shows its
 * state): 404 when unknown, 402 when locked, 409 when nothing is due.
 */
async function payableQuote(db: Db, token: string, options: { events: boolean }): Promise<PublicQuote | null> {
  const found = await openQuote(db, token, options);
  if (found.quote.status !== 'accepted' || expiredOn(found.quote)) return null;
  if (isZeroAmount(found.quote.total)) throw new Conflict(`Quote ${found.quote.quote_number} has nothing to pay.`);
  return found;
}

/** Remembers the checkout session started for the quote, so a payment without metadata still finds it. */
async function recordCheckoutSession(db: Db, access: Access, quoteId: number, sessionId: string): Promise<void> {
  await db('quotes').where({ id: quoteId, workspace_id: access.workspaceId }).update({ checkout_session_id: sessionId });
}

/** The quote a payment was started for, locked: by the ids it carries, else by the stored checkout session id. */
export async function quoteForPayment(
  trx: Db,
  ref: { quoteId?: number; workspaceId?: number; checkoutSessionId: string },
): Promise<{ id: number; workspaceId: number } | undefined> {
  const query = trx('quotes').forUpdate().first('id', 'workspace_id');
  const row: { id: number; workspace_id: number } | undefined =
    ref.quoteId && ref.workspaceId ? await query.where({ id: ref.quoteId, workspace_id: ref.workspaceId }) : await query.where({ checkout_session_id: ref.checkoutSessionId }).comment('all workspaces: a payment without its ids is found by its checkout session');
  return row ? { id: row.id, workspaceId: row.workspace_id } : undefined;
}

/**
 * A completed payment (the payment processor's event, verified by the caller): the accepted quote
 * becomes paid once, actor `system`, however often the event is repeated. Returns what happened.
 * Money taken is recorded even past valid_until: a checkout started in time may complete after it.
 */
export async function recordPayment(
  trx: Db,
  payment: { eventId: string; eventType: string; quote?: { id: number; workspaceId: number }; reference: string },
  options: { events: boolean },
): Promise<'repeated' | 'unknown quote' | 'not accepted' | 'already paid' | 'paid'> {
  const recorded = await trx('payment_events')
    .insert({ id: payment.eventId, workspace_id: payment.quote?.workspaceId ?? null, type: payment.eventType })
    .onConflict('id')
    .ignore()
    .returning('id');
  if (recorded.length === 0) return 'repeated';
  if (!payment.quote) return 'unknown quote';
  const access = systemAccess(payment.quote.workspaceId, options);
  const current = await quoteById(trx, access, payment.quote.id);
  if (current.status === 'paid') return 'already paid';
  if (current.status !== 'accepted') return 'not accepted';
  await transition(trx, access, current, 'paid', `Quote ${current.quote_number} paid through Stripe (${payment.reference}).`);
  return 'paid';
}
