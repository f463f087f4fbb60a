import { z } from 'zod';
import { reply, type Api } from '../http/api.js';
import type { AppDeps } from '../http/deps.js';
import { TooManyRequests } from '../errors.js';
import { trackingEvents } from '../metrics.js';
import { createJoinCode, customerEvents, joinVisitor, quoteBrowsing, recordEvent } from './service.js';
import { categoryInterest, recommend } from './recommendations.js';
import {
  categoryInterestOut, customerEventsQuery, eventOut, interestQuery, joinBody, joinCodeBody, joinCodeOut, recommendationOut, recommendationsQuery, trackEventBody, visitorOut,
} from './schema.js';

const ACCEPTED = { outcome: 'accepted' };
const CAPPED = { outcome: 'capped' };

export function trackingRoutes(api: Api, { db, config }: AppDeps): void {
  api.tag('Tracking', 'Visitor events, visitors linked to customers, and the recommendations and category interest they feed');
  const tag = 'Tracking';
  const limits = { perMinute: config.TRACK_RATE_PER_MINUTE, retentionDays: config.TRACK_RETENTION_DAYS };

  api.route(
    {
      method: 'post', path: '/track/event', tag, auth: 'public', cors: true, body: trackEventBody, response: z.object({}), status: 204,
      summary: 'Record a browser event (public key in the Authorization header only); 204 with no body',
      description:
        `\`sku\` may name a product or a variant (both resolve to the product). At most TRACK_RATE_PER_MINUTE events per workspace and minute ` +
        `(default 1200), counted in the database so every server process shares the cap; over it, 429 {error: "Too many events."}.`,
      errors: { 429: 'Over the rate cap: {error: "Too many events."}' },
    },
    async ({ body, auth }) => {
      if (!(await recordEvent(db, auth.access, body, limits))) {
        trackingEvents.inc(CAPPED);
        throw new TooManyRequests('Too many events.');
      }
      trackingEvents.inc(ACCEPTED);
      return reply(204, {});
    },
  );

  api.route(
    {
      method: 'post', path: '/track/join', tag, auth: 'key', cors: true, body: joinBody, response: z.object({ visitor: visitorOut }),
      summary: 'Link a visitor to a customer: secret key with customer_id or email, or either key with a join code',
      description:
        'With the secret key, `customer_id` or `email` (a new email creates the customer). With the public key (from the browser), only `code` ' +
        'from POST /track/join-codes. A repeat of the same link is 200; a visitor linked to another customer is 409; a spent or expired code is 410.',
      errors: { 403: 'customer_id or email with the public key', 404: 'Unknown join code', 409: 'The visitor is linked to another customer', 410: 'The join code was used or has expired' },
    },
    async ({ body, auth }) => ({ visitor: await db.transaction((trx) => joinVisitor(trx, auth.access, body)) }),
  );

  api.route(
    {
      method: 'post', path: '/track/join-codes', tag, auth: 'secret', status: 201, body: joinCodeBody, response: z.object({ join_code: joinCodeOut }),
      summary: 'A one-use code (15 minutes) with which the browser joins its visitor to the customer (customer_id or email)',
    },
    async ({ body, auth }) => ({ join_code: await db.transaction((trx) => createJoinCode(trx, auth.access, body)) }),
  );

  api.route(
    {
      method: 'get', path: '/customers/{id}/events', tag, auth: 'session', query: customerEventsQuery, response: z.object({ events: z.array(eventOut) }),
      summary: "Tracking events of the customer's visitors, newest first (by occurred_at, then id); limit 1-200, default 50",
    },
    async ({ params, query, auth }) => ({ events: await customerEvents(db, auth.access, params.id, query.limit) }),
  );

  api.route(
    {
      method: 'get', path: '/quotes/{id}/browsing', tag, auth: 'session', response: z.object({ browsing: z.array(eventOut) }),
      summary: "The 50 most recent tracking events of the visitors linked to the quote's customer",
      errors: { 403: 'No role on the quote’s channel' },
    },
    async ({ params, auth }) => ({ browsing: await quoteBrowsing(db, auth.access, params.id) }),
  );

  api.route(
    {
      method: 'get', path: '/public/recommendations', tag, auth: 'public|query', cors: true, query: recommendationsQuery,
      response: z.object({ recommendations: z.array(recommendationOut) }),
      summary: 'Active products to recommend: co-viewed with sku (or the visitor’s recent views), then the visitor’s top categories, then the most viewed',
      description:
        'Read from recent behaviour: the latest 200 viewers of the seed products and the latest 20 product views of each, the visitor’s latest 20 product ' +
        'views and 1000 events, and the workspace’s latest 10,000 product events. Each result carries its `reason` and a `score` within that reason ' +
        '(co_viewed: how many of those viewers viewed it; category: the visitor’s decayed interest in its category; popular: its views among the ' +
        'latest 10,000). No events, no recommendations. Once a workspace has more than 10,000 product events, its views among the latest ' +
        '10,000 may be up to 30 seconds old (whether a product is active never is).',
    },
    async ({ query, auth }) => ({ recommendations: await recommend(db, auth.access, query) }),
  );

  api.route(
    {
      method: 'get', path: '/public/categories/interest', tag, auth: 'public|query', cors: true, query: interestQuery,
      response: z.object({ categories: z.array(categoryInterestOut) }),
      summary: 'Interest per category with a 7-day half-life: the visitor’s latest 1000 events, or the workspace’s latest 10,000',
      description: 'The workspace’s interest, once it has more than 10,000 events, may be up to 30 seconds old.',
    },
    async ({ query, auth }) => ({ categories: await categoryInterest(db, auth.access, query) }),
  );
}
