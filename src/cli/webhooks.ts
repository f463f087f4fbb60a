import os from 'node:os';
import type { Knex } from 'knex';
import { z } from 'zod';
import { parseInput } from '../schema/parse.js';
import { watchDeliveries } from '../webhooks/run.js';
import { resendDeliveries } from '../webhooks/service.js';
import { DeliveryWorker, workerSettings, type RunSummary, type WorkerSettings } from '../webhooks/worker.js';
import type { Config } from '../config.js';
import { DataDirInUse } from '../db/database.js';
import { findWorkspaceBySlug } from '../workspaces/service.js';
import { keepPurgingTracking, purgeExpiredTracking } from '../tracking/retention.js';
import { createMailer } from '../mail/mailer.js';
import { keepSendingReminders, sendReminders } from '../quotes/reminders.js';
import { commandConfig, servedCommand, withDatabase } from './context.js';
import { say, type CommandIo } from './io.js';

/**
 * One batch (cron, the systemd timer), or with --watch a loop until SIGINT/SIGTERM. Under cron it is
 * silent when nothing was due and prints one summary line otherwise; a SIGTERM lets the batch in
 * hand finish and its outcomes be recorded before the process exits (exit 0).
 */
export async function workerCommand(opts: Record<string, unknown>, io: CommandIo): Promise<void> {
  const served = servedCommand();
  if (served) {
    // Run by cron next to an embedded-database server: serve delivers in-process, so nothing to do.
    if (io.stdout.isTTY) say(io.stdout, `Nothing to do: quoting serve (process ${served.serverPid}) delivers webhooks in-process on the embedded database.`);
    return;
  }
  const config = commandConfig(opts);
  const settings = workerSettings(config);
  try {
    await deliver(config, settings, opts, io);
  } catch (err) {
    // A cron entry left on the embedded database while serve holds it: serve delivers, nothing is wrong.
    if (!(err instanceof DataDirInUse)) throw err;
    if (io.stdout.isTTY) say(io.stdout, `${err.message.split('. ')[0]}; quoting serve delivers webhooks itself on the embedded database, so there is nothing to do.`);
  }
}

/** One run's reminders before expiry (none without SMTP_URL). */
async function remind(knex: Knex, config: Config) {
  const mailer = createMailer(config.SMTP_URL, config.MAIL_FROM);
  try {
    return await sendReminders(knex, mailer, config.APP_URL, { events: config.WEBHOOKS_ENABLED });
  } finally {
    mailer?.close();
  }
}

async function deliver(config: Config, settings: WorkerSettings, opts: Record<string, unknown>, io: CommandIo): Promise<void> {
  await withDatabase(
    config,
    async (database) => {
      const { knex } = database;
      if (opts.watch) {
        // The stop handlers go in before the first line: whoever waits for it may signal at once.
        const { signal } = io;
        say(io.stdout, `Watching for deliveries (batch ${settings.batch}, ${settings.concurrency} at once); stop with Ctrl-C.`);
        await recordRun(knex, 'watch', 0);
        // doctor tells a live watcher from a dead one by this record, so it is refreshed while watching.
        const heartbeat = setInterval(() => void recordRun(knex, 'watch', 0).catch(() => undefined), 30_000);
        void keepPurgingTracking(knex, config, signal);
        const mailer = createMailer(config.SMTP_URL, config.MAIL_FROM);
        const reminding = keepSendingReminders(knex, mailer, config.APP_URL, { events: config.WEBHOOKS_ENABLED }, signal);
        try {
          await watchDeliveries(database, settings, signal);
        } finally {
          clearInterval(heartbeat);
          await reminding;
          mailer?.close();
        }
        return;
      }
      // Asking for the signal installs the SIGTERM handler: a stop (systemd, cron's kill) then lets
      // the one batch in hand finish and be recorded instead of killing the process mid-batch.
      void io.signal;
      await purgeExpiredTracking(knex, config);
      const reminded = await remind(knex, config);
      if (reminded.sent || reminded.failed) say(io.stdout, `Reminders: ${reminded.sent} sent${reminded.failed ? `, ${reminded.failed} refused by the mail server (tried again next run)` : ''}.`);
      const started = new Date(Date.now() - 1000);
      const worker = new DeliveryWorker(knex, settings);
      try {
        const summary = await worker.runOnce();
        await recordRun(knex, 'once', summary.claimed);
        if (summary.claimed) say(io.stdout, summaryLine(summary, summary.failed + summary.dead ? await failureReasons(knex, started) : []));
      } finally {
        worker.close();
      }
    },
    {
      needsSchema: true,
      // --watch claims, writes outcome groups, renews leases and housekeeps at the same time: with a connection
      // each they do not queue behind one another (2 connections left the lanes waiting for claims). The worker's
      // commits do not wait for the WAL flush: see "Durability" at DeliveryWorker (src/webhooks/worker.ts).
      pool: { poolMax: opts.watch ? 6 : 2, asyncCommit: true },
    },
  );
}

