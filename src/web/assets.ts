import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Context, Next } from 'koa';

/**
 * The app's stylesheet and script (public/), read once and served under /assets/ with a content hash in their
 * URL: a page names `/assets/app.css?v=<hash>`, so a browser may keep a file for a year and still fetch a new
 * release's at once.
 */

const publicDir = fileURLToPath(new URL('../../../public/', import.meta.url));
const types: Record<string, string> = { css: 'text/css; charset=utf-8', js: 'text/javascript; charset=utf-8' };

interface Asset {
  body: Buffer;
  type: string;
  hash: string;
}

const assets = new Map<string, Asset>();

function asset(name: string): Asset | undefined {
  if (!/^[\w-]+\.(css|js)$/.test(name)) return undefined;
  let found = assets.get(name);
  if (!found) {
    let body: Buffer;
    try {
      body = fs.readFileSync(`${publicDir}${name}`);
    } catch {
      return undefined;
    }
    found = { body, type: types[name.split('.').pop()!], hash: createHash('sha256').update(body).digest('hex').slice(0, 12) };
    assets.set(name, found);
  }
  return found;
}

/** `/assets/app.css?v=<hash>`. */
export function assetUrl(name: string): string {
  const found = asset(name);
  if (!found) throw new Error(`public/${name} is missing`);
  return `/assets/${name}?v=${found.hash}`;
}

/** GET /assets/<name>: the file, cached for a year when asked for by its current hash. */
export function serveAssets(ctx: Context, next: Next): Promise<void> | void {
  if (!ctx.path.startsWith('/assets/') || (ctx.method !== 'GET' && ctx.method !== 'HEAD')) return next();
  const found = asset(ctx.path.slice('/assets/'.length));
  if (!found) return next();
  ctx.state.route = '/assets/{name}';
  ctx.set('Cache-Control', ctx.query.v === found.hash ? 'public, max-age=31536000, immutable' : 'no-cache');
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.etag = found.hash;
  ctx.type = found.type;
  if (ctx.fresh) {
    ctx.status = 304;
    return;
  }
  ctx.body = found.body;
}
