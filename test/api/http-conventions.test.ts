import test from 'ava';
import { startApp, signUpOwner, uniqueEmail } from '../helpers/app.js';
import { useApp } from '../helpers/fixture.js';
import { openPostgres } from '../../src/db/database.js';
import { captureLogs } from '../helpers/logs.js';

const { app } = useApp(test, { env: { ADMIN_API_KEY: 'admin-secret' } });

test('success bodies are the v1 envelope; errors are flat', async (t) => {
  const owner = await signUpOwner(app);
  const ok = await owner.client.get('/api/v1/workspace');
  t.deepEqual(Object.keys(ok.body).sort(), ['data', 'version']);
  t.is(ok.body.version, 'v1');
  t.is(ok.body.data.workspace.id, owner.workspace.id);
  t.regex(ok.headers.get('content-type')!, /^application\/json/);
  const err = await app.client().get('/api/v1/workspace');
  t.is(err.status, 401);
  t.deepEqual(Object.keys(err.body), ['error']);
  t.is(typeof err.body.error, 'string');
});

test('form-encoded bodies are accepted like JSON', async (t) => {
  const email = uniqueEmail();
  const res = await app.client().request('POST', '/api/v1/auth/signup', { form: { email, password: 'form password', name: 'Form' } });
  t.is(res.status, 201);
  t.is(res.body.data.user.email, email);
  t.is(res.body.data.user.name, 'Form');
});

test('multipart form fields are accepted like JSON', async (t) => {
  const email = uniqueEmail();
  const form = new FormData();
  form.set('email', email);
  form.set('password', 'multipart password');
  form.set('name', 'Multi');
  const res = await fetch(`${app.url}/api/v1/auth/signup`, { method: 'POST', body: form });
  t.is(res.status, 201);
  t.is((await res.json()).data.user.name, 'Multi');
});

test('a multipart body past a limit is 413 naming it; a file part on a route that takes none is skipped', async (t) => {
  const many = new FormData();
  for (let i = 0; i <= 1000; i++) many.set(`f${i}`, 'x');
  const refused = await fetch(`${app.url}/api/v1/auth/login`, { method: 'POST', body: many });
  t.is(refused.status, 413);
  t.is((await refused.json()).error, 'The multipart body has more than 1000 form fields.');
  const email = uniqueEmail();
  const form = new FormData();
  form.set('email', email);
  form.set('password', 'multipart password');
  form.set('name', 'With a file');
  form.set('avatar', new Blob(['x'.repeat(100_000)], { type: 'image/png' }), 'a.png');
  const res = await fetch(`${app.url}/api/v1/auth/signup`, { method: 'POST', body: form });
  t.is(res.status, 201);
  t.is((await res.json()).data.user.name, 'With a file');
});

test('JSON and form fields at once: form fields win', async (t) => {
  const email = uniqueEmail();
  const raw = `${JSON.stringify({ email, password: 'json password', name: 'From JSON' })}&name=From+form`;
  const res = await app.client().request('POST', '/api/v1/auth/signup', { raw, contentType: 'application/x-www-form-urlencoded' });
  t.is(res.status, 201);
  t.is(res.body.data.user.name, 'From form');
  t.is(res.body.data.user.email, email);
  // A JSON object sent with the form content type (what `curl -d` does) is read as JSON.
  const login = await app.client().request('POST', '/api/v1/auth/login', { raw: JSON.stringify({ email, password: 'json password' }), contentType: 'application/x-www-form-urlencoded' });
  t.is(login.status, 200);
});

test('malformed JSON is an empty body: 422 names the missing field', async (t) => {
  const res = await app.client().request('POST', '/api/v1/auth/login', { raw: '{"email": "a@b.co", "password": ', contentType: 'application/json' });
  t.is(res.status, 422);
  t.regex(res.body.error, /email/);
  const array = await app.client().request('POST', '/api/v1/auth/login', { raw: '[1,2]', contentType: 'application/json' });
  t.is(array.status, 422);
  t.regex(array.body.error, /email/);
});

test('422 messages name the field', async (t) => {
  const res = await app.client().post('/api/v1/auth/signup', { email: uniqueEmail(), password: 'short', name: 'X' });
  t.is(res.status, 422);
  t.regex(res.body.error, /^password/);
  const bad = await app.client().post('/api/v1/auth/signup', { email: 'not-an-email', password: 'long enough!', name: 'X' });
  t.is(bad.status, 422);
  t.regex(bad.body.error, /^email/);
  const wrongType = await app.client().post('/api/v1/auth/signup', { email: uniqueEmail(), password: 1234567890123, name: 'X' });
  t.is(wrongType.status, 422);
  t.regex(wrongType.body.error, /^password/);
});

