import fs from 'node:fs';
import test, { type ExecutionContext } from 'ava';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { useApp } from '../helpers/fixture.js';
import { signUpOwner, uniqueEmail, type Owner } from '../helpers/app.js';
import { ok } from '../helpers/client.js';
import { startReceiver } from '../helpers/receiver.js';
import { testWhen } from '../helpers/skip.js';
import { CHROMIUM, axeProblems, launch, screenshots, watchedContext } from '../helpers/browser.js';
import { DeliveryWorker, workerSettings } from '../../src/webhooks/worker.js';

// Webhooks to the local receiver are allowed; the app sends no mail, so people are added with a one-time password.
const { app } = useApp(test, { env: { OUTBOUND_ALLOWED_CIDRS: '127.0.0.0/8' } });

/**
 * One at a time: the delivery worker claims due deliveries of every workspace in the database, so a flow's worker
 * must not send another flow's deliveries to a receiver in another state.
 */
const browserTest = testWhen(fs.existsSync(CHROMIUM), `no Chromium at ${CHROMIUM}: apt-get install -y chromium, or set CHROMIUM_PATH`, { serial: true });

/** Clicks what leads to another page and waits for that page to load. */
async function follow(page: Page, click: () => Promise<void>): Promise<void> {
  await Promise.all([page.waitForEvent('load'), click()]);
}

const mode = (javaScriptEnabled: boolean) => (javaScriptEnabled ? 'js' : 'nojs');

/**
 * The page as it stands passes Axe and is photographed at 1280 and 390 px, fitting the phone's width. Axe and the
 * width check evaluate script, which a context without JavaScript cannot: there the markup the page received is
 * served again, at its own address, to a scripted page of the same browser (a POST's answer cannot be fetched twice).
 */
async function inspect(t: ExecutionContext, page: Page, name: string): Promise<void> {
  const url = page.url();
  const path = new URL(url).pathname;
  let seen = page;
  const inspector = inspectors.get(page.context());
  if (inspector) {
    const markup = await page.content();
    await inspector.route(url, (route) => route.fulfill({ status: 200, contentType: 'text/html; charset=utf-8', body: markup }));
    await inspector.goto(url);
    await inspector.unroute(url);
    seen = inspector;
  }
  t.deepEqual(await axeProblems(seen), [], `Axe on ${path} (${name})`);
  t.true(await screenshots(seen, name), `${path} (${name}) fits 390 px`);
}

/** For each context without JavaScript, the scripted page that inspects its pages. */
const inspectors = new Map<BrowserContext, Page>();

/** A watched context; without JavaScript, with its inspector (see `inspect`). */
async function watched(browser: Browser, javaScriptEnabled: boolean) {
  const w = await watchedContext(browser, { javaScriptEnabled });
  if (!javaScriptEnabled) inspectors.set(w.context, await (await watchedContext(browser, { javaScriptEnabled: true })).context.newPage());
  return w;
}

