import type { Context } from 'koa';
import { z } from 'zod';
import { fileReply, jsonList, jsonText, reply, type Api } from '../http/api.js';
import { pdfFileName, quotePdfFor } from './pdf.js';
import type { AppDeps } from '../http/deps.js';
import { requiredText } from '../schema/input.js';
import { calendarDate, currency, money } from '../schema/output.js';
import { publicUrl, sendQuote } from './send.js';
import { lookupQuote } from './public.js';
import {
  activityOut, createQuoteBody, quoteStatuses, externalQuoteBody, lineChanges, lineInput, lineOut, listQuotesQuery, quoteOut, recordAcceptBody, recordDeclineBody, sendQuoteBody, updateQuoteBody, type QuoteStatus,
} from './schema.js';
import {
  addLine, createExternalQuote, createQuote, deleteQuote, duplicateQuote, getQuote, listQuotes, readableQuote, removeLine, updateLine, updateQuote, type QuoteText,
} from './service.js';
import { transitionQuote } from './transitions.js';
import { recordAnswerThroughApi, type AnswerOrigin } from './answers.js';

/** Where a request came from: X-Forwarded-For's first address only with TRUST_PROXY=1 (koa's proxy setting). */
const originOf = (ctx: Context): AnswerOrigin => ({ ip: ctx.ip || null, userAgent: ctx.get('user-agent') || null });

/** `{quote, lines}` from their JSON text, sent as it is. */
const quoteText = ({ quote, lines }: QuoteText) => jsonText(`{"quote":${quote},"lines":${lines}}`);

