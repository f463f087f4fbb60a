import test from 'ava';
import type { Page } from 'playwright-core';
import { useApp } from '../helpers/fixture.js';
import { signUpOwner, uniqueEmail } from '../helpers/app.js';
import { ok } from '../helpers/client.js';
import { browserTest, launch, watchedContext } from '../helpers/browser.js';

const { app } = useApp(test);

/** Clicks what leads to another page and waits for that page to load. */
async function follow(page: Page, click: () => Promise<void>): Promise<void> {
  await Promise.all([page.waitForEvent('load'), click()]);
}

/**
 * A salesperson's day, in Chromium, as a person does it: sign in, add a customer, write a quote with three lines by
 * SKU and one free line, fix the mistake the page points at, send it without mail, let the customer accept it on
 * the public page in a browser of their own, convert it, and find the order. Once with JavaScript, once without.
 */
for (const javaScriptEnabled of [true, false]) {
  browserTest(`a salesperson's whole day in the browser, JavaScript ${javaScriptEnabled ? 'on' : 'off'}`, async (t) => {
    const owner = await signUpOwner(app, `Day Co ${javaScriptEnabled ? 'JS' : 'no JS'}`);
    const catalogue = [
      ['DESK-160', 'Standing desk', '160 cm', '899.00'],
      ['CHAIR-ERGO', 'Ergonomic chair', 'Black', '349.50'],
      ['LAMP-LED', 'Desk lamp', 'LED', '59.90'],
    ];
    for (const [sku, name, variant, price] of catalogue) {
      await ok(owner.client.post('/api/v1/products', { sku: `${sku}-P`, name, variants: [{ sku, name: variant, price }] }), 201);
    }
    const email = uniqueEmail('dana');
    const browser = await launch(t);
    const { context, problems } = await watchedContext(browser, { javaScriptEnabled });
    const page = await context.newPage();

    // Sign in: /app sends us to /login and back.
    await page.goto(`${app.url}/app/quotes`);
    t.regex(page.url(), /\/login\?next=%2Fapp%2Fquotes$/);
    await page.getByLabel('Email').fill(owner.email);
    await page.getByLabel('Password').fill(owner.password);
    await follow(page, () => page.getByRole('button', { name: 'Sign in' }).click());
    t.is(new URL(page.url()).pathname, '/app/quotes');

    // A customer.
    await follow(page, () => page.getByRole('link', { name: 'Customers', exact: true }).click());
    await follow(page, () => page.getByRole('link', { name: 'New customer' }).click());
    await page.getByLabel(/^Email/).fill(email);
    await page.getByLabel(/^Name/).fill('Dana Day');
    await page.getByLabel(/^Company/).fill('Day & Night Ltd');
    await follow(page, () => page.locator('main form button[type=submit].primary').click());
    t.regex(new URL(page.url()).pathname, /^\/app\/customers\/\d+$/);
    t.true((await page.locator('main').innerText()).includes('Dana Day'));

    // A quote: the customer found by name, three lines by SKU and a free one.
    await follow(page, () => page.getByRole('link', { name: 'Quotes', exact: true }).click());
    await follow(page, () => page.getByRole('link', { name: 'New quote' }).click());
    await page.getByLabel('Find a customer by name or email').fill('Dana Day');
    if (javaScriptEnabled) {
      // The script suggests as one types; the Find button works too.
      await page.getByRole('radio', { name: /Dana Day/ }).waitFor();
    } else {
      await follow(page, () => page.getByRole('button', { name: 'Find' }).click());
    }
    await page.getByRole('radio', { name: /Dana Day/ }).check();
    for (let row = 2; row <= 4; row++) {
      const add = () => page.getByRole('button', { name: 'Add a line' }).click();
      if (javaScriptEnabled) await add();
      else await follow(page, add);
      await page.getByLabel(`Line ${row} SKU`).waitFor();
    }
    const fill = async (row: number, values: Partial<Record<'SKU' | 'description' | 'quantity' | 'price', string>>) => {
      for (const [label, value] of Object.entries(values)) await page.getByLabel(`Line ${row} ${label}`, { exact: true }).fill(value);
    };
    await fill(1, { SKU: 'DESK-160', quantity: '2' });
    await fill(2, { SKU: 'CHAIR-ERGO', quantity: 'two' });
    await fill(3, { SKU: 'LAMP-LED', quantity: '3' });
    await fill(4, { description: 'Delivery and assembly', quantity: '1', price: '120' });
    await page.getByLabel('Tax rate (%)').fill('10');
    await page.getByLabel('Notes').fill('Delivery in two weeks.');
    await follow(page, () => page.getByRole('button', { name: 'Save quote' }).click());

    // The page points at the mistake, beside its field, and keeps the rest.
    const quantity = page.getByLabel('Line 2 quantity', { exact: true });
    t.is(await quantity.getAttribute('aria-invalid'), 'true');
    t.regex(await page.locator('#line-1-quantity-error').innerText(), /lines\.1\.quantity/);
    t.is(await page.getByLabel('Line 4 description', { exact: true }).inputValue(), 'Delivery and assembly');
    await quantity.fill('2');
    await follow(page, () => page.getByRole('button', { name: 'Save quote' }).click());
    t.regex(new URL(page.url()).pathname, /^\/app\/quotes\/\d+$/);
    const quoteId = Number(new URL(page.url()).pathname.split('/').pop());
    const view = await page.locator('main').innerText();
    // 2 × 899.00 + 2 × 349.50 + 3 × 59.90 + 120 = 2,796.70; 10 % tax 279.67.
    t.true(view.includes('USD 3,076.37'), view);
    t.true(view.includes('Ergonomic chair'), 'the description came from the catalogue');

    // Send it without mail; the link is there to copy.
    await follow(page, () => page.getByRole('button', { name: 'Mark as sent without mail' }).click());
    t.true((await page.locator('.badge').first().innerText()).toLowerCase().includes('sent'));
    const link = await page.locator('#public-link').inputValue();
    t.regex(link, /\/q\/[\w-]+$/);

    // The customer, in a browser of their own, accepts.
    const customer = await (await watchedContext(browser, { javaScriptEnabled })).context.newPage();
    await customer.goto(link);
    await customer.locator('#accept-name').fill('Carla Customer');
    await customer.getByLabel('I accept this quote and its terms').check();
    await follow(customer, () => customer.getByRole('button', { name: 'Accept quote' }).click());
    t.true((await customer.locator('main').innerText()).includes('You accepted this quote'));

    // Back in the app: accepted; convert it and find the order.
    await page.reload();
    t.true((await page.locator('.badge').first().innerText()).toLowerCase().includes('accepted'));
    await follow(page, () => page.getByRole('button', { name: 'Convert to order' }).click());
    t.regex(new URL(page.url()).pathname, /^\/app\/orders\/\d+$/);
    const orderPath = new URL(page.url()).pathname;
    await follow(page, () => page.getByRole('link', { name: 'Orders', exact: true }).click());
    const row = page.locator(`main table a[href="${orderPath}"]`);
    t.is(await row.count(), 1, 'the order is in the list');
    t.true((await page.locator('main').innerText()).includes('USD 3,076.37'));

    const order = (await owner.client.get(`/api/v1/orders/${orderPath.split('/').pop()}`)).body.data.order;
    t.is(order.quote_id, quoteId);
    t.deepEqual(problems, [], 'no console errors or CSP violations');
  });
}
