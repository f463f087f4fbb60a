import test, { type ExecutionContext } from 'ava';
import type { Access } from '../../src/access.js';
import { migratorConfig } from '../../src/db/migrations.js';
import { Principal } from '../../src/http/principal.js';
import { quotePage, quoteStatusCounts } from '../../src/quotes/service.js';
import { quoteStatuses, type QuoteFilters, type QuoteStatus } from '../../src/quotes/schema.js';
import { signUpOwner, staleQuoteCounts, staleQuoteRanges, uniqueEmail, type Owner } from '../helpers/app.js';
import { ok, type Client } from '../helpers/client.js';
import { acrossWorkspaces, freshDatabase } from '../helpers/database.js';
import { useOwnerApp } from '../helpers/fixture.js';
import { inviteMember, type Member } from '../helpers/members.js';

// The quotes page's status counts and its pager's total come from quote_counts (migration 20261127160000), which the
// quotes' statement triggers keep. After every kind of write (the API's, a customer's cascade, a channel's deletion,
// statements of many rows, a workspace's deletion) the counts are what counting the quotes gives, and what the JSON
// list shows an owner and a member with roles on some channels.

const { app, smtp, owner } = useOwnerApp(test, { workspace: 'Quote counts', smtp: true });

/** The app's handle, whose statements pass the tenancy check. */
const db = () => app.database.knex;

let other: Owner;
let mia: Member;
let asOwner: Access;
/** A member: viewer on channel A, editor on channel C, no role on channel B. */
let asMia: Access;
let channelA: number;
let channelB: number;
let channelC: number;
let ada: number;
let grace: number;

test.before(async () => {
  other = await signUpOwner(app, 'Elsewhere');
  mia = await inviteMember(app, smtp, owner);
  const workspace = owner.workspace;
  const user = (id: number, role: 'owner' | 'member') => ({ id, role, workspace_id: workspace.id }) as never;
  asOwner = new Principal(user(owner.user.id, 'owner'), workspace).access;
  asMia = new Principal(user(mia.user.id, 'member'), workspace).access;
  const channel = async (name: string) => (await ok(owner.client.post('/api/v1/channels', { name }), 201)).channel.id as number;
  [channelA, channelB, channelC] = [await channel('A'), await channel('B'), await channel('C')];
  await ok(owner.client.put(`/api/v1/channels/${channelA}/members/${mia.user.id}`, { role: 'viewer' }));
  await ok(owner.client.put(`/api/v1/channels/${channelC}/members/${mia.user.id}`, { role: 'editor' }));
  ada = (await ok(owner.client.post('/api/v1/customers', { email: uniqueEmail('ada'), name: 'Ada' }), 201)).customer.id;
  grace = (await ok(owner.client.post('/api/v1/customers', { email: uniqueEmail('grace'), name: 'Grace' }), 201)).customer.id;
  // Another workspace's quotes, which no count of this one may include.
  for (let i = 0; i < 3; i++) await ok(other.client.post('/api/v1/quotes', { customer: { email: uniqueEmail('elsewhere'), name: 'Ada' } }), 201);
});

const zero = () => Object.fromEntries(quoteStatuses.map((s) => [s, 0])) as Record<QuoteStatus, number>;

/** What the JSON list shows the client with these filters, counted by status. */
async function listed(client: Client, filters: Partial<QuoteFilters>): Promise<Record<QuoteStatus, number>> {
  const query = new URLSearchParams(Object.entries(filters).map(([k, v]) => [k, String(v)])).toString();
  const counts = zero();
  for (const quote of (await ok(client.get(`/api/v1/quotes?${query}`))).quotes as { status: QuoteStatus }[]) counts[quote.status]++;
  return counts;
}

const sum = (counts: Record<string, number>) => Object.values(counts).reduce((a, b) => a + b, 0);

/**
 * The kept counts equal counting every workspace's quotes; for the owner and for the member, with no filter and each
 * channel's, the status counts and each page's total are what the JSON list shows them.
 */
