import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import type { Readable } from 'node:stream';
import type { Knex } from 'knex';
import type { Access } from '../access.js';
import { HttpError, Validation } from '../errors.js';
import { errorFields, log } from '../log.js';
import { addCounts } from '../db/ops-counters.js';
import { outboundAgents, outboundPolicy, OutboundRefused } from '../webhooks/outbound.js';
import { checkRowLimit, MAX_IMPORT_BYTES, MAX_RECORD_BYTES, openCsv, TooLarge, type ByteSource, type CsvRow } from './csv.js';
import { orderImporter } from './orders.js';
import { productImporter } from './products.js';
import { spool, type Spooled, type SpoolOptions } from './spool.js';
export type { Spooled };
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
  /** An import stops past this window and writes nothing (IMPORT_WINDOW_SECONDS, spec §8: 10 minutes). */
  windowSeconds: number;
  /** Epoch ms the window counts from: the request's start (default: now). */
  startedAt?: number;
  /** What the bytes come from, for the errors when they stop coming (default: a local file). */
  from?: Pick<SpoolOptions, 'what' | 'failureStatus' | 'owned'>;
  /** Called after each batch. */
  onProgress?: (progress: ImportProgress) => void;
  /** Aborting stops the import; nothing is written. */
  signal?: AbortSignal;
  /** Called when the import's turn has come: every earlier import of its kind into the workspace is over. */
  onStart?: () => void;
}

/**
 * Rows read, validated and written at a time. Two batches are held at once (one written while the next is read),
 * long enough to outlive the collector's young generation, so their size sets how far the heap grows before a
 * full collection: larger batches grow the server's memory and make an import no faster.
 */
const BATCH_ROWS = 2000;

/**
 * On the embedded database a batch's statements hold its one session while they run, and a page's reads wait for
 * the one under way (db/pglite-thread.ts): smaller batches keep that wait short.
 */
const EMBEDDED_BATCH_ROWS = 200;

class Rollback extends Error {}

/**
 * Imports a CSV of products or orders into the workspace. The file is spooled first (see spool.ts): no transaction
 * or connection waits while it arrives. Then the import owns its transaction, since only the outcome decides between
 * commit and rollback: a dry run, an `abort` import with a failed row, a file over the limits, an import past its
 * window, or an abort signal all roll back, so nothing is ever half-written. Rows stream from the spooled file and
 * are written a batch at a time. Imports of one kind into one workspace run one at a time (in this process, then
 * across processes by a transaction's advisory lock), so each one's counts say what it did itself. After a commit
 * that created rows, the grown tables are analysed, so plans see the new sizes at once.
 */
export async function importCsv(db: Knex, access: Access, kind: ImportKind, source: ByteSource, options: ImportOptions): Promise<ImportReport> {
  // One window for both halves, counted from the start (or now).
  const timed = { ...options, startedAt: options.startedAt ?? Date.now() };
  const spooled = await spoolCsv(source, timed);
  try {
    return await importSpooledCsv(db, access, kind, spooled, timed);
  } finally {
    await spooled.remove();
  }
}

/** The import's window: it ends `windowSeconds` after `startedAt`, and its error says so. */
function importWindow(options: Pick<ImportOptions, 'windowSeconds' | 'startedAt'>): { deadline: number; pastWindow: () => HttpError } {
  const deadline = (options.startedAt ?? Date.now()) + options.windowSeconds * 1000;
  const pastWindow = () =>
    new HttpError(422, `The import ran past its ${describeWindow(options.windowSeconds)} window and was stopped; nothing was written. Split the file and import the parts.`);
  return { deadline, pastWindow };
}

/** The first half of an import: the file stored whole in a private temporary file (the caller removes it). */
export async function spoolCsv(source: ByteSource, options: Pick<ImportOptions, 'windowSeconds' | 'startedAt' | 'from'>): Promise<Spooled> {
  const { deadline, pastWindow } = importWindow(options);
  return spool(source, { deadline, pastDeadline: pastWindow, what: 'the file', failureStatus: 408, ...options.from });
}

/** The second half: a spooled file imported, after every earlier import of its kind into the workspace (the file stays). */
export async function importSpooledCsv(db: Knex, access: Access, kind: ImportKind, spooled: Spooled, options: ImportOptions): Promise<ImportReport> {
  const { deadline, pastWindow } = importWindow(options);
  try {
    await checkRowLimit(() => spooled.read());
    const report = await oneAtATime(`${kind}:${access.workspaceId}`, () => importSpooled(db, access, kind, spooled, options, deadline, pastWindow));
    await countImport(db, options.dryRun ? 'dry_run' : 'applied', options.dryRun ? undefined : report);
    return report;
  } catch (err) {
    const aborted = err instanceof HttpError && err.status === 422 && options.onError === 'abort' && err.data !== undefined;
    await countImport(db, aborted ? 'aborted' : 'failed');
    throw err;
  }
}

