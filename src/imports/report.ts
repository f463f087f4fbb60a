import type { Access } from '../access.js';
import type { Db } from '../db/database.js';
import type { CsvRow } from './csv.js';

export interface RowError {
  /** The spreadsheet line number (the header is line 1). */
  row: number;
  field: string;
  message: string;
}

/** `data.import`, as the addendum fixes it. */
export interface ImportReport {
  rows: number;
  created: number;
  updated: number;
  unchanged: number;
  failed: number;
  /**
   * Rows read and left out as carrying no variant of their own (a Shopify row with only an image, a WooCommerce
   * variable product's row, whose variations are its variants); not in `rows`.
   */
  skipped: number;
  errors: RowError[];
  /** Rows imported with something the import could not keep (a WooCommerce grouped product's children), by line. */
  notes: RowError[];
}

export const emptyReport = (): ImportReport => ({ rows: 0, created: 0, updated: 0, unchanged: 0, failed: 0, skipped: 0, errors: [], notes: [] });

/** Writes one prepared batch inside the import's transaction, adding its outcome to the report. */
export type BatchWrite = (trx: Db, access: Access, report: ImportReport) => Promise<void>;

/**
 * One kind of import, a batch at a time. `prepare` maps and validates rows in node only (it awaits
 * nothing and leaves the report alone), so the next batch is prepared while the database writes
 * the previous one; the writes run one after another, in the file's order.
 */
export interface Importer {
  /** Tables the import may grow: analysed after a commit that created rows. */
  readonly tables: string[];
  /**
   * Tables where the import writes each new row twice (a product's list text: inserted with the product, rewritten by
   * its variants' statement): vacuumed and analysed after a commit that created rows, so that a list read right after
   * the import does not meet the dead first copies and their index entries (which slow PGlite's reads of the texts,
   * bench/embedded-reads.ts) until autovacuum or the embedded database's own pass gets to them.
   */
  readonly rewritten: string[];
  /** `last`: no rows follow (whatever the importer still holds, the open order, goes with this batch). */
  prepare(rows: CsvRow[], last: boolean): BatchWrite;
}

/** Row counts and errors found while preparing a batch, added to the report when the batch is written. */
export class BatchOutcome {
  rows = 0;
  failed = 0;
  skipped = 0;
  readonly errors: RowError[] = [];

  fail(row: number, field: string, message: string): void {
    this.errors.push({ row, field, message });
  }

  addTo(report: ImportReport): void {
    report.rows += this.rows;
    report.failed += this.failed;
    report.skipped += this.skipped;
    for (const error of this.errors) report.errors.push(error);
  }
}

/** JSON with object keys sorted, so that two equal attribute objects compare equal as text. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}
