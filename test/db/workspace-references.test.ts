import test from 'ava';
import type { Knex } from 'knex';
import { migratorConfig } from '../../src/db/migrations.js';
import { signUpOwner, uniqueEmail, type Owner } from '../helpers/app.js';
import { useApp } from '../helpers/fixture.js';
import { ok } from '../helpers/client.js';
import { acrossWorkspaces, freshDatabase, refusal } from '../helpers/database.js';

// References to the rows the API deletes name them with their workspace, and an index answers the query PostgreSQL
// runs on the referencing table when such a row is deleted (migration 20261127030000_references_with_workspace).

const { app } = useApp(test);

/** Tables whose rows the API deletes (a workspace's own rows, so every reference to them names the workspace). */
const DELETED_BY_THE_API = ['customers', 'channels', 'quotes', 'orders', 'products', 'variants'];
/**
 * The one reference without an index of its own: a deleted variant is cleared from the quote lines of its workspace
 * by walking them (`(workspace_id, quote_id, id)`), so that creating a quote writes no third index entry a line.
 */
const WALKED = new Set(['quote_lines_variants_foreign']);

const columnsOf = (key: string) => `array(select a.attname::text from unnest(${key}) with ordinality k(attnum, n)
  join pg_attribute a on a.attnum = k.attnum and a.attrelid = `;

async function references(knex: Knex): Promise<{ name: string; table: string; parent: string; columns: string[] }[]> {
  return (
    await knex.raw(
      `select c.conname as name, t.relname as table, p.relname as parent, ${columnsOf('c.conkey')} c.conrelid order by k.n)::text[] as columns
       from pg_constraint c join pg_class t on t.oid = c.conrelid join pg_class p on p.oid = c.confrelid
       where c.contype = 'f' and t.relnamespace = to_regnamespace(current_schema())::oid order by 1`,
    )
  ).rows;
}

async function indexes(knex: Knex): Promise<{ table: string; columns: string[] }[]> {
  return (
    await knex.raw(
      `select t.relname as table, ${columnsOf('i.indkey::int2[]')} i.indrelid order by k.n)::text[] as columns
       from pg_index i join pg_class t on t.oid = i.indrelid where t.relnamespace = to_regnamespace(current_schema())::oid`,
    )
  ).rows;
}

test('every reference to a row the API deletes names its workspace first, and an index leads with its columns', async (t) => {
  const all = await references(app.db);
  const keys = all.filter((r) => DELETED_BY_THE_API.includes(r.parent));
  t.true(keys.length >= 13, `the references found: ${keys.map((r) => r.name).join(', ')}`);
  const byTable = await indexes(app.db);
  for (const { name, table, columns } of keys) {
    t.is(columns[0], 'workspace_id', `${name} (${columns.join(', ')}) names the workspace first`);
    const leading = byTable.filter((i) => i.table === table).map((i) => i.columns.slice(0, columns.length).sort().join(','));
    if (WALKED.has(name)) {
      t.true(byTable.some((i) => i.table === table && i.columns[0] === 'workspace_id'), `${name}: ${table} has an index that leads with workspace_id`);
      t.false(leading.includes([...columns].sort().join(',')), `${name} is walked, not indexed: take it out of WALKED if it gets an index`);
    } else {
      t.true(leading.includes([...columns].sort().join(',')), `${name}: an index of ${table} leads with (${columns.join(', ')})`);
    }
  }
});

/** A workspace with a channel, a customer, a product with a variant, a quote on them (one line of the variant), its order. */
async function workspaceWithRows(name: string) {
  const owner: Owner = await signUpOwner(app, name);
  const c = owner.client;
  const channel = (await ok(c.post('/api/v1/channels', { name: `${name} shop` }), 201)).channel.id as number;
  const customer = (await ok(c.post('/api/v1/customers', { email: uniqueEmail('refs'), name: 'Pat' }), 201)).customer.id as number;
  const sku = `REF-${owner.workspace.id}`;
  const product = (await ok(c.post('/api/v1/products', { sku, name: 'Thing', variants: [{ sku: `${sku}-A`, price: '5.00' }] }), 201)).product;
  const { quote, lines } = await ok(c.post('/api/v1/quotes', { customer_id: customer, channel_id: channel, lines: [{ sku: `${sku}-A`, quantity: '2' }] }), 201);
  await ok(c.post(`/api/v1/quotes/${quote.id}/send`, { notify: false }));
  await ok(c.post(`/api/v1/quotes/${quote.id}/accept`));
  const order = (await ok(c.post(`/api/v1/quotes/${quote.id}/convert`), 201)).order.id as number;
  const visitor = (
    await app.db.raw(`insert into visitors (workspace_id, visitor_id, customer_id) values (?, ?, ?) returning id`, [owner.workspace.id, `v-${owner.workspace.id}`, customer])
  ).rows[0].id as number;
  const activity = (await app.db('quote_activities').where({ quote_id: quote.id }).first('id')).id as number;
  return {
    owner, channel, customer, product: product.id as number, variant: product.variants[0].id as number, quote: quote.id as number,
    line: lines[0].id as number, order, visitor, activity,
  };
}

