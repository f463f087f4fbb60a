import { z } from 'zod';
import { booleanInput, optionalText } from '../schema/input.js';
import { id, timestamp } from '../schema/output.js';
import { eventTypes } from '../events/outbox.js';

const prefixes = [...new Set(eventTypes.map((type) => `${type.split('.')[0]}.*`))];
const validFilters = new Set<string>(['*', ...prefixes, ...eventTypes]);

export const urlInput = z
  .string()
  .trim()
  .max(2000, 'must be at most 2000 characters')
  .refine((value) => {
    try {
      const url = new URL(value);
      return (url.protocol === 'http:' || url.protocol === 'https:') && Boolean(url.hostname);
    } catch {
      return false;
    }
  }, 'must be an absolute http:// or https:// URL');

/** '*', a resource prefix ('quote.*') or an exact event type; an empty list from a client means ['*']. */
export const eventTypesInput = z
  .array(z.string().trim().refine((v) => validFilters.has(v), `must be "*", one of ${prefixes.join(', ')}, or an event type such as quote.accepted`))
  .max(50, 'must have at most 50 entries')
  .transform((types) => (types.length === 0 ? ['*'] : [...new Set(types)]));

export const createSubscriptionBody = z.object({
  url: urlInput,
  event_types: eventTypesInput.optional(),
  description: optionalText(1000),
});

export const updateSubscriptionBody = z.object({
  url: urlInput.optional(),
  event_types: eventTypesInput.optional(),
  description: optionalText(1000),
  active: booleanInput.optional(),
});

export const rotateSecretBody = z.object({
  overlap_seconds: z.coerce
    .number({ error: 'must be a number of seconds from 0 to 86400' })
    .int('must be a whole number of seconds')
    .min(0, 'must be from 0 to 86400')
    .max(86_400, 'must be from 0 to 86400')
    .default(0),
});

export const subscriptionOut = z.object({
  id,
  organization_id: id,
  url: z.string(),
  event_types: z.array(z.string()),
  active: z.boolean(),
  description: z.string().nullable(),
  created_at: timestamp,
  updated_at: timestamp,
  signing_secret: z.string().optional().describe('whsec_…: only on creation and rotation'),
  previous_secret_expires_at: timestamp.nullable().optional().describe('Until then the previous secret also signs (rotation with overlap_seconds)'),
}).meta({ id: 'Subscription' });

export const deliveryOut = z.object({
  id,
  subscription_id: id,
  event_id: z.string(),
  event_type: z.string(),
  status: z.enum(['pending', 'succeeded', 'failed', 'dead']),
  attempts: z.number().int(),
  next_attempt_at: timestamp,
  last_status_code: z.number().int().nullable(),
  last_error: z.string().nullable(),
  response_body: z.string().nullable().optional().describe('First 8 KB of the last response; only on GET /webhooks/deliveries/{id}'),
  created_at: timestamp,
  updated_at: timestamp,
  delivered_at: timestamp.nullable(),
}).meta({ id: 'Delivery' });
