import type { Access } from '../access.js';
import type { Db } from '../db/database.js';
import { jsonPages, textPages, type JsonPage } from '../db/pages.js';
import { scoped, unfiltered, whereExact, whereSearch } from '../db/scoped.js';
import { Conflict, NotFound, Validation } from '../errors.js';
import { emit, emittingStatement, type FoldedEvent } from '../events/outbox.js';
import { randomToken } from '../crypto.js';
import { assertChannelAccess, assertChannelExists, whereReadable } from '../channels/access.js';
import { givenFields } from '../db/fields.js';
import { preparedQuery } from '../db/prepared.js';
import { isNumericOverflow } from '../db/errors.js';
import { lineTotalFits } from '../money.js';
import { upsertCustomer } from '../customers/service.js';
import type { LineChanges, LineInput, QuoteChanges, QuoteInput, QuoteStatus } from './schema.js';

export type QuoteJson = Record<string, unknown> & { id: number; status: QuoteStatus; quote_number: string; channel_id: number | null };
export type LineJson = Record<string, unknown> & { id: number };

/**
 * The API shape of a quote: the compact JSON text the row keeps (`api_json`, rendered by a trigger on
 * every write, money as two-decimal text), as json so that pg hands back an object. Lists send the
 * text itself; single reads and events re-serialise the object to the same bytes.
 */
export const quoteJson = (q = 'q') => `${q}.api_json::json`;

/**
 * The API shape of a quote line, as json (pg hands back an object); its text is compact, as JSON.stringify prints it
 * (the composite type of migration 20261125010000), so a created quote's lines are sent as PostgreSQL wrote them.
 * `times`: the created_at and updated_at texts, when the caller has them already (see insertQuote).
 */
export const lineJson = (l = 'l', times = `iso_time(${l}.created_at), iso_time(${l}.updated_at)`) =>
  `row_to_json(row(${l}.id, ${l}.quote_id, ${l}.variant_id, ${l}.sku, ${l}.description, trim_scale(${l}.quantity)::text, ${l}.price::text, ` +
  `${l}.line_total::text, ${times})::quote_lines_api)`;

/**
 * A new line's created_at and updated_at are the transaction's now() (their default), the same for every line a
 * statement inserts: rendered once (a scalar subquery is run once per statement) rather than twice a line. On PGlite
 * that was a tenth of what 49 more lines add to the insert (0.08 of 0.79 ms; bench/README.md, 2026-11-27).
 */
const NEW_LINE_TIMES = '(select iso_time(now())), (select iso_time(now()))';

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

/** The quote's JSON; `lock`: read with its row locked until the transaction ends (FOR UPDATE), in the same statement. */
export async function quoteById(db: Db, access: Access, id: number, lock = false): Promise<QuoteJson> {
  const query = scoped(db, 'quotes as q', access.workspaceId).where('q.id', id);
  const row = await (lock ? query.forUpdate() : query).first(db.raw(`${quoteJson()} as json`));
  if (!row) throw new NotFound('Quote not found.');
  return row.json;
}

export async function linesOf(db: Db, access: Access, quoteId: number): Promise<LineJson[]> {
  const rows = await scoped(db, 'quote_lines as l', access.workspaceId).where('l.quote_id', quoteId).orderBy('l.id').select(db.raw(`${lineJson()} as json`));
  return rows.map((r: { json: LineJson }) => r.json);
}

async function activitiesOf(db: Db, workspaceId: number, quoteId: number): Promise<Record<string, unknown>[]> {
  const rows = await scoped(db, 'quote_activities as a', workspaceId).where('a.quote_id', quoteId).orderBy('a.id').select(db.raw(`${activityJson()} as json`));
  return rows.map((r: { json: Record<string, unknown> }) => r.json);
}

/** An activity on the quote's timeline, named after the caller's actor. */
export async function recordActivity(db: Db, access: Access, quoteId: number, type: string, message: string): Promise<void> {
  await db('quote_activities').insert({ workspace_id: access.workspaceId, quote_id: quoteId, type, actor: access.actor, message });
}

