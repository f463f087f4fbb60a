import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import type { Readable } from 'node:stream';
import type { Knex } from 'knex';
import type { Access } from '../access.js';
import { HttpError, Validation } from '../errors.js';
import { log } from '../log.js';
import { outboundAgents, outboundPolicy, OutboundRefused } from '../webhooks/outbound.js';
import { MAX_IMPORT_BYTES, openCsv, TooLarge, type ByteSource, type CsvRow } from './csv.js';
import { orderImporter } from './orders.js';
import { productImporter } from './products.js';
import { emptyReport, type BatchWrite, type Importer, type ImportReport } from './report.js';

export type ImportKind = 'products' | 'orders';
export type { ImportReport };

export interface ImportProgress {
  rows: number;
  failed: number;
  /** Bytes of the file read so far. */
  bytes: number;
}

export interface ImportOptions {
  /** Validate and report what the import would do; write nothing. */
  dryRun?: boolean;
  /** skip (default): apply the good rows; abort: write nothing if any row fails (422). */
  onError?: 'skip' | 'abort';
  /** Product imports stop past this window and write nothing (IMPORT_WINDOW_SECONDS, spec §8: 10 minutes). */
  windowSeconds: number;
  /** Called after each batch. */
  onProgress?: (progress: ImportProgress) => void;
  /** Aborting stops the import; nothing is written. */
  signal?: AbortSignal;
}

/**
 * Rows read, validated and written at a time. Two batches are held at once (one written while the next is read),
 * long enough to outlive the collector's young generation, so their size sets how far the heap grows before a
 * full collection: with 5,000 rows of a realistic product file (~250 bytes a row) the server grew by ~100 MB over
 * a 50,000-row import, with 2,000 by 11–79 MB (12 imports under load), no slower.
 */
const BATCH_ROWS = 2000;

class Rollback extends Error {}

/**
 * Imports a CSV of products or orders into the workspace. The import owns its transaction, since
 * only the outcome decides between commit and rollback: a dry run, an `abort` import with a failed
 * row, a file over the limits, a product import past its window, or an abort signal all roll back,
 * so nothing is ever half-written. Rows stream through the CSV reader and are written a batch at a time.
 * After a commit that created rows, the grown tables are analysed, so plans see the new sizes at once.
 */
export async function importCsv(db: Knex, access: Access, kind: ImportKind, source: ByteSource, options: ImportOptions): Promise<ImportReport> {
  const csv = await openCsv(source);
  const importer: Importer = kind === 'products' ? productImporter(csv.header) : orderImporter(csv.header);
  const report = emptyReport();
  const deadline = kind === 'products' ? Date.now() + options.windowSeconds * 1000 : Infinity;
  const checkpoint = () => {
    if (options.signal?.aborted) throw new HttpError(499, 'The import was interrupted; nothing was written.');
    if (Date.now() >= deadline) {
      throw new HttpError(422, `The product import ran past its ${describeWindow(options.windowSeconds)} window and was stopped; nothing was written. Split the file and import the parts.`);
    }
  };
  const progress = () => options.onProgress?.({ rows: report.rows, failed: report.failed, bytes: csv.bytesRead() });
  let committed = false;
  try {
    await db.transaction(async (trx) => {
      // One batch is written while the next is read and validated (node and PostgreSQL each on a core).
      let writing: Promise<void> = Promise.resolve();
      const start = (write: BatchWrite) => {
        writing = writing.then(async () => {
          checkpoint();
          await write(trx, access, report);
          progress();
        });
        // Awaited before the next batch and at the end; this keeps a failure meanwhile from counting as unhandled.
        writing.catch(() => undefined);
      };
      try {
        let batch: CsvRow[] = [];
        for await (const row of csv.rows) {
          batch.push(row);
          if (batch.length < BATCH_ROWS) continue;
          const write = importer.prepare(batch, false);
          batch = [];
          await writing;
          start(write);
        }
        const write = importer.prepare(batch, true);
        await writing;
        start(write);
        await writing;
      } finally {
        // Whatever failed, no statement of this transaction is still running when it ends.
        await writing.catch(() => undefined);
      }
      checkpoint();
      if (options.dryRun || (options.onError === 'abort' && report.failed > 0)) throw new Rollback();
    });
    committed = true;
  } catch (err) {
    if (!(err instanceof Rollback)) throw err;
  }
  if (committed && report.created > 0) {
    // Table names are constants of the importers. VACUUM runs outside a transaction, one table a statement.
    const statements = [`analyze ${importer.tables.join(', ')}`, ...importer.rewritten.map((table) => `vacuum (analyze) ${table}`)];
    for (const statement of statements) {
      await db.raw(statement).catch((err: unknown) => log.warn('statistics after import failed', { statement, error: (err as Error).message }));
    }
  }
  // A dry run answers as the real import would: with on_error=abort and a failed row, that is this 422.
  if (options.onError === 'abort' && report.failed > 0) {
    throw new HttpError(422, `${report.failed} of ${report.rows} rows failed, so nothing was imported (on_error=abort).`, { import: report });
  }
  return report;
}

/** An upstream that breaks off mid-body is an upstream failure (502), like one that never answers. */
async function* upstream(response: Readable): AsyncGenerator<Buffer> {
  try {
    for await (const chunk of response) yield chunk as Buffer;
  } catch (err) {
    throw new HttpError(502, `Fetching the import URL failed while reading it: ${(err as Error).message}.`);
  }
}

function describeWindow(seconds: number): string {
  return seconds % 60 === 0 && seconds > 0 ? `${seconds / 60}-minute` : `${seconds}-second`;
}

/**
 * The CSV at a URL, fetched under the webhooks' outbound address policy (private, loopback and
 * link-local addresses refused unless in OUTBOUND_ALLOWED_CIDRS, checked on the address connected
 * to). A non-2xx answer or a network failure is 502; a refused address is 422 naming `url`; a body
 * over 20 MB is 413 (the byte count in openCsv stops it while streaming).
 */
export async function fetchCsv(url: string, allowedCidrs: string[], timeoutMs = 30_000): Promise<AsyncIterable<Buffer>> {
  const check = outboundPolicy(allowedCidrs);
  const target = new URL(url);
  const literal = target.hostname.replace(/^\[|\]$/g, '');
  try {
    if (isIP(literal)) check(literal);
  } catch (err) {
    throw new Validation('url', `url: ${(err as Error).message}`);
  }
  const agents = outboundAgents(check, 1);
  const client = target.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const request = client.get(target, { agent: target.protocol === 'https:' ? agents.https : agents.http, headers: { accept: 'text/csv, */*' }, timeout: timeoutMs });
    const done = () => {
      agents.http.destroy();
      agents.https.destroy();
    };
    request.on('timeout', () => request.destroy(new Error(`no answer within ${timeoutMs / 1000} s`)));
    request.on('error', (err) => {
      done();
      if (err instanceof OutboundRefused) reject(new Validation('url', `url: ${err.message}`));
      else reject(new HttpError(502, `Could not fetch the import URL: ${err.message}.`));
    });
    request.on('response', (response) => {
      const status = response.statusCode ?? 0;
      if (status < 200 || status >= 300) {
        response.resume();
        done();
        return reject(new HttpError(502, `Fetching the import URL failed: it answered ${status}.`));
      }
      if (Number(response.headers['content-length'] ?? 0) > MAX_IMPORT_BYTES) {
        response.destroy();
        done();
        return reject(new TooLarge());
      }
      response.on('close', done);
      response.on('error', () => done());
      resolve(upstream(response));
    });
  });
}
