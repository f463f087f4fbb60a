import type { Context } from 'koa';
import { Forbidden } from '../errors.js';

const unsafeMethods = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * SameSite=Lax keeps the session cookie off most cross-site POSTs, but not off those from a sibling
 * subdomain (same site, another origin) or from browsers without SameSite; the browser names the asking
 * page in Origin, so a change asked for by another origin is refused. No Origin (curl, backends) is
 * allowed; so are the app's own origin (APP_URL) and the host the request was sent to.
 */
export function assertSameSite(ctx: Context, appOrigin: string): void {
  if (!unsafeMethods.has(ctx.method)) return;
  const origin = ctx.get('origin');
  if (!origin) return;
  // "null" (sandboxed frames, privacy redirects) parses as no URL and names no site we know.
  const given = parseUrl(origin);
  if (given && (given.origin === appOrigin || given.host === parseUrl(`${ctx.protocol}://${ctx.host}`)?.host)) return;
  throw new Forbidden('Cross-site request refused: the Origin header names another site.');
}

function parseUrl(text: string): URL | undefined {
  try {
    return new URL(text);
  } catch {
    return undefined;
  }
}