export function quoteRoutes(api: Api, { db, config, mailer }: AppDeps): void {
  api.tag('Quotes', 'Quotes and their lines, their lifecycle (send, accept, decline, cancel, mark paid, convert to an order) and the public lookup');
  const tag = 'Quotes';
  const full = z.object({ quote: quoteOut, lines: z.array(lineOut) });
  const one = z.object({ quote: quoteOut });
  const withLine = z.object({ quote: quoteOut, line: lineOut });
  const pageUrl = z.url().describe('The public quote page, APP_URL/q/{public_token}');

  api.route(
    {
      method: 'post', path: '/quotes', tag, auth: 'session', status: 201, body: createQuoteBody, response: full,
      summary: 'Create a draft quote with lines; customer_id, or customer {email, name, company} upserted by email',
      description:
        'Line price defaults to the price of the variant its sku names (422 when neither). currency defaults to the currency of the channel ' +
        'channel_id names, else the workspace profile\'s default_currency, else USD; valid_until defaults to the profile\'s default_validity_days ' +
        'from today (UTC) when set. Emits quote.created.',
    },
    async ({ body, auth }) => quoteText(await db.transaction((trx) => createQuote(trx, auth.access, body))),
  );

  api.route(
    {
      method: 'post', path: '/quotes/external', tag, auth: 'secret', status: 201, alsoOk: 'A quote with this external_id existed: returned unchanged', body: externalQuoteBody, response: full,
      summary: 'Create a quote from a backend (secret key); a repeat with the same external_id returns the first quote (200)',
      description: 'The body of POST /quotes: currency defaults to the channel\'s, else USD.',
    },
    async ({ body, auth }) => {
      const { created, ...text } = await db.transaction((trx) => createExternalQuote(trx, auth.access, body));
      return reply(created ? 201 : 200, quoteText(text));
    },
  );

  api.route(
    {
      method: 'get', path: '/quotes', tag, auth: 'session', query: listQuotesQuery, response: z.object({ quotes: z.array(quoteOut) }),
      summary: 'The quotes the caller may read (unpaginated, by id), filtered by status, channel_id, customer_id and q',
    },
    async ({ query, auth }) => jsonList('quotes', listQuotes(db, auth.access, query)),
  );

  api.route(
    {
      method: 'get', path: '/quotes/{id}', tag, auth: 'session', summary: 'A quote with its lines and activities, and the url of its public page',
      description:
        'url is the public page, APP_URL/q/{public_token}, as POST /quotes/{id}/send answers it; null while the quote is a draft (its page ' +
        'opens once it is sent). The list (GET /quotes) has no url: its quotes are sent as stored, each with its public_token.',
      response: z.object({ quote: quoteOut, lines: z.array(lineOut), activities: z.array(activityOut), url: pageUrl.nullable() }),
    },
    async ({ params, auth }) => {
      const found = await getQuote(db, auth.access, params.id);
      return { ...found, url: found.quote.status === 'draft' ? null : publicUrl(config.APP_URL, found.quote) };
    },
  );

  api.route(
    {
      method: 'get', path: '/quotes/{id}/pdf', tag, auth: 'session', response: z.null(), produces: ['application/pdf'],
      summary: 'The quote as a PDF (A4): seller details and logo, buyer, number, dates, lines, totals, notes, terms and status',
      description:
        'The same document the customer downloads from the public page (/q/{public_token}.pdf) and the quote mail attaches. Channel roles ' +
        'apply as for GET /quotes/{id}. Long quotes flow onto further pages, repeating the table header; pages are numbered "Page n of N".',
    },
    async ({ params, auth }) => {
      const quote = await readableQuote(db, auth.access, params.id);
      return fileReply('application/pdf', await quotePdfFor(db, auth.access, quote), pdfFileName(quote));
    },
  );

  api.route(
    {
      method: 'post', path: '/quotes/{id}/duplicate', tag, auth: 'session', status: 201, response: full,
      summary: 'Copy a quote of any status into a new draft; emits quote.created',
      description:
        'The draft has the original\'s customer, channel, currency, lines, discount_amount, tax_rate and notes, a new quote_number and ' +
        'public_token, and the valid_until POST /quotes gives a quote without one (the profile\'s default_validity_days, else none). Needs read access to the original\'s channel and write access to it ' +
        'for the copy (403 otherwise).',
    },
    async ({ params, auth }) => quoteText(await db.transaction((trx) => duplicateQuote(trx, auth.access, params.id))),
  );

  api.route(
    {
      method: ['patch', 'put'], path: '/quotes/{id}', tag, auth: 'session', body: updateQuoteBody, response: one,
      summary: 'Change discount_amount, tax_rate, currency, notes or valid_until of a draft (409 otherwise); emits quote.updated',
    },
    async ({ params, body, auth }) => ({ quote: await db.transaction((trx) => updateQuote(trx, auth.access, params.id, body)) }),
  );

  api.route(
    { method: 'delete', path: '/quotes/{id}', tag, auth: 'session', response: one, summary: 'Delete a quote; emits quote.deleted with the snapshot' },
    async ({ params, auth }) => ({ quote: await db.transaction((trx) => deleteQuote(trx, auth.access, params.id)) }),
  );

  api.route(
    {
      method: 'post', path: '/quotes/{id}/lines', tag, auth: 'session', status: 201, body: lineInput, response: withLine,
      summary: 'Add a line to a draft; emits quote.line_added',
    },
    async ({ params, body, auth }) => db.transaction((trx) => addLine(trx, auth.access, params.id, body)),
  );

  api.route(
    {
      method: ['patch', 'put'], path: '/quotes/{id}/lines/{line_id}', tag, auth: 'session', body: lineChanges, response: withLine,
      summary: "Change a draft's line (quantity, price, description, sku); emits quote.line_updated",
    },
    async ({ params, body, auth }) => db.transaction((trx) => updateLine(trx, auth.access, params.id, params.line_id, body)),
  );

  api.route(
    { method: 'delete', path: '/quotes/{id}/lines/{line_id}', tag, auth: 'session', response: withLine, summary: "Remove a draft's line; emits quote.line_removed" },
    async ({ params, auth }) => db.transaction((trx) => removeLine(trx, auth.access, params.id, params.line_id)),
  );

  api.route(
    {
      method: 'post', path: '/quotes/{id}/send', tag, auth: 'session', body: sendQuoteBody, response: z.object({ quote: quoteOut, url: pageUrl }),
      summary: 'draft → sent, mailing the customer a link to the public page (notify: false skips the mail); answers the page url',
      description:
        'A quote whose valid_until has passed (the day before today, UTC, or earlier) is not sent: 409 naming valid_until; change it (or clear it) ' +
        'while the quote is a draft, then send.',
      errors: { 409: 'Not a draft, or its valid_until has passed', 502: 'The mail server refused the message', 503: 'Mail is not configured (the quote stays a draft)' },
    },
    async ({ params, body, auth }) => db.transaction((trx) => sendQuote(trx, auth.access, params.id, body, { mailer, appUrl: config.APP_URL })),
  );

  // valid_until is the last day (UTC) a quote holds. Expiry is no status of its own (the spec's statuses are six):
  // past that day the quote keeps its status but can no longer be accepted or paid, here or on its public page.
  const expiry =
    'Past the quote\'s valid_until (the last day, UTC, on which it holds) it can no longer be accepted or paid: 409 naming valid_until, as ' +
    'the public page shows "This quote expired on …" without buttons. It can still be declined or cancelled. A Stripe payment started in time ' +
    'is recorded whenever it completes.';
  const answerNote =
    'The answer is recorded on the quote (acceptance or decline): name (the customer\'s, when given), time, the caller\'s address and ' +
    'User-Agent, and for an acceptance the SHA-256 of the content accepted. Customers answer on the public page, where the name is required.';
  api.route(
    {
      method: 'post', path: '/quotes/{id}/accept', tag, auth: 'session', body: recordAcceptBody, response: one,
      summary: 'sent → accepted, until valid_until has passed, with the name of who accepted; emits quote.accepted (its quote carries acceptance)',
      description: `${expiry} ${answerNote}`,
      errors: { 409: 'Not allowed from the current status, or the quote has expired (valid_until has passed)' },
    },
    async ({ params, body, auth, ctx }) => ({
      quote: await db.transaction((trx) => recordAnswerThroughApi(trx, auth.access, params.id, 'accepted', body, originOf(ctx))),
    }),
  );
  api.route(
    {
      method: 'post', path: '/quotes/{id}/decline', tag, auth: 'session', body: recordDeclineBody, response: one,
      summary: 'sent → declined, with the name of who declined and an optional reason; emits quote.declined (its quote carries decline)',
      description: answerNote,
      errors: { 409: 'Not allowed from the current status' },
    },
    async ({ params, body, auth, ctx }) => ({
      quote: await db.transaction((trx) => recordAnswerThroughApi(trx, auth.access, params.id, 'declined', body, originOf(ctx))),
    }),
  );

  const moves: [string, QuoteStatus, string, string | undefined][] = [
    ['cancel', 'cancelled', 'draft, sent or accepted → cancelled; emits quote.cancelled', undefined],
    ['mark-paid', 'paid', 'accepted → paid, until valid_until has passed; emits quote.paid', expiry],
  ];
  for (const [path, to, summary, description] of moves) {
    api.route(
      {
        method: 'post', path: `/quotes/{id}/${path}`, tag, auth: 'session', response: one, summary, ...(description ? { description } : {}),
        errors: { 409: description ? 'Not allowed from the current status, or the quote has expired (valid_until has passed)' : 'Not allowed from the current status' },
      },
      async ({ params, auth }) => ({ quote: await db.transaction((trx) => transitionQuote(trx, auth.access, params.id, to)) }),
    );
  }

  // Public lookup (public key, CORS): a customer finds the page of a quote by its number and their email.
  const lookupBody = z.object({
    quote_number: requiredText(40).transform((v) => v.toUpperCase()),
    email: requiredText(254).transform((v) => v.toLowerCase()),
  });
  const lookupOut = z.object({
    quote: z.object({
      quote_number: z.string(),
      status: z.enum(quoteStatuses),
      currency,
      total: money,
      valid_until: calendarDate.nullable(),
      url: z.string().describe('The public quote page, APP_URL/q/{token}'),
    }).meta({ id: 'QuoteLookup' }),
  });
  api.route(
    {
      method: 'post', path: '/quotes/public/lookup', tag, auth: 'public|query', cors: true, body: lookupBody, response: lookupOut,
      summary: 'Find a sent quote by quote_number and customer email (case-insensitive); returns the link to its public page',
      description: 'Public key in "Authorization: Public <key>" or ?key=. A quote number and email that do not belong together, or a draft, give the same 404.',
      errors: { 404: 'No quote with this number and email' },
    },
    async ({ body, auth }) => ({ quote: await lookupQuote(db, auth.access, body, config.APP_URL) }),
  );
}
