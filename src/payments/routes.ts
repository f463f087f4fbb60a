import type { Context } from 'koa';
import Stripe from 'stripe';
import { z } from 'zod';
import type { Api } from '../http/api.js';
import type { AppDeps } from '../http/deps.js';
import { BadRequest } from '../errors.js';
import { log } from '../log.js';
import { quoteForPayment, recordPayment } from './service.js';
import { webhookSecret } from './stripe.js';

/** The Stripe webhook under /api/v1. */
export function paymentRoutes(api: Api, { db, config }: AppDeps): void {
  api.tag('Payments', "Stripe's webhook, which marks paid quotes");
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
      await handleEvent(db, event, config.WEBHOOKS_ENABLED);
      return { received: true };
    },
  );
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

async function handleEvent(db: AppDeps['db'], event: Stripe.Event, events: boolean): Promise<void> {
  if (event.type !== 'checkout.session.completed' && event.type !== 'checkout.session.async_payment_succeeded') return;
  const session = event.data.object;
  // A completed session can still wait for a delayed payment method; async_payment_succeeded follows then.
  if (event.type === 'checkout.session.completed' && session.payment_status === 'unpaid') return;
  await db.transaction(async (trx) => {
    const quote = await quoteForPayment(trx, { quoteId: idOf(session.metadata?.quote_id), workspaceId: idOf(session.metadata?.workspace_id), checkoutSessionId: session.id });
    const outcome = await recordPayment(trx, { eventId: event.id, eventType: event.type, quote, reference: `checkout session ${session.id}` }, { events });
    if (outcome === 'unknown quote') log.warn('stripe checkout for an unknown quote ignored', { event_id: event.id, session_id: session.id });
    if (outcome === 'not accepted') log.warn('stripe payment for a quote that is not accepted', { event_id: event.id, quote_id: quote?.id });
  });
}

function idOf(value: string | undefined): number | undefined {
  return value && /^[1-9]\d{0,9}$/.test(value) && Number(value) <= 2147483647 ? Number(value) : undefined;
}
