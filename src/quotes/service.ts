import type { Db } from '../db/database.js';
import { jsonPages } from '../db/pages.js';
import { scoped, whereExact, whereSearch } from '../db/scoped.js';
import { Conflict, NotFound, Validation } from '../errors.js';
import { emit } from '../events/emit.js';
import { randomToken } from '../auth/crypto.js';
import { assertChannelAccess, assertChannelExists, whereReadable } from '../channels/access.js';
import type { Principal } from '../http/auth.js';
import { givenFields, isNumericOverflow, lineTotalFits } from '../http/validate.js';
import { upsertCustomer } from '../customers/service.js';
import type { LineChanges, LineInput, QuoteChanges, QuoteInput, QuoteStatus } from './schema.js';

export type Actor = 'user' | 'customer' | 'api' | 'system';
export type QuoteJson = Record<string, unknown> & { id: number; status: QuoteStatus; quote_number: string; channel_id: number | null };
export type LineJson = Record<string, unknown> & { id: number };

/** The API shape of a quote, built in SQL (money as two-decimal text) so reads, lists and events agree. */
export const quoteJson = (q = 'q') =>
  `json_build_object('id', ${q}.id, 'quote_number', ${q}.quote_number, 'status', ${q}.status, 'currency', ${q}.currency, ` +
  `'subtotal', ${q}.subtotal::text, 'discount_amount', ${q}.discount_amount::text, 'tax_rate', trim_scale(${q}.tax_rate)::text, ` +
  `'tax_amount', ${q}.tax_amount::text, 'total', ${q}.total::text, 'customer_id', ${q}.customer_id, 'customer_name', ${q}.customer_name, ` +
  `'customer_email', ${q}.customer_email, 'channel_id', ${q}.channel_id, 'notes', ${q}.notes, 'valid_until', to_char(${q}.valid_until, 'YYYY-MM-DD'), ` +
  `'public_token', ${q}.public_token, 'external_id', ${q}.external_id, 'sent_at', iso_time(${q}.sent_at), 'viewed_at', iso_time(${q}.viewed_at), ` +
  `'accepted_at', iso_time(${q}.accepted_at), 'declined_at', iso_time(${q}.declined_at), 'cancelled_at', iso_time(${q}.cancelled_at), ` +
  `'paid_at', iso_time(${q}.paid_at), 'created_at', iso_time(${q}.created_at), 'updated_at', iso_time(${q}.updated_at))`;

export const lineJson = (l = 'l') =>
  `json_build_object('id', ${l}.id, 'quote_id', ${l}.quote_id, 'variant_id', ${l}.variant_id, 'sku', ${l}.sku, 'description', ${l}.description, ` +
  `'quantity', trim_scale(${l}.quantity)::text, 'price', ${l}.price::text, 'line_total', ${l}.line_total::text, ` +
  `'created_at', iso_time(${l}.created_at), 'updated_at', iso_time(${l}.updated_at))`;

const activityJson = (a = 'a') =>
  `json_build_object('id', ${a}.id, 'type', ${a}.type, 'actor', ${a}.actor, 'message', ${a}.message, 'created_at', iso_time(${a}.created_at))`;

/** The addendum's transitions; anything else is 409 naming the current status. */
const transitions: Record<QuoteStatus, QuoteStatus[]> = {
  draft: ['sent', 'cancelled'],
  sent: ['accepted', 'declined', 'cancelled'],
  accepted: ['paid', 'cancelled'],
  declined: [],
  cancelled: [],
  paid: [],
};

const timestampOf: Partial<Record<QuoteStatus, string>> = {
  sent: 'sent_at',
  accepted: 'accepted_at',
  declined: 'declined_at',
  cancelled: 'cancelled_at',
  paid: 'paid_at',
};

export async function quoteById(db: Db, workspaceId: number, id: number): Promise<QuoteJson> {
  const row = await scoped(db, 'quotes as q', workspaceId).where('q.id', id).first(db.raw(`${quoteJson()} as json`));
  if (!row) throw new NotFound('Quote not found.');
  return row.json;
}

export async function linesOf(db: Db, workspaceId: number, quoteId: number): Promise<LineJson[]> {
  const rows = await scoped(db, 'quote_lines as l', workspaceId).where('l.quote_id', quoteId).orderBy('l.id').select(db.raw(`${lineJson()} as json`));
  return rows.map((r: { json: LineJson }) => r.json);
}

