import { pipeline, type Writable } from 'node:stream';
import zlib from 'node:zlib';
import Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import { z } from 'zod';
import { BadRequest, MethodNotAllowed } from '../errors.js';
import { parseInput } from '../schema/parse.js';
import type { AuthKind, Principal } from './principal.js';
import { responseProblems } from './check.js';

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

export interface RouteDef<B extends z.ZodType, Q extends z.ZodType> {
  /** Several methods share one handler (PUT and PATCH are both partial updates). */
  method: Method | Method[];
  /** OpenAPI-style path under /api/v1, e.g. `/customers/{id}`; every path parameter is an integer id. */
  path: string;
  summary: string;
  tag: string;
  auth: AuthKind;
  body?: B;
  query?: Q;
  /** Schema of `data` in the success envelope. */
  response: z.ZodType;
  /** Success status; a handler may answer another one with `reply()`. */
  status?: number;
  /** An upsert (status 201): what its 200, with the same response schema, means, e.g. an existing record matched. */
  alsoOk?: string;
  /** Other documented statuses, beyond the ones the auth kind implies. */
  errors?: Partial<Record<number, string>>;
  description?: string;
  /**
   * A file upload (the imports): besides the JSON body, the request may be `multipart/form-data` with
   * the file in this field, or the raw file as one of `types` (`text/csv` unless given); the route reads either as a stream.
   */
  upload?: { field: string; types?: string[] };
  /**
   * A success answered with a file rather than the JSON envelope (a PDF, an image): its media types, for the
   * OpenAPI document. The handler returns `fileReply(...)`.
   */
  produces?: string[];
  /** One of the spec's CORS endpoints: `Access-Control-Allow-Origin: *` on every answer, and preflights answered 204. */
  cors?: boolean;
}

export interface HandlerInput<B extends z.ZodType, Q extends z.ZodType> {
  ctx: Context;
  body: z.output<B>;
  query: z.output<Q>;
  params: Record<string, number>;
  auth: Principal;
}

export class Reply {
  constructor(
    public readonly status: number,
    public readonly data: Record<string, unknown> | JsonText,
  ) {}
}

/** Answers with a status other than the route's default, e.g. 201 for a created record. */
export const reply = (status: number, data: Record<string, unknown> | JsonText) => new Reply(status, data);

/** A page's UTF-8 bytes in chunks lent by db/chunk-pool.ts: each is given back once written. */
interface LentText {
  readonly chunks: readonly Buffer[];
  giveBack(chunk: Buffer): void;
}

/** A page of a streamed list: comma-separated JSON values, as text or UTF-8 bytes, whole or in lent chunks (see db/keyset.ts). */
type Page = string | Buffer | LentText;

/** A list streamed as `data.<key>`: pages of comma-separated JSON values (see db/keyset.ts). */
export class JsonList {
  constructor(
    readonly key: string,
    readonly pages: AsyncIterable<Page>,
  ) {}
}

export const jsonList = (key: string, pages: AsyncIterable<Page>) => new JsonList(key, pages);

/** `data` already serialised, e.g. kept from an earlier answer: sent as it is inside the envelope. */
export class JsonText {
  constructor(readonly text: string) {}
}

export const jsonText = (text: string) => new JsonText(text);

/** A file as the answer (a PDF, an image), outside the envelope; `fileName` makes it a download. */
export class FileReply {
  constructor(
    readonly type: string,
    readonly bytes: Buffer,
    readonly fileName?: string,
    readonly inline = true,
  ) {}
}

export const fileReply = (type: string, bytes: Buffer, fileName?: string) => new FileReply(type, bytes, fileName);

/**
 * Sends a list: the envelope around its pages, compressed as it streams when the client accepts it. The next page
 * is asked for as soon as the current one is in hand, so its query runs while the current one is written; at most
 * the page being written and the next are held. Written here, not handed to koa as a stream to pipe: a page's chunks
 * are lent, and a write's callback is the one sign that their bytes have left (into the socket, or into the
 * compressor) and the chunk may be given back. A failure after the first byte cuts the answer short (the client
 * sees a broken response, never a well-formed partial list) and is reported as koa reports a failing stream.
 */
