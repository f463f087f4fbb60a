import Router from '@koa/router';
import type { Context } from 'koa';
import Stripe from 'stripe';
import { z } from 'zod';
import type { Api } from '../http/api.js';
import type { AppDeps } from '../http/deps.js';
import type { Db } from '../db/database.js';
import { BadRequest, HttpError } from '../errors.js';
import { log } from '../log.js';
import { quoteById, transition } from '../quotes/service.js';
import { callStripe, minorUnits, stripeClient, webhookSecret } from './stripe.js';

/** The Stripe webhook under /api/v1. */
export function paymentRoutes(api: Api, { db, config }: AppDeps): void {
  api.route(
    {
      method: 'post', path: '/payments/stripe/webhook', tag: 'Payments', auth: 'none',
      response: z.object({ received: z.literal(true) }),
      summary: 'Stripe webhook: checkout.session.completed marks the quote paid (once, even when Stripe repeats the event)',
      description:
        'Verified with the Stripe-Signature header over the raw body and STRIPE_WEBHOOK_SECRET. ' +
        'checkout.session.completed (when paid) and checkout.session.async_payment_succeeded move the accepted quote named by ' +
        'metadata.quote_id to paid (actor system, event quote.paid); every other event is acknowledged and ignored.',
      errors: { 400: 'Missing or invalid Stripe-Signature', 503: 'STRIPE_SECRET_KEY or STRIPE_WEBHOOK_SECRET is unset' },
    },
    async ({ ctx }) => {
      const event = verifiedEvent(ctx, webhookSecret(config));
      await handleEvent(db, event);
      return { received: true };
    },
  );
}

/** POST /q/{token}/pay: creates a Checkout Session and redirects to it. */
export function paymentPageRouter({ db, config }: AppDeps): Router {
  const router = new Router();
  router.post('/q/:token/pay', async (ctx) => {
    const token = String(ctx.params.token);
    const page = `${config.APP_URL}/q/${encodeURIComponent(token)}`;
    try {
      const stripe = stripeClient(config);
      const found = await db('quotes').where({ public_token: token }).first('id', 'workspace_id');
      if (!found) throw new HttpError(404, 'Quote not found.');
      const quote = await quoteById(db, found.workspace_id, found.id);
      if (quote.status !== 'accepted') {
        ctx.redirect(page);
        return;
      }
      const currency = String(quote.currency).toLowerCase();
      const unitAmount = minorUnits(String(quote.total), currency);
      if (unitAmount <= 0) throw new HttpError(409, `Quote ${quote.quote_number} has nothing to pay.`);
      const metadata = { quote_id: String(quote.id), workspace_id: String(found.workspace_id) };
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
      await db('quotes').where({ id: quote.id, workspace_id: found.workspace_id }).update({ checkout_session_id: session.id });
      ctx.redirect(session.url);
    } catch (err) {
      if (!(err instanceof HttpError)) throw err;
      ctx.status = err.status;
      ctx.type = 'text/plain; charset=utf-8';
      ctx.body = `${err.message}\n`;
    }
  });
  return router;
}

/** The event, after its Stripe-Signature is checked against the raw body: 400 otherwise. */
function verifiedEvent(ctx: Context, secret: string): Stripe.Event {
  const header = ctx.get('stripe-signature');
  if (!header) throw new BadRequest('Missing Stripe-Signature header.');
  const raw = (ctx.request as { rawBody?: unknown }).rawBody;
  if (typeof raw !== 'string' || raw === '') throw new BadRequest('The Stripe-Signature does not match the request body.');
  try {
    return Stripe.webhooks.constructEvent(raw, header, secret);
  } catch (err) {
    log.warn('stripe webhook signature rejected', { error: (err as Error).message });
    throw new BadRequest('The Stripe-Signature does not match the request body.');
  }
}

async function handleEvent(db: AppDeps['db'], event: Stripe.Event): Promise<void> {
  if (event.type !== 'checkout.session.completed' && event.type !== 'checkout.session.async_payment_succeeded') return;
  const session = event.data.object;
  // A completed session can still wait for a delayed payment method; async_payment_succeeded follows then.
  if (event.type === 'checkout.session.completed' && session.payment_status === 'unpaid') return;
  await db.transaction(async (trx) => {
    const quote = await quoteOfSession(trx, session);
    const recorded = await trx('payment_events')
      .insert({ id: event.id, workspace_id: quote?.workspaceId ?? null, type: event.type })
      .onConflict('id')
      .ignore()
      .returning('id');
    if (recorded.length === 0) return; // Stripe repeated an event already applied.
    if (!quote) {
      log.warn('stripe checkout for an unknown quote ignored', { event_id: event.id, session_id: session.id });
      return;
    }
    const current = await quoteById(trx, quote.workspaceId, quote.id);
    if (current.status === 'paid') return;
    if (current.status !== 'accepted') {
      log.warn('stripe payment for a quote that is not accepted', { event_id: event.id, quote_id: current.id, status: current.status });
      return;
    }
    await transition(trx, quote.workspaceId, current, 'paid', 'system', `Quote ${current.quote_number} paid through Stripe (checkout session ${session.id}).`);
  });
}

/** The quote the session was created for, locked: by metadata, else by the stored checkout session id. */
async function quoteOfSession(trx: Db, session: Stripe.Checkout.Session): Promise<{ id: number; workspaceId: number } | undefined> {
  const quoteId = idOf(session.metadata?.quote_id);
  const workspaceId = idOf(session.metadata?.workspace_id);
  const query = trx('quotes').forUpdate().first('id', 'workspace_id');
  const row: { id: number; workspace_id: number } | undefined =
    quoteId && workspaceId ? await query.where({ id: quoteId, workspace_id: workspaceId }) : await query.where({ checkout_session_id: session.id });
  return row ? { id: row.id, workspaceId: row.workspace_id } : undefined;
}

function idOf(value: string | undefined): number | undefined {
  return value && /^[1-9]\d{0,9}$/.test(value) && Number(value) <= 2147483647 ? Number(value) : undefined;
}
