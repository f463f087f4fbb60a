import Router from '@koa/router';
import type { Context, Middleware, Next } from 'koa';
import type { z } from 'zod';
import { HttpError, isDatabaseUnavailable, NotFound, Unauthorized, Validation } from '../errors.js';
import { errorFields, log } from '../log.js';
import { Principal, type AuthKind } from '../http/principal.js';
import { assertSameSite } from '../http/same-site.js';
import { parseInput } from '../schema/parse.js';
import type { Html } from '../templates.js';
import { takeFlash, setFlash, type Flash } from './flash.js';
import { errorPage } from './errors.js';
import { inTimeZone } from './dates.js';

/**
 * Who may open a page:
 * - `anyone`: no session needed (the account pages); a signed-in caller is still known to the page.
 * - `user`: signed in, with or without a workspace (the password page).
 * - `member`: signed in to an unlocked workspace; channel roles apply in the services.
 * - `owner`: as `member`, and the owner role (a member gets the 403 page).
 */
export type Who = 'anyone' | 'user' | 'member' | 'owner';

const authKinds: Record<Who, AuthKind> = { anyone: 'session:user', user: 'session:user', member: 'session', owner: 'session:owner' };

/** The caller as the API's authenticator resolves it (src/server/authenticate.ts); passed in from the floor above. */
export type Authenticate = (ctx: Context, kind: AuthKind) => Promise<Principal>;

export interface PageInput<Q> {
  ctx: Context;
  /** Path parameters: `{id}` and any other `{…Id}` are positive integers (anything else is the 404 page). */
  params: Record<string, number>;
  /** Path parameters that are not ids, e.g. a token. */
  text: Record<string, string>;
  query: Q;
  /** A POST's form fields as sent (strings, or arrays of strings for repeated names): what a form shows again on a 422. */
  form: Record<string, unknown>;
  auth: Principal;
  /** The message the previous POST left for this page (303 then GET). */
  flash: Flash | null;
}

/** Elsewhere, with a message for the next page: 303 after a POST, 302 from a GET. */
export class Redirect {
  constructor(
    readonly location: string,
    readonly flash?: Flash,
  ) {}
}

export const redirect = (location: string, flash?: Flash | string) =>
  new Redirect(location, typeof flash === 'string' ? { kind: 'ok', text: flash } : flash);

/** A page answered with a status other than 200. */
export class Rendered {
  constructor(
    readonly status: number,
    readonly html: Html,
  ) {}
}

export type PageResult = Html | Redirect | Rendered;

export interface PageDef<Q extends z.ZodType = z.ZodType> {
  method: 'get' | 'post';
  /** `/app/quotes/{id}`. */
  path: string;
  who: Who;
  /** The query string's schema (GET filters); a bad value is the 422 page naming it. */
  query?: Q;
  handle(input: PageInput<z.output<Q>>): Promise<PageResult>;
  /** POST: the form again, with the user's input and the message beside its field (answered 422). */
  invalid?(input: PageInput<z.output<Q>>, error: Validation): Promise<Html>;
  /** POST: the record again, with the message at the top (answered 409). */
  conflict?(input: PageInput<z.output<Q>>, error: HttpError): Promise<Html>;
}

/** Declares a page: the identity function, there so that each definition's types are inferred from its query schema. */
export const page = <Q extends z.ZodType = z.ZodType>(def: PageDef<Q>): PageDef => def as unknown as PageDef;

/**
 * The app's pages as one middleware: each definition drives its route, the session check (302 to /login), the
 * Origin check on every POST, parameter and query parsing, and turning errors into the 402, 403, 404, 422, 409 and
 * 500 pages. Literal paths are matched before parameters (`/app/quotes/new` before `/app/quotes/{id}`).
 */