async function sendList(ctx: Context, key: string, first: IteratorResult<Page>, rest: AsyncIterator<Page>): Promise<void> {
  const res = ctx.res;
  const out = listOutput(ctx);
  ctx.respond = false; // koa leaves the response to this function
  const write = async (text: string) => {
    if (!out.write(text)) await drained(out, res);
  };
  try {
    if (ctx.method === 'HEAD') return void res.end();
    await write(`{"version":"v1","data":{${JSON.stringify(key)}:[`);
    for (let current = first; !current.done && !res.destroyed; ) {
      const next = rest.next();
      next.catch(() => {}); // handled where it is awaited; not an unhandled rejection while this page is written
      const page = current.value;
      if (typeof page === 'string' || Buffer.isBuffer(page)) {
        if (!out.write(page)) await drained(out, res);
      } else {
        // One writev for the page's chunks; each given back once written, and never after a failed write.
        out.cork();
        for (const chunk of page.chunks) out.write(chunk, (err) => err || page.giveBack(chunk));
        out.uncork();
        if (out.writableNeedDrain) await drained(out, res);
      }
      current = await next;
      if (!current.done) await write(',');
    }
    if (!res.destroyed) out.end(']}}');
  } catch (err) {
    res.destroy();
    ctx.app.emit('error', err, ctx);
  } finally {
    await rest.return?.();
  }
}

/** Resolves once `out` can take more, or once the answer is over (the client went away, or it failed). */
function drained(out: Writable, res: Writable): Promise<void> {
  return new Promise((resolve) => {
    if (res.destroyed) return resolve();
    const done = () => {
      out.off('drain', done);
      res.off('close', done);
      resolve();
    };
    out.on('drain', done);
    res.on('close', done);
  });
}

type Handler<B extends z.ZodType, Q extends z.ZodType> = (input: HandlerInput<B, Q>) => Promise<Record<string, unknown> | Reply | JsonList | JsonText | FileReply>;

const empty = z.object({});

/**
 * The versioned JSON API: one definition per endpoint drives routing, authentication,
 * validation, the response envelope and the OpenAPI document.
 */
export interface ApiOptions {
  /**
   * Tests only: every success answer is checked against the route's response schema (strictly:
   * undeclared keys count) and its documented statuses. A mismatch is passed here and, for a
   * single record, answered 500; a streamed list is cut short at the page that failed.
   */
  checkResponses?: (problem: string) => void;
}

type Answer = (ctx: Context, params: Record<string, string>) => unknown;

/** One path of the route table, as declared (`/products/{id}`), with the methods that answer it. */
interface PathEntry {
  template: string;
  /** A character per segment, 0 literal and 1 parameter: sorted, `/products/import` comes before `/products/{id}`. */
  rank: string;
  /** Upper-case method → its answer, in the order they were declared. */
  methods: Map<string, Answer>;
}

/** An area's paths, and the router built from them at its first request (again after a path is added). */
interface Area {
  paths: PathEntry[];
  dispatch?: Middleware;
}

export class Api {
  readonly routes: RouteDef<z.ZodType, z.ZodType>[] = [];
  /** Each RouteDef's `tag` (an area of the API) → its description, for the OpenAPI document's top-level tags. */
  readonly tags = new Map<string, string>();
  /**
   * One @koa/router per area, the path's first segment (`/quotes/…` → `quotes`): the router tests every route of
   * its stack on every request, so a request meets its area's few routes only.
   */
  private readonly areas = new Map<string, Area>();

  constructor(
    private readonly authenticate: (ctx: Context, kind: AuthKind) => Promise<Principal>,
    private readonly options: ApiOptions = {},
  ) {}

  /** Describes a tag the area's routes carry; the OpenAPI document lists the tags in the order they are described. */
  tag(name: string, description: string): void {
    if (this.tags.has(name)) throw new Error(`Tag ${name} is described twice`);
    this.tags.set(name, description);
  }