async function activitiesOf(db: Db, workspaceId: number, quoteId: number): Promise<Record<string, unknown>[]> {
  const rows = await scoped(db, 'quote_activities as a', workspaceId).where('a.quote_id', quoteId).orderBy('a.id').select(db.raw(`${activityJson()} as json`));
  return rows.map((r: { json: Record<string, unknown> }) => r.json);
}

export async function recordActivity(db: Db, workspaceId: number, quoteId: number, type: string, actor: Actor, message: string): Promise<void> {
  await db('quote_activities').insert({ workspace_id: workspaceId, quote_id: quoteId, type, actor, message });
}

/** The quote, after the caller's channel access is checked (read, or write for changes). */
async function accessibleQuote(db: Db, auth: Principal, id: number, need: 'read' | 'write', lock = false): Promise<QuoteJson> {
  if (lock) {
    const locked = await scoped(db, 'quotes', auth.workspace.id).where({ id }).forUpdate().first('id');
    if (!locked) throw new NotFound('Quote not found.');
  }
  const quote = await quoteById(db, auth.workspace.id, id);
  await assertChannelAccess(db, auth, quote.channel_id, need);
  return quote;
}

export async function getQuote(db: Db, auth: Principal, id: number) {
  const quote = await accessibleQuote(db, auth, id, 'read');
  return { quote, lines: await linesOf(db, auth.workspace.id, id), activities: await activitiesOf(db, auth.workspace.id, id) };
}

export interface QuoteFilters {
  status?: string;
  channel_id?: number;
  customer_id?: number;
  q?: string;
}

/** The quotes the caller may read, filtered, by id, as JSON pages. */
export function listQuotes(db: Db, auth: Principal, filters: QuoteFilters): AsyncGenerator<string> {
  const filtered = () => {
    const query = whereReadable(scoped(db, 'quotes as q', auth.workspace.id), db, auth, 'q.channel_id');
    whereExact(query, { 'q.status': filters.status, 'q.channel_id': filters.channel_id, 'q.customer_id': filters.customer_id });
    return whereSearch(query, ['q.quote_number', 'q.customer_name', 'q.customer_email'], filters.q);
  };
  return jsonPages(db, filtered, 'q.id', quoteJson());
}

/** `Q-<year>-<6 digits>`, gap-free per workspace and year: the counter row stays locked until the creating transaction ends. */
async function nextQuoteNumber(trx: Db, workspaceId: number): Promise<string> {
  const year = new Date().getUTCFullYear();
  const { rows } = await trx.raw(
    `insert into quote_numbers (workspace_id, year, last_number) values (?, ?, 1)
     on conflict (workspace_id, year) do update set last_number = quote_numbers.last_number + 1
     returning last_number`,
    [workspaceId, year],
  );
  return `Q-${year}-${String(rows[0].last_number).padStart(6, '0')}`;
}

/**
 * Totals in PostgreSQL numeric: line totals rounded half-up to cents, tax on (subtotal − discount).
 * `field` is the input named when a total would not fit its column.
 */
async function recalculate(trx: Db, workspaceId: number, quoteId: number, field = 'lines'): Promise<void> {
  const { rows } = await trx.raw(
    `select t.subtotal::text as subtotal, q.discount_amount::text as discount, q.discount_amount > t.subtotal as too_much
     from quotes q, (select coalesce(sum(line_total), 0) as subtotal from quote_lines where quote_id = ? and workspace_id = ?) t
     where q.id = ? and q.workspace_id = ?`,
    [quoteId, workspaceId, quoteId, workspaceId],
  );
  if (rows[0]?.too_much) {
    throw new Validation('discount_amount', `discount_amount (${rows[0].discount}) must not exceed the subtotal (${rows[0].subtotal}).`);
  }
  await trx
    .raw(
      `update quotes q set subtotal = t.subtotal,
         tax_amount = round((t.subtotal - q.discount_amount) * q.tax_rate / 100, 2),
         total = t.subtotal - q.discount_amount + round((t.subtotal - q.discount_amount) * q.tax_rate / 100, 2),
         updated_at = now()
       from (select coalesce(sum(line_total), 0) as subtotal from quote_lines where quote_id = ? and workspace_id = ?) t
       where q.id = ? and q.workspace_id = ?`,
      [quoteId, workspaceId, quoteId, workspaceId],
    )
    .catch((err: unknown) => {
      if (isNumericOverflow(err)) throw new Validation(field, `${field}: the quote total must be less than 1000000000000.`);
      throw err;
    });
}

