import { setTimeout as sleep } from 'node:timers/promises';
import test from 'ava';
import { signUpOwner, type Owner } from '../helpers/app.js';
import { ok, type Client } from '../helpers/client.js';
import { useOwnerApp } from '../helpers/fixture.js';
import { inviteMember, type Member } from '../helpers/members.js';
import { postForm, visibleText } from '../helpers/pages.js';
import { PATIENCE_MS } from '../helpers/patience.js';
import { usingPostgres } from '../helpers/database.js';
import { testWhen } from '../helpers/skip.js';
import { wooCatalogue, wooCatalogueNotes } from '../helpers/woocommerce-exports.js';

/**
 * The import page (/app/imports): a CSV uploaded as a browser does (multipart) or given by URL, its dry run in the
 * background, the report with the errors by line, then apply or cancel; progress while a run goes on; the same
 * rights and the same one-at-a-time rule as the imports API.
 */

const { app, owner, smtp } = useOwnerApp(test, { smtp: true });
/** Holding a lock beside the app's own connection needs PostgreSQL (the embedded database has one connection). */
const postgresTest = testWhen(usingPostgres, 'needs PostgreSQL: set TEST_DATABASE_URL', { serial: true });

let other: Owner;
let member: Member;
test.serial.before(async () => {
  other = await signUpOwner(app, 'Other Co');
  member = await inviteMember(app, smtp, owner);
});

let counter = 0;
const tag = () => `${process.pid}-${++counter}`;

const cookieOf = (client: Client) => [...client.cookies].map(([k, v]) => `${k}=${v}`).join('; ');

interface Sent {
  status: number;
  location: string;
  text: string;
}

/** Posts the import form as a browser does: multipart, the kind and the URL as fields, the file as a file part (empty when none is chosen). */
async function upload(client: Client, fields: Record<string, string>, csv?: string, options: { filename?: string; origin?: string } = {}): Promise<Sent> {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  if (csv === undefined) form.append('file', new Blob([], { type: 'application/octet-stream' }), '');
  else form.append('file', new Blob([csv], { type: 'text/csv' }), options.filename ?? 'catalogue.csv');
  const res = await fetch(`${app.url}/app/imports`, {
    method: 'POST', body: form, redirect: 'manual',
    headers: { cookie: cookieOf(client), origin: options.origin ?? app.url },
  });
  return { status: res.status, location: res.headers.get('location') ?? '', text: await res.text() };
}

const jobIdOf = (sent: Sent) => {
  const id = Number(/^\/app\/imports\/(\d+)$/.exec(sent.location)?.[1]);
  if (!(id > 0)) throw new Error(`no import page: ${sent.status} ${sent.location} ${visibleText(sent.text).slice(0, 300)}`);
  return id;
};

/** The progress part's state, polled until the run is over (bounded by PATIENCE_MS); every state seen, in order. */
async function settle(client: Client, id: number): Promise<string[]> {
  const seen: string[] = [];
  const until = Date.now() + PATIENCE_MS;
  for (;;) {
    const res = await client.get(`/app/imports/${id}/progress`);
    if (res.status !== 200) throw new Error(`progress answered ${res.status}`);
    const state = /data-state="(\w+)"/.exec(res.text)?.[1] ?? '?';
    if (seen.at(-1) !== state) seen.push(state);
    if (state !== 'waiting' && state !== 'running') return seen;
    if (Date.now() > until) throw new Error(`the import is still ${state}`);
    await sleep(20);
  }
}

/** Waits until the progress part shows `want` (a state, and optionally rows done at least). */
async function waitForProgress(client: Client, id: number, want: (text: string) => boolean): Promise<string> {
  const until = Date.now() + PATIENCE_MS;
  for (;;) {
    const res = await client.get(`/app/imports/${id}/progress`);
    if (want(res.text)) return res.text;
    if (Date.now() > until) throw new Error(`the progress never got there: ${visibleText(res.text)}`);
    await sleep(20);
  }
}

