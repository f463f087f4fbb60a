import { randomUUID } from 'node:crypto';
import Koa, { type Context, type Next } from 'koa';
import { HttpError, isDatabaseUnavailable } from '../errors.js';
import { errorFields, log, logs } from '../log.js';
import { Api } from './api.js';
import { authenticator } from './auth.js';
import { bodyParser } from './body.js';
import type { AppDeps } from './deps.js';
import { buildOpenApi } from './openapi.js';
import { authRoutes } from '../auth/routes.js';
import { workspaceRoutes } from '../workspaces/routes.js';
import { opsRoutes } from '../ops/routes.js';
import { customerRoutes } from '../customers/routes.js';
import { productRoutes } from '../products/routes.js';
import { channelRoutes } from '../channels/routes.js';
import { webhookRoutes } from '../webhooks/routes.js';
import { quoteRoutes } from '../quotes/routes.js';
import { orderRoutes } from '../orders/routes.js';
import { paymentPageRouter, paymentRoutes } from '../payments/routes.js';
import { pageRouter } from '../pages/routes.js';
import { setEventsEnabled } from '../events/emit.js';

/** The HTTP app: the versioned JSON API under /api/v1 plus /healthz. */
export function createApp(deps: AppDeps): Koa {
  const app = new Koa({ proxy: deps.config.TRUST_PROXY });
  setEventsEnabled(deps.config.WEBHOOKS_ENABLED);
  const api = buildApi(deps);

  let openapi: string | undefined;
  api.router.get('/openapi.json', (ctx) => {
    openapi ??= JSON.stringify(buildOpenApi(api.routes, deps.config.APP_URL));
    ctx.type = 'application/json';
    ctx.body = openapi;
  });

  app.use(requestContext);
  app.use(bodyParser);
  app.use(healthz(deps));
  app.use(api.router.routes());
  for (const router of [pageRouter(deps), paymentPageRouter(deps)]) app.use(router.routes());
  app.use(notFound);
  // requestContext answers and logs errors; what reaches koa is a streamed body failing after its first byte.
  app.on('error', (err: unknown) => log.error('response failed after it started', errorFields(err)));
  return app;
}

/** Every endpoint of the versioned API, registered once; the OpenAPI document is built from the same list. */
export function buildApi(deps: AppDeps): Api {
  const api = new Api(authenticator(deps.db, deps.config, deps.sessionCache));
  const areas = [authRoutes, workspaceRoutes, opsRoutes, customerRoutes, productRoutes, channelRoutes, quoteRoutes, orderRoutes, webhookRoutes, paymentRoutes];
  for (const register of areas) register(api, deps);
  return api;
}

/** Request id, access log, and the one place errors become `{error, data?}`. */
async function requestContext(ctx: Context, next: Next): Promise<void> {
  const given = ctx.get('x-request-id');
  const requestId = /^[\w.-]{1,64}$/.test(given) ? given : randomUUID();
  ctx.state.requestId = requestId;
  ctx.set('X-Request-Id', requestId);
  const started = performance.now();
  try {
    await next();
  } catch (err) {
    const { status, body } = errorResponse(err, ctx, requestId);
    ctx.status = status;
    ctx.body = body;
  }
  // The path only: query strings may carry credentials (?token=, ?key=).
  if (logs('info')) log.info('request', { request_id: requestId, method: ctx.method, path: loggablePath(ctx.path), status: ctx.status, ms: Math.round(performance.now() - started) });
}

/** The path without secrets: the public quote token is a credential. */
function loggablePath(path: string): string {
  return path.startsWith('/q/') ? path.replace(/^\/q\/[^/]+/, '/q/…') : path;
}

function errorResponse(err: unknown, ctx: Context, requestId: string): { status: number; body: { error: string; data?: unknown } } {
  if (err instanceof HttpError) return { status: err.status, body: err.data ? { error: err.message, data: err.data } : { error: err.message } };
  if (isDatabaseUnavailable(err)) {
    log.error('database unavailable', { request_id: requestId, ...errorFields(err) });
    return { status: 503, body: { error: 'The database is unavailable; try again shortly.' } };
  }
  const e = err as { status?: number; expose?: boolean; message?: string; code?: string };
  if (e.code === '23505') return { status: 409, body: { error: 'A record with the same unique value already exists.' } };
  if (typeof e.status === 'number' && e.status >= 400 && e.status < 500 && e.expose) return { status: e.status, body: { error: e.message ?? 'Bad request.' } };
  log.error('unhandled error', { request_id: requestId, method: ctx.method, path: loggablePath(ctx.path), ...errorFields(err) });
  return { status: 500, body: { error: `Something went wrong on our side (request ${requestId}).` } };
}

function healthz({ db }: AppDeps) {
  return async (ctx: Context, next: Next) => {
    if (ctx.path !== '/healthz') return next();
    try {
      await db.raw('select 1');
      ctx.body = { status: 'ok' };
    } catch (err) {
      log.error('health check failed', errorFields(err));
      ctx.status = 503;
      ctx.body = { status: 'unavailable', error: 'The database is unavailable.' };
    }
  };
}

/** Reached only when nothing else answered: a JSON 404, under /api/v1 and elsewhere. */
async function notFound(ctx: Context): Promise<void> {
  ctx.status = 404;
  ctx.body = { error: `No such endpoint: ${ctx.method} ${ctx.path}` };
}
