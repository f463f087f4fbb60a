import test from 'ava';
import { Validator } from '@seriousme/openapi-schema-validator';
import { useApp } from '../helpers/fixture.js';
import { buildApi } from '../../src/server/app.js';

const { app } = useApp(test);

test('GET /api/v1/openapi.json is a valid OpenAPI 3.1 document, served without auth', async (t) => {
  const res = await app.client().get('/api/v1/openapi.json');
  t.is(res.status, 200);
  t.is(res.body.openapi, '3.1.0');
  const validator = new Validator();
  const result = await validator.validate(res.body);
  t.true(result.valid, JSON.stringify(result.errors, null, 2));
  t.is(validator.version, '3.1');
});

test('every registered endpoint and method appears in the document', async (t) => {
  const doc = (await app.client().get('/api/v1/openapi.json')).body;
  const api = buildApi({ db: app.db, config: app.config, mailer: null, sessionCache: null });
  t.true(api.routes.length > 10);
  for (const route of api.routes) {
    for (const method of Array.isArray(route.method) ? route.method : [route.method]) {
      const operation = doc.paths[`/api/v1${route.path}`]?.[method];
      t.truthy(operation, `${method.toUpperCase()} /api/v1${route.path} is documented`);
      if (route.body) t.truthy(operation.requestBody.content['application/json'].schema, `${route.path} documents its body`);
    }
  }
  t.truthy(doc.paths['/healthz'].get);
});

test('request schemas come from the validating zod schemas', async (t) => {
  const doc = (await app.client().get('/api/v1/openapi.json')).body;
  const signup = doc.paths['/api/v1/auth/signup'].post.requestBody.content['application/json'].schema;
  t.deepEqual([...signup.required].sort(), ['email', 'name', 'password']);
  t.is(signup.properties.password.minLength, 10);
  t.truthy(doc.paths['/api/v1/auth/signup'].post.responses['201']);
  t.truthy(doc.paths['/api/v1/auth/signup'].post.responses['422']);
  t.deepEqual(doc.paths['/api/v1/workspace/keys/rotate'].post.security, [{ session: [] }]);
  t.truthy(doc.paths['/api/v1/workspace/keys/rotate'].post.responses['403']);
});

type Schema = Record<string, any>;
const operationsOf = (doc: Schema) =>
  Object.entries(doc.paths as Record<string, Record<string, Schema>>).flatMap(([path, item]) => Object.entries(item).map(([method, op]) => ({ path, method, op })));

/** Inline object schemas that carry an `id`: resources that should be a named component instead. */
function inlineResources(schema: unknown, at: string): string[] {
  if (Array.isArray(schema)) return schema.flatMap((s, i) => inlineResources(s, `${at}[${i}]`));
  if (schema === null || typeof schema !== 'object') return [];
  const s = schema as Schema;
  const here = s.type === 'object' && s.properties?.id ? [at] : [];
  return [...here, ...Object.entries(s).flatMap(([key, value]) => inlineResources(value, `${at}.${key}`))];
}

test('every route documents its success answer, with every resource in it a named component schema', async (t) => {
  const doc = (await app.client().get('/api/v1/openapi.json')).body;
  const components = doc.components.schemas;
  for (const name of ['Quote', 'QuoteLine', 'Activity', 'Order', 'OrderItem', 'Customer', 'Product', 'Variant', 'Channel', 'ChannelMember', 'Subscription', 'Delivery', 'Workspace', 'User', 'Keys', 'Invite', 'WorkspaceProfile']) {
    t.is(components[name]?.type, 'object', `${name} is a component schema`);
  }
  const operations = operationsOf(doc).filter(({ path }) => path.startsWith('/api/v1/') && path !== '/api/v1/openapi.json');
  t.true(operations.length > 50);
  for (const { path, method, op } of operations) {
    const where = `${method.toUpperCase()} ${path}`;
    const successes = Object.keys(op.responses).filter((code) => code.startsWith('2'));
    t.true(successes.length > 0, `${where} documents a success`);
    for (const code of successes) {
      if (code === '204') {
        t.falsy(op.responses[code].content, `${where} 204 has no body`);
        continue;
      }
      const content = op.responses[code].content;
      if (!content['application/json']) {
        // A file answer (a quote's PDF, the logo): binary in each media type it declares.
        for (const [type, media] of Object.entries(content) as [string, { schema: { format: string } }][]) {
          t.regex(type, /^(application\/pdf|image\/(png|jpeg))$/, `${where} ${code} is a file`);
          t.is(media.schema.format, 'binary', `${where} ${code} ${type} is binary`);
        }
        continue;
      }
      const envelope = content['application/json'].schema;
      t.deepEqual(envelope.required, ['version', 'data'], `${where} ${code} is the envelope`);
      const data = envelope.properties.data;
      t.is(data.type, 'object', `${where} ${code}: data is an object`);
      t.is(data.additionalProperties, false, `${where} ${code}: data declares every key`);
      t.deepEqual(inlineResources(data, 'data'), [], `${where} ${code}: resources are $ref to named schemas`);
    }
  }
  // Every $ref resolves.
  const refs = JSON.stringify(doc).match(/"\$ref":"[^"]+"/g) ?? [];
  for (const ref of new Set(refs)) {
    const name = /#\/components\/schemas\/(\w+)"$/.exec(ref)?.[1];
    t.truthy(name && components[name], `${ref} resolves`);
  }
  t.deepEqual(doc.paths['/api/v1/quotes/{id}'].get.responses['200'].content['application/json'].schema.properties.data.properties.quote, { $ref: '#/components/schemas/Quote' });
  t.deepEqual(doc.paths['/api/v1/products'].get.responses['200'].content['application/json'].schema.properties.data.properties.products.items, { $ref: '#/components/schemas/Product' });
  t.deepEqual(components.Product.properties.variants.items, { $ref: '#/components/schemas/Variant' });
});

