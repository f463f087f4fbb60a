import test, { type ExecutionContext } from 'ava';
import { usingPostgres } from './database.js';

type Register = (title: string, fn: (t: ExecutionContext) => void | Promise<void>) => void;

/**
 * `test` (or `test.serial`) when `runs` holds, else the same test as `test.skip` with `reason` in its title:
 * chosen when the file loads, so the runner reports a test that cannot run here as skipped, never as passed.
 */
export function testWhen(runs: boolean, reason: string, options: { serial?: boolean } = {}): Register {
  const register = options.serial ? test.serial : test;
  return (title, fn) => (runs ? register(title, fn) : register.skip(`${title} [${reason}]`, fn));
}

/** A test that needs PostgreSQL. */
export const postgresTest = testWhen(usingPostgres, 'needs PostgreSQL: set TEST_DATABASE_URL');

/** A test about the embedded database alone. */
export const embeddedTest = testWhen(!usingPostgres, 'about the embedded database: runs when TEST_DATABASE_URL is unset');
