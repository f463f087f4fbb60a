/** Quotes: create, read, update, delete and list, and a draft's lines. */
import type { Knex } from 'knex';
import { userOf, type Access } from '../access.js';
import type { Db } from '../db/database.js';
import { listPages, type JsonPage } from '../db/keyset.js';
import { textsList, type ListQuery } from '../db/list-query.js';
import { listRead, NUMBERED_PAGE_SIZE, numberedListPage, pageRowsQuery, pageSkip, type NumberedPage, type PageCursor } from '../db/numbered-pages.js';
import { scoped, unfiltered, whereExact, whereSearch } from '../db/scoped.js';
import { Conflict, NotFound, Validation } from '../errors.js';
import { emit, functionEventId } from '../events/outbox.js';
import { randomToken } from '../crypto.js';
import { assertChannelAccess, assertChannelExists, whereReadable } from '../channels/access.js';
import { readableChannelNamesQuery } from '../channels/service.js';
import { givenFields } from '../db/fields.js';
import { preparedQuery } from '../db/prepared.js';
import { shapedStatement } from '../db/statement-shapes.js';
import { isNumericOverflow } from '../db/errors.js';
import { upsertCustomer } from '../customers/service.js';
import { assertLineFits, insertLine, priceLine, recalculate, tooMuchDiscount, totalOverflow, variantsBySku, type Variant } from './pricing.js';
import { quoteStatuses, type LineChanges, type LineInput, type QuoteChanges, type QuoteFilters, type QuoteInput, type QuoteStatus } from './schema.js';

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
 * (the composite type `quote_lines_api`), so a created quote's lines are sent as PostgreSQL wrote them (quote_create
 * writes the same for a new quote's lines).
 */
export const lineJson = (l = 'l') =>
  `row_to_json(row(${l}.id, ${l}.quote_id, ${l}.variant_id, ${l}.sku, ${l}.description, trim_scale(${l}.quantity)::text, ${l}.price::text, ` +
  `${l}.line_total::text, iso_time(${l}.created_at), iso_time(${l}.updated_at))::quote_lines_api)`;

const activityJson = (a = 'a') =>
  `json_build_object('id', ${a}.id, 'type', ${a}.type, 'actor', ${a}.actor, 'message', ${a}.message, 'created_at', iso_time(${a}.created_at))`;

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

/** The quote locked for a change (FOR UPDATE), when the caller's channel roles let them write it (403 otherwise). */
export async function lockedQuoteForUser(trx: Db, access: Access, id: number): Promise<QuoteJson> {
  return accessibleQuote(trx, access, id, 'write', true);
}

export async function getQuote(db: Db, access: Access, id: number) {
  const quote = await accessibleQuote(db, access, id, 'read');
  return { quote, lines: await linesOf(db, access, id), activities: await activitiesOf(db, access.workspaceId, id) };
}

/**
 * The quotes the caller may read (channel roles: a member sees no quote of a channel they hold no role on), filtered:
 * the one query behind the JSON list, the app's numbered page, the status counts and the home page's lists.
 */
export function readableQuotes(db: Db, access: Access, filters: Partial<QuoteFilters>): Knex.QueryBuilder {
  const query = whereReadable(scoped(db, 'quotes as q', access.workspaceId), db, access, 'q.channel_id');
  whereExact(query, { 'q.status': filters.status, 'q.channel_id': filters.channel_id, 'q.customer_id': filters.customer_id });
  return whereSearch(query, ['q.quote_number', 'q.customer_name', 'q.customer_email'], filters.q);
}

/**
 * The kept counts of the quotes the caller may read (`quote_counts`: a row a channel, or none, and status; or
 * `quote_ranges`, the same by range of ids), filtered by status and channel: the rows readableQuotes would count, by
 * the same rule (whereReadable on the same column). Only for filters the counts keep (countsKept).
 */