/** The line's price: given, or the variant's when the SKU names one (422 when neither). */
async function priceLine(trx: Db, workspaceId: number, line: { sku?: string | null; price?: string | null }, field: string) {
  const variant = line.sku ? await scoped(trx, 'variants', workspaceId).where({ sku: line.sku }).first('id', 'price', 'name') : undefined;
  const price = line.price ?? (variant?.price !== null && variant?.price !== undefined ? String(variant.price) : null);
  if (price === null) {
    const name = field ? `${field}.price` : 'price';
    throw new Validation(name, `${name} is required${line.sku ? ` (no variant with SKU "${line.sku}" has a price)` : ''}.`);
  }
  return { price, variantId: (variant?.id as number | undefined) ?? null, variantName: (variant?.name as string | undefined) ?? null };
}

function assertLineFits(quantity: string, price: string, field: string): void {
  if (!lineTotalFits(quantity, price)) throw new Validation(field, `${field}: quantity × price must be less than 1000000000000.`);
}

async function insertLine(trx: Db, workspaceId: number, quoteId: number, line: LineInput, field: string): Promise<number> {
  const { price, variantId, variantName } = await priceLine(trx, workspaceId, line, field);
  assertLineFits(line.quantity, price, field ? `${field}.quantity` : 'quantity');
  const [row] = await trx('quote_lines')
    .insert({
      workspace_id: workspaceId,
      quote_id: quoteId,
      variant_id: variantId,
      sku: line.sku ?? null,
      description: line.description ?? variantName,
      quantity: line.quantity,
      price,
      line_total: trx.raw('round(?::numeric * ?::numeric, 2)', [line.quantity, price]),
    })
    .returning('id');
  return row.id;
}

async function resolveCustomer(trx: Db, workspaceId: number, input: Pick<QuoteInput, 'customer_id' | 'customer'>) {
  if (input.customer) {
    const { customer } = await upsertCustomer(trx, workspaceId, input.customer);
    return customer;
  }
  if (input.customer_id === undefined) return null;
  const customer = await scoped(trx, 'customers', workspaceId).where({ id: input.customer_id }).first('id', 'name', 'email');
  if (!customer) throw new Validation('customer_id', `customer_id: no customer ${input.customer_id} in this workspace.`);
  return customer;
}

/** Creates a draft with its lines; `quote.created` carries the quote and its lines. */
export async function createQuote(
  trx: Db,
  auth: Principal,
  input: QuoteInput & { external_id?: string | null },
  actor: Actor,
): Promise<{ quote: QuoteJson; lines: LineJson[] }> {
  const workspaceId = auth.workspace.id;
  await assertChannelExists(trx, workspaceId, input.channel_id);
  await assertChannelAccess(trx, auth, input.channel_id, 'write');
  const customer = await resolveCustomer(trx, workspaceId, input);
  const publicToken = randomToken(24);
  const [row] = await trx('quotes')
    .insert({
      workspace_id: workspaceId,
      // A unique placeholder until the end: the numbering lock is then held only for the last statements.
      quote_number: `pending:${publicToken}`,
      customer_id: customer?.id ?? null,
      customer_name: customer?.name ?? null,
      customer_email: customer?.email ?? null,
      channel_id: input.channel_id ?? null,
      currency: input.currency ?? 'USD',
      discount_amount: input.discount_amount ?? '0',
      tax_rate: input.tax_rate ?? '0',
      notes: input.notes ?? null,
      valid_until: input.valid_until ?? null,
      public_token: publicToken,
      external_id: input.external_id ?? null,
    })
    .returning('id');
  for (const [index, line] of (input.lines ?? []).entries()) await insertLine(trx, workspaceId, row.id, line, `lines.${index}`);
  await recalculate(trx, workspaceId, row.id);
  await scoped(trx, 'quotes', workspaceId).where({ id: row.id }).update({ quote_number: await nextQuoteNumber(trx, workspaceId) });
  const quote = await quoteById(trx, workspaceId, row.id);
  await recordActivity(trx, workspaceId, row.id, 'created', actor, `Quote ${quote.quote_number} created.`);
  const lines = await linesOf(trx, workspaceId, row.id);
  await emit(trx, workspaceId, 'quote.created', { quote, lines });
  return { quote, lines };
}

