import { customerAccess, type Access } from '../access.js';
import type { Db } from '../db/database.js';
import { scoped } from '../db/scoped.js';
import { NotFound, PaymentRequired } from '../errors.js';
import { lockReason } from '../workspaces/model.js';
import type { Workspace } from '../accounts.js';
import { acceptBody, declineBody, type QuoteStatus } from './schema.js';
import { linesOf, quoteJson, recordActivity, type LineJson, type QuoteJson } from './service.js';
import { expiredOn } from './transitions.js';
import { recordAnswer, type AnswerOrigin } from './answers.js';
import { parseInput } from '../schema/parse.js';
import { logoOf, sellerOf, type Seller } from '../workspaces/profile.js';
import { quotePdfFor } from './pdf.js';

export type PageSeller = Seller;

/**
 * The quote as its customer reaches it: the random token in the mailed link is the only
 * credential. The public page and payments reach the quote through here, so the token is looked
 * up, the lock checked and the customer's answer recorded the same way everywhere.
 */

/** Tokens are 24 random bytes in base64url; anything else is not looked up. */
const TOKEN = /^[A-Za-z0-9_-]{16,128}$/;

export type PageWorkspace = Pick<Workspace, 'id' | 'name' | 'status' | 'trial_ends_at'>;

export interface PublicQuote {
  quote: QuoteJson;
  workspace: PageWorkspace;
  /** The customer acting on the quote's workspace (actor `customer`). */
  access: Access;
}

/** Why the workspace of a public quote cannot take answers or payments now, or null. */
export function publicLockReason(workspace: PageWorkspace): string | null {
  return lockReason(workspace as Workspace);
}

/**
 * The quote a token names, with its workspace; drafts are not public yet and count as unknown.
 * `forUpdate` locks the quote row, ordering a customer's answer against a concurrent one and
 * against the seller's own changes.
 */
export async function quoteByToken(db: Db, token: string, options: { events: boolean; forUpdate?: boolean }): Promise<PublicQuote | null> {
  if (!TOKEN.test(token)) return null;
  const query = db('quotes as q')
    .join('workspaces as w', 'w.id', 'q.workspace_id')
    .where('q.public_token', token)
    .comment('all workspaces: a public quote is found by its token, and gives its workspace')
    .first(db.raw(`${quoteJson()} as json`), 'w.id as workspace_id', 'w.name as workspace_name', 'w.status as workspace_status', 'w.trial_ends_at');
  if (options.forUpdate) query.forUpdate('q');
  const row = await query;
  if (!row || row.json.status === 'draft') return null;
  return {
    quote: row.json,
    workspace: { id: row.workspace_id, name: row.workspace_name, status: row.workspace_status, trial_ends_at: row.trial_ends_at },
    access: customerAccess(row.workspace_id, { events: options.events }),
  };
}

/** The page's content: the quote and its lines. 404 for unknown tokens and drafts, 402 for a locked workspace. */
export async function viewQuote(db: Db, token: string, options: { events: boolean; recordView: boolean }): Promise<PublicQuote & { lines: LineJson[]; seller: Seller }> {
  const found = await openQuote(db, token, options);
  if (options.recordView) await recordFirstView(db, found);
  const [lines, seller] = await Promise.all([linesOf(db, found.access, found.quote.id), sellerOf(db, found.access)]);
  return { ...found, lines, seller };
}

/** /q/{token}.pdf: the quote's PDF, the token its credential as for the page (404 unknown or draft, 402 locked). */
export async function quotePdfByToken(db: Db, token: string, options: { events: boolean }): Promise<{ pdf: Buffer; quote: QuoteJson }> {
  const found = await openQuote(db, token, options);
  return { pdf: await quotePdfFor(db, found.access, found.quote), quote: found.quote };
}

/** /q/{token}/logo: the logo of the quote's workspace, or null. */
export async function logoByToken(db: Db, token: string, options: { events: boolean }) {
  const found = await openQuote(db, token, options);
  return logoOf(db, found.access);
}

/** A public quote whose workspace is usable: 404 when unknown, 402 when locked. */
export async function openQuote(db: Db, token: string, options: { events: boolean; forUpdate?: boolean }): Promise<PublicQuote> {
  const found = await quoteByToken(db, token, options);
  if (!found) throw new NotFound('Quote not found.');
  const locked = publicLockReason(found.workspace);
  if (locked) throw new PaymentRequired(`${found.workspace.name} cannot take answers to quotes at the moment.`);
  return found;
}

/** The first view of a sent quote: viewed_at and one `viewed` activity, exactly once even when views race. */
async function recordFirstView(db: Db, { quote, access }: PublicQuote): Promise<void> {
  if (quote.status !== 'sent' || quote.viewed_at) return;
  await db.transaction(async (trx) => {
    // Under concurrent first views the row lock serialises the updates and PostgreSQL re-checks the
    // condition for the later ones, which then find viewed_at set and update nothing.
    const updated = await trx('quotes')
      .where({ id: quote.id, workspace_id: access.workspaceId, status: 'sent' })
      .whereNull('viewed_at')
      .update({ viewed_at: trx.fn.now() })
      .returning('id');
    if (updated.length === 1) await recordActivity(trx, access, quote.id, 'viewed', `Quote ${quote.quote_number} viewed by the customer.`);
  });
}

/**
 * The customer accepts or declines a sent quote from its page, typing their full name (and ticking that they accept
 * the quote and its terms, or giving an optional reason to decline): 422 naming the field otherwise. The answer is
 * recorded with its evidence (answers.ts). A quote already answered (or cancelled), or expired (past its
 * valid_until), is left as it is, whatever the form says: the page then shows its current state. 404 when unknown,
 * 402 when the workspace is locked.
 */
export async function answerQuote(
  trx: Db,
  token: string,
  to: Extract<QuoteStatus, 'accepted' | 'declined'>,
  form: unknown,
  origin: AnswerOrigin,
  options: { events: boolean },
): Promise<QuoteJson> {
  const { quote, access } = await openQuote(trx, token, { ...options, forUpdate: true });
  if (quote.status !== 'sent' || expiredOn(quote)) return quote;
  const answer = to === 'accepted' ? parseInput(acceptBody, form) : parseInput(declineBody, form);
  return recordAnswer(trx, access, quote, to, answer, origin, 'on the quote page');
}

/**
 * A customer finds the page of a sent quote by its number and their email (public key): one 404
 * for every mismatch, so it does not say which of the two was wrong.
 */
export async function lookupQuote(db: Db, access: Access, input: { quote_number: string; email: string }, appUrl: string) {
  const row = await scoped(db, 'quotes', access.workspaceId)
    .where({ quote_number: input.quote_number })
    .whereNot({ status: 'draft' })
    .whereRaw('lower(customer_email) = ?', [input.email])
    .first('quote_number', 'status', 'currency', db.raw('total::text as total'), db.raw(`to_char(valid_until, 'YYYY-MM-DD') as valid_until`), 'public_token');
  if (!row) throw new NotFound('No quote matches this quote number and email address.');
  const { public_token: token, ...quote } = row;
  return { ...quote, url: `${appUrl}/q/${token}` };
}
