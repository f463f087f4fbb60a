import { createHash } from 'node:crypto';
import type { Context } from 'koa';
import { html, Html, renderHtml, templateText, type HtmlValue } from '../templates.js';
import { amountText, isZeroAmount } from '../money.js';
import { longDateText, timeText } from '../dates.js';
import { HttpError } from '../errors.js';
import type { QuoteStatus } from '../quotes/schema.js';
import type { PublicQuote, PageSeller } from '../quotes/public.js';
import type { LineJson, QuoteJson } from '../quotes/service.js';
import { expiredOn } from '../quotes/transitions.js';

/** The public quote page: templates/quote-page.html, split into parts and filled by the one template renderer. */


interface PageTemplates {
  parts: Map<string, string>;
  /** CSP source for the one inline stylesheet. */
  styleHash: string;
}

let loaded: PageTemplates | undefined;

/** templates/quote-page.html, split at its `<!-- part:NAME -->` markers; read once. */
function templates(): PageTemplates {
  if (loaded) return loaded;
  const text = templateText('quote-page.html');
  const parts = new Map<string, string>();
  const markers = [...text.matchAll(/<!-- part:([\w-]+) -->\n?/g)];
  markers.forEach((marker, i) => {
    const end = i + 1 < markers.length ? markers[i + 1].index : text.length;
    parts.set(marker[1], text.slice(marker.index + marker[0].length, end));
  });
  const styles = [...(parts.get('layout') ?? '').matchAll(/<style>([\s\S]*?)<\/style>/g)];
  if (styles.length !== 1 || styles[0][1].includes('{{')) throw new Error('quote-page.html: the layout needs exactly one <style> block, without placeholders');
  loaded = { parts, styleHash: `'sha256-${createHash('sha256').update(styles[0][1], 'utf8').digest('base64')}'` };
  return loaded;
}

function part(name: string, values: Record<string, HtmlValue> = {}): Html {
  const template = templates().parts.get(name);
  if (template === undefined) throw new Error(`quote-page.html has no part "${name}"`);
  return renderHtml(template, values);
}

const statusLabels: Record<QuoteStatus, string> = {
  draft: 'Draft',
  sent: 'Awaiting your response',
  accepted: 'Accepted',
  declined: 'Declined',
  cancelled: 'Cancelled',
  paid: 'Paid',
};

/** Whether the page offers a Pay button: payments are configured, the quote is accepted and has not expired. */
export function offersPayment(quote: QuoteJson, payable: boolean): boolean {
  return payable && quote.status === 'accepted' && !expiredOn(quote);
}

/** A refused answer shown again: which form, what was typed, and the field at fault with its message. */
export interface AnswerAttempt {
  action: 'accept' | 'decline';
  form: Record<string, unknown>;
  error: { field: string; message: string };
}

const typed = (form: Record<string, unknown>, name: string) => (typeof form[name] === 'string' ? (form[name] as string) : '');

/** The answer forms of a sent quote, with a refused attempt's input kept and its error beside its field. */
function answerForms(token: string, workspace: string, attempt?: AnswerAttempt): Html {
  const at = (action: AnswerAttempt['action'], field: string) => attempt?.action === action && attempt.error.field === field;
  const errorOf = (action: AnswerAttempt['action'], field: string) => (at(action, field) ? part('field-error', { id: `${action}-${field}-error`, message: attempt!.error.message }) : null);
  const attrsOf = (action: AnswerAttempt['action'], field: string) => (at(action, field) ? html` aria-invalid="true" aria-describedby="${action}-${field}-error"` : null);
  const form = attempt?.form ?? {};
  const mine = (action: AnswerAttempt['action'], name: string) => (attempt?.action === action ? typed(form, name) : '');
  const agreed = attempt?.action === 'accept' && ['yes', 'on', 'true', '1'].includes(typed(form, 'agree'));
  return part('state-sent', {
    token,
    workspace,
    accept_name: mine('accept', 'name'),
    accept_name_attrs: attrsOf('accept', 'name'),
    accept_name_error: errorOf('accept', 'name'),
    agree_attrs: html`${agreed ? html` checked` : ''}${attrsOf('accept', 'agree')}`,
    agree_error: errorOf('accept', 'agree'),
    decline_open: attempt?.action === 'decline' ? html` open` : null,
    decline_name: mine('decline', 'name'),
    decline_name_attrs: attrsOf('decline', 'name'),
    decline_name_error: errorOf('decline', 'name'),
    decline_reason: mine('decline', 'reason'),
    reason_attrs: attrsOf('decline', 'reason'),
    reason_error: errorOf('decline', 'reason'),
  });
}

