import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { freePort, migratedBackend, startServe, tempDir, type Server } from '../helpers/cli.js';
import { Client } from '../helpers/client.js';

/**
 * Uploads against a real `quoting serve` process, on the database under test: a multipart body that breaks a limit,
 * breaks off or is abandoned is answered (or not) and the process keeps serving; a slow upload holds no transaction
 * or connection, so other requests answer meanwhile; the spooled file is private and removed; a window and a silence
 * end a trickle.
 */

interface Running {
  server: Server;
  owner: Client;
  /** The server's temporary folder (its TMPDIR), where uploads are spooled. */
  spool: string;
}

async function running(t: ExecutionContext, env: Record<string, string> = {}): Promise<Running> {
  const spool = tempDir(t, 'quoting-spool-');
  const server = await startServe(t, ['--port', String(await freePort())], { env: { ...(await migratedBackend(t)), TMPDIR: spool, ...env } });
  const owner = new Client(server.url);
  const signup = await owner.post('/api/v1/auth/signup', { email: `owner.${Date.now()}.${Math.random()}@example.com`, password: 'correct horse battery', name: 'Olive', workspace_name: 'Acme' });
  if (signup.status !== 201) throw new Error(`signup: ${signup.status} ${signup.text}`);
  return { server, owner, spool };
}

interface Sent {
  status: number;
  body: any;
  ms: number;
}

/**
 * A request whose body is written by `write` at its own pace (an upload as a slow or broken client sends it). Resolves
 * with the answer, or with status 0 when the connection closed without one.
 */
function upload(url: string, cookie: string, contentType: string, write: (req: http.ClientRequest) => Promise<void> | void, path = '/api/v1/products/import'): Promise<Sent> {
  const started = Date.now();
  return new Promise((resolve) => {
    const req = http.request(`${url}${path}`, { method: 'POST', headers: { cookie, 'content-type': contentType } });
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined, ms: Date.now() - started }));
      res.on('error', () => resolve({ status: res.statusCode ?? 0, body: undefined, ms: Date.now() - started }));
    });
    req.on('error', () => resolve({ status: 0, body: undefined, ms: Date.now() - started }));
    void Promise.resolve(write(req)).catch(() => undefined);
  });
}

