import type { Database } from '../db/database.js';
import { errorFields, log } from '../log.js';
import { WEBHOOK_CHANNEL } from '../events/outbox.js';
import { DeliveryWorker, type RunSummary, type WorkerSettings } from './worker.js';

/** How often housekeeping runs (and a watching worker logs what it attempted). */
const HOUSEKEEPING_MS = 5000;

function logSummary(summary: RunSummary): void {
  if (summary.claimed) log.info('deliveries', { ...summary });
}

function housekeep(worker: DeliveryWorker): Promise<void> {
  return worker.housekeep().catch((err) => log.error('delivery housekeeping failed', errorFields(err)));
}

/**
 * `quoting worker --watch`: the worker's pipeline runs until the signal; when a claim finds less than a
 * batch, the next waits until a new delivery is announced (NOTIFY after the emitting commit) or a second has
 * passed (retries come due with time, not with a notification). Housekeeping runs at start and every few
 * seconds, apart from the claims.
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
  const waitForWork = async () => {
    if (!announced && !signal.aborted) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 1000);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wake = () => {};
    }
    // Cleared before the claim that follows, so an announcement made during that claim is not missed.
    announced = false;
  };
  await housekeep(worker);
  const schedule = setInterval(() => {
    logSummary(worker.takeSummary());
    void housekeep(worker);
  }, HOUSEKEEPING_MS);
  try {
    await worker.runContinuously(signal, waitForWork);
  } finally {
    clearInterval(schedule);
    signal.removeEventListener('abort', onAbort);
    await stopListening();
    logSummary(worker.takeSummary());
    worker.close();
  }
}

/**
 * The in-process worker of `quoting serve` on the embedded database (where no second process may
 * open the data): a run of batches when a delivery is announced (the NOTIFY of the emitting commit,
 * heard from PGlite itself) and, for retries that come due with time, every second on a node-cron
 * schedule; never two runs at once, and an announcement during a run starts another after it (the run
 * may have claimed before that commit). Housekeeping at the first run and every few seconds.
 */
export async function scheduleDeliveries(database: Database, settings: WorkerSettings): Promise<() => Promise<void>> {
  const { default: cron } = await import('node-cron');
  const worker = new DeliveryWorker(database.knex, settings);
  let running: Promise<void> | null = null;
  let again = false;
  let stopped = false;
  let housekeptAt = -Infinity;
  const run = (): void => {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = (async () => {
      try {
        if (Date.now() - housekeptAt >= HOUSEKEEPING_MS) {
          housekeptAt = Date.now();
          await housekeep(worker);
        }
        for (let summary = await worker.runOnce({ housekeeping: false }); ; summary = await worker.runOnce({ housekeeping: false })) {
          logSummary(summary);
          if (summary.claimed < settings.batch) break;
        }
      } catch (err) {
        log.error('delivery run failed', errorFields(err));
      }
    })().finally(() => {
      running = null;
      if (again) {
        again = false;
        run();
      }
    });
  };
  const stopListening = database.listen(WEBHOOK_CHANNEL, run);
  const task = cron.schedule('* * * * * *', run);
  return async () => {
    stopped = true;
    await task.stop();
    await stopListening();
    await running;
    worker.close();
  };
}