  /**
   * Answers `method path` (under /api/v1) with `answer`, outside the route table (so without a RouteDef's
   * authentication, validation, envelope or OpenAPI entry): the OpenAPI document itself.
   */
  raw(method: Method | 'options', path: string, answer: Answer): void {
    const name = areaOf(path) ?? '';
    let area = this.areas.get(name);
    if (!area) this.areas.set(name, (area = { paths: [] }));
    let entry = area.paths.find((p) => p.template === path);
    if (!entry) {
      const rank = path.split('/').slice(1).map((segment) => (/^\{\w+\}$/.test(segment) ? '1' : '0')).join('');
      entry = { template: path, rank, methods: new Map() };
      area.paths.push(entry);
      area.paths.sort((a, b) => (a.rank < b.rank ? -1 : a.rank > b.rank ? 1 : 0)); // stable: declaration order among equals
    }
    const upper = method.toUpperCase();
    if (entry.methods.has(upper)) throw new Error(`${upper} ${path} is declared twice`);
    entry.methods.set(upper, answer);
    area.dispatch = undefined;
  }

  /**
   * Dispatches a request under /api/v1 to its area's router: the path's endpoint for the method, or 405 with the
   * path's methods in Allow. A path no route has goes on down the stack (404).
   */
  middleware(): Middleware {
    return (ctx, next) => {
      const name = API_AREA.exec(ctx.path)?.[1].toLowerCase();
      const area = name === undefined ? undefined : this.areas.get(name);
      if (!area) return next();
      return (area.dispatch ??= areaRouter(area.paths))(ctx, next);
    };
  }

  route<B extends z.ZodType = typeof empty, Q extends z.ZodType = typeof empty>(def: RouteDef<B, Q>, handler: Handler<B, Q>): void {
    this.routes.push(def as unknown as RouteDef<z.ZodType, z.ZodType>);
    const methods = Array.isArray(def.method) ? def.method : [def.method];
    if (def.cors) {
      const allowed = [...methods.map((m) => m.toUpperCase()), 'OPTIONS'].join(', ');
      this.raw('options', def.path, (ctx: Context) => {
        ctx.set('Access-Control-Allow-Origin', '*');
        ctx.set('Access-Control-Allow-Methods', allowed);
        ctx.set('Access-Control-Allow-Headers', 'Authorization, Content-Type');
        ctx.set('Access-Control-Max-Age', '86400');
        ctx.status = 204;
      });
    }
    for (const method of methods) {
      this.raw(method, def.path, async (ctx: Context, rawParams) => {
        if (def.cors) ctx.set('Access-Control-Allow-Origin', '*');
        const auth = await this.authenticate(ctx, def.auth);
        const params = parseIds(rawParams);
        const body = def.body ? parseInput(def.body, ctx.request.body ?? {}) : {};
        const query = def.query ? parseInput(def.query, ctx.query) : {};
        const result = await handler({ ctx, body, query, params, auth } as HandlerInput<B, Q>);
        if (result instanceof FileReply) {
          ctx.status = def.status ?? 200;
          ctx.set('Content-Type', result.type);
          ctx.set('Cache-Control', 'private, no-store');
          ctx.set('X-Content-Type-Options', 'nosniff');
          if (result.fileName) ctx.set('Content-Disposition', `${result.inline ? 'inline' : 'attachment'}; filename="${result.fileName.replace(/[^\w.-]/g, '_')}"`);
          ctx.body = result.bytes;
          return;
        }
        const check = this.options.checkResponses && contractCheck(this.options.checkResponses, def, `${method.toUpperCase()} ${def.path}`);
        if (result instanceof JsonList) {
          // The first page is read before anything is sent, so a failure there is still a JSON error answer.
          const pages = check ? check.pages(result)[Symbol.asyncIterator]() : result.pages[Symbol.asyncIterator]();
          const first = await pages.next();
          ctx.status = def.status ?? 200;
          ctx.type = 'application/json';
          await sendList(ctx, result.key, first, pages);
          return;
        }
        const { status, data } = result instanceof Reply ? result : { status: def.status ?? 200, data: result };
        ctx.status = status;
        // Serialised here, once: with an object body, koa-compress measures it (JSON.stringify) and koa
        // serialises it again to send it. The header set directly skips koa's MIME lookup.
        ctx.set('Content-Type', 'application/json; charset=utf-8');
        if (data instanceof JsonText) {
          check?.data(status, JSON.parse(data.text));
          ctx.body = `{"version":"v1","data":${data.text}}`;
        } else {
          check?.data(status, data);
          ctx.body = JSON.stringify({ version: 'v1', data });
        }
      });
    }
  }
}