/** `POST /quotes/external`: idempotent on external_id (the first quote is returned, 200). */
export async function createExternalQuote(
  trx: Db,
  auth: Principal,
  input: QuoteInput & { external_id?: string | null },
): Promise<{ quote: QuoteJson; lines: LineJson[]; created: boolean }> {
  if (input.external_id) {
    // Serialises concurrent creates with the same external_id in this workspace.
    await trx.raw('select pg_advisory_xact_lock(hashtext(?), ?)', [`quote-external:${input.external_id}`, auth.workspace.id]);
    const existing = await scoped(trx, 'quotes', auth.workspace.id).where({ external_id: input.external_id }).first('id');
    if (existing) return { quote: await quoteById(trx, auth.workspace.id, existing.id), lines: await linesOf(trx, auth.workspace.id, existing.id), created: false };
  }
  return { ...(await createQuote(trx, auth, input, 'api')), created: true };
}

function assertDraft(quote: QuoteJson): void {
  if (quote.status !== 'draft') throw new Conflict(`Quote ${quote.quote_number} is ${quote.status}; only a draft can be edited.`);
}

/** Discount, tax rate, currency, notes and validity of a draft; `quote.updated`. */
export async function updateQuote(trx: Db, auth: Principal, id: number, changes: QuoteChanges, actor: Actor): Promise<QuoteJson> {
  const quote = await accessibleQuote(trx, auth, id, 'write', true);
  assertDraft(quote);
  const given = givenFields(changes);
  if (Object.keys(given).length === 0) return quote;
  const values = { ...given };
  if ('discount_amount' in values && values.discount_amount === null) values.discount_amount = '0';
  if ('tax_rate' in values && values.tax_rate === null) values.tax_rate = '0';
  await scoped(trx, 'quotes', auth.workspace.id).where({ id }).update({ ...values, updated_at: trx.fn.now() });
  await recalculate(trx, auth.workspace.id, id, 'tax_rate' in given ? 'tax_rate' : 'discount_amount');
  const updated = await quoteById(trx, auth.workspace.id, id);
  await recordActivity(trx, auth.workspace.id, id, 'updated', actor, `Changed ${Object.keys(given).join(', ')}.`);
  await emit(trx, auth.workspace.id, 'quote.updated', { quote: updated });
  return updated;
}

/** Hard delete; `quote.deleted` carries the snapshot taken before removal. */
export async function deleteQuote(trx: Db, auth: Principal, id: number): Promise<QuoteJson> {
  const quote = await accessibleQuote(trx, auth, id, 'write', true);
  await scoped(trx, 'orders', auth.workspace.id).where({ quote_id: id }).update({ quote_id: null });
  await scoped(trx, 'quotes', auth.workspace.id).where({ id }).delete();
  await emit(trx, auth.workspace.id, 'quote.deleted', { quote });
  return quote;
}

export async function addLine(trx: Db, auth: Principal, quoteId: number, line: LineInput, actor: Actor) {
  const quote = await accessibleQuote(trx, auth, quoteId, 'write', true);
  assertDraft(quote);
  // The body is the line itself: a missing price is 422 naming `price`.
  const lineId = await insertLine(trx, auth.workspace.id, quoteId, line, '');
  return afterLineChange(trx, auth.workspace.id, quoteId, lineId, 'line_added', actor);
}

async function lineOf(trx: Db, workspaceId: number, quoteId: number, lineId: number) {
  const row = await scoped(trx, 'quote_lines as l', workspaceId).where({ 'l.quote_id': quoteId, 'l.id': lineId }).first('l.sku', trx.raw('l.price::text as price'), trx.raw(`${lineJson()} as json`));
  if (!row) throw new NotFound('Line not found.');
  return row as { sku: string | null; price: string; json: LineJson };
}

