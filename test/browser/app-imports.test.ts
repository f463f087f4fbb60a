import test from 'ava';
import { ok } from '../helpers/client.js';
import { useOwnerApp } from '../helpers/fixture.js';
import { axeProblems, browserTest, launch, screenshots, watchedContext } from '../helpers/browser.js';

const { app, owner } = useOwnerApp(test, { workspace: 'Northwind Supplies' });

/**
 * The import page in Chromium, with script (public/imports.js polls the progress and loads the report) and without
 * (the page refreshes itself): a product CSV with errors, its dry run read, the good rows applied and found in the
 * list. Axe on each page (with script), no console errors or CSP violations, phone width without sideways scrolling.
 */
for (const javaScriptEnabled of [true, false]) {
  const mode = javaScriptEnabled ? 'with script' : 'without script';
  browserTest(`import a product CSV with errors in the browser, ${mode}: the dry run, then apply; the products are in the list`, async (t) => {
    const sku = `BR${javaScriptEnabled ? 'J' : 'N'}`;
    const rows = ['product_sku,name,variant_sku,price'];
    for (let i = 0; i < 300; i++) rows.push(`${sku}-${i},Lamp ${sku} ${i},${sku}-${i}-S,${i === 7 ? '1.005' : '19.00'}`);
    const csv = `${rows.join('\n')}\n`;

    const browser = await launch(t);
    const { context, problems } = await watchedContext(browser, { javaScriptEnabled });
    const page = await context.newPage();
    await page.goto(`${app.url}/login`);
    await page.getByLabel('Email').fill(owner.email);
    await page.getByLabel('Password').fill(owner.password);
    await Promise.all([page.waitForURL(`${app.url}/app`), page.getByRole('button', { name: 'Sign in' }).click()]);

    await page.getByRole('link', { name: 'Imports' }).click();
    await page.waitForURL(`${app.url}/app/imports`);
    // Axe runs as a script in the page: with script on only.
    if (javaScriptEnabled) t.deepEqual(await axeProblems(page), [], 'Axe on the form');
    if (javaScriptEnabled) t.true(await screenshots(page, 'imports'), 'the form fits 390 px');
    await page.getByLabel('Products').check();
    await page.getByLabel('CSV file').setInputFiles({ name: 'lamps.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) });
    await Promise.all([page.waitForURL(/\/app\/imports\/\d+$/), page.getByRole('button', { name: 'Check the file' }).click()]);

    // The page follows the dry run until its report is there (polled by script, or refreshed without).
    await page.getByRole('heading', { name: 'Dry run: what the import would do' }).waitFor();
    const report = await page.locator('main').innerText();
    t.regex(report, /Would be created\s+299/i);
    t.regex(report, /Rows with errors\s+1/i);
    t.regex(report, /9\s+price\s+price: /);
    // Axe runs as a script in the page: with script on only.
    if (javaScriptEnabled) t.deepEqual(await axeProblems(page), [], 'Axe on the report');
    if (javaScriptEnabled) t.true(await screenshots(page, 'import-dry-run'), 'the report fits 390 px');

    await page.getByRole('button', { name: 'Import the 299 good rows' }).click();
    await page.getByRole('heading', { name: 'Imported', exact: true }).waitFor();
    t.regex(await page.locator('main').innerText(), /Created\s+299/i);
    // Axe runs as a script in the page: with script on only.
    if (javaScriptEnabled) t.deepEqual(await axeProblems(page), [], 'Axe on the summary');
    if (javaScriptEnabled) t.true(await screenshots(page, 'import-done'), 'the summary fits 390 px');

    const listed = (await ok(owner.client.get(`/api/v1/products?q=${sku}-1`))).products as { sku: string }[];
    t.true(listed.some((p) => p.sku === `${sku}-1`));
    await page.goto(`${app.url}/app/products?q=${sku}-299`);
    t.regex(await page.locator('main').innerText(), new RegExp(`Lamp ${sku} 299`));
    t.deepEqual(problems, [], 'no console errors or CSP violations');
  });
}