async function productBySku(client: Client, sku: string) {
  const res = await client.get(`/api/v1/products?q=${encodeURIComponent(sku)}`);
  return res.body.data.products.find((p: { sku: string }) => p.sku === sku);
}

const productHeader = 'product_sku,name,variant_sku,price';

test.serial('the import pages send a visitor without a session to sign in; the navigation links them for owners and members', async (t) => {
  const visitor = app.client();
  for (const path of ['/app/imports', '/app/imports/123', '/app/imports/123/progress']) {
    const res = await visitor.get(path);
    t.is(res.status, 302, path);
    t.is(res.headers.get('location'), `/login?next=${encodeURIComponent(path)}`, path);
  }
  const sent = await upload(visitor, { kind: 'products' }, `${productHeader}\nA,B,C,1.00\n`);
  t.is(sent.status, 303);
  t.regex(sent.location, /^\/login/);
  for (const path of ['/app/imports/123/apply', '/app/imports/123/cancel']) {
    const res = await postForm(visitor, path, {});
    t.is(res.status, 303, path);
    t.regex(res.headers.get('location') ?? '', /^\/login/, path);
  }
  for (const who of [owner.client, member.client]) {
    const home = await who.get('/app');
    t.true(home.text.includes('<a href="/app/imports">Imports</a>'));
    const page = await who.get('/app/imports');
    t.is(page.status, 200);
    t.true(page.text.includes('<a href="/app/imports" aria-current="page">Imports</a>'));
    t.true(page.text.includes('enctype="multipart/form-data"'));
  }
});

test.serial('a product CSV with errors: the dry run lists the bad lines with field and message, as the API does, and writes nothing; apply writes the good rows', async (t) => {
  const p = `P-${tag()}`;
  const csv =
    `${productHeader}\n` +
    `${p}-1,Good lamp,${p}-1-S,12.50\n` +
    `${p}-2,Bad price,${p}-2-S,12.505\n` +
    `${p}-3,,${p}-3-S,4.00\n` +
    `${p}-4,Good chair,${p}-4-S,80.00\n` +
    `${p}-4,Good chair,${p}-4-M,abc\n`;
  const api = (await ok(owner.client.request('POST', '/api/v1/products/import?dry_run=1', { raw: csv, contentType: 'text/csv' }))).import;
  t.true(api.errors.length >= 3, JSON.stringify(api.errors));

  const sent = await upload(owner.client, { kind: 'products', url: '' }, csv, { filename: 'lamps.csv' });
  t.is(sent.status, 303, visibleText(sent.text));
  const id = jobIdOf(sent);
  t.deepEqual((await settle(owner.client, id)).at(-1), 'checked');

  const shown = await owner.client.get(`/app/imports/${id}`);
  t.is(shown.status, 200);
  t.false(shown.text.includes('http-equiv="refresh"'), 'a finished run does not refresh');
  const text = visibleText(shown.text);
  t.true(text.includes('Import of lamps.csv'));
  t.regex(text, /Products · 1 KB · started \d+ \w+ \d{4}, \d\d:\d\d UTC · finished \d+ \w+ \d{4}, \d\d:\d\d UTC/);
  t.true(text.includes('Dry run: what the import would do'));
  t.true(text.includes(`Rows read ${api.rows}`), text);
  t.true(text.includes(`Would be created ${api.created}`), text);
  t.true(text.includes(`Rows with errors ${api.failed}`), text);
  t.true(text.includes(`Errors by line ${api.errors.length}`), text);
  for (const error of api.errors) t.true(text.includes(`${error.row} ${error.field} ${error.message}`), JSON.stringify(error));
  t.true(text.includes(`Import the ${api.rows - api.failed} good rows`));
  t.is(await productBySku(owner.client, `${p}-1`), undefined, 'the dry run wrote nothing');

  const applied = await postForm(owner.client, `/app/imports/${id}/apply`, {});
  t.is(applied.status, 303);
  t.is(applied.headers.get('location'), `/app/imports/${id}`);
  t.deepEqual((await settle(owner.client, id)).at(-1), 'done');
  const done = visibleText((await owner.client.get(`/app/imports/${id}`)).text);
  t.true(done.includes('Imported'), done);
  t.true(done.includes('Created 2'), done);
  t.true(done.includes(`Rows not imported ${api.errors.length}`), done);
  t.false(done.includes('Notes by line'), 'a file without notes has no notes part');
  t.false(done.includes('Skipped'), 'a file without skipped rows shows no count of them');
  t.like(await productBySku(owner.client, `${p}-1`), { name: 'Good lamp' });
  t.like(await productBySku(owner.client, `${p}-4`), { name: 'Good chair' });
  t.is(await productBySku(owner.client, `${p}-2`), undefined);

  // Applied once: the file is gone, a second apply is refused with the reason.
  const again = await postForm(owner.client, `/app/imports/${id}/apply`, {});
  t.is(again.status, 409);
  t.true(visibleText(again.text).includes('This import was already applied.'));
  const list = visibleText((await owner.client.get('/app/imports')).text);
  t.true(list.includes('lamps.csv Products Imported'), list);
});