export function pageRouter(defs: PageDef[], authenticate: Authenticate, appUrl: string): Middleware {
  const appOrigin = new URL(appUrl).origin;
  // A router per path prefix (section): a request is matched against its section's few pages, not all of them.
  const sections = new Map<string, Router>();
  const sectionRouter = (path: string) => {
    const key = sectionOf(path);
    if (!sections.has(key)) sections.set(key, new Router());
    return sections.get(key)!;
  };
  const ranked = [...defs].sort((a, b) => rank(a.path).localeCompare(rank(b.path)));
  const methods = new Map<string, Set<string>>();
  for (const def of ranked) {
    const path = def.path.replace(/\{(\w+)\}/g, ':$1');
    sectionRouter(path).register(path, [def.method.toUpperCase()], (ctx: Context) => run(def, ctx, authenticate, appOrigin));
    if (!methods.has(path)) methods.set(path, new Set());
    methods.get(path)!.add(def.method.toUpperCase());
  }
  // A page's path asked with a method it does not take: 405 naming those it takes.
  for (const [path, allowed] of methods) {
    const allow = [...allowed, ...(allowed.has('GET') ? ['HEAD'] : [])].join(', ');
    sectionRouter(path).all(path, async (ctx: Context) => {
      ctx.state.route = path.replace(/:(\w+)/g, '{$1}');
      ctx.set('Allow', allow);
      await answerError(ctx, new HttpError(405, `This page does not take ${ctx.method}.`), Principal.anonymous);
    });
  }
  const routes = new Map([...sections].map(([key, router]) => [key, router.routes() as unknown as Middleware]));
  // A path's two-segment section (`/app/quotes`) first, then its one-segment one (`/reset`, `/app`), then the rest.
  return (ctx: Context, next: Next) => {
    const [first, second] = sectionsOfRequest(ctx.path.toLowerCase()); // matched without regard to case, as each router does
    const inFirst = () => (first !== second && routes.has(first) ? routes.get(first)!(ctx, next) : next());
    return second !== undefined && routes.has(second) ? routes.get(second)!(ctx, inFirst) : inFirst();
  };
}

/** A page path's section: its first two segments when both are literal (`/app/quotes/:id` → `/app/quotes`), else its first. */
function sectionOf(path: string): string {
  const [, first = '', second] = path.split('/');
  const key = second !== undefined && second !== '' && !second.startsWith(':') ? `/${first}/${second}` : `/${first}`;
  return key.toLowerCase();
}

/** The sections a request's path may be in: its first segment's, and its first two segments'. */
function sectionsOfRequest(path: string): [string, string | undefined] {
  const slash = path.indexOf('/', 1);
  if (slash < 0) return [path, undefined];
  const end = path.indexOf('/', slash + 1);
  return [path.slice(0, slash), end < 0 ? path : path.slice(0, end)];
}

/** One page's answer on whatever path it is asked: the 404 page for unknown paths under /app. */
export function pageAnswer(def: PageDef, authenticate: Authenticate, appUrl: string): (ctx: Context) => Promise<void> {
  const appOrigin = new URL(appUrl).origin;
  return (ctx) => run(def, ctx, authenticate, appOrigin);
}

/** A character per segment, literal before parameter: sorted, `/app/quotes/new` comes before `/app/quotes/{id}`. */
const rank = (path: string) =>
  path
    .split('/')
    .slice(1)
    .map((segment) => (segment.startsWith('{') ? '1' : '0'))
    .join('');

async function run(def: PageDef, ctx: Context, authenticate: Authenticate, appOrigin: string): Promise<void> {
  ctx.state.route = def.path; // the page's path names the request in the logs and the metrics
  let auth = Principal.anonymous;
  try {
    if (ctx.method === 'POST') assertSameSite(ctx, appOrigin);
    auth = await principalOf(def.who, ctx, authenticate);
    await inTimeZone(auth.maybeWorkspace?.time_zone, () => answer(def, ctx, auth));
  } catch (err) {
    if (err instanceof Unauthorized && def.who !== 'anyone') {
      // A GET comes back to where it was going; a POST's form is gone, so it comes back to the page it was sent from.
      const next = ctx.method === 'GET' ? ctx.originalUrl : refererPath(ctx);
      return send(ctx, new Redirect(next && next !== '/' ? `/login?next=${encodeURIComponent(next)}` : '/login'));
    }
    await answerError(ctx, err, auth);
  }
}