/** The quote, after the caller's channel access is checked (read, or write for changes); `lock` as for quoteById. */
async function accessibleQuote(db: Db, access: Access, id: number, need: 'read' | 'write', lock = false): Promise<QuoteJson> {
  const quote = await quoteById(db, access, id, lock);
  await assertChannelAccess(db, access, quote.channel_id, need);
  return quote;
}

/** The quote, when the caller's channel roles let them read it (403 otherwise). */
export async function readableQuote(db: Db, access: Access, id: number): Promise<QuoteJson> {
  return accessibleQuote(db, access, id, 'read');
}

export async function getQuote(db: Db, access: Access, id: number) {
  const quote = await accessibleQuote(db, access, id, 'read');
  return { quote, lines: await linesOf(db, access, id), activities: await activitiesOf(db, access.workspaceId, id) };
}

export interface QuoteFilters {
  status?: string;
  channel_id?: number;
  customer_id?: number;
  q?: string;
}

/** The quotes the caller may read, filtered, by id, as JSON pages. */
export function listQuotes(db: Db, access: Access, filters: QuoteFilters): AsyncGenerator<JsonPage> {
  if (access.channels === 'all' && unfiltered(filters)) return textPages(db, 'quote_texts', access.workspaceId);
  const filtered = () => {
    const query = whereReadable(scoped(db, 'quotes as q', access.workspaceId), db, access, 'q.channel_id');
    whereExact(query, { 'q.status': filters.status, 'q.channel_id': filters.channel_id, 'q.customer_id': filters.customer_id });
    return whereSearch(query, ['q.quote_number', 'q.customer_name', 'q.customer_email'], filters.q);
  };
  return jsonPages(db, filtered, 'q.id', 'q.api_json');
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
  if (rows[0]?.too_much) throw tooMuchDiscount(rows[0].discount, rows[0].subtotal);
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
    .catch(totalOverflow(field));
}

const tooMuchDiscount = (discount: string, subtotal: string) =>
  new Validation('discount_amount', `discount_amount (${discount}) must not exceed the subtotal (${subtotal}).`);

const totalOverflow = (field: string) => (err: unknown) => {
  if (isNumericOverflow(err)) throw new Validation(field, `${field}: the quote total must be less than 1000000000000.`);
  throw err;
};

interface Variant {
  id: number;
  price: string | null;
  /** "T-Shirt, Small": the product's name, then the variant's when it has one. */
  description: string;
}

/** The variants the SKUs name, in one query. */
async function variantsBySku(trx: Db, workspaceId: number, skus: string[]): Promise<Map<string, Variant>> {
  const wanted = [...new Set(skus)];
  if (wanted.length === 0) return new Map();
  const { rows } = await trx.raw(
    `select v.sku, v.id, v.price::text as price, p.name || coalesce(', ' || nullif(v.name, ''), '') as description
     from variants v join products p on p.id = v.product_id and p.workspace_id = v.workspace_id
     where v.workspace_id = ? and v.sku in (select json_array_elements_text(?::json))`,
    [workspaceId, JSON.stringify(wanted)],
  );
  return new Map(rows.map((r: Variant & { sku: string }) => [r.sku, { id: r.id, price: r.price, description: r.description }]));
}

interface PricedLine {
  variant_id: number | null;
  sku: string | null;
  description: string | null;
  quantity: string;
  price: string;
}

/**
 * The line's price (given, or the price of the variant its SKU names; 422 `<field>.price` when
 * neither), variant and description (given, or the variant's).
 */
function priceLine(line: LineInput, variant: Variant | undefined, field: string): PricedLine {
  const price = line.price ?? variant?.price ?? null;
  const at = (name: string) => (field ? `${field}.${name}` : name);
  if (price === null) {
    throw new Validation(at('price'), `${at('price')} is required${line.sku ? ` (no variant with SKU "${line.sku}" has a price)` : ''}.`);
  }
  if (!lineTotalFits(line.quantity, price)) throw new Validation(at('quantity'), `${at('quantity')}: quantity × price must be less than 1000000000000.`);
  return { variant_id: variant?.id ?? null, sku: line.sku ?? null, description: line.description ?? variant?.description ?? null, quantity: line.quantity, price };
}