test.serial('a WooCommerce export: the dry run and the import list the notes of grouped and external products by line', async (t) => {
  const sent = await upload(owner.client, { kind: 'products', url: '' }, wooCatalogue, { filename: 'wc-product-export.csv' });
  t.is(sent.status, 303, visibleText(sent.text));
  const id = jobIdOf(sent);
  t.deepEqual((await settle(owner.client, id)).at(-1), 'checked');
  const text = visibleText((await owner.client.get(`/app/imports/${id}`)).text);
  t.true(text.includes('No errors: every row can be imported.'), text);
  t.true(text.includes(`Notes by line ${wooCatalogueNotes.length}`), text);
  for (const note of wooCatalogueNotes) t.true(text.includes(`${note.row} ${note.field} ${note.message}`), JSON.stringify(note));
  t.true(text.includes('Import 10 rows'), text);
  t.true(text.includes('Skipped (no variant of their own) 2'), 'the variable products\' own rows are counted as skipped');

  t.is((await postForm(owner.client, `/app/imports/${id}/apply`, {})).status, 303);
  t.deepEqual((await settle(owner.client, id)).at(-1), 'done');
  const done = visibleText((await owner.client.get(`/app/imports/${id}`)).text);
  t.true(done.includes('Created 10'), done);
  t.true(done.includes(`Notes by line ${wooCatalogueNotes.length}`), done);
  t.like(await productBySku(owner.client, 'logo-collection'), { name: 'Logo Collection' });
});

test.serial('cancel after the dry run writes nothing, and the file cannot be applied afterwards', async (t) => {
  const p = `C-${tag()}`;
  const id = jobIdOf(await upload(owner.client, { kind: 'products' }, `${productHeader}\n${p},Cancelled lamp,${p}-S,9.00\n`));
  t.deepEqual((await settle(owner.client, id)).at(-1), 'checked');
  const cancelled = await postForm(owner.client, `/app/imports/${id}/cancel`, {});
  t.is(cancelled.status, 303);
  const text = visibleText((await owner.client.get(`/app/imports/${id}`)).text);
  t.true(text.includes('Cancelled: nothing is written.'), text);
  t.true(text.includes('Nothing was written.'));
  const apply = await postForm(owner.client, `/app/imports/${id}/apply`, {});
  t.is(apply.status, 409);
  t.true(visibleText(apply.text).includes('This import was cancelled'));
  t.is(await productBySku(owner.client, p), undefined);
});

