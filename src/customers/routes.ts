import { z } from 'zod';
import { jsonList, reply, type Api } from '../http/api.js';
import type { AppDeps } from '../http/deps.js';
import { createCustomerBody, customerOut, deleteCustomerQuery, listCustomersQuery, updateCustomerBody } from './schema.js';
import { deleteCustomer, getCustomer, listCustomers, updateCustomer, upsertCustomer } from './service.js';

export function customerRoutes(api: Api, { db }: AppDeps): void {
  api.tag('Customers', "The workspace's customers, one per email address");
  const tag = 'Customers';
  const one = z.object({ customer: customerOut });

  api.route(
    {
      method: 'post', path: '/customers', tag, auth: 'session', status: 201, alsoOk: 'A customer with this email existed: updated', body: createCustomerBody, response: one,
      summary: 'Create a customer, or update the one with the same email (201 created, 200 updated)',
      description: 'An upsert by (workspace, email): given fields overwrite, omitted ones keep their value. Emits customer.created or customer.updated.',
    },
    async ({ body, auth }) => {
      const { customer, created } = await db.transaction((trx) => upsertCustomer(trx, auth.access, body));
      return reply(created ? 201 : 200, { customer });
    },
  );

  api.route(
    {
      method: 'get', path: '/customers', tag, auth: 'session', query: listCustomersQuery, response: z.object({ customers: z.array(customerOut) }),
      summary: 'Every customer of the workspace (unpaginated), optionally filtered by q',
    },
    async ({ query, auth }) => jsonList('customers', listCustomers(db, auth.access, query)),
  );

  api.route(
    { method: 'get', path: '/customers/{id}', tag, auth: 'session', response: one, summary: 'One customer' },
    async ({ params, auth }) => ({ customer: await getCustomer(db, auth.access, params.id) }),
  );

  api.route(
    {
      method: ['patch', 'put'], path: '/customers/{id}', tag, auth: 'session', body: updateCustomerBody, response: one,
      summary: 'Change a customer (partial: omitted fields keep their value); emits customer.updated',
      errors: { 409: 'Another customer has that email' },
    },
    async ({ params, body, auth }) => ({ customer: await db.transaction((trx) => updateCustomer(trx, auth.access, params.id, body)) }),
  );

  api.route(
    {
      method: 'delete', path: '/customers/{id}', tag, auth: 'session', query: deleteCustomerQuery, response: one,
      summary: 'Delete a customer; with dependents, 409 unless cascade=1',
      description:
        'Without cascade=1, a customer with quotes, orders or visitors is not deleted: 409 with data.dependents {quotes, orders, visitors, hidden}. ' +
        'quotes and orders count only those the caller may read (no channel, or a channel they hold a role on); hidden counts, as one number, ' +
        'the quotes and orders on channels they have no role on (always 0 for owners). With cascade=1 they are deleted too, in one transaction, ' +
        'when the caller could delete each of them one by one: a member needs editor or manager on the channel of every quote and order, ' +
        'else 403 naming the channel and nothing is deleted. Emits customer.deleted with the snapshot.',
      errors: {
        403: 'cascade=1 would delete quotes or orders on a channel where the caller may not delete them (the message names it)',
        409: 'The customer has dependents (data.dependents has their counts: quotes, orders, visitors, hidden)',
      },
    },
    async ({ params, query, auth }) => ({
      customer: await db.transaction((trx) => deleteCustomer(trx, auth.access, params.id, query.cascade ?? false)),
    }),
  );
}
