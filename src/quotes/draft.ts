/** A draft saved whole from one form: its fields and all its lines, through the API's own operations and events. */
import type { Access } from '../access.js';
import type { Db } from '../db/database.js';
import { Validation } from '../errors.js';
import { moneyText, quantityText } from '../money.js';
import type { DraftLine, QuoteChanges } from './schema.js';
import { addLine, assertDraft, linesOf, lockedQuoteForUser, quoteById, removeLine, updateLine, updateQuote, type LineJson, type QuoteJson } from './service.js';

/**
 * Applies a draft's form in the caller's transaction: the fields that differ (one `quote.updated`), each existing
 * line that differs (`quote.line_updated`), new lines (`quote.line_added`) and lines no longer given
 * (`quote.line_removed`), each by the function its API route calls, so the rules, activities and events are the API's.
 *
 * Lines are kept in id order, so the user's order is reached by keeping the longest leading run of existing lines
 * whose ids rise and adding everything after it anew: a line moved above another (or below a new one) is removed
 * and added again. So is an existing line whose price, or whose description beside a SKU, is left empty: the
 * catalogue fills it, as on creation. A field's message names the line as the form shows it (`lines.2.price`).
 */
export async function saveDraft(trx: Db, access: Access, id: number, changes: QuoteChanges, lines: DraftLine[]): Promise<QuoteJson> {
  const quote = await lockedQuoteForUser(trx, access, id);
  assertDraft(quote);
  const current = new Map((await linesOf(trx, access, id)).map((line) => [line.id, line]));

  const seen = new Set<number>();
  lines.forEach((line, index) => {
    if (line.id === undefined) return;
    if (!current.has(line.id) || seen.has(line.id)) throw new Validation(`lines.${index}.id`, `lines.${index}.id: no line ${line.id} on this quote.`);
    seen.add(line.id);
  });

  let kept = 0;
  let lastId = 0;
  while (kept < lines.length) {
    const line = lines[kept];
    if (line.id === undefined || line.id < lastId || needsCatalogue(line)) break;
    lastId = line.id;
    kept += 1;
  }
  const keptIds = new Set(lines.slice(0, kept).map((line) => line.id!));

  const fields = changedFields(quote, changes);
  // A lower discount goes first, so that removing lines does not meet the old one; a higher one last, once lines are added.
  const discountFirst = fields.discount_amount !== undefined && lowerAmount(fields.discount_amount ?? '0', String(quote.discount_amount));
  if (discountFirst) await updateQuote(trx, access, id, fields);

  for (let index = 0; index < kept; index += 1) {
    const line = lines[index];
    const lineChanges = changedLine(current.get(line.id!)!, line);
    if (lineChanges) await atLine(index, () => updateLine(trx, access, id, line.id!, lineChanges));
  }
  for (let index = kept; index < lines.length; index += 1) {
    const { id: _id, ...line } = lines[index];
    await atLine(index, () => addLine(trx, access, id, line));
  }
  for (const lineId of current.keys()) {
    if (!keptIds.has(lineId)) await removeLine(trx, access, id, lineId);
  }

  if (!discountFirst && Object.keys(fields).length > 0) await updateQuote(trx, access, id, fields);
  return quoteById(trx, access, id);
}

/** A line whose price, or whose description beside a SKU, is left for the catalogue to fill. */
const needsCatalogue = (line: DraftLine) => line.price == null || (line.sku != null && line.description == null);

/** The quote's fields that the form changes; an empty discount or tax rate is zero, as the API stores null. */
function changedFields(quote: QuoteJson, changes: QuoteChanges): QuoteChanges {
  const out: QuoteChanges = {};
  if (changes.currency !== undefined && changes.currency !== quote.currency) out.currency = changes.currency;
  if (changes.discount_amount !== undefined && moneyText(changes.discount_amount ?? '0') !== moneyText(String(quote.discount_amount))) {
    out.discount_amount = changes.discount_amount;
  }
  if (changes.tax_rate !== undefined && quantityText(changes.tax_rate ?? '0') !== quantityText(String(quote.tax_rate))) out.tax_rate = changes.tax_rate;
  if (changes.notes !== undefined && changes.notes !== quote.notes) out.notes = changes.notes;
  if (changes.valid_until !== undefined && changes.valid_until !== quote.valid_until) out.valid_until = changes.valid_until;
  return out;
}

/** What differs between a stored line and its row on the form; null when nothing does. */
function changedLine(stored: LineJson, line: DraftLine): Record<string, string | null> | null {
  const out: Record<string, string | null> = {};
  if ((line.sku ?? null) !== stored.sku) out.sku = line.sku ?? null;
  if ((line.description ?? null) !== stored.description) out.description = line.description ?? null;
  if (quantityText(line.quantity) !== quantityText(String(stored.quantity))) out.quantity = line.quantity;
  if (line.price != null && moneyText(line.price) !== moneyText(String(stored.price))) out.price = line.price;
  return Object.keys(out).length > 0 ? out : null;
}

/** Whether money text `a` is less than `b`, compared as decimals (text, never a float). */
function lowerAmount(a: string, b: string): boolean {
  const cents = (text: string) => {
    const [whole, fraction = ''] = moneyText(text)!.split('.');
    return BigInt(whole + fraction.padEnd(2, '0').slice(0, 2));
  };
  return cents(a) < cents(b);
}

const lineFields = ['sku', 'description', 'quantity', 'price'];

/** A line operation whose 422 names the line's field as the form shows it. */
async function atLine<T>(index: number, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof Validation && lineFields.includes(err.field)) {
      throw new Validation(`lines.${index}.${err.field}`, `lines.${index}.${err.message}`);
    }
    throw err;
  }
}
