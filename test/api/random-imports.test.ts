import test from 'ava';
import fc from 'fast-check';
import { useOwnerApp } from '../helpers/fixture.js';

/**
 * Property-based: random bytes and CSV-shaped text (quotes, delimiters, line breaks, a BOM, NUL,
 * unicode, bad numbers) posted to both import endpoints. The answer is 200 or a 4xx with an error
 * string, never a 500; the report adds up; a dry run, an aborted import and a refused one leave the
 * workspace's rows exactly as they were; and every stored order still adds up.
 */

const { app, owner } = useOwnerApp(test, { env: { WEBHOOKS_ENABLED: '1' } });

const tables = ['customers', 'products', 'variants', 'events', 'orders', 'order_items'];

async function fingerprint(): Promise<string> {
  const parts = tables.map((table) => `(select count(*) || ':' || coalesce(sum(hashtextextended(t::text, 0)), 0) from ${table} t where t.workspace_id = ?)`);
  const { rows } = await app.db.raw(`select concat_ws(',', ${parts.join(', ')}) as digest`, tables.map(() => owner.workspace.id));
  return rows[0].digest;
}

async function ordersThatDoNotAddUp(): Promise<number> {
  const { rows } = await app.db.raw(
    `select count(*)::int as n from orders o
       cross join lateral (select coalesce(sum(line_total), 0) as subtotal, coalesce(bool_and(line_total = round(quantity * price, 2)), true) as ok
                             from order_items where order_id = o.id) i
      where o.workspace_id = ? and not (i.ok and o.subtotal = i.subtotal and o.total = o.subtotal - o.discount_amount + o.tax_amount)`,
    [owner.workspace.id],
  );
  return rows[0].n;
}

const cellText = fc.oneof(
  fc.constantFrom('', ' ', 'A', 'A-1', 'B', '1', '12.50', '0.001', '-1', '1e3', 'NaN', 'abc', 'x@example.com', 'not-an-email', '2026-11-01', 'paid', 'boat', 'quote', 'EUR', 'eu'),
  fc.string({ maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 8 }),
  fc.constantFrom('"', '""', '"a,b"', 'a\nb', '\r\n', ';', '\t', '\u0000', '\uFEFF', '💥', 'x'.repeat(300)),
);

const productHeader = fc.shuffledSubarray(['product_sku', 'name', 'type', 'status', 'brand', 'category', 'description', 'variant_sku', 'variant_name', 'price', 'attr:size', 'junk'], { minLength: 1 });
const orderHeader = fc.shuffledSubarray(
  ['order_number', 'external_id', 'external_source', 'status', 'currency', 'customer_email', 'customer_name', 'channel_id', 'placed_at', 'sku', 'description', 'quantity', 'price'],
  { minLength: 1 },
);

/** CSV-shaped text: a header from the real columns, rows of random cells, joined by a random delimiter and line ending. */
const csvText = (header: fc.Arbitrary<string[]>) =>
  fc
    .record({
      header,
      rows: fc.array(fc.array(cellText, { maxLength: 14 }), { maxLength: 8 }),
      delimiter: fc.constantFrom(',', ';', '\t'),
      newline: fc.constantFrom('\n', '\r\n'),
      bom: fc.boolean(),
      quoteAll: fc.boolean(),
    })
    .map(({ header, rows, delimiter, newline, bom, quoteAll }) => {
      const cell = (v: string) => (quoteAll || /[",;\t\r\n]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v);
      return (bom ? '\uFEFF' : '') + [header, ...rows].map((r) => r.map(cell).join(delimiter)).join(newline) + newline;
    });

const body = (header: fc.Arbitrary<string[]>) =>
  fc.oneof(
    { weight: 4, arbitrary: csvText(header).map((text) => Buffer.from(text)) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 400 }).map((bytes) => Buffer.from(bytes)) },
  );

for (const kind of ['products', 'orders'] as const) {
  test.serial(`random CSV bytes at POST /${kind}/import: never a 500, nothing half-written`, async (t) => {
    const seen = new Set<number>();
    await fc.assert(
      fc.asyncProperty(
        body(kind === 'products' ? productHeader : orderHeader),
        fc.constantFrom('', '?dry_run=1', '?on_error=abort', '?on_error=skip', '?dry_run=1&on_error=abort'),
        fc.constantFrom('text/csv', 'multipart'),
        async (bytes, query, as) => {
          const before = await fingerprint();
          let status: number;
          let text: string;
          if (as === 'multipart') {
            const form = new FormData();
            form.append('file', new Blob([new Uint8Array(bytes)]), 'random.csv');
            const res = await fetch(`${app.url}/api/v1/${kind}/import${query}`, { method: 'POST', body: form, headers: { cookie: [...owner.client.cookies].map(([k, v]) => `${k}=${v}`).join('; ') } });
            status = res.status;
            text = await res.text();
          } else {
            const res = await owner.client.request('POST', `/api/v1/${kind}/import${query}`, { raw: bytes as unknown as string, contentType: 'text/csv' });
            status = res.status;
            text = res.text;
          }
          seen.add(status);
          const answer = JSON.parse(text);
          if (status === 200) {
            const r = answer.data.import;
            t.true(Number.isInteger(r.rows) && r.failed <= r.rows, text);
            if (kind === 'products') t.is(r.created + r.updated + r.unchanged + r.failed, r.rows, text);
            t.true(r.errors.every((e: any) => Number.isInteger(e.row) && e.row >= 2 && typeof e.field === 'string' && typeof e.message === 'string'), text);
            if (query.includes('abort')) t.is(r.failed, 0, text);
          } else {
            t.true(status === 422 || status === 400 || status === 413, `status ${status}: ${text}`);
            t.is(typeof answer.error, 'string');
          }
          if (status !== 200 || query.includes('dry_run')) t.is(await fingerprint(), before, `wrote something: ${status} ${text}`);
          t.is(await ordersThatDoNotAddUp(), 0);
        },
      ),
      { numRuns: Number(process.env.FC_RUNS ?? 60), seed: process.env.FC_SEED ? Number(process.env.FC_SEED) : undefined },
    );
    t.true(seen.has(200) && seen.has(422), `answers seen: ${[...seen].join(', ')}`);
  });
}
