import vm from 'node:vm';
import test from 'ava';
import { signUpOwner, type Owner } from '../helpers/app.js';
import { useApp } from '../helpers/fixture.js';

/** Rules of visitor tracking that a client relies on, each pinned on its own. */

const { app } = useApp(test);

const pub = (owner: Owner) => ({ authorization: `Public ${owner.keys.public_key}` });

async function product(owner: Owner, sku: string, category: string): Promise<number> {
  const res = await owner.client.post('/api/v1/products', { sku, name: `Product ${sku}`, category });
  if (res.status !== 201) throw new Error(res.text);
  return res.body.data.product.id;
}

/** `count` views of the product, a second apart, by 500 visitors: past 10,000 the workspace's figures are reused for a while. */
async function views(owner: Owner, productId: number, count: number): Promise<void> {
  await app.db.raw(
    `insert into track_events (workspace_id, visitor_id, type, product_id, occurred_at)
     select ?::int, 'v-' || (i % 500), 'product_view', ?::int, now() - i * interval '1 second' from generate_series(1, ?::int) i`,
    [owner.workspace.id, productId, count],
  );
}

const interest = async (owner: Owner) =>
  ((await app.client().get('/api/v1/public/categories/interest', { headers: pub(owner) })).body.data.categories as { category: string }[]).map((c) => c.category);

const popular = async (owner: Owner) =>
  ((await app.client().get('/api/v1/public/recommendations', { headers: pub(owner) })).body.data.recommendations as { sku: string; reason: string; score: number }[]).map(
    (r) => `${r.sku} ${r.reason} ${r.score}`,
  );

// ---------------------------------------------------------------------------------------------
// The workspace-wide figures reused for a busy workspace are that workspace's alone.

test('a busy workspace\'s reused category interest and most viewed are never served to another workspace, busy or small', async (t) => {
  const busy = await signUpOwner(app, 'Busy Desks');
  await views(busy, await product(busy, 'DESK', 'desks'), 10_500);
  const small = await signUpOwner(app, 'Small Chairs');
  await views(small, await product(small, 'CHAIR', 'chairs'), 3);
  const alsoBusy = await signUpOwner(app, 'Busy Lamps');
  await views(alsoBusy, await product(alsoBusy, 'LAMP', 'lamps'), 10_200);

  // Each asked twice, the second answer being the reused one, and each right after the other's figures were kept
  // (they are kept for seconds only: set up first, then asked).
  for (let i = 0; i < 2; i++) {
    t.deepEqual(await interest(busy), ['desks']);
    t.deepEqual(await popular(busy), ['DESK popular 10000']);
  }
  t.deepEqual(await interest(small), ['chairs']);
  t.deepEqual(await popular(small), ['CHAIR popular 3']);
  for (let i = 0; i < 2; i++) {
    t.deepEqual(await interest(alsoBusy), ['lamps']);
    t.deepEqual(await popular(alsoBusy), ['LAMP popular 10000']);
  }
  t.deepEqual(await interest(busy), ['desks'], 'and the first one still gets its own');
  t.deepEqual(await popular(busy), ['DESK popular 10000']);
});

// ---------------------------------------------------------------------------------------------
// The tag script, run without a browser: under Global Privacy Control it sends nothing.

interface Page {
  /** Every way the script could send something: fetch, sendBeacon, XMLHttpRequest, an image. */
  sent: { via: string; url: string; body?: string; headers?: Record<string, string> }[];
  /** Keys written to localStorage. */
  stored: string[];
  window: { quoting: { track(type: string, props?: Record<string, unknown>): void; visitorId(): string | null }; navigator: { globalPrivacyControl?: boolean } };
}

