import type { Access } from '../access.js';
import type { Db } from '../db/database.js';
import { Conflict, Unavailable, Validation } from '../errors.js';
import type { Mailer } from '../mail/mailer.js';
import { lockedQuoteForUser, type QuoteJson } from './service.js';
import { assertTransition, expiredOn, transition } from './transitions.js';
import { quoteMail } from './quote-mail.js';

/** The public page of a quote: the link mailed to its customer. */
export function publicUrl(appUrl: string, quote: QuoteJson): string {
  return `${appUrl}/q/${quote.public_token}`;
}

/**
 * draft → sent, mailing the customer the link to the public page unless `notify` is false, with the quote's PDF
 * attached and the seller's details under it. The mail goes out inside the transaction, so a refused mail (502)
 * leaves the quote a draft.
 */
export async function sendQuote(
  trx: Db,
  access: Access,
  id: number,
  input: { notify?: boolean },
  mail: { mailer: Mailer | null; appUrl: string },
): Promise<{ quote: QuoteJson; url: string }> {
  const quote = await lockedQuoteForUser(trx, access, id);
  // A quote that cannot be sent is 409 naming its status, or its valid_until once past, before any mail check (503, 422).
  assertTransition(quote, 'sent');
  const expired = expiredOn(quote);
  if (expired) {
    throw new Conflict(`Quote ${quote.quote_number} cannot be sent: its valid_until (${expired}) has passed. Set a later valid_until, or none, first.`);
  }
  const notify = input.notify !== false;
  if (notify && !mail.mailer) {
    throw new Unavailable('Mail is not configured on this server (SMTP_URL is unset); send with "notify": false to mark the quote sent without mailing it.');
  }
  if (notify && !quote.customer_email) throw new Validation('customer', 'customer: the quote has no customer email to send it to (or send with notify: false).');
  const sent = await transition(trx, access, quote, 'sent', `Quote ${quote.quote_number} sent${notify ? ` to ${quote.customer_email}` : ''}.`);
  const url = publicUrl(mail.appUrl, sent);
  if (notify && mail.mailer) await mail.mailer.send(await quoteMail(trx, access, 'quote-sent', sent, url));
  return { quote: sent, url };
}
