import { useOwnerApp } from '../helpers/fixture.js';
import { uniqueEmail } from '../helpers/app.js';
import { ok } from '../helpers/client.js';
import { postForm } from '../helpers/pages.js';
import { APP_SHOTS, axeProblems, browserTest, launch, screenshots, watchedContext } from '../helpers/browser.js';
import test from 'ava';

const { app, owner } = useOwnerApp(test, { workspace: 'Northwind Supplies' });

/**
 * Every page of the map that the app has so far, signed in as the owner with a little of everything in the
 * workspace: each answers 200 (the 404 page 404), Axe finds no serious or critical violation, no console errors
 * or CSP violations, the phone width needs no sideways scrolling, and screenshots at 1280 and 390 px are saved.
 */
browserTest('every page of the app passes Axe, logs no console errors, fits a phone, and is photographed', async (t) => {
  const c = owner.client;
  const product = await ok(c.post('/api/v1/products', {
    sku: 'DESK', name: 'Standing desk', description: 'Solid oak top, electric frame',
    variants: [{ sku: 'DESK-OAK-160', name: 'Oak, 160 cm', price: '899.00', attributes: { width: '160 cm' } }, { sku: 'DESK-OAK-180', name: 'Oak, 180 cm', price: '989.00' }],
  }), 201);
  await ok(c.post('/api/v1/products', { sku: 'CHAIR', name: 'Ergonomic chair', variants: [{ sku: 'CHAIR-BLK', name: 'Black', price: '349.50' }] }), 201);
  const people = [
    { email: uniqueEmail('dana'), name: 'Dana Whitfield', company: 'Whitfield Interiors' },
    { email: uniqueEmail('marco'), name: 'Marco Rossi', company: 'Rossi & Figli' },
    { email: uniqueEmail('aiko'), name: 'Aiko Tanaka', company: 'Tanaka Studio' },
  ];
  const customers = [];
  for (const person of people) customers.push(await ok(c.post('/api/v1/customers', person), 201));
  const idOf = (customer: { id?: number; customer?: { id: number } }) => customer.customer?.id ?? customer.id!;
  const quote = async (customer: unknown, lines: object[], extra: object = {}) =>
    (await ok(c.post('/api/v1/quotes', { customer_id: idOf(customer as never), currency: 'EUR', tax_rate: '20', lines, ...extra }), 201)).quote;
  const send = async (q: { id: number }) => (await ok(c.post(`/api/v1/quotes/${q.id}/send`, { notify: false }))).quote;
  const accept = async (q: { public_token: string }) => t.is((await app.client().request('POST', `/q/${q.public_token}/accept`, { form: { name: 'Carla Customer', agree: 'yes' } })).status, 302);

  const draft = await quote(customers[0], [{ sku: 'DESK-OAK-160', quantity: '2' }, { description: 'Delivery and assembly', quantity: '1', price: '120' }], { notes: 'Delivery in two weeks.' });
  await send(await quote(customers[1], [{ sku: 'CHAIR-BLK', quantity: '6' }], { valid_until: '2030-01-31' }));
  const accepted = await send(await quote(customers[0], [{ sku: 'DESK-OAK-180', quantity: '4' }, { sku: 'CHAIR-BLK', quantity: '4' }], { discount_amount: '100' }));
  await accept(accepted);
  const converted = await send(await quote(customers[2], [{ sku: 'DESK-OAK-160', quantity: '1' }]));
  await accept(converted);
  const order = await ok(c.post(`/api/v1/quotes/${converted.id}/convert`, {}), 201);
  const channel = (await ok(c.post('/api/v1/channels', { name: 'Online shop', type: 'web', country: 'DE', currency: 'EUR' }), 201)).channel;
  await ok(c.post('/api/v1/channels', { name: 'Trade fair stand', type: 'retail', status: 'paused' }), 201);
  await ok(c.put(`/api/v1/channels/${channel.id}/members/${owner.user.id}`, { role: 'manager' }));
  const customerId = idOf(customers[0]);
  const orderId = order.order?.id ?? order.id;
  const hook = (await ok(c.post('/api/v1/webhooks', { url: 'https://hooks.northwind.example/quoting', event_types: ['quote.*', 'order.created'], description: 'ERP sync' }), 201)).subscription;
  await ok(c.post('/api/v1/customers', { email: uniqueEmail('lena'), name: 'Lena Berg' }), 201);
  await ok(c.patch(`/api/v1/webhooks/${hook.id}`, { event_types: ['*'] }));
  await ok(c.post('/api/v1/customers', { email: uniqueEmail('ola'), name: 'Ola Nord' }), 201);
  const [delivery] = (await ok(c.get(`/api/v1/webhooks/${hook.id}/deliveries`))).deliveries;
  const added = await postForm(c, '/app/settings/members/add', { email: uniqueEmail('sam'), name: 'Sam Seller', role: 'member' });
  t.is(added.status, 201);
  const sam = await app.db('users').where({ name: 'Sam Seller' }).first('id');
  t.is((await postForm(c, `/app/settings/members/${sam.id}/channels`, { channel_id: String(channel.id), role: 'editor' })).status, 303);
  const pages: [name: string, path: string, status?: number][] = [
    ['login', '/login'],
    ['forgot', '/forgot'],
    ['signup', '/signup'],
    ['reset', '/reset/some-token'],
    ['invite', '/invite/some-token'],
    ['home', '/app'],
    ['quotes', '/app/quotes'],
    ['quote-new', '/app/quotes/new'],
    ['quote-draft', `/app/quotes/${draft.id}`],
    ['quote-edit', `/app/quotes/${draft.id}/edit`],
    ['quote-accepted', `/app/quotes/${accepted.id}`],
    ['orders', '/app/orders'],
    ['order', `/app/orders/${orderId}`],
    ['customers', '/app/customers'],
    ['customer-new', '/app/customers/new'],
    ['customer', `/app/customers/${customerId}`],
    ['customer-edit', `/app/customers/${customerId}/edit`],
    ['products', '/app/products'],
    ['product-new', '/app/products/new'],
    ['product', `/app/products/${product.product?.id ?? product.id}`],
    ['product-edit', `/app/products/${product.product?.id ?? product.id}/edit`],
    ['channels', '/app/channels'],
    ['channel-new', '/app/channels/new'],
    ['channel', `/app/channels/${channel.id}`],
    ['channel-edit', `/app/channels/${channel.id}/edit`],
    ['channel-delete', `/app/channels/${channel.id}/delete`],
    ['password', '/app/settings/password'],
    ['settings', '/app/settings'],
    ['members', '/app/settings/members'],
    ['account', '/app/settings/account'],
    ['keys', '/app/settings/keys'],
    ['keys-rotate', '/app/settings/keys/rotate'],
    ['webhooks', '/app/settings/webhooks'],
    ['webhook-new', '/app/settings/webhooks/new'],
    ['webhook', `/app/settings/webhooks/${hook.id}`],
    ['webhook-edit', `/app/settings/webhooks/${hook.id}/edit`],
    ['webhook-rotate', `/app/settings/webhooks/${hook.id}/rotate`],
    ['webhook-delete', `/app/settings/webhooks/${hook.id}/delete`],
    ['delivery', `/app/settings/webhooks/${hook.id}/deliveries/${delivery.id}`],
    ['not-found', '/app/no-such-page', 404],
  ];

  const browser = await launch(t);
  const { context, problems } = await watchedContext(browser, { javaScriptEnabled: true });
  const page = await context.newPage();
  const signedOut = ['login', 'forgot', 'signup', 'reset', 'invite'];
  for (const [name, path, status = 200] of pages.filter(([name]) => signedOut.includes(name))) {
    const response = await page.goto(`${app.url}${path}`);
    t.is(response?.status(), status, path);
    t.deepEqual(await axeProblems(page), [], `Axe on ${path}`);
    t.true(await screenshots(page, name), `${path} fits 390 px`);
  }
  await page.goto(`${app.url}/login`);
  await page.getByLabel('Email').fill(owner.email);
  await page.getByLabel('Password').fill(owner.password);
  await Promise.all([page.waitForURL(`${app.url}/app`), page.getByRole('button', { name: 'Sign in' }).click()]);
  for (const [name, path, status = 200] of pages.filter(([name]) => !signedOut.includes(name))) {
    const response = await page.goto(`${app.url}${path}`);
    t.is(response?.status(), status, path);
    t.deepEqual(await axeProblems(page), [], `Axe on ${path}`);
    t.true(await screenshots(page, name), `${path} fits 390 px`);
  }
  t.deepEqual(problems, [], 'no console errors or CSP violations');
  t.log(`screenshots in ${APP_SHOTS}`);
});
