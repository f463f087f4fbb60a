import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import test from 'ava';
import { uniqueEmail } from '../helpers/app.js';
import { useOwnerApp } from '../helpers/fixture.js';
import { inviteMember, type Member } from '../helpers/members.js';
import { ok } from '../helpers/client.js';
import { postForm } from '../helpers/pages.js';

// The workspace profile (seller details, defaults, logo) and the quote's PDF: on the public page, in the API, in the mail.
const { app, smtp, owner } = useOwnerApp(test, { workspace: 'Docs <i>Co</i>', smtp: true });
let mia: Member;

const poppler = spawnSync('pdftotext', ['-v']).status === 0;
// Debian's poppler-utils reads the PDFs (.ci/run installs it); without it those tests are skipped, saying so.
const withPoppler = poppler ? test.serial : test.serial.skip;

test.before(async () => {
  mia = await inviteMember(app, smtp, owner);
});

const seller = {
  legal_name: 'Docs Trading <b>GmbH</b>',
  address: 'Hauptstraße 1\n10115 Berlin\nGermany',
  tax_number: 'DE123456789',
  email: 'sales@docs.example',
  phone: '+49 30 1234567',
  website: 'https://docs.example',
  default_terms: 'Payment within 30 days <script>x</script>',
};

/** A real PNG: 2×2 RGB pixels. */
function tinyPng(): Buffer {
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (buf: Buffer) => {
    let c = 0xffffffff;
    for (const b of buf) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const out = Buffer.alloc(8 + data.length + 4);
    out.writeUInt32BE(data.length, 0);
    body.copy(out, 4);
    out.writeUInt32BE(crc(body), 8 + data.length);
    return out;
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(2, 0);
  ihdr.writeUInt32BE(2, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // RGB
  const raw = Buffer.from([0, 31, 95, 214, 255, 255, 255, 0, 29, 122, 70, 179, 38, 30]);
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr), chunk('IDAT', zlib.deflateSync(raw)), chunk('IEND', Buffer.alloc(0))]);
}

/** A raw request with the owner's (or a given) session cookie; the body as bytes. */
async function fetchBytes(url: string, init: RequestInit & { cookies?: Map<string, string> } = {}) {
  const cookies = init.cookies ?? owner.client.cookies;
  const headers = new Headers(init.headers);
  if (cookies.size) headers.set('cookie', [...cookies].map(([k, v]) => `${k}=${v}`).join('; '));
  const res = await fetch(app.client().baseUrl + url, { ...init, headers, redirect: 'manual' });
  return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) };
}