test.serial('an orders CSV: the dry run, then apply; the orders are visible through the JSON API', async (t) => {
  const n = tag();
  const csv =
    'order_number,external_source,currency,customer_email,sku,quantity,price\n' +
    `A${n},shop,EUR,buyer-${n}@example.com,MUG,2,4.50\n` +
    `A${n},shop,EUR,buyer-${n}@example.com,PEN,1,1.20\n` +
    `B${n},shop,EUR,buyer-${n}@example.com,MUG,x,4.50\n`;
  const id = jobIdOf(await upload(owner.client, { kind: 'orders' }, csv, { filename: 'orders.csv' }));
  t.deepEqual((await settle(owner.client, id)).at(-1), 'checked');
  const report = visibleText((await owner.client.get(`/app/imports/${id}`)).text);
  t.true(report.includes('Orders'), report);
  t.true(report.includes('Would be created 1'), report);
  t.regex(report, /4 quantity quantity: /);
  t.is(await postForm(owner.client, `/app/imports/${id}/apply`, {}).then((r) => r.status), 303);
  t.deepEqual((await settle(owner.client, id)).at(-1), 'done');
  const orders = (await ok(owner.client.get(`/api/v1/orders?q=${n}`))).orders as { order_number: string; total: string }[];
  const order = orders.find((o) => o.order_number === `A${n}`);
  t.truthy(order);
  t.is(order!.total, '10.20');
  t.false(orders.some((o) => o.order_number === `B${n}`));
});

test.serial('a URL instead of a file; a form without either, or without a kind, is shown again with the message beside its field', async (t) => {
  const none = await upload(owner.client, { kind: 'products', url: '' });
  t.is(none.status, 422);
  t.regex(none.text, /<p class="field-error" id="f-file-error">file: choose a CSV file, or give its URL.<\/p>/);
  const noKind = await upload(owner.client, {}, `${productHeader}\nA,B,C,1.00\n`);
  t.is(noKind.status, 422);
  t.true(noKind.text.includes('id="f-kind-error">kind: choose products or orders.'), visibleText(noKind.text));
  const badUrl = await upload(owner.client, { kind: 'orders', url: 'ftp://example.com/a.csv' });
  t.is(badUrl.status, 422);
  t.true(badUrl.text.includes('id="f-url-error">url: must be an absolute http or https URL.'));
  t.true(badUrl.text.includes('value="ftp://example.com/a.csv"'), 'the input is kept');
  t.regex(badUrl.text, /value="orders" checked/);
  // A loopback URL is refused by the outbound policy, as the API refuses it.
  const loopback = await upload(owner.client, { kind: 'products', url: `${app.url}/healthz` });
  t.is(loopback.status, 422);
  t.true(loopback.text.includes('id="f-url-error">url: '), visibleText(loopback.text));
  const both = await upload(owner.client, { kind: 'products', url: 'https://example.com/a.csv' }, `${productHeader}\nA,B,C,1.00\n`);
  t.is(both.status, 422);
  t.true(both.text.includes('url: give a file or a URL, not both.'));
});

test.serial('a file the import refuses as a whole (a required column missing): the page shows the API\'s message; nothing is written', async (t) => {
  const csv = `product_sku,name,price\nM-${tag()},No variant column,1.00\n`;
  const api = await owner.client.request('POST', '/api/v1/products/import?dry_run=1', { raw: csv, contentType: 'text/csv' });
  t.is(api.status, 422);
  const id = jobIdOf(await upload(owner.client, { kind: 'products' }, csv));
  t.deepEqual((await settle(owner.client, id)).at(-1), 'failed');
  const text = visibleText((await owner.client.get(`/app/imports/${id}`)).text);
  t.true(text.includes(api.body.error), text);
  t.true(text.includes('Nothing was written.'));
  t.is((await postForm(owner.client, `/app/imports/${id}/apply`, {})).status, 409);
});

test.serial('markup in a CSV cell, a column and the file name comes out escaped in the report', async (t) => {
  const evil = '<script>x</script>';
  const p = `E-${tag()}`;
  const csv = `${productHeader}\n${p},${evil},${evil},1.00\n${p}-2,Other,${evil},2.00\n${p}-3,"<img src=x onerror=alert(1)>",${p}-3-S,<b>1</b>\n`;
  const id = jobIdOf(await upload(owner.client, { kind: 'products' }, csv, { filename: `${evil}.csv` }));
  t.deepEqual((await settle(owner.client, id)).at(-1), 'checked');
  const page = await owner.client.get(`/app/imports/${id}`);
  t.false(page.text.includes('<script>x'), 'no markup from the file comes out raw');
  t.false(page.text.includes('<img src=x'));
  t.false(page.text.includes('<b>1'));
  t.true(page.text.includes('&lt;script&gt;x&lt;/script&gt;'));
  const text = visibleText(page.text);
  t.true(text.includes(`Import of ${evil}.csv`));
  const list = await owner.client.get('/app/imports');
  t.false(list.text.includes('<script>x'));
  t.is((await postForm(owner.client, `/app/imports/${id}/cancel`, {})).status, 303);
});

