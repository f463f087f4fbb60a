import { backups } from './backups.js';
import type { Check, DatabaseAccess, DoctorContext, Finding } from './check.js';
import { databaseReachable, pendingMigrations, webhookBacklog, workerRuns } from './database.js';
import { smtp, stripe } from './peers.js';
import { connectionPooler } from './pooler.js';
import { appUrl, configuration, nodeVersion, trustProxy } from './settings.js';
import { signup } from './signup.js';
import { dataDir, diskSpace } from './storage.js';

export type { DatabaseAccess, DoctorContext, Finding } from './check.js';
export { describeDatabase } from './database.js';

/** Every check of `quoting doctor`, in the order they are printed. */
export const checks: Check[] = [
  configuration,
  nodeVersion,
  databaseReachable,
  pendingMigrations,
  connectionPooler,
  dataDir,
  diskSpace,
  smtp,
  stripe,
  appUrl,
  trustProxy,
  signup,
  webhookBacklog,
  workerRuns,
  backups,
];

export interface Result extends Finding {
  id: string;
  title: string;
}

/** Runs the checks one after the other; a check that throws is a fail naming the error, never a crash of the others. */
export async function runChecks(ctx: DoctorContext, list: Check[] = checks): Promise<Result[]> {
  const results: Result[] = [];
  for (const check of list) {
    const invalid = (check.reads ?? []).filter((name) => ctx.invalid.has(name));
    let finding: Finding;
    if (invalid.length) {
      finding = { status: 'warn', message: `not checked: ${invalid.join(', ')} ${invalid.length === 1 ? 'is' : 'are'} invalid`, fix: 'see Configuration' };
    } else {
      try {
        finding = await check.run(ctx);
      } catch (err) {
        finding = { status: 'fail', message: `the check failed: ${String((err as Error).message ?? err).split('\n')[0]}`, fix: 'run again with LOG_LEVEL=debug for details' };
      }
    }
    results.push({ id: check.id, title: check.title, ...finding });
  }
  return results;
}

export type { DatabaseAccess as Access };
export type { Check };
export const unreachable = (status: 'warn' | 'fail', reason: string, fix?: string): DatabaseAccess => ({ ok: false, status, reason, fix });
