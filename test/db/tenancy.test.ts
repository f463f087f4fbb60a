import test from 'ava';
import { preparedQuery } from '../../src/db/prepared.js';
import { scoped } from '../../src/db/scoped.js';
import { TENANT_TABLES, TenancyViolation, tenancyProblem } from '../../src/db/tenancy.js';
import { freshDatabase, type TestDatabase } from '../helpers/database.js';

// Every statement on a tenant table names the workspace or says why it spans them all (src/db/tenancy.ts). These
// run on whichever database the suite runs on (PGlite, or TEST_DATABASE_URL), through the knex the app is given.

let database: TestDatabase;
test.before(async () => {
  database = await freshDatabase();
});
test.after.always(async () => {
  await database?.close();
});

test('the tenant tables are exactly the tables with a workspace_id column', async (t) => {
  const { rows } = await database.knex.raw(
    `select table_name from information_schema.columns
      where table_schema = current_schema() and column_name = 'workspace_id' order by table_name`,
  );
  t.deepEqual(
    rows.map((row: { table_name: string }) => row.table_name),
    [...TENANT_TABLES].sort(),
  );
});

test('a statement on a tenant table without the workspace is refused before it reaches the database', async (t) => {
  const knex = database.knex;
  const refused = await t.throwsAsync(knex('quotes').where('title', 'a value that stays out of the message'), { instanceOf: TenancyViolation });
  t.regex(refused!.message, /tenant table quotes/);
  t.regex(refused!.message, /select \* from "quotes" where "title" = \$1/);
  t.notRegex(refused!.message, /stays out/, 'the values are not in the message');
  // Sent, it would fail on the unknown column: refused, it never was.
  await t.throwsAsync(knex.raw('select no_such_column from quotes'), { instanceOf: TenancyViolation });
  await t.throwsAsync(knex('orders').where('id', 1).update({ notes: 'x' }), { instanceOf: TenancyViolation });
  await t.throwsAsync(knex('customers').where('id', 1).delete(), { instanceOf: TenancyViolation });
  await t.throwsAsync(knex.raw('select count(*) from workspaces w join "public"."products" p on p.id = w.id'), { instanceOf: TenancyViolation });
});

test('inside a transaction too: the statement is refused and the transaction rolled back', async (t) => {
  const knex = database.knex;
  const [{ id }] = await knex('workspaces').insert({ name: 'Tenancy', slug: 'tenancy-trx', public_key: 'pk_tenancy_trx', secret_key_hash: 'tenancy-trx' }).returning('id');
  await t.throwsAsync(
    knex.transaction(async (trx) => {
      await trx('workspaces').where({ id }).update({ name: 'Renamed' });
      await trx.transaction(async (inner) => inner('channels').select('id'));
    }),
    { instanceOf: TenancyViolation },
  );
  t.is((await knex('workspaces').where({ id }).first('name')).name, 'Tenancy', 'the transaction was rolled back');
});

test('a statement that names the workspace runs', async (t) => {
  const knex = database.knex;
  t.deepEqual(await scoped(knex, 'quotes', 1).where('id', 1), []);
  t.deepEqual(await scoped(knex, 'quotes as q', 1).join('quote_lines as l', 'l.quote_id', 'q.id').select('l.id'), []);
  t.deepEqual((await knex.raw('select count(*)::int as n from orders where workspace_id = ?', [1])).rows, [{ n: 0 }]);
  await t.notThrowsAsync(knex.transaction(async (trx) => scoped(trx, 'channels', 1).select('id')));
  t.deepEqual((await knex.raw('select count(*)::int as n from workspaces')).rows.length, 1, 'a table of no workspace is not checked');
});

test('the mark lets a statement span every workspace', async (t) => {
  const knex = database.knex;
  t.deepEqual((await knex.raw('select count(*)::int as n from quotes /* all workspaces: the test counts every quote */')).rows, [{ n: 0 }]);
  t.deepEqual(await knex('quotes').comment('all workspaces: the test reads every quote').select('id'), []);
  t.is(await knex('orders').queryContext({ allWorkspaces: 'the test updates every order' }).update({ notes: 'x' }), 0);
});

test('a prepared statement is checked as well', async (t) => {
  const unscoped = preparedQuery('test_tenancy_unscoped', 'select id from quotes where id = ?');
  await t.throwsAsync(unscoped(database.knex, [1]), { instanceOf: TenancyViolation });
  await t.throwsAsync(database.knex.transaction((trx) => unscoped(trx, [1])), { instanceOf: TenancyViolation });
  const marked = preparedQuery('test_tenancy_marked', 'select id from quotes /* all workspaces: the test */ where id = ?');
  t.deepEqual(await marked(database.knex, [1]), []);
});

test('what the check reads as naming a tenant table', (t) => {
  const refused = [
    'select * from quotes',
    'SELECT * FROM "quotes"',
    'select * from public.quotes',
    'select * from "public"."quotes" as q',
    'select * from workspaces w, quotes q',
    'select * from workspaces w join quotes q on q.id = w.id',
    'update quotes set title = $1',
    'update only quotes set title = $1',
    'delete from quotes using orders o where o.id = quotes.id',
    'delete from sessions using users u where u.id = sessions.user_id',
    'insert into events (type) values ($1)',
    'truncate quotes',
    'select 1 from quotes where title = \'workspace_id\'',
    'select 1 from quotes -- workspace_id',
    'select 1 /* all workspaces: */ from quotes',
    'select workspace_id from users where email = $1',
    'select * from quotes q join quote_lines l on l.workspace_id = q.workspace_id',
    'select * from quotes where workspace_id in (select id from workspaces)',
  ];
  for (const sql of refused) t.truthy(tenancyProblem(sql), sql);
  const allowed = [
    'select * from workspaces',
    'select * from sessions where token_hash = $1',
    'select * from quotes where workspace_id = $1',
    'select * from "quotes" where "quotes"."workspace_id" = $1',
    'select * from quotes q where q.workspace_id = ? and q.id = ?',
    'select * from quotes where workspace_id = any($1::int[])',
    'select * from quotes where workspace_id in ($1, $2)',
    'select * from quotes where (workspace_id, id) in (($1, $2))',
    'select * from orders o where o.workspace_id = (select $2::int)',
    'select * from orders where :workspaceId = workspace_id',
    'insert into "quotes" ("workspace_id", "title") values ($1, $2)',
    "select 'from quotes' as text",
    'select extract(epoch from now())',
    'select 1 from quotes /* all workspaces: a reason */',
    'select 1 from quotes /* All Workspaces: a reason */',
    'create index quotes_title on quotes (title)',
  ];
  for (const sql of allowed) t.is(tenancyProblem(sql), undefined, sql);
});
