import { z } from 'zod';
import { emailInput, idInput, instantInput, optionalText, requiredText, SKU_MAX, storableJson } from '../schema/input.js';
import { id, timestamp } from '../schema/output.js';

export const eventTypes = ['page_view', 'product_view', 'add_to_cart', 'search', 'custom'] as const;
export type EventType = (typeof eventTypes)[number];

/** The id the tag keeps in localStorage; anything a backend chooses within the same alphabet. */
export const visitorIdInput = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1-64 characters of A-Z, a-z, 0-9, _ or -');

/** At most this much JSON in `properties`: events are small, and the tag sends them with keepalive (64 KB for all in flight). */
const PROPERTIES_MAX_BYTES = 4096;

const propertiesInput = z
  .union([z.record(z.string(), z.unknown()), z.null()], { error: 'must be an object' })
  .refine((v) => v === null || Buffer.byteLength(JSON.stringify(v)) <= PROPERTIES_MAX_BYTES, `must be at most ${PROPERTIES_MAX_BYTES} bytes of JSON`)
  .refine((v) => v === null || storableJson(v), 'must not contain NUL characters or unpaired surrogates')
  .optional();

export const trackEventBody = z.object({
  visitor_id: visitorIdInput,
  type: z.enum(eventTypes, { error: `must be one of ${eventTypes.join(', ')}` }),
  url: optionalText(2048),
  title: optionalText(512),
  referrer: optionalText(2048),
  sku: optionalText(SKU_MAX).describe('A product or variant SKU; both resolve to the product'),
  category: optionalText(200),
  properties: propertiesInput.describe('Free-form JSON object, at most 4096 bytes'),
  occurred_at: instantInput.optional().describe('When it happened in the browser; defaults to the time of receipt'),
});
export type TrackEventInput = z.output<typeof trackEventBody>;

/** The customer a join or a join code names: by id, or by email (upserted). */
const customerRef = {
  customer_id: idInput.optional(),
  email: emailInput.optional(),
};

export const joinBody = z.object({
  visitor_id: visitorIdInput,
  ...customerRef,
  code: requiredText(100).optional().describe('A join code from POST /track/join-codes; the only way to join with the public key'),
});
export type JoinInput = z.output<typeof joinBody>;

export const joinCodeBody = z.object(customerRef);
export type JoinCodeInput = z.output<typeof joinCodeBody>;

/** A `limit` from the query string: a whole number within [1, max]; absent or empty takes the default. */
const limitInput = (max: number, fallback: number) =>
  z
    .string()
    .optional()
    .transform((v) => (v === undefined || v.trim() === '' ? String(fallback) : v.trim()))
    .pipe(z.string().regex(/^\d{1,9}$/, `must be a whole number from 1 to ${max}`).transform(Number))
    .pipe(z.number().min(1, `must be a whole number from 1 to ${max}`).max(max, `must be a whole number from 1 to ${max}`))
    .meta({ type: 'integer', minimum: 1, maximum: max, default: fallback });

const optionalVisitor = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim()))
  .pipe(visitorIdInput.optional());

export const customerEventsQuery = z.object({ limit: limitInput(200, 50) });

export const recommendationsQuery = z.object({
  visitor_id: optionalVisitor.describe("The visitor whose recent views and categories steer the results"),
  sku: z
    .string()
    .optional()
    .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim()))
    .pipe(z.string().max(100, 'must be at most 100 characters').optional())
    .describe('A product or variant SKU: products viewed by the same visitors come first'),
  limit: limitInput(50, 10),
});

export const interestQuery = z.object({
  visitor_id: optionalVisitor.describe("Omitted: the whole workspace's recent interest"),
});

export const eventOut = z
  .object({
    id,
    visitor_id: z.string(),
    type: z.enum(eventTypes),
    url: z.string().nullable(),
    title: z.string().nullable(),
    referrer: z.string().nullable(),
    sku: z.string().nullable(),
    category: z.string().nullable(),
    properties: z.record(z.string(), z.unknown()).nullable(),
    occurred_at: timestamp,
    received_at: timestamp,
  })
  .meta({ id: 'TrackingEvent' });

export const visitorOut = z.object({ visitor_id: z.string(), customer_id: id }).meta({ id: 'Visitor' });

export const joinCodeOut = z.object({ code: z.string(), expires_at: timestamp }).meta({ id: 'JoinCode' });

export const recommendationOut = z
  .object({
    product_id: id,
    sku: z.string(),
    name: z.string(),
    brand: z.string().nullable(),
    category: z.string().nullable(),
    score: z.number().describe('Strength within its reason: co-viewing visitors, decayed category interest, or recent views'),
    reason: z.enum(['co_viewed', 'category', 'popular']).describe('Why it is recommended; results come in this order of reasons'),
  })
  .meta({ id: 'Recommendation' });

export const categoryInterestOut = z
  .object({ category: z.string(), score: z.number().describe('Σ 0.5^(age in days / 7) over the events of the category') })
  .meta({ id: 'CategoryInterest' });
