import type { ImportKind, ImportProgress, ImportReport } from '../imports/service.js';

/**
 * What `quoting import` shows of a running import, plain (./import.ts) or drawn by ink (./import-view.ts):
 * its status, the speed and share done, and the summary.
 */

/** Errors listed after the summary; --json has them all. */
export const ERRORS_SHOWN = 20;

/** What a progress view is told as the import runs and when it ends. */
export interface ImportStatus {
  kind: ImportKind;
  workspace: string;
  dryRun: boolean;
  startedAt: number;
  /** Set with the report: the summary gives the time the import took. */
  finishedAt?: number;
  progress: ImportProgress;
  /** File size when known (not for standard input): the bar and the ETA need it. */
  totalBytes?: number;
  /** The bytes a line of the file takes on average, as far as it has been read (see rate). */
  bytesPerLine?: number;
  report?: ImportReport;
  /** Set when the import stopped as a whole (on_error=abort with failed rows). */
  aborted?: string;
}

/** How long the import took: 0.4 s, 12 s, 2 min 05 s. */
export function elapsed(ms: number): string {
  const seconds = Math.max(ms, 0) / 1000;
  if (seconds < 10) return `${seconds.toFixed(1)} s`;
  if (seconds < 60) return `${Math.round(seconds)} s`;
  const whole = Math.round(seconds);
  return `${Math.floor(whole / 60)} min ${String(whole % 60).padStart(2, '0')} s`;
}

/** The summary: one line of counts, then the first errors (row, field, message). */
export function summaryLines(status: ImportStatus): string[] {
  const r = status.report!;
  const what = status.kind === 'products' ? 'rows' : 'orders';
  const took = elapsed((status.finishedAt ?? Date.now()) - status.startedAt);
  // An aborted import wrote nothing: its counts of what it would have written are not news to give.
  const lines = status.aborted
    ? [`Nothing was imported: ${r.failed} of ${r.rows} rows read from the ${status.kind} file in ${took} failed (--on-error abort).`]
    : [
        `${status.dryRun ? 'Dry run (nothing written): ' : ''}${r.rows} rows read from the ${status.kind} file in ${took}: ` +
          `${r.created} created, ${r.updated} updated, ${r.unchanged} unchanged (${what}), ${r.failed} rows failed` +
          // Only files that have such rows (Shopify image rows, WooCommerce variable products) say so; other summaries read as before.
          `${r.skipped ? `, ${r.skipped} rows without a variant of their own skipped` : ''}` +
          `${r.notes.length ? `, ${r.notes.length} notes` : ''}.`,
      ];
  // Messages start with their field ("price: must …"); other ones get it in front.
  for (const e of r.errors.slice(0, ERRORS_SHOWN)) lines.push(`  line ${e.row}, ${e.message.startsWith(`${e.field}:`) ? e.message : `${e.field}: ${e.message}`}`);
  if (r.errors.length > ERRORS_SHOWN) lines.push(`  … and ${r.errors.length - ERRORS_SHOWN} more errors (--json lists them all).`);
  // Notes: rows that were imported, with what they lost.
  for (const n of r.notes.slice(0, ERRORS_SHOWN)) lines.push(`  note, line ${n.row}, ${n.message.startsWith(`${n.field}:`) ? n.message : `${n.field}: ${n.message}`}`);
  if (r.notes.length > ERRORS_SHOWN) lines.push(`  … and ${r.notes.length - ERRORS_SHOWN} more notes (--json lists them all).`);
  return lines;
}

/**
 * Speed, and with the file's size the share done and the time left. The share is how far into the file
 * the rows done reach (the rows and the header line, times the bytes a line takes so far), not the bytes
 * read: the reader runs well ahead of the rows written (a whole batch, and the parser's buffers), so the bytes read
 * would show the import nearly done long before it is.
 */
export function rate(status: ImportStatus, now = Date.now()): { rowsPerSecond: number; etaSeconds?: number; fraction?: number } {
  const seconds = Math.max((now - status.startedAt) / 1000, 0.001);
  const rowsPerSecond = status.progress.rows / seconds;
  if (!status.totalBytes) return { rowsPerSecond };
  const perLine = status.bytesPerLine;
  const done = status.report ? status.totalBytes : Math.min(perLine ? (status.progress.rows + 1) * perLine : 0, status.totalBytes);
  const fraction = done / status.totalBytes;
  const etaSeconds = perLine && rowsPerSecond > 0 ? (status.totalBytes - done) / perLine / rowsPerSecond : undefined;
  return { rowsPerSecond, fraction, etaSeconds };
}
