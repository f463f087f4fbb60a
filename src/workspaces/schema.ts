import { z } from 'zod';
import { timestamp, id } from '../schema/output.js';
import { currencyInput, emailInput, optionalLine, optionalText, requiredText } from '../schema/input.js';

export const workspaceOut = z.object({
  id,
  name: z.string(),
  slug: z.string(),
  status: z.enum(['trialing', 'active', 'suspended']),
  trial_ends_at: timestamp.nullable(),
  public_key: z.string(),
  time_zone: z.string().nullable().describe('The IANA time zone the app shows dates in (Europe/Paris); null is UTC'),
  created_at: timestamp,
  updated_at: timestamp,
}).meta({ id: 'Workspace' });

export const keysOut = z.object({
  public_key: z.string().describe('pk_live_…: safe to embed in web pages'),
  secret_key: z.string().describe('sk_live_…: shown this once; store it safely'),
}).meta({ id: 'Keys' });

export const userOut = z.object({
  id,
  email: z.string(),
  name: z.string(),
  workspace_id: id.nullable(),
  role: z.enum(['owner', 'member']).nullable(),
  created_at: timestamp,
  updated_at: timestamp,
}).meta({ id: 'User' });

export const slugInput = z
  .string()
  .trim()
  .toLowerCase()
  .regex(/^[a-z0-9](?:[a-z0-9-]{0,46}[a-z0-9])?$/, 'must be 1-48 lower-case letters, digits or dashes, not starting or ending with a dash');

export const workspaceNameInput = requiredText(200);

export const createWorkspaceBody = z.object({
  name: workspaceNameInput,
  slug: slugInput.optional(),
});

export const adminWorkspaceOut = workspaceOut.extend({ users: z.number().int(), owner_email: z.string().nullable() }).meta({ id: 'AdminWorkspace' });

export const adminWorkspacePatch = z.object({
  status: z.enum(['trialing', 'active', 'suspended']).optional(),
  trial_ends_at: z
    .union([z.string(), z.null()])
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v === null || v === '') return v === '' ? null : v;
      const date = new Date(v);
      if (Number.isNaN(date.getTime())) {
        ctx.addIssue({ code: 'custom', message: 'must be a date, e.g. 2026-12-31T00:00:00Z' });
        return z.NEVER;
      }
      return date;
    }),
});

/** Whether Intl knows the zone: its canonical name (`europe/paris` → `Europe/Paris`), or null. Offsets are no zone. */
export function canonicalTimeZone(name: string): string | null {
  if (!/^[A-Za-z]/.test(name)) return null;
  try {
    return new Intl.DateTimeFormat('en', { timeZone: name }).resolvedOptions().timeZone;
  } catch {
    return null;
  }
}

/** An IANA time zone name (`Europe/Paris`, `UTC`); empty or null is none, which shows dates in UTC. */
export const timeZoneInput = z
  .union([z.string(), z.null()])
  .transform((v, ctx) => {
    const name = v?.trim() ?? '';
    if (name === '') return null;
    const zone = name.length <= 100 ? canonicalTimeZone(name) : null;
    if (!zone) {
      ctx.addIssue({ code: 'custom', message: 'must be an IANA time zone name, e.g. Europe/Paris or America/New_York' });
      return z.NEVER;
    }
    return zone;
  });

/** What the owner changes of their workspace: its name and the time zone of its pages' dates. */
export const workspaceSettingsBody = z.object({
  name: workspaceNameInput.optional(),
  time_zone: timeZoneInput.optional(),
});
export type WorkspaceSettings = z.output<typeof workspaceSettingsBody>;

/** The seller's details as the API shows them (GET /workspace/profile); every field null until the owner sets it. */
export const profileOut = z.object({
  legal_name: z.string().nullable().describe('The name quotes are issued under; the workspace name when null'),
  address: z.string().nullable().describe('Postal address, one line per line'),
  tax_number: z.string().nullable().describe('VAT, GST or other tax registration number'),
  email: z.string().nullable(),
  phone: z.string().nullable(),
  website: z.string().nullable(),
  default_terms: z.string().nullable().describe('Shown under the notes of every quote (page, mail, PDF)'),
  default_validity_days: z.number().int().nullable().describe('A new quote given no valid_until is valid this many days (UTC) from its creation'),
  default_currency: z.string().nullable().describe("A new quote's currency when neither the request nor its channel names one (else USD)"),
  time_zone: z.string().nullable().describe('The IANA time zone pages show times in; the same value as the workspace\'s time_zone'),
  logo: z.object({
    type: z.enum(['image/png', 'image/jpeg']),
    bytes: z.number().int(),
    updated_at: timestamp,
    url: z.string().describe('GET it with the session: /api/v1/workspace/profile/logo'),
  }).nullable().describe('Set with PUT /workspace/profile/logo'),
  updated_at: timestamp.nullable(),
}).meta({ id: 'WorkspaceProfile' });

/** What PATCH and PUT /workspace/profile take: each field optional; an empty string or null clears it. */
export const profileBody = z.object({
  legal_name: optionalLine(200),
  address: optionalText(1000).refine((v) => v == null || v.split('\n').length <= 8, 'must be at most 8 lines'),
  tax_number: optionalLine(100),
  email: z.union([z.literal(''), z.null(), emailInput]).optional().transform((v) => (v === '' ? null : v)),
  phone: optionalLine(50),
  website: optionalLine(200).refine((v) => v == null || /^(https?:\/\/)?[^\s/]+\.[^\s]+$/i.test(v), 'must be a web address, e.g. https://example.com'),
  default_terms: optionalText(5000),
  default_validity_days: z
    .union([z.number(), z.string(), z.null()])
    .optional()
    .transform((v, ctx) => {
      if (v === undefined) return undefined;
      if (v === null || (typeof v === 'string' && v.trim() === '')) return null;
      const n = typeof v === 'number' ? v : /^\s*\d+\s*$/.test(v) ? Number(v) : NaN;
      if (!Number.isInteger(n) || n < 1 || n > 3650) {
        ctx.addIssue({ code: 'custom', message: 'must be a whole number of days from 1 to 3650' });
        return z.NEVER;
      }
      return n;
    })
    .meta({ type: ['integer', 'null'], minimum: 1, maximum: 3650 }),
  default_currency: z.union([z.literal(''), z.null(), currencyInput]).optional().transform((v) => (v === '' ? null : v)),
  time_zone: timeZoneInput.optional(),
});
export type ProfileChanges = z.output<typeof profileBody>;

/** Reminders before expiry: the days before a sent quote's valid_until its customer is mailed; null is off. */
export const reminderDaysInput = z
  .union([z.number(), z.string(), z.null()])
  .transform((v, ctx) => {
    if (v === null || (typeof v === 'string' && v.trim() === '')) return null;
    const n = typeof v === 'number' ? v : /^\s*\d{1,4}\s*$/.test(v) ? Number(v) : NaN;
    if (!Number.isInteger(n) || n < 1 || n > 365) {
      ctx.addIssue({ code: 'custom', message: 'must be a whole number of days from 1 to 365, or null (empty) for no reminders' });
      return z.NEVER;
    }
    return n;
  })
  .meta({ type: ['integer', 'null'], minimum: 1, maximum: 365 });

export const reminderSettingsBody = z.object({ reminder_days: reminderDaysInput.optional() });

export const reminderSettingsOut = z.object({
  reminder_days: z.number().int().min(1).max(365).nullable().describe('Days before a sent quote\'s valid_until its customer is reminded by mail; null: off'),
}).meta({ id: 'ReminderSettings' });
