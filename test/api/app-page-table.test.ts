import test from 'ava';
import { useOwnerApp } from '../helpers/fixture.js';
import { uniqueEmail } from '../helpers/app.js';
import { inviteMember } from '../helpers/members.js';
import { postForm } from '../helpers/pages.js';
import { Client } from '../helpers/client.js';
import { appPages } from '../../src/web/index.js';
import type { PageDef } from '../../src/web/page.js';

const { app, owner, smtp } = useOwnerApp(test, { smtp: true });

/** Every page of the app's table, its path's parameters filled in: ids with 1, anything else with a word. */
function pages(): (PageDef & { url: string })[] {
  return appPages({ db: app.database.knex, config: app.config, mailer: null }).map((def) => ({
    ...def,
    url: def.path.replace(/\{(\w+)\}/g, (_, name: string) => (name === 'id' || name.endsWith('Id') ? '1' : 'word')),
  }));
}

test('the table holds every part of the map this far', (t) => {
  const paths = new Set(pages().map((p) => p.path));
  for (const path of ['/login', '/logout', '/forgot', '/reset/{token}', '/invite/{token}', '/signup', '/app', '/app/quotes', '/app/quotes/new', '/app/quotes/{id}', '/app/quotes/{id}/edit',
    '/app/orders', '/app/orders/{id}', '/app/customers', '/app/customers/{id}', '/app/products', '/app/products/{id}', '/app/channels', '/app/channels/{id}', '/app/imports', '/app/imports/{id}',
    '/app/settings', '/app/settings/password']) {
    t.true(paths.has(path), path);
  }
});

test('every signed-in page answers 302 to /login, with the page as next, to a visitor without a session', async (t) => {
  const visitor = app.client();
  for (const def of pages().filter((p) => p.method === 'get' && p.who !== 'anyone')) {
    const res = await visitor.get(def.url);
    t.is(res.status, 302, def.path);
    t.is(res.headers.get('location'), `/login?next=${encodeURIComponent(def.url)}`, def.path);
  }
});

test('every POST of the table refuses another site with the 403 page, before anything else happens', async (t) => {
  for (const def of pages().filter((p) => p.method === 'post')) {
    const res = await postForm(owner.client, def.url, { name: 'x', email: uniqueEmail('x') }, { origin: 'https://evil.example' });
    t.is(res.status, 403, def.path);
    t.regex(res.text, /Cross-site request refused/, def.path);
  }
});

test("every workspace page shows a locked workspace's 402 page", async (t) => {
  const client = app.client();
  const signup = await client.post('/api/v1/auth/signup', { email: uniqueEmail('locked'), password: 'locked password 1', name: 'Lo', workspace_name: 'Locked' });
  await app.db('workspaces').where({ id: signup.body.data.workspace.id }).update({ status: 'suspended' });
  app.sessionCache.evict('all');
  for (const def of pages().filter((p) => p.method === 'get' && (p.who === 'member' || p.who === 'owner'))) {
    const res = await client.get(def.url);
    t.is(res.status, 402, def.path);
    t.regex(res.text, /This workspace is locked/, def.path);
  }
});

test("every owner's page and form is the 403 page for a member", async (t) => {
  const member = await inviteMember(app, smtp, owner);
  const owners = pages().filter((p) => p.who === 'owner');
  t.true(owners.length > 0);
  for (const def of owners) {
    const res = def.method === 'get' ? await member.client.get(def.url) : await postForm(member.client, def.url, {});
    t.is(res.status, 403, `${def.method} ${def.path}`);
  }
});

test('every page with an id answers the 404 page for an id of another workspace or a malformed one', async (t) => {
  for (const def of pages().filter((p) => p.method === 'get' && /\{(id|\w+Id)\}/.test(p.path) && p.who !== 'anyone')) {
    for (const id of ['2147483647', 'abc', '0']) {
      const res = await owner.client.get(def.path.replace(/\{(\w+)\}/g, (_, name: string) => (name === 'id' || name.endsWith('Id') ? id : 'word')));
      t.is(res.status, 404, `${def.path} with ${id}`);
    }
  }
});

test('a page answers HTML with the security headers, whatever its status', async (t) => {
  for (const [client, url] of [[owner.client, '/app'], [app.client(), '/login'], [owner.client, '/app/quotes/2147483647']] as [Client, string][]) {
    const res = await client.get(url);
    t.regex(res.headers.get('content-type') ?? '', /^text\/html/);
    t.is(res.headers.get('x-frame-options'), 'DENY');
    t.is(res.headers.get('x-content-type-options'), 'nosniff');
    t.regex(res.headers.get('content-security-policy') ?? '', /default-src 'self'/);
  }
});