interface AnswerRecord {
  name: string | null;
  ip: string | null;
  accepted_at?: string;
  declined_at?: string;
  content_sha256?: string;
  reason?: string | null;
}

function acceptanceRecord(quote: QuoteJson): Html | null {
  const record = quote.acceptance as AnswerRecord | null | undefined;
  if (!record) return null;
  return part('acceptance-record', { name: record.name ?? '—', time: timeText(record.accepted_at), ip: record.ip ?? 'unknown', hash: record.content_sha256 ?? '' });
}

function declineRecord(quote: QuoteJson): Html | null {
  const record = quote.decline as AnswerRecord | null | undefined;
  if (!record) return null;
  return part('decline-record', { name: record.name ?? '—', time: timeText(record.declined_at), ip: record.ip ?? 'unknown', reason: record.reason ?? '—' });
}

function stateOf(quote: QuoteJson, workspace: string, token: string, payable: boolean, attempt?: AnswerAttempt): Html {
  const total = amountText(String(quote.currency), quote.total);
  const expired = expiredOn(quote);
  switch (quote.status) {
    case 'sent':
      // Past valid_until nothing can be answered: no buttons, and a post to accept or decline changes nothing.
      return expired ? part('state-expired', { date: longDateText(expired), workspace }) : answerForms(token, workspace, attempt);
    case 'accepted': {
      const pay = offersPayment(quote, payable) ? part('pay', { token, total }) : payable && expired ? part('expired-unpaid', { date: longDateText(expired), workspace }) : null;
      return part('state-accepted', { date: longDateText(quote.accepted_at), record: acceptanceRecord(quote), pay });
    }
    case 'declined':
      return part('state-declined', { date: longDateText(quote.declined_at), record: declineRecord(quote) });
    case 'cancelled':
      return part('state-cancelled', { workspace, date: longDateText(quote.cancelled_at), record: acceptanceRecord(quote) });
    case 'paid':
      return part('state-paid', { date: longDateText(quote.paid_at), record: acceptanceRecord(quote) });
    default:
      return new Html('');
  }
}

/**
 * The seller's card: the profile's legal name, address and contacts, and the logo. Null when the profile sets none
 * of them, so an unset profile keeps the page as it was (the workspace's name above the title).
 */
function sellerCard(seller: PageSeller | undefined, token: string): Html | null {
  if (!seller) return null;
  const details = [
    ...(seller.legal_name && seller.legal_name !== seller.name ? [seller.name] : []),
    ...(seller.address ? seller.address.split(/\r?\n/) : []),
    ...(seller.tax_number ? [`Tax number: ${seller.tax_number}`] : []),
    ...[seller.email, seller.phone, seller.website].filter((v): v is string => Boolean(v)),
  ];
  const hasLogo = seller.logo_updated_at !== null;
  if (!seller.legal_name && !details.length && !hasLogo) return null;
  const name = seller.legal_name ?? seller.name;
  return part('seller', {
    logo: hasLogo ? part('seller-logo', { token, version: String(Date.parse(seller.logo_updated_at!)), name }) : null,
    name,
    details: details.join('\n'),
  });
}

