import { AsyncLocalStorage } from 'node:async_hooks';
import type { Knex } from 'knex';

/**
 * The tenant tables: every table with a `workspace_id` column (test/tenancy.test.ts compares this with the migrated
 * schema). A statement that names one must name `workspace_id` too, or say why it spans every workspace.
 */
export const TENANT_TABLES: readonly string[] = [
  'channel_members',
  'channels',
  'customer_texts',
  'customers',
  'events',
  'invites',
  'order_items',
  'order_texts',
  'orders',
  'payment_events',
  'product_texts',
  'products',
  'quote_activities',
  'quote_counts',
  'quote_lines',
  'quote_numbers',
  'quote_ranges',
  'quote_texts',
  'quotes',
  'track_events',
  'track_join_codes',
  'track_rate_windows',
  'users',
  'variants',
  'visitors',
  'webhook_deliveries',
  'webhook_subscriptions',
  'workspace_profiles',
];

const tenantTables = new Set(TENANT_TABLES);

/**
 * The mark of a statement that spans every workspace on purpose, saying why: the comment `/* all workspaces: why *\/`
 * in its text (raw SQL; knex's `.comment('all workspaces: why')` on a select), or, on a knex builder (whose
 * `.comment()` reaches selects only), `.queryContext({ allWorkspaces: 'why' })`.
 */
const MARKER = /\/\*\s*all workspaces:\s*[^*\s][^*]*\*\//i;

/** Where a table name follows: FROM, JOIN, UPDATE, INSERT INTO, DELETE FROM … USING, TRUNCATE, COPY, LOCK. */
const TABLE_POSITION = /\b(?:from|join|update|into|using|truncate(?:\s+table)?|copy|lock(?:\s+table)?)\s+(?:only\s+)?/gi;
/** A table name (schema-qualified or not; quotes removed), an optional alias, then maybe a comma and another. */
const TABLE_NAME = /\s*(?:\w+\s*\.\s*)?(\w+)(?:\s+(?:as\s+)?(?!(?:where|on|using|set|join|inner|left|right|full|cross|natural|group|order|limit|offset|returning|for|union|except|intersect|values|select|default|window|having|fetch|lateral)\b)\w+)?\s*(,?)/iy;

/** A value: a placeholder (knex's `?`, its `$n`, a prepared statement's `:name`), a number, or `(select ?)`. */
const VALUE = String.raw`(?:\?|\$\d+|:\w+|\d+\b|\(\s*select\s+(?:\?|\$\d+|:\w+))`;
/** The ways a statement's text names a workspace (quotes removed, lower case). */
const NAMES_WORKSPACE = [
  new RegExp(String.raw`\bworkspace_id\s*(?:=|=\s*any\s*\(|in\s*\()\s*${VALUE}`),
  new RegExp(String.raw`${VALUE}\s*=\s*(?:\w+\.)?workspace_id\b`),
  new RegExp(String.raw`\(\s*(?:[\w.]+\s*,\s*)*(?:\w+\.)?workspace_id\b[\w., ]*\)\s*(?:=|in)\s*\(\s*\(?\s*${VALUE}`),
  /\binsert\s+into\s+[\w.]+\s*(?:as\s+\w+\s*)?\([^)]*\bworkspace_id\b/,
];

/**
 * Why `sql` may not run as it stands: it names a tenant table and does not name a workspace, nor carries the mark.
 * A statement names a workspace when it compares `workspace_id` with a value (`workspace_id = ?`, `= any(?)`,
 * `in (…)`, `= (select ?)`) or gives it as a column an INSERT fills; selecting or joining on it is not enough. The
 * check reads the text, so it knows that the statement names a workspace, not that every tenant table in it is
 * limited to it.
 */
export function tenancyProblem(sql: string): string | undefined {
  if (MARKER.test(sql)) return undefined;
  const text = withoutCommentsAndLiterals(sql).toLowerCase().replace(/"/g, '');
  if (NAMES_WORKSPACE.some((pattern) => pattern.test(text))) return undefined;
  for (const position of text.matchAll(TABLE_POSITION)) {
    TABLE_NAME.lastIndex = position.index + position[0].length;
    for (let name = TABLE_NAME.exec(text); name; name = TABLE_NAME.exec(text)) {
      if (tenantTables.has(name[1])) return `names the tenant table ${name[1]} without its workspace`;
      if (!name[2]) break;
    }
  }
  return undefined;
}

/** Comments and string literals can neither name a table nor a workspace. */
function withoutCommentsAndLiterals(sql: string): string {
  return sql.replace(/\/\*[\s\S]*?\*\/|--[^\n]*|'(?:[^']|'')*'|\$(\w*)\$[\s\S]*?\$\1\$/g, ' ');
}

/** A statement on a tenant table that names no workspace: a programming error, answered 500 and logged. */
export class TenancyViolation extends Error {
  constructor(problem: string, sql: string) {
    super(`Refused a statement that ${problem} (mark it /* all workspaces: why */ if it must span them): ${sql.slice(0, 200)}`);
    this.name = 'TenancyViolation';
  }
}

/** Verdicts by SQL text: the statements of this code are few and constant, so a statement costs a lookup. */
const verdicts = new Map<string, string | null>();
const MAX_VERDICTS = 5000;

/** Set while knex's migrator runs (see guardTenancy). */
const exempt = new AsyncLocalStorage<true>();

/** Throws TenancyViolation when `sql` may not run (see tenancyProblem and MARKER). */
export function assertTenancy(sql: string, context?: { allWorkspaces?: unknown }): void {
  let problem = verdicts.get(sql);
  if (problem === undefined) {
    problem = tenancyProblem(sql) ?? null;
    if (verdicts.size >= MAX_VERDICTS) verdicts.clear();
    verdicts.set(sql, problem);
  }
  if (problem !== null && !context?.allWorkspaces && !exempt.getStore()) throw new TenancyViolation(problem, sql);
}

/**
 * Checks every statement this knex sends (its transactions' too: they pass theirs on to it) before it is sent. knex
 * emits `query` from inside its client's `query`, before the driver is called: a throw there rejects the statement's
 * promise and nothing reaches the database. Its migrator runs unchecked: migrations change the schema and fill new
 * columns over every workspace by design.
 */
export function guardTenancy(knex: Knex): void {
  knex.client.on('query', (query: { sql?: unknown; queryContext?: { allWorkspaces?: unknown } }) => {
    if (typeof query.sql === 'string') assertTenancy(query.sql, query.queryContext);
  });
  const migrate = Object.getOwnPropertyDescriptor(knex, 'migrate')!;
  Object.defineProperty(knex, 'migrate', {
    configurable: true,
    get() {
      const migrator = migrate.get!.call(this) as Record<string, (...args: unknown[]) => Promise<unknown>>;
      for (const method of ['latest', 'up', 'down', 'rollback', 'to', 'before']) {
        const run = migrator[method].bind(migrator);
        migrator[method] = (...args) => exempt.run(true, () => run(...args));
      }
      return migrator;
    },
  });
}
