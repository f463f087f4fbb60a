import { z } from 'zod';
import { booleanInput, currencyInput, emailInput, idInput, instantInput } from '../schema/input.js';
import { productFields, productNameInput, productStatuses, productTypes, skuInput, variantFields } from '../products/schema.js';
import { externalOrderBody, itemInput, orderStatuses } from '../orders/schema.js';

// Every text field is the API's own piece (its length and its single-line rule), so the import and the API cannot drift.

/** An empty cell of an enum column means "not given": the default for a new record, the stored value for an existing one. */
const emptyIsUnset = (value: unknown) => (typeof value === 'string' && value.trim() === '' ? undefined : typeof value === 'string' ? value.trim() : value);

/** The variant half of a product row (every row has one). */
export const variantRow = z.object({
  product_sku: skuInput,
  variant_sku: skuInput,
  variant_name: variantFields.name,
  price: variantFields.price,
  attributes: variantFields.attributes,
});
export type VariantRow = z.output<typeof variantRow>;

/** The product half, read from the first row of each product SKU. */
export const productRow = z.object({
  name: productNameInput,
  type: z.preprocess(emptyIsUnset, z.enum(productTypes, { error: `must be one of ${productTypes.join(', ')}` }).optional()),
  status: z.preprocess(emptyIsUnset, z.enum(productStatuses, { error: `must be one of ${productStatuses.join(', ')}` }).optional()),
  ...productFields,
});
export type ProductRow = z.output<typeof productRow>;

/** One order item row; the order's own columns are read from its first row. */
export const orderRow = itemInput.extend({
  order_number: externalOrderBody.shape.order_number,
  external_id: z.preprocess(emptyIsUnset, externalOrderBody.shape.external_id.optional()),
  external_source: z.preprocess(emptyIsUnset, externalOrderBody.shape.external_source.removeDefault().optional().default('import')),
  status: z.preprocess(emptyIsUnset, z.enum(orderStatuses, { error: `must be one of ${orderStatuses.join(', ')}` }).optional()),
  currency: z.preprocess(emptyIsUnset, currencyInput.optional()),
  customer_email: z.preprocess(emptyIsUnset, emailInput.optional()),
  customer_name: externalOrderBody.shape.customer.unwrap().shape.name,
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

const rowIssue = z.object({ row: z.number().int().describe('Spreadsheet line number; the header is line 1'), field: z.string(), message: z.string() });

export const importOut = z.object({
  import: z.object({
    rows: z.number().int().describe('Data rows read (one row is a variant, or an order item)'),
    created: z.number().int(),
    updated: z.number().int(),
    unchanged: z.number().int(),
    failed: z.number().int().describe('Rows not applied'),
    skipped: z
      .number()
      .int()
      .describe("Rows left out as carrying no variant of their own (a Shopify product row with only an image, a WooCommerce variable product's row, whose variations are its variants); not counted in rows"),
    errors: z.array(rowIssue),
    notes: z
      .array(rowIssue)
      .describe("Rows imported with something the import could not keep (a WooCommerce grouped product's children, an external product's URL), by line; the message starts with the file's column"),
  }),
});

/** What a file holds, where no path says it (the app's import form). */
export const importKindInput = z.object({
  kind: z.enum(['products', 'orders'], { error: 'choose products or orders' }),
});
