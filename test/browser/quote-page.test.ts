import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { startApp, signUpOwner, uniqueEmail } from '../helpers/app.js';
import { testWhen } from '../helpers/skip.js';
import { startReceiver } from '../helpers/receiver.js';
import { DeliveryWorker, workerSettings } from '../../src/webhooks/worker.js';
import { PATIENCE_MS } from '../helpers/patience.js';

/** Debian's Chromium; playwright-core never downloads a browser of its own. */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const browserTest = testWhen(fs.existsSync(CHROMIUM), `no Chromium at ${CHROMIUM}: apt-get install -y chromium, or set CHROMIUM_PATH`);
/** Screenshots of what the customer sees, for a person to look at. */
const SHOTS = process.env.QUOTE_PAGE_SCREENSHOTS ?? path.join(os.tmpdir(), 'quote-page-screenshots');

browserTest('a customer opens the quote page in a browser, accepts, and the subscriber gets a signed quote.accepted', async (t) => {
  const app = await startApp({ OUTBOUND_ALLOWED_CIDRS: '127.0.0.0/8' });
  t.teardown(() => app.close());
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  const owner = await signUpOwner(app, 'Northwind <Supplies>');

  const sub = await owner.client.post('/api/v1/webhooks', { url: `${receiver.url}/hooks`, event_types: ['quote.accepted'] });
  t.is(sub.status, 201);
  receiver.secrets.push(sub.body.data.subscription.signing_secret);

  const created = await owner.client.post('/api/v1/quotes', {
    customer: { email: uniqueEmail('browser'), name: 'Dana <script>window.__pwned = 1</script> Buyer' },
    currency: 'USD',
    discount_amount: '50',
    tax_rate: '8.25',
    valid_until: '2030-06-30',
    notes: 'Delivery within 10 working days.\nPrices include installation.',
    lines: [
      { sku: 'DESK-OAK-160', description: 'Oak standing desk, 160 cm', quantity: '4', price: '899.00' },
      { sku: 'CHAIR-ERGO', description: 'Ergonomic chair', quantity: '4', price: '349.50' },
      { description: 'Assembly and delivery', quantity: '1', price: '180' },
    ],
  });
  t.is(created.status, 201, created.text);
  const sent = await owner.client.post(`/api/v1/quotes/${created.body.data.quote.id}/send`, { notify: false });
  t.is(sent.status, 200, sent.text);
  const quote = sent.body.data.quote;
  const pageUrl = `${app.url}/q/${quote.public_token}`;

  let browser: Browser;
  try {
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, timeout: PATIENCE_MS });
  } catch (err) {
    // Present but unable to start is a real failure, not a skip.
    t.fail(`Chromium at ${CHROMIUM} did not start: ${(err as Error).message}`);
    return;
  }
  t.teardown(() => browser.close());
  const context = await browser.newContext({ viewport: { width: 1100, height: 900 }, javaScriptEnabled: true });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('console', (message) => {
    // The browser's own favicon request is not the page's concern.
    if ((message.type() === 'error' || message.type() === 'warning') && !message.location().url.endsWith('/favicon.ico')) problems.push(message.text());
  });
  page.on('pageerror', (err) => problems.push(err.message));
  fs.mkdirSync(SHOTS, { recursive: true });

  const response = await page.goto(pageUrl);
  t.is(response?.status(), 200);
  t.is(await page.title(), `Quote ${quote.quote_number} from Northwind <Supplies>`);
  t.is(await page.locator('h1').textContent(), `Quote ${quote.quote_number}`);
  const body = (await page.locator('main').innerText()).replace(/\s+/g, ' ');
  t.is(await page.locator('.from').textContent(), 'Northwind <Supplies>');
  t.true(body.includes('Dana <script>window.__pwned = 1</script> Buyer'), 'the hostile name shows as text');
  t.true(body.includes('Oak standing desk, 160 cm'));
  t.true(body.includes('SKU CHAIR-ERGO'));
  t.true(body.includes('USD 3,596.00'));
  t.true(body.includes('Subtotal USD 5,174.00'));
  t.true(body.includes('Total USD 5,546.73')); // (5174.00 − 50.00) × 1.0825
  t.true(body.includes('30 June 2030'));
  t.true(body.includes('Prices include installation.'));
  t.true(body.includes('Awaiting your response'));
  t.is(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned), undefined);
  // The inline stylesheet is allowed by the CSP (its hash): the page is styled, not plain.
  t.is(await page.locator('.badge').evaluate((el) => getComputedStyle(el).borderRadius), '999px');
  await page.screenshot({ path: path.join(SHOTS, 'quote-page-sent.png'), fullPage: true });

  // The same page on a phone: no horizontal scrolling.
  const phone = await context.newPage();
  await phone.setViewportSize({ width: 390, height: 844 });
  await phone.goto(pageUrl);
  t.true(await phone.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth));
  await phone.screenshot({ path: path.join(SHOTS, 'quote-page-phone.png'), fullPage: true });
  await phone.close();

  // Accept without a name: the page again (422) with the message beside the field and the tick kept.
  await page.getByLabel('I accept this quote and its terms').check();
  await Promise.all([page.waitForURL(`${pageUrl}/accept`), page.getByRole('button', { name: 'Accept quote' }).click()]);
  t.regex(await page.locator('#accept-name-error').innerText(), /name/);
  t.true(await page.getByLabel('I accept this quote and its terms').isChecked());
  await page.screenshot({ path: path.join(SHOTS, 'quote-page-accept-refused.png'), fullPage: true });

  // Accept: a plain form POST with the name and the tick, 302 back to the page, which now shows the accepted state.
  await page.locator('#accept-name').fill('Carla Customer');
  await Promise.all([page.waitForURL(pageUrl), page.getByRole('button', { name: 'Accept quote' }).click()]);
  t.is(page.url(), pageUrl);
  const accepted = (await page.locator('main').innerText()).replace(/\s+/g, ' ');
  t.true(accepted.includes('You accepted this quote on'), accepted);
  t.true(accepted.includes('Accepted by Carla Customer'), accepted);
  t.is(await page.getByRole('button', { name: 'Accept quote' }).count(), 0);
  t.is(await page.getByRole('button', { name: 'Decline' }).count(), 0);
  await page.screenshot({ path: path.join(SHOTS, 'quote-page-accepted.png'), fullPage: true });
  // The refused acceptance above is the one error the browser reports: its 422.
  t.deepEqual(problems, ['Failed to load resource: the server responded with a status of 422 (Unprocessable Entity)'], 'no other console errors or CSP violations');
  t.log(`screenshots in ${SHOTS}`);

  const activities = (await owner.client.get(`/api/v1/quotes/${quote.id}`)).body.data.activities as { type: string; actor: string }[];
  t.deepEqual(
    activities.filter((a) => a.actor === 'customer').map((a) => a.type),
    ['viewed', 'accepted'],
  );

  const worker = new DeliveryWorker(app.db, workerSettings(app.config));
  t.teardown(() => worker.close());
  const summary = await worker.runOnce();
  t.deepEqual(summary, { claimed: 1, succeeded: 1, failed: 0, dead: 0 });
  const [delivery] = await receiver.waitFor(1);
  t.deepEqual(delivery.verifiedWith, receiver.secrets, 'the signature verifies with the subscription secret');
  t.is(delivery.headers['service-event'], 'quote.accepted');
  t.is(delivery.body.type, 'quote.accepted');
  t.is(delivery.body.organization_id, owner.workspace.id);
  t.is(delivery.body.data.quote.id, quote.id);
  t.is(delivery.body.data.quote.status, 'accepted');
  t.truthy(delivery.body.data.quote.accepted_at);
});
