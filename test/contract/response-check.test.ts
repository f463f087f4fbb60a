import test from 'ava';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { z } from 'zod';
import { Api, jsonList, reply } from '../../src/http/api.js';
import type { Principal } from '../../src/http/principal.js';
import { responseProblems } from '../../src/http/check.js';
import { customerOut } from '../../src/customers/schema.js';
import { Client } from '../helpers/client.js';

// The check behind every test's app (checkResponses): it must refuse what drifts from the schema.
const customer = {
  id: 1, email: 'a@example.com', name: null, company: null, phone: null, country: null, notes: null,
  created_at: '2026-11-21T10:00:00.000Z', updated_at: '2026-11-21T10:00:00.000Z',
};
const one = z.object({ customer: customerOut });

test('responseProblems: undeclared keys, wrong types and missing fields are problems, at any depth', (t) => {
  t.is(responseProblems(one, { customer }), null);
  t.regex(responseProblems(one, { customer, extra: 1 }) ?? '', /extra/);
  t.regex(responseProblems(one, { customer: { ...customer, workspace_id: 7 } }) ?? '', /customer\.workspace_id/);
  t.regex(responseProblems(z.object({ customers: z.array(customerOut) }), { customers: [customer, { ...customer, secret: 'x' }] }) ?? '', /customers\.1\.secret/);
  t.truthy(responseProblems(one, { customer: { ...customer, id: '1' } }), 'an id as a string');
  t.truthy(responseProblems(one, { customer: { ...customer, created_at: '2026-11-21 10:00:00' } }), 'a timestamp without offset');
  const { phone: _phone, ...withoutPhone } = customer;
  t.truthy(responseProblems(one, { customer: withoutPhone }), 'a missing nullable field');
  t.is(responseProblems(one, { customer: { ...customer, created_at: new Date('2026-11-21T10:00:00Z') } }), null, 'checked as sent: a Date becomes its ISO text');
});

test('a route answering off its schema or status is a 500 and reported; a list is checked page by page', async (t) => {
  const reported: string[] = [];
  const api = new Api(async () => ({}) as Principal, { checkResponses: (problem) => reported.push(problem) });
  api.route({ method: 'get', path: '/good', tag: 'T', auth: 'none', summary: 's', response: one }, async () => ({ customer }));
  api.route({ method: 'get', path: '/extra', tag: 'T', auth: 'none', summary: 's', response: one }, async () => ({ customer: { ...customer, token: 'x' } }));
  api.route({ method: 'post', path: '/status', tag: 'T', auth: 'none', status: 201, summary: 's', response: one }, async () => reply(200, { customer }));
  api.route({ method: 'post', path: '/upsert', tag: 'T', auth: 'none', status: 201, alsoOk: 'matched', summary: 's', response: one }, async () => reply(200, { customer }));
  api.route({ method: 'get', path: '/list', tag: 'T', auth: 'none', summary: 's', response: z.object({ customers: z.array(customerOut) }) }, async () =>
    jsonList('customers', (async function* () {
      yield JSON.stringify(customer);
      yield JSON.stringify({ ...customer, id: 'two' });
    })()),
  );
  const app = new Koa();
  app.use(async (ctx, next) => {
    try {
      await next();
    } catch {
      ctx.status = 500;
      ctx.body = { error: 'failed' };
    }
  });
  app.use(api.middleware());
  app.on('error', () => undefined);
  const server = http.createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const client = new Client(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);

  t.is((await client.get('/api/v1/good')).status, 200);
  t.is((await client.get('/api/v1/extra')).status, 500);
  t.is((await client.post('/api/v1/status')).status, 500);
  t.is((await client.post('/api/v1/upsert')).status, 200);
  const list = await client.get('/api/v1/list').catch((err: Error) => err);
  t.true(list instanceof Error || list.body === undefined, 'the list is cut short at the page that failed');
  t.is(reported.length, 3);
  t.regex(reported[0], /^GET \/extra: .*customer\.token/);
  t.regex(reported[1], /^POST \/status: .*status 200 is not documented/);
  t.regex(reported[2], /^GET \/list: /);
});
