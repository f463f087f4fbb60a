/**
 * Imports that run in the background of the server process, for the app's import page: the file is spooled while the
 * request lasts, then a dry run starts without holding the request; the person reads its report, then applies the
 * same spooled file (no second upload) or cancels it. Each run is `importSpooledCsv`, the API's own import, so the
 * limits, the window, the transaction and the one-at-a-time rule of a kind in a workspace are the API's.
 *
 * Jobs live in this process's memory, keyed by workspace and job id, and are visible to the user who started them
 * only (an order import's errors may name orders of channels another member cannot read). They are forgotten, and
 * their file removed, KEEP_MS after their last change; a restart forgets them all (a running import then rolls back).
 */
import crypto from 'node:crypto';
import type { Knex } from 'knex';
import type { Access } from '../access.js';
import { Conflict, HttpError, NotFound } from '../errors.js';
import { errorFields, log } from '../log.js';
import { importSpooledCsv, type ImportKind, type ImportProgress, type ImportReport, type Spooled } from './service.js';

/** How long a job stays viewable (and a checked file waits for apply) after its last change. */
export const KEEP_MS = 60 * 60_000;
/** Uploaded files a user may hold at once, waiting for a run or a decision (each up to 20 MB on disk). */
export const MAX_HELD_FILES = 5;

/**
 * - `waiting`: its turn has not come (another import of its kind into the workspace runs, as in the API).
 * - `running`: being read and written (a dry run, or the import itself: see `stage`).
 * - `checked`: the dry run is over; the file waits for apply or cancel.
 * - `done`: applied. `cancelled`: nothing written. `failed`: the run stopped (`error`), nothing written.
 */
export type JobStatus = 'waiting' | 'running' | 'checked' | 'done' | 'cancelled' | 'failed';

export interface ImportJob {
  readonly id: number;
  readonly workspaceId: number;
  readonly userId: number;
  readonly kind: ImportKind;
  /** The file's name, or the URL it was fetched from. */
  readonly source: string;
  /** The file's size in bytes. */
  readonly size: number;
  readonly createdAt: Date;
  stage: 'dry_run' | 'apply';
  status: JobStatus;
  /** The current run's progress: rows read, rows failed, bytes of the file read. */
  progress: ImportProgress;
  /** When the current run got its turn, and when it ended. */
  runStartedAt: Date | null;
  finishedAt: Date | null;
  dryRun: ImportReport | null;
  report: ImportReport | null;
  error: { status: number; message: string } | null;
  changedAt: number;
}

interface Held {
  job: ImportJob;
  file: Spooled | null;
  abort: AbortController | null;
}

const jobs = new Map<string, Held>();
const keyOf = (workspaceId: number, id: number) => `${workspaceId}:${id}`;
let lastId = 0;

/** A job id: positive, below 2^31, not reused within a process, and not the same sequence in every process. */
function nextId(): number {
  lastId = lastId === 0 ? crypto.randomInt(1, 1_000_000) : lastId + 1;
  return lastId;
}

function userOf(access: Access): number {
  if (access.userId === null) throw new HttpError(403, 'The import pages are for signed-in users.');
  return access.userId;
}

/** Forgets jobs past KEEP_MS (removing what file they still hold); a running job is never forgotten. */
function sweep(now = Date.now()): void {
  for (const [key, held] of jobs) {
    const busy = held.job.status === 'waiting' || held.job.status === 'running';
    if (!busy && now - held.job.changedAt > KEEP_MS) {
      jobs.delete(key);
      void dropFile(held);
    }
  }
}

let sweeper: NodeJS.Timeout | undefined;
function keepSweeping(): void {
  // Files of jobs nobody looks at again are removed too; the timer never keeps the process alive.
  sweeper ??= setInterval(() => sweep(), 60_000).unref();
}

async function dropFile(held: Held): Promise<void> {
  const file = held.file;
  held.file = null;
  await file?.remove().catch((err: unknown) => log.warn('import file not removed', errorFields(err)));
}

function touch(job: ImportJob, changes: Partial<ImportJob>): void {
  Object.assign(job, changes, { changedAt: Date.now() });
}

/** The caller's job, or 404: another workspace's or another user's job is not there. */
function heldOf(access: Access, id: number): Held {
  sweep();
  const held = jobs.get(keyOf(access.workspaceId, id));
  if (!held || held.job.userId !== userOf(access)) throw new NotFound('There is no such import.');
  return held;
}

export function getImportJob(access: Access, id: number): ImportJob {
  return heldOf(access, id).job;
}

/** The caller's jobs in this workspace, newest first. */
export function importJobs(access: Access): ImportJob[] {
  sweep();
  const userId = userOf(access);
  return [...jobs.values()]
    .map((held) => held.job)
    .filter((job) => job.workspaceId === access.workspaceId && job.userId === userId)
    .sort((a, b) => b.id - a.id);
}

