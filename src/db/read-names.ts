import { hash } from 'node:crypto';

/**
 * The name a list read's text is prepared under, on PostgreSQL (prepared.ts settingRead) and in PGlite's thread
 * (pglite-worker.ts) alike: by its text's hash, so a text has one name wherever it runs.
 */
export const readStatementName = (sql: string): string => `quoting_read_${hash('sha256', sql, 'hex').slice(0, 24)}`;
