import type { Context, Next } from 'koa';
import { errors as formidableErrors } from 'formidable';
import { koaBody } from 'koa-body';
import { HttpError } from '../errors.js';

/** What a form may hold on any route but the imports (which take a file, see src/imports/routes.ts). */
const FORM_FIELDS = 1000;
const FORM_BYTES = 2 * 1024 * 1024;

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
  // No route but the imports takes a file: a file part is skipped unread, never written to a temporary file.
  formidable: { maxFields: FORM_FIELDS, maxFieldsSize: FORM_BYTES, filter: () => false },
  // A malformed body is read as an empty one, so the handler reports the missing field (422); a body over a limit is 413 naming it.
  onError: (err, ctx) => {
    const refusal = multipartRefusal(err as FormidableFailure, { fields: FORM_FIELDS, fieldBytes: FORM_BYTES });
    if (refusal.status === 413) throw refusal;
    if ((err as { status?: number }).status === 413) throw err;
    (ctx.request as { body?: unknown }).body = {};
  },
});

export interface FormidableFailure {
  code?: number;
  httpCode?: number;
  message?: string;
}

/** Each of formidable's refusals as a client's error naming the limit that was hit (fields, field bytes, files, bytes, or none: malformed). */
export function multipartRefusal(err: FormidableFailure, limits: { fields: number; fieldBytes: number; fileBytes?: number }): HttpError {
  const mb = (bytes: number) => `${bytes / 1024 / 1024} MB`;
  switch (err.code) {
    case formidableErrors.maxFieldsExceeded:
      return new HttpError(413, `The multipart body has more than ${limits.fields} form fields.`);
    case formidableErrors.maxFieldsSizeExceeded:
      return new HttpError(413, `The multipart body's form fields hold more than ${mb(limits.fieldBytes)}.`);
    case formidableErrors.maxFilesExceeded:
      return new HttpError(413, 'The multipart body has more than one file.');
    case formidableErrors.biggerThanMaxFileSize:
    case formidableErrors.biggerThanTotalMaxFileSize:
      return new HttpError(413, `The file is larger than ${mb(limits.fileBytes ?? 0)}; split it into smaller files.`);
    case formidableErrors.aborted:
      return new HttpError(400, 'The body was interrupted before its end.');
    default:
      return new HttpError(400, `The multipart body could not be read: ${err.message ?? 'malformed'}.`);
  }
}

/**
 * Parses JSON, form-encoded and multipart bodies into `ctx.request.body` as one plain object.
 * A form-encoded body may carry both at once: a JSON object (what `curl -d '{...}'` sends),
 * optionally followed by `&field=value` pairs, which win over JSON keys of the same name.
 */
export function bodyParser(ctx: Context, next: Next): Promise<void> {
  // Not an async function: a request without a body passes through without a promise of its own.
  if (ctx.method !== 'POST' && ctx.method !== 'PUT' && ctx.method !== 'PATCH') return next();
  if (streamedUpload(ctx)) return next();
  return parser(ctx, async () => {
    (ctx.request as { body?: unknown }).body = normaliseBody(ctx);
    await next();
  });
}

/**
 * An import's file (multipart or a raw CSV body, up to 20 MB), or the workspace logo, is read as a stream by its route
 * (src/imports/upload.ts, for the API and the app's import page), never buffered whole here; its JSON
 * or form-encoded form ({url}) is parsed as usual.
 */
function streamedUpload(ctx: Context): boolean {
  if (ctx.is('json', 'urlencoded')) return false;
  if (ctx.method === 'POST' && /^\/(api\/v1\/(products|orders)\/import|app\/imports)\/?$/.test(ctx.path)) return true;
  // The workspace logo, raw or multipart: read, bounded, by src/http/bytes.ts.
  return /^\/(api\/v1\/workspace\/profile\/logo|app\/settings\/logo)\/?$/i.test(ctx.path);
}

function normaliseBody(ctx: Context): Record<string, unknown> {
  const body = ctx.request.body as unknown;
  if (ctx.is('multipart') && isObject(body)) {
    // formidable gives every field as an array of values; a single value is the value itself.
    return Object.fromEntries(Object.entries(body).map(([key, value]) => [key, Array.isArray(value) && value.length === 1 ? value[0] : value]));
  }
  if (ctx.is('urlencoded') && isObject(body)) {
    const raw = typeof ctx.request.rawBody === 'string' ? ctx.request.rawBody.trim() : '';
    return (raw.startsWith('{') && jsonThenForm(raw)) || { ...body };
  }
  return isObject(body) ? body : {};
}

/** `{"a":1,"b":2}&b=3` → `{a: 1, b: "3"}`: a JSON object, then form fields that win over its keys. */
function jsonThenForm(raw: string): Record<string, unknown> | undefined {
  for (let end = raw.indexOf('}'); end !== -1; end = raw.indexOf('}', end + 1)) {
    if (end + 1 < raw.length && raw[end + 1] !== '&') continue;
    const json = parseObject(raw.slice(0, end + 1));
    if (json) return { ...json, ...Object.fromEntries(new URLSearchParams(raw.slice(end + 2))) };
  }
  return undefined;
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
