import { userOf, type Access } from '../access.js';
import { channelLacking, rolesFor } from '../channels/access.js';
import type { Db } from '../db/database.js';
import { scoped, scopedById, unfiltered, whereSearch } from '../db/scoped.js';
import { listPages, type JsonPage } from '../db/keyset.js';
import { textsList, type ListQuery } from '../db/list-query.js';
import { numberedListPage, type NumberedPage } from '../db/numbered-pages.js';
import { givenFields } from '../db/fields.js';
import { Conflict, Forbidden, NotFound } from '../errors.js';
import { emit, emitSelected, type EventType } from '../events/outbox.js';
import type { CustomerChanges } from './schema.js';

/**
 * The API shape of a customer: the compact JSON text the row keeps (`api_json`, rendered by a trigger
 * on every write; see migrations/20261123120000_stored_json.ts), as json so pg hands back an object.
 */
export const customerJson = (c = 'c') => `${c}.api_json::json`;

export type CustomerJson = Record<string, unknown> & { id: number; email: string };

const editable = ['email', 'name', 'company', 'phone', 'country', 'notes'] as const;

export async function getCustomer(db: Db, access: Access, id: number): Promise<CustomerJson> {
  const row = await scoped(db, 'customers as c', access.workspaceId).where('c.id', id).first(db.raw(`${customerJson()} as json`));
  if (!row) throw new NotFound('Customer not found.');
  return row.json;
}

/** The customers, filtered by `q`; the whole list from its texts. */
function customerList(db: Db, access: Access, filters: { q?: string }): ListQuery {
  if (unfiltered(filters)) return textsList(db, 'customer_texts', access.workspaceId);
  return { base: () => whereSearch(scoped(db, 'customers as c', access.workspaceId), ['c.name', 'c.email', 'c.company'], filters.q), idColumn: 'c.id', json: 'c.api_json' };
}

/** The filtered list, by id, as JSON pages rendered by the database. */
export function listCustomers(db: Db, access: Access, filters: { q?: string }): AsyncGenerator<JsonPage> {
  return listPages(db, customerList(db, access, filters));
}

/** Page `page` of the customers, filtered, newest first, with their count (the app's list). */
export function customerPage(db: Db, access: Access, filters: { q?: string }, page: number): Promise<NumberedPage<CustomerJson>> {
  return numberedListPage<CustomerJson>(db, customerList(db, access, filters), page);
}

/**
 * The workspace's customers among `ids`, by id: what a page's list of orders shows as each one's customer. Ids of no
 * customer of the workspace are absent from the map.
 */
export async function customersById(db: Db, access: Access, ids: Iterable<number>): Promise<Map<number, CustomerJson>> {
  const wanted = [...new Set(ids)];
  if (wanted.length === 0) return new Map();
  const rows = await scoped(db, 'customers as c', access.workspaceId).whereIn('c.id', wanted).select(db.raw(`${customerJson()} as json`));
  return new Map(rows.map((r: { json: CustomerJson }) => [r.json.id, r.json]));
}

/** A customer to create or update by email (the natural key); an omitted field is left as it is. */
export type CustomerRow = CustomerChanges & { email: string };

/**
 * How a stored customer takes its row. `replace`, the API's: the given fields overwrite (null clears), and the
 * customer counts as updated even when nothing differs (updated_at moves, `customer.updated` is emitted). `fill`, a
 * file's, where an empty cell means "not given": only non-null fields are written, and a customer they would not
 * change is left alone, with no event.
 */
export type CustomerMerge = 'replace' | 'fill';

export type CustomerOutcome = { id: number; outcome: 'created' | 'updated' | 'unchanged' };

/**
 * Creates or updates customers by email, many in one statement (one row per email; in `replace`, every row gives the
 * same fields). A new email emits `customer.created`, a written one `customer.updated`, rendered from the rows in one
 * more statement. Safe under concurrent calls with the same email. Answers every email's id and outcome.
 */
