import test from 'ava';
import { uniqueEmail } from '../helpers/app.js';
import { useOwnerApp } from '../helpers/fixture.js';

const { app, owner } = useOwnerApp(test);
test.before(async () => {
  const ok = (res: { status: number; text: string }) => {
    if (res.status >= 300) throw new Error(`setup: ${res.status} ${res.text}`);
  };
  ok(await owner.client.post('/api/v1/products', { sku: 'P-1', name: 'Chair', type: 'physical', status: 'active' }));
  ok(await owner.client.post('/api/v1/products', { sku: 'P-2', name: 'Manual', type: 'digital', status: 'draft' }));
  ok(await owner.client.post('/api/v1/channels', { name: 'Shop', type: 'web', ownership: 'owned', status: 'active' }));
  ok(await owner.client.post('/api/v1/channels', { name: 'Market', type: 'marketplace', ownership: 'third_party', status: 'paused' }));
  ok(await owner.client.post('/api/v1/quotes', { customer: { email: uniqueEmail('q') } }));
  ok(await owner.client.post('/api/v1/orders/external', { external_source: 'shop', external_id: 'O-1', status: 'paid' }, { headers: { authorization: `Bearer ${owner.keys.secret_key}` } }));
});

// Every enum filter of every list, with the values it takes and the list key it answers under.
const filters: { path: string; key: string; filter: string; values: string[] }[] = [
  { path: '/api/v1/products', key: 'products', filter: 'type', values: ['physical', 'digital', 'service'] },
  { path: '/api/v1/products', key: 'products', filter: 'status', values: ['active', 'draft', 'archived'] },
  { path: '/api/v1/channels', key: 'channels', filter: 'type', values: ['web', 'marketplace', 'retail', 'wholesale', 'b2b'] },
  { path: '/api/v1/channels', key: 'channels', filter: 'ownership', values: ['owned', 'third_party'] },
  { path: '/api/v1/channels', key: 'channels', filter: 'status', values: ['active', 'paused', 'archived'] },
  { path: '/api/v1/quotes', key: 'quotes', filter: 'status', values: ['draft', 'sent', 'accepted', 'declined', 'cancelled', 'paid'] },
  { path: '/api/v1/orders', key: 'orders', filter: 'status', values: ['pending', 'paid', 'fulfilled', 'cancelled', 'refunded'] },
];

for (const { path, key, filter, values } of filters) {
  test(`GET ${path}?${filter}= takes only ${values.join(', ')}: anything else is 422 naming ${filter}`, async (t) => {
    for (const bad of ['boat', values[0].toUpperCase(), `${values[0]}x`, '%', `${values[0]},${values[1]}`]) {
      const res = await owner.client.get(`${path}?${filter}=${encodeURIComponent(bad)}`);
      t.is(res.status, 422, `${filter}=${bad}: ${res.text}`);
      t.true(res.body.error.startsWith(`${filter}: must be one of ${values.join(', ')}`), res.body.error);
    }
    const all = (await owner.client.get(path)).body.data[key];
    t.true(all.length > 0);
    // An empty value is ignored; a valid one filters exactly.
    t.deepEqual((await owner.client.get(`${path}?${filter}=`)).body.data[key], all);
    for (const value of values) {
      const res = await owner.client.get(`${path}?${filter}=${value}`);
      t.is(res.status, 200, res.text);
      t.deepEqual(res.body.data[key], all.filter((row: Record<string, unknown>) => row[filter] === value), `${filter}=${value}`);
    }
  });
}
