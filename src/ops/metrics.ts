import type { Knex } from 'knex';
import { Counter, Gauge, Registry } from 'prom-client';
import type { OpsMetric } from '../db/ops-counters.js';

/**
 * The installation's figures for GET /metrics, read from the database at each scrape in one statement, so that
 * whichever server is scraped they are the sum of every process (the worker's and the CLI's included): webhook
 * deliveries by outcome, the queue, the worker's last run, imports and their rows, scheduled backups, the database's size. No label
 * carries tenant data: they are outcomes, results and queue states.
 */
export class InstallationMetrics {
  readonly registry = new Registry();
  private readonly deliveries = this.counter('quoting_webhook_deliveries_total', 'Webhook delivery attempts, by outcome (every process).', 'outcome');
  private readonly workerRuns = this.counter('quoting_webhook_worker_runs_total', 'Housekeeping rounds of the webhook workers (every few seconds while one watches).');
  private readonly importRows = this.counter('quoting_import_rows_total', 'Rows of applied imports, by outcome (created, updated, unchanged, failed).', 'outcome');
  private readonly imports = this.counter('quoting_imports_total', 'Imports, by result (applied, dry_run, aborted, failed).', 'result');
  private readonly queue = new Gauge({
    name: 'quoting_webhook_queue_deliveries',
    help: 'Webhook deliveries by queue state: due (to send now), failed (waiting for a retry), dead (given up).',
    labelNames: ['state'],
    registers: [this.registry],
  });
  private readonly oldestDue = this.gauge('quoting_webhook_queue_oldest_due_age_seconds', 'How long the oldest due delivery has been due (0: none).');
  private readonly lastRun = this.gauge('quoting_webhook_worker_last_run_timestamp_seconds', "The last webhook worker's housekeeping round, in Unix seconds (0: never).");
  private readonly size = this.gauge('quoting_database_size_bytes', 'Size of the database (pg_database_size).');
  private readonly backups = this.counter('quoting_backups_total', 'Scheduled backups (quoting backup without --out, or serve on BACKUP_SCHEDULE), by outcome (succeeded, failed).', 'outcome');
  private readonly backupLastSuccess = this.gauge('quoting_backup_last_success_timestamp_seconds', 'When the last scheduled backup that succeeded finished, in Unix seconds (0: never).');
  private readonly backupLastRunOk = this.gauge('quoting_backup_last_run_success', 'Whether the last scheduled backup succeeded: 1, or 0 when it failed (1 before any has run).');

  constructor(private readonly db: Knex) {}

  /** The figures as Prometheus text, read now. */
  async text(): Promise<string> {
    const row = (await this.db.raw(FIGURES)).rows[0] as Figures;
    this.queue.set({ state: 'due' }, Number(row.due));
    this.queue.set({ state: 'failed' }, Number(row.failed));
    this.queue.set({ state: 'dead' }, Number(row.dead));
    this.oldestDue.set(Number(row.oldest_due_seconds ?? 0));
    this.size.set(Number(row.size));
    const counters: Record<OpsMetric, Counter> = { webhook_deliveries: this.deliveries, webhook_worker_runs: this.workerRuns, import_rows: this.importRows, imports: this.imports, backups: this.backups };
    for (const counter of Object.values(counters)) counter.reset();
    for (const outcome of ['succeeded', 'failed', 'dead']) this.deliveries.inc({ outcome }, 0);
    for (const outcome of ['created', 'updated', 'unchanged', 'failed']) this.importRows.inc({ outcome }, 0);
    for (const result of ['applied', 'dry_run', 'aborted', 'failed']) this.imports.inc({ result }, 0);
    for (const outcome of ['succeeded', 'failed']) this.backups.inc({ outcome }, 0);
    this.workerRuns.inc(0);
    this.lastRun.set(0);
    // The counters' updated_at is when each outcome last happened: the later one is the last run's.
    const backupAt = { succeeded: 0, failed: 0 };
    for (const [metric, label, value, at] of row.counters) {
      const counter = counters[metric as OpsMetric];
      if (!counter) continue;
      if (metric === 'webhook_worker_runs') {
        counter.inc(Number(value));
        this.lastRun.set(Number(at));
      } else if (metric === 'backups') {
        counter.inc({ outcome: label }, Number(value));
        if (label === 'succeeded' || label === 'failed') backupAt[label] = Number(at);
      } else counter.inc({ [metric === 'imports' ? 'result' : 'outcome']: label }, Number(value));
    }
    this.backupLastSuccess.set(backupAt.succeeded);
    this.backupLastRunOk.set(backupAt.failed > backupAt.succeeded ? 0 : 1);
    return this.registry.metrics();
  }

  private counter(name: string, help: string, label?: string): Counter {
    return new Counter({ name, help, labelNames: label ? [label] : [], registers: [this.registry] });
  }

  private gauge(name: string, help: string): Gauge {
    return new Gauge({ name, help, registers: [this.registry] });
  }
}

interface Figures {
  due: string;
  failed: string;
  dead: string;
  oldest_due_seconds: number | null;
  size: string;
  counters: [string, string, string, number][];
}

/**
 * One statement, each part on an index: the due and failed rows on the queue's partial index (pending or failed),
 * the dead ones on theirs, the counters a few rows.
 */
const FIGURES = `/* all workspaces: the installation's figures for /metrics */ select
  (select count(*) from webhook_deliveries where status in ('pending', 'failed') and next_attempt_at <= now()) as due,
  (select count(*) from webhook_deliveries where status in ('pending', 'failed') and status = 'failed') as failed,
  (select count(*) from webhook_deliveries where status = 'dead') as dead,
  (select extract(epoch from now() - min(next_attempt_at))::float8 from webhook_deliveries where status in ('pending', 'failed') and next_attempt_at <= now()) as oldest_due_seconds,
  pg_database_size(current_database()) as size,
  (select coalesce(json_agg(json_build_array(metric, label, value::text, extract(epoch from updated_at)::float8)), '[]'::json) from ops_counters) as counters`;
