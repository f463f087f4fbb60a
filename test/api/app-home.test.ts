import test from 'ava';
import { signUpOwner, uniqueEmail, type Owner } from '../helpers/app.js';
import { ok } from '../helpers/client.js';
import { useOwnerApp } from '../helpers/fixture.js';
import { inviteMember, type Member } from '../helpers/members.js';
import { visibleText } from '../helpers/pages.js';
import { dateText } from '../../src/dates.js';

const { app, owner, smtp } = useOwnerApp(test, { smtp: true, workspace: 'Acme <b>Home</b>' });

let member: Member;
let hidden: { id: number };
test.serial.before(async () => {
  member = await inviteMember(app, smtp, owner);
  hidden = (await ok(owner.client.post('/api/v1/channels', { name: 'Hidden channel' }), 201)).channel;
});

/** A date `days` from today (UTC), as valid_until takes it. */
const inDays = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString().slice(0, 10);

interface QuoteOptions {
  name?: string;
  validUntil?: string | null;
  channelId?: number;
  price?: string;
  currency?: string;
}

async function draft(who: Owner | Member, o: QuoteOptions = {}) {
  const body = {
    customer: { email: uniqueEmail('customer'), name: o.name ?? 'Carla Customer' },
    currency: o.currency ?? 'EUR',
    valid_until: o.validUntil === undefined ? inDays(30) : o.validUntil,
    ...(o.channelId ? { channel_id: o.channelId } : {}),
    lines: [{ description: 'Work', quantity: '1', price: o.price ?? '1234.50' }],
  };
  return (await ok(who.client.post('/api/v1/quotes', body), 201)).quote;
}

async function sent(who: Owner | Member, o: QuoteOptions = {}) {
  const quote = await draft(who, o);
  return (await ok(who.client.post(`/api/v1/quotes/${quote.id}/send`, { notify: false }))).quote;
}

/** Sent, then accepted by the customer on the public page. */
async function accepted(who: Owner | Member, o: QuoteOptions = {}) {
  const quote = await sent(who, o);
  const res = await app.client().request('POST', `/q/${quote.public_token}/accept`, { form: { name: 'Carla Customer', agree: 'yes' } });
  if (res.status !== 302) throw new Error(`accept: ${res.status}`);
  return (await ok(who.client.get(`/api/v1/quotes/${quote.id}`))).quote;
}

async function converted(who: Owner | Member, o: QuoteOptions = {}) {
  const quote = await accepted(who, o);
  const order = (await ok(who.client.post(`/api/v1/quotes/${quote.id}/convert`), 201)).order;
  return { quote, order };
}

/** One box of the home page, by its heading's id. */
function box(html: string, id: string): string {
  const match = new RegExp(`<section class="card" aria-labelledby="${id}">([\\s\\S]*?)</section>`).exec(html);
  if (!match) throw new Error(`no box ${id}`);
  return match[1];
}

/** The text of the row linking to `href`, or undefined when the box has none. */
function row(html: string, href: string): string | undefined {
  const match = new RegExp(`<tr>(?:(?!</tr>)[\\s\\S])*href="${href}"[\\s\\S]*?</tr>`).exec(html);
  return match ? visibleText(match[0]) : undefined;
}

const quoteLink = (quote: { id: number }) => `/app/quotes/${quote.id}`;
const orderLink = (order: { id: number }) => `/app/orders/${order.id}`;
const boxes = ['awaiting', 'expiring', 'accepted', 'orders'] as const;

test('the home page sends a visitor without a session to sign in', async (t) => {
  const res = await app.client().get('/app');
  t.is(res.status, 302);
  t.is(res.headers.get('location'), '/login?next=%2Fapp');
});

test("a locked workspace's home is the 402 page", async (t) => {
  const locked = await signUpOwner(app, 'Locked');
  await app.db('workspaces').where({ id: locked.workspace.id }).update({ status: 'suspended' });
  app.sessionCache.evict('all');
  const res = await locked.client.get('/app');
  t.is(res.status, 402);
  t.true(res.text.includes('This workspace is locked'));
});

