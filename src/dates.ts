/**
 * Dates as pages and mails show them: instants in the given IANA time zone (a workspace's), or UTC without one.
 * A calendar date (`2030-01-31`, a quote's validity) is that day wherever it is read, so no zone moves it.
 *
 * Intl writes every date, but a list page shows a hundred of them and Intl's `format` is the dearest step of its
 * render: so the text is assembled from the fields, in the order, literals and month names Intl itself writes for
 * each style (read from it once), and an instant's local fields from its zone's offset over the day around it
 * (read from Intl once a zone and day, and used only where Intl agrees at both ends of that day).
 */

type Style = 'long' | 'short' | 'time';

const styles: Record<Style, Intl.DateTimeFormatOptions> = {
  long: { day: 'numeric', month: 'long', year: 'numeric' },
  short: { day: 'numeric', month: 'short', year: 'numeric' },
  time: { day: 'numeric', month: 'short', year: 'numeric', hour: '2-digit', minute: '2-digit', timeZoneName: 'short' },
};

/** Formatters by style and zone: building one costs far more than formatting with it. */
const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(style: Style | 'fields', zone: string): Intl.DateTimeFormat {
  const key = `${style} ${zone}`;
  let format = formatters.get(key);
  if (!format) {
    // `fields`: the local date and time as numbers, to read a zone's offset from.
    const options: Intl.DateTimeFormatOptions =
      style === 'fields' ? { year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', hourCycle: 'h23' } : styles[style];
    try {
      format = new Intl.DateTimeFormat('en-GB', { ...options, timeZone: zone });
    } catch {
      // A zone this runtime does not know (stored by a newer one): UTC rather than no page.
      format = new Intl.DateTimeFormat('en-GB', { ...options, timeZone: 'UTC' });
    }
    formatters.set(key, format);
  }
  return format;
}

/** A date's fields, as the styles show them. */
interface Fields {
  year: number;
  month: number; // 0 – 11
  day: number;
  hour: number;
  minute: number;
}

/** A style's part: a field, the zone's name (as Intl names it at that instant), or a literal. */
type Piece = { field: keyof Fields | 'zoneName' } | { literal: string };

/** A style's pieces in Intl's order, with its literals, and its month names (`Sept` or `Sep`, as this runtime has them). */
interface Layout {
  pieces: Piece[];
  months: string[];
}

const fieldOf: Partial<Record<Intl.DateTimeFormatPartTypes, keyof Fields | 'zoneName'>> = {
  year: 'year', month: 'month', day: 'day', hour: 'hour', minute: 'minute', timeZoneName: 'zoneName',
};

function readLayout(style: Style): Layout | null {
  const utc = formatter(style, 'UTC');
  const pieces: Piece[] = [];
  for (const part of utc.formatToParts(Date.UTC(2030, 0, 31, 15, 5))) {
    if (part.type === 'literal') pieces.push({ literal: part.value });
    else if (fieldOf[part.type]) pieces.push({ field: fieldOf[part.type]! });
    else return null; // a part this code does not write: Intl writes every date of this style
  }
  const months = Array.from({ length: 12 }, (_, m) => utc.formatToParts(Date.UTC(2030, m, 15)).find((p) => p.type === 'month')?.value ?? '');
  return { pieces, months };
}

const layouts = new Map<Style, Layout | null>();

function layoutOf(style: Style): Layout | null {
  if (!layouts.has(style)) layouts.set(style, readLayout(style));
  return layouts.get(style)!;
}

const two = (n: number) => (n < 10 ? `0${n}` : String(n));

function write(layout: Layout, fields: Fields, zoneName: string): string {
  let out = '';
  for (const piece of layout.pieces) {
    if ('literal' in piece) out += piece.literal;
    else if (piece.field === 'month') out += layout.months[fields.month];
    else if (piece.field === 'zoneName') out += zoneName;
    else if (piece.field === 'hour' || piece.field === 'minute') out += two(fields[piece.field]);
    else out += String(fields[piece.field]);
  }
  return out;
}

const DAY = 86_400_000;

/** A zone's offset over one UTC day, and its name then; null where it changes within the day (Intl writes those). */
interface ZoneDay {
  offset: number;
  zoneName: string;
}

/**
 * Values by two keys, each computed once. Cleared whole past `limit` entries: a bound, not an eviction policy
 * (refilling costs a computation a value).
 */
class TwoKeyCache<A, B, V> {
  private readonly values = new Map<A, Map<B, V>>();
  private size = 0;

  constructor(
    private readonly limit: number,
    private readonly compute: (a: A, b: B) => V,
  ) {}

  get(a: A, b: B): V {
    let inner = this.values.get(a);
    let value = inner?.get(b);
    if (value === undefined) {
      if (this.size >= this.limit) {
        this.values.clear();
        this.size = 0;
        inner = undefined;
      }
      if (!inner) this.values.set(a, (inner = new Map()));
      value = this.compute(a, b);
      inner.set(b, value);
      this.size++;
    }
    return value;
  }
}

/** Days from 1970-01-01 to a day of the proleptic Gregorian calendar (month 0 – 11), by arithmetic rather than a Date. */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month < 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = Math.floor((153 * (month < 2 ? month + 10 : month - 2) + 2) / 5) + day - 1;
  return era * 146_097 + yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear - 719_468;
}

