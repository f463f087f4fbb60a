import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { startApp, signUpOwner, uniqueEmail } from '../helpers/app.js';
import { testWhen } from '../helpers/skip.js';
import { PATIENCE_MS } from '../helpers/patience.js';

/** Debian's Chromium; playwright-core never downloads a browser of its own. */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
/** Screenshots of the form, for a person to look at. */
const SHOTS = process.env.APP_SCREENSHOTS ?? path.join(os.tmpdir(), 'app-screenshots');
const browserTest = testWhen(fs.existsSync(CHROMIUM), `no Chromium at ${CHROMIUM}: apt-get install -y chromium, or set CHROMIUM_PATH`);

const skus = (page: Page) => page.locator('input[name="line_sku"]').evaluateAll((els) => els.map((el) => (el as HTMLInputElement).value));

browserTest('with script: suggestions as you type, catalogue prices, lines added, moved and removed in the page, live totals, one save', async (t) => {
  const app = await startApp();
  t.teardown(() => app.close());
  const owner = await signUpOwner(app, 'Script Works');
  const made = await owner.client.post('/api/v1/products', { sku: 'LAMP', name: 'Lamp', variants: [{ sku: 'LAMP-1', name: 'Brass', price: '40.00' }] });
  t.is(made.status, 201, made.text);
  const customer = await owner.client.post('/api/v1/customers', { email: uniqueEmail('ruth'), name: 'Ruth Rivers' });
  t.is(customer.status, 201, customer.text);
  const channel = await owner.client.post('/api/v1/channels', { name: 'Euro shop', currency: 'EUR' });
  t.is(channel.status, 201, channel.text);

  let browser: Browser;
  try {
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, timeout: PATIENCE_MS });
  } catch (err) {
    t.fail(`Chromium at ${CHROMIUM} did not start: ${(err as Error).message}`);
    return;
  }
  t.teardown(() => browser.close());
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  const problems: string[] = [];
  page.on('console', (message) => {
    if ((message.type() === 'error' || message.type() === 'warning') && !message.location().url.endsWith('/favicon.ico')) problems.push(message.text());
  });
  page.on('pageerror', (err) => problems.push(err.message));

  await page.goto(`${app.url}/login?next=/app/quotes/new`);
  await page.getByLabel('Email').fill(owner.email);
  await page.getByLabel('Password').fill(owner.password);
  await Promise.all([page.waitForURL(`${app.url}/app/quotes/new`), page.getByRole('button', { name: 'Sign in' }).click()]);

  // The customer: suggestions as you type, no page load.
  await page.getByLabel('Find a customer by name or email').fill('Ruth');
  const choice = page.getByLabel(`Ruth Rivers <${customer.body.data.customer.email}>`);
  await choice.waitFor({ timeout: PATIENCE_MS });
  await choice.check();

  // The channel's currency as the empty currency field's meaning.
  await page.getByLabel('Channel').selectOption({ label: 'Euro shop (EUR)' });
  t.is(await page.getByLabel('Currency').getAttribute('placeholder'), 'EUR');

  // A SKU line: the catalogue's price shows, and counts in the live total.
  await page.getByLabel('Line 1 SKU').fill('LAMP-1');
  await page.getByLabel('Line 1 quantity').fill('2');
  await page.waitForFunction(() => (document.querySelector('input[name="line_price"]') as HTMLInputElement).placeholder === '40.00', undefined, { timeout: PATIENCE_MS });
  t.is(await page.locator('[data-total="subtotal"]').textContent(), 'EUR 80.00');

  // Lines added, moved and removed in the page: the URL and the document stay (no request to the server).
  const url = page.url();
  await page.getByRole('button', { name: 'Add a line' }).click();
  await page.getByLabel('Line 2 SKU').fill('FREE');
  await page.getByLabel('Line 2 description').fill('Fitting');
  await page.getByLabel('Line 2 price').fill('15.50');
  await page.getByRole('button', { name: 'Add a line' }).click();
  await page.getByLabel('Line 3 description').fill('Gone soon');
  await page.getByLabel('Line 3 price').fill('1');
  await page.getByRole('button', { name: 'Move line 2 up' }).click();
  t.deepEqual(await skus(page), ['FREE', 'LAMP-1', '']);
  t.is(await page.getByRole('button', { name: 'Move line 1 up' }).isDisabled(), true);
  await page.getByRole('button', { name: 'Remove line 3' }).click();
  t.deepEqual(await skus(page), ['FREE', 'LAMP-1']);
  t.is(page.url(), url);

  await page.getByLabel('Discount').fill('5');
  await page.getByLabel('Tax rate (%)').fill('10');
  t.is(await page.locator('[data-total="subtotal"]').textContent(), 'EUR 95.50');
  t.is(await page.locator('[data-total="tax"]').textContent(), 'EUR 9.05');
  t.is(await page.locator('[data-total="total"]').textContent(), 'EUR 99.55');

  t.deepEqual(problems, [], 'no console errors or CSP violations');
  fs.mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, 'quote-form-1280.png'), fullPage: true });
  // On a phone the rows stack: no horizontal scrolling.
  const phone = await page.context().newPage();
  await phone.setViewportSize({ width: 390, height: 844 });
  await phone.goto(`${app.url}/app/quotes/new`);
  await phone.getByRole('button', { name: 'Add a line' }).click();
  t.true(await phone.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), 'no horizontal scroll at 390 px');
  await phone.screenshot({ path: path.join(SHOTS, 'quote-form-390.png'), fullPage: true });
  await phone.close();
  t.log(`screenshots in ${SHOTS}`);
  await Promise.all([page.waitForURL(/\/app\/quotes\/\d+$/), page.getByRole('button', { name: 'Save quote' }).click()]);
  const id = Number(/\/app\/quotes\/(\d+)$/.exec(page.url())?.[1]);
  const saved = await owner.client.get(`/api/v1/quotes/${id}`);
  t.is(saved.status, 200);
  const { quote, lines } = saved.body.data;
  t.deepEqual(lines.map((l: any) => [l.sku, l.description, l.quantity, l.price]), [['FREE', 'Fitting', '1', '15.50'], ['LAMP-1', 'Lamp, Brass', '2', '40.00']]);
  t.deepEqual([quote.currency, quote.subtotal, quote.tax_amount, quote.total], ['EUR', '95.50', '9.05', '99.55'], 'the server agrees with the live totals');
  t.is(quote.customer_id, customer.body.data.customer.id);
});