async function assertCounts(t: ExecutionContext, after: string): Promise<void> {
  t.deepEqual(await staleQuoteCounts(app.db), [], `${after}: quote_counts is the quotes counted`);
  t.deepEqual(await staleQuoteRanges(app.db), [], `${after}: quote_ranges is the quotes counted by range of ids`);
  const callers: [string, Access, Client][] = [['owner', asOwner, owner.client], ['member', asMia, mia.client]];
  for (const [who, access, client] of callers) {
    for (const channel_id of [undefined, channelA, channelB, channelC]) {
      const filters = channel_id === undefined ? {} : { channel_id };
      const what = `${after}, ${who}, channel ${channel_id ?? 'any'}`;
      const expected = await listed(client, filters);
      t.deepEqual(await quoteStatusCounts(db(), access, filters), expected, `${what}: status counts`);
      t.is((await quotePage(db(), access, filters, 1)).total, sum(expected), `${what}: total`);
      for (const status of ['draft', 'sent'] as const) {
        const page = await quotePage(db(), access, { ...filters, status }, 1);
        t.is(page.total, expected[status], `${what}: total of ${status}`);
        t.is(page.pages, Math.max(1, Math.ceil(expected[status] / 50)), `${what}: pages of ${status}`);
      }
    }
  }
}

/** A quote of the owner's workspace, by the API. */
async function createQuote(customer_id: number, channel_id: number | null): Promise<number> {
  const body = { customer_id, ...(channel_id && { channel_id }), lines: [{ description: 'Work', price: '10.00' }] };
  return (await ok(owner.client.post('/api/v1/quotes', body), 201)).quote.id;
}

const move = async (id: number, path: string, body?: object) => ok(owner.client.post(`/api/v1/quotes/${id}/${path}`, body));

test.serial('quotes created, sent, accepted, declined, cancelled, paid, edited and deleted through the API', async (t) => {
  await assertCounts(t, 'no quotes yet');
  const ids: number[] = [];
  for (let i = 0; i < 24; i++) ids.push(await createQuote(i % 2 ? ada : grace, [null, channelA, channelB, channelC][i % 4]));
  await assertCounts(t, 'created');
  for (const id of ids.slice(0, 16)) await move(id, 'send', { notify: false });
  await assertCounts(t, 'sent');
  for (const id of ids.slice(0, 8)) await move(id, 'accept');
  await move(ids[8], 'decline');
  await move(ids[9], 'decline');
  await move(ids[10], 'cancel'); // sent
  await move(ids[20], 'cancel'); // draft
  await move(ids[0], 'cancel'); // accepted
  for (const id of ids.slice(1, 5)) await move(id, 'mark-paid');
  await assertCounts(t, 'accepted, declined, cancelled, paid');
  const before = await app.db('quote_counts').where({ workspace_id: owner.workspace.id }).orderBy(['channel_id', 'status']);
  await ok(owner.client.patch(`/api/v1/quotes/${ids[21]}`, { notes: 'Edited', discount_amount: '1.00' }));
  await ok(owner.client.post(`/api/v1/quotes/${ids[21]}/lines`, { description: 'More', price: '2.00' }), 201);
  await ok(owner.client.post(`/api/v1/quotes/${ids[5]}/convert`), 201);
  t.deepEqual(await app.db('quote_counts').where({ workspace_id: owner.workspace.id }).orderBy(['channel_id', 'status']), before, 'a change of neither status nor channel leaves the counts');
  for (const id of ids.slice(22)) await ok(owner.client.delete(`/api/v1/quotes/${id}`));
  await assertCounts(t, 'deleted');
});

test.serial("a customer's cascade delete takes their quotes' counts with them", async (t) => {
  const pat = (await ok(owner.client.post('/api/v1/customers', { email: uniqueEmail('pat'), name: 'Pat' }), 201)).customer.id;
  const ids = [];
  for (const channel of [null, channelA, channelB, channelC, null, channelC]) ids.push(await createQuote(pat, channel));
  await move(ids[0], 'send', { notify: false });
  await move(ids[3], 'send', { notify: false });
  await move(ids[3], 'accept');
  await move(ids[5], 'cancel');
  await assertCounts(t, "the customer's quotes created");
  await ok(owner.client.delete(`/api/v1/customers/${pat}?cascade=1`));
  t.is((await app.db('quotes').where({ workspace_id: owner.workspace.id, customer_id: pat })).length, 0);
  await assertCounts(t, 'the customer deleted with cascade=1');
});

