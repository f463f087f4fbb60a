import { Readable } from 'node:stream';
import Router from '@koa/router';
import type { Context } from 'koa';
import { z } from 'zod';
import { BadRequest } from '../errors.js';
import { parseInput } from './validate.js';
import type { AuthKind, Principal } from './auth.js';

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
  /** Other documented statuses, beyond the ones the auth kind implies. */
  errors?: Partial<Record<number, string>>;
  description?: string;
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
    public readonly data: Record<string, unknown>,
  ) {}
}

/** Answers with a status other than the route's default, e.g. 201 for a created record. */
export const reply = (status: number, data: Record<string, unknown>) => new Reply(status, data);

/** A list streamed as `data.<key>`: pages of comma-separated JSON values (see db/pages.ts). */
export class JsonList {
  constructor(
    readonly key: string,
    readonly pages: AsyncIterable<string>,
  ) {}
}

export const jsonList = (key: string, pages: AsyncIterable<string>) => new JsonList(key, pages);

async function* listBody(key: string, first: IteratorResult<string>, rest: AsyncIterator<string>): AsyncGenerator<string> {
  yield `{"version":"v1","data":{${JSON.stringify(key)}:[`;
  if (!first.done) {
    yield first.value;
    for (let next = await rest.next(); !next.done; next = await rest.next()) yield `,${next.value}`;
  }
  yield ']}}';
}

type Handler<B extends z.ZodType, Q extends z.ZodType> = (input: HandlerInput<B, Q>) => Promise<Record<string, unknown> | Reply | JsonList>;

const empty = z.object({});

/**
 * The versioned JSON API: one definition per endpoint drives routing, authentication,
 * validation, the response envelope and the OpenAPI document.
 */
export class Api {
  readonly router = new Router({ prefix: '/api/v1' });
  readonly routes: RouteDef<z.ZodType, z.ZodType>[] = [];

  constructor(private readonly authenticate: (ctx: Context, kind: AuthKind) => Promise<Principal>) {}

  route<B extends z.ZodType = typeof empty, Q extends z.ZodType = typeof empty>(def: RouteDef<B, Q>, handler: Handler<B, Q>): void {
    this.routes.push(def as unknown as RouteDef<z.ZodType, z.ZodType>);
    const koaPath = def.path.replace(/\{(\w+)\}/g, ':$1');
    const methods = Array.isArray(def.method) ? def.method : [def.method];
    if (def.cors) {
      const allowed = [...methods.map((m) => m.toUpperCase()), 'OPTIONS'].join(', ');
      this.router.options(koaPath, (ctx: Context) => {
        ctx.set('Access-Control-Allow-Origin', '*');
        ctx.set('Access-Control-Allow-Methods', allowed);
        ctx.set('Access-Control-Allow-Headers', 'Authorization, Content-Type');
        ctx.set('Access-Control-Max-Age', '86400');
        ctx.status = 204;
      });
    }
    for (const method of methods) {
      this.router[method](koaPath, async (ctx: Context) => {
        if (def.cors) ctx.set('Access-Control-Allow-Origin', '*');
        const auth = await this.authenticate(ctx, def.auth);
        const params = parseIds(ctx.params as Record<string, string>);
        const body = def.body ? parseInput(def.body, ctx.request.body ?? {}) : {};
        const query = def.query ? parseInput(def.query, ctx.query) : {};
        const result = await handler({ ctx, body, query, params, auth } as HandlerInput<B, Q>);
        if (result instanceof JsonList) {
          // The first page is read before anything is sent, so a failure there is still a JSON error answer.
          const pages = result.pages[Symbol.asyncIterator]();
          const first = await pages.next();
          ctx.status = def.status ?? 200;
          ctx.type = 'application/json';
          ctx.body = Readable.from(listBody(result.key, first, pages));
          return;
        }
        const { status, data } = result instanceof Reply ? result : { status: def.status ?? 200, data: result };
        ctx.status = status;
        ctx.body = { version: 'v1', data };
      });
    }
  }
}

function parseIds(params: Record<string, string>): Record<string, number> {
  const ids: Record<string, number> = {};
  for (const [name, value] of Object.entries(params)) {
    if (!/^[1-9]\d{0,9}$/.test(value) || Number(value) > 2147483647) throw new BadRequest(`Invalid ${name}: expected a positive integer id.`);
    ids[name] = Number(value);
  }
  return ids;
}