/** Refuses a new file while the user holds MAX_HELD_FILES (each a spooled file on the server's disk). */
export function assertRoomForFile(access: Access): void {
  sweep();
  const userId = userOf(access);
  const held = [...jobs.values()].filter((h) => h.file && h.job.workspaceId === access.workspaceId && h.job.userId === userId).length;
  if (held >= MAX_HELD_FILES) {
    throw new Conflict(`You have ${held} imports waiting to be applied or cancelled; apply or cancel one of them first.`);
  }
}

export interface StartOptions {
  source: string;
  windowSeconds: number;
  /** Epoch ms the dry run's window counts from: the upload's start. */
  startedAt: number;
}

/** Takes a spooled file (the job now owns it) and starts its dry run in the background. */
export function startImportJob(db: Knex, access: Access, kind: ImportKind, file: Spooled, options: StartOptions): ImportJob {
  keepSweeping();
  const job: ImportJob = {
    id: nextId(), workspaceId: access.workspaceId, userId: userOf(access), kind, source: options.source, size: file.size, createdAt: new Date(),
    stage: 'dry_run', status: 'waiting', progress: { rows: 0, failed: 0, bytes: 0 }, runStartedAt: null, finishedAt: null,
    dryRun: null, report: null, error: null, changedAt: Date.now(),
  };
  const held: Held = { job, file, abort: null };
  jobs.set(keyOf(job.workspaceId, job.id), held);
  run(db, access, held, { windowSeconds: options.windowSeconds, startedAt: options.startedAt });
  return job;
}

/** Applies a checked job's file (the caller's access, as the API would take it now); it runs in the background. */
export function applyImportJob(db: Knex, access: Access, id: number, windowSeconds: number): ImportJob {
  const held = heldOf(access, id);
  const { job } = held;
  if (job.status !== 'checked' || !held.file) throw new Conflict(stateMessage(job));
  touch(job, { stage: 'apply', status: 'waiting', progress: { rows: 0, failed: 0, bytes: 0 }, runStartedAt: null, finishedAt: null });
  run(db, access, held, { windowSeconds, startedAt: Date.now() });
  return job;
}

/** Cancels a job before or while it runs, or after its dry run: nothing is written and the file is removed. */
export async function cancelImportJob(access: Access, id: number): Promise<ImportJob> {
  const held = heldOf(access, id);
  const { job } = held;
  if (job.status === 'done' || job.status === 'cancelled' || job.status === 'failed') throw new Conflict(stateMessage(job));
  if (held.abort) {
    // The run rolls back (at once, or when its turn comes) and then lets go of the file.
    held.abort.abort();
    if (job.status === 'waiting') touch(job, { status: 'cancelled', finishedAt: new Date() });
    return job;
  }
  touch(job, { status: 'cancelled', finishedAt: new Date() });
  await dropFile(held);
  return job;
}

/** Why a job takes no more actions, in its status's words. */
function stateMessage(job: ImportJob): string {
  switch (job.status) {
    case 'done':
      return 'This import was already applied.';
    case 'cancelled':
      return 'This import was cancelled; upload the file again to import it.';
    case 'failed':
      return 'This import stopped with an error; upload the file again to import it.';
    case 'checked':
      return 'The file of this import is no longer held; upload it again.';
    default:
      return job.stage === 'apply' ? 'This import is being applied.' : 'The dry run of this import is still running.';
  }
}

function run(db: Knex, access: Access, held: Held, window: { windowSeconds: number; startedAt: number }): void {
  const { job } = held;
  const abort = new AbortController();
  held.abort = abort;
  const dryRun = job.stage === 'dry_run';
  void importSpooledCsv(db, access, job.kind, held.file!, {
    dryRun,
    onError: 'skip',
    ...window,
    signal: abort.signal,
    onStart: () => {
      if (!abort.signal.aborted) touch(job, { status: 'running', runStartedAt: new Date() });
    },
    onProgress: (progress) => {
      job.progress = progress;
      job.changedAt = Date.now();
    },
  }).then(
    async (report) => {
      held.abort = null;
      if (dryRun) return touch(job, { status: 'checked', dryRun: report, finishedAt: new Date() });
      touch(job, { status: 'done', report, finishedAt: new Date() });
      await dropFile(held);
    },
    async (err: unknown) => {
      held.abort = null;
      if (abort.signal.aborted) {
        if (job.status !== 'cancelled') touch(job, { status: 'cancelled', finishedAt: new Date() });
      }
      else {
        const status = err instanceof HttpError ? err.status : 500;
        if (status >= 500) log.error('background import failed', { workspace_id: job.workspaceId, import_id: job.id, ...errorFields(err) });
        const message = err instanceof HttpError ? err.message : 'The import failed on our side; nothing was written. Try again later.';
        touch(job, { status: 'failed', error: { status, message }, finishedAt: new Date() });
      }
      await dropFile(held);
    },
  );
}
