import test from 'ava';
import type { z } from 'zod';
import { uniqueEmail } from '../helpers/app.js';
import { useOwnerApp } from '../helpers/fixture.js';
import { buildApi } from '../../src/server/app.js';

// The API document states every answer and limit the validators give: each 422, each length, range and count bound,
// who may call an operation without credentials, and the area each operation belongs to.

const { app, owner } = useOwnerApp(test);

type Schema = Record<string, any>;
let doc: Schema;
let customerId: number;
test.before(async () => {
  doc = (await app.client().get('/api/v1/openapi.json')).body;
  const res = await owner.client.post('/api/v1/customers', { email: uniqueEmail('limits') });
  if (res.status >= 300) throw new Error(`setup: ${res.status} ${res.text}`);
  customerId = res.body.data.customer.id;
});

const operationsOf = (d: Schema) =>
  Object.entries(d.paths as Record<string, Record<string, Schema>>).flatMap(([path, item]) => Object.entries(item).map(([method, op]) => ({ path, method, op })));

/** The requests of the issue that answered 422 without the document saying so. */
const refused = [
  { path: '/api/v1/products', query: 'type=boat', named: 'type' },
  { path: '/api/v1/products', query: 'status=gone', named: 'status' },
  { path: '/api/v1/quotes', query: 'status=gone', named: 'status' },
  { path: '/api/v1/orders', query: 'status=gone', named: 'status' },
  { path: '/api/v1/customers/{id}/events', query: 'limit=201', named: 'limit' },
  { path: '/api/v1/public/recommendations', query: 'limit=51', named: 'limit' },
];

for (const { path, query, named } of refused) {
  test(`GET ${path}?${query} answers 422 naming ${named}, and the document says so`, async (t) => {
    const url = `${path.replace('{id}', String(customerId))}?${query}`;
    const res = path.startsWith('/api/v1/public/')
      ? await app.client().get(url, { headers: { authorization: `Public ${owner.keys.public_key}` } })
      : await owner.client.get(url);
    t.is(res.status, 422, res.text);
    t.true(res.body.error.startsWith(`${named}: `), res.body.error);
    const documented = doc.paths[path].get.responses['422'];
    t.truthy(documented, `${path} documents its 422`);
    t.is(documented.content['application/json'].schema.$ref, '#/components/schemas/Error');
  });
}

test('every operation that validates a body or a query documents its 422', async (t) => {
  const api = buildApi({ db: app.db, config: app.config, mailer: null, sessionCache: null });
  let validated = 0;
  for (const route of api.routes) {
    if (!route.body && !route.query) continue;
    for (const method of [route.method].flat()) {
      validated++;
      t.truthy(doc.paths[`/api/v1${route.path}`][method].responses['422'], `${method.toUpperCase()} ${route.path}`);
    }
  }
  t.true(validated > 40);
});

test('the limits from the issue are stated: brand, description, limit', async (t) => {
  const body = (path: string, method: string) => doc.paths[path][method].requestBody.content['application/json'].schema;
  for (const method of ['post', 'patch', 'put']) {
    const product = body(method === 'post' ? '/api/v1/products' : '/api/v1/products/{id}', method);
    t.is(product.properties.brand.maxLength, 200, `${method} brand`);
    t.is(product.properties.category.maxLength, 200, `${method} category`);
    t.is(product.properties.description.maxLength, 10000, `${method} description`);
    t.deepEqual(product.properties.brand.type, ['string', 'null'], 'still optional and nullable');
  }
  t.is(body('/api/v1/products', 'post').properties.variants.maxItems, 1000);
  t.is(body('/api/v1/webhooks', 'post').properties.description.maxLength, 1000);
  t.is(body('/api/v1/customers', 'post').properties.notes.maxLength, 10000);
  const param = (path: string, name: string) => doc.paths[path].get.parameters.find((p: Schema) => p.name === name).schema;
  t.like(param('/api/v1/customers/{id}/events', 'limit'), { minimum: 1, maximum: 200 });
  t.like(param('/api/v1/public/recommendations', 'limit'), { minimum: 1, maximum: 50 });
  t.is(typeof param('/api/v1/public/recommendations', 'sku').maxLength, 'number');
  // Decimals state their range and digits; an id its largest value.
  const line = body('/api/v1/quotes/{id}/lines', 'post').properties;
  t.like(line.price, { minimum: 0, exclusiveMaximum: 1e12 });
  t.regex('12.50', new RegExp(line.price.pattern));
  t.notRegex('12.505', new RegExp(line.price.pattern));
  t.like(line.quantity, { exclusiveMinimum: 0 });
  t.is(body('/api/v1/quotes', 'post').properties.customer_id.maximum, 2147483647);
});

/** A limit one zod check enforces, as the JSON Schema keyword that states it. */
type Limit = [keyword: string, value: number];

/** The upper bounds a zod schema checks, through its wrappers, pipes and unions (not its properties or items). */
function limitsOf(schema: z.core.$ZodType): Limit[] {
  const def = schema._zod.def as Schema;
  const limits: Limit[] = [];
  for (const check of (def.checks ?? []) as z.core.$ZodCheck[]) {
    const c = check._zod.def as Schema;
    if (c.check === 'max_length') limits.push([def.type === 'array' ? 'maxItems' : 'maxLength', c.maximum]);
    if (c.check === 'less_than') limits.push([c.inclusive ? 'maximum' : 'exclusiveMaximum', Number(c.value)]);
  }
  if (def.innerType) limits.push(...limitsOf(def.innerType));
  if (def.type === 'pipe') limits.push(...limitsOf(def.in), ...limitsOf(def.out));
  if (def.type === 'union') for (const option of def.options) limits.push(...limitsOf(option));
  return limits;
}

