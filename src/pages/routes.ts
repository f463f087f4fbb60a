import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import Router from '@koa/router';
import type { Context, Next } from 'koa';
import type { AppDeps } from '../http/deps.js';
import type { Db } from '../db/database.js';
import { isDatabaseUnavailable } from '../errors.js';
import { errorFields, log } from '../log.js';
import { lockReason, type Workspace } from '../workspaces/model.js';
import { linesOf, quoteById, quoteJson, recordActivity, transition, type LineJson, type QuoteJson } from '../quotes/service.js';
import type { QuoteStatus } from '../quotes/schema.js';
import { paymentsConfigured } from '../payments/stripe.js';

// ---------------------------------------------------------------------------------------------
// HTML: one escaping function and a tiny {{placeholder}} renderer.
// ---------------------------------------------------------------------------------------------

const entities: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Escapes text for HTML element content and quoted attribute values. */
export function escapeHtml(value: unknown): string {
  return String(value ?? '').replace(/[&<>"']/g, (c) => entities[c]);
}

/** Markup produced by the renderer from a template: the one kind of value inserted without escaping. */
export class Html {
  constructor(readonly html: string) {}
}

export type TemplateValue = string | number | null | undefined | Html | Html[];

/**
 * Replaces every `{{name}}` in `template` in one pass (inserted values are never scanned again):
 * text is escaped, `Html` from another render is inserted as it is. A placeholder without a value
 * is a programming error and throws, so a typo cannot silently render an empty field.
 */
export function renderTemplate(template: string, values: Record<string, TemplateValue>): Html {
  return new Html(
    template.replace(/\{\{\s*(\w+)\s*\}\}/g, (_, name: string) => {
      if (!Object.hasOwn(values, name)) throw new Error(`template placeholder {{${name}}} has no value`);
      const value = values[name];
      if (value instanceof Html) return value.html;
      if (Array.isArray(value)) return value.map((part) => part.html).join('');
      return escapeHtml(value);
    }),
  );
}

const templateFile = fileURLToPath(new URL('../../../templates/quote-page.html', import.meta.url));

interface PageTemplates {
  parts: Map<string, string>;
  /** CSP source for the one inline stylesheet. */
  styleHash: string;
}

let loaded: PageTemplates | undefined;

/** templates/quote-page.html, split at its `<!-- part:NAME -->` markers; read once. */
function templates(): PageTemplates {
  if (loaded) return loaded;
  const text = fs.readFileSync(templateFile, 'utf8');
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

function part(name: string, values: Record<string, TemplateValue> = {}): Html {
  const template = templates().parts.get(name);
  if (template === undefined) throw new Error(`quote-page.html has no part "${name}"`);
  return renderTemplate(template, values);
}

// ---------------------------------------------------------------------------------------------
// Formatting
// ---------------------------------------------------------------------------------------------

/** `1234.50` → `1,234.50`: grouping on the decimal string itself, never through a float. */
function groupDigits(amount: string): string {
  const [whole, fraction] = amount.split('.');
  const grouped = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return fraction === undefined ? grouped : `${grouped}.${fraction}`;
}

const money = (currency: string, amount: unknown) => `${currency} ${groupDigits(String(amount ?? '0.00'))}`;
const isZero = (amount: unknown) => /^0*(\.0*)?$/.test(String(amount ?? '0'));

const longDate = new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'long', year: 'numeric', timeZone: 'UTC' });

/** `2030-01-31` or an ISO timestamp → `31 January 2030` (UTC). */
function formatDate(value: unknown): string {
  if (typeof value !== 'string' || !value) return '';
  const date = new Date(/^\d{4}-\d{2}-\d{2}$/.test(value) ? `${value}T00:00:00Z` : value);
  return Number.isNaN(date.getTime()) ? value : longDate.format(date);
}

const statusLabels: Record<QuoteStatus, string> = {
  draft: 'Draft',
  sent: 'Awaiting your response',
  accepted: 'Accepted',
  declined: 'Declined',
  cancelled: 'Cancelled',
  paid: 'Paid',
};

// ---------------------------------------------------------------------------------------------
// Pages
// ---------------------------------------------------------------------------------------------

/** Tokens are 24 random bytes in base64url; anything else is not looked up. */
const TOKEN = /^[A-Za-z0-9_-]{16,128}$/;

interface PageQuote {
  quote: QuoteJson;
  workspace: Pick<Workspace, 'id' | 'name' | 'status' | 'trial_ends_at'>;
}

/** The quote a token names, with its workspace; drafts are not public yet and count as unknown. */
async function quoteByToken(db: Db, token: string): Promise<PageQuote | null> {
  if (!TOKEN.test(token)) return null;
  const row = await db('quotes as q')
    .join('workspaces as w', 'w.id', 'q.workspace_id')
    .where('q.public_token', token)
    .first(db.raw(`${quoteJson()} as json`), 'w.id as workspace_id', 'w.name as workspace_name', 'w.status as workspace_status', 'w.trial_ends_at');
  if (!row || row.json.status === 'draft') return null;
  return {
    quote: row.json,
    workspace: { id: row.workspace_id, name: row.workspace_name, status: row.workspace_status, trial_ends_at: row.trial_ends_at },
  };
}

function isLocked(workspace: PageQuote['workspace']): boolean {
  return lockReason(workspace as Workspace) !== null;
}

/** The first view of a sent quote: viewed_at and one `viewed` activity, exactly once even when views race. */
async function recordFirstView(db: Db, { quote, workspace }: PageQuote): Promise<void> {
  if (quote.status !== 'sent' || quote.viewed_at) return;
  await db.transaction(async (trx) => {
    // Under concurrent first views the row lock serialises the updates and PostgreSQL re-checks the
    // condition for the later ones, which then find viewed_at set and update nothing.
    const updated = await trx('quotes')
      .where({ id: quote.id, workspace_id: workspace.id, status: 'sent' })
      .whereNull('viewed_at')
      .update({ viewed_at: trx.fn.now() })
      .returning('id');
    if (updated.length === 1) await recordActivity(trx, workspace.id, quote.id, 'viewed', 'customer', `Quote ${quote.quote_number} viewed by the customer.`);
  });
}

function stateOf(quote: QuoteJson, workspace: string, token: string, payable: boolean): Html {
  const total = money(String(quote.currency), quote.total);
  switch (quote.status) {
    case 'sent':
      return part('state-sent', { token, workspace });
    case 'accepted':
      return part('state-accepted', { date: formatDate(quote.accepted_at), pay: payable ? part('pay', { token, total }) : null });
    case 'declined':
      return part('state-declined', { date: formatDate(quote.declined_at) });
    case 'cancelled':
      return part('state-cancelled', { workspace, date: formatDate(quote.cancelled_at) });
    case 'paid':
      return part('state-paid', { date: formatDate(quote.paid_at) });
    default:
      return new Html('');
  }
}

function quotePage({ quote, workspace }: PageQuote, lines: LineJson[], token: string, payable: boolean): Html {
  const currency = String(quote.currency);
  const rate = String(quote.tax_rate ?? '0');
  const content = part('quote', {
    workspace: workspace.name,
    quote_number: quote.quote_number,
    status: quote.status,
    status_label: statusLabels[quote.status] ?? quote.status,
    customer_name: (quote.customer_name as string | null) ?? (quote.customer_email as string | null) ?? '—',
    customer_email: quote.customer_name && quote.customer_email ? part('customer-email', { email: quote.customer_email as string }) : null,
    valid_until: quote.valid_until ? formatDate(quote.valid_until) : 'No end date',
    currency,
    lines: lines.length
      ? lines.map((line) =>
          part('line', {
            description: (line.description as string | null) ?? (line.sku as string | null) ?? 'Item',
            sku: line.sku && line.description ? part('line-sku', { sku: line.sku as string }) : null,
            quantity: String(line.quantity),
            price: money(currency, line.price),
            line_total: money(currency, line.line_total),
          }),
        )
      : [part('no-lines')],
    subtotal: money(currency, quote.subtotal),
    discount: isZero(quote.discount_amount) ? money(currency, quote.discount_amount) : `− ${money(currency, quote.discount_amount)}`,
    tax_rate: isZero(rate) ? '' : ` (${rate}%)`,
    tax: money(currency, quote.tax_amount),
    total: money(currency, quote.total),
    notes: quote.notes ? part('notes', { notes: quote.notes as string }) : null,
    state: stateOf(quote, workspace.name, token, payable),
  });
  return part('layout', { title: `Quote ${quote.quote_number} from ${workspace.name}`, content });
}

function messagePage(title: string, heading: string, text: string): Html {
  return part('layout', { title, content: part('message', { heading, text }) });
}

/** The token is the only credential: nothing is cached, leaked through Referer or framed; no script may run. */
function securityHeaders(ctx: Context, formTargets: string[]): void {
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
      // Browsers check form-action on the redirect after a submit too: the Pay form ends at the checkout page.
      `form-action ${["'self'", ...formTargets].join(' ')}`,
      "frame-ancestors 'none'",
      "base-uri 'none'",
    ].join('; '),
  );
}

