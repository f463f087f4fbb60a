import crypto from 'node:crypto';
import { SKU_MAX } from '../schema/input.js';

/** A problem with one row, found by a file format while mapping it: the field is the file's own column. */
export interface RowIssue {
  field: string;
  message: string;
}

/** A product row after mapping from its file format onto the import's own fields. */
export interface Mapped {
  product_sku: string;
  /** Present when the row may define its product (every generic row; Shopify rows with a Title; WooCommerce rows). */
  product?: Record<string, string | undefined>;
  /** Absent only on a row that fails as a whole (`errors`) and carries no variant (a WooCommerce variable product's own row). */
  variant?: Record<string, unknown>;
  /** Set when the variant SKU was not in the file but made from it: what from, for its messages ("the handle and option values"). */
  generatedFrom?: string;
  /** Why the row fails, found by the format (a variation whose parent is not on an earlier line). */
  errors?: RowIssue[];
  /** What the import could not keep of a row it imports (a WooCommerce grouped product's children): in the report's notes. */
  notes?: RowIssue[];
  /** The file's column for each of our fields, where the format names its own (WooCommerce: price → Sale price). */
  columns?: Record<string, string>;
}

export interface ProductState {
  id?: number;
  /** Shopify: the option names given on the product's first row. */
  options?: string[];
}

export interface Format {
  /** Which optional columns the file has: absent ones keep their stored values. */
  present: Set<string>;
  /** null: a row without a variant of its own (a Shopify image row, a WooCommerce variable product), skipped. */
  map(values: string[], products: Map<string, ProductState>, line: number): Mapped | null;
  /**
   * After the last row: rows the format skipped (returned null for) that turned out to fail, with their errors
   * (a WooCommerce variable product that no variation row named).
   */
  finish?(): (RowIssue & { row: number })[];
}

/**
 * A variant SKU made from the handle and option values: joined by "-", every run of spaces or control characters
 * a "-", and cut to fit with a short hash of the whole standing in for the cut tail, so the same row always
 * makes the same SKU and two long ones that differ only at their ends stay apart.
 */
export function generatedSku(parts: string[]): string {
  const whole = parts.join('-').replace(/[\s\u0000-\u001f\u007f-\u009f]+/g, '-');
  if (whole.length <= SKU_MAX) return whole;
  const hash = crypto.createHash('sha256').update(whole).digest('hex').slice(0, 10);
  return `${whole.slice(0, SKU_MAX - hash.length - 1)}-${hash}`;
}

/** An issue of one of our fields, named by the file's column for it (`price: …` → `Sale price: …`). */
export function renamed(issue: RowIssue, columns: Record<string, string> | undefined): RowIssue {
  const column = columns?.[issue.field];
  if (!column) return issue;
  return { field: column, message: issue.message.startsWith(`${issue.field}:`) ? `${column}:${issue.message.slice(issue.field.length + 1)}` : issue.message };
}
