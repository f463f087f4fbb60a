import test from 'ava';
import fc from 'fast-check';
import { startApp, signUpOwner, type Owner, type TestApp } from './helpers/app.js';
import type { RequestOptions } from './helpers/client.js';

/**
 * Property-based: random JSON, wrong types, huge strings, unicode and form bodies thrown at every
 * create/update endpoint. The answer is always 2xx or a 4xx whose message names a field (never a
 * 500), and a refused request leaves the workspace's rows exactly as they were.
 */

interface Target {
  method: 'POST' | 'PATCH' | 'PUT';
  path: () => string;
  fields: Fields;
}

let app: TestApp;
let owner: Owner;
const ids: Record<string, number> = {};

const tenantTables = ['customers', 'products', 'variants', 'channels', 'channel_members', 'events', 'quotes', 'orders', 'visitors'];

/** A digest of every row the workspace owns: equal digests mean nothing was written. */
async function fingerprint(): Promise<string> {
  const parts = tenantTables.map(
    (table) => `(select md5(coalesce(string_agg(t::text, '|' order by t::text), '')) from ${table} t where t.workspace_id = ?)`,
  );
  const { rows } = await app.db.raw(`select concat_ws(',', ${parts.join(', ')}) as digest`, tenantTables.map(() => owner.workspace.id));
  return rows[0].digest;
}

test.before(async () => {
  app = await startApp();
  owner = await signUpOwner(app);
  const customer = await owner.client.post('/api/v1/customers', { email: 'seed@example.com', name: 'Seed' });
  ids.customer = customer.body.data.customer.id;
  const product = await owner.client.post('/api/v1/products', { sku: 'SEED', name: 'Seed', variants: [{ sku: 'SEED-1', price: '1.00' }] });
  ids.product = product.body.data?.product?.id;
  ids.variant = product.body.data?.product?.variants?.[0]?.id;
  const channel = await owner.client.post('/api/v1/channels', { name: 'Seed channel' });
  ids.channel = channel.body.data?.channel?.id;
  ids.user = owner.user.id;
});
test.after.always(() => app?.close());

/** Plausible values per field, so that some bodies get through and exercise the write paths. */
const text = fc.string({ minLength: 1, maxLength: 40 });
const sku = fc.stringMatching(/^[A-Z0-9][A-Z0-9-]{0,11}$/);
const price = fc.oneof(fc.integer({ min: 0, max: 100_000 }), fc.constantFrom('0', '9.99', '1200.50', 12.5));
const variant = fc.record({ sku, name: text, price, attributes: fc.dictionary(fc.string({ maxLength: 6 }), fc.string({ maxLength: 6 }), { maxKeys: 2 }) }, { requiredKeys: ['sku'] });
const customerFields = { email: fc.stringMatching(/^[a-z0-9]{1,10}@[a-z]{1,8}\.(com|org|io)$/), name: text, company: text, phone: fc.stringMatching(/^\+?[0-9 ]{3,15}$/), country: fc.constantFrom('US', 'de', 'FR'), notes: text };
const productFields = {
  sku, name: text, type: fc.constantFrom('physical', 'digital', 'service'), status: fc.constantFrom('active', 'draft', 'archived'),
  brand: text, category: text, description: text, variants: fc.array(variant, { maxLength: 3 }),
};
const variantFields = { sku, name: text, price, attributes: fc.dictionary(fc.string({ maxLength: 6 }), fc.string({ maxLength: 6 }), { maxKeys: 3 }) };
const channelFields = {
  name: text, type: fc.constantFrom('web', 'marketplace', 'retail', 'wholesale', 'b2b'), ownership: fc.constantFrom('owned', 'third_party'),
  status: fc.constantFrom('active', 'paused', 'archived'), country: fc.constantFrom('US', 'gb'), currency: fc.constantFrom('EUR', 'usd'),
};
type Fields = Record<string, fc.Arbitrary<unknown>>;

