/**
 * Reminders before expiry: a workspace that sets `reminder_days` (null, the default, is off) has the customer of each
 * sent quote mailed once, that many days before the quote's valid_until (its last day, UTC), by `quoting worker` (and
 * by `quoting serve` itself on the embedded database). A quote is claimed by one atomic UPDATE … WHERE reminded_at IS
 * NULL before its mail goes: however many workers overlap, one of them claims it and the others skip it.
 */
import type { Knex } from 'knex';
import { systemAccess } from '../access.js';
import { errorFields, log } from '../log.js';
import { repeatUntilAborted } from '../repeat.js';
import type { Mailer } from '../mail/mailer.js';
import { quoteMail } from './quote-mail.js';
import { quoteById, recordActivity } from './service.js';

/** Quotes claimed per statement: a worker sends these before it claims more. */
const CLAIM_BATCH = 50;

interface Claimed {
  id: number;
  workspace_id: number;
  quote_number: string;
  customer_email: string;
  valid_until: string;
  public_token: string;
}

/**
 * Sent quotes due a reminder today: in a workspace with reminders on and usable (not suspended, trial not over), with
 * a customer email and a valid_until from today to `reminder_days` days ahead, not reminded yet. Rows another worker
 * holds are skipped (SKIP LOCKED), and the UPDATE re-checks reminded_at on the rows it waited for, so a row is claimed
 * once.
 */
const CLAIM = `/* all workspaces: the reminder job serves every workspace that turned reminders on */
  update quotes q set reminded_at = now()
  where q.reminded_at is null and q.id in (
    select d.id from quotes d join workspaces dw on dw.id = d.workspace_id
    where dw.reminder_days is not null
      and (dw.status = 'active' or (dw.status = 'trialing' and (dw.trial_ends_at is null or dw.trial_ends_at > now())))
      and d.status = 'sent' and d.reminded_at is null and d.customer_email is not null
      and d.valid_until between (now() at time zone 'UTC')::date and (now() at time zone 'UTC')::date + dw.reminder_days
    order by d.id limit ${CLAIM_BATCH}
    for update of d skip locked)
  returning q.id, q.workspace_id, q.quote_number, q.customer_email, to_char(q.valid_until, 'YYYY-MM-DD') as valid_until, q.public_token`;

export interface ReminderSummary {
  sent: number;
  failed: number;
}

/**
 * Claims and mails every reminder due now; nothing at all without mail (`mailer` null: SMTP_URL unset). A mail the
 * server refuses gives its claim back, so a later run tries again; a sent one is recorded as a `reminded` activity.
 */
export async function sendReminders(db: Knex, mailer: Mailer | null, appUrl: string, options: { events: boolean }): Promise<ReminderSummary> {
  const summary = { sent: 0, failed: 0 };
  if (!mailer) return summary;
  for (;;) {
    const { rows } = (await db.raw(CLAIM)) as { rows: Claimed[] };
    for (const quote of rows) {
      const access = systemAccess(quote.workspace_id, options);
      try {
        await mailer.send(await quoteMail(db, access, 'quote-reminder', await quoteById(db, access, quote.id), `${appUrl}/q/${quote.public_token}`));
      } catch (err) {
        summary.failed += 1;
        log.warn('reminder not sent', { quote_id: quote.id, ...errorFields(err) });
        await db('quotes').where({ workspace_id: quote.workspace_id, id: quote.id }).update({ reminded_at: null });
        continue;
      }
      summary.sent += 1;
      await recordActivity(db, access, quote.id, 'reminded', `Reminder sent to ${quote.customer_email}: quote ${quote.quote_number} is valid until ${quote.valid_until}.`);
    }
    // A refused mail gave its claim back: the next claim would take it again, so the run ends here.
    if (rows.length < CLAIM_BATCH || summary.failed > 0) return summary;
  }
}

/** How often a watching worker (or the embedded database's server) looks for reminders due. */
const EVERY_MS = 10 * 60_000;

/** sendReminders now and then every ten minutes until `signal` aborts; resolves when the last run has finished. */
export function keepSendingReminders(db: Knex, mailer: Mailer | null, appUrl: string, options: { events: boolean }, signal: AbortSignal): Promise<void> {
  if (!mailer) return Promise.resolve();
  return repeatUntilAborted('reminders failed', EVERY_MS, signal, async () => {
    const summary = await sendReminders(db, mailer, appUrl, options);
    if (summary.sent || summary.failed) log.info('reminders', { ...summary });
  });
}