function assertLineFits(quantity: string, price: string, field: string): void {
  if (!lineTotalFits(quantity, price)) throw new Validation(field, `${field}: quantity × price must be less than 1000000000000.`);
}

async function insertLine(trx: Db, workspaceId: number, quoteId: number, line: LineInput, field: string): Promise<number> {
  const variants = await variantsBySku(trx, workspaceId, line.sku ? [line.sku] : []);
  const priced = priceLine(line, line.sku ? variants.get(line.sku) : undefined, field);
  const [row] = await trx('quote_lines')
    .insert({ ...priced, workspace_id: workspaceId, quote_id: quoteId, line_total: trx.raw('round(?::numeric * ?::numeric, 2)', [priced.quantity, priced.price]) })
    .returning('id');
  return row.id;
}

async function resolveCustomer(trx: Db, access: Access, input: Pick<QuoteInput, 'customer_id' | 'customer'>) {
  if (input.customer) {
    const { customer } = await upsertCustomer(trx, access, input.customer);
    return customer;
  }
  if (input.customer_id === undefined) return null;
  const customer = await scoped(trx, 'customers', access.workspaceId).where({ id: input.customer_id }).first('id', 'name', 'email');
  if (!customer) throw new Validation('customer_id', `customer_id: no customer ${input.customer_id} in this workspace.`);
  return customer;
}

interface Customer {
  id: number;
  name: string | null;
  email: string;
}

/** A customer given by id and the variants SKUs name, in one query (see quoteReferences). */
const referencesById = preparedQuery<{ customer: Customer | null; variants: (Variant & { sku: string })[] | null }>('quoting_quote_references', `
  select (select json_build_object('id', c.id, 'name', c.name, 'email', c.email) from customers c where c.workspace_id = ? and c.id = ?) as customer,
         (select json_agg(json_build_object('sku', v.sku, 'id', v.id, 'price', v.price::text, 'description', p.name || coalesce(', ' || nullif(v.name, ''), '')))
          from variants v join products p on p.id = v.product_id and p.workspace_id = v.workspace_id
          where v.workspace_id = ? and v.sku in (select json_array_elements_text(?::json))) as variants`);

/**
 * What a new quote names: its customer (upserted from `customer`, or the one `customer_id` names: 422
 * when there is none) and the variants its SKUs name. A customer given by id and the variants are read
 * in one query.
 */
async function quoteReferences(trx: Db, access: Access, input: QuoteInput, skus: string[]): Promise<{ customer: Customer | null; variants: Map<string, Variant> }> {
  if (input.customer || input.customer_id === undefined) {
    return { customer: await resolveCustomer(trx, access, input), variants: await variantsBySku(trx, access.workspaceId, skus) };
  }
  const workspaceId = access.workspaceId;
  const [row] = await referencesById(trx, [workspaceId, input.customer_id, workspaceId, JSON.stringify([...new Set(skus)])]);
  if (!row.customer) throw new Validation('customer_id', `customer_id: no customer ${input.customer_id} in this workspace.`);
  const variants = row.variants ?? [];
  return { customer: row.customer, variants: new Map(variants.map(({ sku, ...variant }) => [sku, variant])) };
}

/**
 * A new quote with its lines and totals, under a unique placeholder number (createQuote takes the number last);
 * no row when the discount exceeds the subtotal. Gives the quote's id, the subtotal and the lines as the API shows
 * them: a JSON array, as text.
 */
