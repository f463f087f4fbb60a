import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as fontkit from 'fontkit';
import PDFDocument from 'pdfkit';
import type { Access } from '../access.js';
import type { Db } from '../db/database.js';
import { longDateText, timeText } from '../dates.js';
import { amountText, isZeroAmount } from '../money.js';
import { logoOf, sellerOf, type Seller } from '../workspaces/profile.js';
import type { QuoteStatus } from './schema.js';
import { linesOf, type LineJson, type QuoteJson } from './service.js';
import { expiredOn } from './transitions.js';

/**
 * A quote as a PDF (A4), drawn on the server by pdfkit with the DejaVu Sans fonts shipped in fonts/ (Latin, Greek,
 * Cyrillic and the ₹ € £ ¥ signs). Everything is text drawn as text, never markup: a field holding `<b>` prints
 * `<b>`. Lines flow onto further pages, each repeating the table's header; every page is numbered "Page n of N".
 * The work is bounded by the quote (at most 500 lines of 2,000 characters, notes and terms of 10,000 and 5,000).
 */

const fontsDir = fileURLToPath(new URL('../../../fonts/', import.meta.url));
let fonts: { regular: fontkit.Font; bold: fontkit.Font } | undefined;
/**
 * Read and parsed once per process, and shared by every document: parsing the tables was most of a render's time.
 * A document only lays text out with them and embeds the subset of glyphs it used.
 */
function parsedFonts() {
  const open = (file: string) => fontkit.create(fs.readFileSync(`${fontsDir}${file}`)) as fontkit.Font;
  return (fonts ??= { regular: open('DejaVuSans.ttf'), bold: open('DejaVuSans-Bold.ttf') });
}

/**
 * The record of the customer's answer, when the quote has one: who, when, from where, and the hash of what they
 * answered. Optional: drawn when the input or the quote (`quote.acceptance`) carries it.
 */
export interface PdfAcceptance {
  name: string | null;
  /** When it was given (ISO timestamp). */
  at?: string | null;
  accepted_at?: string | null;
  declined_at?: string | null;
  ip?: string | null;
  user_agent?: string | null;
  content_sha256?: string | null;
  reason?: string | null;
}

export interface QuotePdfInput {
  quote: QuoteJson;
  lines: LineJson[];
  seller: Seller;
  /** The logo's bytes (PNG or JPEG), or null. */
  logo: Buffer | null;
  acceptance?: PdfAcceptance | null;
}

const statusLabels: Record<QuoteStatus, string> = {
  draft: 'Draft',
  sent: 'Awaiting response',
  accepted: 'Accepted',
  declined: 'Declined',
  cancelled: 'Cancelled',
  paid: 'Paid',
};

const PAGE = { width: 595.28, height: 841.89, margin: 50 };
const FOOTER = 30;
const INK = '#1d2330';
const MUTED = '#5f6b7a';
const RULE = '#d5dae3';

/** Table columns: x and width; numbers right-aligned. */
const COLS = (() => {
  const left = PAGE.margin;
  const right = PAGE.width - PAGE.margin;
  const total = 95;
  const price = 90;
  const qty = 60;
  return {
    item: { x: left, w: right - left - total - price - qty - 12 },
    qty: { x: right - total - price - qty, w: qty },
    price: { x: right - total - price, w: price },
    total: { x: right - total, w: total },
  };
})();

/** The PDF of a quote the caller may read: its lines, its workspace's seller details and logo. */
export async function quotePdfFor(db: Db, access: Access, quote: QuoteJson): Promise<Buffer> {
  const [lines, seller, logo] = await Promise.all([linesOf(db, access, quote.id), sellerOf(db, access), logoOf(db, access)]);
  return renderQuotePdf({ quote, lines, seller, logo: logo?.bytes ?? null });
}

/** The file name a download suggests: `Quote-Q-2026-000001.pdf`. */
export const pdfFileName = (quote: QuoteJson) => `Quote-${quote.quote_number.replace(/[^\w.-]+/g, '-')}.pdf`;