function uploadLogo(bytes: Buffer, name: string, type: string, cookies = owner.client.cookies) {
  const form = new FormData();
  form.set('logo', new Blob([new Uint8Array(bytes)], { type }), name);
  return fetchBytes('/api/v1/workspace/profile/logo', { method: 'PUT', body: form, cookies });
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'quote-pdf-'));
test.after.always(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** pdftotext's text of the file (pages `first`..`last` when given), and pdfinfo's report and warnings. */
function readPdf(pdf: Buffer, name: string, pages?: [number, number]) {
  const file = path.join(tmp, `${name}.pdf`);
  fs.writeFileSync(file, pdf);
  const range = pages ? ['-f', String(pages[0]), '-l', String(pages[1])] : [];
  const text = execFileSync('pdftotext', [...range, file, '-'], { encoding: 'utf8' });
  const info = spawnSync('pdfinfo', [file], { encoding: 'utf8' });
  return { file, text, info: info.stdout, warnings: info.stderr, pages: Number(/Pages:\s+(\d+)/.exec(info.stdout)?.[1]) };
}

async function createQuote(lines: { description: string; sku?: string; quantity: number; price: string }[], extra: Record<string, unknown> = {}) {
  const data = await ok(owner.client.post('/api/v1/quotes', { customer: { email: uniqueEmail('buyer'), name: 'Σοφία Иванова' }, lines, notes: 'Deliver <b>fast</b>', ...extra }), 201);
  return data.quote;
}

async function sendQuote(id: number) {
  return ok(owner.client.post(`/api/v1/quotes/${id}/send`, { notify: false }));
}

test.serial('an unset profile: every field null, and the page looks as before (no seller card, no terms)', async (t) => {
  const { profile } = await ok(owner.client.get('/api/v1/workspace/profile'));
  t.like(profile, { legal_name: null, address: null, tax_number: null, default_terms: null, default_validity_days: null, default_currency: null, time_zone: null, logo: null });
  const quote = await createQuote([{ description: 'Plain', quantity: 1, price: '1.00' }]);
  t.is(quote.valid_until, null);
  t.is(quote.currency, 'USD');
  const { url } = await sendQuote(quote.id);
  const page = await app.client().get(new URL(url).pathname);
  t.is(page.status, 200);
  t.false(page.text.includes('class="card seller"'));
  t.false(page.text.includes('aria-label="Terms"'));
  t.true(page.text.includes(`href="${new URL(url).pathname}.pdf">Download PDF</a>`));
});

test.serial('profile writes are the owner\'s: a member gets 403 and changes nothing; bad input is 422 naming the field', async (t) => {
  for (const method of ['patch', 'put'] as const) {
    const res = await mia.client[method]('/api/v1/workspace/profile', { legal_name: 'Mine' });
    t.is(res.status, 403, method);
  }
  t.is((await uploadLogo(tinyPng(), 'logo.png', 'image/png', mia.client.cookies)).status, 403);
  t.is((await mia.client.delete('/api/v1/workspace/profile/logo')).status, 403);
  t.is((await postForm(mia.client, '/app/settings/profile', { legal_name: 'Mine' })).status, 403);
  t.is((await ok(mia.client.get('/api/v1/workspace/profile'))).profile.legal_name, null, 'a member reads the profile');
  for (const [field, value] of [['default_validity_days', 0], ['default_currency', 'EURO'], ['email', 'not-mail'], ['time_zone', 'Mars/Base'], ['website', 'not a site']] as const) {
    const res = await owner.client.patch('/api/v1/workspace/profile', { [field]: value });
    t.is(res.status, 422, field);
    t.regex(res.body.error, new RegExp(field));
  }
});

test.serial('the owner sets the profile; new quotes take its validity and currency; the page shows it escaped', async (t) => {
  const { profile } = await ok(owner.client.patch('/api/v1/workspace/profile', { ...seller, default_validity_days: 30, default_currency: 'eur', time_zone: 'Europe/Berlin' }));
  t.like(profile, { ...seller, default_validity_days: 30, default_currency: 'EUR', time_zone: 'Europe/Berlin' });
  t.is((await ok(owner.client.get('/api/v1/workspace'))).workspace.time_zone, 'Europe/Berlin');
  // PUT is a partial update too: the other fields are kept.
  t.like((await ok(owner.client.put('/api/v1/workspace/profile', { phone: '+49 30 7654321' }))).profile, { phone: '+49 30 7654321', tax_number: seller.tax_number });
  await ok(owner.client.patch('/api/v1/workspace/profile', { phone: seller.phone }));

  const quote = await createQuote([{ description: 'Box', quantity: 1, price: '2.00' }]);
  t.is(quote.currency, 'EUR');
  const expected = new Date(Date.now() + 30 * 86_400_000).toISOString().slice(0, 10);
  const dayBefore = new Date(Date.now() + 29 * 86_400_000).toISOString().slice(0, 10);
  t.true([expected, dayBefore].includes(quote.valid_until), quote.valid_until);
  const given = await createQuote([{ description: 'Box', quantity: 1, price: '2.00' }], { valid_until: '2031-01-01', currency: 'GBP' });
  t.like(given, { valid_until: '2031-01-01', currency: 'GBP' });

  const { url } = await sendQuote(quote.id);
  const page = await app.client().get(new URL(url).pathname);
  t.true(page.text.includes('class="card seller"'));
  t.true(page.text.includes('Docs Trading &lt;b&gt;GmbH&lt;/b&gt;'));
  t.false(page.text.includes('<b>GmbH</b>'));
  t.true(page.text.includes('Hauptstraße 1\n10115 Berlin\nGermany'));
  t.true(page.text.includes('Tax number: DE123456789'));
  t.true(page.text.includes('sales@docs.example') && page.text.includes('https://docs.example'));
  t.true(page.text.includes('Payment within 30 days &lt;script&gt;x&lt;/script&gt;'));
  t.false(page.text.includes('<script>'));
});

test.serial('the logo: PNG or JPEG by its bytes; a .png name on other bytes, an SVG, a damaged or too large file are 422', async (t) => {
  const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>');
  for (const [bytes, name, type] of [
    [Buffer.from('this is not an image at all, only text'), 'logo.png', 'image/png'],
    [svg, 'logo.svg', 'image/svg+xml'],
    [svg, 'logo.png', 'image/png'],
    [Buffer.concat([tinyPng().subarray(0, 30), Buffer.alloc(40)]), 'broken.png', 'image/png'],
    [Buffer.alloc(600 * 1024, 1), 'big.png', 'image/png'],
  ] as const) {
    const res = await uploadLogo(bytes, name, type);
    t.is(res.status, 422, name);
    t.regex(JSON.parse(res.bytes.toString()).error, /logo/);
  }
  const raw = await fetchBytes('/api/v1/workspace/profile/logo', { method: 'PUT', body: svg, headers: { 'content-type': 'image/png' } });
  t.is(raw.status, 422, 'a raw SVG declared image/png');
  t.is((await ok(owner.client.get('/api/v1/workspace/profile'))).profile.logo, null);

  const png = tinyPng();
  const put = await uploadLogo(png, 'whatever.bin', 'application/octet-stream');
  t.is(put.status, 200);
  t.like(JSON.parse(put.bytes.toString()).data.profile.logo, { type: 'image/png', bytes: png.length });
  const got = await fetchBytes('/api/v1/workspace/profile/logo');
  t.is(got.headers.get('content-type'), 'image/png');
  t.true(got.bytes.equals(png));
  // The raw body works too.
  t.is((await fetchBytes('/api/v1/workspace/profile/logo', { method: 'PUT', body: new Uint8Array(png), headers: { 'content-type': 'image/png' } })).status, 200);
});

withPoppler('the PDF carries the seller, the logo, the buyer, number, dates, every line, totals, notes, terms and status; markup as plain text', async (t) => {
  const quote = await createQuote(
    [
      { description: 'Ελληνικό τσάι (Greek tea)', sku: 'GR-1', quantity: 2, price: '1234.50' },
      { description: 'Русский мёд — Russian honey', sku: 'RU-1', quantity: 1, price: '99.99' },
      { description: 'Signs ₹ € £ ¥ <b>bold</b>', quantity: 3, price: '10.00' },
    ],
    { tax_rate: '20', discount_amount: '5.00' },
  );
  const { url } = await sendQuote(quote.id);
  const pub = await fetchBytes(`${new URL(url).pathname}.pdf`, { cookies: new Map() });
  t.is(pub.status, 200);
  t.is(pub.headers.get('content-type'), 'application/pdf');
  t.regex(pub.headers.get('content-disposition') ?? '', /filename="Quote-Q-\d{4}-\d+\.pdf"/);
  const api = await fetchBytes(`/api/v1/quotes/${quote.id}/pdf`);
  t.is(api.status, 200);
  t.is(api.headers.get('content-type'), 'application/pdf');

  const { text, warnings, info, file } = readPdf(pub.bytes, 'full');
  t.is(warnings, '', 'pdfinfo opens it without a warning');
  t.regex(info, /Pages:\s+1/);
  for (const expected of [
    quote.quote_number, 'Docs Trading <b>GmbH</b>', 'Hauptstraße 1', '10115 Berlin', 'Tax number: DE123456789', 'sales@docs.example', '+49 30 1234567',
    'https://docs.example', 'Σοφία Иванова', 'Ελληνικό τσάι (Greek tea)', 'Русский мёд — Russian honey', 'Signs ₹ € £ ¥ <b>bold</b>', 'SKU GR-1',
    '2,469.00', '99.99', '30.00', 'EUR 2,598.99', 'EUR 5.00', 'Tax (20%)', 'EUR 518.80', 'EUR 3,112.79', 'Deliver <b>fast</b>',
    'Payment within 30 days <script>x</script>', 'Status: Awaiting response', 'Page 1 of 1',
  ]) {
    t.true(text.includes(expected), `${expected} in:\n${text}`);
  }
  const shots = path.resolve('test-results');
  fs.mkdirSync(shots, { recursive: true });
  execFileSync('pdftoppm', ['-png', '-r', '80', '-f', '1', '-l', '1', '-singlefile', file, path.join(shots, 'quote-pdf-page-1')]);
  t.true(fs.statSync(path.join(shots, 'quote-pdf-page-1.png')).size > 1000, 'test-results/quote-pdf-page-1.png');
  // The logo is drawn: the page-1 picture holds the logo's blue (31, 95, 214).
  const images = execFileSync('pdfimages', ['-list', file], { encoding: 'utf8' });
  t.regex(images, /image\s+2\s+2\s+rgb/, images);
});

withPoppler('a 200-line quote flows onto numbered pages, each with the table header', async (t) => {
  const lines = Array.from({ length: 200 }, (_, i) => ({ description: `Item number ${i + 1} of the long quote`, sku: `LONG-${i + 1}`, quantity: 1, price: '1.00' }));
  const quote = await createQuote(lines);
  const pdf = await fetchBytes(`/api/v1/quotes/${quote.id}/pdf`);
  t.is(pdf.status, 200);
  const whole = readPdf(pdf.bytes, 'long');
  t.is(whole.warnings, '');
  t.true(whole.pages >= 3, `${whole.pages} pages`);
  for (let i = 1; i <= 200; i++) t.true(whole.text.includes(`Item number ${i} of the long quote`), `line ${i}`);
  t.true(whole.text.includes('EUR 200.00'));
  for (let page = 1; page <= whole.pages; page++) {
    const { text } = readPdf(pdf.bytes, `long-${page}`, [page, page]);
    t.true(text.includes(`Page ${page} of ${whole.pages}`), `page ${page} is numbered`);
    if (page < whole.pages) t.true(text.includes('ITEM') && text.includes('QUANTITY') && text.includes('TOTAL (EUR)'), `page ${page} repeats the header`);
  }
});

test.serial('the PDF: a draft has none on the public path; a member sees it as GET /quotes/{id} allows', async (t) => {
  const draft = await createQuote([{ description: 'Draft', quantity: 1, price: '1.00' }]);
  t.is((await fetchBytes(`/q/${draft.public_token}.pdf`, { cookies: new Map() })).status, 404);
  t.is((await fetchBytes('/q/not-a-real-token-at-all.pdf', { cookies: new Map() })).status, 404);
  t.is((await fetchBytes(`/api/v1/quotes/${draft.id}/pdf`, { cookies: new Map() })).status, 401);
  t.is((await fetchBytes('/api/v1/quotes/999999/pdf')).status, 404);

  const channel = (await ok(owner.client.post('/api/v1/channels', { name: 'Hidden', currency: 'EUR' }), 201)).channel;
  const hidden = await createQuote([{ description: 'Hidden', quantity: 1, price: '1.00' }], { channel_id: channel.id });
  const open = await createQuote([{ description: 'Open', quantity: 1, price: '1.00' }]);
  const asMia = (id: number) => fetchBytes(`/api/v1/quotes/${id}/pdf`, { cookies: mia.client.cookies });
  t.is((await asMia(open.id)).status, 200);
  const read = (await mia.client.get(`/api/v1/quotes/${hidden.id}`)).status;
  t.not(read, 200);
  t.is((await asMia(hidden.id)).status, read, 'the same answer as GET /quotes/{id}');
});

test.serial('the quote mail names the seller and attaches the PDF', async (t) => {
  const email = uniqueEmail('mailed');
  const quote = (await ok(owner.client.post('/api/v1/quotes', { customer: { email, name: 'Mailed' }, lines: [{ description: 'Mailed item', quantity: 1, price: '4.00' }] }), 201)).quote;
  await ok(owner.client.post(`/api/v1/quotes/${quote.id}/send`, {}));
  const mail = await smtp.waitFor(email);
  t.regex(mail.text, /Subject: Quote Q-\d{4}-\d+ from Docs Trading <b>GmbH<\/b>/);
  t.true(mail.text.includes('Tax number: DE123456789'));
  t.true(mail.text.includes('Payment within 30 days'));
  t.regex(mail.text, /Content-Type: application\/pdf; name=Quote-Q-\d{4}-\d+\.pdf/);
  t.regex(mail.text, /Content-Disposition: attachment; filename=Quote-Q-\d{4}-\d+\.pdf/);
});

test.serial('the settings page edits the profile and the logo; the quote page links the PDF and shows the logo', async (t) => {
  const page = await owner.client.get('/app/settings');
  t.is(page.status, 200);
  t.true(page.text.includes('value="Docs Trading &lt;b&gt;GmbH&lt;/b&gt;"'));
  t.true(page.text.includes('src="/api/v1/workspace/profile/logo?v='));
  const saved = await postForm(owner.client, '/app/settings/profile', { legal_name: 'Docs Ltd', default_validity_days: '14', default_currency: 'inr' });
  t.is(saved.status, 303);
  t.like((await ok(owner.client.get('/api/v1/workspace/profile'))).profile, { legal_name: 'Docs Ltd', default_validity_days: 14, default_currency: 'INR', tax_number: seller.tax_number });
  const bad = await postForm(owner.client, '/app/settings/profile', { legal_name: 'Kept <i>input</i>', default_validity_days: 'soon' });
  t.is(bad.status, 422);
  t.true(bad.text.includes('value="Kept &lt;i&gt;input&lt;/i&gt;"'));

  const form = new FormData();
  form.set('logo', new Blob([new TextEncoder().encode('<svg xmlns="http://www.w3.org/2000/svg"/>')], { type: 'image/png' }), 'logo.png');
  const refused = await fetchBytes('/app/settings/logo', { method: 'POST', body: form, headers: { origin: app.client().baseUrl } });
  t.is(refused.status, 422);
  t.regex(refused.bytes.toString(), /only PNG or JPEG/);

  const quote = await createQuote([{ description: 'Logo', quantity: 1, price: '1.00' }]);
  t.is(quote.currency, 'INR');
  const app_ = await owner.client.get(`/app/quotes/${quote.id}`);
  t.true(app_.text.includes(`href="/api/v1/quotes/${quote.id}/pdf">Download PDF</a>`));
  const { url } = await sendQuote(quote.id);
  const pub = await app.client().get(new URL(url).pathname);
  t.regex(pub.text, new RegExp(`<img class="logo" src="/q/${quote.public_token}/logo\\?v=\\d+" alt="Docs Ltd">`));
  t.regex(pub.headers.get('content-security-policy') ?? '', /img-src 'self'/);
  const logo = await fetchBytes(`/q/${quote.public_token}/logo`, { cookies: new Map() });
  t.is(logo.status, 200);
  t.is(logo.headers.get('content-type'), 'image/png');

  const removed = await postForm(owner.client, '/app/settings/logo/remove', {});
  t.is(removed.status, 303);
  t.is((await fetchBytes(`/q/${quote.public_token}/logo`, { cookies: new Map() })).status, 404);
});

/** RFC 8785 canonical JSON for objects, arrays, strings and null, written apart from the service. */
function canonical(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
}

withPoppler("an acceptance covers the profile's terms, and the PDF carries its record; a decline's record likewise", async (t) => {
  const terms = 'Payment within 14 days.';
  await ok(owner.client.patch('/api/v1/workspace/profile', { default_terms: terms }));
  const quote = await createQuote([{ description: 'Signed', quantity: 2, price: '5.00' }]);
  await sendQuote(quote.id);
  const accepted = await app.client().request('POST', `/q/${quote.public_token}/accept`, { form: { name: 'Ada Accepter', agree: 'yes' } });
  t.is(accepted.status, 302);
  const read = await ok(owner.client.get(`/api/v1/quotes/${quote.id}`));
  const q = read.quote;
  const content = {
    quote_number: q.quote_number, currency: q.currency,
    lines: read.lines.map((l: any) => ({ sku: l.sku, description: l.description, quantity: l.quantity, price: l.price, line_total: l.line_total })),
    subtotal: q.subtotal, discount_amount: q.discount_amount, tax_rate: q.tax_rate, tax_amount: q.tax_amount, total: q.total,
    valid_until: q.valid_until, notes: q.notes, terms,
  };
  t.is(q.acceptance.content_sha256, createHash('sha256').update(canonical(content), 'utf8').digest('hex'));

  const pdf = await fetchBytes(`/q/${quote.public_token}.pdf`, { cookies: new Map() });
  t.is(pdf.status, 200);
  const { text } = readPdf(pdf.bytes, 'accepted');
  t.true(text.includes('Record of the acceptance'), text);
  t.true(text.includes('Name: Ada Accepter'), text);
  t.true(text.replace(/\s+/g, '').includes(q.acceptance.content_sha256), text);

  const other = await createQuote([{ description: 'Refused', quantity: 1, price: '3.00' }]);
  await sendQuote(other.id);
  const declined = await app.client().request('POST', `/q/${other.public_token}/decline`, { form: { name: 'Dan Decliner', reason: 'Too dear' } });
  t.is(declined.status, 302);
  const declinedText = readPdf((await fetchBytes(`/api/v1/quotes/${other.id}/pdf`)).bytes, 'declined').text;
  t.true(declinedText.includes('Record of the decline'), declinedText);
  t.true(declinedText.includes('Reason: Too dear'), declinedText);
});