const cookieOf = (client: Client) => [...client.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
const boundary = 'quoting-test-boundary';
const multipartType = `multipart/form-data; boundary=${boundary}`;
const part = (name: string, value: string, filename?: string) =>
  `--${boundary}\r\nContent-Disposition: form-data; name="${name}"${filename ? `; filename="${filename}"\r\nContent-Type: text/csv` : ''}\r\n\r\n${value}\r\n`;
const csv = 'product_sku,name,variant_sku,price\nP-1,Tee,P-1-S,10.00\n';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function alive(t: ExecutionContext, server: Server): Promise<void> {
  const health = await new Client(server.url).get('/healthz');
  t.is(health.status, 200, 'the server still answers /healthz');
}

test('a multipart body with 1,001 form fields is 413 naming the field limit, and the server keeps serving', async (t) => {
  const { server, owner } = await running(t);
  const body = Array.from({ length: 1001 }, (_, i) => part(`f${i}`, 'x')).join('') + part('file', csv, 'p.csv') + `--${boundary}--\r\n`;
  const res = await upload(server.url, cookieOf(owner), multipartType, (req) => void req.end(body));
  t.is(res.status, 413);
  t.regex(res.body.error, /more than 100 form fields/);
  t.notRegex(res.body.error, /20 MB/, 'the limit hit was the fields, not the bytes');
  await sleep(500);
  await alive(t, server);
});

test('a multipart body cut off before its closing boundary is 400, and the server keeps serving', async (t) => {
  const { server, owner } = await running(t);
  const rows = Array.from({ length: 5000 }, (_, i) => `P-${i},Product ${i},V-${i},1.00`).join('\n');
  const res = await upload(server.url, cookieOf(owner), multipartType, (req) => void req.end(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="p.csv"\r\nContent-Type: text/csv\r\n\r\n${csv}${rows}`));
  t.is(res.status, 400, JSON.stringify(res.body));
  t.regex(res.body.error, /multipart body could not be read/);
  await sleep(500);
  await alive(t, server);
  t.is((await owner.get('/api/v1/products')).body.data.products.length, 0, 'nothing was imported');
});

test('a client that closes the connection mid-upload leaves the server serving, and the spooled file is removed', async (t) => {
  const { server, owner, spool } = await running(t);
  for (const contentType of [multipartType, 'text/csv']) {
    const res = await upload(server.url, cookieOf(owner), contentType, async (req) => {
      req.write(contentType === multipartType ? `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="p.csv"\r\nContent-Type: text/csv\r\n\r\n${csv}` : csv);
      await sleep(1000);
      req.destroy();
    });
    t.is(res.status, 0, 'no answer reaches a client that left');
  }
  await sleep(1000);
  await alive(t, server);
  t.deepEqual(fs.readdirSync(spool).filter((f) => f.startsWith('quoting-import-')), [], 'no spooled file is left behind');
});

test('a trickling upload holds nothing: /healthz and other sign-ins answer meanwhile; the file is spooled 0600; the window ends it', async (t) => {
  // 11 trickles: more than PostgreSQL's pool of 10, which each once held in an open transaction.
  const { server, owner, spool } = await running(t, { IMPORT_WINDOW_SECONDS: '5' });
  const stop = { now: false };
  const trickle = async (req: http.ClientRequest) => {
    req.write('product_sku,name,variant_sku,price\nP-1,Tee,P-1-S,10.00\n');
    while (!stop.now) {
      req.write('P');
      await sleep(2000);
    }
    req.destroy();
  };
  const answers = Array.from({ length: 11 }, () => upload(server.url, cookieOf(owner), 'text/csv', trickle));
  // A busy machine may take a while to reach the handlers: wait for the first spooled file rather than a fixed time.
  let spooled: string[] = [];
  for (let waited = 0; spooled.length === 0 && waited < 60_000; waited += 50) {
    await sleep(50);
    spooled = fs.readdirSync(spool).filter((f) => f.startsWith('quoting-import-'));
  }
  t.true(spooled.length > 0, 'the uploads are being spooled');
  for (const file of spooled) {
    try {
      t.is(fs.statSync(path.join(spool, file)).mode & 0o777, 0o600, `${file} is private`);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err; // its window ended meanwhile
    }
  }

  const other = new Client(server.url);
  const health = await other.get('/healthz');
  t.is(health.status, 200, health.text);
  const signup = await other.post('/api/v1/auth/signup', { email: `other.${Date.now()}@example.com`, password: 'correct horse battery', name: 'Ann', workspace_name: 'Other' });
  t.is(signup.status, 201, signup.text);
  t.is((await other.get('/api/v1/auth/me')).status, 200);

  const results = await Promise.all(answers);
  stop.now = true;
  for (const res of results) {
    t.is(res.status, 422, JSON.stringify(res.body));
    t.regex(res.body.error, /ran past its 5-second window/);
    // Counted from the request's start; well before the trickle (which never ends) would have.
    t.true(res.ms >= 4500, `answered after ${res.ms} ms`);
  }
  t.log(`window answers after ${results.map((r) => r.ms).join(', ')} ms`);
  t.deepEqual(fs.readdirSync(spool).filter((f) => f.startsWith('quoting-import-')), [], 'every spooled file is removed');
  await alive(t, server);
});

test('an upload or an import URL that sends nothing for 30 s is cut off (408, 502)', async (t) => {
  const upstream = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/csv' });
    res.write(csv); // then nothing
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    upstream.closeAllConnections();
    upstream.close();
  });
  const { server, owner } = await running(t, { OUTBOUND_ALLOWED_CIDRS: '127.0.0.1/32' });
  const silent = upload(server.url, cookieOf(owner), 'text/csv', async (req) => {
    req.write(csv);
    await sleep(45_000);
    req.destroy();
  });
  const fetched = owner.post('/api/v1/products/import', { url: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/p.csv` });
  const body = await silent;
  t.is(body.status, 408, JSON.stringify(body.body));
  t.regex(body.body.error, /sent nothing for 30 s/);
  const url = await fetched;
  t.is(url.status, 502, url.text);
  t.regex(url.body.error, /import URL sent nothing for 30 s/);
  await alive(t, server);
});

test('a row over 1 MB is a row error naming its line; a header over 1 MB or 1,000 columns is 422; the other rows import', async (t) => {
  const { server, owner } = await running(t);
  const post = (text: string) => owner.request('POST', '/api/v1/products/import', { raw: text, contentType: 'text/csv' });
  const long = await post(`product_sku,name,variant_sku,price\nP-1,Tee,P-1-S,10.00\n${','.repeat(2 * 1024 * 1024)}\nP-2,Cap,P-2-S,5.00\n`);
  t.is(long.status, 200, long.text.slice(0, 300));
  t.like(long.body.data.import, { rows: 3, created: 2, failed: 1 });
  t.deepEqual(long.body.data.import.errors, [{ row: 3, field: 'row', message: 'row: line 3 is longer than 1 MB and was not read.' }]);
  const header = await post(`${'a,'.repeat(600 * 1024)}b\nP-1,Tee,P-1-S,10.00\n`);
  t.is(header.status, 422);
  t.regex(header.body.error, /header line is longer than 1 MB/);
  const columns = await post(`product_sku,name,variant_sku,price,${Array.from({ length: 1000 }, (_, i) => `c${i}`).join(',')}\nP-1,Tee,P-1-S,10.00\n`);
  t.is(columns.status, 422);
  t.regex(columns.body.error, /header has 1004 columns; at most 1000/);
  await alive(t, server);
});

test('two imports of the same file at once: one creates every row, the other finds them unchanged', async (t) => {
  const { server, owner } = await running(t);
  const rows = Array.from({ length: 4000 }, (_, i) => `P-${i},Product ${i},V-${i},${(i % 90) + 1}.00`);
  const file = `product_sku,name,variant_sku,price\n${rows.join('\n')}\n`;
  const post = () => owner.request('POST', '/api/v1/products/import', { raw: file, contentType: 'text/csv' });
  const results = await Promise.all([post(), post()]);
  const reports = results.map((res) => {
    t.is(res.status, 200, res.text.slice(0, 300));
    return res.body.data.import;
  });
  const sorted = reports.sort((a, b) => b.created - a.created);
  t.like(sorted[0], { rows: 4000, created: 4000, updated: 0, unchanged: 0, failed: 0 });
  t.like(sorted[1], { rows: 4000, created: 0, updated: 0, unchanged: 4000, failed: 0 });
  await alive(t, server);
});

test('failed imports close every file they opened', async (t) => {
  const { server, owner, spool } = await running(t);
  const open = () => fs.readdirSync(`/proc/${server.pid}/fd`).flatMap((fd) => {
    try {
      return [fs.readlinkSync(`/proc/${server.pid}/fd/${fd}`)];
    } catch {
      return [];
    }
  }).filter((target) => target.includes('quoting-import-'));
  for (const text of ['sku,price\nA,1\n', 'product_sku,name,variant_sku,price\n"P-1,Tee\n', `${','.repeat(3 * 1024 * 1024)}\n`]) {
    const res = await owner.request('POST', '/api/v1/products/import', { raw: text, contentType: 'text/csv' });
    t.is(res.status, 422, res.text.slice(0, 200));
  }
  t.deepEqual(open(), [], 'no spooled file is still open');
  t.deepEqual(fs.readdirSync(spool).filter((f) => f.startsWith('quoting-import-')), []);
  t.notRegex(server.output().stderr, /on garbage collection|DEP0137/);
});
