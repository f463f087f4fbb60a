import { z } from 'zod';
import type { RouteDef } from './api.js';
import type { AuthKind } from './principal.js';

type JsonSchema = Record<string, unknown>;

/**
 * Named schemas (zod `.meta({ id })`, e.g. Quote) become `components.schemas` entries referenced by
 * `$ref`, so generated clients get named types; everything else is inlined.
 */
class Components {
  readonly schemas: Record<string, JsonSchema> = {};

  toSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
    const { $schema: _omit, $defs, ...json } = toJsonSchema(schema, io);
    for (const [id, def] of Object.entries(($defs ?? {}) as Record<string, JsonSchema>)) {
      const named = componentRefs(def) as JsonSchema;
      const known = this.schemas[id];
      if (known && JSON.stringify(known) !== JSON.stringify(named)) throw new Error(`Two different schemas are named ${id}.`);
      this.schemas[id] = named;
    }
    return componentRefs(json) as JsonSchema;
  }
}

function toJsonSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  return z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12', override: io === 'input' ? statePipeLimits : undefined }) as JsonSchema;
}

/** The limit keywords a pipe's validating end may carry, and the JSON type each one bounds. */
const LIMITS: Record<string, string> = {
  maxLength: 'string',
  maxItems: 'array',
  maximum: 'number',
  exclusiveMaximum: 'number',
  minimum: 'number',
  exclusiveMinimum: 'number',
};

/**
 * zod documents a pipe's input by its first end: `optionalText(500)` (a string or null, trimmed, then checked
 * as a string of at most 500) would say "string or null" and lose its limit. The limits the pipe's other end
 * enforces are stated here too, so every limit the validators apply is in the document. Only bounds are
 * carried over: a pattern or a minimum length may hold only after the transform (an upper-cased country code,
 * '' read as null). A length bound may be a few characters stricter than the input it states (it is checked
 * after trimming).
 */
function statePipeLimits({ zodSchema, jsonSchema }: { zodSchema: z.core.$ZodType; jsonSchema: JsonSchema }): void {
  const def = zodSchema._zod.def as z.core.$ZodPipeDef;
  if (def.type !== 'pipe' || def.in._zod.traits.has('$ZodTransform') || jsonSchema.$ref) return;
  const types = typeof jsonSchema.type === 'string' ? [jsonSchema.type] : Array.isArray(jsonSchema.type) ? (jsonSchema.type as string[]) : undefined;
  const limits = limitsOf(toJsonSchema(def.out as z.ZodType, 'input'));
  for (const [keyword, value] of Object.entries(limits)) {
    const bounds = LIMITS[keyword];
    const applies = !types || types.includes(bounds) || (bounds === 'number' && types.includes('integer'));
    if (applies && !(keyword in jsonSchema)) jsonSchema[keyword] = value;
  }
}

/** The limit keywords of a schema, or of its branches (`anyOf`: a string of at most 100, or null). */
function limitsOf(schema: JsonSchema): JsonSchema {
  const found: JsonSchema = {};
  for (const branch of [schema, ...((schema.anyOf ?? []) as JsonSchema[])]) {
    for (const keyword of Object.keys(LIMITS)) if (keyword in branch && !(keyword in found)) found[keyword] = branch[keyword];
  }
  return found;
}

/** `#/$defs/X` (one zod conversion's local definitions) → `#/components/schemas/X`. */
function componentRefs(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(componentRefs);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, v]) => [key, key === '$ref' && typeof v === 'string' ? v.replace(/^#\/\$defs\//, '#/components/schemas/') : componentRefs(v)]),
  );
}

const security: Record<AuthKind, Record<string, string[]>[]> = {
  none: [],
  'session:any': [{ session: [] }],
  'session:user': [{ session: [] }],
  session: [{ session: [] }],
  'session:owner': [{ session: [] }],
  public: [{ publicKey: [] }],
  'public|query': [{ publicKey: [] }, { publicKeyQuery: [] }],
  secret: [{ secretKey: [] }],
  key: [{ publicKey: [] }, { secretKey: [] }],
  migrate: [{ migrateToken: [] }, { migrateTokenQuery: [] }],
  admin: [{ adminKey: [] }, { adminKeyQuery: [] }],
};