/** The page's answer to a caller already let in. */
async function answer(def: PageDef, ctx: Context, auth: Principal): Promise<void> {
  const { params, text } = pathParams((ctx.params as Record<string, string> | undefined) ?? {});
  const input: PageInput<unknown> = {
    ctx,
    params,
    text,
    query: def.query ? parseInput(def.query, ctx.query) : {},
    form: ctx.method === 'POST' ? ((ctx.request.body as Record<string, unknown> | undefined) ?? {}) : {},
    auth,
    flash: ctx.method === 'GET' || ctx.method === 'HEAD' ? takeFlash(ctx) : null,
  };
  let result: PageResult;
  try {
    result = await def.handle(input);
  } catch (err) {
    if (err instanceof Validation && def.invalid) result = new Rendered(422, await def.invalid(input, err));
    else if (err instanceof HttpError && err.status === 409 && def.conflict) result = new Rendered(409, await def.conflict(input, err));
    else throw err;
  }
  send(ctx, result);
}

async function principalOf(who: Who, ctx: Context, authenticate: Authenticate): Promise<Principal> {
  if (who !== 'anyone') return authenticate(ctx, authKinds[who]);
  // The account pages work signed out, and know a signed-in caller (the sign-in page sends them on).
  try {
    return await authenticate(ctx, 'session:user');
  } catch (err) {
    if (err instanceof HttpError && err.status < 500) return Principal.anonymous;
    throw err;
  }
}

function pathParams(raw: Record<string, string>): { params: Record<string, number>; text: Record<string, string> } {
  const params: Record<string, number> = {};
  const text: Record<string, string> = {};
  for (const [name, value] of Object.entries(raw)) {
    if (name === 'id' || name.endsWith('Id')) {
      if (!/^[1-9]\d{0,9}$/.test(value) || Number(value) > 2147483647) throw new NotFound('There is no such page.');
      params[name] = Number(value);
    } else text[name] = value;
  }
  return { params, text };
}

/** The path of the page a form was posted from, when it is on this site. */
function refererPath(ctx: Context): string | undefined {
  const referer = ctx.get('referer');
  if (!referer) return undefined;
  try {
    const url = new URL(referer);
    return url.host === ctx.host ? `${url.pathname}${url.search}` : undefined;
  } catch {
    return undefined;
  }
}

/** Security headers of every app page: nothing but this site's own files, never framed, never cached. */
export function pageHeaders(ctx: Context): void {
  ctx.set('Content-Security-Policy', "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'");
  ctx.set('X-Frame-Options', 'DENY');
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.set('Referrer-Policy', 'same-origin');
  ctx.set('Cache-Control', 'no-store');
}

function send(ctx: Context, result: PageResult): void {
  pageHeaders(ctx);
  if (result instanceof Redirect) {
    if (result.flash) setFlash(ctx, result.flash);
    ctx.redirect(result.location);
    ctx.status = ctx.method === 'POST' ? 303 : 302;
    return;
  }
  const { status, html } = result instanceof Rendered ? result : { status: 200, html: result };
  ctx.status = status;
  ctx.type = 'text/html; charset=utf-8';
  // Encoded once here: as a string, its length would be measured twice (the compression check, koa) and encoded to send.
  ctx.body = Buffer.from(html.html);
}

/** Every failure as a page: the client's errors with their message, the rest as the 500 page naming the request id only. */
async function answerError(ctx: Context, err: unknown, auth: Principal): Promise<void> {
  const requestId = String(ctx.state.requestId ?? '');
  let status = 500;
  let message = '';
  if (err instanceof HttpError) [status, message] = [err.status, err.message];
  else if (isDatabaseUnavailable(err)) status = 503;
  else {
    const e = err as { status?: number; expose?: boolean; message?: string };
    if (typeof e.status === 'number' && e.status >= 400 && e.status < 500 && e.expose) [status, message] = [e.status, e.message ?? 'Bad request.'];
  }
  if (status >= 500) log.error(status === 503 ? 'database unavailable' : 'page failed', { request_id: requestId, method: ctx.method, path: ctx.path, ...errorFields(err) });
  send(ctx, new Rendered(status, errorPage(ctx, auth, status, message, requestId)));
}
