import { PassThrough, Readable } from 'node:stream';
import formidable from 'formidable';
import type { Context } from 'koa';
import type { Api } from '../http/api.js';
import type { AppDeps } from '../http/deps.js';
import { HttpError, Validation } from '../errors.js';
import { MAX_IMPORT_BYTES, TooLarge, type ByteSource } from './csv.js';
import { importOut, importQuery, importUrlBody } from './schema.js';
import { fetchCsv, importCsv, type ImportKind } from './service.js';

export function importRoutes(api: Api, { db, config }: AppDeps): void {
  const errors = {
    413: 'The file is larger than 20 MB (also while fetching a URL)',
    422: 'A required column is missing (the message names it), the file has more than 50,000 rows, the CSV cannot be read, a product import ran past its window, or on_error=abort and a row failed (then `data.import` holds the report)',
    502: 'The import URL could not be fetched or answered other than 2xx',
  };
  const how =
    'Send the CSV as multipart/form-data (field `file`), as a raw text/csv body, or as JSON {url} for the server to fetch (http/https, ' +
    'private addresses refused unless in OUTBOUND_ALLOWED_CIDRS). The file is streamed, never held whole. `dry_run=1` writes nothing and reports ' +
    'what would happen; `on_error=skip` (default) applies the good rows, `on_error=abort` writes nothing if any row fails. Each error names the ' +
    'spreadsheet line (the header is line 1) and the field. Limits: 20 MB, 50,000 rows.';

  const route = (kind: ImportKind, summary: string, description: string) =>
    api.route(
      {
        method: 'post', path: `/${kind}/import`, tag: 'Imports', auth: 'session', query: importQuery, body: importUrlBody, upload: { field: 'file' },
        response: importOut, errors, summary, description: `${description} ${how}`,
      },
      async ({ ctx, query, body, auth }) => {
        const upload = body.url ? { source: await fetchCsv(body.url, config.OUTBOUND_ALLOWED_CIDRS), settled: Promise.resolve() } : await uploadedFile(ctx);
        try {
          const report = await importCsv(db, auth.access, kind, upload.source, {
            dryRun: query.dry_run ?? false,
            onError: query.on_error ?? 'skip',
            windowSeconds: config.IMPORT_WINDOW_SECONDS,
          });
          return { import: report };
        } finally {
          // A multipart body is read to its end (the rest discarded) even when the import stopped early, so the answer reaches the client.
          if (upload.source instanceof PassThrough) upload.source.destroy();
          await upload.settled.catch(() => undefined);
        }
      },
    );

  route(
    'products',
    'Import products and variants from a CSV (one row per variant)',
    'Columns: product_sku, name, variant_sku (required), type, status, brand, category, description, variant_name, price, attr:<name>. ' +
      'Rows are grouped into products by product_sku and upserted by product SKU, then variant SKU; product columns are read from the first row of each product. ' +
      'A Shopify product export is recognised by its header and mapped (Handle, Title, Vendor, Type, Option1 Name/Value..., Variant SKU, Variant Price). ' +
      'Counts are rows (one row is one variant). Emits no events.',
  );
  route(
    'orders',
    'Import orders from a CSV (one row per item)',
    'Columns: order_number, external_id, external_source, status, currency, customer_email, customer_name, channel_id, placed_at, sku, description, quantity, price. ' +
      'Adjacent rows with the same (external_source, external_id), or (external_source, order_number) when external_id is empty, make one order; ' +
      'order columns are read from its first row. created/updated/unchanged count orders, failed counts rows. Emits order.created / order.updated ' +
      '(an unchanged order emits nothing) and customer.created / customer.updated for customers upserted by email.',
  );
}

interface Upload {
  source: ByteSource;
  /** Settles when the request body has been read (multipart) or at once. */
  settled: Promise<unknown>;
}

const csvTypes = ['text/csv', 'text/plain', 'application/csv', 'text/comma-separated-values', 'application/vnd.ms-excel', 'application/octet-stream'];

/** The request body as the CSV's bytes: raw (text/csv and kin) or the `file` part of a multipart body, streamed. */
async function uploadedFile(ctx: Context): Promise<Upload> {
  if (Number(ctx.get('content-length') || 0) > MAX_IMPORT_BYTES) throw new TooLarge();
  if (ctx.is('multipart')) return multipartFile(ctx);
  if (ctx.is(csvTypes)) return { source: ctx.req, settled: Promise.resolve() };
  throw new Validation('file', 'file is required: send the CSV as multipart/form-data (field "file"), as a text/csv body, or JSON {"url": "..."}.');
}

/**
 * formidable (koa-body's multipart parser) hands the `file` part to a PassThrough as it arrives; it
 * waits for each write to be taken, so the upload flows at the pace the import reads it.
 */
async function multipartFile(ctx: Context): Promise<Upload> {
  const pass = new PassThrough();
  let fileStarted!: (started: boolean) => void;
  const started = new Promise<boolean>((resolve) => (fileStarted = resolve));
  const form = formidable({
    maxFiles: 1,
    maxFileSize: 2 * MAX_IMPORT_BYTES, // our own byte count answers 413 first; formidable's limit is a backstop
    allowEmptyFiles: true,
    minFileSize: 0,
    filter: ({ name }) => name === 'file',
    fileWriteStreamHandler: () => {
      fileStarted(true);
      return pass;
    },
  });
  const parsed = form.parse(ctx.req).then(
    ([fields]) => {
      fileStarted(false);
      pass.end();
      return fields;
    },
    (err: { httpCode?: number; message?: string }) => {
      fileStarted(false);
      const failure = err.httpCode === 413 ? new TooLarge() : new HttpError(400, `The multipart body could not be read: ${err.message ?? 'malformed'}.`);
      pass.destroy(failure);
      throw failure;
    },
  );
  if (await started) return { source: pass, settled: parsed };
  const fields = await parsed;
  const text = fields.file?.[0];
  if (typeof text === 'string') return { source: Readable.from([Buffer.from(text)]), settled: parsed };
  throw new Validation('file', 'file is required: send the CSV in the multipart field "file".');
}
