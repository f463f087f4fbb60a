import { z } from 'zod';
import { jsonList, type Api } from '../http/api.js';
import type { AppDeps } from '../http/deps.js';
import { createProductBody, createVariantBody, listProductsQuery, productOut, updateProductBody, updateVariantBody, variantOut } from './schema.js';
import { addVariant, createProduct, deleteProduct, deleteVariant, getProduct, listProducts, updateProduct, updateVariant } from './service.js';

export function productRoutes(api: Api, { db }: AppDeps): void {
  api.tag('Products', 'The catalogue: products and their variants');
  const tag = 'Products';
  const one = z.object({ product: productOut });
  const variantAndProduct = z.object({ variant: variantOut, product: productOut });
  const skuConflict = { 409: 'The SKU is already used by another product or variant of the workspace (the message names it)' };
  const money = 'Money (`price`) is accepted as a number or a decimal string, zero or more with at most 2 decimals, and returned as a two-decimal string ("12.50") or null.';

  api.route(
    {
      method: 'post', path: '/products', tag, auth: 'session', status: 201, body: createProductBody, response: one,
      summary: 'Create a product, optionally with its variants',
      description:
        `type defaults to physical, status to active. SKUs are unique per workspace (products and variants each), compared exactly. ${money} ` +
        'The product and its variants are written in one transaction: if any variant fails, nothing is written. ' +
        'Two variants of the body with the same SKU are 422 naming the second (variants.N.sku).',
      errors: skuConflict,
    },
    async ({ body, auth }) => ({ product: await db.transaction((trx) => createProduct(trx, auth.access, body)) }),
  );

  api.route(
    {
      method: 'get', path: '/products', tag, auth: 'session', query: listProductsQuery, response: z.object({ products: z.array(productOut) }),
      summary: 'Every product of the workspace with its variants embedded (unpaginated, ordered by id), optionally filtered',
      description: 'type, status and brand are exact matches; q is a case-insensitive substring of the name, the SKU or any variant SKU (% and _ are literal). Empty values are ignored.',
    },
    async ({ query, auth }) => jsonList('products', listProducts(db, auth.access, query)),
  );

  api.route(
    { method: 'get', path: '/products/{id}', tag, auth: 'session', response: one, summary: 'One product with its variants (ordered by id)' },
    async ({ params, auth }) => ({ product: await getProduct(db, auth.access, params.id) }),
  );

  api.route(
    {
      method: ['patch', 'put'], path: '/products/{id}', tag, auth: 'session', body: updateProductBody, response: one,
      summary: 'Change a product (partial: omitted fields keep their value)',
      description: 'Variants are not changed here (a `variants` key is ignored): use the variant endpoints.',
      errors: skuConflict,
    },
    async ({ params, body, auth }) => ({ product: await db.transaction((trx) => updateProduct(trx, auth.access, params.id, body)) }),
  );

  api.route(
    {
      method: 'delete', path: '/products/{id}', tag, auth: 'session', response: one,
      summary: 'Delete a product and its variants; answers the snapshot taken before removal',
    },
    async ({ params, auth }) => ({ product: await db.transaction((trx) => deleteProduct(trx, auth.access, params.id)) }),
  );

  api.route(
    {
      method: 'post', path: '/products/{id}/variants', tag, auth: 'session', status: 201, body: createVariantBody, response: variantAndProduct,
      summary: 'Add a variant to a product; answers the new variant and the product as it now is',
      description: `The variant SKU must be unique in the workspace. attributes defaults to {}. ${money} The product's updated_at moves too.`,
      errors: skuConflict,
    },
    async ({ params, body, auth }) => ({ ...(await db.transaction((trx) => addVariant(trx, auth.access, params.id, body))) }),
  );

  api.route(
    {
      method: ['patch', 'put'], path: '/products/{id}/variants/{variant_id}', tag, auth: 'session', body: updateVariantBody, response: variantAndProduct,
      summary: 'Change a variant (partial: omitted fields keep their value); answers the variant and its product',
      description: `attributes, when given, replaces the whole object (no merge). ${money} A variant of another product is 404.`,
      errors: skuConflict,
    },
    async ({ params, body, auth }) => ({ ...(await db.transaction((trx) => updateVariant(trx, auth.access, params.id, params.variant_id, body))) }),
  );

  api.route(
    {
      method: 'delete', path: '/products/{id}/variants/{variant_id}', tag, auth: 'session', response: variantAndProduct,
      summary: 'Delete a variant; answers its snapshot taken before removal and the product as it now is',
      description: 'A variant of another product is 404.',
    },
    async ({ params, auth }) => ({ ...(await db.transaction((trx) => deleteVariant(trx, auth.access, params.id, params.variant_id))) }),
  );
}
