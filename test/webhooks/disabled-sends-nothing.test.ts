import test from 'ava';
import { signUpOwner } from '../helpers/app.js';
import { useApp } from '../helpers/fixture.js';
import { startReceiver } from '../helpers/receiver.js';
import { DeliveryWorker, workerSettings } from '../../src/webhooks/worker.js';

// WEBHOOKS_ENABLED is read once per process, so this has a file of its own.
const { app } = useApp(test, { env: { WEBHOOKS_ENABLED: '0', OUTBOUND_ALLOWED_CIDRS: '127.0.0.0/8' } });

test('WEBHOOKS_ENABLED=0: subscriptions can be managed, but no event and no delivery is queued or sent', async (t) => {
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  const owner = await signUpOwner(app);
  const sub = await owner.client.post('/api/v1/webhooks', { url: `${receiver.url}/hook` });
  t.is(sub.status, 201);
  const created = await owner.client.post('/api/v1/customers', { email: 'silent@example.com', name: 'Silent' });
  t.is(created.status, 201);
  t.is((await owner.client.patch(`/api/v1/customers/${created.body.data.customer.id}`, { name: 'Still silent' })).status, 200);
  t.is((await owner.client.delete(`/api/v1/customers/${created.body.data.customer.id}`)).status, 200);

  t.is((await app.db('events')).length, 0);
  t.is((await app.db('webhook_deliveries')).length, 0);
  const worker = new DeliveryWorker(app.db, workerSettings(app.config));
  t.teardown(() => worker.close());
  t.deepEqual(await worker.runOnce(), { claimed: 0, succeeded: 0, failed: 0, dead: 0 });
  t.is(receiver.received.length, 0);
  t.deepEqual((await owner.client.get(`/api/v1/webhooks/${sub.body.data.subscription.id}/deliveries`)).body.data.deliveries, []);
});