function readableCounts(db: Db, access: Access, filters: Partial<QuoteFilters>, table: 'quote_counts' | 'quote_ranges' = 'quote_counts'): Knex.QueryBuilder {
  const query = whereReadable(scoped(db, `${table} as c`, access.workspaceId), db, access, 'c.channel_id');
  return whereExact(query, { 'c.status': filters.status, 'c.channel_id': filters.channel_id });
}

/** quote_ranges' ranges: the ids alike but for their last QUOTE_RANGE_BITS bits (1,024 ids), as its migration keeps them. */
export const QUOTE_RANGE_BITS = 10;

/**
 * The select of the id `skip` quotes below the newest the caller may read, filtered (none past the end), from the
 * kept ranges (migration 20261128060000): their counts summed by range from the newest down to the range where the
 * skipped quotes end, then that range's quotes walked to the rest. A page typed in by number costs as much however
 * deep it is. Only for filters the counts keep (countsKept). Its statement is read in index order (listRead
 * `indexOrder`), so that the ranges are summed as an index (20261128100000) gives them, newest first, and no further
 * than the range where the skip ends.
 */
function keptFirstId(db: Db, access: Access, filters: Partial<QuoteFilters>): (skip: number) => Knex.QueryBuilder {
  return (skip) => {
    // A range's count fits an int (at most 1,024 quotes), and their running sum a bigint: no numeric arithmetic. Grouped
    // first: the running sum then has a row a range, not one for each status and channel in it.
    const ranges = readableCounts(db, access, filters, 'quote_ranges')
      .groupBy('c.bucket')
      .orderBy('c.bucket', 'desc')
      .select('c.bucket', db.raw('sum(c.n)::int as n'), db.raw('sum(sum(c.n)::int) over (order by c.bucket desc rows unbounded preceding) as through'));
    // The range where the skip ends, and how many of its quotes, newest first, are skipped.
    const range = db.from(ranges.as('s')).where('s.through', '>', skip).orderBy('s.bucket', 'desc').limit(1, { skipBinding: true })
      .select('s.bucket', db.raw('(? - (s.through - s.n))::int as rest', [skip]));
    // knex takes a raw offset (the range's rest, from the lateral's left side), though its types say a number.
    const within = readableQuotes(db, access, filters).where('q.id', '<', db.raw(`(f.bucket + 1) << ${QUOTE_RANGE_BITS}`))
      .orderBy('q.id', 'desc').offset(db.raw('f.rest') as unknown as number).limit(1, { skipBinding: true }).select('q.id');
    return db.from(db.raw('? as f cross join lateral ? as x', [range, within])).select('x.id');
  };
}

/** Whether quote_counts answers for these filters: it keeps channels and statuses, not customers or searches. */
const countsKept = (filters: Partial<QuoteFilters>) => unfiltered({ q: filters.q, customer_id: filters.customer_id });

/** How many quotes the caller may read match the filters, from the kept counts (see countsKept). */
async function keptTotal(db: Db, access: Access, filters: Partial<QuoteFilters>): Promise<number> {
  return (await readableCounts(db, access, filters).first(db.raw('coalesce(sum(c.n), 0)::int as n'))).n;
}

/**
 * The list of quotes the caller may read, filtered; the whole list of a caller who reads every channel from its texts.
 * Its total comes from the kept counts when they answer for the filters.
 */
function quoteList(db: Db, access: Access, filters: Partial<QuoteFilters>): ListQuery {
  const total = countsKept(filters) ? () => keptTotal(db, access, filters) : undefined;
  if (access.channels === 'all' && unfiltered(filters)) return { ...textsList(db, 'quote_texts', access.workspaceId), total };
  return { base: () => readableQuotes(db, access, filters), idColumn: 'q.id', json: 'q.api_json', total };
}

/** The quotes the caller may read, filtered, by id, as JSON pages. */
export function listQuotes(db: Db, access: Access, filters: QuoteFilters): AsyncGenerator<JsonPage> {
  return listPages(db, quoteList(db, access, filters));
}

/** Page `page` of the quotes the caller may read, filtered, newest first, with their count (the app's list). */
export function quotePage(db: Db, access: Access, filters: Partial<QuoteFilters>, page: number): Promise<NumberedPage<QuoteJson>> {
  return numberedListPage<QuoteJson>(db, quoteList(db, access, filters), page);
}

