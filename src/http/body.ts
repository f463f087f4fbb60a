import type { Context, Next } from 'koa';
import { koaBody } from 'koa-body';

const parser = koaBody({
  json: true,
  jsonStrict: true,
  urlencoded: true,
  text: true,
  multipart: true,
  includeUnparsed: true,
  jsonLimit: '2mb',
  formLimit: '2mb',
  textLimit: '21mb',
  formidable: { maxFileSize: 20 * 1024 * 1024 },
  // A malformed body is read as an empty one, so the handler reports the missing field (422).
  onError: (err, ctx) => {
    if ((err as { status?: number }).status === 413) throw err;
    (ctx.request as { body?: unknown }).body = {};
  },
});

/**
 * Parses JSON, form-encoded and multipart bodies into `ctx.request.body` as one plain object.
 * A form-encoded body whose text is a JSON object (what `curl -d '{...}'` sends) is read as that
 * object; form fields win over JSON keys of the same name.
 */
export async function bodyParser(ctx: Context, next: Next): Promise<void> {
  await parser(ctx, async () => {
    (ctx.request as { body?: unknown }).body = normaliseBody(ctx);
    await next();
  });
}

function normaliseBody(ctx: Context): Record<string, unknown> {
  const body = ctx.request.body as unknown;
  if (ctx.is('urlencoded') && isObject(body)) {
    const raw = typeof ctx.request.rawBody === 'string' ? ctx.request.rawBody.trim() : '';
    const json = raw.startsWith('{') ? parseObject(raw) : undefined;
    if (!json) return { ...body };
    const form = Object.fromEntries(Object.entries(body).filter(([key]) => key !== raw && !key.startsWith('{')));
    return { ...json, ...form };
  }
  return isObject(body) ? body : {};
}

function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return isObject(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
