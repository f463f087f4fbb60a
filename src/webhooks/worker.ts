import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { Config } from '../config.js';
import { preparedQuery } from '../db/prepared.js';
import { addCounts } from '../db/ops-counters.js';
import { errorFields, log } from '../log.js';
import { outboundAgents, outboundPolicy, post, type PostResult } from './outbound.js';
import { signatureHeader } from './signature.js';

/** Delay before attempt n + 1 after failure n (1-based); later failures wait as long as the last. */
export const RETRY_DELAYS_SECONDS = [30, 120, 600, 3600, 21_600];
const MAX_RESPONSE_BYTES = 8 * 1024;
/** Outcomes are written in groups: at most this long after the first of a group is known... */
const FLUSH_AFTER_MS = 5;
/** ...or at once when this many are waiting. One UPDATE per group, one group in flight at a time. */
const FLUSH_AT = 64;
/**
 * Claims a --watch worker may have under way at once. A claim of a batch under load took about as long as the lanes
 * took to send one, so with one at a time the lanes found the queue empty; two overlap (SKIP LOCKED keeps them apart).
 */
const FEEDERS = 2;
/** A group whose UPDATE fails is tried again this often before its rows are left to lapse. */
const RECORD_TRIES = 3;

export interface WorkerSettings {
  batch: number;
  concurrency: number;
  maxAttempts: number;
  timeoutMs: number;
  leaseSeconds: number;
  allowedCidrs: string[];
}

export function workerSettings(config: Config): WorkerSettings {
  return {
    batch: config.WEBHOOK_WORKER_BATCH,
    concurrency: config.WEBHOOK_CONCURRENCY,
    maxAttempts: config.WEBHOOK_MAX_ATTEMPTS,
    timeoutMs: config.WEBHOOK_TIMEOUT_SECONDS * 1000,
    // Renewed every third of it while the worker holds the rows, so it only bounds how long the rows of a
    // worker that died wait before another worker takes them.
    leaseSeconds: config.WEBHOOK_LEASE_SECONDS ?? 60,
    allowedCidrs: config.OUTBOUND_ALLOWED_CIDRS,
  };
}

/** One claim's reservation: the token its rows carry and until when (local clock) they are surely still ours. */
interface Lease {
  token: string;
  validUntil: number;
}

interface Claimed {
  id: number;
  lease: Lease;
  attempt: number;
  url: string;
  secrets: string[];
  event_id: string;
  event_type: string;
  body: string;
}

interface Outcome {
  id: number;
  token: string;
  status: 'succeeded' | 'failed' | 'dead';
  code: number | null;
  error: string | null;
  body: string | null;
  /** When the attempt ended, in milliseconds since the epoch (Date.now(): far cheaper than an ISO text a delivery). */
  at: number;
  delay: number;
}

export interface RunSummary {
  claimed: number;
  succeeded: number;
  failed: number;
  dead: number;
}

/** Wakes everyone waiting on it. */
class Bell {
  private waiters: (() => void)[] = [];
  wait(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }
  ring(): void {
    for (const wake of this.waiters.splice(0)) wake();
  }
}

const emptySummary = (): RunSummary => ({ claimed: 0, succeeded: 0, failed: 0, dead: 0 });

/**
 * A claim: `batch` due rows marked with the claim's token and lease, their attempt counted, returned with what
 * sending them needs (the body is the event's, rendered by PostgreSQL as the API renders events).
 * webhook_due_deliveries (migration 20261123210000) walks the queue's index in order, locking the rows SKIP LOCKED,
 * so a claim reads about `batch` rows plus those still held by workers, with or without statistics; the claimed
 * rows are then found by primary key (`= any(array(...))`): joined to the walk, the planner may hash it against a
 * scan of every delivery ever made, a cost that grows with the history.
 */