const insertQuote = preparedQuery<{ id: number | null; subtotal: string; lines: string }>('quoting_insert_quote', `
  with input as (
    select * from json_to_recordset(?::json) as i(ord int, variant_id int, sku text, description text, quantity numeric, price numeric)
  ), t as (
    select coalesce(sum(round(quantity * price, 2)), 0) as subtotal, ?::numeric as discount, ?::numeric as rate from input
  ), quote as (
    insert into quotes (workspace_id, quote_number, customer_id, customer_name, customer_email, channel_id, currency, notes, valid_until,
                        public_token, external_id, discount_amount, tax_rate, subtotal, tax_amount, total)
    select ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, t.discount, t.rate, t.subtotal, round((t.subtotal - t.discount) * t.rate / 100, 2),
           t.subtotal - t.discount + round((t.subtotal - t.discount) * t.rate / 100, 2)
    from t where t.discount <= t.subtotal
    returning id
  ), inserted as (
    insert into quote_lines (workspace_id, quote_id, variant_id, sku, description, quantity, price, line_total)
    select ?, quote.id, i.variant_id, i.sku, i.description, i.quantity, i.price, round(i.quantity * i.price, 2)
    from quote, input i order by i.ord
    returning quote_lines.id, ${lineJson('quote_lines', NEW_LINE_TIMES)}::text as json
  )
  select (select id from quote) as id, t.subtotal::text as subtotal,
         (select '[' || coalesce(string_agg(json, ',' order by id), '') || ']' from inserted) as lines
  from t`);

/** A new quote's currency when neither the request nor its channel names one. */
const DEFAULT_CURRENCY = 'USD';

/** A quote and its lines as the API sends them: JSON text, kept as PostgreSQL rendered it. */
export interface QuoteText {
  quote: string;
  lines: string;
}

/**
 * Creates a draft with its lines; `quote.created` carries the quote and its lines. Its currency is the one
 * given, else its channel's (a GBP channel's quotes are in GBP unless told otherwise), else USD. The number of
 * statements does not grow with the lines (6 with BEGIN and COMMIT): the customer and the SKUs are
 * looked up in one query; the quote, its lines and its totals are written by one statement, whose
 * RETURNING gives the lines of the reply; then one statement takes the gap-free number and writes the
 * activity and the event (with its deliveries). The number comes last because its counter row stays
 * locked until commit: concurrent creations in a workspace queue behind that one statement and the commit.
 * The quote and its lines come back as the text PostgreSQL rendered, and go on to the event and the answer
 * as they are (a 50-line quote's lines were parsed, then serialised twice).
 */
export async function createQuote(
  trx: Db,
  access: Access,
  input: QuoteInput & { external_id?: string | null },
): Promise<QuoteText> {
  const workspaceId = access.workspaceId;
  const channel = await assertChannelExists(trx, workspaceId, input.channel_id);
  await assertChannelAccess(trx, access, input.channel_id, 'write');
  const given = input.lines ?? [];
  const { customer, variants } = await quoteReferences(trx, access, input, given.flatMap((l) => (l.sku ? [l.sku] : [])));
  const lines = given.map((line, index) => ({ ord: index, ...priceLine(line, line.sku ? variants.get(line.sku) : undefined, `lines.${index}`) }));
  const publicToken = randomToken(24);
  const discount = input.discount_amount ?? '0';
  const [created] = await insertQuote(trx, [
    JSON.stringify(lines), discount, input.tax_rate ?? '0',
    // A unique placeholder until the number is taken at the end.
    workspaceId, `pending:${publicToken}`, customer?.id ?? null, customer?.name ?? null, customer?.email ?? null, input.channel_id ?? null,
    input.currency ?? channel?.currency ?? DEFAULT_CURRENCY, input.notes ?? null, input.valid_until ?? null, publicToken, input.external_id ?? null,
    workspaceId,
  ]).catch(totalOverflow('lines'));
  if (created.id === null) throw tooMuchDiscount(discount, created.subtotal);
  const quote = await takeQuoteNumber(trx, access, created.id, created.lines);
  return { quote, lines: created.lines };
}

/** The `quote.created` event's data as `emit` would write it, JSON.stringify({quote, lines}): api_json is that compact text. */
const QUOTE_CREATED = { from: 'q', data: `('{"quote":' || q.api_json || ',"lines":' || ?::text || '}')::json` };

