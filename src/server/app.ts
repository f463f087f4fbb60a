import { randomUUID } from 'node:crypto';
import { constants as zlib } from 'node:zlib';
import Koa, { type Context, type Middleware, type Next } from 'koa';
import compress from 'koa-compress';
import type Router from '@koa/router';
import { HttpError, isDatabaseUnavailable, MethodNotAllowed } from '../errors.js';
import { errorFields, log, logs, withRequestLog } from '../log.js';
import { isPoolerMismatch, reportPoolerMismatch } from '../db/pooler.js';
import { allowedMethods, Api } from '../http/api.js';
import { bodyParser } from '../http/body.js';
import type { AppDeps } from '../http/deps.js';
import type { SessionCache } from '../auth/session-cache.js';
import { buildOpenApi } from '../http/openapi.js';
import { authenticator } from './authenticate.js';
import type { InFlight } from './in-flight.js';
import { metricsEndpoint } from './metrics.js';
import { httpFigures, type HttpFigures } from '../metrics.js';
import { authRoutes } from '../auth/routes.js';
import { workspaceRoutes } from '../workspaces/routes.js';
import { opsRoutes } from '../ops/routes.js';
import { customerRoutes } from '../customers/routes.js';
import { productRoutes } from '../products/routes.js';
import { channelRoutes } from '../channels/routes.js';
import { webhookRoutes } from '../webhooks/routes.js';
import { quoteRoutes } from '../quotes/routes.js';
import { orderRoutes } from '../orders/routes.js';
import { importRoutes } from '../imports/routes.js';
import { paymentRoutes } from '../payments/routes.js';
import { pageRouter } from '../pages/routes.js';
import { payPageRouter } from '../pages/pay.js';
import { trackingRoutes } from '../tracking/routes.js';
import { tagRouter } from '../tracking/tag.js';
import { webApp } from '../web/index.js';

/** What the app needs beyond the routes' deps: the authenticator's session cache (null: every request reads the database). */
export interface ServerDeps extends AppDeps {
  sessionCache: SessionCache | null;
}

/** The HTTP app: the versioned JSON API under /api/v1, the app's pages (src/web/), the public pages and /healthz; `inFlight` counts the requests being handled (serve's stop waits for them). */

export function createApp(deps: ServerDeps, { inFlight }: { inFlight?: InFlight } = {}): Koa {
  const app = new Koa({ proxy: deps.config.TRUST_PROXY });
  const api = buildApi(deps);

  let openapi: string | undefined;
  api.raw('get', '/openapi.json', (ctx) => {
    openapi ??= JSON.stringify(buildOpenApi(api.routes, deps.config.APP_URL, api.tags));
    ctx.type = 'application/json';
    ctx.body = openapi;
  });

  const metrics = deps.config.METRICS_TOKEN;
  if (inFlight) app.use(inFlight.middleware);
  app.use(requestContext(metrics ? httpFigures : null));
  app.use(compression);
  app.use(bodyParser);
  app.use(healthz(deps));
  app.use(api.middleware());
  app.use(webApp(deps, authenticator(deps.db, deps.config, deps.sessionCache)));
  const pages = [pageRouter(deps), payPageRouter(deps), tagRouter(deps)];
  for (const router of pages) app.use(router.routes());
  app.use(pageMethods(pages));
  // Last before the 404: no other request passes through it.
  if (metrics) app.use(metricsEndpoint(deps.db, metrics));
  app.use(notFound);
  // requestContext answers and logs errors; what reaches koa is a streamed body failing after its first byte.
  app.on('error', (err: unknown) => log.error('response failed after it started', errorFields(err)));
  return app;
}

/** Every endpoint of the versioned API, registered once; the OpenAPI document is built from the same list. */
export function buildApi(deps: ServerDeps): Api {
  const api = new Api(authenticator(deps.db, deps.config, deps.sessionCache), { checkResponses: deps.checkResponses });
  const areas = [authRoutes, workspaceRoutes, opsRoutes, customerRoutes, productRoutes, channelRoutes, quoteRoutes, orderRoutes, importRoutes, webhookRoutes, paymentRoutes, trackingRoutes];
  for (const register of areas) register(api, deps);
  return api;
}

/**
 * gzip or br when the client asks (Accept-Encoding) and the answer is over 1 KB; streamed lists are
 * compressed as they stream. Fast levels: a long list costs the server a fraction of the CPU of the default
 * levels, for a slightly larger body (the `server CPU gzip` column of bench/lists.ts measures it).
 */
const COMPRESS_THRESHOLD = 1024;
const compressor = compress({
  threshold: COMPRESS_THRESHOLD,
  gzip: { level: 1 },
  br: { params: { [zlib.BROTLI_PARAM_QUALITY]: 1 } },
  deflate: false,
});
const answered = () => Promise.resolve();

/**
 * koa-compress, consulted only for answers it might compress: most answers are a JSON text under the
 * threshold (the API serialises its envelope itself; pages are their encoded bytes), and for those its type,
 * header and encoding checks would be per-request work with nothing to show for it.
 */
