/**
 * The quote PDF against the quote's HTML page, both rendered in this process from the same quote (no database,
 * no HTTP): a 20-line and a 200-line quote, alternated A B A B, min/median/max per render. Then RSS and heap after
 * 1,000 and 2,000 PDF renders of the 20-line quote, against before them (after a warm-up), with a GC between (node --expose-gc).
 * Run: npm run bench:pdf
 */
import { renderQuotePdf } from '../src/quotes/pdf.js';
import { quotePage } from '../src/pages/quote-page.js';
import type { Seller } from '../src/workspaces/profile.js';
import type { LineJson, QuoteJson } from '../src/quotes/service.js';

const seller: Seller = {
  name: 'Acme', legal_name: 'Acme Trading GmbH', address: 'Hauptstraße 1\n10115 Berlin\nGermany', tax_number: 'DE123456789', email: 'sales@acme.example',
  phone: '+49 30 1234567', website: 'https://acme.example', terms: 'Payment within 30 days.', time_zone: 'Europe/Berlin', logo_updated_at: null,
};

function quoteOf(n: number): { quote: QuoteJson; lines: LineJson[] } {
  const lines = Array.from({ length: n }, (_, i) => ({
    id: i + 1, quote_id: 1, variant_id: null, sku: `SKU-${i + 1}`, description: `Ελληνικά, русский, ₹ € £ ¥: line ${i + 1} with a description`, quantity: '2', price: '1234.50', line_total: '2469.00',
  })) as LineJson[];
  const total = (2469 * n).toFixed(2);
  const quote = {
    id: 1, quote_number: 'Q-2026-000042', status: 'sent', currency: 'EUR', subtotal: total, discount_amount: '0.00', tax_rate: '0', tax_amount: '0.00', total,
    customer_name: 'Σοφία Иванова', customer_email: 'sofia@example.com', notes: 'Delivery in 3 weeks.', valid_until: '2030-01-31', public_token: 'x'.repeat(32),
    sent_at: '2026-11-27T10:00:00Z', created_at: '2026-11-27T09:00:00Z', channel_id: null,
  } as unknown as QuoteJson;
  return { quote, lines };
}

const stats = (ms: number[]) => {
  const sorted = [...ms].sort((a, b) => a - b);
  return { min: sorted[0], median: sorted[Math.floor(sorted.length / 2)], max: sorted[sorted.length - 1] };
};
const fmt = (s: { min: number; median: number; max: number }) => `${s.min.toFixed(2)} / ${s.median.toFixed(2)} / ${s.max.toFixed(2)} ms`;

async function compare(n: number, rounds: number) {
  const { quote, lines } = quoteOf(n);
  const pdf: number[] = [];
  const page: number[] = [];
  let bytes = 0;
  for (let i = 0; i < 3; i++) await renderQuotePdf({ quote, lines, seller, logo: null }); // warm-up: fonts read, code compiled
  for (let i = 0; i < rounds; i++) {
    let t = performance.now();
    bytes = (await renderQuotePdf({ quote, lines, seller, logo: null })).length;
    pdf.push(performance.now() - t);
    t = performance.now();
    quotePage({ quote, workspace: { id: 1, name: 'Acme', status: 'active', trial_ends_at: null }, seller }, lines, 'x'.repeat(32), false);
    page.push(performance.now() - t);
  }
  const p = stats(pdf);
  const h = stats(page);
  console.log(`${n} lines, ${rounds} rounds: PDF ${fmt(p)} (min/median/max, ${bytes} bytes); HTML page ${fmt(h)}; PDF/HTML median ratio ${(p.median / h.median).toFixed(0)}×`);
}

async function rss(renders: number) {
  const gc = (globalThis as { gc?: () => void }).gc;
  const { quote, lines } = quoteOf(20);
  const settle = async () => {
    gc?.();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    gc?.();
    const { rss, heapUsed, external } = process.memoryUsage();
    return { rss, heapUsed: heapUsed + external };
  };
  // The warm-up fills what stays filled: the fonts' glyph caches, compiled code, the allocator's pools.
  for (let i = 0; i < 200; i++) await renderQuotePdf({ quote, lines, seller, logo: null });
  const mb = (b: number) => (b / 1024 / 1024).toFixed(1);
  const before = await settle();
  let peak = before.rss;
  // Twice: a leak grows in the second thousand too; caches filled once (the fonts' glyphs) do not.
  const after = [];
  for (let round = 0; round < 2; round++) {
    for (let i = 0; i < renders; i++) {
      await renderQuotePdf({ quote, lines, seller, logo: null });
      if (i % 50 === 0) peak = Math.max(peak, process.memoryUsage().rss);
    }
    after.push(await settle());
  }
  console.log(
    `RSS: ${mb(before.rss)} MB after warm-up, peak ${mb(peak)} MB, ${after.map((a, i) => `${mb(a.rss)} MB after ${(i + 1) * renders}`).join(', ')} renders of the 20-line PDF` +
      `; heap and buffers used ${mb(before.heapUsed)} MB → ${after.map((a) => mb(a.heapUsed)).join(' → ')} MB${gc ? '' : ' [no --expose-gc]'}`,
  );
}

await compare(20, 40);
await compare(200, 10);
await rss(1000);
