import { z } from 'zod';

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

/**
 * Names, SKUs, ids and the like are printed on one line (mail headers and bodies, CSV, logs): a line
 * break there could forge a line, so every control character is refused: C0 (tab, CR and LF included),
 * DEL, C1, and the Unicode line and paragraph separators.
 */
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;
const singleLine = (v: string | null | undefined) => v == null || !CONTROL.test(v);
const singleLineMessage = 'must be a single line without control characters (no line breaks or tabs)';

/** Product and variant SKUs, and the SKUs that name them elsewhere, hold up to this many characters (as Shopify's handles and SKUs). */
export const SKU_MAX = 255;

/** Optional free text, line breaks allowed (notes, descriptions): trimmed, at most `max` characters; an empty string or null clears the field. */
export const optionalText = (max: number) =>
  z
    .union([z.string(), z.null()])
    .transform((v) => (v === null || v.trim() === '' ? null : v.trim()))
    .pipe(z.string().max(max, `must be at most ${max} characters`).refine(noNul, noNulMessage).nullable())
    .optional();

/** Optional single-line text (a name, company, phone, SKU): as optionalText, without control characters. */
export const optionalLine = (max: number) =>
  z
    .union([z.string(), z.null()])
    .transform((v) => (v === null || v.trim() === '' ? null : v.trim()))
    .pipe(z.string().max(max, `must be at most ${max} characters`).refine(singleLine, singleLineMessage).nullable())
    .optional();

/** A required name-like text: trimmed, not empty, a single line without control characters. */
export const requiredText = (max: number) =>
  z.string().trim().min(1, 'must not be empty').max(max, `must be at most ${max} characters`).refine(singleLine, singleLineMessage);

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
    .meta({
      type: ['string', 'number', 'null'],
      description: rules.description,
      examples: rules.examples,
      // The limits above, for the document: a number's range, and a string's digits (blank is null).
      ...(rules.zero ? { minimum: 0 } : { exclusiveMinimum: 0 }),
      exclusiveMaximum: Number(limit),
      pattern: `^\\s*(0*\\d{1,${rules.integerDigits}}(\\.\\d{1,${rules.scale}})?)?\\s*$`,
    });
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

/** An enum list filter: exact match, empty ignored, anything else must be one of the values (422 naming the filter). */
export const enumFilter = <T extends readonly [string, ...string[]]>(values: T, description = 'Exact match') =>
  filterInput
    .pipe(z.enum(values, { error: `must be one of ${values.join(', ')}` }).optional())
    .meta({ type: 'string', enum: [...values], description });

/** A list filter holding an id; empty is ignored, anything else must be an id (400-free: 422 naming it). */
export const idFilterInput = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim()))
  .pipe(z.string().regex(/^[1-9]\d{0,9}$/, 'must be a positive integer id').transform(Number).optional())
  .meta({ type: 'integer', minimum: 1, description: 'Exact match on the id' });
