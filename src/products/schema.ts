import { z } from 'zod';
import { enumFilter, filterInput, moneyInput, optionalLine, optionalText, requiredText, SKU_MAX, storableJson } from '../schema/input.js';
import { id, money, timestamp } from '../schema/output.js';

export const productTypes = ['physical', 'digital', 'service'] as const;
export const productStatuses = ['active', 'draft', 'archived'] as const;

/** A JSON object of free-form attributes (e.g. {"size": "M"}); null means {}. Replaced as a whole, never merged. */
export const attributesInput = z
  .union([z.record(z.string(), z.unknown()), z.null()], { error: 'must be a JSON object' })
  .transform((v) => v ?? {})
  .refine(storableJson, 'must not contain NUL characters or unpaired surrogates')
  .refine((v) => JSON.stringify(v).length <= 10_000, 'must be at most 10000 characters as JSON');

/** SKUs are trimmed and compared exactly (case-sensitive). */
export const skuInput = requiredText(SKU_MAX);

/** A product's name. */
export const productNameInput = requiredText(200);

/** A variant's own fields, as the API and the import (src/imports/schema.ts) both take them. */
export const variantFields = {
  name: optionalLine(200),
  price: moneyInput.optional(),
  attributes: attributesInput.optional(),
};

export const createVariantBody = z.object({ sku: skuInput, ...variantFields });
export const updateVariantBody = z.object({ sku: skuInput.optional(), ...variantFields });
export type VariantInput = z.output<typeof createVariantBody>;
export type VariantChanges = z.output<typeof updateVariantBody>;

/** A product's optional fields, as the API and the import both take them. */
export const productFields = {
  brand: optionalLine(200),
  category: optionalLine(200),
  description: optionalText(10_000),
};

export const createProductBody = z
  .object({
    sku: skuInput,
    name: productNameInput,
    type: z.enum(productTypes).default('physical'),
    status: z.enum(productStatuses).default('active'),
    ...productFields,
    variants: z.array(createVariantBody).max(1000, 'must have at most 1000 variants').optional(),
  })
  .superRefine((product, ctx) => {
    const seen = new Set<string>();
    product.variants?.forEach((variant, index) => {
      if (seen.has(variant.sku)) {
        ctx.addIssue({ code: 'custom', path: ['variants', index, 'sku'], message: `the SKU "${variant.sku}" is given to more than one variant` });
      }
      seen.add(variant.sku);
    });
  });
export type ProductInput = z.output<typeof createProductBody>;

export const updateProductBody = z.object({
  sku: skuInput.optional(),
  name: productNameInput.optional(),
  type: z.enum(productTypes).optional(),
  status: z.enum(productStatuses).optional(),
  ...productFields,
});
export type ProductChanges = z.output<typeof updateProductBody>;

export const listProductsQuery = z.object({
  type: enumFilter(productTypes),
  status: enumFilter(productStatuses),
  brand: filterInput.describe('Exact match'),
  q: filterInput.describe('Case-insensitive substring of the product name, the product SKU or any variant SKU'),
});
export type ProductFilters = z.output<typeof listProductsQuery>;

export const variantOut = z.object({
  id,
  product_id: id,
  sku: z.string(),
  name: z.string().nullable(),
  price: money.nullable(),
  attributes: z.record(z.string(), z.unknown()),
  created_at: timestamp,
  updated_at: timestamp,
}).meta({ id: 'Variant' });

export const productOut = z.object({
  id,
  sku: z.string(),
  name: z.string(),
  type: z.enum(productTypes),
  status: z.enum(productStatuses),
  brand: z.string().nullable(),
  category: z.string().nullable(),
  description: z.string().nullable(),
  created_at: timestamp,
  updated_at: timestamp,
  variants: z.array(variantOut).describe('Every variant of the product, ordered by id'),
}).meta({ id: 'Product' });
