import type { Knex } from 'knex';

/**
 * What a customer's answer records and what reminders need:
 * - `quotes.acceptance` / `quotes.decline`: the evidence of the answer (name, time, address, user agent, and for an
 *   acceptance the SHA-256 of the content accepted), `json` so that the text written stays the text sent;
 * - `quotes.reminded_at`: the one reminder before expiry, claimed by the worker that sends it;
 * - `workspaces.reminder_days`: how many days before a sent quote's validity ends its customer is reminded; null is off.
 * The quote's API text gains `acceptance` and `decline`, and every quote's text is written again.
 */

// The quote's rendering as 20261123180000_api_json_expression froze it, with the two new fields at the end.
const QUOTE_FIELDS = [
  'new.id', 'new.quote_number', 'new.status', 'new.currency', 'new.subtotal::text', 'new.discount_amount::text', 'trim_scale(new.tax_rate)::text',
  'new.tax_amount::text', 'new.total::text', 'new.customer_id', 'new.customer_name', 'new.customer_email', 'new.channel_id', 'new.notes',
  `to_char(new.valid_until, 'YYYY-MM-DD')`, 'new.public_token', 'new.external_id', 'iso_time(new.sent_at)', 'iso_time(new.viewed_at)',
  'iso_time(new.accepted_at)', 'iso_time(new.declined_at)', 'iso_time(new.cancelled_at)', 'iso_time(new.paid_at)', 'iso_time(new.created_at)',
  'iso_time(new.updated_at)',
];

const renderQuote = (fields: string[]) => `
  create or replace function quotes_api_json() returns trigger language plpgsql as $$
  begin
    new.api_json := row_to_json(row(${fields.join(', ')})::quotes_api)::text;
    return new;
  end $$`;

export async function up(knex: Knex): Promise<void> {
  await knex.raw('alter table quotes add column acceptance json, add column decline json, add column reminded_at timestamptz');
  await knex.raw('alter table workspaces add column reminder_days int, add constraint workspaces_reminder_days_check check (reminder_days between 1 and 365)');
  await knex.raw('alter type quotes_api add attribute acceptance json, add attribute decline json');
  await knex.raw(renderQuote([...QUOTE_FIELDS, 'new.acceptance', 'new.decline']));
  // Every row through its trigger again (updated_at untouched): its text gains the two fields.
  await knex.raw('update quotes set acceptance = acceptance');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(renderQuote(QUOTE_FIELDS));
  await knex.raw('alter type quotes_api drop attribute decline, drop attribute acceptance');
  await knex.raw('alter table quotes drop column acceptance, drop column decline, drop column reminded_at');
  await knex.raw('update quotes set notes = notes');
  await knex.raw('alter table workspaces drop constraint workspaces_reminder_days_check, drop column reminder_days');
}