const claimDue = preparedQuery<Record<string, unknown>>('quoting_claim_deliveries', `
  /* all workspaces: one queue of deliveries for every workspace */
  update webhook_deliveries d set
    claim_token = :token, lease_expires_at = now() + make_interval(secs => :leaseSeconds), attempts = d.attempts + 1,
    last_error = case when d.lease_expires_at is not null
      then 'Attempt ' || d.attempts || ' was interrupted: the worker stopped before recording its outcome.'
      else d.last_error end
  from webhook_subscriptions s, events e
  where d.id = any(array(select webhook_due_deliveries(:maxAttempts, :batch))) and s.id = d.subscription_id and e.id = d.event_id
  returning d.id, d.attempts as attempt, s.url, s.signing_secret,
    case when s.previous_secret_expires_at > now() then s.previous_secret end as previous_secret,
    d.event_id, d.event_type,
    '{"id":' || to_json(e.id)::text || ',"type":' || to_json(e.type)::text || ',"created":' || floor(extract(epoch from e.created_at))::bigint
      || ',"organization_id":' || e.workspace_id || ',"data":' || e.data::text || '}' as body`);

/**
 * A group of outcomes (JSON), each written only if its row is still under the claim that sent it. The rows are
 * named by id as well (`any(:ids)`), so they are found through the primary key: joined to the JSON alone, the
 * planner may hash it against a scan of every delivery ever made (so may lease renewals and give-backs).
 */
/** Adds a group's outcomes to the installation's counters (/metrics); a failure costs the figures only. */
async function countOutcomes(db: Knex, outcomes: Outcome[]): Promise<void> {
  const counts: Record<string, number> = {};
  for (const { status } of outcomes) counts[status] = (counts[status] ?? 0) + 1;
  await addCounts(db, 'webhook_deliveries', counts).catch((err: unknown) => log.warn('delivery outcomes not counted for the metrics', errorFields(err)));
}

const recordOutcomes = preparedQuery('quoting_record_delivery_outcomes', `
  /* all workspaces: the outcomes of a claim, which spans them */
  update webhook_deliveries d set status = o.status, last_status_code = o.code, last_error = o.error, response_body = o.body,
    last_attempt_at = to_timestamp(o.at / 1000), next_attempt_at = case when o.status = 'failed' then to_timestamp(o.at / 1000) + make_interval(secs => o.delay) else d.next_attempt_at end,
    delivered_at = case when o.status = 'succeeded' then to_timestamp(o.at / 1000) else d.delivered_at end,
    claim_token = null, lease_expires_at = null, updated_at = now()
  from json_to_recordset(:outcomes::json) as o(id int, token text, status text, code int, error text, body text, at float8, delay int)
  where d.id = any(:ids::int[]) and d.id = o.id and d.claim_token = o.token`);

/**
 * The held rows of a renewal or a give-back, each only while still under the claim that took it (bindings:
 * `underClaim(rows)`); named by id as well, so they are found through the primary key (see recordOutcomes).
 */
const UNDER_CLAIM = `/* all workspaces: rows of a claim, which spans them */ from json_to_recordset(?::json) as h(id int, token text) where d.id = any(?::int[]) and d.id = h.id and d.claim_token = h.token`;
const underClaim = (rows: Claimed[]) => [JSON.stringify(rows.map((r) => ({ id: r.id, token: r.lease.token }))), rows.map((r) => r.id)];

/**
 * Delivers the queue. A claim takes up to `batch` due rows with FOR UPDATE SKIP LOCKED and marks them with
 * a claim token and a lease, so overlapping workers never take the same row; the attempt is counted at claim
 * time, so an attempt interrupted by a crash counts once the lease has expired and another worker reclaims
 * the row. While the worker holds rows (queued, in flight, or with their outcome not yet written) it renews
 * their lease every third of it, so a live worker never loses them however slow its receivers. Outcomes are
 * written as they come in, in small groups (one UPDATE each), and only under the claim token; so after a
 * crash only the attempts in flight (and those whose group was not yet written) are made again.
 *
 * Durability: the worker's connections commit with `synchronous_commit = off` (src/cli/webhooks.ts), so a claim,
 * a lease renewal or an outcome group does not wait for its WAL flush (several milliseconds on a busy disk, on
 * the path of every delivery). This can only cause a resend, never a loss. A worker killed, or PostgreSQL
 * stopped cleanly, loses nothing: the commits are already visible, and flushed within ~3 × wal_writer_delay. A
 * crash of PostgreSQL itself (or its machine) may undo the last fraction of a second of the worker's commits,
 * always a prefix-consistent tail (WAL is replayed in order): an undone claim leaves the row due and unclaimed,
 * so it is sent again with its attempt uncounted; an undone outcome leaves the row claimed, so it is sent
 * again once its lease lapses; an undone give-back or renewal likewise ends in a resend. No undone write of the
 * worker can mark a row delivered or dead that was not, and the rows themselves (written by the emitting
 * transaction, which commits synchronously) are never lost. Resends are what webhook receivers must already
 * accept (at-least-once, `Service-Event-Id` to deduplicate).
 */
