/**
 * How long a test waits for something that is bound to happen (a process to start, a request to
 * arrive, a mail, a lease to run out) before calling it a hang. Deliberately generous: on a loaded
 * two-core machine many embedded databases start at once and everything is slow, and no test
 * measures speed. ava's own timeout (ava.config.js) is longer still.
 */
export const PATIENCE_MS = 4 * 60_000;
