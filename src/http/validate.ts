import { z } from 'zod';
import { Validation } from '../errors.js';

/** Parses input with a zod schema; the first problem becomes a 422 whose message names the field. */
export function parseInput<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const field = issue.path.map(String).join('.') || 'body';
  throw new Validation(field, describeIssue(field, issue));
}

function describeIssue(field: string, issue: z.core.$ZodIssue): string {
  if (issue.code === 'invalid_type' && /received undefined/.test(issue.message)) return `${field} is required.`;
  if (issue.code === 'unrecognized_keys') return `Unknown field ${issue.keys.join(', ')}.`;
  const message = issue.message.replace(/^Invalid input: /, '');
  return `${field}: ${message.charAt(0).toLowerCase()}${message.slice(1)}${message.endsWith('.') ? '' : '.'}`;
}

/** Booleans as the spec reads them: true, 1, '1', 'true', 't', 'yes', 'on' are true; anything else is false. */
export const booleanInput = z
  .unknown()
  .transform((value) => value === true || value === 1 || (typeof value === 'string' && ['1', 'true', 't', 'yes', 'on'].includes(value.trim().toLowerCase())))
  .pipe(z.boolean())
  .meta({ type: 'boolean', description: 'true, 1, "1", "true", "t", "yes" or "on" are true; anything else is false' });

export const emailInput = z
  .string()
  .trim()
  .toLowerCase()
  .max(254)
  .pipe(z.email({ error: 'must be a valid email address' }));

export const passwordInput = z.string().min(10, 'must be at least 10 characters').max(1024, 'must be at most 1024 characters');

/** PostgreSQL text and jsonb refuse NUL characters (and jsonb unpaired surrogates): a 422 here, not a 500 there. */
const NUL = '\u0000';
const UNPAIRED_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const noNul = (v: string | null | undefined) => v == null || !v.includes(NUL);
const noNulMessage = 'must not contain NUL characters';

/** True when PostgreSQL can store the value as jsonb. */
export function storableJson(value: unknown): boolean {
  if (typeof value === 'string') return !value.includes(NUL) && !UNPAIRED_SURROGATE.test(value);
  if (Array.isArray(value)) return value.every(storableJson);
  if (value !== null && typeof value === 'object') return Object.entries(value).every(([key, v]) => storableJson(key) && storableJson(v));
  return true;
}

/** Optional free text: trimmed, at most `max` characters; an empty string or null clears the field. */
export const optionalText = (max: number) =>
  z
    .union([z.string(), z.null()])
    .transform((v) => (v === null || v.trim() === '' ? null : v.trim()))
    .pipe(z.string().max(max, `must be at most ${max} characters`).refine(noNul, noNulMessage).nullable())
    .optional();

/** A required name-like text: trimmed, not empty. */
export const requiredText = (max: number) =>
  z.string().trim().min(1, 'must not be empty').max(max, `must be at most ${max} characters`).refine(noNul, noNulMessage);

interface DecimalRules {
  /** Digits allowed after the point. */
  scale: number;
  /** Digits allowed before it (numeric(14,2) holds 12). */
  integerDigits: number;
  /** Whether zero is allowed (it never may be negative). */
  zero: boolean;
  description: string;
  examples: unknown[];
}

/**
 * A decimal in: a number or a numeric string within the rules; the result is the validated decimal
 * text, handed to PostgreSQL as it stands (no float arithmetic here). null or '' is null.
 */
function decimalInput(rules: DecimalRules) {
  const limit = `1${'0'.repeat(rules.integerDigits)}`;
  const sign = rules.zero ? 'must be zero or more' : 'must be more than zero';
  return z
    .unknown()
    .transform((value, ctx): string | null => {
      const fail = (message: string) => {
        ctx.addIssue({ code: 'custom', message });
        return z.NEVER;
      };
      if (value === null) return null;
      let text: string;
      if (typeof value === 'number') {
        if (!Number.isFinite(value)) return fail('must be a finite number');
        if (value < 0) return fail(sign);
        text = String(value);
        // String() switches to exponent form below 1e-6 and from 1e21 on: too precise or too large.
        if (/e/i.test(text)) return fail(Math.abs(value) < 1 ? `must have at most ${rules.scale} decimal places` : `must be less than ${limit}`);
      } else if (typeof value === 'string') {
        text = value.trim();
        if (text === '') return null;
      } else {
        return fail(`must be a number or a numeric string such as ${JSON.stringify(rules.examples[0])}`);
      }
      if (/^-\s*\d*\.?\d+$/.test(text)) return fail(sign);
      const match = /^(\d+)(?:\.(\d+))?$/.exec(text);
      if (!match) return fail(`must be a decimal number such as ${JSON.stringify(rules.examples[0])}`);
      if ((match[2] ?? '').length > rules.scale) return fail(`must have at most ${rules.scale} decimal places`);
      if (match[1].replace(/^0+(?=\d)/, '').length > rules.integerDigits) return fail(`must be less than ${limit}`);
      if (!rules.zero && /^0*\.?0*$/.test(text)) return fail(sign);
      return text;
    })
    .meta({ type: ['string', 'number', 'null'], description: rules.description, examples: rules.examples });
}