export async function updateLine(trx: Db, auth: Principal, quoteId: number, lineId: number, changes: LineChanges, actor: Actor) {
  const quote = await accessibleQuote(trx, auth, quoteId, 'write', true);
  assertDraft(quote);
  const current = await lineOf(trx, auth.workspace.id, quoteId, lineId);
  const given = givenFields(changes);
  if (Object.keys(given).length === 0) return { quote, line: current.json };
  assertLineFits(given.quantity ?? String(current.json.quantity), given.price ?? current.price, 'quantity');
  const values: Record<string, unknown> = { ...given };
  if (given.sku !== undefined && given.price === undefined && given.sku !== current.sku) {
    // A new SKU naming a variant brings its price, as on creation; otherwise the price stays.
    const variant = given.sku ? await scoped(trx, 'variants', auth.workspace.id).where({ sku: given.sku }).first('id', 'price') : undefined;
    values.variant_id = variant?.id ?? null;
    if (variant?.price !== null && variant?.price !== undefined) values.price = String(variant.price);
  }
  await scoped(trx, 'quote_lines', auth.workspace.id)
    .where({ id: lineId, quote_id: quoteId })
    .update({ ...values, updated_at: trx.fn.now() });
  await scoped(trx, 'quote_lines', auth.workspace.id)
    .where({ id: lineId })
    .update({ line_total: trx.raw('round(quantity * price, 2)') })
    .catch((err: unknown) => {
      // A new SKU may bring a variant price that makes the line too large.
      if (isNumericOverflow(err)) throw new Validation('quantity', 'quantity: quantity × price must be less than 1000000000000.');
      throw err;
    });
  return afterLineChange(trx, auth.workspace.id, quoteId, lineId, 'line_updated', actor);
}

export async function removeLine(trx: Db, auth: Principal, quoteId: number, lineId: number, actor: Actor) {
  const quote = await accessibleQuote(trx, auth, quoteId, 'write', true);
  assertDraft(quote);
  const { json: line } = await lineOf(trx, auth.workspace.id, quoteId, lineId);
  await scoped(trx, 'quote_lines', auth.workspace.id).where({ id: lineId }).delete();
  await recalculate(trx, auth.workspace.id, quoteId);
  await recordActivity(trx, auth.workspace.id, quoteId, 'line_removed', actor, `Removed line ${line.sku ?? line.description ?? lineId}.`);
  await emit(trx, auth.workspace.id, 'quote.line_removed', { quote_id: quoteId, line_id: lineId });
  return { quote: await quoteById(trx, auth.workspace.id, quoteId), line };
}

async function afterLineChange(trx: Db, workspaceId: number, quoteId: number, lineId: number, type: 'line_added' | 'line_updated', actor: Actor) {
  await recalculate(trx, workspaceId, quoteId, 'quantity');
  const { json: line } = await lineOf(trx, workspaceId, quoteId, lineId);
  const verb = type === 'line_added' ? 'Added' : 'Changed';
  await recordActivity(trx, workspaceId, quoteId, type, actor, `${verb} line ${line.sku ?? line.description ?? lineId}.`);
  await emit(trx, workspaceId, `quote.${type}`, { quote_id: quoteId, line });
  return { quote: await quoteById(trx, workspaceId, quoteId), line };
}

/** 409 naming the current status unless the addendum allows the quote to become `to`. */
export function assertTransition(quote: QuoteJson, to: QuoteStatus): void {
  if (!transitions[quote.status].includes(to)) {
    throw new Conflict(`Quote ${quote.quote_number} is ${quote.status}; it cannot become ${to}.`);
  }
}

/**
 * Moves the quote to `to` if the addendum allows it (409 naming the current status otherwise),
 * stamps the time, writes the activity and emits the event named after the new status.
 */
export async function transition(trx: Db, workspaceId: number, quote: QuoteJson, to: QuoteStatus, actor: Actor, message?: string): Promise<QuoteJson> {
  assertTransition(quote, to);
  const stamp = timestampOf[to];
  await scoped(trx, 'quotes', workspaceId)
    .where({ id: quote.id })
    .update({ status: to, ...(stamp ? { [stamp]: trx.fn.now() } : {}), updated_at: trx.fn.now() });
  const updated = await quoteById(trx, workspaceId, quote.id);
  await recordActivity(trx, workspaceId, quote.id, to, actor, message ?? `Quote ${quote.quote_number} ${to}.`);
  await emit(trx, workspaceId, `quote.${to}` as 'quote.sent', { quote: updated });
  return updated;
}

/** A transition requested through the API by a signed-in user (write access to the quote's channel). */
export async function transitionQuote(trx: Db, auth: Principal, id: number, to: QuoteStatus, actor: Actor): Promise<QuoteJson> {
  const quote = await accessibleQuote(trx, auth, id, 'write', true);
  return transition(trx, auth.workspace.id, quote, to, actor);
}

export async function lockedQuoteForUser(trx: Db, auth: Principal, id: number): Promise<QuoteJson> {
  return accessibleQuote(trx, auth, id, 'write', true);
}