test.serial('a member: their rights are the API\'s (an order of a channel they have no role on fails the same way); another user\'s import is not theirs to see', async (t) => {
  const channel = (await ok(owner.client.post('/api/v1/channels', { name: `Wholesale ${tag()}`, currency: 'EUR' }), 201)).channel;
  const n = tag();
  const csv =
    'order_number,external_source,channel_id,currency,customer_email,sku,quantity,price\n' +
    `M${n},shop,${channel.id},EUR,m-${n}@example.com,MUG,1,4.50\n` +
    `N${n},shop,,EUR,m-${n}@example.com,MUG,1,4.50\n`;
  const api = (await ok(member.client.request('POST', '/api/v1/orders/import?dry_run=1', { raw: csv, contentType: 'text/csv' }))).import;
  t.is(api.failed, 1);
  const id = jobIdOf(await upload(member.client, { kind: 'orders' }, csv));
  t.deepEqual((await settle(member.client, id)).at(-1), 'checked');
  const text = visibleText((await member.client.get(`/app/imports/${id}`)).text);
  for (const error of api.errors) t.true(text.includes(`${error.row} ${error.field} ${error.message}`), text);
  t.true(text.includes('Would be created 1'));

  // The owner's import and the member's are each their own: another user's or workspace's id is the 404 page.
  const mine = jobIdOf(await upload(owner.client, { kind: 'products' }, `${productHeader}\nO-${n},Owner lamp,O-${n}-S,1.00\n`));
  for (const [client, jobId] of [[member.client, mine], [owner.client, id], [other.client, id]] as const) {
    for (const path of [`/app/imports/${jobId}`, `/app/imports/${jobId}/progress`]) t.is((await client.get(path)).status, 404, path);
    t.is((await postForm(client, `/app/imports/${jobId}/apply`, {})).status, 404);
    t.is((await postForm(client, `/app/imports/${jobId}/cancel`, {})).status, 404);
  }
  t.is((await member.client.get('/app/imports/abc')).status, 404);
  t.false(visibleText((await member.client.get('/app/imports')).text).includes('Owner lamp'));

  t.is((await postForm(member.client, `/app/imports/${id}/apply`, {})).status, 303);
  t.deepEqual((await settle(member.client, id)).at(-1), 'done');
  const orders = (await ok(owner.client.get(`/api/v1/orders?q=${n}`))).orders as { order_number: string }[];
  t.true(orders.some((o) => o.order_number === `N${n}`));
  t.false(orders.some((o) => o.order_number === `M${n}`));
  await settle(owner.client, mine);
  t.is((await postForm(owner.client, `/app/imports/${mine}/cancel`, {})).status, 303);
});

test.serial('the Origin check applies to the upload, apply and cancel: 403 and nothing happens', async (t) => {
  const p = `O-${tag()}`;
  const evil = 'https://evil.example';
  const sent = await upload(owner.client, { kind: 'products' }, `${productHeader}\n${p},Lamp,${p}-S,1.00\n`, { origin: evil });
  t.is(sent.status, 403);
  const id = jobIdOf(await upload(owner.client, { kind: 'products' }, `${productHeader}\n${p},Lamp,${p}-S,1.00\n`));
  t.deepEqual((await settle(owner.client, id)).at(-1), 'checked');
  for (const action of ['apply', 'cancel']) {
    const res = await postForm(owner.client, `/app/imports/${id}/${action}`, {}, { origin: evil });
    t.is(res.status, 403, action);
  }
  t.true(visibleText((await owner.client.get(`/app/imports/${id}`)).text).includes('Dry run: what the import would do'), 'still waiting for a decision');
  t.is(await productBySku(owner.client, p), undefined);
  t.is((await postForm(owner.client, `/app/imports/${id}/cancel`, {})).status, 303);
});

