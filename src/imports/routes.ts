import type { IncomingMessage } from 'node:http';
import { PassThrough, Readable, Writable } from 'node:stream';
import formidable, { errors as formidableErrors } from 'formidable';
import type { Context } from 'koa';
import type { Api } from '../http/api.js';
import { multipartRefusal, type FormidableFailure } from '../http/body.js';
import type { AppDeps } from '../http/deps.js';
import { HttpError, Validation } from '../errors.js';
import { MAX_IMPORT_BYTES, TooLarge, type ByteSource } from './csv.js';
import { importOut, importQuery, importUrlBody } from './schema.js';
import { fetchCsv, importCsv, type ImportKind, type ImportOptions } from './service.js';

export function importRoutes(api: Api, { db, config }: AppDeps): void {
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
  from: NonNullable<ImportOptions['from']>;
  /** Called once the import is over: what is left of a request body is read and discarded, so the answer reaches the client. */
  finish(): void;
}

async function fetchedFile(url: string, allowedCidrs: string[]): Promise<Upload> {
  const response = await fetchCsv(url, allowedCidrs);
  return { source: response, from: { what: 'the import URL', failureStatus: 502, owned: response }, finish: () => response.destroy() };
}

const csvTypes = ['text/csv', 'text/plain', 'application/csv', 'text/comma-separated-values', 'application/vnd.ms-excel', 'application/octet-stream'];

/** The request body as the CSV's bytes: raw (text/csv and kin) or the `file` part of a multipart body, streamed. */
async function uploadedFile(ctx: Context): Promise<Upload> {
  if (Number(ctx.get('content-length') || 0) > MAX_IMPORT_BYTES) throw new TooLarge();
  const finish = () => drain(ctx.req);
  if (ctx.is('multipart')) return multipartFile(ctx, finish);
  if (ctx.is(csvTypes)) return { source: ctx.req, from: { what: 'the upload', failureStatus: 408 }, finish };
  throw new Validation('file', 'file is required: send the CSV as multipart/form-data (field "file"), as a text/csv body, or JSON {"url": "..."}.');
}

/** Reads what is left of a request body into nothing (a client still sending would not read an answer sent meanwhile). */
function drain(req: IncomingMessage): void {
  if (req.complete || req.destroyed) return;
  req.removeAllListeners('data');
  req.on('error', () => undefined);
  req.resume();
}

/** A refusal of the multipart body, with the import's own words where they help. */
function multipartError(err: FormidableFailure): HttpError {
  if (err.code === formidableErrors.maxFieldsExceeded) {
    return new TooLarge(`The multipart body has more than ${MAX_FIELDS} form fields; send the file in the field "file" and the options in the query.`);
  }
  if (err.code === formidableErrors.aborted) return new HttpError(400, 'The upload was interrupted before its end; nothing was imported.');
  return multipartRefusal(err, { fields: MAX_FIELDS, fieldBytes: MAX_IMPORT_BYTES, fileBytes: MAX_IMPORT_BYTES });
}

/** An import's form needs the file alone; a few fields more are let through (a form's submit button, say). */
const MAX_FIELDS = 100;

/**
 * formidable (koa-body's multipart parser) hands the `file` part to a PassThrough as it arrives; it
 * waits for each write to be taken, so the upload flows at the pace the spool writes it. Every failure of
 * the body reaches the reader of the PassThrough, or nobody: both streams always have an error listener.
 */
async function multipartFile(ctx: Context, finish: () => void): Promise<Upload> {
  const pass = new PassThrough();
  pass.on('error', () => undefined);
  // formidable destroys its file stream, without a reason, as it fails; the PassThrough then ends with the reason.
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      if (pass.write(chunk)) callback();
      else pass.once('drain', () => callback());
    },
  });
  sink.on('error', () => undefined);
  let fileStarted!: (started: boolean) => void;
  const started = new Promise<boolean>((resolve) => (fileStarted = resolve));
  const form = formidable({
    maxFiles: 1,
    maxFields: MAX_FIELDS,
    maxFieldsSize: MAX_IMPORT_BYTES,
    maxFileSize: 2 * MAX_IMPORT_BYTES, // the spool's own byte count answers 413 first; formidable's limit is a backstop
    allowEmptyFiles: true,
    minFileSize: 0,
    filter: ({ name }) => name === 'file',
    fileWriteStreamHandler: () => {
      fileStarted(true);
      return sink;
    },
  });
  const parsed = form.parse(ctx.req).then(
    ([fields]) => {
      fileStarted(false);
      pass.end();
      return fields;
    },
    (err: FormidableFailure) => {
      fileStarted(false);
      const failure = multipartError(err);
      pass.destroy(failure);
      throw failure;
    },
  );
  // The import learns of a failure from the PassThrough; the promise's own rejection is handled here.
  parsed.catch(() => undefined);
  const upload = (source: ByteSource): Upload => ({ source, from: { what: 'the upload', failureStatus: 408, owned: pass }, finish });
  if (await started) return upload(pass);
  try {
    const fields = await parsed;
    const text = fields.file?.[0];
    if (typeof text === 'string') return upload(Readable.from([Buffer.from(text)]));
  } finally {
    finish();
  }
  throw new Validation('file', 'file is required: send the CSV in the multipart field "file".');
}
