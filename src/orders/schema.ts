import { z } from 'zod';
import { currencyInput, emailInput, enumFilter, filterInput, idFilterInput, idInput, instantInput, moneyInput, optionalLine, optionalText, quantityInput, requiredText, SKU_MAX } from '../schema/input.js';
import { currency, id, money, quantity, timestamp } from '../schema/output.js';

export const orderStatuses = ['pending', 'paid', 'fulfilled', 'cancelled', 'refunded'] as const;


export const itemInput = z.object({
  sku: optionalLine(SKU_MAX),
  description: optionalText(2000),
  quantity: quantityInput.refine((v) => v !== null, 'is required').optional().default('1'),
  price: moneyInput.refine((v) => v !== null, 'is required'),
});
export type ItemInput = z.output<typeof itemInput>;

export const externalOrderBody = z.object({
  external_source: requiredText(100)
    .refine((v) => v !== 'quote', 'the source "quote" is reserved for orders converted from quotes')
    .default('api'),
  external_id: requiredText(200),
  order_number: optionalLine(100),
  status: z.enum(orderStatuses, { error: `must be one of ${orderStatuses.join(', ')}` }).default('pending'),
  currency: currencyInput.default('USD'),
  customer: z.object({ email: emailInput, name: optionalLine(200) }).optional(),
  channel_id: idInput.optional(),
  placed_at: instantInput.optional(),
  notes: optionalText(10_000),
  items: z.array(itemInput).max(1000, 'must have at most 1000 items').default([]),
});
export type ExternalOrderInput = z.output<typeof externalOrderBody>;

export const updateOrderBody = z.object({
  status: z.enum(orderStatuses, { error: `must be one of ${orderStatuses.join(', ')}` }).optional(),
  notes: optionalText(10_000),
});

export const listOrdersQuery = z.object({
  status: enumFilter(orderStatuses),
  channel_id: idFilterInput,
  customer_id: idFilterInput,
  q: filterInput.describe('Case-insensitive substring of the order number, external id, customer name or customer email'),
});
export type OrderFilters = z.output<typeof listOrdersQuery>;

export const orderOut = z.object({
  id,
  order_number: z.string().nullable(),
  external_source: z.string(),
  external_id: z.string(),
  status: z.enum(orderStatuses),
  currency,
  subtotal: money,
  discount_amount: money,
  tax_amount: money,
  total: money,
  customer_id: id.nullable(),
  channel_id: id.nullable(),
  quote_id: id.nullable(),
  notes: z.string().nullable(),
  placed_at: timestamp.nullable(),
  created_at: timestamp,
  updated_at: timestamp,
}).meta({ id: 'Order' });

export const itemOut = z.object({
  id,
  order_id: id,
  sku: z.string().nullable(),
  description: z.string().nullable(),
  quantity,
  price: money,
  line_total: money,
  created_at: timestamp,
  updated_at: timestamp,
}).meta({ id: 'OrderItem' });