export class DeliveryWorker {
  private readonly check: (address: string) => void;
  private readonly agents: ReturnType<typeof outboundAgents>;
  /** Rows claimed and not yet recorded, by id: their leases are renewed. */
  private readonly held = new Map<number, Claimed>();
  private renewTimer: NodeJS.Timeout | null = null;
  private renewing = false;
  private readonly pendingOutcomes: Outcome[] = [];
  private flushTimer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> | null = null;
  /** Attempts made since the last takeSummary(). */
  private totals = emptySummary();

  constructor(
    private readonly db: Knex,
    private readonly settings: WorkerSettings,
  ) {
    this.check = outboundPolicy(settings.allowedCidrs);
    this.agents = outboundAgents(this.check, settings.concurrency);
  }

  private get leaseMs(): number {
    return this.settings.leaseSeconds * 1000;
  }

  /**
   * One batch (`quoting worker`, the embedded schedule): claim, POST `concurrency` at a time, record the
   * outcomes as they come in; resolves once all are written. Housekeeping first, unless the caller runs it
   * on a schedule of its own.
   */
  async runOnce(options: { housekeeping?: boolean } = {}): Promise<RunSummary> {
    if (options.housekeeping ?? true) await this.housekeep();
    const summary = emptySummary();
    const queue = await this.claim();
    summary.claimed = queue.length;
    await Promise.all(
      Array.from({ length: Math.min(this.settings.concurrency, queue.length) }, async () => {
        for (let row = queue.shift(); row; row = queue.shift()) await this.attempt(row, summary);
      }),
    );
    await this.drainOutcomes();
    return summary;
  }

  /**
   * The --watch pipeline: `concurrency` lanes take rows from a local queue as they come free, and the next
   * batches are claimed (two claims under way at most) while the queue still holds one, so sending never waits
   * for a claim or for outcomes to be written. When a claim finds less than a batch, the next waits for `waitForWork` (a notification, a timer).
   * On abort: the lanes finish the attempts in flight, rows claimed but not sent are given back, outcomes written.
   */
  async runContinuously(signal: AbortSignal, waitForWork: () => Promise<void>): Promise<void> {
    const queue: Claimed[] = [];
    const available = new Bell();
    const consumed = new Bell();
    // The next claim starts once the queue holds no more than this; raised a batch at a time (up to four) whenever
    // a lane found the queue empty with more rows due, i.e. when claims take longer than the lanes need to send a batch.
    const step = Math.max(this.settings.concurrency, this.settings.batch);
    let lowWater = step;
    let starved = false;
    let more = true;
    let feeding = FEEDERS;
    const onAbort = () => (available.ring(), consumed.ring());
    signal.addEventListener('abort', onAbort);
    // The feeders wait for work together: one wait, shared.
    let waiting: Promise<void> | null = null;
    const nextWork = () => (waiting ??= waitForWork().finally(() => (waiting = null)));
    const feeder = async () => {
      while (!signal.aborted) {
        if (queue.length > lowWater) {
          await consumed.wait();
          continue;
        }
        if (!more) {
          await nextWork();
          if (signal.aborted) break;
        }
        try {
          const rows = await this.claim();
          queue.push(...rows);
          this.totals.claimed += rows.length;
          more = rows.length >= this.settings.batch;
          if (rows.length) available.ring();
          if (starved && more) lowWater = Math.min(4 * step, lowWater + step);
          starved = false;
        } catch (err) {
          log.error('delivery claim failed', errorFields(err));
          more = false;
        }
      }
      feeding--;
      available.ring();
    };
    const lane = async () => {
      while (!signal.aborted) {
        const row = queue.shift();
        if (!row) {
          if (!feeding) return;
          if (more) starved = true;
          await available.wait();
          continue;
        }
        if (queue.length <= lowWater) consumed.ring();
        await this.attempt(row, this.totals);
      }
    };
    try {
      await Promise.all([...Array.from({ length: FEEDERS }, feeder), ...Array.from({ length: this.settings.concurrency }, lane)]);
    } finally {
      signal.removeEventListener('abort', onAbort);
      await this.giveBack(queue.splice(0));
      await this.drainOutcomes();
    }
  }

