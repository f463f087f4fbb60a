import test from 'ava';
import { useApp } from '../helpers/fixture.js';
import { buildApi } from '../../src/server/app.js';

// CORS headers on exactly the spec's CORS endpoints (§4), nowhere else.
const { app } = useApp(test);

/** The spec's CORS list (service spec §4, CORS). */
const specCors = ['POST /track/event', 'POST /track/join', 'GET /public/recommendations', 'GET /public/categories/interest', 'POST /quotes/public/lookup'];

const ORIGIN = 'https://shop.example.net';
const methodsOf = (method: string | string[]) => (Array.isArray(method) ? method : [method]).map((m) => m.toUpperCase());
const concrete = (path: string) => path.replace(/\{\w+\}/g, '1');

function registry() {
  return buildApi({ db: app.db, config: app.config, mailer: null, sessionCache: null }).routes;
}

test('the routes marked cors are the spec CORS endpoints that exist so far', (t) => {
  const routes = registry();
  const registered = new Set(routes.flatMap((r) => methodsOf(r.method).map((m) => `${m} ${r.path}`)));
  const marked = routes.filter((r) => r.cors).flatMap((r) => methodsOf(r.method).map((m) => `${m} ${r.path}`));
  t.deepEqual(marked.sort(), specCors.filter((endpoint) => registered.has(endpoint)).sort());
  t.true(marked.length >= 1);
});

test('every CORS endpoint: Allow-Origin * on its answers, and a 204 preflight with methods, headers and Max-Age', async (t) => {
  const corsRoutes = registry().filter((r) => r.cors);
  for (const route of corsRoutes) {
    const url = `/api/v1${concrete(route.path)}`;
    for (const method of methodsOf(route.method)) {
      const where = `${method} ${route.path}`;
      const preflight = await app.client().request('OPTIONS', url, {
        headers: { origin: ORIGIN, 'access-control-request-method': method, 'access-control-request-headers': 'authorization, content-type' },
      });
      t.is(preflight.status, 204, `${where} preflight`);
      t.is(preflight.headers.get('access-control-allow-origin'), '*', `${where} preflight Allow-Origin`);
      const allowed = (preflight.headers.get('access-control-allow-methods') ?? '').split(',').map((m) => m.trim());
      t.true(allowed.includes(method), `${where} preflight allows ${method}`);
      const headers = (preflight.headers.get('access-control-allow-headers') ?? '').split(',').map((h) => h.trim().toLowerCase());
      t.true(headers.includes('authorization') && headers.includes('content-type'), `${where} preflight allows Authorization and Content-Type`);
      t.regex(preflight.headers.get('access-control-max-age') ?? '', /^[1-9]\d*$/, `${where} preflight Max-Age`);
      t.is(preflight.text, '', `${where} preflight has no body`);
      t.is(preflight.headers.get('access-control-allow-credentials'), null, `${where}: no credentials (no session cookie here)`);

      // An actual request, refused for want of a key: the browser must still be able to read the answer.
      const answer = await app.client().request(method, url, { headers: { origin: ORIGIN }, ...(method === 'GET' ? {} : { json: {} }) });
      t.is(answer.status, 401, `${where} without a key`);
      t.is(answer.headers.get('access-control-allow-origin'), '*', `${where} answer Allow-Origin`);
    }
  }
});

test('no other route of the OpenAPI document sends CORS headers, on a request or on a preflight', async (t) => {
  const doc = (await app.client().get('/api/v1/openapi.json')).body;
  const cors = new Set(registry().filter((r) => r.cors).flatMap((r) => methodsOf(r.method).map((m) => `${m} /api/v1${r.path}`)));
  let checked = 0;
  for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, unknown>>)) {
    for (const method of Object.keys(item).map((m) => m.toUpperCase())) {
      if (cors.has(`${method} ${path}`)) continue;
      const where = `${method} ${path}`;
      const url = concrete(path);
      const answer = await app.client().request(method, url, { headers: { origin: ORIGIN }, ...(method === 'GET' || method === 'DELETE' ? {} : { json: {} }) });
      const preflight = await app.client().request('OPTIONS', url, { headers: { origin: ORIGIN, 'access-control-request-method': method } });
      for (const [what, res] of [['answer', answer], ['preflight', preflight]] as const) {
        const headers = [...res.headers.keys()].filter((name) => name.startsWith('access-control-'));
        t.deepEqual(headers, [], `${where} ${what} (${res.status}) has no CORS headers`);
      }
      t.not(preflight.status, 204, `${where}: no preflight answered`);
      checked++;
    }
  }
  t.true(checked > 50, `${checked} operations checked`);
});