/** takeQuoteNumber's statement, with the event's CTEs (or, with events off or after an event's failure, without). */
const numberingText = (event: FoldedEvent | null) => `
  with n as (
    insert into quote_numbers (workspace_id, year, last_number) values (?, ?, 1)
    on conflict (workspace_id, year) do update set last_number = quote_numbers.last_number + 1
    returning last_number::text as last
  ), q as (
    update quotes set quote_number = ? || lpad(n.last, greatest(6, length(n.last)), '0') from n
    where quotes.id = ? and quotes.workspace_id = ?
    returning quotes.quote_number, quotes.api_json
  ), a as (
    insert into quote_activities (workspace_id, quote_id, type, actor, message)
    select ?, ?, 'created', ?, 'Quote ' || q.quote_number || ' created.' from q
  )${event ? `, ${event.ctes}` : ''}
  select api_json as quote${event ? `, ${event.column}` : ''} from q`;
const numberQuote = emittingStatement<{ quote: string }>('quoting_number_quote', QUOTE_CREATED, numberingText);

/**
 * `Q-<year>-<6 digits>`, gap-free per workspace and year: the counter row stays locked until the
 * creating transaction ends. One statement numbers the quote, records the `created` activity and
 * emits `quote.created` (the quote as numbered, with `lines`, a JSON array's text); returns the quote's JSON text.
 */
async function takeQuoteNumber(trx: Db, access: Access, quoteId: number, lines: string): Promise<string> {
  const year = new Date().getUTCFullYear();
  const values = [access.workspaceId, year, `Q-${year}-`, quoteId, access.workspaceId, access.workspaceId, quoteId, access.actor];
  const [row] = await numberQuote(trx, access, 'quote.created', values, [lines]);
  return row.quote;
}

/** `POST /quotes/external`: idempotent on external_id (the first quote is returned, 200). */
export async function createExternalQuote(
  trx: Db,
  access: Access,
  input: QuoteInput & { external_id?: string | null },
): Promise<QuoteText & { created: boolean }> {
  if (input.external_id) {
    // Serialises concurrent creates with the same external_id in this workspace.
    await trx.raw('select pg_advisory_xact_lock(hashtext(?), ?)', [`quote-external:${input.external_id}`, access.workspaceId]);
    const existing = await scoped(trx, 'quotes', access.workspaceId).where({ external_id: input.external_id }).first('id');
    if (existing) {
      const quote = JSON.stringify(await quoteById(trx, access, existing.id));
      return { quote, lines: JSON.stringify(await linesOf(trx, access, existing.id)), created: false };
    }
  }
  return { ...(await createQuote(trx, access, input)), created: true };
}

function assertDraft(quote: QuoteJson): void {
  if (quote.status !== 'draft') throw new Conflict(`Quote ${quote.quote_number} is ${quote.status}; only a draft can be edited.`);
}

/** Discount, tax rate, currency, notes and validity of a draft; `quote.updated`. */
export async function updateQuote(trx: Db, access: Access, id: number, changes: QuoteChanges): Promise<QuoteJson> {
  const quote = await accessibleQuote(trx, access, id, 'write', true);
  assertDraft(quote);
  const given = givenFields(changes);
  if (Object.keys(given).length === 0) return quote;
  const values = { ...given };
  if ('discount_amount' in values && values.discount_amount === null) values.discount_amount = '0';
  if ('tax_rate' in values && values.tax_rate === null) values.tax_rate = '0';
  await scoped(trx, 'quotes', access.workspaceId).where({ id }).update({ ...values, updated_at: trx.fn.now() });
  await recalculate(trx, access.workspaceId, id, 'tax_rate' in given ? 'tax_rate' : 'discount_amount');
  const updated = await quoteById(trx, access, id);
  await recordActivity(trx, access, id, 'updated', `Changed ${Object.keys(given).join(', ')}.`);
  await emit(trx, access, 'quote.updated', { quote: updated });
  return updated;
}