test.serial("a channel's deletion: refused while quotes name it, counts unchanged; once they are gone, its counts go with it", async (t) => {
  const channel = (await ok(owner.client.post('/api/v1/channels', { name: 'Short-lived' }), 201)).channel.id as number;
  await ok(owner.client.put(`/api/v1/channels/${channel}/members/${mia.user.id}`, { role: 'manager' }));
  const ids = [await createQuote(ada, channel), await createQuote(grace, channel)];
  await move(ids[1], 'send', { notify: false });
  await assertCounts(t, "quotes on the channel");
  t.deepEqual(await quoteStatusCounts(db(), asMia, { channel_id: channel }), { ...zero(), draft: 1, sent: 1 });
  t.is((await owner.client.delete(`/api/v1/channels/${channel}`)).status, 409);
  await assertCounts(t, "the channel's deletion refused");
  await move(ids[1], 'cancel');
  for (const id of ids) await ok(mia.client.delete(`/api/v1/quotes/${id}`));
  const left = await app.db('quote_counts').where({ workspace_id: owner.workspace.id, channel_id: channel });
  t.true(left.length > 0 && left.every((r: { n: number }) => r.n === 0), 'counts of zero are kept while the channel is');
  await ok(owner.client.delete(`/api/v1/channels/${channel}`));
  t.deepEqual(await app.db('quote_counts').where({ workspace_id: owner.workspace.id, channel_id: channel }), [], 'its counts went with the channel');
  await assertCounts(t, 'the channel deleted');
});

test.serial("a member's counts follow their roles: a role taken away hides that channel's quotes, one given shows them", async (t) => {
  await ok(owner.client.delete(`/api/v1/channels/${channelC}/members/${mia.user.id}`));
  await assertCounts(t, 'no role on C');
  t.deepEqual(await quoteStatusCounts(db(), asMia, { channel_id: channelC }), zero());
  await ok(owner.client.put(`/api/v1/channels/${channelB}/members/${mia.user.id}`, { role: 'viewer' }));
  await assertCounts(t, 'a role on B');
  await ok(owner.client.delete(`/api/v1/channels/${channelB}/members/${mia.user.id}`));
  await ok(owner.client.put(`/api/v1/channels/${channelC}/members/${mia.user.id}`, { role: 'editor' }));
  await assertCounts(t, 'roles as before');
});

test.serial('statements of many rows: an insert, an update of status and channel, an upsert, a delete', async (t) => {
  const ws = owner.workspace.id;
  const statuses = `(array['draft', 'sent', 'accepted', 'declined', 'cancelled', 'paid'])[1 + g % 6]`;
  await app.db.raw(
    `insert into quotes (workspace_id, quote_number, status, customer_id, customer_name, customer_email, channel_id, public_token)
     select ?, 'Q-1999-' || lpad(g::text, 6, '0'), ${statuses}, ?, 'Ada', 'ada@example.com', (array[null, ?, ?, ?]::int[])[1 + g % 4], 'bulk-' || g
     from generate_series(1, 600) g`,
    [ws, ada, channelA, channelB, channelC],
  );
  await assertCounts(t, '600 quotes inserted in one statement');
  // Moves some between channels (to and from none), changes some statuses, and leaves the rest as they were.
  await app.db.raw(
    `update quotes set channel_id = case when id % 5 = 0 then null when id % 5 = 1 then ? else channel_id end,
       status = case when id % 3 = 0 then 'cancelled' else status end, notes = 'bulk'
     where workspace_id = ? and public_token like 'bulk-%'`,
    [channelB, ws],
  );
  await assertCounts(t, 'updated in one statement');
  // Half new, half existing (updated to another status and channel): both statement triggers of one statement.
  await app.db.raw(
    `insert into quotes (workspace_id, quote_number, status, customer_id, channel_id, public_token)
     select ?, 'Q-1998-' || lpad(g::text, 6, '0'), 'sent', ?, case when g % 2 = 0 then ?::int end, 'bulk-' || (g * 2)
     from generate_series(1, 200) g
     on conflict (public_token) do update set status = 'declined', channel_id = excluded.channel_id`,
    [ws, grace, channelC],
  );
  await assertCounts(t, 'upserted in one statement');
  await app.db.raw(`delete from quotes where workspace_id = ? and public_token like 'bulk-%' and id % 7 <> 0`, [ws]);
  await assertCounts(t, 'deleted in one statement');
  t.deepEqual(await quoteStatusCounts(db(), asOwner, { customer_id: grace }), await listed(owner.client, { customer_id: grace }), 'a customer filter counts the quotes');
  t.deepEqual(await quoteStatusCounts(db(), asMia, { q: 'Q-1998' }), await listed(mia.client, { q: 'Q-1998' }), 'a search counts the quotes');
});

