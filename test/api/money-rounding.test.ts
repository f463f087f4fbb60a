import test from 'ava';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { useOwnerApp } from '../helpers/fixture.js';
import { format, totals, units } from '../helpers/decimal.js';

// Money arithmetic of quotes and orders against an independent BigInt computation (helpers/decimal.ts):
// random lines, with halfway cases made common, must give the same line totals, subtotal, tax and total.
const { app, owner } = useOwnerApp(test, { workspace: 'Rounding' });

const RUNS = 40;

/** Quantities up to 9999.999, often with a .5 fraction so that odd-cent prices land on a halfway cent. */
const quantity = fc.oneof(
  fc.integer({ min: 1, max: 9_999_999 }).map((u) => format(BigInt(u), 3)),
  fc.integer({ min: 0, max: 99 }).map((k) => format(BigInt(k * 1000 + 500), 3)),
  fc.constantFrom('0.001', '0.005', '0.125', '0.333', '1', '2.5'),
);
/** Prices up to 99999.99, often an odd number of cents. */
const price = fc.oneof(
  fc.integer({ min: 0, max: 9_999_999 }).map((u) => format(BigInt(u), 2)),
  fc.integer({ min: 0, max: 4_999 }).map((k) => format(BigInt(2 * k + 1), 2)),
  fc.constantFrom('0.01', '0.05', '0.99', '10.01', '1.00'),
);
const line = fc.record({ quantity, price });
/** Tax rates up to 999.9999 %, and the usual ones. */
const taxRate = fc.oneof(
  fc.integer({ min: 0, max: 9_999_999 }).map((u) => format(BigInt(u), 4)),
  fc.constantFrom('0', '5', '8.125', '12.5', '19.6', '20', '0.0001'),
);

/** The discount as a share (in thousandths) of the subtotal, so it never exceeds it. */
const discountOf = (subtotal: string, share: number) => format((units(subtotal, 2) * BigInt(share)) / 1000n, 2);

test('quotes: line totals, subtotal, discount, tax and total equal the decimal computation, on create and on adding a line', async (t) => {
  await fc.assert(
    fc.asyncProperty(fc.array(line, { minLength: 1, maxLength: 6 }), line, fc.integer({ min: 0, max: 1000 }), taxRate, async (lines, extra, share, rate) => {
      const discount = discountOf(totals(lines).subtotal, share);
      const created = await owner.client.post('/api/v1/quotes', {
        customer: { email: 'rounding@example.com' },
        discount_amount: discount,
        tax_rate: rate,
        lines: lines.map((l, i) => ({ description: `line ${i}`, ...l })),
      });
      assert.equal(created.status, 201, created.text);
      const expected = totals(lines, discount, rate);
      const { quote, lines: got } = created.body.data;
      assert.deepEqual(got.map((l: { line_total: string }) => l.line_total), expected.lineTotals);
      assert.deepEqual(pick(quote), pick(expected));

      // Adding a line recomputes through another path.
      const added = await owner.client.post(`/api/v1/quotes/${quote.id}/lines`, { description: 'extra', ...extra });
      assert.equal(added.status, 201, added.text);
      const after = totals([...lines, extra], discount, rate);
      assert.equal(added.body.data.line.line_total, after.lineTotals.at(-1));
      assert.deepEqual(pick(added.body.data.quote), pick(after));
    }),
    { numRuns: RUNS },
  );
  t.pass();
});

test('external orders: item line totals, subtotal and total equal the decimal computation', async (t) => {
  let n = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(line, { minLength: 1, maxLength: 8 }), async (items) => {
      const res = await owner.client.post(
        '/api/v1/orders/external',
        { external_id: `rounding-${++n}`, currency: 'EUR', items: items.map((item, i) => ({ description: `item ${i}`, ...item })) },
        { headers: { authorization: `Bearer ${owner.keys.secret_key}` } },
      );
      assert.equal(res.status, 201, res.text);
      const expected = totals(items);
      assert.deepEqual(res.body.data.items.map((i: { line_total: string }) => i.line_total), expected.lineTotals);
      assert.deepEqual(pick(res.body.data.order), pick(expected));
    }),
    { numRuns: RUNS },
  );
  t.pass();
});

test('the calculator rounds half-up at the cent, in both steps', (t) => {
  t.deepEqual(totals([{ quantity: '0.5', price: '0.01' }]).lineTotals, ['0.01']);
  t.deepEqual(totals([{ quantity: '0.333', price: '10.01' }]).lineTotals, ['3.33']);
  // (4.85 − 0.85) × 8.125 % = 0.325 → 0.33
  t.like(totals([{ quantity: '1', price: '4.85' }], '0.85', '8.125'), { tax_amount: '0.33', total: '4.33' });
  t.like(totals([{ quantity: '1', price: '4.84' }], '0.85', '8.125'), { tax_amount: '0.32', total: '4.31' });
});

function pick(value: { subtotal: string; discount_amount: string; tax_amount: string; total: string }) {
  const { subtotal, discount_amount, tax_amount, total } = value;
  return { subtotal, discount_amount, tax_amount, total };
}