/** Signs in through the /login form in a context of its own; the context and its page are returned. */
async function signIn(t: ExecutionContext, context: BrowserContext, email: string, password: string): Promise<Page> {
  const page = await context.newPage();
  await page.goto(`${app.url}/login`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await follow(page, () => page.getByRole('button', { name: 'Sign in' }).click());
  t.is(new URL(page.url()).pathname, '/app', `${email} is signed in`);
  return page;
}

const mainText = async (page: Page) => (await page.locator('main').innerText()).replace(/\s+/g, ' ');

/** The owner, signed in through the form in a watched context. */
async function ownerInBrowser(t: ExecutionContext, javaScriptEnabled: boolean, workspace: string) {
  const owner = await signUpOwner(app, workspace);
  const browser = await launch(t);
  const watchedOne = await watched(browser, javaScriptEnabled);
  const page = await signIn(t, watchedOne.context, owner.email, owner.password);
  return { owner, browser, page, problems: watchedOne.problems };
}

/** `POST /api/v1/track/join` with a secret key, as a shop's server links a visitor to a customer. */
const join = (owner: Owner, secretKey: string, visitor: string) =>
  app.client().post('/api/v1/track/join', { visitor_id: visitor, email: uniqueEmail('joined') }, { headers: { authorization: `Bearer ${secretKey}` } });

/**
 * The owner sets the workspace up: the workspace and account settings, a channel, a colleague added without mail
 * (the one-time password read from the page) and given a role on the channel. The colleague signs in in a browser of
 * their own and sees a member's app: no Settings, no owner's tabs or buttons, the owner's pages are the 403 page,
 * and owner-only forms posted anyway are refused and change nothing.
 */
for (const javaScriptEnabled of [true, false]) {
  browserTest(`the owner adds a colleague with a one-time password, who sees a member's app, JavaScript ${javaScriptEnabled ? 'on' : 'off'}`, async (t) => {
    const { owner, browser, page, problems } = await ownerInBrowser(t, javaScriptEnabled, `People Co ${mode(javaScriptEnabled)}`);
    const suffix = mode(javaScriptEnabled);

    // The workspace settings: the time zone is saved.
    await follow(page, () => page.getByRole('link', { name: 'Settings', exact: true }).click());
    t.is(new URL(page.url()).pathname, '/app/settings');
    await inspect(t, page, `owner-settings-${suffix}`);
    await page.getByLabel('Time zone').fill('Europe/Paris');
    await follow(page, () => page.getByRole('button', { name: 'Save', exact: true }).click());
    t.true((await mainText(page)).includes('The workspace settings are saved.'));
    t.is((await ok(owner.client.get('/api/v1/workspace'))).workspace.time_zone, 'Europe/Paris');

    // Your account.
    await follow(page, () => page.getByRole('navigation', { name: 'Settings' }).getByRole('link', { name: 'Your account' }).click());
    t.is(new URL(page.url()).pathname, '/app/settings/account');
    await inspect(t, page, `owner-account-${suffix}`);

    // A channel, made through its form.
    await follow(page, () => page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Channels' }).click());
    await inspect(t, page, `owner-channels-empty-${suffix}`);
    await follow(page, () => page.getByRole('link', { name: 'New channel' }).click());
    await inspect(t, page, `owner-channel-new-${suffix}`);
    await page.getByLabel('Name').fill('Web shop');
    await page.getByLabel('Country').fill('FR');
    await page.getByLabel('Currency').fill('EUR');
    await follow(page, () => page.locator('main form button[type=submit].primary').click());
    t.regex(new URL(page.url()).pathname, /^\/app\/channels\/\d+$/);
    const channelPath = new URL(page.url()).pathname;
    t.is(await page.locator('h1').innerText(), 'Web shop');
    await inspect(t, page, `owner-channel-${suffix}`);

    // The members page: the colleague is added without mail.
    await follow(page, () => page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Settings' }).click());
    await follow(page, () => page.getByRole('navigation', { name: 'Settings' }).getByRole('link', { name: 'Members' }).click());
    t.is(new URL(page.url()).pathname, '/app/settings/members');
    t.is(await page.getByRole('heading', { name: 'Invite by mail' }).count(), 0, 'no invite by mail on a server without mail');
    await inspect(t, page, `owner-members-${suffix}`);
    // Short enough for a phone: an address wider than the screen overflows the page that shows the password.
    const email = `sam.${suffix}@example.com`;
    await page.locator('#add-email').fill(email);
    await page.locator('#add-name').fill('Sam Seller');
    t.is(await page.locator('#add-role').inputValue(), 'member', 'a member unless chosen otherwise');
    await follow(page, () => page.getByRole('button', { name: 'Add the person' }).click());
    t.is(await page.locator('h1').innerText(), 'Sam Seller is added');
    const password = await page.getByLabel('One-time password').inputValue();
    t.true(password.length >= 12, 'a password worth the name');
    await inspect(t, page, `owner-one-time-password-${suffix}`);
    t.false((await page.content()).includes('flash'), 'the password page sets no flash');

    // Back on the members page the password appears nowhere; the colleague gets a viewer role on the channel.
    await follow(page, () => page.getByRole('link', { name: 'Back to the members' }).click());
    t.false((await page.content()).includes(password), 'the password is shown once');
    const row = page.locator('main tr', { hasText: email });
    t.true((await row.innerText()).includes('Member'));
    t.true((await row.innerText()).includes('Not signed in'));
    await row.getByLabel('Channel').selectOption({ label: 'Web shop' });
    await row.getByLabel('Role', { exact: true }).selectOption('viewer');
    await follow(page, () => row.getByRole('button', { name: 'Grant' }).click());
    t.true((await mainText(page)).includes('The channel role is granted.'));
    t.true((await page.locator('main tr', { hasText: email }).innerText()).includes('Web shop: viewer'));
    await inspect(t, page, `owner-members-granted-${suffix}`);

    // The colleague, in a browser of their own, signs in with the one-time password.
    const colleague = await watched(browser, javaScriptEnabled);
    const member = await signIn(t, colleague.context, email, password);
    const nav = member.getByRole('navigation', { name: 'Main' });
    t.is(await nav.getByRole('link', { name: 'Settings' }).count(), 0, 'no Settings for a member');
    t.is(await nav.getByRole('link', { name: 'Channels' }).count(), 1);
    await inspect(t, member, `member-home-${suffix}`);

    // Their own account: the settings tabs hold theirs only.
    await follow(member, () => member.getByRole('link', { name: 'Sam Seller' }).click());
    t.is(new URL(member.url()).pathname, '/app/settings/account');
    const tabs = member.getByRole('navigation', { name: 'Settings' }).getByRole('link');
    t.deepEqual(await tabs.allInnerTexts(), ['Your account']);
    await inspect(t, member, `member-account-${suffix}`);

    // The keys and webhooks pages they may read, without the owner's buttons.
    await member.goto(`${app.url}/app/settings/keys`);
    t.is(await member.getByRole('link', { name: /Rotate the keys/ }).count(), 0);
    t.is(await member.getByRole('textbox', { name: 'Public key' }).inputValue(), owner.keys.public_key);
    await inspect(t, member, `member-keys-${suffix}`);
    await member.goto(`${app.url}/app/settings/webhooks`);
    t.is(await member.getByRole('link', { name: 'New webhook' }).count(), 0);
    await inspect(t, member, `member-webhooks-${suffix}`);

    // The channel they hold a role on, without New channel or Delete.
    await follow(member, () => nav.getByRole('link', { name: 'Channels' }).click());
    t.is(await member.getByRole('link', { name: 'New channel' }).count(), 0);
    await follow(member, () => member.getByRole('link', { name: 'Web shop' }).click());
    t.is(new URL(member.url()).pathname, channelPath);
    t.is(await member.getByRole('link', { name: 'Delete' }).count(), 0);
    await inspect(t, member, `member-channel-${suffix}`);

    // The owner's pages are the 403 page.
    for (const path of ['/app/settings/members', '/app/settings', '/app/settings/keys/rotate', '/app/settings/webhooks/new', '/app/channels/new']) {
      const response = await member.goto(`${app.url}${path}`);
      t.is(response?.status(), 403, path);
      t.is(await member.locator('h1').innerText(), 'You may not do this', path);
    }
    await inspect(t, member, `member-forbidden-${suffix}`);

    // Owner-only forms posted anyway, with the member's session and this site's Origin: refused, nothing changed.
    const post = (path: string, form: Record<string, string>) => colleague.context.request.post(`${app.url}${path}`, { form, headers: { origin: app.url }, maxRedirects: 0 });
    t.is((await colleague.context.request.get(`${app.url}/app/settings/members`, { maxRedirects: 0 })).status(), 403);
    t.is((await post('/app/settings/members/add', { email: uniqueEmail('intruder'), name: 'Intruder', role: 'owner' })).status(), 403);
    t.is((await post('/app/settings/keys/rotate', { confirm: 'yes' })).status(), 403);
    t.is((await post('/app/settings', { name: 'Taken over', time_zone: 'UTC' })).status(), 403);
    await page.reload();
    t.is(await page.locator('#people-heading .count').innerText(), '2', 'nobody was added');
    t.false((await mainText(page)).includes('Intruder'));
    t.is((await ok(owner.client.get('/api/v1/workspace'))).workspace.name, `People Co ${suffix}`);
    t.is((await join(owner, owner.keys.secret_key, `v-${suffix}-member`)).status, 200, 'the keys were not rotated');

    t.deepEqual(problems, [], 'no console errors or CSP violations for the owner');
    t.deepEqual(colleague.problems, [], 'no console errors or CSP violations for the member');
  });
}

/**
 * A webhook to a local receiver that answers 500: the failure shows on the home page and the delivery page with the
 * receiver's answer; once the receiver is fixed, Resend and the next worker run deliver it, signed with the secret
 * the create page showed once.
 */
for (const javaScriptEnabled of [true, false]) {
  browserTest(`a failing webhook delivery is seen, resent and delivered, JavaScript ${javaScriptEnabled ? 'on' : 'off'}`, async (t) => {
    const { owner, page, problems } = await ownerInBrowser(t, javaScriptEnabled, `Hooks Co ${mode(javaScriptEnabled)}`);
    const suffix = mode(javaScriptEnabled);
    const receiver = await startReceiver();
    t.teardown(() => receiver.close());
    receiver.respondWith((_req, res) => {
      res.statusCode = 500;
      res.end('receiver down <b>try later</b>');
    });
    const worker = new DeliveryWorker(app.db, workerSettings(app.config));
    t.teardown(() => worker.close());

    // Create the webhook through its form.
    await page.goto(`${app.url}/app/settings/webhooks`);
    t.true((await mainText(page)).includes('No webhooks yet.'));
    await inspect(t, page, `owner-webhooks-empty-${suffix}`);
    await follow(page, () => page.getByRole('link', { name: 'New webhook' }).click());
    await inspect(t, page, `owner-webhook-new-${suffix}`);
    await page.getByLabel(/^URL/).fill(`${receiver.url}/hooks`);
    await page.getByLabel(/^Description/).fill('Order desk <ERP>');
    await page.getByRole('checkbox', { name: 'quote.created', exact: true }).check();
    await follow(page, () => page.getByRole('button', { name: 'Create webhook' }).click());
    t.is(await page.locator('h1').innerText(), 'Webhook created');
    const secret = await page.getByLabel('Signing secret').inputValue();
    t.true(secret.length >= 16, 'a signing secret is shown');
    receiver.secrets.push(secret);
    await inspect(t, page, `owner-webhook-secret-${suffix}`);
    await follow(page, () => page.getByRole('link', { name: 'Go to the webhook' }).click());
    const subscriptionPath = new URL(page.url()).pathname;
    t.regex(subscriptionPath, /^\/app\/settings\/webhooks\/\d+$/);
    t.false((await page.content()).includes(secret), 'the secret is shown once');
    t.true((await mainText(page)).includes('quote.created'));
    t.true((await mainText(page)).includes('Order desk <ERP>'), 'the description is shown as text');

    // An event, and a worker run against the failing receiver.
    const quote = (await ok(owner.client.post('/api/v1/quotes', {
      customer: { email: uniqueEmail('hook'), name: 'Hook Buyer' }, currency: 'EUR', lines: [{ description: 'Consulting', quantity: '2', price: '450' }],
    }), 201)).quote;
    t.deepEqual(await worker.runOnce(), { claimed: 1, succeeded: 0, failed: 1, dead: 0 });
    const [first] = await receiver.waitFor(1);
    t.is(first.body.type, 'quote.created');
    t.is(first.body.data.quote.id, quote.id);
    t.deepEqual(first.verifiedWith, [secret], 'signed with the secret the page showed');

    // The home page's failing-deliveries box leads to the delivery page.
    await page.goto(`${app.url}/app`);
    const failing = page.getByRole('region', { name: /Failing webhook deliveries/ });
    t.true((await failing.innerText()).includes(`${receiver.url}/hooks`));
    t.true((await failing.innerText()).includes('HTTP 500'));
    await inspect(t, page, `owner-home-failing-${suffix}`);
    await follow(page, () => failing.getByRole('link', { name: 'quote.created' }).click());
    t.regex(new URL(page.url()).pathname, new RegExp(`^${subscriptionPath}/deliveries/\\d+$`));
    const deliveryPath = new URL(page.url()).pathname;
    const failed = await mainText(page);
    t.true(failed.includes('Retrying'), failed);
    t.regex(failed, /Last HTTP status 500/i);
    t.is(await page.locator('pre.response-body').innerText(), 'receiver down <b>try later</b>', 'the response body as text');
    await inspect(t, page, `owner-delivery-failed-${suffix}`);

    // The subscription's page lists it too.
    await page.goto(`${app.url}${subscriptionPath}`);
    t.is(await page.locator(`main a[href="${deliveryPath}"]`).count(), 1);
    await inspect(t, page, `owner-webhook-${suffix}`);

    // Fixed: resend, and the next run delivers it, signed.
    receiver.respondWith((_req, res) => res.end('ok'));
    await page.goto(`${app.url}${deliveryPath}`);
    await follow(page, () => page.getByRole('button', { name: 'Resend' }).click());
    t.is(new URL(page.url()).pathname, deliveryPath);
    t.true((await mainText(page)).includes('Delivery queued again'));
    t.deepEqual(await worker.runOnce(), { claimed: 1, succeeded: 1, failed: 0, dead: 0 });
    const received = await receiver.waitFor(2);
    t.is(received.length, 2);
    t.is(received[1].body.id, first.body.id, 'the same event again');
    t.deepEqual(received[1].verifiedWith, [secret], 'the signature verifies with the secret shown once');

    await page.reload();
    const delivered = await mainText(page);
    t.true(delivered.includes('Delivered'), delivered);
    t.regex(delivered, /Last HTTP status 200/i);
    t.is(await page.locator('pre.response-body').innerText(), 'ok');
    await inspect(t, page, `owner-delivery-delivered-${suffix}`);
    await page.goto(`${app.url}/app`);
    t.is(await page.getByRole('region', { name: /Failing webhook deliveries/ }).count(), 0, 'nothing fails any more');
    await page.goto(`${app.url}/app/settings/webhooks`);
    t.true((await mainText(page)).includes('Delivered'));
    await inspect(t, page, `owner-webhooks-${suffix}`);

    t.deepEqual(problems, [], 'no console errors or CSP violations');
  });
}

/**
 * Rotating the keys from the keys page, after its confirmation: the new secret key is shown once, the old one gets
 * 401 on `POST /api/v1/track/join` at once, and the new one works.
 */
for (const javaScriptEnabled of [true, false]) {
  browserTest(`the owner rotates the keys and the old secret key stops working, JavaScript ${javaScriptEnabled ? 'on' : 'off'}`, async (t) => {
    const { owner, page, problems } = await ownerInBrowser(t, javaScriptEnabled, `Keys Co ${mode(javaScriptEnabled)}`);
    const suffix = mode(javaScriptEnabled);
    t.is((await join(owner, owner.keys.secret_key, `v-${suffix}-1`)).status, 200, 'the first secret key works');

    await follow(page, () => page.getByRole('link', { name: 'Settings', exact: true }).click());
    await follow(page, () => page.getByRole('navigation', { name: 'Settings' }).getByRole('link', { name: 'Keys and tracking' }).click());
    t.is(await page.getByRole('textbox', { name: 'Public key' }).inputValue(), owner.keys.public_key);
    t.true((await page.getByRole('textbox', { name: 'Tag' }).inputValue()).includes(`/tag/${owner.workspace.slug}.js`));
    t.false((await page.content()).includes(owner.keys.secret_key), 'the secret key is not on the page');
    await inspect(t, page, `owner-keys-${suffix}`);

    await follow(page, () => page.getByRole('link', { name: /Rotate the keys/ }).click());
    t.is(await page.locator('h1').innerText(), 'Rotate the keys');
    await inspect(t, page, `owner-keys-rotate-${suffix}`);
    await page.getByLabel('I understand that the current keys stop working now').check();
    await follow(page, () => page.getByRole('button', { name: 'Rotate the keys' }).click());
    t.is(new URL(page.url()).pathname, '/app/settings/keys/rotate', 'the secret is on the answer itself, not behind a redirect');
    const secretKey = await page.getByRole('textbox', { name: 'Secret key' }).inputValue();
    t.regex(secretKey, /^sk_live_/);
    t.not(secretKey, owner.keys.secret_key);
    const publicKey = await page.getByRole('textbox', { name: 'Public key' }).inputValue();
    t.not(publicKey, owner.keys.public_key, 'the public key is new too');
    await inspect(t, page, `owner-keys-secret-${suffix}`);

    t.is((await join(owner, owner.keys.secret_key, `v-${suffix}-2`)).status, 401, 'the old secret key is refused at once');
    const joined = await join(owner, secretKey, `v-${suffix}-3`);
    t.is(joined.status, 200, joined.text);
    t.is(joined.body.data.visitor.visitor_id, `v-${suffix}-3`);

    // The secret is shown once: the keys page no longer has it.
    await page.goto(`${app.url}/app/settings/keys`);
    t.false((await page.content()).includes(secretKey), 'the new secret key is shown once');
    t.is(await page.getByRole('textbox', { name: 'Public key' }).inputValue(), publicKey);

    t.deepEqual(problems, [], 'no console errors or CSP violations');
  });
}