export function renderQuotePdf(input: QuotePdfInput): Promise<Buffer> {
  const { quote, lines, seller } = input;
  // The quote's stored record of its answer (acceptance or decline) unless the caller gives one.
  const stored = quote as { acceptance?: PdfAcceptance | null; decline?: PdfAcceptance | null };
  const acceptance = input.acceptance ?? stored.acceptance ?? stored.decline ?? null;
  const currency = String(quote.currency);
  const zone = seller.time_zone;
  const sellerName = seller.legal_name ?? seller.name;
  const { regular, bold } = parsedFonts();
  const doc = new PDFDocument({
    // Ours from the start: the default (Helvetica) would be loaded for nothing.
    font: regular as unknown as string,
    size: 'A4',
    margins: { top: PAGE.margin, left: PAGE.margin, right: PAGE.margin, bottom: PAGE.margin + FOOTER },
    bufferPages: true,
    info: { Title: `Quote ${quote.quote_number}`, Author: sellerName, Subject: `Quote ${quote.quote_number} from ${sellerName}`, Creator: 'Quoting' },
  });
  const chunks: Buffer[] = [];
  doc.on('data', (chunk: Buffer) => chunks.push(chunk));
  const done = new Promise<Buffer>((resolve, reject) => {
    doc.on('end', () => resolve(Buffer.concat(chunks)));
    doc.on('error', reject);
  });
  // pdfkit takes a parsed font where its types say a path or bytes.
  doc.registerFont('Sans', regular as unknown as Buffer);
  doc.registerFont('Sans-Bold', bold as unknown as Buffer);

  const left = PAGE.margin;
  const width = PAGE.width - 2 * PAGE.margin;
  const bottom = () => PAGE.height - PAGE.margin - FOOTER;

  // The seller: logo on the left, details on the right.
  const top = PAGE.margin;
  let logoBottom = top;
  if (input.logo) {
    try {
      doc.image(input.logo, left, top, { fit: [140, 60] });
      logoBottom = top + 64;
    } catch {
      // A logo that cannot be drawn (checked on upload; kept from an older check) leaves its place empty.
    }
  }
  const detailsX = left + 200;
  const detailsW = width - 200;
  doc.font('Sans-Bold').fontSize(13).fillColor(INK).text(sellerName, detailsX, top, { width: detailsW, align: 'right' });
  doc.font('Sans').fontSize(9).fillColor(MUTED);
  const details = [
    ...(seller.legal_name && seller.legal_name !== seller.name ? [seller.name] : []),
    ...(seller.address ? seller.address.split(/\r?\n/) : []),
    ...(seller.tax_number ? [`Tax number: ${seller.tax_number}`] : []),
    ...(seller.email ? [seller.email] : []),
    ...(seller.phone ? [seller.phone] : []),
    ...(seller.website ? [seller.website] : []),
  ];
  for (const line of details) doc.text(line, detailsX, doc.y, { width: detailsW, align: 'right' });
  let y = Math.max(doc.y, logoBottom) + 18;

  // The quote: number, status, dates, buyer.
  const expired = quote.status === 'sent' && expiredOn(quote) !== null;
  doc.font('Sans-Bold').fontSize(20).fillColor(INK).text(`Quote ${quote.quote_number}`, left, y, { width });
  doc.font('Sans').fontSize(10).fillColor(MUTED).text(`Status: ${expired ? 'Expired' : (statusLabels[quote.status] ?? quote.status)}`, left, doc.y + 2, { width });
  y = doc.y + 12;
  const columnW = width / 3;
  const meta: [string, string][] = [
    ['Prepared for', [quote.customer_name, quote.customer_email].filter(Boolean).join('\n') || '—'],
    ['Date', longDateText(String(quote.sent_at ?? quote.created_at), zone)],
    ['Valid until', quote.valid_until ? longDateText(quote.valid_until) : 'No end date'],
  ];
  let metaBottom = y;
  meta.forEach(([label, value], i) => {
    const x = left + i * columnW;
    doc.font('Sans').fontSize(8).fillColor(MUTED).text(label.toUpperCase(), x, y, { width: columnW - 10, characterSpacing: 0.5 });
    doc.font('Sans').fontSize(10).fillColor(INK).text(value, x, doc.y + 2, { width: columnW - 10 });
    metaBottom = Math.max(metaBottom, doc.y);
  });
  y = metaBottom + 20;

  // The lines, the header repeated on each page they flow onto.
  const header = () => {
    doc.font('Sans-Bold').fontSize(8).fillColor(MUTED);
    doc.text('ITEM', COLS.item.x, y, { width: COLS.item.w, characterSpacing: 0.5 });
    doc.text('QUANTITY', COLS.qty.x, y, { width: COLS.qty.w, align: 'right', characterSpacing: 0.5 });
    doc.text(`PRICE (${currency})`, COLS.price.x, y, { width: COLS.price.w, align: 'right', characterSpacing: 0.5 });
    doc.text(`TOTAL (${currency})`, COLS.total.x, y, { width: COLS.total.w, align: 'right', characterSpacing: 0.5 });
    y += 14;
    doc.moveTo(left, y).lineTo(left + width, y).lineWidth(1).strokeColor(RULE).stroke();
    y += 6;
  };
  const newPage = () => {
    doc.addPage();
    y = PAGE.margin;
  };
  header();
  if (!lines.length) {
    doc.font('Sans').fontSize(10).fillColor(MUTED).text('This quote has no lines.', left, y, { width });
    y = doc.y + 8;
  }
  for (const line of lines) {
    const description = (line.description as string | null) ?? (line.sku as string | null) ?? 'Item';
    const sku = line.sku && line.description ? `SKU ${String(line.sku)}` : null;
    doc.font('Sans').fontSize(10);
    const descHeight = doc.heightOfString(description, { width: COLS.item.w });
    const skuHeight = sku ? doc.fontSize(8).heightOfString(sku, { width: COLS.item.w }) : 0;
    const rowHeight = descHeight + skuHeight + 8;
    if (y + rowHeight > bottom()) {
      newPage();
      header();
    }
    const rowTop = y;
    doc.font('Sans').fontSize(10).fillColor(INK).text(description, COLS.item.x, rowTop, { width: COLS.item.w });
    if (sku) doc.fontSize(8).fillColor(MUTED).text(sku, COLS.item.x, doc.y, { width: COLS.item.w });
    doc.fontSize(10).fillColor(INK);
    doc.text(String(line.quantity), COLS.qty.x, rowTop, { width: COLS.qty.w, align: 'right' });
    doc.text(amountText(currency, line.price).slice(currency.length + 1), COLS.price.x, rowTop, { width: COLS.price.w, align: 'right' });
    doc.text(amountText(currency, line.line_total).slice(currency.length + 1), COLS.total.x, rowTop, { width: COLS.total.w, align: 'right' });
    y = rowTop + rowHeight;
    doc.moveTo(left, y - 3).lineTo(left + width, y - 3).lineWidth(0.5).strokeColor(RULE).stroke();
  }

  // Totals, kept together.
  const rate = String(quote.tax_rate ?? '0');
  const totals: [string, string, boolean][] = [
    ['Subtotal', amountText(currency, quote.subtotal), false],
    ['Discount', isZeroAmount(quote.discount_amount) ? amountText(currency, quote.discount_amount) : `− ${amountText(currency, quote.discount_amount)}`, false],
    [`Tax${isZeroAmount(rate) ? '' : ` (${rate}%)`}`, amountText(currency, quote.tax_amount), false],
    ['Total', amountText(currency, quote.total), true],
  ];
  if (y + 90 > bottom()) newPage();
  y += 8;
  const labelX = left + width - 300;
  for (const [label, value, grand] of totals) {
    if (grand) {
      doc.moveTo(labelX, y).lineTo(left + width, y).lineWidth(1).strokeColor(RULE).stroke();
      y += 6;
    }
    doc.font(grand ? 'Sans-Bold' : 'Sans').fontSize(grand ? 13 : 10).fillColor(grand ? INK : MUTED).text(label, labelX, y, { width: 140 });
    doc.fillColor(INK).text(value, labelX + 140, y, { width: 160, align: 'right' });
    y = doc.y + 4;
  }
  y += 14;

  // Notes, terms, status and the record of the answer: flowing text, onto new pages as needed.
  const block = (title: string, text: string) => {
    if (y + 40 > bottom()) newPage();
    doc.font('Sans-Bold').fontSize(11).fillColor(INK).text(title, left, y, { width });
    doc.font('Sans').fontSize(10).fillColor(INK).text(text, left, doc.y + 3, { width });
    y = doc.y + 14;
  };
  if (quote.notes) block('Notes', String(quote.notes));
  if (seller.terms) block('Terms', seller.terms);
  block('Status', statusSentence(quote, sellerName, zone));
  if (acceptance) block(acceptance.declined_at ? 'Record of the decline' : 'Record of the acceptance', acceptanceText(acceptance, zone));

  // Page numbers, once the count is known.
  const { start, count } = doc.bufferedPageRange();
  for (let i = start; i < start + count; i++) {
    doc.switchToPage(i);
    const margins = doc.page.margins;
    const saved = margins.bottom;
    margins.bottom = 0; // writing inside the bottom margin must not start a new page
    doc.font('Sans').fontSize(8).fillColor(MUTED);
    doc.text(`${sellerName} · Quote ${quote.quote_number}`, left, PAGE.height - PAGE.margin - 10, { width: width - 100, lineBreak: false });
    doc.text(`Page ${i - start + 1} of ${count}`, left + width - 100, PAGE.height - PAGE.margin - 10, { width: 100, align: 'right', lineBreak: false });
    margins.bottom = saved;
  }
  doc.end();
  return done;
}

