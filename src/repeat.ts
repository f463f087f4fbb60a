/** The in-process scheduler: runs a job every N ms until aborted (the tracking purge, the embedded database's vacuum). */
import { setTimeout as sleep } from 'node:timers/promises';
import { errorFields, log } from './log.js';

/** Resolves after `ms`, or at once when `signal` aborts; the wait never keeps the process alive. */
export const pause = (ms: number, signal?: AbortSignal): Promise<void> => sleep(ms, undefined, { signal, ref: false }).then(
  () => undefined,
  () => undefined,
);

/**
 * Runs `task` at once (or, with `{ now: false }`, after one interval) and then every `everyMs` until `signal` aborts.
 * Resolves once the run under way, if any, has finished, so the caller may then close what the task uses. A failure
 * is logged as `failed` (unless it came of the abort) and the next run comes as usual.
 */
export async function repeatUntilAborted(failed: string, everyMs: number, signal: AbortSignal, task: () => Promise<unknown>, options: { now?: boolean } = {}): Promise<void> {
  if (options.now === false) await pause(everyMs, signal);
  while (!signal.aborted) {
    try {
      await task();
    } catch (err) {
      if (!signal.aborted) log.error(failed, errorFields(err));
    }
    await pause(everyMs, signal);
  }
}
