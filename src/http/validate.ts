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

/** numeric(14,2): at most 12 digits before the point. */
const MAX_INTEGER_DIGITS = 12;

/**
 * Money in: a number or a numeric string, ≥ 0, at most 2 decimals; null or '' clears it.
 * The result is the validated decimal text, handed to PostgreSQL as it stands (no float arithmetic here).
 */
export const moneyInput = z
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
      if (value < 0) return fail('must be zero or more');
      text = String(value);
      // String() switches to exponent form below 1e-6 and from 1e21 on: too precise or too large.
      if (/e/i.test(text)) return fail(Math.abs(value) < 1 ? 'must have at most 2 decimal places' : 'must be less than 1000000000000');
    } else if (typeof value === 'string') {
      text = value.trim();
      if (text === '') return null;
    } else {
      return fail('must be a number or a numeric string such as "12.50"');
    }
    if (/^-\s*\d*\.?\d+$/.test(text)) return fail('must be zero or more');
    const match = /^(\d+)(?:\.(\d+))?$/.exec(text);
    if (!match) return fail('must be a decimal number such as "12.50"');
    if ((match[2] ?? '').length > 2) return fail('must have at most 2 decimal places');
    if (match[1].replace(/^0+(?=\d)/, '').length > MAX_INTEGER_DIGITS) return fail('must be less than 1000000000000');
    return text;
  })
  .meta({
    type: ['string', 'number', 'null'],
    description: 'Money: a number or a decimal string, zero or more, at most 2 decimals (stored and returned as "12.50"); null clears it',
    examples: ['12.50', 12.5],
  });


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