test('unknown /api/v1 paths answer a JSON 404, and the API never redirects', async (t) => {
  const res = await app.client().get('/api/v1/nope');
  t.is(res.status, 404);
  t.regex(res.body.error, /\/api\/v1\/nope/);
  const slash = await app.client().get('/api/v1/auth/me/');
  t.true(slash.status < 300 || slash.status >= 400, `no redirect (got ${slash.status})`);
  t.is(slash.headers.get('location'), null);
});

test('API paths match case-insensitively, with or without a trailing slash; HEAD answers as GET without a body; ids are percent-decoded', async (t) => {
  const owner = await signUpOwner(app);
  const customer = await owner.client.post('/api/v1/customers', { email: uniqueEmail('route'), name: 'Route Test' });
  t.is(customer.status, 201, customer.text);
  const id = customer.body.data.customer.id;
  for (const path of [`/api/v1/customers/${id}`, `/api/v1/customers/${id}/`, `/API/V1/Customers/${id}`, `/api/v1/customers/%3${String(id)[0]}${String(id).slice(1)}`]) {
    const res = await owner.client.get(path);
    t.is(res.status, 200, `${path}: ${res.text}`);
    t.is(res.body.data.customer.id, id, path);
  }
  const head = await owner.client.request('HEAD', '/api/v1/auth/me');
  t.is(head.status, 200);
  t.regex(head.headers.get('content-type')!, /^application\/json/);
  t.is(head.text, '');
  // A path with more segments than any endpoint is the JSON 404.
  t.is((await owner.client.get(`/api/v1/customers/${id}/nope`)).status, 404);
});

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];
const allowOf = (res: { headers: Headers }) => (res.headers.get('allow') ?? '').split(',').map((m) => m.trim()).filter(Boolean).sort();

test('a method an import path does not take is 405 with Allow: POST, not 400 "Invalid id"; nothing is imported', async (t) => {
  const owner = await signUpOwner(app);
  const csv = 'sku,name,price\nPUT-1,Put,1.00\n';
  for (const path of ['/api/v1/products/import', '/api/v1/orders/import', '/API/V1/Products/Import/']) {
    for (const method of ['PUT', 'PATCH', 'DELETE', 'GET', 'HEAD']) {
      const res = await owner.client.request(method, path, method === 'GET' || method === 'HEAD' || method === 'DELETE' ? {} : { raw: csv, contentType: 'text/csv' });
      t.is(res.status, 405, `${method} ${path}: ${res.text}`);
      t.deepEqual(allowOf(res), ['POST'], `${method} ${path}`);
      if (method !== 'HEAD') t.regex(res.body.error, new RegExp(`^${method} is not allowed on ${path.replace(/[/]/g, '\\/')}; it takes POST\\.$`));
    }
  }
  t.is((await app.db('variants').where({ workspace_id: owner.workspace.id, sku: 'PUT-1' })).length, 0);
  // The same for the other literal paths beside an {id}: GET /quotes/external is not a quote with the id "external".
  const external = await owner.client.get('/api/v1/quotes/external');
  t.is(external.status, 405);
  t.deepEqual(allowOf(external), ['POST']);
  // A path that is no literal one is still an id: 400 for a bad one.
  t.is((await owner.client.get('/api/v1/products/imports')).status, 400);
  // Without a session too: the method is refused before anything else.
  t.is((await app.client().request('PUT', '/api/v1/products/import')).status, 405);
});

test('every path of the OpenAPI document answers the methods it does not document with 405 and an Allow header listing those it does', async (t) => {
  const doc = (await app.client().get('/api/v1/openapi.json')).body;
  let checked = 0;
  for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, { tags?: string[] }>>)) {
    const documented = Object.keys(item).map((m) => m.toUpperCase());
    const url = path.replace(/\{\w+\}/g, '1');
    const expected = new Set(documented);
    if (expected.has('GET')) expected.add('HEAD');
    // The CORS endpoints answer their preflights (OPTIONS) too.
    const cors = await app.client().request('OPTIONS', url, { headers: { origin: 'https://shop.example', 'access-control-request-method': documented[0] } });
    if (cors.status === 204) expected.add('OPTIONS');
    for (const method of METHODS.filter((m) => !expected.has(m))) {
      const res = await app.client().request(method, url);
      t.is(res.status, 405, `${method} ${path}: ${res.text}`);
      t.deepEqual(allowOf(res), [...expected].sort(), `${method} ${path}`);
      checked++;
    }
  }
  t.true(checked > 200, `${checked} method and path pairs checked`);
});