const targets: Record<string, Target> = {
  'POST /customers': { method: 'POST', path: () => '/api/v1/customers', fields: customerFields },
  'PATCH /customers/{id}': { method: 'PATCH', path: () => `/api/v1/customers/${ids.customer}`, fields: customerFields },
  'PUT /customers/{id}': { method: 'PUT', path: () => `/api/v1/customers/${ids.customer}`, fields: customerFields },
  'POST /products': { method: 'POST', path: () => '/api/v1/products', fields: productFields },
  'PATCH /products/{id}': { method: 'PATCH', path: () => `/api/v1/products/${ids.product}`, fields: productFields },
  'POST /products/{id}/variants': { method: 'POST', path: () => `/api/v1/products/${ids.product}/variants`, fields: variantFields },
  'PUT /products/{id}/variants/{id}': { method: 'PUT', path: () => `/api/v1/products/${ids.product}/variants/${ids.variant}`, fields: variantFields },
  'POST /channels': { method: 'POST', path: () => '/api/v1/channels', fields: channelFields },
  'PATCH /channels/{id}': { method: 'PATCH', path: () => `/api/v1/channels/${ids.channel}`, fields: channelFields },
  'PUT /channels/{id}/members/{user_id}': {
    method: 'PUT', path: () => `/api/v1/channels/${ids.channel}/members/${ids.user}`, fields: { role: fc.constantFrom('viewer', 'editor', 'manager') },
  },
};

/** Values of every wrong and awkward kind. */
const nasty = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme', maxLength: 50 }),
  fc.string({ minLength: 300, maxLength: 20_000, unit: 'grapheme-ascii' }),
  fc.constantFrom('', ' ', '0', '-1', '1.234', '1e400', 'NaN', 'null', 'true', '12.5', 'a@b.co', 'web', 'owner', 'US', 'usd', '\u0000', 'ℌ𝔢𝔩𝔩𝔬', '💥'.repeat(100)),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 4 }),
  fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }),
);

function bodies(fields: Fields): fc.Arbitrary<RequestOptions> {
  const names = Object.keys(fields);
  const key = fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...names) }, { weight: 1, arbitrary: fc.string({ maxLength: 12 }) });
  const mostlyPlausible = Object.fromEntries(
    Object.entries(fields).map(([name, good]) => [name, fc.oneof({ weight: 4, arbitrary: good }, { weight: 1, arbitrary: nasty })]),
  );
  return fc.oneof(
    { weight: 3, arbitrary: fc.record(mostlyPlausible, { requiredKeys: [] }).map((json) => ({ json })) },
    fc.dictionary(key, nasty, { maxKeys: names.length + 2 }).map((json) => ({ json })),
    fc.jsonValue({ maxDepth: 3 }).map((json) => ({ json })),
    fc.dictionary(key, fc.string({ maxLength: 300 }), { maxKeys: names.length + 2 }).map((form) => ({ form })),
    fc.string({ maxLength: 200 }).map((raw) => ({ raw, contentType: 'application/json' })),
  );
}

for (const [name, target] of Object.entries(targets)) {
  test.serial(`${name}: never a 500, a 4xx names a field, a refused request writes nothing`, async (t) => {
    t.timeout(120_000);
    const failures: string[] = [];
    const statuses: Record<number, number> = {};
    await fc.assert(
      fc.asyncProperty(bodies(target.fields), async (options) => {
        const before = await fingerprint();
        const res = await owner.client.request(target.method, target.path(), options);
        statuses[res.status] = (statuses[res.status] ?? 0) + 1;
        const shown = `${res.status} ${res.text.slice(0, 200)} for ${JSON.stringify(options).slice(0, 300)}`;
        if (res.status >= 500) failures.push(shown);
        if (res.status >= 500) return false;
        if (res.status >= 400) {
          if (typeof res.body?.error !== 'string') return false;
          if (res.status === 422) {
            const field = /^([A-Za-z_]+)/.exec(res.body.error)?.[1];
            if (!field || !(field in target.fields || field === 'body')) {
              failures.push(`422 not naming a field: ${shown}`);
              return false;
            }
          }
          if ((await fingerprint()) !== before) {
            failures.push(`rows changed by a refused request: ${shown}`);
            return false;
          }
        } else if (res.status < 200 || res.status >= 300) {
          return false;
        }
        return true;
      }),
      { numRuns: Number(process.env.FC_RUNS ?? 60), seed: process.env.FC_SEED ? Number(process.env.FC_SEED) : undefined },
    ).catch((err: Error) => {
      t.fail(`${failures.join('\n')}\n${err.message.slice(0, 2000)}`);
    });
    t.log(`answers: ${JSON.stringify(statuses)}`);
    t.true(Object.keys(statuses).some((s) => Number(s) < 300), 'some bodies were accepted');
    t.true(Object.keys(statuses).some((s) => Number(s) === 422), 'some bodies were refused with 422');
  });
}