/** An import's result and, once applied, its rows, added to the installation's counters (/metrics). */
async function countImport(db: Knex, result: 'applied' | 'dry_run' | 'aborted' | 'failed', report?: ImportReport): Promise<void> {
  try {
    await addCounts(db, 'imports', { [result]: 1 });
    if (report) await addCounts(db, 'import_rows', { created: report.created, updated: report.updated, unchanged: report.unchanged, failed: report.failed });
  } catch (err) {
    log.warn('import not counted for the metrics', errorFields(err));
  }
}

async function importSpooled(
  db: Knex,
  access: Access,
  kind: ImportKind,
  spooled: Spooled,
  options: ImportOptions,
  deadline: number,
  pastWindow: () => HttpError,
): Promise<ImportReport> {
  const file = spooled.read();
  const batchRows = db.client.config.client === 'pg' ? BATCH_ROWS : EMBEDDED_BATCH_ROWS;
  try {
    const csv = await openCsv(file);
    // A sale price's dates are read against the import's start, the same for every row.
    const importer: Importer = kind === 'products' ? productImporter(csv.header, new Date(options.startedAt ?? Date.now())) : orderImporter(csv.header);
    const report = emptyReport();
    const checkpoint = () => {
      if (options.signal?.aborted) throw new HttpError(499, 'The import was interrupted; nothing was written.');
      if (Date.now() >= deadline) throw pastWindow();
    };
    const progress = () => options.onProgress?.({ rows: report.rows, failed: report.failed, bytes: csv.bytesRead() });
    let committed = false;
    try {
      await db.transaction(async (trx) => {
        checkpoint();
        await trx.raw('select pg_advisory_xact_lock(hashtext(?), ?)', [`quoting:import:${kind}`, access.workspaceId]);
        options.onStart?.();
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
          let read = 0;
          for await (const row of csv.rows) {
            // The window is checked while a batch is read too, not only between batches.
            if (++read % 256 === 0) checkpoint();
            if (row.oversized) {
              report.rows++;
              report.failed++;
              report.errors.push({ row: row.line, field: 'row', message: `row: line ${row.line} is longer than ${MAX_RECORD_BYTES / 1024 / 1024} MB and was not read.` });
              continue;
            }
            if (row.badQuote !== undefined) {
              report.rows++;
              report.failed++;
              const message = `${row.badQuote}: text follows the closing quote of the cell on line ${row.line}; quote the whole cell and double each quote inside it ("").`;
              report.errors.push({ row: row.line, field: row.badQuote, message });
              continue;
            }
            batch.push(row);
            if (batch.length < batchRows) continue;
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
    // Checks of the fields come before checks against the database within a batch; the report lists lines in order.
    report.errors.sort((a, b) => a.row - b.row);
    report.notes.sort((a, b) => a.row - b.row);
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
  } finally {
    file.destroy();
  }
}

const queues = new Map<string, Promise<unknown>>();

/** Runs `task` after every earlier task of the same key in this process has settled. */
async function oneAtATime<T>(key: string, task: () => Promise<T>): Promise<T> {
  const run = (queues.get(key) ?? Promise.resolve()).then(task, task);
  const settled = run.catch(() => undefined);
  queues.set(key, settled);
  try {
    return await run;
  } finally {
    if (queues.get(key) === settled) queues.delete(key);
  }
}

function describeWindow(seconds: number): string {
  return seconds % 60 === 0 && seconds > 0 ? `${seconds / 60}-minute` : `${seconds}-second`;
}

/**
 * The CSV at a URL, fetched under the webhooks' outbound address policy (private, loopback and
 * link-local addresses refused unless in OUTBOUND_ALLOWED_CIDRS, checked on the address connected
 * to). A non-2xx answer or a network failure is 502; a refused address is 422 naming `url`; a body
 * over 20 MB is 413 (the spool's byte count stops it while streaming).
 */
export async function fetchCsv(url: string, allowedCidrs: string[], timeoutMs = 30_000): Promise<Readable> {
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
      // From here the spool's own silence timer bounds the body (its error says so); the socket's would race it.
      request.setTimeout(0);
      response.on('close', done);
      response.on('error', () => done());
      resolve(response);
    });
  });
}
