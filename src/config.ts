import { createRequire } from 'node:module';
import { isIP } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';

/**
 * DATA_DIR when unset: `data/` in the program's own folder (the checkout, or the installed tree), never the current
 * directory, so a command run from elsewhere (cron runs from `/`) finds the same database. This file is dist/src/config.js.
 */
export const defaultDataDir = fileURLToPath(new URL('../../data', import.meta.url));

/** node-cron is loaded only when BACKUP_SCHEDULE is set: every command reads this file at start-up. */
const validCron = (expression: string): boolean => (createRequire(import.meta.url)('node-cron') as typeof import('node-cron')).validate(expression);

/** A number within [min, max]; every way of failing gives the same message, which states what is expected. */
const bounded = (min: number, max: number, expects: string, options: { whole?: boolean } = {}) => {
  const error = { error: expects };
  const n = z.coerce.number(error).min(min, error).max(max, error);
  return options.whole ? n.int(error) : n;
};

const flag = z
  .string()
  .trim()
  .transform((v) => ['1', 'true', 't', 'yes', 'on'].includes(v.toLowerCase()));

const optionalText = z
  .string()
  .trim()
  .transform((v) => (v === '' ? undefined : v))
  .optional();

/**
 * The scheme is checked too: `localhost:5432/db` parses as a URL whose scheme is `localhost:`. With `host`,
 * so is the host: `smtp:/bad` parses (smtp is no scheme WHATWG knows) with none, and mail would go nowhere.
 */
const url = (what: string, protocols: string[], options: { host?: boolean } = {}) =>
  z
    .string()
    .trim()
    .refine((v) => {
      try {
        const parsed = new URL(v);
        return protocols.includes(parsed.protocol) && (!options.host || parsed.hostname !== '');
      } catch {
        return false;
      }
    }, `expects ${what}`);

/** Every setting of the program, read from the environment once. */
export const configSchema = z.object({
  PORT: bounded(0, 65535, 'expects a port number (0-65535)', { whole: true }).default(3000),
  HOST: z.string().trim().min(1).default('127.0.0.1'),
  APP_URL: url('an absolute URL such as https://quotes.example.com', ['http:', 'https:']).optional(),
  DATABASE_URL: url('a PostgreSQL URL such as postgres://user@host:5432/db', ['postgres:', 'postgresql:']).optional().or(z.literal('').transform(() => undefined)),
  /**
   * `transaction`: DATABASE_URL goes through a transaction-mode pooler (PgBouncer, a managed service's pooler port):
   * no named prepared statement and no session state outlives a transaction (see "Scaling" in README.md).
   */
  DATABASE_POOLER: z.enum(['transaction', 'none'], { error: 'expects transaction (DATABASE_URL is a transaction-mode pooler) or none' }).optional(),
  /** A direct connection (not through the pooler) for LISTEN, when DATABASE_POOLER=transaction; without it, polling. */
  DATABASE_LISTEN_URL: url('a PostgreSQL URL such as postgres://user@host:5432/db', ['postgres:', 'postgresql:']).optional().or(z.literal('').transform(() => undefined)),
  DATA_DIR: z.string().trim().min(1).default(defaultDataDir),
  /** Unset: each command's own default (serve 10, worker --watch 6, others 2: withDatabase in src/cli/context.ts). */
  DATABASE_POOL_MAX: bounded(1, 1000, 'expects a whole number from 1 to 1000', { whole: true }).optional(),
  MIGRATE_TOKEN: optionalText,
  /** Turns GET /metrics on, for `Authorization: Bearer <METRICS_TOKEN>` (unset: 404). */
  METRICS_TOKEN: optionalText,
  ADMIN_API_KEY: optionalText,
  SIGNUP: z.enum(['open', 'closed'], { error: 'expects open or closed' }).default('open'),
  TRIAL_DAYS: z
    .string()
    .trim()
    .optional()
    .transform((v) => (v === undefined || v === '' ? undefined : Number(v)))
    .refine((v) => v === undefined || (Number.isInteger(v) && v >= 0), 'expects a whole number of days (0 or more)'),
  TRUST_PROXY: flag.default(false),
  SMTP_URL: url('an SMTP URL such as smtp://user:pass@mail.example.com:587', ['smtp:', 'smtps:'], { host: true }).optional().or(z.literal('').transform(() => undefined)),
  MAIL_FROM: z.string().trim().min(3).default('Quoting <no-reply@localhost>'),
  STRIPE_SECRET_KEY: optionalText,
  STRIPE_WEBHOOK_SECRET: optionalText,
  STRIPE_API_BASE: url('an absolute URL such as http://127.0.0.1:12111', ['http:', 'https:']).optional().or(z.literal('').transform(() => undefined)),
  WEBHOOKS_ENABLED: flag.default(true),
  WEBHOOK_MAX_ATTEMPTS: bounded(1, 100, 'expects a whole number from 1 to 100', { whole: true }).default(6),
  WEBHOOK_TIMEOUT_SECONDS: bounded(0.1, 300, 'expects a number of seconds (0.1 to 300)').default(20),
  WEBHOOK_WORKER_BATCH: bounded(1, 10_000, 'expects a whole number from 1 to 10000', { whole: true }).default(100),
  WEBHOOK_CONCURRENCY: bounded(1, 256, 'expects a whole number from 1 to 256', { whole: true }).default(16),
  WEBHOOK_LEASE_SECONDS: bounded(1, 3600, 'expects a number of seconds (1 to 3600)').optional(),
  OUTBOUND_ALLOWED_CIDRS: z
    .string()
    .trim()
    .transform((v) => v.split(',').map((c) => c.trim()).filter(Boolean))
    .refine((cidrs) => cidrs.every(isCidr), 'expects comma-separated CIDRs such as 10.0.0.0/8,127.0.0.1/32')
    .default([]),
  IMPORT_WINDOW_SECONDS: bounded(0, 86_400, 'expects a number of seconds (0 to 86400)')
    .default(600),
  SESSION_CACHE_SECONDS: z.coerce
    .number({ error: 'expects a whole number of seconds (0 turns the cache off)' })
    .int({ error: 'expects a whole number of seconds (0 turns the cache off)' })
    .min(0, { error: 'expects a whole number of seconds (0 turns the cache off)' })
    .max(3600, { error: 'expects at most 3600 seconds' })
    .default(30),
  TRACK_RATE_PER_MINUTE: bounded(1, 1_000_000_000, 'expects a whole number of events from 1 to 1000000000', { whole: true }).default(1200),
  TRACK_RETENTION_DAYS: bounded(1, 36_500, 'expects a whole number of days from 1 to 36500', { whole: true }).default(400),
  /** A cron expression (5 fields, or 6 with seconds first): when scheduled backups run (README, Scheduled backups). */
  BACKUP_SCHEDULE: z
    .string()
    .trim()
    .refine((v) => v.split(/\s+/).length >= 5 && v.split(/\s+/).length <= 6 && validCron(v), 'expects a cron expression such as "0 3 * * *" (minute hour day-of-month month day-of-week)')
    .optional(),
  /** Unset: DATA_DIR/backups (filled in by loadConfig). */
  BACKUP_DIR: z.string().trim().min(1).optional(),
  BACKUP_KEEP: bounded(1, 10_000, 'expects a whole number of backups from 1 to 10000', { whole: true }).default(7),
  LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error', 'silent'], { error: 'expects one of debug, info, warn, error, silent' }).default('info'),
});