/** Money: zero or more, at most 2 decimals (numeric(14,2)); returned as "12.50". */
export const moneyInput = decimalInput({
  scale: 2,
  integerDigits: 12,
  zero: true,
  description: 'Money: a number or a decimal string, zero or more, at most 2 decimals (stored and returned as "12.50"); null clears it',
  examples: ['12.50', 12.5],
});

/** A quantity: more than zero, at most 3 decimals (numeric(14,3)). */
export const quantityInput = decimalInput({
  scale: 3,
  integerDigits: 11,
  zero: false,
  description: 'A positive number with at most 3 decimals, as a number or a decimal string',
  examples: ['2', 1.5],
});

/** A percentage such as a tax rate: 0 to 999, at most 4 decimals (numeric(7,4)). */
export const percentInput = decimalInput({
  scale: 4,
  integerDigits: 3,
  zero: true,
  description: 'A percentage, e.g. "8.25" for 8.25 %, at most 4 decimals',
  examples: ['8.25', 20],
});

/** A point in time (any parseable date, years 1900-9999); null or '' is null. */
export const instantInput = z
  .union([z.string(), z.null()])
  .transform((value, ctx): Date | null => {
    if (value === null || value.trim() === '') return null;
    const date = new Date(value.trim());
    if (Number.isNaN(date.getTime()) || date.getUTCFullYear() < 1900 || date.getUTCFullYear() > 9999) {
      ctx.addIssue({ code: 'custom', message: 'must be a date such as 2026-11-21T10:00:00Z' });
      return z.NEVER;
    }
    return date;
  })
  .meta({ type: ['string', 'null'], format: 'date-time', description: 'A date and time, ISO 8601 advised' });

/** A calendar date (YYYY-MM-DD, or any parseable date, stored as its UTC date); null or '' clears it. */
export const dateInput = z
  .union([z.string(), z.null()])
  .transform((value, ctx): string | null => {
    if (value === null || value.trim() === '') return null;
    const date = new Date(value.trim());
    if (Number.isNaN(date.getTime()) || date.getUTCFullYear() < 1900 || date.getUTCFullYear() > 9999) {
      ctx.addIssue({ code: 'custom', message: 'must be a date such as 2026-12-31' });
      return z.NEVER;
    }
    return date.toISOString().slice(0, 10);
  })
  .meta({ type: ['string', 'null'], format: 'date', description: 'A date such as 2026-12-31 (any parseable date is accepted)' });

/** ISO 3166-1 alpha-2, upper-cased; empty clears it. */
export const countryInput = z
  .union([z.string(), z.null()])
  .transform((v) => (v === null || v.trim() === '' ? null : v.trim().toUpperCase()))
  .pipe(z.string().regex(/^[A-Z]{2}$/, 'must be a 2-letter ISO country code').nullable())
  .optional();

/** ISO 4217 code, upper-cased on input. */
export const currencyInput = z
  .string()
  .trim()
  .toUpperCase()
  .regex(/^[A-Z]{3}$/, 'must be a 3-letter ISO currency code');

/** A query-string or body id: a positive integer, given as a number or a numeric string. */
export const idInput = z
  .union([z.number(), z.string().trim().regex(/^\d+$/, 'must be a positive integer id').transform(Number)])
  .pipe(z.number().int('must be a positive integer id').positive('must be a positive integer id').max(2147483647, 'must be a positive integer id'));

/** A list filter: exact match; an empty value is ignored. */
export const filterInput = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim()))
  .refine(noNul, noNulMessage);

/** A list filter holding an id; empty is ignored, anything else must be an id (400-free: 422 naming it). */
export const idFilterInput = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim()))
  .pipe(z.string().regex(/^[1-9]\d{0,9}$/, 'must be a positive integer id').transform(Number).optional());

/** Whether quantity × price, rounded half-up to cents, stays below 10^12 (what numeric(14,2) holds); exact, in integers. */
export function lineTotalFits(quantity: string, price: string): boolean {
  const scaled = (text: string, scale: number) => {
    const [whole, fraction = ''] = text.split('.');
    return BigInt(whole + fraction.padEnd(scale, '0'));
  };
  const cents = (scaled(quantity, 3) * scaled(price, 2) + 500n) / 1000n;
  return cents < 10n ** 14n;
}

/** PostgreSQL's numeric_value_out_of_range: a sum grew past what its column holds. */
export function isNumericOverflow(err: unknown): boolean {
  return (err as { code?: string }).code === '22003';
}

/**
 * The fields a partial update gives (PUT = PATCH): an omitted field parses to undefined and is left
 * out, so it keeps its value. `keys` limits the result to those fields (the editable columns).
 */
export function givenFields<T extends object>(input: T, keys: readonly (keyof T)[] = Object.keys(input) as (keyof T)[]): Partial<T> {
  return Object.fromEntries(keys.filter((key) => input[key] !== undefined).map((key) => [key, input[key]])) as Partial<T>;
}