/** A row of the quotes list page: the fields it shows, without the rest of the quote's JSON. */
export type QuoteListRow = {
  id: number;
  quote_number: string;
  status: QuoteStatus;
  currency: string;
  total: string;
  customer_name: string | null;
  customer_email: string | null;
  valid_until: string | null;
  updated_at: string;
};

/**
 * A list row as SQL writes it: an array of QuoteListRow's fields in order, a sixth of the bytes of the quote's JSON
 * to read and parse. Instants in json's ISO 8601 (`2030-01-31T14:05:00.123+00:00`), money as text.
 */
const listRowJson = 'json_build_array(q.id, q.quote_number, q.status, q.currency, q.total::text, q.customer_name, q.customer_email, q.valid_until, q.updated_at)';

function listRow([id, quote_number, status, currency, total, customer_name, customer_email, valid_until, updated_at]: unknown[]): QuoteListRow {
  return { id, quote_number, status, currency, total, customer_name, customer_email, valid_until, updated_at } as QuoteListRow;
}

/** The quotes list page's data: a page of the quotes, their status counts, and the channels the caller may read. */
export interface QuoteListPage {
  page: NumberedPage<QuoteListRow>;
  counts: Record<QuoteStatus, number>;
  channels: { id: number; name: string }[];
}

/**
 * Everything the quotes list page shows, in one statement: page `page` of the quotes the caller may read (from the
 * cursor when its neighbour's link gave one; typed in alone, from the kept ranges when they answer for the filters,
 * see keptFirstId), the status counts for its tabs under the other filters (whose sum, or the filtered status's
 * count, is the pager's total), and the channels for the filter. A page costs one round trip, as a JSON list does.
 */
export async function quoteListPage(db: Db, access: Access, filters: Partial<QuoteFilters>, page: number, cursor: PageCursor = {}): Promise<QuoteListPage> {
  const skip = pageSkip(page);
  const values: ListPageValues = {
    workspaceId: access.workspaceId, userId: access.channels === 'all' ? undefined : userOf(access),
    status: given(filters.status), channel_id: filters.channel_id, customer_id: filters.customer_id, q: given(filters.q),
    skip: skip > 0 ? skip : undefined, before: cursor.before, after: cursor.after,
  };
  const statement = shapedStatement(db, `quote list page, channels ${access.channels}`, values, (v) => listPageStatement(db, access, v));
  const indexOrder = values.skip !== undefined && cursor.before === undefined && cursor.after === undefined && countsKept(filters);
  const [row] = await listRead<{ rows: string | Buffer; counts: string | Buffer; channels: string | Buffer }>(db, statement, { indexOrder });
  const found = (JSON.parse(`[${row.rows.toString()}]`) as unknown[][]).map(listRow);
  const counts = statusCounts(JSON.parse(row.counts.toString()) as Record<string, number>);
  const total = filters.status ? counts[filters.status] : quoteStatuses.reduce((sum, status) => sum + counts[status], 0);
  const size = NUMBERED_PAGE_SIZE;
  return {
    page: { rows: cursor.after !== undefined ? found.reverse() : found, total, page, size, pages: Math.max(1, Math.ceil(total / size)) },
    counts,
    channels: JSON.parse(row.channels.toString()),
  };
}

/** What the list page's statement binds, each as given (see shapedStatement): a skip past page 1, a cursor when given. */
type ListPageValues = {
  workspaceId: number;
  userId: number | undefined;
  status: string | undefined;
  channel_id: number | undefined;
  customer_id: number | undefined;
  q: string | undefined;
  skip: number | undefined;
  before: number | undefined;
  after: number | undefined;
};

const given = <T>(value: T | '' | undefined): T | undefined => (value === '' ? undefined : value);