test('pages and /healthz: a method they do not take is 405 with Allow; unknown paths stay 404', async (t) => {
  for (const [method, path, allow] of [
    ['PUT', '/q/AAAAAAAAAAAAAAAAAAAAAAAA', ['GET', 'HEAD']],
    ['DELETE', '/q/AAAAAAAAAAAAAAAAAAAAAAAA', ['GET', 'HEAD']],
    ['GET', '/q/AAAAAAAAAAAAAAAAAAAAAAAA/accept', ['POST']],
    ['PUT', '/q/AAAAAAAAAAAAAAAAAAAAAAAA/decline', ['POST']],
    ['GET', '/q/AAAAAAAAAAAAAAAAAAAAAAAA/pay', ['POST']],
    ['POST', '/tag/acme.js', ['GET', 'HEAD']],
    ['POST', '/healthz', ['GET', 'HEAD']],
    ['DELETE', '/healthz', ['GET', 'HEAD']],
  ] as const) {
    const res = await app.client().request(method, path);
    t.is(res.status, 405, `${method} ${path}: ${res.text}`);
    t.deepEqual(allowOf(res), [...allow].sort(), `${method} ${path}`);
    t.truthy(res.body.error, `${method} ${path} says why`);
  }
  t.is((await app.client().request('HEAD', '/healthz')).status, 200);
  t.is((await app.client().request('PUT', '/nope')).status, 404);
  t.is((await app.client().request('PUT', '/q/AAAAAAAAAAAAAAAAAAAAAAAA/nope')).status, 404);
  t.is((await app.client().request('DELETE', '/api/v1/nope')).status, 404);
});

test('bad ids are 400; unknown ids 404', async (t) => {
  const headers = { 'x-admin-key': 'admin-secret' };
  const bad = await app.client().patch('/api/v1/admin/workspaces/abc', { status: 'active' }, { headers });
  t.is(bad.status, 400);
  t.regex(bad.body.error, /id/);
  const missing = await app.client().patch('/api/v1/admin/workspaces/999999', { status: 'active' }, { headers });
  t.is(missing.status, 404);
});

test('every response carries a request id; a given one is echoed', async (t) => {
  const res = await app.client().get('/healthz', { headers: { 'x-request-id': 'trace-123' } });
  t.is(res.headers.get('x-request-id'), 'trace-123');
  const other = await app.client().get('/healthz');
  t.regex(other.headers.get('x-request-id')!, /^[0-9a-f-]{36}$/);
});

test('/healthz answers 200 {status: "ok"} while the database answers', async (t) => {
  const res = await app.client().get('/healthz');
  t.is(res.status, 200);
  t.deepEqual(res.body, { status: 'ok' });
});

test.serial('an unexpected error is a generic 500, logged with the request id and no stack to the client', async (t) => {
  const isolated = await startApp({}, undefined, { allowServerErrors: true });
  t.teardown(() => isolated.close());
  await isolated.db.schema.renameTable('sessions', 'sessions_gone');
  const { result: res, logs } = await captureLogs(() => isolated.client().get('/api/v1/auth/me', { headers: { cookie: 'quoting_session=abc' } }));
  t.is(res.status, 500);
  const requestId = res.headers.get('x-request-id')!;
  t.deepEqual(Object.keys(res.body), ['error']);
  t.true(res.body.error.includes(requestId));
  t.notRegex(res.body.error, /sessions|relation|at /);
  const logged = logs.find((l) => l.msg === 'unhandled error')!;
  t.truthy(logged);
  t.is(logged.request_id, requestId);
  t.regex(logged.error, /sessions/);
});

test('an unreachable database answers 503, on /healthz and on the API', async (t) => {
  const down = openPostgres('postgres://postgres@127.0.0.1:1/nowhere', 1);
  const broken = await startApp({}, { ...down });
  t.teardown(() => broken.close());
  const health = await broken.client().get('/healthz');
  t.is(health.status, 503);
  t.truthy(health.body.error);
  const login = await broken.client().post('/api/v1/auth/login', { email: 'a@b.co', password: 'whatever pw' });
  t.is(login.status, 503);
  t.regex(login.body.error, /database/i);
  const me = await broken.client().get('/api/v1/auth/me', { headers: { cookie: 'quoting_session=abc' } });
  t.is(me.status, 503);
});