test.serial("a workspace's deletion takes its counts, and leaves the others'", async (t) => {
  const gone = await signUpOwner(app, 'Going away');
  const channel = (await ok(gone.client.post('/api/v1/channels', { name: 'Shop' }), 201)).channel.id;
  for (const channel_id of [null, channel]) {
    const { quote } = await ok(gone.client.post('/api/v1/quotes', { customer: { email: uniqueEmail('gone'), name: 'G' }, ...(channel_id && { channel_id }) }), 201);
    await ok(gone.client.post(`/api/v1/quotes/${quote.id}/send`, { notify: false }));
  }
  t.is(sum(await quoteStatusCounts(db(), { ...asOwner, workspaceId: gone.workspace.id }, {})), 2);
  await app.db('workspaces').where({ id: gone.workspace.id }).delete();
  t.deepEqual(await app.db('quote_counts').where({ workspace_id: gone.workspace.id }), []);
  await assertCounts(t, 'another workspace deleted');
  t.is(sum(await quoteStatusCounts(db(), { ...asOwner, workspaceId: other.workspace.id }, {})), 3, "the other workspace's counts stay");
});

test('the migration counts the quotes already there, and rolls back', async (t) => {
  const database = await freshDatabase();
  t.teardown(() => database.close());
  const knex = acrossWorkspaces(database.knex);
  // It and the migrations after it (newest first).
  const rolledBack: string[] = [];
  while (!rolledBack.includes('20261127160000_quote_counts')) {
    const [, files] = (await knex.migrate.down(migratorConfig)) as [number, string[]];
    if (!files.length) break;
    rolledBack.push(...files.map((file) => file.replace(/^.*\//, '').replace(/\.js$/, '')));
  }
  t.deepEqual(rolledBack, ['20261128120000_quotes_by_status', '20261128100000_quote_ranges_by_bucket', '20261128060000_quote_count_ranges', '20261128020000_quote_create_function', '20261127210000_quote_answers_reminders', '20261127200000_workspace_profiles', '20261127190000_ops_counters', '20261127160000_quote_counts']);
  t.false((await knex.raw(`select to_regclass('quote_counts') is not null as present`)).rows[0].present);
  t.false((await knex.raw(`select to_regclass('quote_ranges') is not null as present`)).rows[0].present);
  for (const name of ['One', 'Two']) {
    const [{ id: ws }] = (await knex.raw(`insert into workspaces (name, slug, public_key, secret_key_hash) values (?, ?, ?, ?) returning id`, [name, `counts-${name}`, `pk_${name}`, `h_${name}`])).rows;
    const [{ id: channel }] = (await knex.raw(`insert into channels (workspace_id, name) values (?, 'C') returning id`, [ws])).rows;
    await knex.raw(
      `insert into quotes (workspace_id, quote_number, status, channel_id, public_token)
       select ?, 'Q-' || g, (array['draft', 'sent', 'paid'])[1 + g % 3], case when g % 2 = 0 then ?::int end, ? || g from generate_series(1, 50) g`,
      [ws, channel, `tok-${name}-`],
    );
    // The next workspace's quotes in other ranges of ids (quote_ranges).
    await knex.raw(`select setval(pg_get_serial_sequence('quotes', 'id'), nextval(pg_get_serial_sequence('quotes', 'id')) + 2000)`);
  }
  await knex.migrate.latest(migratorConfig);
  t.true((await knex.raw('select count(distinct id >> 10)::int as n from quotes')).rows[0].n > 1);
  t.is((await knex.raw('select sum(n)::int as n from quote_counts')).rows[0].n, 100);
  t.deepEqual(await staleQuoteCounts(knex), []);
  t.deepEqual(await staleQuoteRanges(knex), [], 'and by range of ids');
  await knex.raw(`update quotes set status = 'cancelled' where status = 'draft'`);
  t.deepEqual(await staleQuoteCounts(knex), [], 'the triggers keep them from then on');
  t.deepEqual(await staleQuoteRanges(knex), [], 'the ranges too');
  // And the checks see a count that is off.
  for (const table of ['quote_counts', 'quote_ranges']) await knex.raw(`update ${table} set n = n + 1`);
  t.true((await staleQuoteCounts(knex)).some((line) => line.startsWith('kept: ')), 'a count off by one is seen');
  t.true((await staleQuoteRanges(knex)).some((line) => line.startsWith('kept: ')), 'a range off by one is seen');
  for (const table of ['quote_counts', 'quote_ranges']) await knex.raw(`update ${table} set n = n - 1`);
});