  /** What was attempted since the last call (for a periodic log line). */
  takeSummary(): RunSummary {
    const summary = this.totals;
    this.totals = emptySummary();
    return summary;
  }

  /**
   * Marks dead what can never be sent: rows whose worker died on their last allowed attempt, and due rows of
   * a subscription paused or deleted (a pause or delete that raced with an emitting transaction cannot see
   * that transaction's new rows). Claims skip both kinds anyway, so this may run on a schedule of its own.
   */
  async housekeep(): Promise<void> {
    // Counted first: /metrics shows the worker's last round even when a statement below fails.
    await addCounts(this.db, 'webhook_worker_runs', { '': 1 });
    await this.db.raw(
      `/* all workspaces: housekeeping of the one queue */ update webhook_deliveries set status = 'dead', claim_token = null, lease_expires_at = null, updated_at = now(),
         last_error = 'Attempt ' || attempts || ' was interrupted: the worker stopped before recording its outcome.'
       where status in ('pending', 'failed') and attempts >= ? and lease_expires_at < now()`,
      [this.settings.maxAttempts],
    );
    await this.db.raw(
      `/* all workspaces: housekeeping of the one queue */ update webhook_deliveries d set status = 'dead', claim_token = null, lease_expires_at = null, updated_at = now(),
         last_error = 'The subscription was paused or deleted.'
       where d.status in ('pending', 'failed') and d.next_attempt_at <= now()
         and not exists (select 1 from webhook_subscriptions s where s.id = d.subscription_id and s.active)`,
    );
  }

  /** Sends one claimed row (unless its lease may have lapsed) and queues its outcome for writing. */
  private async attempt(row: Claimed, summary: RunSummary): Promise<void> {
    if (this.held.get(row.id) !== row) return; // a renewal found it under another claim
    if (performance.now() >= row.lease.validUntil) {
      // The lease could not be renewed in time: another worker may hold the row now, so it is not sent.
      this.release([{ id: row.id, token: row.lease.token }]);
      log.warn('delivery lease lapsed before sending; left to the next claim', { delivery_id: row.id });
      return;
    }
    const outcome = await this.deliver(row);
    summary[outcome.status]++;
    this.pendingOutcomes.push(outcome);
    if (this.pendingOutcomes.length >= FLUSH_AT) this.flush();
    else this.flushTimer ??= setTimeout(() => this.flush(), FLUSH_AFTER_MS);
  }

  /** Starts writing the waiting outcomes unless a write is under way (which picks them up when it ends). */
  private flush(): void {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    if (this.flushing || !this.pendingOutcomes.length) return;
    this.flushing = this.writeOutcomes();
  }

  private async writeOutcomes(): Promise<void> {
    // The first group's write is awaited before `flushing` is cleared: flush() only starts this with outcomes waiting.
    while (this.pendingOutcomes.length) await this.record(this.pendingOutcomes.splice(0, 1000));
    this.flushing = null;
  }

  private async drainOutcomes(): Promise<void> {
    while (this.pendingOutcomes.length || this.flushing) {
      this.flush();
      await this.flushing;
    }
  }

