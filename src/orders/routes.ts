import { z } from 'zod';
import { jsonList, reply, type Api } from '../http/api.js';
import type { AppDeps } from '../http/deps.js';
import { externalOrderBody, itemOut, listOrdersQuery, orderOut, updateOrderBody } from './schema.js';
import { convertQuote, deleteOrder, getOrder, listOrders, updateOrder, upsertExternalOrder } from './service.js';

export function orderRoutes(api: Api, { db }: AppDeps): void {
  api.tag('Orders', 'Orders, converted from quotes or recorded from an external shop');
  const tag = 'Orders';
  const full = z.object({ order: orderOut, items: z.array(itemOut) });

  api.route(
    {
      method: 'post', path: '/orders/external', tag, auth: 'secret', status: 201, alsoOk: 'An order with this (external_source, external_id) existed: updated, items replaced', body: externalOrderBody, response: full,
      summary: 'Create or update an order from a backend (secret key), by (external_source, external_id): 201 created, 200 updated',
      description: 'A match is updated and its items replaced; emits order.created or order.updated. Without a caller-supplied external_id a retry would duplicate, so external_id is required.',
    },
    async ({ body, auth }) => {
      const { order, items, created } = await db.transaction((trx) => upsertExternalOrder(trx, auth.access, body));
      return reply(created ? 201 : 200, { order, items });
    },
  );

  api.route(
    {
      method: 'get', path: '/orders', tag, auth: 'session', query: listOrdersQuery, response: z.object({ orders: z.array(orderOut) }),
      summary: 'The orders the caller may read (unpaginated, by id), filtered by status, channel_id, customer_id and q',
    },
    async ({ query, auth }) => jsonList('orders', listOrders(db, auth.access, query)),
  );

  api.route(
    { method: 'get', path: '/orders/{id}', tag, auth: 'session', response: full, summary: 'An order with its items' },
    async ({ params, auth }) => getOrder(db, auth.access, params.id),
  );

  api.route(
    { method: ['patch', 'put'], path: '/orders/{id}', tag, auth: 'session', body: updateOrderBody, response: full, summary: 'Change status or notes; emits order.updated' },
    async ({ params, body, auth }) => db.transaction((trx) => updateOrder(trx, auth.access, params.id, body)),
  );

  api.route(
    { method: 'delete', path: '/orders/{id}', tag, auth: 'session', response: z.object({ order: orderOut }), summary: 'Delete an order; emits order.deleted with the snapshot' },
    async ({ params, auth }) => ({ order: await db.transaction((trx) => deleteOrder(trx, auth.access, params.id)) }),
  );

  // Converting a quote makes an order: the order area answers it, under the quote's path and in the quotes' tag.
  api.route(
    {
      method: 'post', path: '/quotes/{id}/convert', tag: 'Quotes', auth: 'session', status: 201, alsoOk: 'The quote was converted before: the same order', response: full,
      summary: 'Create the order of an accepted or paid quote (external_id quote:{id}); a repeat returns the same order (200)',
      errors: { 409: 'The quote is neither accepted nor paid' },
    },
    async ({ params, auth }) => {
      const { order, items, created } = await db.transaction((trx) => convertQuote(trx, auth.access, params.id));
      return reply(created ? 201 : 200, { order, items });
    },
  );
}
