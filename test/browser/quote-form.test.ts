import { type Page } from 'playwright-core';
import { startApp, signUpOwner, uniqueEmail } from '../helpers/app.js';
import { PATIENCE_MS } from '../helpers/patience.js';
import { APP_SHOTS, axeProblems, browserTest, launch, screenshots, watchedContext } from '../helpers/browser.js';

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

  const browser = await launch(t);
  const { context, problems } = await watchedContext(browser, { javaScriptEnabled: true });
  const page = await context.newPage();

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

  t.deepEqual(await axeProblems(page), [], 'axe: the filled form');
  t.true(await screenshots(page, 'quote-form-new'), 'no sideways scrolling at 390 px');
  t.log(`screenshots in ${APP_SHOTS}`);
  await Promise.all([page.waitForURL(/\/app\/quotes\/\d+$/), page.getByRole('button', { name: 'Save quote' }).click()]);
  const id = Number(/\/app\/quotes\/(\d+)$/.exec(page.url())?.[1]);
  const saved = await owner.client.get(`/api/v1/quotes/${id}`);
  t.is(saved.status, 200);
  const { quote, lines } = saved.body.data;
  t.deepEqual(lines.map((l: any) => [l.sku, l.description, l.quantity, l.price]), [['FREE', 'Fitting', '1', '15.50'], ['LAMP-1', 'Lamp, Brass', '2', '40.00']]);
  t.deepEqual([quote.currency, quote.subtotal, quote.tax_amount, quote.total], ['EUR', '95.50', '9.05', '99.55'], 'the server agrees with the live totals');
  t.is(quote.customer_id, customer.body.data.customer.id);

  // The draft's edit page, a 422 on it, and a sent quote's: axe finds nothing serious.
  await page.goto(`${app.url}/app/quotes/${id}/edit`);
  t.deepEqual(await skus(page), ['FREE', 'LAMP-1']);
  t.is(await page.locator('[data-total="total"]').textContent(), 'EUR 99.55');
  t.deepEqual(await axeProblems(page), [], 'axe: the edit form');
  t.true(await screenshots(page, 'quote-form-edit'));
  await page.getByLabel('Line 1 quantity').fill('0');
  await page.getByRole('button', { name: 'Save changes' }).click();
  await page.locator('#line-0-quantity-error').waitFor();
  t.deepEqual(await axeProblems(page), [], 'axe: the edit form with a message');
  t.true(await screenshots(page, 'quote-form-422'));
  const sent = await owner.client.post(`/api/v1/quotes/${id}/send`, { notify: false });
  t.is(sent.status, 200, sent.text);
  const refused = await page.goto(`${app.url}/app/quotes/${id}/edit`);
  t.is(refused?.status(), 409);
  t.deepEqual(await axeProblems(page), [], 'axe: the 409 page');
  // The 422's and the 409's own answers are the console messages expected.
  t.deepEqual(problems.filter((p) => !/status of (409|422)/.test(p)), [], 'no console errors or CSP violations');
});

browserTest('without script: find the customer, add and move lines through the server, Enter saves', async (t) => {
  const app = await startApp();
  t.teardown(() => app.close());
  const owner = await signUpOwner(app, 'No Script Works');
  const made = await owner.client.post('/api/v1/products', { sku: 'MUG', name: 'Mug', variants: [{ sku: 'MUG-1', name: 'Blue', price: '8.00' }] });
  t.is(made.status, 201, made.text);
  const customer = await owner.client.post('/api/v1/customers', { email: uniqueEmail('sam'), name: 'Sam Stone' });
  t.is(customer.status, 201, customer.text);

  const browser = await launch(t);
  const { context, problems } = await watchedContext(browser, { javaScriptEnabled: false });
  const page = await context.newPage();
  await page.goto(`${app.url}/login?next=/app/quotes/new`);
  await page.getByLabel('Email').fill(owner.email);
  await page.getByLabel('Password').fill(owner.password);
  await Promise.all([page.waitForURL(`${app.url}/app/quotes/new`), page.getByRole('button', { name: 'Sign in' }).click()]);

  await page.getByLabel('Line 1 SKU').fill('MUG-1');
  await page.getByLabel('Line 1 quantity').fill('3');
  await page.getByLabel('Find a customer by name or email').fill('Stone');
  await Promise.all([page.waitForLoadState('load'), page.getByRole('button', { name: 'Find' }).click()]);
  await page.getByLabel(`Sam Stone <${customer.body.data.customer.email}>`).check();
  t.is(await page.getByLabel('Line 1 SKU').inputValue(), 'MUG-1', 'kept through the search');

  await Promise.all([page.waitForLoadState('load'), page.getByRole('button', { name: 'Add a line' }).click()]);
  await page.getByLabel('Line 2 description').fill('Gift wrap');
  await page.getByLabel('Line 2 price').fill('2.50');
  await Promise.all([page.waitForLoadState('load'), page.getByRole('button', { name: 'Move line 2 up' }).click()]);
  t.deepEqual(await skus(page), ['', 'MUG-1']);
  t.is(await page.getByLabel(`Sam Stone <${customer.body.data.customer.email}>`).isChecked(), true, 'the pick is kept');

  // Enter in a line's field saves (the form's first button is its hidden Save, not a row's button).
  await Promise.all([page.waitForURL(/\/app\/quotes\/\d+$/), page.getByLabel('Line 1 price').press('Enter')]);
  const id = Number(/\/app\/quotes\/(\d+)$/.exec(page.url())?.[1]);
  const saved = await owner.client.get(`/api/v1/quotes/${id}`);
  t.is(saved.status, 200);
  t.deepEqual(saved.body.data.lines.map((l: any) => [l.sku, l.description, l.quantity, l.price]), [[null, 'Gift wrap', '1', '2.50'], ['MUG-1', 'Mug, Blue', '3', '8.00']]);
  t.is(saved.body.data.quote.total, '26.50');
  t.is(saved.body.data.quote.customer_id, customer.body.data.customer.id);
  t.deepEqual(problems, []);
});
