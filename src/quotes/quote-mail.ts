import type { Access } from '../access.js';
import type { Db } from '../db/database.js';
import type { Mail } from '../mail/mailer.js';
import { renderMail } from '../templates.js';
import { sellerOf, type Seller } from '../workspaces/profile.js';
import { longDateText } from '../dates.js';
import { pdfFileName, quotePdfFor } from './pdf.js';
import type { QuoteJson } from './service.js';

/** The seller's details under a quote mail: the profile's name, address and contacts; empty when unset. */
function sellerLines(seller: Seller): string {
  const lines = [
    ...(seller.legal_name ? [seller.legal_name] : []),
    ...(seller.address ? seller.address.split(/\r?\n/) : []),
    ...(seller.tax_number ? [`Tax number: ${seller.tax_number}`] : []),
    ...[seller.email, seller.phone, seller.website].filter((v): v is string => Boolean(v)),
  ];
  return lines.length ? `\n\n--\n${lines.join('\n')}` : '';
}

/**
 * A mail to a quote's customer (the quote sent, or a reminder before it expires): the link to its page, the seller's
 * details and terms from the profile, and the quote as a PDF attached.
 */
export async function quoteMail(db: Db, access: Access, template: 'quote-sent' | 'quote-reminder', quote: QuoteJson, link: string): Promise<Mail> {
  const [seller, pdf] = await Promise.all([sellerOf(db, access), quotePdfFor(db, access, quote)]);
  const validUntil = quote.valid_until ? longDateText(String(quote.valid_until)) : '';
  return {
    to: String(quote.customer_email),
    attachments: [{ filename: pdfFileName(quote), content: pdf, contentType: 'application/pdf' }],
    ...renderMail(template, {
      quote_number: quote.quote_number,
      workspace: seller.legal_name ?? seller.name,
      attached: `\n\nThe quote is attached as a PDF (${pdfFileName(quote)}).`,
      terms: seller.terms ? `\n\nTerms:\n${seller.terms}` : '',
      seller: sellerLines(seller),
      name: String(quote.customer_name ?? quote.customer_email),
      total: String(quote.total),
      currency: String(quote.currency),
      link,
      valid_until: validUntil,
      validity: validUntil ? `\n\nThe quote is valid until ${validUntil}.` : '',
    }),
  };
}
