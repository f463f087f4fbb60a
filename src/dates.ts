/**
 * Dates as pages and mails show them: instants in the given IANA time zone (a workspace's), or UTC without one.
 * A calendar date (`2030-01-31`, a quote's validity) is that day wherever it is read, so no zone moves it.
 */

type Style = 'long' | 'short' | 'time';

const styles: Record<Style, Intl.DateTimeFormatOptions> = {
  long: { day: 'numeric', month: 'long', year: 'numeric' },
  short: { day: 'numeric', month: 'short', year: 'numeric' },
  time: { day: 'numeric', month: 'short', year: 'numeric', hour: '2-digit', minute: '2-digit', timeZoneName: 'short' },
};

/** Formatters by style and zone: building one costs far more than formatting with it. */
const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(style: Style, zone: string): Intl.DateTimeFormat {
  const key = `${style} ${zone}`;
  let format = formatters.get(key);
  if (!format) {
    try {
      format = new Intl.DateTimeFormat('en-GB', { ...styles[style], timeZone: zone });
    } catch {
      // A zone this runtime does not know (stored by a newer one): UTC rather than no page.
      format = new Intl.DateTimeFormat('en-GB', { ...styles[style], timeZone: 'UTC' });
    }
    formatters.set(key, format);
  }
  return format;
}

const isCalendarDate = (value: string) => /^\d{4}-\d{2}-\d{2}$/.test(value);

function parse(value: unknown): Date | null {
  if (typeof value !== 'string' || !value) return null;
  const date = new Date(isCalendarDate(value) ? `${value}T00:00:00Z` : value);
  return Number.isNaN(date.getTime()) ? null : date;
}

function format(style: Style, value: unknown, timeZone: string | null | undefined): string {
  const date = parse(value);
  if (!date) return typeof value === 'string' ? value : '';
  const zone = !timeZone || isCalendarDate(value as string) ? 'UTC' : timeZone;
  // en-GB names UTC "UTC" and other zones by abbreviation or offset ("CET", "GMT-5").
  return formatter(style, zone).format(date);
}

/** `2030-01-31` or an ISO timestamp → `31 January 2030`; anything else as it is. */
export function longDateText(value: unknown, timeZone?: string | null): string {
  return format('long', value, timeZone);
}

/** → `31 Jan 2030`. */
export function dateText(value: unknown, timeZone?: string | null): string {
  return format('short', value, timeZone);
}

/** → `31 Jan 2030, 14:05 UTC` (`15:05 CET` in Europe/Paris). */
export function timeText(value: unknown, timeZone?: string | null): string {
  return format('time', value, timeZone);
}