/** The object or array a zod schema validates, through its wrappers and pipes. */
function inner(schema: z.core.$ZodType, type: 'object' | 'array'): Schema | undefined {
  const def = schema._zod.def as Schema;
  if (def.type === type) return def;
  if (def.innerType) return inner(def.innerType, type);
  if (def.type === 'pipe') return inner(def.out, type) ?? inner(def.in, type);
  return undefined;
}

/** How many limits `unstated` has compared. */
let compared = 0;

/** Walks a zod input schema beside its document schema; lists each limit the document does not state. */
function unstated(schema: z.core.$ZodType, json: Schema | undefined, at: string): string[] {
  const resolve = (s: Schema | undefined): Schema | undefined => (s?.$ref ? doc.components.schemas[s.$ref.split('/').pop()] : s);
  const node = resolve(json);
  const branches = [node, ...((node?.anyOf ?? []) as Schema[]).map(resolve)].filter(Boolean) as Schema[];
  const limits = limitsOf(schema);
  compared += limits.length;
  const missing = limits
    .filter(([keyword, value]) => !branches.some((b) => b[keyword] === value))
    .map(([keyword, value]) => `${at}: ${keyword} ${value} (${JSON.stringify(node)})`);
  const object = inner(schema, 'object');
  if (object) {
    const properties = branches.find((b) => b.properties)?.properties ?? {};
    for (const [name, child] of Object.entries(object.shape as Record<string, z.core.$ZodType>)) missing.push(...unstated(child, properties[name], `${at}.${name}`));
  }
  const array = inner(schema, 'array');
  if (array) missing.push(...unstated(array.element, branches.find((b) => b.items)?.items, `${at}[]`));
  return missing;
}

test('every length, range and count limit the validators check is stated in the document', async (t) => {
  const api = buildApi({ db: app.db, config: app.config, mailer: null, sessionCache: null });
  const missing: string[] = [];
  for (const route of api.routes) {
    for (const method of [route.method].flat()) {
      const op = doc.paths[`/api/v1${route.path}`][method];
      const where = `${method.toUpperCase()} ${route.path}`;
      if (route.body) missing.push(...unstated(route.body, op.requestBody.content['application/json'].schema, `${where} body`));
      const query = route.query && inner(route.query, 'object');
      for (const [name, child] of Object.entries((query?.shape ?? {}) as Record<string, z.core.$ZodType>)) {
        missing.push(...unstated(child, op.parameters.find((p: Schema) => p.in === 'query' && p.name === name)?.schema, `${where} ?${name}`));
      }
    }
  }
  t.deepEqual(missing, []);
  t.true(compared > 100, `the walk finds the limits at all (${compared})`);
  const product = api.routes.find((r) => r.path === '/products' && r.method === 'post')!;
  t.true(unstated(product.body!, {}, 'body').some((m) => m.startsWith('body.brand: maxLength 200 ')), 'and it reports a limit left out');
});

test('public operations declare security: [], and every other one its schemes', async (t) => {
  t.deepEqual(doc.paths['/healthz'].get.security, []);
  t.deepEqual(doc.paths['/api/v1/openapi.json'].get.security, []);
  for (const path of ['/api/v1/auth/signup', '/api/v1/auth/login', '/api/v1/invites/accept', '/api/v1/auth/password-reset', '/api/v1/payments/stripe/webhook']) {
    t.deepEqual(doc.paths[path].post.security, [], path);
  }
  t.is(doc.security, undefined, 'no default: each operation states its own');
  const schemes = Object.keys(doc.components.securitySchemes);
  for (const { path, method, op } of operationsOf(doc)) {
    t.true(Array.isArray(op.security), `${method} ${path} declares its security`);
    for (const requirement of op.security) for (const name of Object.keys(requirement)) t.true(schemes.includes(name), `${method} ${path}: ${name}`);
  }
  t.deepEqual(doc.paths['/api/v1/products'].get.security, [{ session: [] }]);
});

test('operations carry their area as a tag, and the top-level tags list each with a description', async (t) => {
  const tags = doc.tags as { name: string; description: string }[];
  const names = tags.map((tag) => tag.name);
  t.deepEqual(names, [...new Set(names)], 'each tag once');
  for (const tag of tags) t.true(tag.description.length > 10, `${tag.name} is described`);
  const used = new Set<string>();
  for (const { path, method, op } of operationsOf(doc)) {
    t.is(op.tags.length, 1, `${method} ${path}`);
    t.true(names.includes(op.tags[0]), `${method} ${path}: ${op.tags[0]} is listed`);
    used.add(op.tags[0]);
  }
  t.deepEqual([...used].sort(), [...names].sort(), 'every listed tag is used');
  for (const area of ['Auth', 'Workspace', 'Ops', 'Customers', 'Products', 'Channels', 'Quotes', 'Orders', 'Imports', 'Webhooks', 'Payments', 'Tracking']) t.true(names.includes(area), area);
  t.deepEqual(doc.paths['/api/v1/products'].get.tags, ['Products']);
  t.deepEqual(doc.paths['/healthz'].get.tags, ['Ops']);
});