function sendHtml(ctx: Context, status: number, html: Html, formTargets: string[]): void {
  securityHeaders(ctx, formTargets);
  ctx.status = status;
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = html.html;
}

const notFoundPage = () => messagePage('Quote not found', 'Quote not found', 'This link does not lead to a quote. Please check that you copied the whole link, or ask the sender for a new one.');

/**
 * HTML pages outside the JSON API: the public quote page /q/{token}, where the token in the URL is the
 * only credential. GET shows the quote (and records the first view of a sent quote); POST .../accept and
 * .../decline answer the quote as the customer and redirect (302) back to the page, whatever the outcome.
 */
export function pageRouter(deps: AppDeps): Router {
  const { db, config } = deps;
  const router = new Router();
  const payable = paymentsConfigured(config);
  // Where a Pay submit may end up after /q/{token}/pay redirects.
  const formTargets = payable ? ['https://checkout.stripe.com', ...(config.STRIPE_API_BASE ? [new URL(config.STRIPE_API_BASE).origin] : [])] : [];

  /** Page errors are answered as an HTML page, not the API's JSON. */
  const htmlErrors = async (ctx: Context, next: Next) => {
    try {
      await next();
    } catch (err) {
      const unavailable = isDatabaseUnavailable(err);
      log.error(unavailable ? 'database unavailable' : 'quote page failed', { request_id: ctx.state.requestId, method: ctx.method, ...errorFields(err) });
      sendHtml(
        ctx,
        unavailable ? 503 : 500,
        messagePage('Something went wrong', 'Something went wrong', `The quote cannot be shown right now. Please try again in a moment (request ${String(ctx.state.requestId ?? '')}).`),
        formTargets,
      );
    }
  };

  router.get('/q/:token', htmlErrors, async (ctx) => {
    const token = ctx.params.token;
    const found = await quoteByToken(db, token);
    if (!found) return sendHtml(ctx, 404, notFoundPage(), []);
    if (isLocked(found.workspace)) {
      return sendHtml(ctx, 402, messagePage('Quote unavailable', 'This quote is unavailable', `${found.workspace.name} cannot take answers to quotes at the moment. Please contact them directly.`), []);
    }
    // HEAD (link checkers, mail scanners) shows the same page but is not a view.
    if (ctx.method === 'GET') await recordFirstView(db, found);
    const lines = await linesOf(db, found.workspace.id, found.quote.id);
    sendHtml(ctx, 200, quotePage(found, lines, token, payable), payable && found.quote.status === 'accepted' ? formTargets : []);
  });

  const answers: [string, QuoteStatus][] = [
    ['accept', 'accepted'],
    ['decline', 'declined'],
  ];
  for (const [action, to] of answers) {
    router.post(`/q/:token/${action}`, htmlErrors, async (ctx) => {
      const token = ctx.params.token;
      const known = await db.transaction(async (trx) => {
        if (!TOKEN.test(token)) return false;
        // The row lock orders this answer against a concurrent one and against the seller's own changes.
        const row = await trx('quotes').where({ public_token: token }).forUpdate().first('id', 'workspace_id', 'status');
        if (!row || row.status === 'draft') return false;
        if (row.status !== 'sent') return true;
        const workspace = await trx('workspaces').where({ id: row.workspace_id }).first('id', 'name', 'status', 'trial_ends_at');
        if (isLocked(workspace)) return true;
        const quote = await quoteById(trx, row.workspace_id, row.id);
        await transition(trx, row.workspace_id, quote, to, 'customer', `Quote ${quote.quote_number} ${to} by the customer on the quote page.`);
        return true;
      });
      if (!known) return sendHtml(ctx, 404, notFoundPage(), []);
      // Whatever happened (answered now, or already answered before), the page shows the current state.
      securityHeaders(ctx, []);
      ctx.redirect(`/q/${encodeURIComponent(token)}`);
    });
  }

  return router;
}
