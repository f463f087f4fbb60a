import test from 'ava';
import { uniqueEmail } from '../helpers/app.js';
import { useOwnerApp } from '../helpers/fixture.js';

// APP_URL is the public address; the tests reach the app directly on 127.0.0.1 (as behind a proxy).
const APP_URL = 'https://quotes.example.com';
const { app, owner } = useOwnerApp(test, { env: { APP_URL } });

const customers = async () => Number((await app.db('customers').where({ workspace_id: owner.workspace.id }).count({ n: '*' }))[0].n);
const from = (origin: string) => ({ headers: { origin } });

test.serial('a cookie-authenticated POST, PUT, PATCH or DELETE whose Origin names another site is 403 and changes nothing', async (t) => {
  const customer = (await owner.client.post('/api/v1/customers', { email: uniqueEmail('c'), name: 'Cora' })).body.data.customer;
  const before = await customers();
  for (const origin of ['https://evil.example', 'https://quotes.example.com.evil.example', 'http://quotes.example.com:8443', 'http://127.0.0.1:1', 'null']) {
    const attempts = [
      await owner.client.post('/api/v1/customers', { email: uniqueEmail('x'), name: 'Mallory' }, from(origin)),
      // A plain HTML form: what a cross-site page can post without any script.
      await owner.client.request('POST', '/api/v1/customers', { form: { email: uniqueEmail('f'), name: 'Form' }, ...from(origin) }),
      await owner.client.put(`/api/v1/customers/${customer.id}`, { name: 'Changed' }, from(origin)),
      await owner.client.patch(`/api/v1/customers/${customer.id}`, { name: 'Changed' }, from(origin)),
      await owner.client.delete(`/api/v1/customers/${customer.id}`, from(origin)),
      await owner.client.post('/api/v1/webhooks', { url: 'https://evil.example/hook' }, from(origin)),
      await owner.client.post('/api/v1/auth/logout', undefined, from(origin)),
    ];
    for (const res of attempts) {
      t.is(res.status, 403, `${origin}: ${res.text}`);
      t.regex(res.body.error, /Origin/);
    }
  }
  t.is(await customers(), before);
  t.like((await owner.client.get(`/api/v1/customers/${customer.id}`)).body.data.customer, { name: 'Cora' });
  t.is((await owner.client.get('/api/v1/auth/me')).status, 200, 'the refused logout left the session alone');
});

test.serial('the same requests from the app itself, from the host they were sent to, or without Origin go through', async (t) => {
  for (const options of [from(APP_URL), from(app.url), {}]) {
    const res = await owner.client.post('/api/v1/customers', { email: uniqueEmail('ok'), name: 'Fine' }, options);
    t.is(res.status, 201, `${JSON.stringify(options)}: ${res.text}`);
    const id = res.body.data.customer.id;
    t.is((await owner.client.patch(`/api/v1/customers/${id}`, { name: 'Still fine' }, options)).status, 200);
    t.is((await owner.client.delete(`/api/v1/customers/${id}`, options)).status, 200);
  }
  // APP_URL's origin, spelled with its default port.
  t.is((await owner.client.post('/api/v1/customers', { email: uniqueEmail('p'), name: 'Port' }, from('https://quotes.example.com:443'))).status, 201);
});

test.serial('reads are unaffected, and so are key-authenticated and public CORS endpoints', async (t) => {
  const evil = from('https://evil.example');
  t.is((await owner.client.get('/api/v1/customers', evil)).status, 200);
  t.is((await owner.client.get('/api/v1/auth/me', evil)).status, 200);

  const secret = { headers: { authorization: `Bearer ${owner.keys.secret_key}`, origin: 'https://evil.example' } };
  const order = await owner.client.post('/api/v1/orders/external', { external_source: 'shop', external_id: 'X-1', items: [{ sku: 'A', price: '1.00' }] }, secret);
  t.is(order.status, 201, order.text);

  const lookup = await app.client().post('/api/v1/quotes/public/lookup', { quote_number: 'Q-2026-000001', email: 'nobody@example.com' }, {
    headers: { authorization: `Public ${owner.keys.public_key}`, origin: 'https://shop.example' },
  });
  t.is(lookup.status, 404, lookup.text);
  t.is(lookup.headers.get('access-control-allow-origin'), '*');

  // Signing in is not cookie-authenticated: it answers as usual.
  const login = await app.client().post('/api/v1/auth/login', { email: owner.email, password: owner.password }, evil);
  t.is(login.status, 200);
});