export async function upsertCustomers(trx: Db, access: Access, rows: CustomerRow[], merge: CustomerMerge): Promise<Map<string, CustomerOutcome>> {
  if (rows.length === 0) return new Map();
  const fields = editable.filter((key) => key !== 'email' && rows.some((row) => row[key] !== undefined));
  const set = fields.map((key) => (merge === 'replace' ? `${key} = excluded.${key}` : `${key} = coalesce(excluded.${key}, customers.${key})`));
  // `fill` writes only what differs; with no fields at all, a stored customer has nothing to take.
  const differs = merge === 'fill' && fields.length ? `where (${fields.map((key) => `customers.${key}`).join(', ')}) is distinct from (${fields.map((key) => `coalesce(excluded.${key}, customers.${key})`).join(', ')})` : '';
  // The written rows answer from the upsert, the others (stored and left alone) from the table.
  const { rows: all } = await trx.raw(
    `with r as (select * from json_to_recordset(?::json) as r(email text${fields.map((key) => `, ${key} text`).join('')})),
          written as (
            insert into customers (workspace_id, email${fields.map((key) => `, ${key}`).join('')}) select ?, r.email${fields.map((key) => `, r.${key}`).join('')} from r
            on conflict (workspace_id, email) do ${merge === 'fill' && !differs ? 'nothing' : `update set ${[...set, 'updated_at = now()'].join(', ')} ${differs}`}
            returning id, email, (xmax = 0) as created)
     select r.email, coalesce(w.id, c.id) as id, w.created
       from r left join written w on w.email = r.email
       left join lateral (select id from customers where workspace_id = (select ?::int) and email = r.email limit 1) c on w.id is null`,
    [JSON.stringify(rows.map((row) => Object.fromEntries(['email', ...fields].map((key) => [key, row[key as keyof CustomerRow] ?? null])))), access.workspaceId, access.workspaceId],
  );
  const outcomes = new Map<string, CustomerOutcome>();
  const written: { id: number; type: EventType }[] = [];
  for (const { id, email, created } of all as { id: number; email: string; created: boolean | null }[]) {
    outcomes.set(email, { id, outcome: created === null ? 'unchanged' : created ? 'created' : 'updated' });
    if (created !== null) written.push({ id, type: created ? 'customer.created' : 'customer.updated' });
  }
  written.sort((a, b) => a.id - b.id);
  await emitSelected(
    trx,
    access,
    written.map((w) => w.type),
    `select k.type, '{"customer":' || c.api_json || '}' as data
       from unnest(?::int[], ?::text[]) with ordinality as k(id, type, n) cross join lateral (${scopedById('customers')}) c order by k.n`,
    [`{${written.map((w) => w.id).join(',')}}`, `{${written.map((w) => w.type).join(',')}}`, access.workspaceId],
  );
  return outcomes;
}

/**
 * Creates the customer, or updates the one with the same email: given fields overwrite, omitted ones keep their
 * value (upsertCustomers, `replace`).
 */
export async function upsertCustomer(trx: Db, access: Access, input: CustomerRow): Promise<{ customer: CustomerJson; created: boolean }> {
  const { id, outcome } = (await upsertCustomers(trx, access, [input], 'replace')).get(input.email)!;
  return { customer: await getCustomer(trx, access, id), created: outcome === 'created' };
}

export async function updateCustomer(trx: Db, access: Access, id: number, input: CustomerChanges): Promise<CustomerJson> {
  const changes = givenFields(input, editable);
  const existing = await scoped(trx, 'customers', access.workspaceId).where({ id }).forUpdate().first('id', 'email');
  if (!existing) throw new NotFound('Customer not found.');
  if (Object.keys(changes).length === 0) return getCustomer(trx, access, id);
  if (changes.email && changes.email !== existing.email && (await scoped(trx, 'customers', access.workspaceId).where({ email: changes.email }).first('id'))) {
    throw new Conflict(`Another customer already has the email ${changes.email}.`);
  }
  await scoped(trx, 'customers', access.workspaceId).where({ id }).update({ ...changes, updated_at: trx.fn.now() });
  const customer = await getCustomer(trx, access, id);
  await emit(trx, access, 'customer.updated', { customer });
  return customer;
}

/**
 * What a customer's deletion would take with it, as far as the caller may see: quotes and orders with no channel or on a
 * channel they hold a role on, and visitors (which have no channel). `hidden` counts, as one number, the quotes and
 * orders on channels they have no role on, so the 409 tells that something more is there without telling what.
 */
export interface Dependents {
  quotes: number;
  orders: number;
  visitors: number;
  hidden: number;
}

