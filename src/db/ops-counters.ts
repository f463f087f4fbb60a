import type { Db } from './database.js';

/**
 * Counters of the whole installation in `ops_counters` (migration 20261127190000): what the worker, the imports, the
 * backups and the CLI did, in whichever process, read by /metrics. Labels are outcomes and results, never tenant data.
 */
export type OpsMetric = 'webhook_deliveries' | 'webhook_worker_runs' | 'import_rows' | 'imports' | 'backups';

/** Adds `counts` (label → how many) to `metric` in one statement; zero counts are left out. */
export async function addCounts(db: Db, metric: OpsMetric, counts: Record<string, number>): Promise<void> {
  const rows = Object.entries(counts)
    .filter(([, n]) => n > 0)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)) // key order: two writers wait for each other, never deadlock
    .map(([label, value]) => ({ label, value }));
  if (!rows.length) return;
  await db.raw(
    `insert into ops_counters (metric, label, value)
     select ?, r.label, r.value from json_to_recordset(?::json) as r(label text, value bigint)
     on conflict (metric, label) do update set value = ops_counters.value + excluded.value, updated_at = now()`,
    [metric, JSON.stringify(rows)],
  );
}