/** Hard delete; `quote.deleted` carries the snapshot taken before removal. */
export async function deleteQuote(trx: Db, access: Access, id: number): Promise<QuoteJson> {
  const quote = await accessibleQuote(trx, access, id, 'write', true);
  await scoped(trx, 'orders', access.workspaceId).where({ quote_id: id }).update({ quote_id: null });
  await scoped(trx, 'quotes', access.workspaceId).where({ id }).delete();
  await emit(trx, access, 'quote.deleted', { quote });
  return quote;
}

export async function addLine(trx: Db, access: Access, quoteId: number, line: LineInput) {
  const quote = await accessibleQuote(trx, access, quoteId, 'write', true);
  assertDraft(quote);
  // The body is the line itself: a missing price is 422 naming `price`.
  const lineId = await insertLine(trx, access.workspaceId, quoteId, line, '');
  return afterLineChange(trx, access, quoteId, lineId, 'line_added');
}

async function lineOf(trx: Db, workspaceId: number, quoteId: number, lineId: number) {
  const row = await scoped(trx, 'quote_lines as l', workspaceId).where({ 'l.quote_id': quoteId, 'l.id': lineId }).first('l.sku', trx.raw('l.price::text as price'), trx.raw(`${lineJson()} as json`));
  if (!row) throw new NotFound('Line not found.');
  return row as { sku: string | null; price: string; json: LineJson };
}

export async function updateLine(trx: Db, access: Access, quoteId: number, lineId: number, changes: LineChanges) {
  const quote = await accessibleQuote(trx, access, quoteId, 'write', true);
  assertDraft(quote);
  const current = await lineOf(trx, access.workspaceId, quoteId, lineId);
  const given = givenFields(changes);
  if (Object.keys(given).length === 0) return { quote, line: current.json };
  assertLineFits(given.quantity ?? String(current.json.quantity), given.price ?? current.price, 'quantity');
  const values: Record<string, unknown> = { ...given };
  if (given.sku !== undefined && given.price === undefined && given.sku !== current.sku) {
    // A new SKU naming a variant brings its price, as on creation; otherwise the price stays.
    const variant = given.sku ? await scoped(trx, 'variants', access.workspaceId).where({ sku: given.sku }).first('id', 'price') : undefined;
    values.variant_id = variant?.id ?? null;
    if (variant?.price !== null && variant?.price !== undefined) values.price = String(variant.price);
  }
  await scoped(trx, 'quote_lines', access.workspaceId)
    .where({ id: lineId, quote_id: quoteId })
    .update({ ...values, updated_at: trx.fn.now() });
  await scoped(trx, 'quote_lines', access.workspaceId)
    .where({ id: lineId })
    .update({ line_total: trx.raw('round(quantity * price, 2)') })
    .catch((err: unknown) => {
      // A new SKU may bring a variant price that makes the line too large.
      if (isNumericOverflow(err)) throw new Validation('quantity', 'quantity: quantity × price must be less than 1000000000000.');
      throw err;
    });
  return afterLineChange(trx, access, quoteId, lineId, 'line_updated');
}

export async function removeLine(trx: Db, access: Access, quoteId: number, lineId: number) {
  const quote = await accessibleQuote(trx, access, quoteId, 'write', true);
  assertDraft(quote);
  const { json: line } = await lineOf(trx, access.workspaceId, quoteId, lineId);
  await scoped(trx, 'quote_lines', access.workspaceId).where({ id: lineId }).delete();
  await recalculate(trx, access.workspaceId, quoteId);
  await recordActivity(trx, access, quoteId, 'line_removed', `Removed line ${line.sku ?? line.description ?? lineId}.`);
  await emit(trx, access, 'quote.line_removed', { quote_id: quoteId, line_id: lineId });
  return { quote: await quoteById(trx, access, quoteId), line };
}