/** quoteListPage's one statement, of these values for a caller of this access's kind. */
function listPageStatement(db: Db, kind: Access, v: ListPageValues): Knex.QueryBuilder {
  const access: Access = { ...kind, workspaceId: v.workspaceId, userId: v.userId ?? kind.userId };
  const filters = { status: v.status as QuoteStatus | undefined, channel_id: v.channel_id, customer_id: v.customer_id, q: v.q };
  const firstId = countsKept(filters) ? keptFirstId(db, access, filters) : undefined;
  const cursor = { before: v.before, after: v.after };
  const rows = pageRowsQuery(db, () => readableQuotes(db, access, filters), { idColumn: 'q.id', json: listRowJson, skip: v.skip ?? 0, cursor, firstId });
  return db.select(
    db.raw(`(select coalesce(string_agg(r.json, ','), '') from ? as r) as rows`, [rows]),
    db.raw(`(select coalesce(json_object_agg(k.status, k.n), '{}') from ? as k)::text as counts`, [statusCountsQuery(db, access, filters)]),
    db.raw(`(select coalesce(json_agg(json_build_object('id', ch.id, 'name', ch.name)), '[]') from ? as ch)::text as channels`, [readableChannelNamesQuery(db, access)]),
  );
}

/** The status counts' select (status, n) for the tabs: from the kept counts when they answer for the filters. */
function statusCountsQuery(db: Db, access: Access, filters: Partial<Omit<QuoteFilters, 'status'>>): Knex.QueryBuilder {
  // A status passed anyway (a page's whole query) must not narrow the tabs' counts to its own.
  const all = { ...filters, status: undefined };
  return countsKept(all)
    ? readableCounts(db, access, all).groupBy('c.status').select('c.status', db.raw('sum(c.n)::int as n'))
    : readableQuotes(db, access, all).groupBy('q.status').select('q.status', db.raw('count(*)::int as n'));
}

/** Every status with its count, 0 for those with none. */
function statusCounts(found: Record<string, number>): Record<QuoteStatus, number> {
  return Object.fromEntries(quoteStatuses.map((status) => [status, found[status] ?? 0])) as Record<QuoteStatus, number>;
}

/**
 * How many of the quotes the caller may read, filtered, have each status (0 for none): one query, for the status tabs;
 * from the kept counts when they answer for the filters, else by counting the quotes.
 */
export async function quoteStatusCounts(db: Db, access: Access, filters: Partial<Omit<QuoteFilters, 'status'>>): Promise<Record<QuoteStatus, number>> {
  const rows = (await statusCountsQuery(db, access, filters)) as { status: QuoteStatus; n: number }[];
  return statusCounts(Object.fromEntries(rows.map(({ status, n }) => [status, n])));
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

/**
 * A customer given by id and the variants SKUs name, in one query (see quoteReferences): the database function
 * quote_references, which keeps its plan per connection as quote_create does.
 */
const referencesById = preparedQuery<{ customer: Customer | null; variants: (Variant & { sku: string })[] | null }>(
  'quoting_quote_references',
  'select * from quote_references(?::int, ?::int, ?::json)',
);

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
  const [row] = await referencesById(trx, [workspaceId, input.customer_id, JSON.stringify([...new Set(skus)])]);
  if (!row.customer) throw new Validation('customer_id', `customer_id: no customer ${input.customer_id} in this workspace.`);
  const variants = row.variants ?? [];
  return { customer: row.customer, variants: new Map(variants.map(({ sku, ...variant }) => [sku, variant])) };
}

/**
 * A new quote under its gap-free number, with its lines, totals, `created` activity and `quote.created` event: the
 * database function quote_create (migrations/20261128020000_quote_create_function.ts), which keeps its statement's
 * plan per connection, through a transaction pooler too. Its values are writeQuote's.
 */
const insertQuote = preparedQuery<{ id: number | null; subtotal: string; quote: string; lines: string }>(
  'quoting_quote_create',
  'select * from quote_create(?::json, ?::numeric, ?::numeric, ?::int, ?::int, ?, ?::int, ?, ?, ?::int, ?, ?, ?::date, ?, ?, ?, ?)',
);