test.serial('a larger file: polled until done, the progress part while it runs, the summary after', async (t) => {
  const p = `L-${tag()}`;
  const rows = 6000;
  const lines = [productHeader];
  for (let i = 0; i < rows; i++) lines.push(`${p}-${Math.floor(i / 3)},Shirt ${i},${p}-${i},${(10 + (i % 50)).toFixed(2)}`);
  const id = jobIdOf(await upload(owner.client, { kind: 'products' }, `${lines.join('\n')}\n`));
  const first = await owner.client.get(`/app/imports/${id}`);
  t.is(first.status, 200);
  t.deepEqual((await settle(owner.client, id)).at(-1), 'checked');
  t.is((await postForm(owner.client, `/app/imports/${id}/apply`, {})).status, 303);
  // Right after apply the run is waiting or running (or, on a fast machine, over): each shape is checked as it comes.
  const during = await owner.client.get(`/app/imports/${id}`);
  if (/data-state="(waiting|running)"/.test(during.text)) {
    t.true(during.text.includes('<noscript><meta http-equiv="refresh" content="2"></noscript>'));
    t.regex(during.text, /<script src="\/assets\/imports\.js\?v=\w+" defer><\/script>/);
    t.true(visibleText(during.text).includes('Rows done'));
  }
  const states = await settle(owner.client, id);
  t.is(states.at(-1), 'done');
  const done = visibleText((await owner.client.get(`/app/imports/${id}`)).text);
  t.true(done.includes(`Rows read ${rows.toLocaleString('en-US')}`), done);
  t.true(done.includes(`Created ${rows.toLocaleString('en-US')}`), done);
  t.true(done.includes('No errors'), done);
  t.like(await productBySku(owner.client, `${p}-1999`), { name: 'Shirt 5997' });
  const script = await owner.client.get(first.text.match(/\/assets\/imports\.js\?v=\w+/)?.[0] ?? '/assets/imports.js');
  t.is(script.status, 200);
  t.regex(script.headers.get('content-type') ?? '', /javascript/);
});

postgresTest('while another import of its kind holds the workspace, the page says it waits (the API\'s rule); then its progress while it runs, and the summary', async (t) => {
  const p = `W-${tag()}`;
  // A product the import updates in its second batch: a test transaction holding its row stops the import there.
  await ok(owner.client.post('/api/v1/products', { sku: `${p}-LOCK`, name: 'Before' }), 201);
  const lines = [productHeader];
  for (let i = 0; i < 3000; i++) lines.push(`${p}-${i},Shirt ${i},${p}-${i}-S,10.00`);
  lines.push(`${p}-LOCK,After,${p}-LOCK-S,10.00`);
  const csv = `${lines.join('\n')}\n`;

  const lock = await app.db.transaction();
  const rowLock = await app.db.transaction();
  try {
    // Another import of products into this workspace, as the API's imports hold it (one at a time, across servers too).
    await lock.raw('select pg_advisory_xact_lock(hashtext(?), ?)', ['quoting:import:products', owner.workspace.id]);
    await rowLock.raw('select id from products where workspace_id = ? and sku = ? for update', [owner.workspace.id, `${p}-LOCK`]);
    const id = jobIdOf(await upload(owner.client, { kind: 'products' }, csv, { filename: 'shirts.csv' }));
    const waiting = await owner.client.get(`/app/imports/${id}`);
    t.true(waiting.text.includes('data-state="waiting"'));
    t.true(visibleText(waiting.text).includes('Waiting: another products import into this workspace is running.'));
    t.true(waiting.text.includes('<noscript><meta http-equiv="refresh" content="2"></noscript>'));
    t.regex(waiting.text, /<script src="\/assets\/imports\.js\?v=\w+" defer><\/script>/);

    await lock.rollback();
    // The first batch (2,000 rows) is written; the second waits on the held row.
    const running = visibleText(await waitForProgress(owner.client, id, (text) => text.includes('data-state="running"') && /Rows done 2,000/.test(visibleText(text))));
    t.regex(running, /Checking \(dry run\)/);
    t.regex(running, /Rate [\d,]+ rows\/s/);
    t.regex(running, /Errors so far 0/);
    const page = await owner.client.get(`/app/imports/${id}`);
    t.true(page.text.includes('<progress max='));
    t.true(page.text.includes('action="/app/imports/' + id + '/cancel"'));
    await rowLock.rollback();
    t.deepEqual((await settle(owner.client, id)).at(-1), 'checked');
    // Counts are rows: the held product's row adds a new variant, so it counts as created.
    const report = visibleText((await owner.client.get(`/app/imports/${id}`)).text);
    t.true(report.includes('Rows read 3,001 Would be created 3,001'), report);
    t.is((await postForm(owner.client, `/app/imports/${id}/cancel`, {})).status, 303);
  } finally {
    if (!lock.isCompleted()) await lock.rollback();
    if (!rowLock.isCompleted()) await rowLock.rollback();
  }
});

