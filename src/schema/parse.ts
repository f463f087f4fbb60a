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

/** Every problem of the input, each naming its field (for reports that list them all, such as import rows). */
export function inputIssues<S extends z.ZodType>(schema: S, input: unknown): { ok: true; data: z.output<S> } | { ok: false; issues: { field: string; message: string }[] } {
  const result = schema.safeParse(input);
  if (result.success) return { ok: true, data: result.data };
  return {
    ok: false,
    issues: result.error.issues.map((issue) => {
      const field = issue.path.map(String).join('.') || 'row';
      return { field, message: describeIssue(field, issue) };
    }),
  };
}

function describeIssue(field: string, issue: z.core.$ZodIssue): string {
  if (issue.code === 'invalid_type' && /received undefined/.test(issue.message)) return `${field} is required.`;
  if (issue.code === 'unrecognized_keys') return `Unknown field ${issue.keys.join(', ')}.`;
  const message = issue.message.replace(/^Invalid input: /, '');
  return `${field}: ${message.charAt(0).toLowerCase()}${message.slice(1)}${message.endsWith('.') ? '' : '.'}`;
}
