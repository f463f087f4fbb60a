import type { Context, Middleware, Next } from 'koa';
import type { AppDeps } from '../http/deps.js';
import { NotFound } from '../errors.js';
import { page, pageAnswer, pageRouter, type Authenticate, type PageDef } from './page.js';
import { serveAssets } from './assets.js';
import { accountPages } from './account.js';
import { homePages } from './home.js';
import { settingsPages } from './settings.js';
import { memberPages } from './members.js';
import { yourAccountPages } from './your-account.js';
import { keyPages } from './keys.js';
import { webhookPages } from './webhooks.js';
import { quotePages } from './quotes.js';
import { quoteFormPages } from './quote-form.js';
import { productPages } from './products.js';
import { orderPages } from './orders.js';
import { customerPages } from './customers.js';
import { channelPages } from './channels.js';
import { importPages } from './imports.js';

/** Every page of the app, in one table: what src/server/app.ts serves and the tests walk. */
export function appPages(deps: AppDeps): PageDef[] {
  return [
    ...accountPages(deps),
    ...homePages(deps),
    ...quotePages(deps),
    ...quoteFormPages(deps),
    ...productPages(deps),
    ...orderPages(deps),
    ...customerPages(deps),
    ...channelPages(deps),
    ...importPages(deps),
    ...settingsPages(deps),
    ...memberPages(deps),
    ...keyPages(deps),
    ...webhookPages(deps),
    ...yourAccountPages(deps),
  ];
}

/** A path under /app that no page has: the 404 page, in the shell once signed in. */
const unknownAppPage = page({
  method: 'get', path: '/app/…', who: 'member',
  handle: async () => {
    throw new NotFound('There is no such page.');
  },
});

/**
 * The app: its static files, its pages, links from before the pages had their own paths, and the 404 page for
 * any other path under /app.
 */
export function webApp(deps: AppDeps, authenticate: Authenticate): Middleware {
  const pages = pageRouter(appPages(deps), authenticate, deps.config.APP_URL);
  const unknown = pageAnswer(unknownAppPage, authenticate, deps.config.APP_URL);
  const rest: Middleware = async (ctx, next) => {
    if (legacyLink(ctx)) return;
    if (isAppPath(ctx.path)) return unknown(ctx);
    await next();
  };
  return async (ctx: Context, next: Next) => {
    await serveAssets(ctx, () => pages(ctx, () => rest(ctx, next)));
  };
}

const isAppPath = (path: string) => path === '/app' || path.startsWith('/app/');

/** Reset and invite links mailed before the pages existed (`/password-reset?token=`, `/invites/accept?token=`) still work. */
function legacyLink(ctx: Context): boolean {
  const token = typeof ctx.query.token === 'string' ? ctx.query.token : '';
  const to = { '/password-reset': '/reset/', '/invites/accept': '/invite/' }[ctx.path];
  if (ctx.method !== 'GET' || !token || !to) return false;
  ctx.redirect(`${to}${encodeURIComponent(token)}`);
  return true;
}
