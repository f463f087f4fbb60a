import { Writable } from 'node:stream';
import formidable from 'formidable';
import type { Context } from 'koa';
import { HttpError, Validation } from '../errors.js';
import { multipartRefusal, type FormidableFailure } from './body.js';

/** How long a small upload (a logo) may take from its first byte to its last. */
const UPLOAD_MS = 30_000;

/**
 * A small file a request brings whole (the workspace logo): the raw body, or the one file part of a multipart body
 * (named `field`, or the only file sent), read into memory up to `limit` bytes and then cut off: a longer body gives
 * `limit + 1` bytes, for the caller to refuse naming its own limit. Never written to disk.
 */
export async function smallUpload(ctx: Context, field: string, limit: number): Promise<Buffer> {
  if (ctx.is('multipart')) return multipartBytes(ctx, field, limit);
  if (ctx.is('json', 'urlencoded')) throw new Validation(field, `${field} is required: send the file as the raw body (e.g. image/png) or as multipart/form-data (field "${field}").`);
  return rawBytes(ctx, limit);
}

function rawBytes(ctx: Context, limit: number): Promise<Buffer> {
  const req = ctx.req;
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const timer = setTimeout(() => finish(new HttpError(408, 'The upload took longer than 30 s and was cut off.')), UPLOAD_MS);
    const finish = (err: Error | null) => {
      clearTimeout(timer);
      req.off('data', onData);
      if (err) return reject(err);
      // Past the limit the rest is read into nothing, so the client, still sending, reads the answer.
      if (!req.complete) req.resume();
      resolve(Buffer.concat(chunks).subarray(0, limit + 1));
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size - chunk.length <= limit) chunks.push(chunk);
      if (size > limit) finish(null);
    };
    req.on('data', onData);
    req.once('end', () => finish(null));
    req.once('error', () => finish(new HttpError(400, 'The body was interrupted before its end.')));
  });
}

async function multipartBytes(ctx: Context, field: string, limit: number): Promise<Buffer> {
  const files = new Map<string, Buffer[]>();
  const form = formidable({
    maxFiles: 1,
    maxFileSize: limit + 1,
    maxFields: 20,
    maxFieldsSize: 64 * 1024,
    allowEmptyFiles: true,
    minFileSize: 0,
    fileWriteStreamHandler: (file) => {
      const chunks: Buffer[] = [];
      files.set((file as unknown as { originalFilename?: string }).originalFilename ?? '', chunks);
      return new Writable({
        write(chunk: Buffer, _encoding, callback) {
          chunks.push(chunk);
          callback();
        },
      });
    },
  });
  let parsed: formidable.Files;
  try {
    const timer = setTimeout(() => ctx.req.destroy(), UPLOAD_MS);
    try {
      [, parsed] = await form.parse(ctx.req);
    } finally {
      clearTimeout(timer);
    }
  } catch (err) {
    const refusal = multipartRefusal(err as FormidableFailure, { fields: 20, fieldBytes: 64 * 1024, fileBytes: limit });
    if (refusal.status === 413) throw new Validation(field, `${field}: the file is larger than ${Math.round(limit / 1024)} KB.`);
    throw refusal;
  }
  const file = parsed[field]?.[0] ?? Object.values(parsed).flat()[0];
  if (!file) throw new Validation(field, `${field} is required: the multipart body has no file part "${field}".`);
  return Buffer.concat(files.get(file.originalFilename ?? '') ?? []);
}
