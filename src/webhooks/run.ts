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
 * The in-process worker of `quoting serve` on the embedded database (where no second process may open the data):
 * the same pipeline as `quoting worker --watch`, woken by the NOTIFY of each emitting commit (heard from PGlite
 * itself) and every second for retries that come due with time. It ran batch after batch before, each drained
 * (sent and recorded) before the next claim, and delivered about 0.4–0.5 of the ceiling at 16x100 in the webhooks
 * benchmark. Resolves once started; the function it gives stops it (attempts in flight finish, unsent rows are
 * given back, outcomes written).
 */
export async function scheduleDeliveries(database: Database, settings: WorkerSettings): Promise<() => Promise<void>> {
  const controller = new AbortController();
  const running = watchDeliveries(database, settings, controller.signal).catch((err) => log.error('delivery run failed', errorFields(err)));
  return async () => {
    controller.abort();
    await running;
  };
}