function summaryLine({ claimed, succeeded, failed, dead }: RunSummary, reasons: { reason: string; n: number }[]): string {
  const line = `Attempted ${claimed} ${claimed === 1 ? 'delivery' : 'deliveries'}: ${succeeded} succeeded, ${failed} failed (will retry), ${dead} dead.`;
  if (!reasons.length) return line;
  return `${line} Failures: ${reasons.map(({ reason, n }) => `${reason.length > 80 ? `${reason.slice(0, 77)}...` : reason} (${n})`).join('; ')}.`;
}

/**
 * The commonest errors of the attempts made since `since`: failed rows are found through the queue's
 * index (their next attempt is later than now), dead ones only when this run killed some. An
 * overlapping worker's failures of the same minutes may be counted too.
 */
async function failureReasons(knex: Knex, since: Date): Promise<{ reason: string; n: number }[]> {
  const { rows } = await knex.raw(
    `/* all workspaces: the worker's run, which spans them */ select coalesce(last_error, 'HTTP ' || last_status_code) as reason, count(*)::int as n from webhook_deliveries
     where ((status = 'failed' and next_attempt_at >= ?) or status = 'dead') and last_attempt_at >= ?
     group by 1 order by 2 desc, 1 limit 3`,
    [since, since],
  );
  return rows;
}

/** The newest worker run, one row (see migrations/..._worker_runs.ts), read by `quoting doctor`. */
async function recordRun(knex: Knex, mode: 'once' | 'watch', claimed: number): Promise<void> {
  await knex.raw(
    `insert into worker_runs (id, finished_at, mode, claimed, host, pid) values (1, now(), ?, ?, ?, ?)
     on conflict (id) do update set finished_at = excluded.finished_at, mode = excluded.mode, claimed = excluded.claimed, host = excluded.host, pid = excluded.pid`,
    [mode, claimed, os.hostname(), process.pid],
  );
}

/** Which of ids and --status/--workspace must be given is checked as a usage error (src/cli/index.ts). */
const resendOptions = z.object({
  ids: z.array(z.string().regex(/^[1-9]\d{0,9}$/, 'must be delivery ids (positive integers)').transform(Number)),
  workspace: z.string().optional(),
  status: z.enum(['dead', 'failed'], { error: 'must be dead or failed' }).optional(),
  since: z
    .string()
    .optional()
    .refine((v) => v === undefined || !Number.isNaN(new Date(v).getTime()), 'must be a date such as 2026-11-21T00:00:00Z')
    .transform((v) => (v === undefined ? undefined : new Date(v))),
  subscription: z.string().regex(/^[1-9]\d{0,9}$/, 'must be a subscription id').transform(Number).optional(),
});

export async function resendCommand(ids: string[], opts: Record<string, unknown>, io: CommandIo): Promise<void> {
  const config = commandConfig(opts);
  const input = parseInput(resendOptions, { ids, workspace: opts.workspace, status: opts.status, since: opts.since, subscription: opts.subscription });
  const requeued = await withDatabase(
    config,
    async ({ knex }) => {
      let workspaceId: number | undefined;
      if (input.workspace) {
        const workspace = await findWorkspaceBySlug(knex, input.workspace);
        if (!workspace) throw new Error(`no workspace with slug "${input.workspace}"`);
        workspaceId = workspace.id;
      }
      return resendDeliveries(knex, {
        workspaceId,
        ids: input.ids.length ? input.ids : undefined,
        status: input.status,
        since: input.since,
        subscriptionId: input.subscription,
      });
    },
    { needsSchema: true },
  );
  say(io.stdout, `Re-queued ${requeued.length} ${requeued.length === 1 ? 'delivery' : 'deliveries'}${requeued.length ? `: ${requeued.join(', ')}` : ''}.`);
  if (input.ids.length > requeued.length) {
    const missing = input.ids.filter((id) => !requeued.includes(id));
    throw new Error(`not re-queued (unknown, being attempted right now, or their subscription is paused or was deleted): ${missing.join(', ')}`);
  }
}
