import type { Database } from '../db/database.js';
import { errorFields, log } from '../log.js';
import { WEBHOOK_CHANNEL } from './service.js';
import { DeliveryWorker, type RunSummary, type WorkerSettings } from './worker.js';

function logSummary(summary: RunSummary): void {
  if (summary.claimed) log.info('deliveries', { ...summary });
}

/**
 * `quoting worker --watch`: drains batch after batch; when the queue is empty, sleeps until a new
 * delivery is announced (NOTIFY after the emitting commit) or a second has passed (retries come
 * due with time, not with a notification).
 */
export async function watchDeliveries(database: Database, settings: WorkerSettings, signal: AbortSignal): Promise<void> {
  const worker = new DeliveryWorker(database.knex, settings);
  let announced = false;
  let wake = () => {};
  const stopListening = database.listen(WEBHOOK_CHANNEL, () => {
    announced = true;
    wake();
  });
  const onAbort = () => wake();
  signal.addEventListener('abort', onAbort);
  try {
    while (!signal.aborted) {
      announced = false;
      let summary: RunSummary;
      try {
        summary = await worker.runOnce({ pipelined: true });
        logSummary(summary);
      } catch (err) {
        log.error('delivery run failed', errorFields(err));
        summary = { claimed: 0, succeeded: 0, failed: 0, dead: 0 };
      }
      // A stop asked for during the run ends the loop now, not after another second's wait.
      if (summary.claimed >= settings.batch || announced || signal.aborted) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 1000);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wake = () => {};
    }
  } finally {
    signal.removeEventListener('abort', onAbort);
    await stopListening();
    await worker.stop();
    worker.close();
  }
}

/**
 * The in-process worker of `quoting serve` on the embedded database (where no second process may
 * open the data): a node-cron schedule runs a batch every second, never two at once.
 */
export async function scheduleDeliveries(database: Database, settings: WorkerSettings): Promise<() => Promise<void>> {
  const { default: cron } = await import('node-cron');
  const worker = new DeliveryWorker(database.knex, settings);
  let running: Promise<void> | null = null;
  const task = cron.schedule('* * * * * *', () => {
    running ??= (async () => {
      try {
        for (let summary = await worker.runOnce(); ; summary = await worker.runOnce()) {
          logSummary(summary);
          if (summary.claimed < settings.batch) break;
        }
      } catch (err) {
        log.error('delivery run failed', errorFields(err));
      } finally {
        running = null;
      }
    })();
  });
  return async () => {
    await task.stop();
    await running;
    worker.close();
  };
}