async function afterLineChange(trx: Db, access: Access, quoteId: number, lineId: number, type: 'line_added' | 'line_updated') {
  await recalculate(trx, access.workspaceId, quoteId, 'quantity');
  const { json: line } = await lineOf(trx, access.workspaceId, quoteId, lineId);
  const verb = type === 'line_added' ? 'Added' : 'Changed';
  await recordActivity(trx, access, quoteId, type, `${verb} line ${line.sku ?? line.description ?? lineId}.`);
  await emit(trx, access, `quote.${type}`, { quote_id: quoteId, line });
  return { quote: await quoteById(trx, access, quoteId), line };
}

/**
 * The day the quote's validity ended, or null while it holds (or it has no valid_until). valid_until is the last
 * day, in UTC, on which the quote may be accepted or paid; the statuses stay the addendum's six, expiry is no status.
 */
export function expiredOn(quote: QuoteJson, now = new Date()): string | null {
  const until = quote.valid_until;
  return typeof until === 'string' && until < now.toISOString().slice(0, 10) ? until : null;
}

/** 409 naming valid_until when the quote has expired: it can no longer be accepted or paid. */
export function assertNotExpired(quote: QuoteJson, to: Extract<QuoteStatus, 'accepted' | 'paid'>): void {
  const expired = expiredOn(quote);
  if (expired) {
    throw new Conflict(`Quote ${quote.quote_number} expired on ${expired} (valid_until); it can no longer be ${to === 'accepted' ? 'accepted' : 'paid'}.`);
  }
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
export async function transition(trx: Db, access: Access, quote: QuoteJson, to: QuoteStatus, message?: string): Promise<QuoteJson> {
  assertTransition(quote, to);
  const workspaceId = access.workspaceId;
  // The new status, for the status and for each timestamp's case (movingText), then the row, then the activity.
  const statuses = new Array<string>(1 + Object.keys(timestampOf).length).fill(to);
  const values = [...statuses, workspaceId, quote.id, workspaceId, quote.id, to, access.actor, message ?? `Quote ${quote.quote_number} ${to}.`];
  const [row] = await moveQuote(trx, access, `quote.${to}` as 'quote.sent', values);
  return row.quote;
}

/** A transition's event data as `emit` would write it, JSON.stringify({quote}): api_json is that compact text. */
const QUOTE_MOVED = { from: 'q', data: `('{"quote":' || q.api_json || '}')::json` };

/**
 * A transition in one statement: the status and its timestamp (the column named after the new status, when it has
 * one), the activity, and the event with its deliveries (or, with events off or after an event's failure, without).
 * It was a round trip each, and the quote read again after the update: a transition took four times as long as its
 * writes alone (bench/quotes.ts, the flow).
 */
const movingText = (event: FoldedEvent | null) => `
  with q as (
    update quotes set status = ?,
      ${Object.entries(timestampOf).map(([status, column]) => `${column} = case when ? = '${status}' then now() else ${column} end`).join(',\n      ')},
      updated_at = now()
    where workspace_id = ? and id = ?
    returning api_json
  ), a as (
    insert into quote_activities (workspace_id, quote_id, type, actor, message) select ?, ?, ?, ?, ? from q
  )${event ? `, ${event.ctes}` : ''}
  select api_json::json as quote${event ? `, ${event.column}` : ''} from q`;
const moveQuote = emittingStatement<{ quote: QuoteJson }>('quoting_move_quote', QUOTE_MOVED, movingText);

/**
 * A transition requested through the API by a signed-in user (write access to the quote's channel). Past its
 * valid_until a quote can no longer be accepted or marked paid (409); it can still be declined or cancelled.
 */
export async function transitionQuote(trx: Db, access: Access, id: number, to: QuoteStatus): Promise<QuoteJson> {
  const quote = await accessibleQuote(trx, access, id, 'write', true);
  assertTransition(quote, to);
  if (to === 'accepted' || to === 'paid') assertNotExpired(quote, to);
  return transition(trx, access, quote, to);
}

export async function lockedQuoteForUser(trx: Db, access: Access, id: number): Promise<QuoteJson> {
  return accessibleQuote(trx, access, id, 'write', true);
}
