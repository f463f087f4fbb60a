import { createHash } from 'node:crypto';
import Router from '@koa/router';
import type { Context } from 'koa';
import type { AppDeps } from '../http/deps.js';
import { isDatabaseUnavailable } from '../errors.js';
import { errorFields, log } from '../log.js';
import { renderScript } from '../templates.js';
import { tagSettings } from './service.js';

function sendScript(ctx: Context, status: number, body: string): void {
  ctx.status = status;
  ctx.type = 'application/javascript; charset=utf-8';
  ctx.set('X-Content-Type-Options', 'nosniff');
  // Shops may isolate their pages (COEP); the script is meant to be embedded anywhere.
  ctx.set('Cross-Origin-Resource-Policy', 'cross-origin');
  ctx.body = body;
}

/**
 * GET /tag/{slug}.js: the tracking script of a workspace (templates/tag.js with the API base and the
 * public key, or no key for a locked workspace: the script then sends nothing but still defines
 * window.quoting, so a page calling it does not break). Browsers revalidate it on every use (no-cache
 * with an ETag, so usually a 304 without a body): a rotated key or a lock reaches the next page load.
 */
export function tagRouter({ db, config }: AppDeps): Router {
  const router = new Router();
  const api = `${config.APP_URL}/api/v1`;
  router.get('/tag/:file', async (ctx) => {
    const match = /^(.{1,100})\.js$/.exec(ctx.params.file);
    try {
      const settings = match ? await tagSettings(db, match[1]) : null;
      if (!settings) {
        ctx.set('Cache-Control', 'no-store');
        return sendScript(ctx, 404, '/* Quoting: no workspace with this address. */\n');
      }
      const body = renderScript('tag.js', { config: { api, key: settings.key } });
      ctx.set('Cache-Control', 'no-cache');
      ctx.etag = createHash('sha256').update(body).digest('base64url').slice(0, 27);
      sendScript(ctx, 200, body);
      if (ctx.fresh) {
        ctx.status = 304;
        ctx.body = null;
      }
    } catch (err) {
      log.error(isDatabaseUnavailable(err) ? 'database unavailable' : 'tag script failed', { request_id: ctx.state.requestId, ...errorFields(err) });
      ctx.set('Cache-Control', 'no-store');
      sendScript(ctx, 503, '/* Quoting: unavailable, try again shortly. */\n');
    }
  });
  return router;
}
