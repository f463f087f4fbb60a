import path from 'node:path';
import { longestInterval, readLastBackup } from '../scheduled-backup.js';
import { fail, ok, warn, type Check } from './check.js';
import { ago } from './database.js';

const HOUR = 3_600_000;

/** The last scheduled backup (DATA_DIR/last-backup.json): its age and outcome, judged against BACKUP_SCHEDULE. */
export const backups: Check = {
  id: 'backups',
  title: 'Backups',
  reads: ['BACKUP_SCHEDULE', 'BACKUP_DIR', 'BACKUP_KEEP', 'DATA_DIR', 'DATABASE_URL'],
  async run(ctx) {
    const schedule = ctx.config.BACKUP_SCHEDULE;
    const postgres = Boolean(ctx.config.DATABASE_URL);
    const runner = postgres ? 'the quoting-backup timer runs it: systemctl status quoting-backup.timer, journalctl -u quoting-backup' : 'quoting serve runs it: is it running? journalctl -u quoting';
    const last = readLastBackup(ctx.config);
    if (!schedule) {
      const fix = postgres ? `set a schedule: install.sh --backup "0 3 * * *" (a timer running quoting backup)` : `set BACKUP_SCHEDULE="0 3 * * *" ${ctx.settingsIn} and restart quoting serve (or install.sh --backup "0 3 * * *")`;
      return warn(`BACKUP_SCHEDULE is unset: no scheduled backups${last ? ` (the last one ran ${ago(Date.now() - Date.parse(last.at))} ago)` : ''}`, fix);
    }
    if (!last) return warn(`no scheduled backup has run yet (BACKUP_SCHEDULE "${schedule}", into ${path.resolve(ctx.config.BACKUP_DIR)})`, runner);
    const age = Date.now() - Date.parse(last.at);
    if (!last.ok) {
      const since = last.lastSuccess ? `; the last good one is ${ago(Date.now() - Date.parse(last.lastSuccess.at))} old (${last.lastSuccess.file})` : '; none has succeeded yet';
      return fail(`the last backup failed ${ago(age)} ago: ${last.error ?? 'no reason recorded'}${since}`, "fix the cause above, then run 'quoting backup' to check (it writes one into BACKUP_DIR)");
    }
    // Twice the longest gap of the schedule (a weekday schedule's weekend), at least a day: one missed run is a warning.
    const limit = Math.max(2 * longestInterval(schedule), 24 * HOUR);
    const text = `the last backup ran ${ago(age)} ago: ${last.file}`;
    if (age > limit) return warn(`${text}, longer than twice the schedule's interval ("${schedule}")`, runner);
    return ok(text);
  },
};
