import test, { type ExecutionContext } from 'ava';
import { signUpOwner, staleQuoteRanges, uniqueEmail, type Owner } from '../helpers/app.js';
import { ok, type Client } from '../helpers/client.js';
import { useOwnerApp } from '../helpers/fixture.js';
import { inviteMember, type Member } from '../helpers/members.js';

// A page of the app's quotes list typed in by its number (no cursor) finds its first quote from the counts kept by
// id range (quote_ranges, migration 20261128060000) when the filters are ones the counts keep. Over quotes spanning
// several ranges, some empty, shared with another workspace, every typed page lists the ids that slicing all the
// matching ids gives, for the owner and for a member with a role on one channel, after inserts, status and channel
// changes and deletes; and the pages reached by Next links are the typed ones.

const { app, smtp, owner } = useOwnerApp(test, { workspace: 'Quote ranges', smtp: true });

const SIZE = 50;
let other: Owner;
/** A member with a role (viewer) on channel A, none on channel B. */
let mia: Member;
let channelA: number;
let channelB: number;
let ada: number;
let grace: number;

const statuses = `(array['draft', 'sent', 'accepted', 'declined', 'cancelled', 'paid'])[1 + g % 6]`;

/** `count` quotes of the workspace in one statement: statuses, channels (none, A, B) and customers (Ada, Grace) in turn. */
async function bulk(workspaceId: number, count: number, tag: string, channels: (number | null)[], customers: number[]): Promise<void> {
  const inTurn = (ids: (number | null)[]) => `(array[${ids.map((id) => (id === null ? 'null' : Number(id))).join(', ')}]::int[])[1 + g % ${ids.length}]`;
  await app.db.raw(
    `insert into quotes (workspace_id, quote_number, status, customer_id, customer_name, channel_id, public_token)
     select ?, ? || lpad(g::text, 6, '0'), ${statuses}, ${inTurn(customers)}, 'Bulk', ${inTurn(channels)}, ? || g
     from generate_series(1, ?::int) g`,
    [workspaceId, `Q-${tag}-`, `ranges-${tag}-`, count],
  );
}

/** Leaves `ids` quote ids unused: ranges with none of the workspace's quotes. */
async function skipIds(ids: number): Promise<void> {
  await app.db.raw(`select setval(pg_get_serial_sequence('quotes', 'id'), nextval(pg_get_serial_sequence('quotes', 'id')) + ?)`, [ids]);
}

test.before(async () => {
  other = await signUpOwner(app, 'Elsewhere');
  mia = await inviteMember(app, smtp, owner);
  channelA = (await ok(owner.client.post('/api/v1/channels', { name: 'A' }), 201)).channel.id;
  channelB = (await ok(owner.client.post('/api/v1/channels', { name: 'B' }), 201)).channel.id;
  await ok(owner.client.put(`/api/v1/channels/${channelA}/members/${mia.user.id}`, { role: 'viewer' }));
  ada = (await ok(owner.client.post('/api/v1/customers', { email: uniqueEmail('ada'), name: 'Ada' }), 201)).customer.id;
  grace = (await ok(owner.client.post('/api/v1/customers', { email: uniqueEmail('grace'), name: 'Grace' }), 201)).customer.id;
  const elsewhere = (await ok(other.client.post('/api/v1/customers', { email: uniqueEmail('elsewhere'), name: 'E' }), 201)).customer.id;
  const ws = owner.workspace.id;
  const mine = (count: number, tag: string) => bulk(ws, count, tag, [null, channelA, channelB], [ada, grace]);
  // The other workspace's quotes share the ranges; empty ranges lie between.
  await mine(900, 'a');
  await bulk(other.workspace.id, 300, 'x', [null], [elsewhere]);
  await skipIds(2500);
  await mine(900, 'b');
  await bulk(other.workspace.id, 200, 'y', [null], [elsewhere]);
  await mine(900, 'c');
  await skipIds(1100);
  await mine(600, 'd');
});

const rowsOf = (page: string) => [...page.matchAll(/<a href="\/app\/quotes\/(\d+)">/g)].map((m) => Number(m[1]));
const query = (filters: object) => new URLSearchParams(Object.entries(filters).map(([k, v]) => [k, String(v)])).toString();

interface Row {
  id: number;
  status: string;
  channel_id: number | null;
  customer_id: number | null;
}

/**
 * The kept ranges are the quotes counted by range, and every page typed in (1 to the last, and the one past it) lists
 * the matching ids, newest first, sliced: for the owner with no filter, a status, a channel, a customer (whose pages
 * skip as before), and for the member with no filter, a status, their channel and the channel they may not read.
 */
