import http from 'node:http';
import zlib from 'node:zlib';
import test from 'ava';
import { PAGE_ROWS } from '../../src/db/keyset.js';
import { signUpOwner, uniqueEmail, type Owner } from '../helpers/app.js';
import { useOwnerApp } from '../helpers/fixture.js';

const { app, owner } = useOwnerApp(test, { workspace: 'Lists' });

/** Text that JSON escapes in every way it can: quotes, backslashes, control characters, beyond Latin-1. */
const awkward = 'Zoë "the" Ł\\ukasiewicz\n\ttab \u0001 ✓ 😀';
/** The same for single-line fields (names): no control characters. */
const awkwardLine = 'Zoë "the" Ł\\ukasiewicz ✓ 😀 <b>&amp;</b>';

async function created(path: string, body: Record<string, unknown>, key: string): Promise<number> {
  const res = await owner.client.post(path, body);
  if (res.status !== 201) throw new Error(`${path}: ${res.status} ${res.text}`);
  return res.body.data[key].id;
}

test('a record has the same bytes in its list as in its single read (customers, products, channels, quotes, orders)', async (t) => {
  const customerId = await created('/api/v1/customers', { email: uniqueEmail('bytes'), name: awkwardLine, notes: awkward, company: 'Ünïcode GmbH' }, 'customer');
  const productId = await created(
    '/api/v1/products',
    {
      sku: 'BYTES-1', name: awkwardLine, description: awkward,
      variants: [
        { sku: 'BYTES-1-S', name: 'Small', price: '9.90', attributes: { size: 'S', nested: { list: [1, 2.5, 'x', null, true], empty: {} }, note: awkward } },
        { sku: 'BYTES-1-M' },
      ],
    },
    'product',
  );
  const channelId = await created('/api/v1/channels', { name: awkwardLine }, 'channel');
  const quoteId = await created('/api/v1/quotes', { customer_id: customerId, channel_id: channelId, notes: awkward, tax_rate: '8.125', lines: [{ sku: 'BYTES-1-S', quantity: '1.5' }] }, 'quote');
  const converted = await owner.client.post(`/api/v1/quotes/${quoteId}/send`, { notify: false });
  t.is(converted.status, 200);
  t.is((await owner.client.post(`/api/v1/quotes/${quoteId}/accept`)).status, 200);
  const order = await owner.client.post(`/api/v1/quotes/${quoteId}/convert`);
  t.is(order.status, 201, order.text);
  const orderId = order.body.data.order.id;

  for (const [list, key, id] of [
    ['customers', 'customer', customerId],
    ['products', 'product', productId],
    ['channels', 'channel', channelId],
    ['quotes', 'quote', quoteId],
    ['orders', 'order', orderId],
  ] as const) {
    const single = await owner.client.get(`/api/v1/${list}/${id}`);
    t.is(single.status, 200, `${list}: ${single.text}`);
    const all = await owner.client.get(`/api/v1/${list}`);
    t.is(all.status, 200, `${list}: ${all.text}`);
    const bytes = JSON.stringify(single.body.data[key]);
    t.true(single.text.includes(`"${key}":${bytes}`), `${list}: the single read is compact JSON`);
    t.true(all.text.includes(bytes), `${list}: the list has the single read's bytes\n${bytes}\nin\n${all.text.slice(0, 2000)}`);
    // And the list as a whole is what JSON.stringify makes of it: no other spacing anywhere.
    t.is(JSON.stringify(JSON.parse(all.text)), all.text, `${list}: the list is compact JSON`);
  }
});

