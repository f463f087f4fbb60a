import { z } from 'zod';
import { parseInput } from '../http/validate.js';
import { watchDeliveries } from '../webhooks/run.js';
import { resendDeliveries } from '../webhooks/service.js';
import { DeliveryWorker, workerSettings } from '../webhooks/worker.js';
import { findWorkspaceBySlug } from '../workspaces/service.js';
import { commandConfig, withDatabase } from './context.js';

/** One batch (cron), or with --watch a loop until SIGINT/SIGTERM. */
export async function workerCommand(opts: Record<string, unknown>): Promise<void> {
  const config = commandConfig(opts);
  const settings = workerSettings(config);
  await withDatabase(
    config,
    async (database) => {
      if (opts.watch) {
        const stop = new AbortController();
        process.once('SIGINT', () => stop.abort());
        process.once('SIGTERM', () => stop.abort());
        console.log(`Watching for deliveries (batch ${settings.batch}, ${settings.concurrency} at once); stop with Ctrl-C.`);
        await watchDeliveries(database, settings, stop.signal);
        return;
      }
      const worker = new DeliveryWorker(database.knex, settings);
      try {
        const { claimed, succeeded, failed, dead } = await worker.runOnce();
        console.log(claimed ? `Attempted ${claimed} deliveries: ${succeeded} succeeded, ${failed} failed (will retry), ${dead} dead.` : 'No deliveries due.');
      } finally {
        worker.close();
      }
    },
    { needsSchema: true },
  );
}

const resendOptions = z
  .object({
    ids: z.array(z.string().regex(/^[1-9]\d{0,9}$/, 'must be delivery ids (positive integers)').transform(Number)),
    workspace: z.string().optional(),
    status: z.enum(['dead', 'failed'], { error: 'must be dead or failed' }).optional(),
    since: z
      .string()
      .optional()
      .refine((v) => v === undefined || !Number.isNaN(new Date(v).getTime()), 'must be a date such as 2026-11-21T00:00:00Z')
      .transform((v) => (v === undefined ? undefined : new Date(v))),
    subscription: z.string().regex(/^[1-9]\d{0,9}$/, 'must be a subscription id').transform(Number).optional(),
  })
  .refine((o) => o.ids.length > 0 || (o.workspace && o.status), {
    message: 'give delivery ids, or --workspace <slug> with --status dead|failed',
    path: ['ids'],
  })
  .refine((o) => o.ids.length === 0 || (!o.status && !o.since && !o.subscription), {
    message: 'give either delivery ids or --status/--since/--subscription, not both',
    path: ['ids'],
  });

export async function resendCommand(ids: string[], opts: Record<string, unknown>): Promise<void> {
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
  console.log(`Re-queued ${requeued.length} ${requeued.length === 1 ? 'delivery' : 'deliveries'}${requeued.length ? `: ${requeued.join(', ')}` : ''}.`);
  if (input.ids.length > requeued.length) {
    const missing = input.ids.filter((id) => !requeued.includes(id));
    throw new Error(`not re-queued (unknown, being attempted right now, or their subscription is paused or was deleted): ${missing.join(', ')}`);
  }
}
