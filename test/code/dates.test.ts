/**
 * The dates pages and mails show are Intl's own text (en-GB in the workspace's zone), however they are assembled:
 * every style, for instants across centuries, daylight-saving changes and zones with odd offsets, and for calendar
 * dates, against Intl.DateTimeFormat itself.
 */
import test from 'ava';
import { dateText, longDateText, timeText } from '../../src/dates.js';

const zones = [
  'UTC', 'Europe/Paris', 'Europe/London', 'America/New_York', 'America/St_Johns', 'Asia/Kolkata', 'Asia/Kathmandu',
  'Australia/Lord_Howe', 'Pacific/Chatham', 'Pacific/Kiritimati', 'America/Sao_Paulo', 'Africa/Casablanca', 'Europe/Dublin',
  'Asia/Tehran', 'Pacific/Apia', 'Europe/Amsterdam', 'Africa/Monrovia',
];

const formats = new Map<string, Intl.DateTimeFormat>();
function intl(options: Intl.DateTimeFormatOptions, zone: string, ms: number): string {
  const key = `${JSON.stringify(options)} ${zone}`;
  if (!formats.has(key)) formats.set(key, new Intl.DateTimeFormat('en-GB', { ...options, timeZone: zone }));
  return formats.get(key)!.format(ms);
}
const time: Intl.DateTimeFormatOptions = { day: 'numeric', month: 'short', year: 'numeric', hour: '2-digit', minute: '2-digit', timeZoneName: 'short' };
const short: Intl.DateTimeFormatOptions = { day: 'numeric', month: 'short', year: 'numeric' };
const long: Intl.DateTimeFormatOptions = { day: 'numeric', month: 'long', year: 'numeric' };

/** A seeded generator, so a failure names instants that fail again. */
function random(seed: number): () => number {
  return () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
}

test('instants read as Intl writes them, in every zone and style', (t) => {
  const next = random(7);
  const instants: number[] = [];
  // Around every daylight-saving change of 2026 in Europe and North America, minute by minute.
  for (const change of [Date.UTC(2026, 2, 8, 7), Date.UTC(2026, 2, 29, 1), Date.UTC(2026, 9, 25, 1), Date.UTC(2026, 10, 1, 6)]) {
    for (let m = -90; m <= 90; m += 1) instants.push(change + m * 60_000 + 59_999);
  }
  // Spread over 1880 – 2100 (old local mean times, offsets in seconds), and the last hour of a UTC day.
  for (let i = 0; i < 400; i++) instants.push(Math.floor(Date.UTC(1880, 0, 1) + next() * (Date.UTC(2100, 0, 1) - Date.UTC(1880, 0, 1))));
  for (let i = 0; i < 50; i++) instants.push(Date.UTC(2026, 5, 30, 23, Math.floor(next() * 60), 59, 999));
  let checked = 0;
  for (const zone of zones) {
    for (const ms of instants) {
      const iso = new Date(ms).toISOString();
      if (timeText(iso, zone) !== intl(time, zone, ms)) return t.fail(`${iso} in ${zone}: ${timeText(iso, zone)}, Intl ${intl(time, zone, ms)}`);
      if (dateText(iso, zone) !== intl(short, zone, ms)) return t.fail(`${iso} in ${zone} (short): ${dateText(iso, zone)}`);
      if (longDateText(iso, zone) !== intl(long, zone, ms)) return t.fail(`${iso} in ${zone} (long): ${longDateText(iso, zone)}`);
      checked++;
    }
  }
  t.is(checked, zones.length * instants.length);
});

test("instants as PostgreSQL's JSON writes them (an offset, 0 to 6 digits of fraction) read as the same instant", (t) => {
  const next = random(11);
  const two = (n: number) => String(n).padStart(2, '0');
  let checked = 0;
  for (let i = 0; i < 3000; i++) {
    const ms = Math.floor(Date.UTC(1900, 0, 1) + next() * (Date.UTC(2100, 0, 1) - Date.UTC(1900, 0, 1)));
    // The same instant written at an offset of -12:00 to +14:00, in quarter hours, with a fraction of some digits.
    const offset = (Math.floor(next() * 105) - 48) * 15;
    const local = new Date(ms + offset * 60_000).toISOString().slice(0, 19);
    const millis = ((ms % 1000) + 1000) % 1000; // before 1970 too
    const fraction = String(millis).padStart(3, '0') + String(Math.floor(next() * 1000)).padStart(3, '0');
    const digits = Math.floor(next() * 7);
    const text = `${local}${digits ? `.${fraction.slice(0, digits)}` : ''}${offset < 0 ? '-' : '+'}${two(Math.floor(Math.abs(offset) / 60))}:${two(Math.abs(offset) % 60)}`;
    const zone = zones[i % zones.length];
    t.is(Date.parse(text), digits >= 3 ? ms : ms - (millis % 10 ** (3 - digits)), text);
    if (timeText(text, zone) !== intl(time, zone, Date.parse(text))) return t.fail(`${text} in ${zone}: ${timeText(text, zone)}, Intl ${intl(time, zone, Date.parse(text))}`);
    checked++;
  }
  // Years before 100, which Date.UTC would read as 19xx, and a digit out of place.
  t.is(timeText('0050-06-01T12:00:00+00:00'), intl(time, 'UTC', Date.parse('0050-06-01T12:00:00+00:00')));
  t.is(timeText('2030-0X-01T12:00:00+00:00'), '2030-0X-01T12:00:00+00:00');
  t.is(checked, 3000);
});

