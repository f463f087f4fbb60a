import Router from '@koa/router';
import type { Context, Next } from 'koa';
import type { AppDeps } from '../http/deps.js';
import { isDatabaseUnavailable, Validation } from '../errors.js';
import { errorFields, log } from '../log.js';
import { answerQuote, logoByToken, quotePdfByToken, viewQuote } from '../quotes/public.js';
import { pdfFileName } from '../quotes/pdf.js';
import type { QuoteStatus } from '../quotes/schema.js';
import { paymentsConfigured } from '../payments/stripe.js';
import { messagePage, offersPayment, publicErrorPage, quotePage, securityHeaders, sendHtml } from './quote-page.js';

/**
 * HTML pages outside the JSON API: the public quote page /q/{token}, where the token in the URL is the
 * only credential. GET shows the quote (and records the first view of a sent quote); POST .../accept and
 * .../decline answer the quote as the customer, who types their name (and ticks that they accept), and redirect
 * (302) back to the page, whatever the outcome (an expired quote, past its valid_until, is left as it is and its page
 * says so); a form without the name or the tick is the page again, 422, with the input kept and the field's message.
 */
export function pageRouter(deps: AppDeps): Router {
  const { db, config } = deps;
  const router = new Router();
  const payable = paymentsConfigured(config);
  // Where a Pay submit may end up after /q/{token}/pay redirects.
  const formTargets = payable ? ['https://checkout.stripe.com', ...(config.STRIPE_API_BASE ? [new URL(config.STRIPE_API_BASE).origin] : [])] : [];

  /** Page errors are answered as an HTML page, not the API's JSON: 404 and 402 as their own pages. */
  const htmlErrors = async (ctx: Context, next: Next) => {
    try {
      await next();
    } catch (err) {
      const page = publicErrorPage(err);
      if (page) return sendHtml(ctx, page.status, page.html, []);
      const unavailable = isDatabaseUnavailable(err);
      log.error(unavailable ? 'database unavailable' : 'quote page failed', { request_id: ctx.state.requestId, method: ctx.method, ...errorFields(err) });
      sendHtml(
        ctx,
        unavailable ? 503 : 500,
        messagePage('Something went wrong', 'Something went wrong', `The quote cannot be shown right now. Please try again in a moment (request ${String(ctx.state.requestId ?? '')}).`),
        formTargets,
      );
    }
  };

  // Before /q/:token, which would take `abc.pdf` as a token.
  router.get('/q/:token.pdf', htmlErrors, async (ctx) => {
    const { pdf, quote } = await quotePdfByToken(db, ctx.params.token, { events: config.WEBHOOKS_ENABLED });
    securityHeaders(ctx, []);
    ctx.set('Content-Disposition', `inline; filename="${pdfFileName(quote)}"`);
    ctx.type = 'application/pdf';
    ctx.body = pdf;
  });

  router.get('/q/:token/logo', htmlErrors, async (ctx) => {
    const logo = await logoByToken(db, ctx.params.token, { events: config.WEBHOOKS_ENABLED });
    if (!logo) return sendHtml(ctx, 404, messagePage('Not found', 'Not found', 'This quote has no logo.'), []);
    securityHeaders(ctx, []);
    ctx.type = logo.type;
    ctx.body = logo.bytes;
  });

  router.get('/q/:token', htmlErrors, async (ctx) => {
    const token = ctx.params.token;
    // HEAD (link checkers, mail scanners) shows the same page but is not a view.
    const found = await viewQuote(db, token, { events: config.WEBHOOKS_ENABLED, recordView: ctx.method === 'GET' });
    sendHtml(ctx, 200, quotePage(found, found.lines, token, payable), offersPayment(found.quote, payable) ? formTargets : []);
  });

  const answers: ['accept' | 'decline', Extract<QuoteStatus, 'accepted' | 'declined'>][] = [
    ['accept', 'accepted'],
    ['decline', 'declined'],
  ];
  for (const [action, to] of answers) {
    router.post(`/q/:token/${action}`, htmlErrors, async (ctx) => {
      const token = ctx.params.token;
      const body = (ctx.request as { body?: unknown }).body;
      const form = body && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
      // ctx.ip is X-Forwarded-For's first address only with TRUST_PROXY=1 (koa's proxy setting), else the peer's.
      const origin = { ip: ctx.ip || null, userAgent: ctx.get('user-agent') || null };
      try {
        await db.transaction((trx) => answerQuote(trx, token, to, form, origin, { events: config.WEBHOOKS_ENABLED }));
      } catch (err) {
        if (!(err instanceof Validation)) throw err;
        // The page again, 422, with what was typed and the message beside its field.
        const found = await viewQuote(db, token, { events: config.WEBHOOKS_ENABLED, recordView: false });
        return sendHtml(ctx, 422, quotePage(found, found.lines, token, payable, { action, form, error: { field: err.field, message: err.message } }), []);
      }
      // Answered now or already before: the page shows the current state.
      securityHeaders(ctx, []);
      ctx.redirect(`/q/${encodeURIComponent(token)}`);
    });
  }

  return router;
}