async function assertTypedPages(t: ExecutionContext, after: string): Promise<void> {
  t.deepEqual(await staleQuoteRanges(app.db), [], `${after}: quote_ranges is the quotes counted by range`);
  const all = (await app.db('quotes').where({ workspace_id: owner.workspace.id }).orderBy('id', 'desc').select('id', 'status', 'channel_id', 'customer_id')) as Row[];
  const miaReads = (r: Row) => r.channel_id === null || r.channel_id === channelA;
  const cases: [string, Client, (r: Row) => boolean, Record<string, string | number>][] = [
    ['owner', owner.client, () => true, {}],
    ['owner', owner.client, (r) => r.status === 'sent', { status: 'sent' }],
    ['owner', owner.client, (r) => r.channel_id === channelB, { channel_id: channelB }],
    ['owner', owner.client, (r) => r.status === 'paid' && r.channel_id === channelA, { status: 'paid', channel_id: channelA }],
    ['owner', owner.client, (r) => r.customer_id === ada, { customer_id: ada }],
    ['member', mia.client, miaReads, {}],
    ['member', mia.client, (r) => miaReads(r) && r.status === 'draft', { status: 'draft' }],
    ['member', mia.client, (r) => r.channel_id === channelA, { channel_id: channelA }],
    ['member', mia.client, () => false, { channel_id: channelB }],
  ];
  for (const [who, client, matches, filters] of cases) {
    const ids = all.filter(matches).map((r) => r.id);
    const pages = Math.max(1, Math.ceil(ids.length / SIZE));
    for (let page = 1; page <= pages + 1; page++) {
      const res = await client.get(`/app/quotes?${query({ ...filters, page })}`);
      t.is(res.status, 200);
      const expected = ids.slice((page - 1) * SIZE, page * SIZE);
      if (JSON.stringify(rowsOf(res.text)) !== JSON.stringify(expected)) {
        t.deepEqual(rowsOf(res.text), expected, `${after}: ${who}, ${query(filters) || 'no filter'}, page ${page} of ${pages}`);
        return;
      }
    }
    t.pass();
  }
}

/** The pages the Next links lead to, from the first: their rows. */
async function linkedPages(client: Client, filters: object): Promise<number[][]> {
  const pages: number[][] = [];
  for (let path: string | undefined = `/app/quotes?${query(filters)}`; path; ) {
    const { text }: { text: string } = await client.get(path);
    pages.push(rowsOf(text));
    path = /rel="next" href="([^"]+)"/.exec(text)?.[1].replace(/&amp;/g, '&');
  }
  return pages;
}

test.serial('the quotes span several ranges of ids, some of them empty and some shared with another workspace', async (t) => {
  const { rows } = await app.db.raw(`select count(distinct id >> 10)::int as ranges, (max(id) >> 10) - (min(id) >> 10) + 1 as spanned from quotes where workspace_id = ?`, [owner.workspace.id]);
  t.true(rows[0].ranges > 3, `${rows[0].ranges} ranges`);
  t.true(rows[0].spanned > rows[0].ranges, 'some ranges between hold none of its quotes');
  await assertTypedPages(t, 'seeded');
});

test.serial('the typed pages follow inserts, status changes, channel changes and deletes', async (t) => {
  const ws = owner.workspace.id;
  await bulk(ws, 130, 'e', [channelA, null], [grace, ada]);
  for (const channel_id of [null, channelA, channelB]) await ok(owner.client.post('/api/v1/quotes', { customer_id: ada, ...(channel_id && { channel_id }) }), 201);
  await assertTypedPages(t, 'inserted');
  await app.db.raw(`update quotes set status = case when id % 7 = 0 then 'sent' when id % 7 = 1 then 'paid' else status end where workspace_id = ?`, [ws]);
  const { quote } = await ok(owner.client.post('/api/v1/quotes', { customer_id: grace, channel_id: channelA }), 201);
  await ok(owner.client.post(`/api/v1/quotes/${quote.id}/send`, { notify: false }));
  await assertTypedPages(t, 'statuses changed');
  await app.db.raw(
    `update quotes set channel_id = case when channel_id = ? and id % 4 = 0 then ? when channel_id = ? and id % 9 = 0 then null else channel_id end where workspace_id = ?`,
    [channelA, channelB, channelB, ws],
  );
  await assertTypedPages(t, 'channels changed');
  await app.db.raw(`delete from quotes where workspace_id = ? and id % 11 = 0`, [ws]);
  await ok(owner.client.delete(`/api/v1/quotes/${quote.id}`));
  await assertTypedPages(t, 'deleted');
  await ok(owner.client.delete(`/api/v1/customers/${grace}?cascade=1`));
  t.is(Number((await app.db('quotes').where({ workspace_id: ws, customer_id: grace }).count('* as n'))[0].n), 0);
  await assertTypedPages(t, "a customer's quotes deleted");
});

test.serial('the pages the Next links reach are the pages typed in', async (t) => {
  for (const [client, filters] of [[owner.client, {}], [owner.client, { status: 'sent' }], [mia.client, { channel_id: channelA }]] as const) {
    const linked = await linkedPages(client, filters);
    t.true(linked.length > 2);
    for (const [i, rows] of linked.entries()) t.deepEqual(rowsOf((await client.get(`/app/quotes?${query({ ...filters, page: i + 1 })}`)).text), rows, `page ${i + 1}`);
  }
});