export type Config = z.infer<typeof configSchema> & { APP_URL: string; BACKUP_DIR: string };

/** One entry per invalid variable. */
export interface ConfigProblem {
  variable: string;
  /** What it expects, and the value given unless the variable may hold a secret. */
  message: string;
}

export class ConfigError extends Error {
  constructor(
    message: string,
    readonly problems: ConfigProblem[] = [],
  ) {
    super(message);
  }
}

/** Variables whose value may hold a password or a credential: never echoed in an error. */
const secretVariables = new Set(['DATABASE_URL', 'DATABASE_LISTEN_URL', 'SMTP_URL', 'MIGRATE_TOKEN', 'METRICS_TOKEN', 'ADMIN_API_KEY', 'STRIPE_SECRET_KEY', 'STRIPE_WEBHOOK_SECRET']);

/**
 * Parses the environment; bad values throw one line naming every invalid variable and what it
 * expects (the value given is shown, except for variables that may hold a secret).
 * A blank variable (`PORT=` in an env file) counts as unset and takes the default.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const known = Object.fromEntries(
    Object.keys(configSchema.shape)
      .filter((key) => env[key] !== undefined && env[key].trim() !== '')
      .map((key) => [key, env[key]]),
  );
  const result = configSchema.safeParse(known);
  if (!result.success) {
    const problems: ConfigProblem[] = [];
    for (const issue of result.error.issues) {
      const variable = String(issue.path[0] ?? 'environment');
      if (problems.some((p) => p.variable === variable)) continue;
      const given = secretVariables.has(variable) ? 'the value is not shown: it may hold a secret' : `got ${JSON.stringify(env[variable] ?? '')}`;
      problems.push({ variable, message: `${variable} ${describe(issue.message)} (${given})` });
    }
    const prefix = problems.length > 1 ? `${problems.length} invalid settings: ` : '';
    throw new ConfigError(prefix + problems.map((p) => p.message).join('; '), problems);
  }
  const config = result.data;
  return {
    ...config,
    APP_URL: (config.APP_URL ?? `http://${hostForUrl(config.HOST)}:${config.PORT}`).replace(/\/+$/, ''),
    BACKUP_DIR: config.BACKUP_DIR ?? path.join(config.DATA_DIR, 'backups'),
  };
}

function isCidr(value: string): boolean {
  const [address, bits, ...rest] = value.split('/');
  const family = isIP(address);
  if (!family || rest.length || bits === undefined || !/^\d{1,3}$/.test(bits)) return false;
  return Number(bits) <= (family === 4 ? 32 : 128);
}

function describe(message: string): string {
  return message.startsWith('expects') ? message : `expects a valid value: ${message}`;
}

function hostForUrl(host: string): string {
  if (host === '0.0.0.0' || host === '::') return 'localhost';
  return host.includes(':') ? `[${host}]` : host;
}
