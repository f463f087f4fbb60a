import test from 'ava';
import { Validator } from '@seriousme/openapi-schema-validator';
import { startApp, type TestApp } from './helpers/app.js';
import { buildApi } from '../src/http/app.js';

let app: TestApp;
test.before(async () => {
  app = await startApp();
});
test.after.always(() => app?.close());

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
