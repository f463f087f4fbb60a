import type { Knex } from 'knex';

/**
 * Every reference to a row the API deletes (a customer, a channel, a quote, a variant) names it with its workspace:
 * `(workspace_id, customer_id)` references `customers (workspace_id, id)`, and so on, where `customer_id` referenced
 * `customers (id)` alone.
 *
 * - Deleting a row no longer reads other workspaces' rows. PostgreSQL checks or applies a foreign key's ON DELETE with
 *   a query on the referencing table by the key's columns (`where customer_id = $1`); no index led with `customer_id`
 *   (they lead with `workspace_id`), so deleting one customer read every quote, order and visitor of every workspace,
 *   a variant every quote line, a quote every order, a channel every quote and order. With the workspace in the key
 *   the query is `where workspace_id = $1 and customer_id = $2`, which the `(workspace_id, customer_id)` indexes
 *   answer (bench/deletes.ts measures it).
 * - A row can no longer point at another workspace's customer, channel, quote or variant (as 20261126220000 did for
 *   lines, items and variants' parents).
 * - A quote's activities name their quote the same way, and drop their own key to `workspaces`: one check an
 *   activity instead of two; deleting a workspace still deletes them with its quotes.
 * - The indexes by parent of lines, items and activities lead with `workspace_id`, as every tenant index does.
 *
 * A quote line's variant has no index of its own: deleting a variant sets it to null on the lines of its workspace,
 * found by walking that workspace's lines (`(workspace_id, quote_id, id)`), not every workspace's. An index on
 * `(workspace_id, variant_id)` would make that exact, at the price of an index entry on every line a quote creates
 * (the hottest write): products are deleted far more rarely than quotes are created.
 *
 * `on delete set null (column)` (PostgreSQL 15 and later) clears the reference and keeps `workspace_id`, which is
 * not null. The parents' `(workspace_id, id)` indexes become unique (a foreign key needs one; `id` is unique already).
 */
interface Reference {
  table: string;
  column: string;
  parent: string;
  onDelete: 'restrict' | 'cascade' | 'set null';
  /** The single-column constraint this replaces. */
  old: string;
}

const REFERENCES: Reference[] = [
  { table: 'quotes', column: 'customer_id', parent: 'customers', onDelete: 'restrict', old: 'quotes_customer_id_foreign' },
  { table: 'quotes', column: 'channel_id', parent: 'channels', onDelete: 'restrict', old: 'quotes_channel_id_foreign' },
  { table: 'orders', column: 'customer_id', parent: 'customers', onDelete: 'restrict', old: 'orders_customer_id_foreign' },
  { table: 'orders', column: 'channel_id', parent: 'channels', onDelete: 'restrict', old: 'orders_channel_id_foreign' },
  { table: 'orders', column: 'quote_id', parent: 'quotes', onDelete: 'set null', old: 'orders_quote_id_foreign' },
  { table: 'visitors', column: 'customer_id', parent: 'customers', onDelete: 'restrict', old: 'visitors_customer_id_foreign' },
  { table: 'track_join_codes', column: 'customer_id', parent: 'customers', onDelete: 'cascade', old: 'track_join_codes_customer_id_fkey' },
  { table: 'channel_members', column: 'channel_id', parent: 'channels', onDelete: 'cascade', old: 'channel_members_channel_id_foreign' },
  { table: 'quote_lines', column: 'variant_id', parent: 'variants', onDelete: 'set null', old: 'quote_lines_variant_id_foreign' },
  { table: 'quote_activities', column: 'quote_id', parent: 'quotes', onDelete: 'cascade', old: 'quote_activities_quote_id_foreign' },
];

/** Indexes by parent that led with the parent's id, and lead with the workspace now. */
const CHILD_INDEXES = [
  { table: 'quote_lines', column: 'quote_id' },
  { table: 'order_items', column: 'order_id' },
  { table: 'quote_activities', column: 'quote_id' },
];

const name = ({ table, parent }: Reference) => `${table}_${parent}_foreign`;
const action = ({ onDelete, column }: Reference) => (onDelete === 'set null' ? `set null (${column})` : onDelete);

export async function up(knex: Knex): Promise<void> {
  const { version, text } = (await knex.raw(`select current_setting('server_version_num')::int as version, current_setting('server_version') as text`)).rows[0];
  if (version < 150000) throw new Error(`PostgreSQL 15 or later is needed (this server runs ${text}): upgrade it, then run quoting migrate again.`);
  for (const parent of ['customers', 'channels']) {
    await knex.raw(`create unique index ${parent}_workspace_id_id_unique on ${parent} (workspace_id, id)`);
    await knex.raw(`drop index ${parent}_workspace_id_id_index`);
  }
  await knex.raw('create unique index variants_workspace_id_id_unique on variants (workspace_id, id)');
  // channel_members' key is (channel_id, user_id); the channel's deletion finds them by (workspace_id, channel_id).
  await knex.raw('create index channel_members_workspace_id_channel_id_index on channel_members (workspace_id, channel_id)');
  for (const { table, column } of CHILD_INDEXES) {
    await knex.raw(`create index ${table}_workspace_id_${column}_id_index on ${table} (workspace_id, ${column}, id)`);
    await knex.raw(`drop index ${table}_${column}_id_index`);
  }
  for (const reference of REFERENCES) {
    const { table, column, parent, old } = reference;
    await knex.raw(`alter table ${table} drop constraint ${old}, add constraint ${name(reference)} foreign key (workspace_id, ${column})
      references ${parent} (workspace_id, id) on delete ${action(reference)}`);
  }
  await knex.raw('alter table quote_activities drop constraint quote_activities_workspace_id_foreign');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`alter table quote_activities add constraint quote_activities_workspace_id_foreign foreign key (workspace_id)
    references workspaces (id) on delete cascade`);
  for (const reference of REFERENCES) {
    const { table, column, parent, old } = reference;
    await knex.raw(`alter table ${table} drop constraint ${name(reference)}, add constraint ${old} foreign key (${column})
      references ${parent} (id) on delete ${reference.onDelete}`);
  }
  for (const { table, column } of CHILD_INDEXES) {
    await knex.raw(`create index ${table}_${column}_id_index on ${table} (${column}, id)`);
    await knex.raw(`drop index ${table}_workspace_id_${column}_id_index`);
  }
  await knex.raw('drop index channel_members_workspace_id_channel_id_index');
  await knex.raw('drop index variants_workspace_id_id_unique');
  for (const parent of ['customers', 'channels']) {
    await knex.raw(`create index ${parent}_workspace_id_id_index on ${parent} (workspace_id, id)`);
    await knex.raw(`drop index ${parent}_workspace_id_id_unique`);
  }
}