function statusSentence(quote: QuoteJson, seller: string, zone: string | null): string {
  const expired = expiredOn(quote);
  switch (quote.status) {
    case 'draft':
      return 'Draft: not sent to the customer yet.';
    case 'sent':
      return expired ? `This quote expired on ${longDateText(expired)}.` : `Sent on ${longDateText(String(quote.sent_at), zone)}; awaiting the customer's response.`;
    case 'accepted':
      return `Accepted on ${longDateText(String(quote.accepted_at), zone)}.`;
    case 'declined':
      return `Declined on ${longDateText(String(quote.declined_at), zone)}.`;
    case 'cancelled':
      return `Cancelled by ${seller} on ${longDateText(String(quote.cancelled_at), zone)}.`;
    case 'paid':
      return `Paid on ${longDateText(String(quote.paid_at), zone)}.`;
    default:
      return String(quote.status);
  }
}

function acceptanceText(a: PdfAcceptance, zone: string | null): string {
  const at = a.at ?? a.accepted_at ?? a.declined_at;
  return [
    `Name: ${a.name ?? '—'}`,
    ...(at ? [`Time: ${timeText(at, zone)}`] : []),
    ...(a.ip ? [`IP address: ${a.ip}`] : []),
    ...(a.user_agent ? [`Browser: ${a.user_agent}`] : []),
    ...(a.reason ? [`Reason: ${a.reason}`] : []),
    ...(a.content_sha256 ? [`SHA-256 of the quote as answered: ${a.content_sha256}`] : []),
  ].join('\n');
}
