import { hash } from 'node:crypto';

/**
 * How a list's statements are planned, in both forms (keyset.ts, numbered-pages.ts) and on both databases: bitmap
 * scans off (before a table has statistics, a fresh import, the planner fetches every row of the workspace through a
 * bitmap and sorts them all, where the ordered index scan reads only the rows up to the page's end), and an index's
 * reads of the table priced as the cached reads they are (random_page_cost 1.1, PostgreSQL's advice for storage
 * without seeks): at the default of 4 the planner walks the primary key and filters out most of its rows rather than
 * read a filter's own index (quotes by status).
 */
export const LIST_READ_SETTINGS: Readonly<Record<string, string>> = { enable_bitmapscan: 'off', random_page_cost: '1.1' };

/** Settings as the `set local …` statements that apply them to the current transaction; a name or value that is not a plain word or number is refused. */
export function setLocalStatements(settings: Readonly<Record<string, string>>): string[] {
  return Object.entries(settings).map(([name, value]) => {
    if (!/^\w+$/.test(name) || !/^[\w.]+$/.test(value)) throw new Error(`not a setting: ${name} = ${value}`);
    return `set local ${name} = ${value}`;
  });
}

/** The same, as one simple query's text. */
export const setLocal = (settings: Readonly<Record<string, string>>): string => setLocalStatements(settings).join('; ');

/** LIST_READ_SETTINGS as one simple query's text, written once rather than on every read. */
export const LIST_READ_SQL = setLocal(LIST_READ_SETTINGS);

/**
 * The name a list read's text is prepared under, on PostgreSQL (prepared.ts settingRead) and in PGlite's thread
 * (pglite-worker.ts) alike: by its text's hash, so a text has one name wherever it runs.
 */
export const readStatementName = (sql: string): string => `quoting_read_${hash('sha256', sql, 'hex').slice(0, 24)}`;