test("a row naming another workspace's customer, channel, quote or variant is refused; its own workspace's are taken", async (t) => {
  const mine = await workspaceWithRows('Mine');
  const theirs = await workspaceWithRows('Theirs');
  const changes = [
    { constraint: 'quotes_customers_foreign', sql: 'update quotes set customer_id = ? where id = ?', row: 'quote', value: 'customer' },
    { constraint: 'quotes_channels_foreign', sql: 'update quotes set channel_id = ? where id = ?', row: 'quote', value: 'channel' },
    { constraint: 'orders_customers_foreign', sql: 'update orders set customer_id = ? where id = ?', row: 'order', value: 'customer' },
    { constraint: 'orders_channels_foreign', sql: 'update orders set channel_id = ? where id = ?', row: 'order', value: 'channel' },
    { constraint: 'orders_quotes_foreign', sql: 'update orders set quote_id = ? where id = ?', row: 'order', value: 'quote' },
    { constraint: 'visitors_customers_foreign', sql: 'update visitors set customer_id = ? where id = ?', row: 'visitor', value: 'customer' },
    { constraint: 'quote_lines_variants_foreign', sql: 'update quote_lines set variant_id = ? where id = ?', row: 'line', value: 'variant' },
    { constraint: 'quote_activities_quotes_foreign', sql: 'update quote_activities set quote_id = ? where id = ?', row: 'activity', value: 'quote' },
  ] as const;
  for (const { constraint, sql, row, value } of changes) {
    t.deepEqual(await refusal(app.db, sql, [theirs[value], mine[row]]), { code: '23503', constraint }, `${constraint}: another workspace's ${value}`);
    t.is(await refusal(app.db, sql, [mine[value], mine[row]]), null, `${constraint}: its own workspace's ${value}`);
  }
});

test('deleting through the API: a variant leaves its lines without it, a channel takes its members, a customer (cascade) its quotes, orders and visitors', async (t) => {
  const w = await workspaceWithRows('Deletes');
  const c = w.owner.client;
  await ok(c.delete(`/api/v1/products/${w.product}`));
  t.like(await app.db('quote_lines').where({ id: w.line }).first(), { workspace_id: w.owner.workspace.id, quote_id: w.quote, variant_id: null }, 'the line stays, without its variant');
  t.is((await ok(c.get(`/api/v1/quotes/${w.quote}`))).lines.length, 1);

  const spare = (await ok(c.post('/api/v1/channels', { name: 'Spare' }), 201)).channel.id;
  await ok(c.put(`/api/v1/channels/${spare}/members/${w.owner.user.id}`, { role: 'viewer' }));
  t.is((await app.db('channel_members').where({ channel_id: spare })).length, 1);
  await ok(c.delete(`/api/v1/channels/${spare}`));
  t.is((await app.db('channel_members').where({ channel_id: spare })).length, 0, "the channel's members went with it");
  t.is((await c.delete(`/api/v1/channels/${w.channel}`)).status, 409, 'a channel that quotes use stays');

  t.is((await c.delete(`/api/v1/customers/${w.customer}`)).status, 409, 'a customer with quotes stays without cascade');
  await ok(c.delete(`/api/v1/customers/${w.customer}?cascade=1`));
  for (const [table, id] of [['quotes', w.quote], ['orders', w.order], ['visitors', w.visitor], ['quote_activities', w.activity]] as const) {
    t.is((await app.db(table).where({ id })).length, 0, `${table}: gone with the customer`);
  }
});

test('the migration rolls back and forward with rows in place', async (t) => {
  const database = await freshDatabase();
  t.teardown(() => database.close());
  const knex = acrossWorkspaces(database.knex);
  // It and the migrations after it (newest first), applied again with it below.
  const rolledBack: string[] = [];
  while (!rolledBack.includes('20261127030000_references_with_workspace')) {
    const [, files] = (await knex.migrate.down(migratorConfig)) as [number, string[]];
    if (!files.length) break;
    rolledBack.push(...files.map((file) => file.replace(/^.*\//, '').replace(/\.js$/, '')));
  }
  t.deepEqual(rolledBack, ['20261128120000_quotes_by_status', '20261128100000_quote_ranges_by_bucket', '20261128060000_quote_count_ranges', '20261128020000_quote_create_function', '20261127210000_quote_answers_reminders', '20261127200000_workspace_profiles', '20261127190000_ops_counters', '20261127160000_quote_counts', '20261127120000_workspace_time_zone', '20261127030000_references_with_workspace']);
  const before = await references(knex);
  t.true(before.some((r) => r.name === 'quotes_customer_id_foreign'), 'rolled back: the single-column key is back');
  const [{ id: ws }] = (await knex.raw(`insert into workspaces (name, slug, public_key, secret_key_hash) values ('R', 'refs-migration', 'pk_r', 'h_r') returning id`)).rows;
  const [{ id: customer }] = (await knex.raw(`insert into customers (workspace_id, email, name) values (?, 'r@example.com', 'R') returning id`, [ws])).rows;
  const [{ id: quote }] = (await knex.raw(`insert into quotes (workspace_id, customer_id, quote_number, public_token) values (?, ?, 'Q-1', 'tok-refs') returning id`, [ws, customer])).rows;
  await knex.raw(`insert into quote_activities (workspace_id, quote_id, type, actor, message) values (?, ?, 'created', 'api', 'x')`, [ws, quote]);

  await knex.migrate.latest(migratorConfig);
  const after = await references(knex);
  t.true(after.some((r) => r.name === 'quotes_customers_foreign' && r.columns.join() === 'workspace_id,customer_id'));
  t.false(after.some((r) => r.name === 'quotes_customer_id_foreign'));
  t.like((await knex.raw('select customer_id from quotes where id = ?', [quote])).rows[0], { customer_id: customer }, 'the rows stay');
  t.is((await knex('quote_activities').where({ quote_id: quote })).length, 1);
  // PostgreSQL 15 reports a restricting key as 23503, 17 (PGlite) as 23001 (restrict_violation).
  const restricted = await refusal(knex, 'delete from customers where id = ?', [customer]);
  t.is(restricted?.constraint, 'quotes_customers_foreign', 'a customer that a quote names is not deleted');
  t.true(['23503', '23001'].includes(restricted!.code), restricted?.code);
});