test('a created quote is answered with the bytes of its single read (quote and lines, compact JSON); its quote.created event carries the same', async (t) => {
  const customerId = await created('/api/v1/customers', { email: uniqueEmail('created-bytes'), name: awkwardLine }, 'customer');
  await created('/api/v1/products', { sku: 'BYTES-2', name: awkwardLine, variants: [{ sku: 'BYTES-2-S', name: awkwardLine, price: '9.90' }] }, 'product');
  const lines = [{ sku: 'BYTES-2-S', quantity: '1.5' }, { description: awkward, quantity: '2.125', price: '0.10' }, { sku: 'BYTES-2-S', description: null, quantity: '3' }];
  for (const path of ['/api/v1/quotes', '/api/v1/quotes/external']) {
    const external = path.endsWith('external');
    const body = { customer_id: customerId, notes: awkward, tax_rate: '8.125', lines, ...(external && { external_id: 'bytes-1' }) };
    // The external route takes the workspace's secret key, from a client without the session.
    const send = () => (external ? app.client().post(path, body, { headers: { authorization: `Bearer ${owner.keys.secret_key}` } }) : owner.client.post(path, body));
    const res = await send();
    t.is(res.status, 201, res.text);
    t.is(JSON.stringify(JSON.parse(res.text)), res.text, `${path}: compact JSON`);
    const { quote } = res.body.data;
    t.is(res.body.data.lines.length, 3);
    const single = await owner.client.get(`/api/v1/quotes/${quote.id}`);
    t.is(single.status, 200);
    t.is(res.text, JSON.stringify({ version: 'v1', data: { quote: single.body.data.quote, lines: single.body.data.lines } }), `${path}: the single read's bytes`);
    const event = await app.db('events').where({ workspace_id: owner.workspace.id, type: 'quote.created' }).whereRaw(`data->'quote'->>'id' = ?`, [String(quote.id)]).first(app.db.raw('data::text as text'));
    t.is(event.text, JSON.stringify(res.body.data), `${path}: the event's data`);
    // Asked again with the same external_id: 200 with the same bytes, read back rather than created.
    if (external) {
      const again = await send();
      t.is(again.status, 200, again.text);
      t.is(again.text, res.text, 'the repeat answers the same bytes');
    }
  }
});

/** A raw request (fetch would decompress): status, headers and the body's bytes as sent. */
function raw(who: Owner, path: string, headers: Record<string, string>): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${app.url}${path}`, { headers: { cookie: [...who.client.cookies].map(([k, v]) => `${k}=${v}`).join('; '), ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** GET read slowly: the reader pauses after every chunk, so the server's writes wait on it. */
function slowRaw(who: Owner, path: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${app.url}${path}`, { headers: { cookie: [...who.client.cookies].map(([k, v]) => `${k}=${v}`).join('; ') } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => {
        chunks.push(c);
        res.pause();
        setTimeout(() => res.resume(), 2);
      });
      res.on('end', () => resolve(Buffer.concat(chunks)));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** GET given up after its first bytes. */