const authErrors: Record<AuthKind, Record<number, string>> = {
  none: {},
  'session:any': { 401: 'No valid session' },
  'session:user': { 401: 'No valid session', 402: 'Workspace locked' },
  session: { 401: 'No valid session', 402: 'Workspace locked', 409: 'No workspace yet' },
  'session:owner': { 401: 'No valid session', 402: 'Workspace locked', 403: 'Owner only', 409: 'No workspace yet' },
  public: { 401: 'Missing or invalid public key', 402: 'Workspace locked' },
  'public|query': { 401: 'Missing or invalid public key', 402: 'Workspace locked' },
  secret: { 401: 'Missing or invalid secret key', 402: 'Workspace locked' },
  key: { 401: 'Missing or invalid key, or the prefixes mixed up', 402: 'Workspace locked' },
  migrate: { 401: 'Wrong migrate token', 403: 'MIGRATE_TOKEN unset: endpoint disabled' },
  admin: { 401: 'Wrong admin key', 403: 'ADMIN_API_KEY unset: endpoint disabled' },
};

/** What the 422 of an operation covers: its body's fields, its query's parameters, or both. */
function invalidInput(route: RouteDef<z.ZodType, z.ZodType>): string {
  const what = [route.body && 'a body field', route.query && 'a query parameter'].filter(Boolean).join(' or ');
  return `Validation failed: ${what} is missing, of the wrong type, not one of its allowed values or out of its limits; the message names it`;
}

const errorResponse = (description: string) => ({ description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } });

/** The OpenAPI 3.1 document of the JSON API, built from the same route definitions and zod schemas that serve it. */
export function buildOpenApi(routes: RouteDef<z.ZodType, z.ZodType>[], serverUrl: string, tags: ReadonlyMap<string, string>): JsonSchema {
  const components = new Components();
  for (const route of routes) if (!tags.has(route.tag)) throw new Error(`${route.path}: tag ${route.tag} has no description (api.tag)`);
  const paths: Record<string, Record<string, unknown>> = {
    '/healthz': {
      get: {
        summary: 'Health check for load balancers: 200 when the database answers, 503 otherwise',
        tags: ['Ops'],
        operationId: 'healthz',
        security: [],
        responses: {
          200: { description: 'Healthy', content: { 'application/json': { schema: { type: 'object', properties: { status: { const: 'ok' } }, required: ['status'] } } } },
          503: errorResponse('Database unavailable'),
        },
      },
    },
    '/api/v1/openapi.json': {
      get: { summary: 'This document', tags: ['Ops'], operationId: 'openapi', security: [], responses: { 200: { description: 'OpenAPI 3.1 document', content: { 'application/json': { schema: { type: 'object' } } } } } },
    },
  };
  for (const route of routes) {
    const path = `/api/v1${route.path}`;
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const pathParams = [...route.path.matchAll(/\{(\w+)\}/g)].map(([, name]) => ({
      name,
      in: 'path',
      required: true,
      schema: { type: 'integer', minimum: 1 },
    }));
    const queryParams = route.query ? queryParameters(components.toSchema(route.query, 'input')) : [];
    const status = route.status ?? 200;
    const success = {
      'application/json': {
        schema: {
          type: 'object',
          properties: { version: { const: 'v1' }, data: components.toSchema(route.response, 'output') },
          required: ['version', 'data'],
        },
      },
    };
    for (const method of methods) {
      const operation: Record<string, unknown> = {
        summary: route.summary,
        ...(route.description ? { description: route.description } : {}),
        tags: [route.tag],
        operationId: `${method}${route.path.replace(/\{(\w+)\}/g, 'By_$1').replace(/[^a-zA-Z0-9]+(.)?/g, (_, c: string | undefined) => (c ? c.toUpperCase() : ''))}`,
        security: security[route.auth],
        parameters: [...pathParams, ...queryParams],
        responses: {
          [status]:
            status === 204
              ? { description: 'Done; no body' }
              : {
                  description: status === 201 ? 'Created' : 'Success',
                  content: route.produces ? Object.fromEntries(route.produces.map((type) => [type, { schema: { type: 'string', format: 'binary' } }])) : success,
                },
          ...(route.alsoOk ? { 200: { description: route.alsoOk, content: success } } : {}),
          ...(pathParams.length ? { 400: errorResponse('Malformed id'), 404: errorResponse('Not found (also for a record of another workspace)') } : {}),
          // Every operation that validates a body or a query answers 422 when they fail (a bad enum filter, a limit out of range).
          ...Object.fromEntries(Object.entries({ ...authErrors[route.auth], ...(route.body || route.query ? { 422: invalidInput(route) } : {}), ...route.errors }).map(([code, text]) => [code, errorResponse(text!)])),
          500: errorResponse('Unexpected error (logged with a request id)'),
          503: errorResponse('Database unavailable, or a feature not configured'),
        },
      };
      if (route.upload && !route.body) {
        // A file alone (the workspace logo): multipart with the file in its field, or the raw file.
        operation.requestBody = {
          required: true,
          content: {
            'multipart/form-data': { schema: { type: 'object', properties: { [route.upload.field]: { type: 'string', format: 'binary' } }, required: [route.upload.field] } },
            ...Object.fromEntries((route.upload.types ?? ['text/csv']).map((type) => [type, { schema: { type: 'string', format: 'binary' } }])),
          },
        };
      }
      if (route.body) {
        const schema = components.toSchema(route.body, 'input');
        const content: Record<string, unknown> = route.upload
          ? {
              'multipart/form-data': {
                schema: { type: 'object', properties: { [route.upload.field]: { type: 'string', format: 'binary' } }, required: [route.upload.field] },
              },
              ...Object.fromEntries((route.upload.types ?? ['text/csv']).map((type) => [type, { schema: { type: 'string' } }])),
              'application/json': { schema },
            }
          : { 'application/json': { schema }, 'application/x-www-form-urlencoded': { schema } };
        operation.requestBody = {
          // A body whose fields are all optional (send's notify, rotate-secret's overlap_seconds) may be left out; an upload may not.
          required: Boolean(route.upload) || ((schema.required ?? []) as string[]).length > 0 || schema.type !== 'object',
          content,
        };
      }
      paths[path] = { ...paths[path], [method]: operation };
    }
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Quoting API',
      version: 'v1',
      description:
        'Quotes, orders, customers, products and sales channels. Success bodies are `{version: "v1", data: {...}}`; errors are `{error: "..."}` (some add `data`). ' +
        'Request bodies may be JSON or form-encoded; a malformed JSON body is read as empty. PUT and PATCH are both partial updates. ' +
        'A method that a path does not take answers 405 with the methods it takes in the `Allow` header (HEAD wherever GET is).',
    },
    servers: [{ url: serverUrl }],
    tags: [...tags].map(([name, description]) => ({ name, description })),
    paths,
    components: {
      schemas: {
        ...Object.fromEntries(Object.entries(components.schemas).sort(([a], [b]) => a.localeCompare(b))),
        Error: {
          type: 'object',
          properties: { error: { type: 'string', description: 'Human-readable; display it as it stands' }, data: { type: 'object' } },
          required: ['error'],
        },
      },
      securitySchemes: {
        session: { type: 'apiKey', in: 'cookie', name: 'quoting_session', description: 'Set by POST /api/v1/auth/login' },
        publicKey: { type: 'apiKey', in: 'header', name: 'Authorization', description: '`Authorization: Public pk_live_…`' },
        publicKeyQuery: { type: 'apiKey', in: 'query', name: 'key', description: 'The public key as `?key=` (public read endpoints and quote lookup only)' },
        secretKey: { type: 'http', scheme: 'bearer', description: '`Authorization: Bearer sk_live_…`' },
        migrateToken: { type: 'apiKey', in: 'header', name: 'X-Migrate-Token' },
        migrateTokenQuery: { type: 'apiKey', in: 'query', name: 'token' },
        adminKey: { type: 'apiKey', in: 'header', name: 'X-Admin-Key' },
        adminKeyQuery: { type: 'apiKey', in: 'query', name: 'key' },
      },
    },
  };
}

function queryParameters(schema: JsonSchema): JsonSchema[] {
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((schema.required ?? []) as string[]);
  return Object.entries(properties).map(([name, property]) => ({
    name,
    in: 'query',
    required: required.has(name),
    schema: property,
    ...(property.description ? { description: property.description } : {}),
  }));
}
