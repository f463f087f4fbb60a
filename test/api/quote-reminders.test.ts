import test from 'ava';
import { signUpOwner, uniqueEmail, type Owner } from '../helpers/app.js';
import { useOwnerApp } from '../helpers/fixture.js';
import { getPage, postForm, visibleText } from '../helpers/pages.js';
import { inviteMember } from '../helpers/members.js';
import { createMailer } from '../../src/mail/mailer.js';
import { sendReminders } from '../../src/quotes/reminders.js';
import { runCli } from '../helpers/cli.js';
import { usingPostgres } from '../helpers/database.js';
import { testWhen } from '../helpers/skip.js';

const postgresSerial = testWhen(usingPostgres, 'needs PostgreSQL: set TEST_DATABASE_URL', { serial: true });

const { app, owner, smtp } = useOwnerApp(test, { workspace: 'Remindco', smtp: true });

/** A day `days` from today (UTC), as valid_until takes it. */
const inDays = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString().slice(0, 10);

async function quote(who: Owner, validUntil: string | null, send = true) {
  const email = uniqueEmail('buyer');
  const res = await who.client.post('/api/v1/quotes', { customer: { email, name: 'Bea Buyer' }, valid_until: validUntil, lines: [{ description: 'Work', price: '100' }] });
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.text}`);
  if (send) {
    const sent = await who.client.post(`/api/v1/quotes/${res.body.data.quote.id}/send`, { notify: false });
    if (sent.status !== 200) throw new Error(`send failed: ${sent.status} ${sent.text}`);
  }
  return { ...res.body.data.quote, email };
}

const remindersOf = async (id: number) => (await app.db('quote_activities').where({ quote_id: id, type: 'reminded' })).length;
const mailsTo = (email: string) => smtp.mails.filter((m) => m.to.includes(email));

test.serial('reminders are off by default; only an owner sets reminder_days (1-365 or null), through the API and the settings page', async (t) => {
  t.deepEqual((await owner.client.get('/api/v1/workspace/reminders')).body.data, { reminders: { reminder_days: null } });
  const member = await inviteMember(app, smtp, owner);
  t.is((await member.client.patch('/api/v1/workspace/reminders', { reminder_days: 3 })).status, 403);
  for (const bad of [0, 366, 2.5, 'soon', -1]) {
    const res = await owner.client.patch('/api/v1/workspace/reminders', { reminder_days: bad });
    t.is(res.status, 422, String(bad));
    t.regex(res.body.error, /^reminder_days: /);
  }
  t.deepEqual((await owner.client.put('/api/v1/workspace/reminders', { reminder_days: '7' })).body.data, { reminders: { reminder_days: 7 } });
  t.deepEqual((await owner.client.patch('/api/v1/workspace/reminders', { reminder_days: null })).body.data, { reminders: { reminder_days: null } });

  // The settings page: a field with its value; a bad one is the page again with the message beside it.
  const bad = await postForm(owner.client, '/app/settings/reminders', { reminder_days: '400' });
  t.is(bad.status, 422);
  t.true(visibleText(bad.text).includes('reminder_days: must be a whole number of days from 1 to 365'));
  t.true(bad.text.includes('value="400"'));
  const saved = await postForm(owner.client, '/app/settings/reminders', { reminder_days: '5' });
  t.is(saved.status, 303);
  t.regex((await getPage(owner.client, '/app/settings')).text, /id="f-reminder_days" name="reminder_days" type="number" value="5"/);
  t.deepEqual((await owner.client.get('/api/v1/workspace/reminders')).body.data.reminders, { reminder_days: 5 });
  t.is((await postForm(member.client, '/app/settings/reminders', { reminder_days: '9' })).status, 403);
});

test.serial('no mail configured: nothing is sent or claimed; with mail, three overlapping workers send one reminder per due quote', async (t) => {
  t.is((await owner.client.patch('/api/v1/workspace/reminders', { reminder_days: 5 })).status, 200);
  const due = await Promise.all([quote(owner, inDays(0)), quote(owner, inDays(3)), quote(owner, inDays(5))]);
  const notDue = [await quote(owner, inDays(6)), await quote(owner, null), await quote(owner, inDays(2), false)];
  // Another workspace with reminders off: its quote, due by the first one's rule, is left alone.
  const other = await signUpOwner(app, 'Quietco');
  const quiet = await quote(other, inDays(1));
  const options = { events: app.config.WEBHOOKS_ENABLED };

  t.is(createMailer(undefined, 'x@example.com'), null);
  t.deepEqual(await sendReminders(app.db, null, app.url, options), { sent: 0, failed: 0 });
  t.is((await app.db('quotes').whereIn('id', due.map((q) => q.id)).whereNotNull('reminded_at')).length, 0, 'nothing claimed without mail');

  const mailers = [0, 1, 2].map(() => createMailer(smtp.url, 'quotes@example.com')!);
  t.teardown(() => mailers.forEach((m) => m.close()));
  const runs = await Promise.all(mailers.map((mailer) => sendReminders(app.db, mailer, app.url, options)));
  t.is(runs.reduce((n, r) => n + r.sent, 0), due.length, JSON.stringify(runs));
  for (const q of due) {
    const [mail] = mailsTo(q.email);
    t.is(mailsTo(q.email).length, 1, q.quote_number);
    t.true(mail.text.includes(`Subject: Reminder: quote ${q.quote_number} from Remindco`), mail.text);
    t.true(mail.text.includes(`${app.url}/q/${q.public_token}`));
    t.is(await remindersOf(q.id), 1);
  }
  for (const q of [...notDue, quiet]) {
    t.is(mailsTo(q.email).length, 0, q.quote_number);
    t.is(await remindersOf(q.id), 0);
  }
  const [activity] = (await owner.client.get(`/api/v1/quotes/${due[0].id}`)).body.data.activities.filter((a: any) => a.type === 'reminded');
  t.is(activity.actor, 'system');
  t.true(activity.message.includes(due[0].email));

  // Later runs send nothing more.
  t.deepEqual(await sendReminders(app.db, mailers[0], app.url, options), { sent: 0, failed: 0 });
  t.is(smtp.mails.filter((m) => /Subject: Reminder/.test(m.text)).length, due.length);
});

postgresSerial('three `quoting worker` processes started at once mail each due quote once; without SMTP_URL a run sends nothing', async (t) => {
  t.timeout(300_000);
  const who = await signUpOwner(app, 'Cronco');
  t.is((await who.client.patch('/api/v1/workspace/reminders', { reminder_days: 2 })).status, 200);
  const due = await Promise.all([0, 1, 2, 1, 0, 2].map((days) => quote(who, inDays(days))));
  const env = { DATABASE_URL: app.database.url!, APP_URL: app.url };

  const mailless = await runCli(['worker'], { env });
  t.is(mailless.code, 0, mailless.stderr);
  t.is(mailless.stdout, '');
  t.is((await app.db('quotes').whereIn('id', due.map((q) => q.id)).whereNotNull('reminded_at')).length, 0);

  const runs = await Promise.all([1, 2, 3].map(() => runCli(['worker'], { env: { ...env, SMTP_URL: smtp.url } })));
  for (const run of runs) {
    t.is(run.code, 0, run.stderr);
    t.regex(run.stdout, /^(|Reminders: \d+ sent\.\n)$/);
  }
  t.is(runs.reduce((n, run) => n + Number(/^Reminders: (\d+)/.exec(run.stdout)?.[1] ?? 0), 0), due.length);
  for (const q of due) {
    t.is(mailsTo(q.email).length, 1, q.quote_number);
    t.is(await remindersOf(q.id), 1);
  }
});

test.serial('a reminder names the seller from the profile, with its terms, and attaches the quote as a PDF', async (t) => {
  const seller = await signUpOwner(app, 'Sellerco');
  const profile = await seller.client.patch('/api/v1/workspace/profile', { legal_name: 'Sellerco Trading Ltd', tax_number: 'GB999', default_terms: 'Net 14 days.' });
  t.is(profile.status, 200, profile.text);
  t.is((await seller.client.patch('/api/v1/workspace/reminders', { reminder_days: 3 })).status, 200);
  const q = await quote(seller, inDays(2));
  const mailer = createMailer(smtp.url, 'quotes@example.com')!;
  t.teardown(() => mailer.close());
  t.like(await sendReminders(app.db, mailer, app.url, { events: app.config.WEBHOOKS_ENABLED }), { failed: 0 });
  const [mail] = mailsTo(q.email);
  t.true(mail.text.includes(`Subject: Reminder: quote ${q.quote_number} from Sellerco Trading Ltd`), mail.text.slice(0, 300));
  t.true(mail.text.includes('Tax number: GB999'));
  t.true(mail.text.includes('Net 14 days.'));
  const file = `Quote-${q.quote_number}.pdf`;
  t.true(mail.text.includes(`Content-Type: application/pdf; name=${file}`));
  t.true(mail.text.includes(`Content-Disposition: attachment; filename=${file}`));
});