test('each quote is in the boxes its state puts it in, with customer, total and the date that matters', async (t) => {
  const waiting = await sent(owner, { name: 'Wendy Waiting', validUntil: inDays(20) });
  const openEnded = await sent(owner, { name: 'Olga Open', validUntil: null });
  const expiring = await sent(owner, { name: 'Edgar Expiring', validUntil: inDays(3), currency: 'USD', price: '99' });
  const today = await sent(owner, { name: 'Tess Today', validUntil: inDays(0) });
  const later = await sent(owner, { name: 'Larry Later', validUntil: inDays(8) });
  const yes = await accepted(owner, { name: 'Ada Accepted' });
  const done = await converted(owner, { name: 'Connie Converted', price: '10' });
  const notSent = await draft(owner, { name: 'Dora Draft', validUntil: inDays(2) });

  const res = await owner.client.get('/app');
  t.is(res.status, 200);
  const page = res.text;
  const where = (href: string) => boxes.filter((id) => row(box(page, id), href) !== undefined);

  t.deepEqual(where(quoteLink(waiting)), ['awaiting']);
  t.deepEqual(where(quoteLink(openEnded)), ['awaiting']);
  t.deepEqual(where(quoteLink(expiring)), ['awaiting', 'expiring']);
  t.deepEqual(where(quoteLink(today)), ['awaiting', 'expiring'], 'its last valid day is today');
  t.deepEqual(where(quoteLink(later)), ['awaiting'], '8 days is past the week');
  t.deepEqual(where(quoteLink(yes)), ['accepted']);
  t.deepEqual(where(quoteLink(done.quote)), [], 'converted: no longer waiting to become an order');
  t.deepEqual(where(orderLink(done.order)), ['orders']);
  t.deepEqual(where(quoteLink(notSent)), [], 'a draft needs no answer yet');

  t.is(row(box(page, 'awaiting'), quoteLink(waiting)), `${waiting.quote_number} Wendy Waiting EUR 1,234.50 ${dateText(waiting.sent_at)}`);
  t.is(row(box(page, 'expiring'), quoteLink(expiring)), `${expiring.quote_number} Edgar Expiring USD 99.00 ${dateText(expiring.valid_until)}`);
  t.is(row(box(page, 'accepted'), quoteLink(yes)), `${yes.quote_number} Ada Accepted EUR 1,234.50 ${dateText(yes.accepted_at)}`);
  const orderRow = row(box(page, 'orders'), orderLink(done.order)) ?? '';
  t.true(orderRow.startsWith(`${done.order.order_number} Connie Converted EUR 10.00`), orderRow);
  t.true(orderRow.endsWith(dateText(done.order.placed_at ?? done.order.created_at)), orderRow);

  // The soonest to expire comes first.
  const expiringBox = box(page, 'expiring');
  t.true(expiringBox.indexOf(quoteLink(today)) < expiringBox.indexOf(quoteLink(expiring)));

  t.true(page.includes('<a class="button primary" href="/app/quotes/new">New quote</a>'));
  t.true(page.includes('<h1>Acme &lt;b&gt;Home&lt;/b&gt;</h1>'), 'the workspace name, escaped');
});

test("a member sees none of a hidden channel's quotes or orders on the home page; the owner does", async (t) => {
  const hiddenSent = await sent(owner, { channelId: hidden.id, validUntil: inDays(2), name: 'Hidden Hal' });
  const hiddenAccepted = await accepted(owner, { channelId: hidden.id, name: 'Hidden Hanna' });
  const hiddenDone = await converted(owner, { channelId: hidden.id, name: 'Hidden Hugo' });
  const open = await sent(member, { validUntil: inDays(2), name: 'Open Otto' });

  const theirs = (await member.client.get('/app')).text;
  const mine = (await owner.client.get('/app')).text;
  for (const [href, ids] of [
    [quoteLink(hiddenSent), ['awaiting', 'expiring']],
    [quoteLink(hiddenAccepted), ['accepted']],
    [orderLink(hiddenDone.order), ['orders']],
  ] as const) {
    for (const id of ids) t.truthy(row(box(mine, id), href), `owner: ${href} in ${id}`);
    for (const id of boxes) t.is(row(box(theirs, id), href), undefined, `member: ${href} not in ${id}`);
  }
  t.false(theirs.includes('Hidden H'), 'no hidden customer name anywhere on the page');
  t.truthy(row(box(theirs, 'awaiting'), quoteLink(open)), 'a quote of no channel is the member\u2019s to see');
  t.truthy(row(box(theirs, 'expiring'), quoteLink(open)));
});

test('a workspace with nothing yet: every box says it is empty', async (t) => {
  const fresh = await signUpOwner(app, 'Fresh');
  const res = await fresh.client.get('/app');
  t.is(res.status, 200);
  const text = visibleText(res.text);
  for (const message of [
    'No sent quotes are waiting for an answer.',
    'No sent quotes expire in the next 7 days.',
    'No accepted quotes are waiting to become orders.',
    'No orders yet.',
  ]) t.true(text.includes(message), message);
  t.false(res.text.includes('<table'));
});

test('a box shows 10 rows and says there are more; another workspace\u2019s quotes are never there', async (t) => {
  const busy = await signUpOwner(app, 'Busy');
  const made = [];
  for (let i = 0; i < 11; i++) made.push(await sent(busy, { validUntil: null }));
  const page = (await busy.client.get('/app')).text;
  const awaiting = box(page, 'awaiting');
  t.regex(awaiting, /Waiting for an answer <span class="count">10\+<\/span>/);
  t.is((awaiting.match(/<tr>/g) ?? []).length - 1, 10, 'ten rows under the header');
  // Longest waiting first: the first ten sent.
  for (const quote of made.slice(0, 10)) t.truthy(row(awaiting, quoteLink(quote)));
  t.is(row(awaiting, quoteLink(made[10])), undefined);
  t.true(awaiting.includes('href="/app/quotes?status=sent"'));

  const ownerPage = (await owner.client.get('/app')).text;
  for (const quote of made) t.false(ownerPage.includes(`href="${quoteLink(quote)}"`));
});

test('customer names with markup come out escaped in every box', async (t) => {
  const evil = '<script>alert("home")</script>';
  const shop = await signUpOwner(app, 'Escapes');
  await sent(shop, { name: `${evil} waiting`, validUntil: inDays(1) });
  await accepted(shop, { name: `${evil} accepted` });
  const { order } = await converted(shop, { name: `${evil} order` });
  const res = await shop.client.get('/app');
  t.false(res.text.includes('<script>alert'));
  const text = visibleText(res.text);
  for (const part of [`${evil} waiting`, `${evil} accepted`]) t.true(text.includes(part), part);
  t.true((row(box(res.text, 'orders'), orderLink(order)) ?? '').includes(`${evil} order`));
});
