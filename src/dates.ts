/** Dates as pages and mails show them. Until a workspace has a time zone of its own, everything is shown in UTC. */

const longDate = new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'long', year: 'numeric', timeZone: 'UTC' });
const shortDate = new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'short', year: 'numeric', timeZone: 'UTC' });
const shortTime = new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'short', year: 'numeric', hour: '2-digit', minute: '2-digit', timeZone: 'UTC' });

function parse(value: unknown): Date | null {
  if (typeof value !== 'string' || !value) return null;
  const date = new Date(/^\d{4}-\d{2}-\d{2}$/.test(value) ? `${value}T00:00:00Z` : value);
  return Number.isNaN(date.getTime()) ? null : date;
}

/** `2030-01-31` or an ISO timestamp → `31 January 2030`; anything else as it is. */
export function longDateText(value: unknown): string {
  const date = parse(value);
  return date ? longDate.format(date) : typeof value === 'string' ? value : '';
}

/** → `31 Jan 2030`. */
export function dateText(value: unknown): string {
  const date = parse(value);
  return date ? shortDate.format(date) : typeof value === 'string' ? value : '';
}

/** → `31 Jan 2030, 14:05 UTC`. */
export function timeText(value: unknown): string {
  const date = parse(value);
  return date ? `${shortTime.format(date)} UTC` : typeof value === 'string' ? value : '';
}