  private async record(outcomes: Outcome[]): Promise<void> {
    for (let tries = 1; ; tries++) {
      try {
        await recordOutcomes(this.db, { outcomes: JSON.stringify(outcomes), ids: outcomes.map((o) => o.id) });
        await countOutcomes(this.db, outcomes);
        break;
      } catch (err) {
        log.error('delivery outcomes not recorded', { delivery_ids: outcomes.map((o) => o.id), try: tries, ...errorFields(err) });
        // Given up, the rows are no longer renewed: once their lease lapses another claim sends them again.
        if (tries >= RECORD_TRIES) break;
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
    }
    this.release(outcomes);
  }

  private hold(rows: Claimed[]): void {
    for (const row of rows) this.held.set(row.id, row);
    if (!this.renewTimer && this.held.size) {
      this.renewTimer = setInterval(() => void this.renew(), Math.max(200, this.leaseMs / 3));
      this.renewTimer.unref();
    }
  }

  /** Stops renewing these rows (if still held under that claim). */
  private release(rows: { id: number; token: string }[]): void {
    for (const { id, token } of rows) if (this.held.get(id)?.lease.token === token) this.held.delete(id);
    if (!this.held.size && this.renewTimer) {
      clearInterval(this.renewTimer);
      this.renewTimer = null;
    }
  }

  /** Extends the lease of every row held; a row found no longer under its token is dropped (not sent). */
  private async renew(): Promise<void> {
    if (this.renewing || !this.held.size) return;
    this.renewing = true;
    const started = performance.now();
    const rows = [...this.held.values()];
    try {
      const { rows: renewed } = await this.db.raw(
        `update webhook_deliveries d set lease_expires_at = now() + make_interval(secs => ?) ${UNDER_CLAIM} returning d.id`,
        [this.settings.leaseSeconds, ...underClaim(rows)],
      );
      const kept = new Set<number>(renewed.map((r: { id: number }) => r.id));
      // A row missing from the answer was recorded meanwhile, or (its lease having lapsed) claimed by another worker.
      const lost: { id: number; token: string }[] = [];
      for (const row of rows) {
        if (kept.has(row.id)) row.lease.validUntil = Math.max(row.lease.validUntil, started + this.leaseMs);
        else lost.push({ id: row.id, token: row.lease.token });
      }
      this.release(lost);
    } catch (err) {
      log.error('delivery leases not renewed', errorFields(err));
    } finally {
      this.renewing = false;
    }
  }

  /** Rows claimed but never sent go back to the queue as they were (their attempt not counted). */
  private async giveBack(rows: Claimed[]): Promise<void> {
    const ours = rows.filter((row) => this.held.get(row.id) === row);
    if (!ours.length) return;
    try {
      await this.db.raw(
        `update webhook_deliveries d set claim_token = null, lease_expires_at = null, attempts = d.attempts - 1 ${UNDER_CLAIM}`,
        underClaim(ours),
      );
    } catch (err) {
      log.error('unsent deliveries not given back; they are sent again once their lease lapses', errorFields(err));
    }
    this.release(ours.map((r) => ({ id: r.id, token: r.lease.token })));
  }

  private async claim(): Promise<Claimed[]> {
    const lease: Lease = { token: randomUUID(), validUntil: performance.now() + this.leaseMs };
    const { maxAttempts, batch, leaseSeconds } = this.settings;
    // Rows of paused or deleted subscriptions are skipped (housekeeping marks them dead); so are rows whose last
    // allowed attempt was interrupted. See claimDue for how the rows are found.
    const rows = await claimDue(this.db, { token: lease.token, leaseSeconds, maxAttempts, batch });
    const claimed: Claimed[] = rows.map((r) => ({
      id: r.id as number,
      lease,
      attempt: r.attempt as number,
      url: r.url as string,
      secrets: [r.signing_secret as string, ...(r.previous_secret ? [r.previous_secret as string] : [])],
      event_id: r.event_id as string,
      event_type: r.event_type as string,
      body: r.body as string,
    }));
    this.hold(claimed);
    return claimed;
  }

  private async deliver(delivery: Claimed): Promise<Outcome> {
    const timestamp = Math.floor(Date.now() / 1000);
    const result: PostResult = await post(delivery.url, delivery.body, {
      headers: {
        'Content-Type': 'application/json; charset=utf-8',
        'User-Agent': 'Service-Webhooks/1',
        'Service-Signature': signatureHeader(delivery.secrets, timestamp, delivery.body),
        'Service-Event-Id': delivery.event_id,
        'Service-Event': delivery.event_type,
        'Service-Attempt': String(delivery.attempt),
      },
      timeoutMs: this.settings.timeoutMs,
      maxBody: MAX_RESPONSE_BYTES,
      check: this.check,
      agents: this.agents,
    });
    const ok = result.status !== null && result.status >= 200 && result.status < 300;
    const status = ok ? 'succeeded' : delivery.attempt >= this.settings.maxAttempts ? 'dead' : 'failed';
    const delay = RETRY_DELAYS_SECONDS[Math.min(delivery.attempt, RETRY_DELAYS_SECONDS.length) - 1];
    const error = ok ? null : (result.error ?? `HTTP ${result.status}`);
    return { id: delivery.id, token: delivery.lease.token, status, code: result.status, error, body: result.body, at: Date.now(), delay };
  }

  close(): void {
    if (this.renewTimer) clearInterval(this.renewTimer);
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.agents.http.destroy();
    this.agents.https.destroy();
  }
}
