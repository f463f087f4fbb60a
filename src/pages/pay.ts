import Router from '@koa/router';
import type { AppDeps } from '../http/deps.js';
import { HttpError } from '../errors.js';
import { startCheckout } from '../payments/service.js';
import { publicErrorPage, sendHtml } from './quote-page.js';

/** POST /q/{token}/pay, the quote page's Pay button: creates a Checkout Session and redirects to it. */
export function payPageRouter({ db, config }: AppDeps): Router {
  const router = new Router();
  router.post('/q/:token/pay', async (ctx) => {
    const token = String(ctx.params.token);
    const page = `${config.APP_URL}/q/${encodeURIComponent(token)}`;
    try {
      // Not payable (not accepted yet, or any more): the page shows where the quote stands.
      ctx.redirect((await startCheckout(db, config, token, page)) ?? page);
    } catch (err) {
      const errorPage = publicErrorPage(err);
      if (errorPage) return sendHtml(ctx, errorPage.status, errorPage.html, []);
      if (!(err instanceof HttpError)) throw err;
      ctx.status = err.status;
      ctx.type = 'text/plain; charset=utf-8';
      ctx.body = `${err.message}\n`;
    }
  });
  return router;
}
