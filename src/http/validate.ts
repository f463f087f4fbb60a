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
