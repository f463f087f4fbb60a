import { z } from 'zod';
import { booleanInput, currencyInput, emailInput, idInput, instantInput, moneyInput, optionalText, requiredText } from '../schema/input.js';
import { attributesInput, productStatuses, productTypes, skuInput } from '../products/schema.js';
import { itemInput, orderStatuses } from '../orders/schema.js';

/** An empty cell of an enum column means "not given": the default for a new record, the stored value for an existing one. */
const emptyIsUnset = (value: unknown) => (typeof value === 'string' && value.trim() === '' ? undefined : typeof value === 'string' ? value.trim() : value);

/** The variant half of a product row (every row has one). */
export const variantRow = z.object({
  product_sku: skuInput,
  variant_sku: skuInput,
  variant_name: optionalText(200),
  price: moneyInput.optional(),
  attributes: attributesInput.optional(),
});
export type VariantRow = z.output<typeof variantRow>;

/** The product half, read from the first row of each product SKU. */
export const productRow = z.object({
  name: requiredText(200),
  type: z.preprocess(emptyIsUnset, z.enum(productTypes, { error: `must be one of ${productTypes.join(', ')}` }).optional()),
  status: z.preprocess(emptyIsUnset, z.enum(productStatuses, { error: `must be one of ${productStatuses.join(', ')}` }).optional()),
  brand: optionalText(200),
  category: optionalText(200),
  description: optionalText(10_000),
});
export type ProductRow = z.output<typeof productRow>;

/** One order item row; the order's own columns are read from its first row. */
export const orderRow = itemInput.extend({
  order_number: optionalText(100),
  external_id: optionalText(200),
  external_source: z.preprocess(
    emptyIsUnset,
    requiredText(100)
      .refine((v) => v !== 'quote', 'the source "quote" is reserved for orders converted from quotes')
      .optional()
      .default('import'),
  ),
  status: z.preprocess(emptyIsUnset, z.enum(orderStatuses, { error: `must be one of ${orderStatuses.join(', ')}` }).optional()),
  currency: z.preprocess(emptyIsUnset, currencyInput.optional()),
  customer_email: z.preprocess(emptyIsUnset, emailInput.optional()),
  customer_name: optionalText(200),
  channel_id: z.preprocess(emptyIsUnset, idInput.optional()),
  placed_at: instantInput.optional(),
});
export type OrderRow = z.output<typeof orderRow>;

export const importQuery = z.object({
  dry_run: booleanInput.optional().describe('1: validate and report what the import would do; write nothing'),
  on_error: z
    .preprocess(emptyIsUnset, z.enum(['skip', 'abort'], { error: 'must be skip or abort' }).optional())
    .describe('skip (default): apply the good rows and report the bad; abort: write nothing if any row fails (422)'),
});

export const importUrlBody = z.object({
  url: z
    .string()
    .trim()
    .max(2000, 'must be at most 2000 characters')
    .refine((v) => /^https?:\/\//i.test(v) && URL.canParse(v), 'must be an absolute http or https URL')
    .optional()
    .describe('With a JSON body: the address of the CSV, fetched by the server (http or https; private addresses refused)'),
});

export const importOut = z.object({
  import: z.object({
    rows: z.number().int().describe('Data rows read (one row is a variant, or an order item)'),
    created: z.number().int(),
    updated: z.number().int(),
    unchanged: z.number().int(),
    failed: z.number().int().describe('Rows not applied'),
    errors: z.array(z.object({ row: z.number().int().describe('Spreadsheet line number; the header is line 1'), field: z.string(), message: z.string() })),
  }),
});

/** What a file holds, where no path says it (the app's import form). */
export const importKindInput = z.object({
  kind: z.enum(['products', 'orders'], { error: 'choose products or orders' }),
});