test("instants written at their zone's own offset (UTC at +00:00, as the database writes them) read as Intl writes them", (t) => {
  const next = random(13);
  const offsetText = (zone: string, ms: number) => {
    // `GMT+05:30`, or `GMT` for none.
    const name = new Intl.DateTimeFormat('en-GB', { timeZone: zone, timeZoneName: 'longOffset' }).formatToParts(ms).find((p) => p.type === 'timeZoneName')!.value;
    return name === 'GMT' ? '+00:00' : name.slice(3);
  };
  let checked = 0;
  for (let i = 0; i < 2000; i++) {
    const ms = Math.floor(Date.UTC(1990, 0, 1) + next() * (Date.UTC(2060, 0, 1) - Date.UTC(1990, 0, 1)));
    const zone = zones[i % zones.length];
    const offset = offsetText(zone, ms);
    const minutes = (offset[0] === '-' ? -1 : 1) * (Number(offset.slice(1, 3)) * 60 + Number(offset.slice(4, 6)));
    const text = `${new Date(ms + minutes * 60_000).toISOString().slice(0, 23)}${offset}`;
    t.is(Date.parse(text), ms, text);
    if (timeText(text, zone) !== intl(time, zone, ms)) return t.fail(`${text} in ${zone}: ${timeText(text, zone)}, Intl ${intl(time, zone, ms)}`);
    if (dateText(text, zone) !== intl(short, zone, ms)) return t.fail(`${text} in ${zone} (short): ${dateText(text, zone)}`);
    checked++;
  }
  // Not a day or not a time: as Date.parse reads them.
  for (const text of ['2030-02-29T12:00:00+00:00', '2028-02-29T12:00:00+00:00', '2030-04-31T12:00:00+00:00', '2030-01-31T24:00:00+00:00']) {
    const ms = Date.parse(text);
    t.is(timeText(text), Number.isNaN(ms) ? text : intl(time, 'UTC', ms), text);
  }
  t.is(checked, 2000);
});

test('calendar dates are that day in any zone, every month named as Intl names it', (t) => {
  for (let m = 0; m < 12; m++) {
    for (const d of [1, 9, 10, 28]) {
      const text = `2031-${String(m + 1).padStart(2, '0')}-${String(d).padStart(2, '0')}`;
      const ms = Date.UTC(2031, m, d);
      t.is(dateText(text, 'Pacific/Kiritimati'), intl(short, 'UTC', ms));
      t.is(longDateText(text), intl(long, 'UTC', ms));
      t.is(timeText(text, 'America/New_York'), intl(time, 'UTC', ms));
    }
  }
});

test('what is not a date is shown as it is; nothing is shown for no value', (t) => {
  t.is(dateText('soon'), 'soon');
  t.is(dateText('2030-02-31'), '2030-02-31');
  t.is(timeText(''), '');
  t.is(timeText(null), '');
  t.is(timeText(42), '');
  // A zone this runtime does not know reads as UTC.
  t.is(timeText('2030-01-31T15:05:00Z', 'Mars/Olympus_Mons'), intl(time, 'UTC', Date.UTC(2030, 0, 31, 15, 5)));
});

test('more days than the caches keep (10,000) read as Intl writes them, before and after the caches are emptied', (t) => {
  const start = Date.UTC(2001, 0, 1);
  for (let round = 0; round < 2; round++) {
    for (let d = 0; d < 12_000; d += 1) {
      const ms = start + d * 86_400_000 + 13 * 3_600_000;
      const day = new Date(ms).toISOString().slice(0, 10);
      // Every day through the caches; every 97th compared with Intl, in both rounds.
      const text = dateText(day);
      const instant = timeText(new Date(ms).toISOString(), 'Europe/Paris');
      if (d % 97 === 0) {
        t.is(text, intl(short, 'UTC', ms - 13 * 3_600_000), `${day}, round ${round}`);
        t.is(instant, intl(time, 'Europe/Paris', ms), `${day} 13:00Z, round ${round}`);
      }
    }
  }
});