postgresTest('cancel while the import runs: it stops, and nothing is written', async (t) => {
  const p = `S-${tag()}`;
  await ok(owner.client.post('/api/v1/products', { sku: `${p}-LOCK`, name: 'Before' }), 201);
  const lines = [productHeader];
  for (let i = 0; i < 2500; i++) lines.push(`${p}-${i},Shirt ${i},${p}-${i}-S,10.00`);
  lines.push(`${p}-LOCK,After,${p}-LOCK-S,10.00`);
  const id = jobIdOf(await upload(owner.client, { kind: 'products' }, `${lines.join('\n')}\n`));
  t.deepEqual((await settle(owner.client, id)).at(-1), 'checked');
  const rowLock = await app.db.transaction();
  try {
    await rowLock.raw('select id from products where workspace_id = ? and sku = ? for update', [owner.workspace.id, `${p}-LOCK`]);
    t.is((await postForm(owner.client, `/app/imports/${id}/apply`, {})).status, 303);
    await waitForProgress(owner.client, id, (text) => /Rows done 2,000/.test(visibleText(text)));
    t.is((await postForm(owner.client, `/app/imports/${id}/cancel`, {})).status, 303);
  } finally {
    await rowLock.rollback();
  }
  t.deepEqual((await settle(owner.client, id)).at(-1), 'cancelled');
  t.is(await productBySku(owner.client, `${p}-0`), undefined, 'the first batch was rolled back');
  t.like(await productBySku(owner.client, `${p}-LOCK`), { name: 'Before' });
});

test.serial('a user holds at most a few uploaded files at once: one more is refused with the reason until one is applied or cancelled', async (t) => {
  const ids: number[] = [];
  for (let i = 0; i < 5; i++) ids.push(jobIdOf(await upload(owner.client, { kind: 'products' }, `${productHeader}\nH-${tag()},Held,H-${tag()},1.00\n`)));
  const refused = await upload(owner.client, { kind: 'products' }, `${productHeader}\nH-${tag()},Held,H-${tag()},1.00\n`);
  t.is(refused.status, 409);
  t.true(visibleText(refused.text).includes('You have 5 imports waiting to be applied or cancelled; apply or cancel one of them first.'));
  for (const id of ids) await settle(owner.client, id);
  t.is((await postForm(owner.client, `/app/imports/${ids[0]}/cancel`, {})).status, 303);
  const next = await upload(owner.client, { kind: 'products' }, `${productHeader}\nH-${tag()},Held,H-${tag()},1.00\n`);
  t.is(next.status, 303);
  for (const id of [...ids.slice(1), jobIdOf(next)]) {
    await settle(owner.client, id);
    t.is((await postForm(owner.client, `/app/imports/${id}/cancel`, {})).status, 303);
  }
});