/** dependentsOf's statement; `visible` is the condition under which the caller sees a row `t` of quotes or orders. */
const dependentsText = (visible: string) => `
  with q as (select count(*) filter (where ${visible}) as seen, count(*) filter (where not ${visible}) as unseen
             from quotes t where t.workspace_id = ? and t.customer_id = ?),
       o as (select count(*) filter (where ${visible}) as seen, count(*) filter (where not ${visible}) as unseen
             from orders t where t.workspace_id = ? and t.customer_id = ?)
  select q.seen::int as quotes, o.seen::int as orders,
         (select count(*)::int from visitors where workspace_id = ? and customer_id = ?) as visitors,
         (q.unseen + o.unseen)::int as hidden
  from q, o`;

/**
 * The customer's dependents as the caller sees them (see Dependents), what a deletion without `cascade` answers 409
 * with: one query. Zeros for an id that names no customer of the workspace.
 */
export async function customerDependents(trx: Db, access: Access, id: number): Promise<Dependents> {
  const ws = access.workspaceId;
  if (access.channels === 'all') {
    const { rows } = await trx.raw(dependentsText('true'), [ws, id, ws, id, ws, id]);
    return rows[0];
  }
  const visible = '(t.channel_id is null or t.channel_id in (select channel_id from channel_members where workspace_id = t.workspace_id and user_id = ?))';
  const user = userOf(access);
  const { rows } = await trx.raw(dependentsText(visible), [user, user, ws, id, user, user, ws, id, ws, id]);
  return rows[0];
}

const dependentTables = ['quotes', 'orders', 'visitors'] as const;

/**
 * Deletes what the customer's visitors browsed, in the caller's transaction: the cascade removes the visitors, and
 * their events are personal data of the customer that go with them.
 */
async function eraseVisitorEvents(trx: Db, workspaceId: number, customerId: number): Promise<void> {
  await scoped(trx, 'track_events', workspaceId).whereIn('visitor_id', scoped(trx, 'visitors', workspaceId).where({ customer_id: customerId }).select('visitor_id')).delete();
}

/**
 * 403 naming the channel when the caller may not delete every quote and order of the customer one by one: a cascade
 * goes no further than the caller's channel roles (editor or manager on the channel of each, or no channel).
 */
async function assertMayCascade(trx: Db, access: Access, id: number): Promise<void> {
  const ws = access.workspaceId;
  const channels = scoped(trx, 'quotes', ws).where({ customer_id: id }).select('channel_id').union(scoped(trx, 'orders', ws).where({ customer_id: id }).select('channel_id'));
  const lacking = await channelLacking(trx, access, channels, 'write');
  if (!lacking) return;
  const { channelId, role } = lacking;
  throw new Forbidden(
    `cascade=1 would delete this customer's quotes or orders on channel ${channelId}, ` +
      (role ? `where your role (${role}) does not allow deleting them (it needs ${rolesFor('write')})` : 'where you have no role') +
      '; you may delete with a customer only what you could delete one by one.',
  );
}

/**
 * The cascade rule: with dependents and no `cascade`, 409 with their counts (see Dependents); with `cascade`, the
 * dependents go too, in the caller's transaction, when the caller could delete each of them (403 naming a channel
 * otherwise). Returns the snapshot taken before removal. The customer's row lock makes the counts hold: a quote or
 * order inserted for the customer meanwhile waits for this transaction.
 */
export async function deleteCustomer(trx: Db, access: Access, id: number, cascade: boolean): Promise<CustomerJson> {
  const locked = await scoped(trx, 'customers', access.workspaceId).where({ id }).forUpdate().first('id');
  if (!locked) throw new NotFound('Customer not found.');
  const customer = await getCustomer(trx, access, id);
  const dependents = await customerDependents(trx, access, id);
  if (Object.values(dependents).some((n) => n > 0)) {
    if (!cascade) {
      const hidden = dependents.hidden > 0 ? ` ${dependents.hidden} of them are on channels you have no role on, so only someone with access to those can.` : '';
      throw new Conflict(`This customer has quotes, orders or visitors; delete again with cascade=1 to delete them too.${hidden}`, { dependents });
    }
    await assertMayCascade(trx, access, id);
    await eraseVisitorEvents(trx, access.workspaceId, id);
    for (const table of dependentTables) await scoped(trx, table, access.workspaceId).where({ customer_id: id }).delete();
  }
  await scoped(trx, 'customers', access.workspaceId).where({ id }).delete();
  await emit(trx, access, 'customer.deleted', { customer });
  return customer;
}