async function compression(ctx: Context, next: Next): Promise<void> {
  ctx.vary('Accept-Encoding');
  await next();
  const { body } = ctx;
  if ((typeof body === 'string' && Buffer.byteLength(body) < COMPRESS_THRESHOLD) || (Buffer.isBuffer(body) && body.length < COMPRESS_THRESHOLD)) return;
  await compressor(ctx, answered);
}

/**
 * Request id, access log, the request's figures for /metrics (`figures`, when METRICS_TOKEN is set), and the one place
 * errors become `{error, data?}`. Every line logged while the request is handled carries its id and route template
 * (src/log.ts).
 */
function requestContext(figures: HttpFigures | null): Middleware {
  return async (ctx: Context, next: Next) => {
    const given = ctx.get('x-request-id');
    const requestId = /^[\w.-]{1,64}$/.test(given) ? given : randomUUID();
    ctx.state.requestId = requestId;
    ctx.set('X-Request-Id', requestId);
    const started = performance.now();
    if (figures) figures.inFlight++;
    try {
      await withRequestLog({ request_id: requestId, route: () => routeOf(ctx) }, next);
    } catch (err) {
      if (err instanceof MethodNotAllowed) ctx.set('Allow', err.allow.join(', '));
      const { status, body } = withRequestLog({ request_id: requestId, route: () => routeOf(ctx) }, () => errorResponse(err, ctx, requestId));
      ctx.status = status;
      ctx.body = body;
    } finally {
      if (figures) {
        figures.inFlight--;
        figures.record(routeOf(ctx) ?? 'unmatched', ctx.method, ctx.status, (performance.now() - started) / 1000);
      }
    }
    // The path only: query strings may carry credentials (?token=, ?key=).
    if (logs('info')) log.info('request', { request_id: requestId, route: routeOf(ctx), method: ctx.method, path: loggablePath(ctx.path), status: ctx.status, ms: Math.round(performance.now() - started) });
  };
}

/**
 * The request's route template, never its path: the RouteDef's or the page's path (set by the API and the app's
 * pages), else the path @koa/router matched (the public pages, the tag script) with `{name}` for `:name`; null
 * when nothing was routed (a 404).
 */
function routeOf(ctx: Context): string | null {
  const route = ctx.state.route as string | undefined;
  if (route) return route;
  const matched = (ctx as { _matchedRoute?: unknown })._matchedRoute;
  return typeof matched === 'string' ? matched.replace(/:(\w+)/g, '{$1}') : null;
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
  if (isPoolerMismatch(err)) {
    // A setting to change, not a bug: one line naming it, and the server stops (src/cli/serve.ts) rather than fail on.
    log.error(err.message, { request_id: requestId });
    reportPoolerMismatch(err);
    return { status: 503, body: { error: 'The database is unavailable; try again shortly.' } };
  }
  const e = err as { status?: number; expose?: boolean; message?: string; code?: string };
  if (e.code === '23505') return { status: 409, body: { error: 'A record with the same unique value already exists.' } };
  if (typeof e.status === 'number' && e.status >= 400 && e.status < 500 && e.expose) return { status: e.status, body: { error: e.message ?? 'Bad request.' } };
  log.error('unhandled error', { request_id: requestId, method: ctx.method, path: loggablePath(ctx.path), ...errorFields(err) });
  return { status: 500, body: { error: `Something went wrong on our side (request ${requestId}).` } };
}

function healthz({ db }: AppDeps) {
  const check = async (ctx: Context) => {
    try {
      await db.raw('select 1');
      ctx.body = { status: 'ok' };
    } catch (err) {
      log.error('health check failed', errorFields(err));
      ctx.status = 503;
      ctx.body = { status: 'unavailable', error: 'The database is unavailable.' };
    }
  };
  // Not an async function: every other request passes through without a promise of its own.
  return (ctx: Context, next: Next) => {
    if (ctx.path !== '/healthz') return next();
    ctx.state.route = '/healthz';
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') throw new MethodNotAllowed(ctx.method, ctx.path, allowedMethods(['GET']));
    return check(ctx);
  };
}

/**
 * Reached when no page route answered: a path that one of them serves with other methods (`PUT /q/{token}`) is
 * 405 with the methods it takes in Allow, as the API's paths are (src/http/api.ts); any other goes on to 404.
 */
function pageMethods(routers: Router[]) {
  return (ctx: Context, next: Next) => {
    const methods = routers.flatMap((router) => router.match(ctx.path, ctx.method).path.flatMap((layer) => layer.methods));
    if (methods.length) throw new MethodNotAllowed(ctx.method, ctx.path, allowedMethods(methods));
    return next();
  };
}

/** Reached only when nothing else answered: a JSON 404, under /api/v1 and elsewhere. */
async function notFound(ctx: Context): Promise<void> {
  ctx.status = 404;
  ctx.body = { error: `No such endpoint: ${ctx.method} ${ctx.path}` };
}
