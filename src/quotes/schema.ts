import { z } from 'zod';
import { booleanInput, currencyInput, dateInput, emailInput, enumFilter, filterInput, idFilterInput, idInput, moneyInput, optionalLine, optionalText, percentInput, quantityInput, requiredText, SKU_MAX } from '../schema/input.js';
import { calendarDate, currency, id, money, quantity, timestamp } from '../schema/output.js';

export const quoteStatuses = ['draft', 'sent', 'accepted', 'declined', 'cancelled', 'paid'] as const;
export type QuoteStatus = (typeof quoteStatuses)[number];

export const lineInput = z.object({
  sku: optionalLine(SKU_MAX),
  description: optionalText(2000),
  quantity: quantityInput.refine((v) => v !== null, 'is required').optional().default('1'),
  price: moneyInput.optional(),
});
export type LineInput = z.output<typeof lineInput>;

export const lineChanges = z.object({
  sku: optionalLine(SKU_MAX),
  description: optionalText(2000),
  quantity: quantityInput.refine((v) => v !== null, 'must not be empty').optional(),
  price: moneyInput.refine((v) => v !== null, 'must not be empty').optional(),
});
export type LineChanges = z.output<typeof lineChanges>;

const customerInput = z.object({ email: emailInput, name: optionalLine(200), company: optionalLine(200) });

const quoteFields = {
  currency: currencyInput.optional(),
  discount_amount: moneyInput.optional(),
  tax_rate: percentInput.optional(),
  notes: optionalText(10_000),
  valid_until: dateInput.optional(),
};

export const createQuoteBody = z
  .object({
    customer_id: idInput.optional(),
    customer: customerInput.optional(),
    channel_id: idInput.optional(),
    ...quoteFields,
    lines: z.array(lineInput).max(500, 'must have at most 500 lines').optional(),
  })
  .refine((q) => !(q.customer_id !== undefined && q.customer !== undefined), { message: 'give customer_id or customer, not both', path: ['customer_id'] })
  // Without this an empty or unreadable body would make an empty draft and spend a quote number.
  .refine((q) => q.customer_id !== undefined || q.customer !== undefined, { message: 'customer_id or customer {email, name, company} is required', path: ['customer'] });
export type QuoteInput = z.output<typeof createQuoteBody>;

export const externalQuoteBody = createQuoteBody.and(z.object({ external_id: optionalLine(200) }));

export const updateQuoteBody = z.object(quoteFields);
export type QuoteChanges = z.output<typeof updateQuoteBody>;

/**
 * A draft's whole form (the app's edit page): its fields as PATCH /quotes/{id} takes them, and every line in the order
 * the user wants, an existing one naming its `id`, a new one without.
 */
export const draftBody = updateQuoteBody.extend({
  lines: z.array(lineInput.extend({ id: idInput.optional() })).max(500, 'must have at most 500 lines').optional().default([]),
});
export type DraftInput = z.output<typeof draftBody>;
export type DraftLine = DraftInput['lines'][number];

/**
 * A customer's answer on the quote page: the full name they typed, for an acceptance the ticked box saying they accept
 * the quote and its terms, for a decline an optional reason.
 */
export const acceptBody = z.object({
  name: requiredText(200).describe('The full name of the person accepting'),
  agree: booleanInput.refine((v) => v, 'tick the box to accept the quote and its terms').describe('"I accept this quote and its terms": must be true'),
});
export const declineBody = z.object({
  name: requiredText(200).describe('The full name of the person declining'),
  reason: optionalText(2000).describe('Why, if they say'),
});

/** `POST /quotes/{id}/accept` and `/decline` by a user recording the customer's answer: who answered, when known. */
export const recordAcceptBody = z.object({ name: optionalLine(200).describe('The full name of the person who accepted') });
export const recordDeclineBody = z.object({
  name: optionalLine(200).describe('The full name of the person who declined'),
  reason: optionalText(2000).describe('Why, if they said'),
});

export const sendQuoteBody = z.object({ notify: booleanInput.optional().describe('false: mark sent without mailing the customer') });

export const listQuotesQuery = z.object({
  status: enumFilter(quoteStatuses),
  channel_id: idFilterInput,
  customer_id: idFilterInput,
  q: filterInput.describe('Case-insensitive substring of the quote number, customer name or customer email'),
});
export type QuoteFilters = z.output<typeof listQuotesQuery>;


const answerFields = {
  name: z.string().nullable().describe('The full name typed by the customer (or given by the user who recorded the answer; null when none was)'),
  ip: z.string().nullable().describe('The address the answer came from (X-Forwarded-For only with TRUST_PROXY=1)'),
  user_agent: z.string().nullable().describe('The browser\'s User-Agent, at most 500 characters'),
  actor: z.enum(['customer', 'user', 'api']).describe('customer: on the quote page; user or api: recorded through the API or the app'),
};

export const acceptanceOut = z.object({
  ...answerFields,
  accepted_at: timestamp,
  content_sha256: z.string().regex(/^[0-9a-f]{64}$/).describe(
    'SHA-256 (hex) of the content accepted: RFC 8785 canonical JSON of the quote number, currency, lines, totals, validity, notes and terms',
  ),
}).meta({ id: 'QuoteAcceptance' });

export const declineOut = z.object({
  ...answerFields,
  declined_at: timestamp,
  reason: z.string().nullable(),
}).meta({ id: 'QuoteDecline' });

export const quoteOut = z.object({
  id,
  quote_number: z.string().describe('Q-<year>-<6 digits>'),
  status: z.enum(quoteStatuses),
  currency,
  subtotal: money,
  discount_amount: money,
  tax_rate: z.string().regex(/^\d+(\.\d{1,4})?$/).describe('Percent, e.g. "8.25"'),
  tax_amount: money,
  total: money,
  customer_id: id.nullable(),
  customer_name: z.string().nullable(),
  customer_email: z.string().nullable(),
  channel_id: id.nullable(),
  notes: z.string().nullable(),
  valid_until: calendarDate.nullable(),
  public_token: z.string(),
  external_id: z.string().nullable(),
  sent_at: timestamp.nullable(),
  viewed_at: timestamp.nullable(),
  accepted_at: timestamp.nullable(),
  declined_at: timestamp.nullable(),
  cancelled_at: timestamp.nullable(),
  paid_at: timestamp.nullable(),
  created_at: timestamp,
  updated_at: timestamp,
  acceptance: acceptanceOut.nullable().describe('Who accepted, when, from where, and the hash of what they accepted; null until accepted'),
  decline: declineOut.nullable().describe('Who declined, when, from where, and why; null unless declined'),
}).meta({ id: 'Quote' });

export const lineOut = z.object({
  id,
  quote_id: id,
  variant_id: id.nullable(),
  sku: z.string().nullable(),
  description: z.string().nullable(),
  quantity,
  price: money,
  line_total: money,
  created_at: timestamp,
  updated_at: timestamp,
}).meta({ id: 'QuoteLine' });

export const activityOut = z.object({
  id,
  type: z.string(),
  actor: z.enum(['user', 'customer', 'api', 'system']),
  message: z.string(),
  created_at: timestamp,
}).meta({ id: 'Activity' });
