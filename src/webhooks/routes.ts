import { z } from 'zod';
import type { Api } from '../http/api.js';
import type { AppDeps } from '../http/deps.js';
import { createSubscriptionBody, deliveryOut, rotateSecretBody, subscriptionOut, updateSubscriptionBody } from './schema.js';
import {
  createSubscription, deleteSubscription, getDelivery, listDeliveries, listSubscriptions, resendDelivery, rotateSecret, updateSubscription,
} from './service.js';

export function webhookRoutes(api: Api, { db }: AppDeps): void {
  api.tag('Webhooks', 'Webhook subscriptions and their deliveries');
  const tag = 'Webhooks';
  const one = z.object({ subscription: subscriptionOut });

  api.route(
    {
      method: 'post', path: '/webhooks', tag, auth: 'session:owner', status: 201, body: createSubscriptionBody, response: one,
      summary: 'Subscribe a URL to events (owner only); the signing secret (whsec_…) is returned this once',
      description: 'event_types defaults to ["*"]; an empty list is read as ["*"]. Entries: "*", a prefix such as "quote.*", or an exact type.',
    },
    async ({ body, auth }) => ({ subscription: await createSubscription(db, auth.access, body) }),
  );

  api.route(
    { method: 'get', path: '/webhooks', tag, auth: 'session', summary: 'Every subscription of the workspace, without secrets', response: z.object({ subscriptions: z.array(subscriptionOut) }) },
    async ({ auth }) => ({ subscriptions: await listSubscriptions(db, auth.access) }),
  );

  api.route(
    {
      method: ['patch', 'put'], path: '/webhooks/{id}', tag, auth: 'session:owner', body: updateSubscriptionBody, response: one,
      summary: 'Change a subscription (partial, owner only); active false pauses it, true resumes it',
      description: 'Pausing marks the pending and failed deliveries of the subscription dead; resuming does not revive them (resend them).',
    },
    async ({ params, body, auth }) => ({ subscription: await db.transaction((trx) => updateSubscription(trx, auth.access, params.id, body)) }),
  );

  api.route(
    {
      method: 'delete', path: '/webhooks/{id}', tag, auth: 'session:owner', response: one,
      summary: 'Delete a subscription for good (owner only); its pending and failed deliveries become dead',
    },
    async ({ params, auth }) => ({ subscription: await db.transaction((trx) => deleteSubscription(trx, auth.access, params.id)) }),
  );

  api.route(
    {
      method: 'post', path: '/webhooks/{id}/rotate-secret', tag, auth: 'session:owner', body: rotateSecretBody, response: one,
      summary: 'Issue a new signing secret (owner only), returned once; the old one stops signing (after overlap_seconds, if given)',
      description: 'During the overlap every delivery carries two v1= entries, one per secret.',
    },
    async ({ params, body, auth }) => ({
      subscription: await db.transaction((trx) => rotateSecret(trx, auth.access, params.id, body.overlap_seconds)),
    }),
  );

  api.route(
    { method: 'get', path: '/webhooks/{id}/deliveries', tag, auth: 'session', summary: 'The 50 most recent deliveries of a subscription, newest first', response: z.object({ deliveries: z.array(deliveryOut) }) },
    async ({ params, auth }) => ({ deliveries: await listDeliveries(db, auth.access, params.id) }),
  );

  api.route(
    { method: 'get', path: '/webhooks/deliveries/{id}', tag, auth: 'session', summary: 'One delivery, with the first 8 KB of the last response', response: z.object({ delivery: deliveryOut }) },
    async ({ params, auth }) => ({ delivery: await getDelivery(db, auth.access, params.id) }),
  );

  api.route(
    {
      method: 'post', path: '/webhooks/deliveries/{id}/resend', tag, auth: 'session:owner', response: z.object({ delivery: deliveryOut }),
      summary: 'Put a delivery back on the queue (owner only), due now, with its attempt count reset',
      errors: { 409: 'The subscription is paused or was deleted, or the delivery is being attempted right now' },
    },
    async ({ params, auth }) => ({ delivery: await resendDelivery(db, auth.access, params.id) }),
  );
}