/** Loads `script` into a fresh context shaped like a shop's page, with calls already queued for it. */
function loadTag(script: string, globalPrivacyControl: boolean | undefined, send: (url: string, init: RequestInit) => Promise<unknown>): Page {
  const sent: Page['sent'] = [];
  const stored: string[] = [];
  const storage = new Map<string, string>();
  const window = {
    navigator: {
      globalPrivacyControl,
      sendBeacon: (url: string, body?: string) => (sent.push({ via: 'sendBeacon', url, body }), true),
    },
    fetch: (url: string, init: RequestInit) => {
      sent.push({ via: 'fetch', url, body: String(init.body), headers: init.headers as Record<string, string> });
      return send(url, init);
    },
    XMLHttpRequest: function () {
      return { open: (_method: string, url: string) => sent.push({ via: 'XMLHttpRequest', url }), setRequestHeader() {}, send() {} };
    },
    Image: function () {
      return {
        set src(url: string) {
          sent.push({ via: 'Image', url });
        },
      };
    },
    localStorage: {
      getItem: (key: string) => storage.get(key) ?? null,
      setItem: (key: string, value: string) => (stored.push(key), storage.set(key, value)),
    },
    crypto: globalThis.crypto,
    location: { href: 'https://shop.example/desks/oak' },
    quoting: [['product_view', { sku: 'DESK' }]],
  };
  vm.runInNewContext(script, { window, document: { title: 'Oak desk', referrer: 'https://search.example/' } }, { filename: 'tag.js' });
  return { sent, stored, window: window as unknown as Page['window'] };
}

test('the tag script without a browser: under Global Privacy Control it sends nothing and stores no visitor id; without it, its events arrive', async (t) => {
  const shop = await signUpOwner(app, 'Tagged Shop');
  await product(shop, 'DESK', 'desks');
  const res = await app.client().get(`/tag/${shop.workspace.slug}.js`);
  t.is(res.status, 200);
  const script = res.text;
  const stored = async () => Number((await app.db('track_events').where({ workspace_id: shop.workspace.id }).count('* as n').first())!.n);

  // Without GPC (unset, or false): the page view and the queued call go out, and the API takes them.
  const answers: Promise<unknown>[] = [];
  for (const gpc of [undefined, false]) {
    const page = loadTag(script, gpc, (url, init) => {
      const answer = fetch(url, init).then((r) => r.status);
      answers.push(answer);
      return answer;
    });
    page.window.quoting.track('add_to_cart', { sku: 'DESK' });
    t.deepEqual(page.sent.map((s) => s.via), ['fetch', 'fetch', 'fetch'], `GPC ${gpc}`);
    t.deepEqual(page.sent.map((s) => JSON.parse(s.body!).type), ['page_view', 'product_view', 'add_to_cart']);
    t.is(page.sent[0].url, `${app.url}/api/v1/track/event`);
    t.is(page.sent[0].headers!.Authorization, `Public ${shop.keys.public_key}`);
    t.deepEqual(page.stored, ['quoting_visitor_id']);
    t.regex(page.window.quoting.visitorId()!, /^[0-9a-f]{32}$/);
  }
  t.deepEqual(await Promise.all(answers), [204, 204, 204, 204, 204, 204]);
  t.is(await stored(), 6);

  // With GPC: nothing on load, nothing for the queued call, nothing for a later call, no visitor id kept.
  const page = loadTag(script, true, async () => {
    throw new Error('sent under GPC');
  });
  page.window.quoting.track('product_view', { sku: 'DESK' });
  page.window.quoting.track('custom_event', { plan: 'pro' });
  t.deepEqual(page.sent, []);
  t.deepEqual(page.stored, []);
  t.is(page.window.quoting.visitorId(), null);

  // A signal that turns on after the page loaded silences the calls after it.
  const later = loadTag(script, undefined, async () => 202);
  t.is(later.sent.length, 2);
  later.window.navigator.globalPrivacyControl = true;
  later.window.quoting.track('add_to_cart', { sku: 'DESK' });
  t.is(later.sent.length, 2);
  t.is(later.window.quoting.visitorId(), null);
  t.is(await stored(), 6);
});
