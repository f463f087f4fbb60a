import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type Page } from 'playwright-core';
import { startApp, signUpOwner, uniqueEmail } from '../helpers/app.js';
import { testWhen } from '../helpers/skip.js';

/** Debian's Chromium; playwright-core never downloads a browser of its own. */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const browserTest = testWhen(fs.existsSync(CHROMIUM), `no Chromium at ${CHROMIUM}: apt-get install -y chromium, or set CHROMIUM_PATH`);

/** A shop's page on its own origin, embedding the tag as the README shows. */
async function startShop(tagUrl: string): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    if (req.url !== '/' && req.url !== '/desk') {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(`<!doctype html><html><head><title>Oak desk | Shop</title><script src="${tagUrl}" async></script></head><body><h1>Oak desk</h1></body></html>`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://localhost:${port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

const isEvent = (url: string) => url.endsWith('/api/v1/track/event');

/** Runs `action` and waits for the event request it causes to be answered. */
async function sent(page: Page, action: () => Promise<unknown>): Promise<number> {
  const [response] = await Promise.all([page.waitForResponse((r) => isEvent(r.url()) && r.request().method() === 'POST', { timeout: 30_000 }), action()]);
  return response.status();
}

browserTest('the tag in a real browser: page_view on load, quoting.track, nothing under GPC; joined events show on the customer and the quote', async (t) => {
  const app = await startApp();
  t.teardown(() => app.close());
  const owner = await signUpOwner(app, 'Browser Shop');
  const created = await owner.client.post('/api/v1/products', { sku: 'DESK-OAK', name: 'Oak desk', category: 'desks' });
  t.is(created.status, 201, created.text);
  const shop = await startShop(`${app.url}/tag/${owner.workspace.slug}.js`);
  t.teardown(() => shop.close());

  let browser: Browser;
  try {
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, timeout: 30_000 });
  } catch (err) {
    t.fail(`Chromium at ${CHROMIUM} did not start: ${(err as Error).message}`);
    return;
  }
  t.teardown(() => browser.close());
  const ws = owner.workspace.id;
  const eventsOf = (visitor: string) => app.db('track_events').where({ workspace_id: ws, visitor_id: visitor }).orderBy('id');

  // A visitor: the page view is sent on load, cross-origin, with the public key.
  const context = await browser.newContext();
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(err.message));
  page.on('console', (m) => {
    if (m.type() === 'error' && !m.location().url.endsWith('/favicon.ico')) problems.push(m.text());
  });
  t.is(await sent(page, () => page.goto(`${shop.url}/desk`)), 204);
  const visitor = (await page.evaluate(() => (window as any).quoting.visitorId())) as string;
  t.regex(visitor, /^[0-9a-f]{32}$/);
  t.is(await page.evaluate(() => localStorage.getItem('quoting_visitor_id')), visitor);
  let rows = await eventsOf(visitor);
  t.is(rows.length, 1);
  t.like(rows[0], { type: 'page_view', url: `${shop.url}/desk`, title: 'Oak desk | Shop' });

  t.is(await sent(page, () => page.evaluate(() => (window as any).quoting.track('product_view', { sku: 'DESK-OAK', colour: 'oak' }))), 204);
  t.is(await sent(page, () => page.evaluate(() => (window as any).quoting.track('signup', { plan: 'pro' }))), 204);
  rows = await eventsOf(visitor);
  t.is(rows.length, 3);
  t.like(rows[1], { type: 'product_view', sku: 'DESK-OAK', product_id: created.body.data.product.id });
  t.deepEqual(rows[1].properties, { colour: 'oak' });
  t.like(rows[2], { type: 'custom' });
  t.deepEqual(rows[2].properties, { event: 'signup', plan: 'pro' });
  // Bad calls never throw into the page, and a call without a type sends nothing.
  t.is(await page.evaluate(() => (window as any).quoting.track(undefined, 5) ?? 'ok'), 'ok');

  // The same browser later: the same visitor id.
  t.is(await sent(page, () => page.goto(`${shop.url}/`)), 204);
  t.is(await page.evaluate(() => (window as any).quoting.visitorId()), visitor);
  t.deepEqual(problems, [], 'no errors in the page');

  // With Global Privacy Control on, nothing is sent and nothing is stored.
  const private_ = await browser.newContext();
  await private_.addInitScript(() => Object.defineProperty(Navigator.prototype, 'globalPrivacyControl', { get: () => true, configurable: true }));
  const quiet = await private_.newPage();
  const requests: string[] = [];
  quiet.on('request', (r) => {
    if (isEvent(r.url())) requests.push(r.url());
  });
  const tagLoaded = quiet.waitForResponse((r) => r.url().includes('/tag/'));
  await quiet.goto(`${shop.url}/desk`);
  await tagLoaded;
  await quiet.waitForFunction(() => typeof (window as any).quoting?.track === 'function');
  t.is(await quiet.evaluate(() => (window as any).quoting.visitorId()), null);
  await quiet.evaluate(() => (window as any).quoting.track('product_view', { sku: 'DESK-OAK' }));
  await quiet.waitForLoadState('networkidle');
  t.deepEqual(requests, []);
  t.is(await quiet.evaluate(() => localStorage.length), 0);
  const total = await app.db('track_events').where({ workspace_id: ws }).count('* as n').first();
  t.is(Number(total!.n), 4, 'only the first visitor’s four events');

  // A locked workspace's tag sends nothing either, and still lets the page call it.
  const locked = await signUpOwner(app, 'Locked Browser Shop');
  await app.db('workspaces').where({ id: locked.workspace.id }).update({ status: 'suspended' });
  const lockedShop = await startShop(`${app.url}/tag/${locked.workspace.slug}.js`);
  t.teardown(() => lockedShop.close());
  const lockedPage = await context.newPage();
  lockedPage.on('pageerror', (err) => problems.push(err.message));
  lockedPage.on('request', (r) => {
    if (isEvent(r.url())) requests.push(r.url());
  });
  await lockedPage.goto(`${lockedShop.url}/desk`);
  await lockedPage.waitForFunction(() => typeof (window as any).quoting?.track === 'function');
  await lockedPage.evaluate(() => (window as any).quoting.track('product_view', { sku: 'DESK-OAK' }));
  await lockedPage.waitForLoadState('networkidle');
  t.deepEqual(requests, []);
  t.deepEqual(problems, []);

  // The backend joins the visitor to a customer; the events appear on the customer and the quote.
  const email = uniqueEmail('browser');
  const joined = await app.client().post('/api/v1/track/join', { visitor_id: visitor, email }, { headers: { authorization: `Bearer ${owner.keys.secret_key}` } });
  t.is(joined.status, 200, joined.text);
  const customerId = joined.body.data.visitor.customer_id;
  const events = await owner.client.get(`/api/v1/customers/${customerId}/events`);
  t.is(events.status, 200);
  t.deepEqual(events.body.data.events.map((e: { type: string; url: string }) => `${e.type} ${e.url}`), [
    `page_view ${shop.url}/`,
    `custom ${shop.url}/desk`,
    `product_view ${shop.url}/desk`,
    `page_view ${shop.url}/desk`,
  ]);
  const quote = await owner.client.post('/api/v1/quotes', { customer_id: customerId, currency: 'USD' });
  t.is(quote.status, 201, quote.text);
  const browsing = await owner.client.get(`/api/v1/quotes/${quote.body.data.quote.id}/browsing`);
  t.deepEqual(browsing.body.data.browsing, events.body.data.events);
});
