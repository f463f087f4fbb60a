import type { Api } from '../http/api.js';
import type { AppDeps } from '../http/deps.js';
import { importOut, importQuery, importUrlBody } from './schema.js';
import { importCsv, type ImportKind } from './service.js';
import { fetchedFile, uploadedFile } from './upload.js';

export function importRoutes(api: Api, { db, config }: AppDeps): void {
  api.tag('Imports', 'CSV imports of products and orders (uploaded, or fetched from a URL)');
  const errors = {
    408: 'The upload sent nothing for 30 s and was cut off',
    413: 'The file is larger than 20 MB (also while fetching a URL), or a multipart body has more parts, fields or field bytes than an import needs (the message names the limit)',
    422:
      'A required column is missing (the message names it), the file has more than 50,000 rows, the header more than 1,000 columns or 1 MB, ' +
      'the CSV cannot be read, the import ran past its window, or on_error=abort and a row failed (then `data.import` holds the report)',
    502: 'The import URL could not be fetched, answered other than 2xx, broke off, or sent nothing for 30 s',
  };
  const how =
    'Send the CSV as multipart/form-data (field `file`), as a raw text/csv body, or as JSON {url} for the server to fetch (http/https, ' +
    'private addresses refused unless in OUTBOUND_ALLOWED_CIDRS). The file is first stored whole in a private temporary file (removed afterwards), ' +
    'so nothing in the database waits on a slow upload; then it is read row by row. `dry_run=1` writes nothing and reports ' +
    'what would happen; `on_error=skip` (default) applies the good rows, `on_error=abort` writes nothing if any row fails. Each error names the ' +
    'spreadsheet line (the header is line 1) and the field, in line order. Limits: 20 MB, 50,000 rows, 1 MB a row (a longer row is a row error), ' +
    '1,000 columns, IMPORT_WINDOW_SECONDS (10 minutes) from the request\'s start to the end of the import, 30 s without a byte. ' +
    'Imports of one kind into one workspace run one after another, so each report counts what that import did.';

  const route = (kind: ImportKind, summary: string, description: string) =>
    api.route(
      {
        method: 'post', path: `/${kind}/import`, tag: 'Imports', auth: 'session', query: importQuery, body: importUrlBody, upload: { field: 'file' },
        response: importOut, errors, summary, description: `${description} ${how}`,
      },
      async ({ ctx, query, body, auth }) => {
        const startedAt = Date.now();
        const upload = body.url ? await fetchedFile(body.url, config.OUTBOUND_ALLOWED_CIDRS) : await uploadedFile(ctx);
        try {
          const report = await importCsv(db, auth.access, kind, upload.source, {
            dryRun: query.dry_run ?? false,
            onError: query.on_error ?? 'skip',
            windowSeconds: config.IMPORT_WINDOW_SECONDS,
            startedAt,
            from: upload.from,
          });
          return { import: report };
        } finally {
          upload.finish();
        }
      },
    );

  route(
    'products',
    'Import products and variants from a CSV (one row per variant)',
    'Columns: product_sku, name, variant_sku (required), type, status, brand, category, description, variant_name, price, attr:<name>. ' +
      'Rows are grouped into products by product_sku and upserted by product SKU, then variant SKU; product columns are read from the first row of each product. ' +
      'A Shopify product export is recognised by its header and mapped (Handle, Title, Body (HTML) or Body, Vendor, the category from Type, Custom Product Type ' +
      'or the last segment of Product Category, Standard(ized) Product Type, Status or else Published, Option1 Name/Value..., Variant SKU, Variant Price); ' +
      'its image-only rows are counted in `skipped`. A WooCommerce product export is recognised by its header (Type, SKU, Name and Published, ' +
      'Regular price or Parent) and mapped: simple, grouped and external products one variant each, a variable product\'s variation rows ' +
      '(Parent id:N or its SKU, on a later line) its variants, its own row counted in `skipped`; Published, the first category path\'s last segment, ' +
      'Sale price within its dates at the import\'s start (else Regular price); grouped and external products come with a note in `notes`. ' +
      'Counts are rows (one row is one variant). Emits no events.',
  );
  route(
    'orders',
    'Import orders from a CSV (one row per item)',
    'Columns: order_number, external_id, external_source, status, currency, customer_email, customer_name, channel_id, placed_at, sku, description, quantity, price. ' +
      'Adjacent rows with the same (external_source, external_id), or (external_source, order_number) when external_id is empty, make one order; ' +
      'order columns are read from its first row. A Shopify orders export is recognised by its header (Name, Financial Status, Lineitem price) and mapped: ' +
      'source shopify, Id or Name, statuses, Email/Billing Name, Created at, line items, Shipping as an item, Discount Amount and Taxes as the discount and tax, ' +
      'its figures checked so that the total is its Total. created/updated/unchanged count orders, failed counts rows. Emits order.created / order.updated ' +
      '(an unchanged order emits nothing) and customer.created / customer.updated for customers upserted by email.',
  );
}
