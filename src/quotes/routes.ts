import { z } from 'zod';
import { jsonList, reply, type Api } from '../http/api.js';
import type { AppDeps } from '../http/deps.js';
import type { Principal } from '../http/auth.js';
import { NotFound, Validation } from '../errors.js';
import { requiredText } from '../http/validate.js';
import { scoped } from '../db/scoped.js';
import { renderMail, requireMailer } from '../mail/mailer.js';
import { convertQuote } from '../orders/service.js';
import { itemOut, orderOut } from '../orders/schema.js';
import {
  activityOut, createQuoteBody, quoteStatuses, externalQuoteBody, lineChanges, lineInput, lineOut, listQuotesQuery, quoteOut, sendQuoteBody, updateQuoteBody, type QuoteStatus,
} from './schema.js';
import {
  addLine, assertTransition, createExternalQuote, createQuote, deleteQuote, getQuote, listQuotes, lockedQuoteForUser, removeLine, transition, transitionQuote, updateLine, updateQuote,
} from './service.js';

export function quoteRoutes(api: Api, { db, config, mailer }: AppDeps): void {
  const tag = 'Quotes';
  const full = z.object({ quote: quoteOut, lines: z.array(lineOut) });
  const one = z.object({ quote: quoteOut });
  const withLine = z.object({ quote: quoteOut, line: lineOut });
  const actorOf = (auth: Principal) => (auth.keyType === 'secret' ? 'api' : 'user');

  api.route(
    {
      method: 'post', path: '/quotes', tag, auth: 'session', status: 201, body: createQuoteBody, response: full,
      summary: 'Create a draft quote with lines; customer_id, or customer {email, name, company} upserted by email',
      description: 'Line price defaults to the price of the variant its sku names (422 when neither). Emits quote.created.',
    },
    async ({ body, auth }) => db.transaction((trx) => createQuote(trx, auth, body, 'user')),
  );

  api.route(
    {
      method: 'post', path: '/quotes/external', tag, auth: 'secret', status: 201, body: externalQuoteBody, response: full,
      summary: 'Create a quote from a backend (secret key); a repeat with the same external_id returns the first quote (200)',
    },
    async ({ body, auth }) => {
      const { quote, lines, created } = await db.transaction((trx) => createExternalQuote(trx, auth, body));
      return reply(created ? 201 : 200, { quote, lines });
    },
  );

  api.route(
    {
      method: 'get', path: '/quotes', tag, auth: 'session', query: listQuotesQuery, response: z.object({ quotes: z.array(quoteOut) }),
      summary: 'The quotes the caller may read (unpaginated, by id), filtered by status, channel_id, customer_id and q',
    },
    async ({ query, auth }) => jsonList('quotes', listQuotes(db, auth, query)),
  );

  api.route(
    {
      method: 'get', path: '/quotes/{id}', tag, auth: 'session', summary: 'A quote with its lines and activities',
      response: z.object({ quote: quoteOut, lines: z.array(lineOut), activities: z.array(activityOut) }),
    },
    async ({ params, auth }) => getQuote(db, auth, params.id),
  );

  api.route(
    {
      method: ['patch', 'put'], path: '/quotes/{id}', tag, auth: 'session', body: updateQuoteBody, response: one,
      summary: 'Change discount_amount, tax_rate, currency, notes or valid_until of a draft (409 otherwise); emits quote.updated',
    },
    async ({ params, body, auth }) => ({ quote: await db.transaction((trx) => updateQuote(trx, auth, params.id, body, 'user')) }),
  );

  api.route(
    { method: 'delete', path: '/quotes/{id}', tag, auth: 'session', response: one, summary: 'Delete a quote; emits quote.deleted with the snapshot' },
    async ({ params, auth }) => ({ quote: await db.transaction((trx) => deleteQuote(trx, auth, params.id)) }),
  );

  api.route(
    {
      method: 'post', path: '/quotes/{id}/lines', tag, auth: 'session', status: 201, body: lineInput, response: withLine,
      summary: 'Add a line to a draft; emits quote.line_added',
    },
    async ({ params, body, auth }) => db.transaction((trx) => addLine(trx, auth, params.id, body, 'user')),
  );

  api.route(
    {
      method: ['patch', 'put'], path: '/quotes/{id}/lines/{line_id}', tag, auth: 'session', body: lineChanges, response: withLine,
      summary: "Change a draft's line (quantity, price, description, sku); emits quote.line_updated",
    },
    async ({ params, body, auth }) => db.transaction((trx) => updateLine(trx, auth, params.id, params.line_id, body, 'user')),
  );

  api.route(
    { method: 'delete', path: '/quotes/{id}/lines/{line_id}', tag, auth: 'session', response: withLine, summary: "Remove a draft's line; emits quote.line_removed" },
    async ({ params, auth }) => db.transaction((trx) => removeLine(trx, auth, params.id, params.line_id, 'user')),
  );

  api.route(
    {
      method: 'post', path: '/quotes/{id}/send', tag, auth: 'session', body: sendQuoteBody, response: one,
      summary: 'draft → sent, mailing the customer a link to the public page (notify: false skips the mail)',
      errors: { 409: 'Not a draft', 502: 'The mail server refused the message', 503: 'Mail is not configured (the quote stays a draft)' },
    },
    async ({ params, body, auth }) => {
      const notify = body.notify !== false;
      return {
        quote: await db.transaction(async (trx) => {
          const quote = await lockedQuoteForUser(trx, auth, params.id);
          // A quote that cannot be sent is 409 naming its status, before any mail check (503, 422).
          assertTransition(quote, 'sent');
          const mail = notify ? requireMailer(mailer) : null;
          if (mail && !quote.customer_email) throw new Validation('customer', 'customer: the quote has no customer email to send it to (or send with notify: false).');
          const sent = await transition(trx, auth.workspace.id, quote, 'sent', actorOf(auth), `Quote ${quote.quote_number} sent${mail ? ` to ${quote.customer_email}` : ''}.`);
          if (mail) {
            await mail.send({
              to: String(sent.customer_email),
              ...renderMail('quote-sent', {
                quote_number: sent.quote_number,
                workspace: auth.workspace.name,
                name: String(sent.customer_name ?? sent.customer_email),
                total: String(sent.total),
                currency: String(sent.currency),
                link: `${config.APP_URL}/q/${sent.public_token}`,
                valid_until: sent.valid_until ? `The quote is valid until ${sent.valid_until}.` : '',
              }),
            });
          }
          return sent;
        }),
      };
    },
  );

  const moves: [string, QuoteStatus, string][] = [
    ['accept', 'accepted', 'sent → accepted; emits quote.accepted'],
    ['decline', 'declined', 'sent → declined; emits quote.declined'],
    ['cancel', 'cancelled', 'draft, sent or accepted → cancelled; emits quote.cancelled'],
    ['mark-paid', 'paid', 'accepted → paid; emits quote.paid'],
  ];
  for (const [path, to, summary] of moves) {
    api.route(
      { method: 'post', path: `/quotes/{id}/${path}`, tag, auth: 'session', response: one, summary, errors: { 409: 'Not allowed from the current status' } },
      async ({ params, auth }) => ({ quote: await db.transaction((trx) => transitionQuote(trx, auth, params.id, to, 'user')) }),
    );
  }

  api.route(
    {
      method: 'post', path: '/quotes/{id}/convert', tag, auth: 'session', status: 201, response: z.object({ order: orderOut, items: z.array(itemOut) }),
      summary: 'Create the order of an accepted or paid quote (external_id quote:{id}); a repeat returns the same order (200)',
      errors: { 409: 'The quote is neither accepted nor paid' },
    },
    async ({ params, auth }) => {
      const { order, items, created } = await db.transaction((trx) => convertQuote(trx, auth, params.id));
      return reply(created ? 201 : 200, { order, items });
    },
  );

  // Public lookup (public key, CORS): a customer finds the page of a quote by its number and their email.
  const lookupBody = z.object({
    quote_number: requiredText(40).transform((v) => v.toUpperCase()),
    email: requiredText(254).transform((v) => v.toLowerCase()),
  });
  const lookupOut = z.object({
    quote: z.object({
      quote_number: z.string(),
      status: z.enum(quoteStatuses),
      currency: z.string(),
      total: z.string().regex(/^\d+\.\d{2}$/).describe('Money: decimal string with two decimals'),
      valid_until: z.string().nullable().describe('YYYY-MM-DD'),
      url: z.string().describe('The public quote page, APP_URL/q/{token}'),
    }),
  });
  api.route(
    {
      method: 'post', path: '/quotes/public/lookup', tag, auth: 'public|query', cors: true, body: lookupBody, response: lookupOut,
      summary: 'Find a sent quote by quote_number and customer email (case-insensitive); returns the link to its public page',
      description: 'Public key in "Authorization: Public <key>" or ?key=. A quote number and email that do not belong together, or a draft, give the same 404.',
      errors: { 404: 'No quote with this number and email' },
    },
    async ({ body, auth }) => {
      const row = await scoped(db, 'quotes', auth.workspace.id)
        .where({ quote_number: body.quote_number })
        .whereNot({ status: 'draft' })
        .whereRaw('lower(customer_email) = ?', [body.email])
        .first('quote_number', 'status', 'currency', db.raw('total::text as total'), db.raw(`to_char(valid_until, 'YYYY-MM-DD') as valid_until`), 'public_token');
      if (!row) throw new NotFound('No quote matches this quote number and email address.');
      const { public_token: token, ...quote } = row;
      return { quote: { ...quote, url: `${config.APP_URL}/q/${token}` } };
    },
  );
}
