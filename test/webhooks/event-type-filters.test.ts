import test from 'ava';
import { uniqueEmail } from '../helpers/app.js';
import { useOwnerApp } from '../helpers/fixture.js';
import { ok } from '../helpers/client.js';
import { eventTypes } from '../../src/events/outbox.js';

// Every catalogue event, caused through the API, against subscriptions filtered by '*', by [] (read
// as '*'), by each resource prefix and by each exact type: a delivery row goes to exactly the
// subscriptions whose filter names the event.
const { app, owner } = useOwnerApp(test, { workspace: 'Filters' });

const prefixOf = (type: string) => `${type.split('.')[0]}.*`;
const prefixes = [...new Set(eventTypes.map(prefixOf))];

/** Causes every event type at least once, through the API only. */
async function causeEveryEvent(): Promise<void> {
  const c = owner.client;
  const customer = (await ok(c.post('/api/v1/customers', { email: uniqueEmail('filters') }), 201)).customer; // customer.created
  await ok(c.patch(`/api/v1/customers/${customer.id}`, { name: 'Renamed' })); // customer.updated
  const quote = (await ok(c.post('/api/v1/quotes', { customer_id: customer.id, lines: [{ description: 'A', price: '10.00' }] }), 201)).quote; // quote.created
  await ok(c.patch(`/api/v1/quotes/${quote.id}`, { notes: 'n' })); // quote.updated
  const { line } = await ok(c.post(`/api/v1/quotes/${quote.id}/lines`, { description: 'B', price: '1.00' }), 201); // quote.line_added
  await ok(c.patch(`/api/v1/quotes/${quote.id}/lines/${line.id}`, { quantity: '2' })); // quote.line_updated
  await ok(c.delete(`/api/v1/quotes/${quote.id}/lines/${line.id}`)); // quote.line_removed
  await ok(c.post(`/api/v1/quotes/${quote.id}/send`, { notify: false })); // quote.sent
  await ok(c.post(`/api/v1/quotes/${quote.id}/accept`)); // quote.accepted
  await ok(c.post(`/api/v1/quotes/${quote.id}/mark-paid`)); // quote.paid
  const order = (await ok(c.post(`/api/v1/quotes/${quote.id}/convert`), 201)).order; // order.created
  await ok(c.patch(`/api/v1/orders/${order.id}`, { status: 'fulfilled' })); // order.updated
  await ok(c.delete(`/api/v1/orders/${order.id}`)); // order.deleted
  const declined = (await ok(c.post('/api/v1/quotes', { customer_id: customer.id }), 201)).quote;
  await ok(c.post(`/api/v1/quotes/${declined.id}/send`, { notify: false }));
  await ok(c.post(`/api/v1/quotes/${declined.id}/decline`)); // quote.declined
  const cancelled = (await ok(c.post('/api/v1/quotes', { customer_id: customer.id }), 201)).quote;
  await ok(c.post(`/api/v1/quotes/${cancelled.id}/cancel`)); // quote.cancelled
  await ok(c.delete(`/api/v1/quotes/${cancelled.id}`)); // quote.deleted
  await ok(c.delete(`/api/v1/customers/${customer.id}?cascade=1`)); // customer.deleted
}

test('each event reaches exactly the subscriptions filtered by *, [], its prefix or its exact type', async (t) => {
  const subscribe = async (eventTypes: string[]) =>
    (await ok(owner.client.post('/api/v1/webhooks', { url: 'https://hooks.example.com/in', event_types: eventTypes }), 201)).subscription.id as number;
  const everything = await subscribe(['*']);
  const emptyList = await subscribe([]);
  const byPrefix = Object.fromEntries(await Promise.all(prefixes.map(async (p) => [p, await subscribe([p])] as const)));
  const byType = Object.fromEntries(await Promise.all(eventTypes.map(async (type) => [type, await subscribe([type])] as const)));

  await causeEveryEvent();

  const events: { id: string; type: string }[] = await app.db('events').where({ workspace_id: owner.workspace.id }).select('id', 'type');
  t.deepEqual([...new Set(events.map((e) => e.type))].sort(), [...eventTypes].sort(), 'every catalogue event was caused');
  const deliveries: { event_id: string; subscription_id: number; event_type: string }[] = await app
    .db('webhook_deliveries')
    .where({ workspace_id: owner.workspace.id })
    .select('event_id', 'subscription_id', 'event_type');
  for (const event of events) {
    const got = deliveries.filter((d) => d.event_id === event.id);
    const expected = [everything, emptyList, byPrefix[prefixOf(event.type)], byType[event.type]].sort((a, b) => a - b);
    t.deepEqual(got.map((d) => d.subscription_id).sort((a, b) => a - b), expected, `${event.type}: *, [], ${prefixOf(event.type)} and ${event.type} only`);
    t.true(got.every((d) => d.event_type === event.type));
  }
  // Each foreign prefix and each other exact type received none of them.
  for (const prefix of prefixes) {
    const foreign = events.filter((e) => prefixOf(e.type) !== prefix).map((e) => e.id);
    t.false(deliveries.some((d) => d.subscription_id === byPrefix[prefix] && foreign.includes(d.event_id)), `${prefix} receives no other resource's events`);
  }
});