/** What writeQuote writes. */
interface NewQuote {
  lines: string;
  discount: string;
  taxRate: string;
  customerId: number | null;
  customerName: string | null;
  customerEmail: string | null;
  channelId: number | null;
  currency: string | null;
  notes: string | null;
  validUntil: string | null;
  externalId: string | null;
}

/** Writes a quote (insertQuote) under a new public token; 422 when the discount exceeds the subtotal. */
async function writeQuote(trx: Db, access: Access, quote: NewQuote): Promise<QuoteText> {
  const year = new Date().getUTCFullYear();
  const [created] = await insertQuote(trx, [
    quote.lines, quote.discount, quote.taxRate, access.workspaceId, year, `Q-${year}-`,
    quote.customerId, quote.customerName, quote.customerEmail, quote.channelId, quote.currency, quote.notes, quote.validUntil,
    randomToken(24), quote.externalId, access.actor, functionEventId(trx, access),
  ]).catch(totalOverflow('lines'));
  if (created.id === null) throw tooMuchDiscount(quote.discount, created.subtotal);
  return { quote: created.quote, lines: created.lines };
}

/** A quote and its lines as the API sends them: JSON text, kept as PostgreSQL rendered it. */
export interface QuoteText {
  quote: string;
  lines: string;
}

/**
 * Creates a draft with its lines; `quote.created` carries the quote and its lines. Its currency is the one
 * given, else its channel's (a GBP channel's quotes are in GBP unless told otherwise), else the workspace profile's
 * default currency, else USD; a quote given no valid_until is valid for the profile's default days, when set. The number of
 * statements does not grow with the lines (4 with BEGIN and COMMIT): the customer and the SKUs are looked up in one
 * query; then one call of the database function quote_create (insertQuote) takes the gap-free number and writes the
 * quote, its lines, its totals, the activity and the event (with its deliveries). The number's counter row stays
 * locked until commit, so concurrent creations in a workspace queue behind that one statement and the commit.
 * The quote and its lines come back as the text PostgreSQL rendered, and go on to the event and the answer
 * as they are, never parsed and serialised again.
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
  return writeQuote(trx, access, {
    lines: JSON.stringify(lines), discount: input.discount_amount ?? '0', taxRate: input.tax_rate ?? '0',
    customerId: customer?.id ?? null, customerName: customer?.name ?? null, customerEmail: customer?.email ?? null, channelId: input.channel_id ?? null,
    currency: input.currency ?? channel?.currency ?? null, notes: input.notes ?? null, validUntil: input.valid_until ?? null, externalId: input.external_id ?? null,
  });
}

/**
 * `POST /quotes/{id}/duplicate`, from any status: a new draft with the original's customer (its name and email as the
 * original keeps them), channel, currency, lines, discount, tax rate and notes, under a new number and token, and
 * the validity a new quote gets when it names none (the profile's default_validity_days, else no end date). Reading
 * the original needs read access to its channel, the copy write access, as creating a quote in it does. `quote.created` carries the copy and its lines.
 */
export async function duplicateQuote(trx: Db, access: Access, id: number): Promise<QuoteText> {
  const original = await accessibleQuote(trx, access, id, 'read');
  await assertChannelAccess(trx, access, original.channel_id, 'write');
  const lines = (await linesOf(trx, access, id)).map((line, index) => ({
    ord: index, variant_id: line.variant_id, sku: line.sku, description: line.description, quantity: line.quantity, price: line.price,
  }));
  const q = original as QuoteJson & Record<'discount_amount' | 'tax_rate' | 'customer_name' | 'customer_email' | 'currency' | 'notes', string | null> & { customer_id: number | null };
  return writeQuote(trx, access, {
    lines: JSON.stringify(lines), discount: q.discount_amount!, taxRate: q.tax_rate!,
    customerId: q.customer_id, customerName: q.customer_name, customerEmail: q.customer_email, channelId: q.channel_id,
    currency: q.currency, notes: q.notes, validUntil: null, externalId: null,
  });
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

export function assertDraft(quote: QuoteJson): void {
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