/** The local date and time `offset` ms from UTC at instant `ms`, by arithmetic (daysFromCivil's inverse). */
function localFields(ms: number, offset: number): Fields {
  const local = ms + offset;
  const days = Math.floor(local / DAY);
  const time = local - days * DAY;
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const dayOfEra = z - era * 146_097;
  const yearOfEra = Math.floor((dayOfEra - Math.floor(dayOfEra / 1460) + Math.floor(dayOfEra / 36_524) - Math.floor(dayOfEra / 146_096)) / 365);
  const dayOfYear = dayOfEra - (365 * yearOfEra + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100));
  const m = Math.floor((5 * dayOfYear + 2) / 153); // from March
  const month = m < 10 ? m + 2 : m - 10;
  return {
    year: yearOfEra + era * 400 + (month < 2 ? 1 : 0),
    month,
    day: dayOfYear - Math.floor((153 * m + 2) / 5) + 1,
    hour: Math.floor(time / 3_600_000),
    minute: Math.floor(time / 60_000) % 60,
  };
}

function readZoneDay(zone: string, start: number): ZoneDay | null {
  const parts = Object.fromEntries(formatter('fields', zone).formatToParts(start).map((p) => [p.type, p.value]));
  const offset = Date.UTC(Number(parts.year), Number(parts.month) - 1, Number(parts.day), Number(parts.hour), Number(parts.minute)) - start;
  const zoneName = formatter('time', zone).formatToParts(start).find((p) => p.type === 'timeZoneName')?.value;
  const layout = layoutOf('time');
  if (!layout || zoneName === undefined || Number.isNaN(offset)) return null;
  // Kept only where Intl writes both ends of the day as the offset does: not across a change of offset or name, nor
  // for an offset in seconds (old local mean times), whose minutes the day's end would show one early.
  const end = start + DAY - 1;
  const agrees = (ms: number) => write(layout, localFields(ms, offset), zoneName) === formatter('time', zone).format(ms);
  return agrees(start) && agrees(end) ? { offset, zoneName } : null;
}

/** By zone, then by the UTC day's start (ms): a zone's offset over that day. */
const zoneDays = new TwoKeyCache<string, number, ZoneDay | null>(10_000, readZoneDay);

const zoneDay = (zone: string, ms: number): ZoneDay | null => zoneDays.get(zone, Math.floor(ms / DAY) * DAY);

const digit = (text: string, at: number) => text.charCodeAt(at) - 48;
const number2 = (text: string, at: number) => digit(text, at) * 10 + digit(text, at + 1);

/** An instant read from its text: its time (ms), the offset it was written at (ms), and its fields there. */
interface Written {
  ms: number;
  offset: number;
  fields: Fields;
}

const isoInstant = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?[+-]\d\d:\d\d$/;

/**
 * An ISO 8601 timestamp as PostgreSQL's JSON writes one (`2030-01-31T14:05:00.123456+00:00`), read by position and
 * arithmetic: Date.parse took most of a list's dates. Any other form, a year before 1000 or a field out of range is
 * left to Date.parse (null).
 */
function written(value: string): Written | null {
  if (!isoInstant.test(value)) return null;
  const at = value.length - 6; // the offset's sign
  const year = number2(value, 0) * 100 + number2(value, 2);
  const month = number2(value, 5) - 1;
  const day = number2(value, 8);
  const hour = number2(value, 11);
  const minute = number2(value, 14);
  const second = number2(value, 17);
  const offsetMinutes = number2(value, at + 1) * 60 + number2(value, at + 4);
  if (year < 1000 || month > 11 || day < 1 || day > daysInMonth(year, month) || hour > 23 || minute > 59 || second > 59 || offsetMinutes > 23 * 60 + 59) return null;
  let millis = 0;
  for (let i = 20, scale = 100; i < at && scale >= 1; i++, scale /= 10) millis += digit(value, i) * scale;
  const offset = (value.charCodeAt(at) === 45 /* - */ ? -1 : 1) * offsetMinutes * 60_000;
  return { ms: daysFromCivil(year, month, day) * DAY + ((hour * 60 + minute) * 60 + second) * 1000 + millis - offset, offset, fields: { year, month, day, hour, minute } };
}

const monthDays = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const daysInMonth = (year: number, month: number) => (month === 1 && year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : monthDays[month]);

const calendarDate = /^(\d{4})-(\d{2})-(\d{2})$/;

/** Calendar dates' texts by style (null: not a calendar date): a day is written the same in every zone, and lists show the same days again. */
const dayTexts = new TwoKeyCache<Style, string, string | null>(10_000, (style, value) => {
  const day = calendarDate.exec(value);
  return day ? (writeDay(style, Number(day[1]), Number(day[2]) - 1, Number(day[3])) ?? value) : null;
});

function writeDay(style: Style, year: number, month: number, date: number): string | null {
  const ms = Date.UTC(year, month, date);
  if (Number.isNaN(ms) || new Date(ms).getUTCDate() !== date) return null; // 2030-02-31: not a day
  const layout = layoutOf(style);
  if (layout && year >= 1000) return write(layout, { year, month, day: date, hour: 0, minute: 0 }, 'UTC');
  return formatter(style, 'UTC').format(ms);
}

function format(style: Style, value: unknown, timeZone: string | null | undefined): string {
  if (typeof value !== 'string' || !value) return typeof value === 'string' ? value : '';
  if (value.length === 10) {
    const text = dayTexts.get(style, value);
    if (text !== null) return text;
  }
  const layout = layoutOf(style);
  const found = written(value);
  const ms = found ? found.ms : Date.parse(value);
  if (Number.isNaN(ms)) return value;
  const zone = timeZone || 'UTC';
  const known = layout ? zoneDay(zone, ms) : null;
  if (!known || !layout) return formatter(style, zone).format(ms);
  // Written at the zone's own offset (UTC in UTC, as the database writes it), the text's fields are the local ones.
  const fields = found && found.offset === known.offset ? found.fields : localFields(ms, known.offset);
  // en-GB names UTC "UTC" and other zones by abbreviation or offset ("CET", "GMT-5").
  return fields.year >= 1000 ? write(layout, fields, known.zoneName) : formatter(style, zone).format(ms);
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
