import test from 'ava';
import { signUpOwner } from '../helpers/app.js';
import { useApp } from '../helpers/fixture.js';

const { app } = useApp(test, { env: { WEBHOOKS_ENABLED: '0' } });

test('WEBHOOKS_ENABLED=0 stops emission: changes happen, no event rows are written', async (t) => {
  const owner = await signUpOwner(app);
  const created = await owner.client.post('/api/v1/customers', { email: 'quiet@example.com' });
  t.is(created.status, 201);
  t.is((await owner.client.patch(`/api/v1/customers/${created.body.data.customer.id}`, { name: 'Quiet' })).status, 200);
  t.is((await owner.client.delete(`/api/v1/customers/${created.body.data.customer.id}`)).status, 200);
  t.is((await app.db('events')).length, 0);
});