test('upserts document their 200 beside the 201, with the same schema', async (t) => {
  const doc = (await app.client().get('/api/v1/openapi.json')).body;
  for (const path of ['/api/v1/customers', '/api/v1/quotes/{id}/convert', '/api/v1/quotes/external', '/api/v1/orders/external']) {
    const { responses } = doc.paths[path].post;
    t.truthy(responses['201'], `${path} 201`);
    t.truthy(responses['200'], `${path} 200`);
    t.notDeepEqual(responses['200'].description, responses['201'].description);
    t.deepEqual(responses['200'].content, responses['201'].content, `${path}: one schema for both`);
  }
  t.falsy(doc.paths['/api/v1/quotes'].post.responses['200'], 'a plain create has no 200');
});

test('enum filters are enums, path ids integers, and action endpoints need no body', async (t) => {
  const doc = (await app.client().get('/api/v1/openapi.json')).body;
  const param = (path: string, name: string) => doc.paths[path].get.parameters.find((p: Schema) => p.name === name)?.schema;
  const { quoteStatuses } = await import('../../src/quotes/schema.js');
  const { orderStatuses } = await import('../../src/orders/schema.js');
  const { productTypes, productStatuses } = await import('../../src/products/schema.js');
  const { channelTypes, channelOwnerships, channelStatuses } = await import('../../src/channels/schema.js');
  const enums: [string, string, readonly string[]][] = [
    ['/api/v1/quotes', 'status', quoteStatuses],
    ['/api/v1/orders', 'status', orderStatuses],
    ['/api/v1/products', 'type', productTypes],
    ['/api/v1/products', 'status', productStatuses],
    ['/api/v1/channels', 'type', channelTypes],
    ['/api/v1/channels', 'ownership', channelOwnerships],
    ['/api/v1/channels', 'status', channelStatuses],
  ];
  for (const [path, name, values] of enums) t.like(param(path, name), { type: 'string', enum: [...values] }, `${path} ?${name}`);
  for (const path of ['/api/v1/quotes', '/api/v1/orders']) {
    for (const name of ['channel_id', 'customer_id']) t.like(param(path, name), { type: 'integer', minimum: 1 }, `${path} ?${name}`);
  }
  for (const { path, method, op } of operationsOf(doc)) {
    for (const p of op.parameters ?? []) if (p.in === 'path') t.deepEqual(p.schema, { type: 'integer', minimum: 1 }, `${method} ${path} {${p.name}}`);
  }
  const actions = ['/quotes/{id}/send', '/quotes/{id}/accept', '/quotes/{id}/decline', '/quotes/{id}/cancel', '/quotes/{id}/mark-paid', '/quotes/{id}/convert', '/webhooks/{id}/rotate-secret', '/webhooks/deliveries/{id}/resend'];
  for (const path of actions) {
    const body = doc.paths[`/api/v1${path}`].post.requestBody;
    t.true(body === undefined || body.required === false, `${path} needs no body`);
  }
  t.true(doc.paths['/api/v1/customers'].post.requestBody.required, 'a body with required fields is required');
});
