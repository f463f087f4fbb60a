import type { Knex } from 'knex';
import type { Config } from '../config.js';
import { log } from '../log.js';
import { repeatUntilAborted } from '../repeat.js';

/** Rows deleted per statement, so a large backlog never holds locks for long. */
const BATCH = 10_000;
/** How often a long-running process (serve on the embedded database, worker --watch) purges. */
const EVERY_MS = 10 * 60_000;

export interface PurgeSummary {
  events: number;
  windows: number;
  joinCodes: number;
}

/**
 * Deletes tracking events older than TRACK_RETENTION_DAYS, rate windows older than an hour and join
 * codes a week past their expiry (kept that long so a late redemption still hears 410, not 404).
 * Workspace by workspace, so every delete walks an index that leads with workspace_id.
 */
export async function purgeExpiredTracking(db: Knex, config: Pick<Config, 'TRACK_RETENTION_DAYS'>): Promise<PurgeSummary> {
  const summary: PurgeSummary = { events: 0, windows: 0, joinCodes: 0 };
  const workspaces: { id: number }[] = await db('workspaces').select('id').orderBy('id');
  for (const { id } of workspaces) {
    for (;;) {
      const { rowCount } = await db.raw(
        `delete from track_events where ctid = any(array(
           select ctid from track_events where workspace_id = ? and occurred_at < now() - make_interval(days => ?) limit ${BATCH}))`,
        [id, config.TRACK_RETENTION_DAYS],
      );
      summary.events += rowCount ?? 0;
      if ((rowCount ?? 0) < BATCH) break;
    }
    // Counted from the command's row count, as the events are: knex's delete() answers an object, not a number, on PGlite.
    const windows = await db.raw(`delete from track_rate_windows where workspace_id = ? and window_start < now() - interval '1 hour'`, [id]);
    summary.windows += windows.rowCount ?? 0;
    const joinCodes = await db.raw(`delete from track_join_codes where workspace_id = ? and expires_at < now() - interval '7 days'`, [id]);
    summary.joinCodes += joinCodes.rowCount ?? 0;
  }
  if (summary.events || summary.joinCodes) log.info('tracking purged', { ...summary });
  return summary;
}

/**
 * Purges now and then every ten minutes until `signal` aborts; resolves when the last purge has
 * finished, so the caller may close the database after awaiting it. Failures are logged, not thrown.
 */
export function keepPurgingTracking(db: Knex, config: Pick<Config, 'TRACK_RETENTION_DAYS'>, signal: AbortSignal): Promise<void> {
  return repeatUntilAborted('tracking purge failed', EVERY_MS, signal, () => purgeExpiredTracking(db, config));
}
