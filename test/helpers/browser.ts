import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import type { ExecutionContext } from 'ava';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { testWhen } from './skip.js';
import { PATIENCE_MS } from './patience.js';

/** Debian's Chromium; playwright-core never downloads a browser of its own. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

export const browserTest = testWhen(fs.existsSync(CHROMIUM), `no Chromium at ${CHROMIUM}: apt-get install -y chromium, or set CHROMIUM_PATH`);

/** Where the app's screenshots go, for a person to look at (the README's test section names it). */
export const APP_SHOTS = process.env.APP_SCREENSHOTS ?? path.resolve('test-results', 'app-screenshots');

/** Chromium, closed when the test ends; a Chromium that is there but does not start fails the test. */
export async function launch(t: ExecutionContext): Promise<Browser> {
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, timeout: PATIENCE_MS }).catch((err: Error) => {
    throw new Error(`Chromium at ${CHROMIUM} did not start: ${err.message}`);
  });
  t.teardown(() => browser.close());
  return browser;
}

/** A browser context that collects console errors, page errors and CSP violations into `problems`. */
export async function watchedContext(browser: Browser, options: { javaScriptEnabled: boolean; width?: number }): Promise<{ context: BrowserContext; problems: string[] }> {
  const context = await browser.newContext({ viewport: { width: options.width ?? 1280, height: 900 }, javaScriptEnabled: options.javaScriptEnabled });
  context.setDefaultTimeout(PATIENCE_MS);
  context.setDefaultNavigationTimeout(PATIENCE_MS);
  const problems: string[] = [];
  context.on('console', (message) => {
    if (message.type() !== 'error' && message.type() !== 'warning') return;
    const from = message.location().url;
    if (from.endsWith('/favicon.ico')) return;
    // Chromium notes a page answered 4xx (a form shown again with 422) as a failed load; the tests check each page's status.
    if (from === message.page()?.url() && message.text().startsWith('Failed to load resource: the server responded with a status of 4')) return;
    problems.push(`${message.page()?.url()}: ${message.text()}`);
  });
  context.on('weberror', (err) => problems.push(err.error().message));
  return { context, problems };
}

const axeSource = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export interface AxeViolation {
  id: string;
  impact: string;
  help: string;
  targets: string[];
}

/**
 * Axe's serious and critical violations on the page as it stands. Axe is evaluated through the DevTools protocol,
 * which the page's CSP (no inline script) does not govern, so the page is checked with its real policy in force.
 */
export async function axeProblems(page: Page): Promise<AxeViolation[]> {
  const loaded = await page.evaluate('typeof window.axe === "object"');
  if (!loaded) await page.evaluate(axeSource);
  const violations = (await page.evaluate(`window.axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations.map((v) => ({
    id: v.id, impact: v.impact, help: v.help, targets: v.nodes.slice(0, 5).map((n) => n.target.join(' ')) })))`)) as AxeViolation[];
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

/** Full-page screenshots at 1280 and 390 px wide, as `<name>-1280.png` and `<name>-390.png`; true when the phone width needs no sideways scrolling. */
export async function screenshots(page: Page, name: string): Promise<boolean> {
  fs.mkdirSync(APP_SHOTS, { recursive: true });
  const size = page.viewportSize() ?? { width: 1280, height: 900 };
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.screenshot({ path: path.join(APP_SHOTS, `${name}-1280.png`), fullPage: true });
  await page.setViewportSize({ width: 390, height: 844 });
  const fits = (await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth')) as boolean;
  await page.screenshot({ path: path.join(APP_SHOTS, `${name}-390.png`), fullPage: true });
  await page.setViewportSize(size);
  return fits;
}