function abandoned(who: Owner, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${app.url}${path}`, { headers: { cookie: [...who.client.cookies].map(([k, v]) => `${k}=${v}`).join('; ') } }, (res) => {
      res.once('data', (c: Buffer) => {
        req.destroy();
        resolve(c.length);
      });
    });
    req.on('error', (err) => (req.destroyed ? undefined : reject(err)));
    req.end();
  });
}

// On PostgreSQL a page's bytes are written from buffers lent by a pool and given back once written
// (src/db/chunk-pool.ts): a buffer given back too soon would show as another list's bytes in this one.
test('long lists sent at once arrive whole: to a client that reads slowly, one that goes away, fast ones, gzip', async (t) => {
  const ws = await signUpOwner(app, 'At once');
  const rows = 2 * PAGE_ROWS + 345;
  await app.db.raw(
    `insert into customers (workspace_id, email, name, notes) select ?, 'many' || n || '@example.com', ? || n, repeat(md5(n::text), 4) from generate_series(1, ?::int) n`,
    [ws.workspace.id, awkwardLine, rows],
  );
  const path = '/api/v1/customers';
  const whole = (await raw(ws, path, {})).body;
  t.is(JSON.parse(whole.toString()).data.customers.length, rows);
  const [slow, gone, fast, again, zipped] = await Promise.all([slowRaw(ws, path), abandoned(ws, path), raw(ws, path, {}), raw(ws, path, {}), raw(ws, path, { 'accept-encoding': 'gzip' })]);
  t.true(gone > 0);
  t.true(slow.equals(whole), 'the slow reader got the same bytes');
  t.true(fast.body.equals(whole) && again.body.equals(whole), 'the fast readers got the same bytes');
  t.true(zlib.gunzipSync(zipped.body).equals(whole), 'the gzip reader got the same bytes once decoded');
  t.true((await raw(ws, path, {})).body.equals(whole), 'and the list read alone afterwards');
});

test('large answers are compressed when the client asks (gzip, br), small ones and unasked ones are not', async (t) => {
  const ws = await signUpOwner(app, 'Compressed');
  for (let i = 0; i < 40; i++) {
    const res = await ws.client.post('/api/v1/customers', { email: uniqueEmail(`c${i}`), name: `Customer ${i}`, notes: 'Prefers delivery before noon. '.repeat(3) });
    t.is(res.status, 201);
  }
  const plain = await raw(ws, '/api/v1/customers', {});
  t.is(plain.status, 200);
  t.is(plain.headers['content-encoding'], undefined);
  t.true(plain.body.length > 4096, `a large list (${plain.body.length} bytes)`);
  t.is(JSON.parse(plain.body.toString()).data.customers.length, 40);

  for (const [encoding, decode] of [
    ['gzip', zlib.gunzipSync],
    ['br', zlib.brotliDecompressSync],
  ] as const) {
    const res = await raw(ws, '/api/v1/customers', { 'accept-encoding': encoding });
    t.is(res.status, 200);
    t.is(res.headers['content-encoding'], encoding);
    t.regex(String(res.headers.vary), /accept-encoding/i);
    t.true(res.body.length < plain.body.length / 2, `${encoding}: ${res.body.length} of ${plain.body.length} bytes`);
    t.true(decode(res.body).equals(plain.body), `${encoding}: the same bytes once decoded`);
  }

  const small = await raw(ws, '/api/v1/auth/me', { 'accept-encoding': 'gzip, br' });
  t.is(small.status, 200);
  t.true(small.body.length < 1024, `a small answer (${small.body.length} bytes)`);
  t.is(small.headers['content-encoding'], undefined, 'under 1 KB: not compressed');
  t.truthy(JSON.parse(small.body.toString()).data.user);
});

test('a search term is matched literally, whatever it holds (quotes, backslashes, $1, %, _)', async (t) => {
  const ws = await signUpOwner(app, 'Search terms');
  const terms = [`O'Brien`, 'back\\slash', 'costs $1 each', '100% _sure_', `it''s`, "E'\\x41'"];
  const ids: number[] = [];
  for (const [i, term] of terms.entries()) ids.push(await createdBy(ws, '/api/v1/customers', { email: uniqueEmail(`term${i}`), name: `Name ${term} end` }, 'customer'));
  await createdBy(ws, '/api/v1/customers', { email: uniqueEmail('plain'), name: 'Obrien backslash costs 1 each 100 sure' }, 'customer');
  for (const [i, term] of terms.entries()) {
    const res = await ws.client.get(`/api/v1/customers?q=${encodeURIComponent(term)}`);
    t.is(res.status, 200, res.text);
    t.deepEqual(res.body.data.customers.map((c: { id: number }) => c.id), [ids[i]], `q=${term}`);
  }
  const all = await ws.client.get('/api/v1/customers');
  t.is(all.body.data.customers.length, terms.length + 1);
});

async function createdBy(who: Owner, path: string, body: Record<string, unknown>, key: string): Promise<number> {
  const res = await who.client.post(path, body);
  if (res.status !== 201) throw new Error(`${path}: ${res.status} ${res.text}`);
  return res.body.data[key].id;
}

test('a product in the list follows its variants: added, changed, deleted', async (t) => {
  const ws = await signUpOwner(app, 'Variants in lists');
  const productId = await createdBy(ws, '/api/v1/products', { sku: 'VL-1', name: 'Lamp', variants: [{ sku: 'VL-1-A', price: '10.00' }] }, 'product');
  const listed = async () => {
    const res = await ws.client.get('/api/v1/products');
    t.is(res.status, 200, res.text);
    const single = await ws.client.get(`/api/v1/products/${productId}`);
    const product = res.body.data.products.find((p: { id: number }) => p.id === productId);
    t.deepEqual(product, single.body.data.product, 'the list and the single read agree');
    return product.variants.map((v: { sku: string; price: string | null }) => `${v.sku} ${v.price}`);
  };
  t.deepEqual(await listed(), ['VL-1-A 10.00']);
  const added = await ws.client.post(`/api/v1/products/${productId}/variants`, { sku: 'VL-1-B', price: '12.5' });
  t.is(added.status, 201, added.text);
  t.deepEqual(await listed(), ['VL-1-A 10.00', 'VL-1-B 12.50']);
  const [first] = (await ws.client.get(`/api/v1/products/${productId}`)).body.data.product.variants;
  t.is((await ws.client.patch(`/api/v1/products/${productId}/variants/${first.id}`, { price: '11' })).status, 200);
  t.deepEqual(await listed(), ['VL-1-A 11.00', 'VL-1-B 12.50']);
  t.is((await ws.client.delete(`/api/v1/products/${productId}/variants/${first.id}`)).status, 200);
  t.deepEqual(await listed(), ['VL-1-B 12.50']);
});