/** Under /api/v1, the first segment (the area), as the routers match it (case-insensitively). */
const API_AREA = /^\/api\/v1\/([^/]+)/i;

/**
 * An area's router. Its paths go in literal segments first, each path's endpoints followed by a route taking any
 * method that answers 405 with the path's methods. The router runs the routes that fit in that order and an
 * endpoint ends the run, so the first path that fits decides whatever the method: `PUT /products/import` is 405,
 * not `/products/{id}` with the id "import". Case-insensitive paths, an optional trailing slash, HEAD answered by
 * GET and percent-decoded parameters (left as sent when malformed) are the router's defaults.
 */
function areaRouter(paths: PathEntry[]): Middleware {
  const router = new Router({ prefix: '/api/v1' });
  for (const { template, methods } of paths) {
    const path = template.replace(/\{(\w+)\}/g, ':$1');
    // The route template (the RouteDef's path) names the request in the logs and the metrics, never the raw path.
    const route = `/api/v1${template}`;
    for (const [method, answer] of methods) {
      router.register(path, [method], (ctx) => {
        ctx.state.route = route;
        return answer(ctx, ctx.params);
      });
    }
    const allow = allowedMethods(methods.keys());
    router.all(path, (ctx) => {
      ctx.state.route = route;
      throw new MethodNotAllowed(ctx.method, ctx.path, allow);
    });
  }
  return router.routes() as unknown as Middleware;
}

/** The Allow header's methods: those given, with HEAD wherever GET is (it is answered as GET). */
export function allowedMethods(methods: Iterable<string>): string[] {
  const allowed = new Set<string>();
  for (const method of methods) {
    allowed.add(method.toUpperCase());
    if (method.toUpperCase() === 'GET') allowed.add('HEAD');
  }
  return [...allowed];
}

/** `/quotes/{id}/send` → `quotes`. */
function areaOf(path: string): string | undefined {
  return /^\/([^/]+)/.exec(path)?.[1].toLowerCase();
}

/**
 * Where a streamed list is written: the response, or a gzip or br compressor into it when the client accepts one
 * (fast levels: lists are large and compressing them is CPU the event loop shares). Other answers are compressed by
 * the app's koa-compress middleware, which leaves a list alone (it sets no body).
 */
function listOutput(ctx: Context): Writable {
  ctx.vary('Accept-Encoding');
  const encoding = ctx.acceptsEncodings('br', 'gzip', 'identity');
  if (encoding !== 'br' && encoding !== 'gzip') return ctx.res;
  ctx.set('Content-Encoding', encoding);
  const compressor =
    encoding === 'br' ? zlib.createBrotliCompress({ params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 1 } }) : zlib.createGzip({ level: 1 });
  // pipeline destroys both streams if either fails or the client goes away.
  pipeline(compressor, ctx.res, () => {});
  return compressor;
}

/** The checks of `ApiOptions.checkResponses` for one request. */
function contractCheck(report: (problem: string) => void, def: RouteDef<z.ZodType, z.ZodType>, route: string) {
  const fail = (problem: string): never => {
    const message = `${route}: the answer does not match its documented response: ${problem}`;
    report(message);
    throw new Error(message);
  };
  return {
    data(status: number, data: unknown): void {
      const documented = [def.status ?? 200, ...(def.alsoOk ? [200] : [])];
      if (!documented.includes(status)) fail(`status ${status} is not documented (${documented.join(', ')})`);
      const problem = responseProblems(def.response, data);
      if (problem) fail(problem);
    },
    async *pages(list: JsonList): AsyncGenerator<Page> {
      for await (const page of list.pages) {
        const text = typeof page === 'string' || Buffer.isBuffer(page) ? page : Buffer.concat(page.chunks); // a character may span two chunks
        const problem = responseProblems(def.response, { [list.key]: JSON.parse(`[${text}]`) });
        if (problem) fail(problem);
        yield page;
      }
    },
  };
}

function parseIds(params: Record<string, string>): Record<string, number> {
  const ids: Record<string, number> = {};
  for (const [name, value] of Object.entries(params)) {
    if (!/^[1-9]\d{0,9}$/.test(value) || Number(value) > 2147483647) throw new BadRequest(`Invalid ${name}: expected a positive integer id.`);
    ids[name] = Number(value);
  }
  return ids;
}
