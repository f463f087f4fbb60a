/**
 * The bytes of an import as a request brings them: a raw CSV body, the `file` part of a multipart body (streamed, never
 * buffered whole), or a URL the server fetches. Shared by the API's import routes and the app's import page.
 */
import type { IncomingMessage } from 'node:http';
import { PassThrough, Readable, Writable } from 'node:stream';
import formidable, { errors as formidableErrors } from 'formidable';
import type { Context } from 'koa';
import { multipartRefusal, type FormidableFailure } from '../http/body.js';
import { HttpError, Validation } from '../errors.js';
import { MAX_IMPORT_BYTES, TooLarge, type ByteSource } from './csv.js';
import { fetchCsv, type ImportOptions } from './service.js';

export interface Upload {
  source: ByteSource;
  from: NonNullable<ImportOptions['from']>;
  /** Called once the import is over: what is left of a request body is read and discarded, so the answer reaches the client. */
  finish(): void;
  /** A multipart body's text fields, once the body has been read to its end ({} for other bodies). */
  fields(): Promise<Record<string, string>>;
  /** The file's name as the client gave it (a multipart file part's filename). */
  name?: string;
}

const noFields = () => Promise.resolve({});

export async function fetchedFile(url: string, allowedCidrs: string[]): Promise<Upload> {
  const response = await fetchCsv(url, allowedCidrs);
  return { source: response, from: { what: 'the import URL', failureStatus: 502, owned: response }, finish: () => response.destroy(), fields: noFields };
}

const csvTypes = ['text/csv', 'text/plain', 'application/csv', 'text/comma-separated-values', 'application/vnd.ms-excel', 'application/octet-stream'];

export interface UploadOptions {
  /** A multipart body without a file part reads as an empty file (a page's form may give a URL instead). */
  fileOptional?: boolean;
}

/** The request body as the CSV's bytes: raw (text/csv and kin) or the `file` part of a multipart body, streamed. */
export async function uploadedFile(ctx: Context, options: UploadOptions = {}): Promise<Upload> {
  if (Number(ctx.get('content-length') || 0) > MAX_IMPORT_BYTES) throw new TooLarge();
  const finish = () => drain(ctx.req);
  if (ctx.is('multipart')) return multipartFile(ctx, finish, options);
  if (ctx.is(csvTypes)) return { source: ctx.req, from: { what: 'the upload', failureStatus: 408 }, finish, fields: noFields };
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
async function multipartFile(ctx: Context, finish: () => void, options: UploadOptions): Promise<Upload> {
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
  let name: string | undefined;
  const started = new Promise<boolean>((resolve) => (fileStarted = resolve));
  const form = formidable({
    maxFiles: 1,
    maxFields: MAX_FIELDS,
    maxFieldsSize: MAX_IMPORT_BYTES,
    maxFileSize: 2 * MAX_IMPORT_BYTES, // the spool's own byte count answers 413 first; formidable's limit is a backstop
    allowEmptyFiles: true,
    minFileSize: 0,
    filter: ({ name }) => name === 'file',
    fileWriteStreamHandler: (file) => {
      name = (file as { originalFilename?: string | null } | undefined)?.originalFilename ?? undefined;
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
  const fields = async () =>
    Object.fromEntries(Object.entries(await parsed).flatMap(([name, values]) => (typeof values?.[0] === 'string' ? [[name, values[0]]] : [])));
  const upload = (source: ByteSource): Upload => ({ source, from: { what: 'the upload', failureStatus: 408, owned: pass }, finish, fields, name });
  if (await started) return upload(pass);
  try {
    const text = (await parsed).file?.[0];
    if (typeof text === 'string') return upload(Readable.from([Buffer.from(text)]));
    if (options.fileOptional) return upload(Readable.from([]));
  } finally {
    finish();
  }
  throw new Validation('file', 'file is required: send the CSV in the multipart field "file".');
}