export function quotePage(
  { quote, workspace, seller }: Pick<PublicQuote, 'quote' | 'workspace'> & { seller?: PageSeller },
  lines: LineJson[],
  token: string,
  payable: boolean,
  attempt?: AnswerAttempt,
): Html {
  const currency = String(quote.currency);
  const rate = String(quote.tax_rate ?? '0');
  const expiredSent = quote.status === 'sent' && expiredOn(quote) !== null;
  const content = part('quote', {
    workspace: workspace.name,
    quote_number: quote.quote_number,
    status: expiredSent ? 'expired' : quote.status,
    status_label: expiredSent ? 'Expired' : (statusLabels[quote.status] ?? quote.status),
    customer_name: (quote.customer_name as string | null) ?? (quote.customer_email as string | null) ?? '—',
    customer_email: quote.customer_name && quote.customer_email ? part('customer-email', { email: quote.customer_email as string }) : null,
    valid_until: quote.valid_until ? `${longDateText(quote.valid_until)}${expiredOn(quote) ? ' (expired)' : ''}` : 'No end date',
    currency,
    lines: lines.length
      ? lines.map((line) =>
          part('line', {
            description: (line.description as string | null) ?? (line.sku as string | null) ?? 'Item',
            sku: line.sku && line.description ? part('line-sku', { sku: line.sku as string }) : null,
            quantity: String(line.quantity),
            price: amountText(currency, line.price),
            line_total: amountText(currency, line.line_total),
          }),
        )
      : [part('no-lines')],
    subtotal: amountText(currency, quote.subtotal),
    discount: isZeroAmount(quote.discount_amount) ? amountText(currency, quote.discount_amount) : `− ${amountText(currency, quote.discount_amount)}`,
    tax_rate: isZeroAmount(rate) ? '' : ` (${rate}%)`,
    tax: amountText(currency, quote.tax_amount),
    total: amountText(currency, quote.total),
    notes: quote.notes ? part('notes', { notes: quote.notes as string }) : null,
    seller: sellerCard(seller, token),
    terms: seller?.terms ? part('terms', { terms: seller.terms }) : null,
    token,
    state: stateOf(quote, workspace.name, token, payable, attempt),
  });
  return part('layout', { title: `Quote ${quote.quote_number} from ${workspace.name}`, content });
}

export function messagePage(title: string, heading: string, text: string): Html {
  return part('layout', { title, content: part('message', { heading, text }) });
}

/** The token is the only credential: nothing is cached, leaked through Referer or framed; no script may run. */
export function securityHeaders(ctx: Context, formTargets: string[]): void {
  ctx.set('Cache-Control', 'no-store');
  ctx.set('Referrer-Policy', 'no-referrer');
  ctx.set('X-Frame-Options', 'DENY');
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.set('X-Robots-Tag', 'noindex, nofollow');
  ctx.set(
    'Content-Security-Policy',
    [
      "default-src 'none'",
      `style-src ${templates().styleHash}`,
      "img-src 'self'", // the seller's logo, /q/{token}/logo
      // Browsers check form-action on the redirect after a submit too: the Pay form ends at the checkout page.
      `form-action ${["'self'", ...formTargets].join(' ')}`,
      "frame-ancestors 'none'",
      "base-uri 'none'",
    ].join('; '),
  );
}

export function sendHtml(ctx: Context, status: number, html: Html, formTargets: string[]): void {
  securityHeaders(ctx, formTargets);
  ctx.status = status;
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = html.html;
}

export const notFoundPage = () => messagePage('Quote not found', 'Quote not found', 'This link does not lead to a quote. Please check that you copied the whole link, or ask the sender for a new one.');


/**
 * The page that answers a public quote's 404 (an unknown token or a draft) or 402 (its workspace is locked), on every
 * route of /q/{token}; null for any other error.
 */
export function publicErrorPage(err: unknown): { status: number; html: Html } | null {
  if (!(err instanceof HttpError)) return null;
  if (err.status === 404) return { status: 404, html: notFoundPage() };
  if (err.status === 402) return { status: 402, html: messagePage('Quote unavailable', 'This quote is unavailable', `${err.message} Please contact them directly.`) };
  return null;
}
