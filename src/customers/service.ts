import type { Access } from '../access.js';
import type { Db } from '../db/database.js';
import { countReferences, scoped, unfiltered, whereSearch } from '../db/scoped.js';
import { jsonPages, textPages, type JsonPage } from '../db/pages.js';
import { givenFields } from '../db/fields.js';
import { Conflict, NotFound } from '../errors.js';
import { emit } from '../events/outbox.js';
import { eraseVisitorEvents } from '../tracking/erase.js';
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

/** The filtered list, by id, as JSON pages rendered by the database. */
export function listCustomers(db: Db, access: Access, filters: { q?: string }): AsyncGenerator<JsonPage> {
  if (unfiltered(filters)) return textPages(db, 'customer_texts', access.workspaceId);
  return jsonPages(db, () => whereSearch(scoped(db, 'customers as c', access.workspaceId), ['c.name', 'c.email', 'c.company'], filters.q), 'c.id', 'c.api_json');
}

/**
 * Creates the customer, or updates the one with the same email (the natural key): given fields
 * overwrite, omitted ones keep their value. Safe under concurrent calls with the same email.
 */
export async function upsertCustomer(
  trx: Db,
  access: Access,
  input: CustomerChanges & { email: string },
): Promise<{ customer: CustomerJson; created: boolean }> {
  const changes = givenFields(input, editable);
  const updates = Object.keys(changes).filter((key) => key !== 'email');
  const { rows } = await trx.raw(
    `insert into customers (workspace_id, ${Object.keys(changes).join(', ')}) values (?, ${Object.keys(changes).map(() => '?').join(', ')})
     on conflict (workspace_id, email) do update set ${[...updates.map((key) => `${key} = excluded.${key}`), 'updated_at = now()'].join(', ')}
     returning id, (xmax = 0) as created`,
    [access.workspaceId, ...(Object.values(changes) as (string | null)[])],
  );
  const customer = await getCustomer(trx, access, rows[0].id);
  const created = Boolean(rows[0].created);
  await emit(trx, access, created ? 'customer.created' : 'customer.updated', { customer });
  return { customer, created };
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

export interface Dependents {
  quotes: number;
  orders: number;
  visitors: number;
}

const dependentTables = ['quotes', 'orders', 'visitors'] as const;

/**
 * The cascade rule: with dependents and no `cascade`, 409 with their counts; with `cascade`, the
 * dependents go too, in the caller's transaction. Returns the snapshot taken before removal.
 */
export async function deleteCustomer(trx: Db, access: Access, id: number, cascade: boolean): Promise<CustomerJson> {
  const locked = await scoped(trx, 'customers', access.workspaceId).where({ id }).forUpdate().first('id');
  if (!locked) throw new NotFound('Customer not found.');
  const customer = await getCustomer(trx, access, id);
  const dependents: Dependents = await countReferences(trx, access.workspaceId, dependentTables, 'customer_id', id);
  if (Object.values(dependents).some((n) => n > 0)) {
    if (!cascade) {
      throw new Conflict('This customer has quotes, orders or visitors; delete again with cascade=1 to delete them too.', { dependents });
    }
    await eraseVisitorEvents(trx, access, id);
    for (const table of dependentTables) await scoped(trx, table, access.workspaceId).where({ customer_id: id }).delete();
  }
  await scoped(trx, 'customers', access.workspaceId).where({ id }).delete();
  await emit(trx, access, 'customer.deleted', { customer });
  return customer;
}
