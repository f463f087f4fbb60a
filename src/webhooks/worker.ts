import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { Config } from '../config.js';
import { errorFields, log } from '../log.js';
import { outboundAgents, outboundPolicy, post, type PostResult } from './outbound.js';
import { signatureHeader } from './signature.js';

/** Delay before attempt n + 1 after failure n (1-based); later failures wait as long as the last. */
export const RETRY_DELAYS_SECONDS = [30, 120, 600, 3600, 21_600];
const MAX_RESPONSE_BYTES = 8 * 1024;

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
    // Long enough for a whole batch at the timeout (batch / concurrency rounds), so a live worker never loses its rows.
    leaseSeconds:
      config.WEBHOOK_LEASE_SECONDS ?? Math.ceil(Math.ceil(config.WEBHOOK_WORKER_BATCH / config.WEBHOOK_CONCURRENCY) * config.WEBHOOK_TIMEOUT_SECONDS + 30),
    allowedCidrs: config.OUTBOUND_ALLOWED_CIDRS,
  };
}

interface Claimed {
  id: number;
  token: string;
  attempt: number;
  url: string;
  secrets: string[];
  event_id: string;
  event_type: string;
  body: string;
}

interface Outcome {
  id: number;
  status: 'succeeded' | 'failed' | 'dead';
  code: number | null;
  error: string | null;
  body: string | null;
  at: string;
  delay: number;
}

export interface RunSummary {
  claimed: number;
  succeeded: number;
  failed: number;
  dead: number;
}

/**
 * Drains the delivery queue. Each run claims up to `batch` due rows with FOR UPDATE SKIP LOCKED and
 * marks them with a claim token and a lease, so overlapping workers never take the same row; the
 * attempt is counted at claim time, so an attempt interrupted by a crash counts once the lease has
 * expired and another worker reclaims the row. Outcomes are written only under the claim token.
 */
export class DeliveryWorker {
  private readonly check: (address: string) => void;
  private readonly agents: ReturnType<typeof outboundAgents>;

  constructor(
    private readonly db: Knex,
    private readonly settings: WorkerSettings,
  ) {
    this.check = outboundPolicy(settings.allowedCidrs);
    this.agents = outboundAgents(this.check, settings.concurrency);
  }

  private prefetched: Promise<Claimed[]> | null = null;
  private recording: Promise<void> = Promise.resolve();

  /**
   * One batch: claim, POST concurrently (bounded), record all outcomes in one UPDATE.
   * `pipelined` (the --watch loop): the batch may have been claimed while the previous one was still
   * sending; once a full batch has been handed to the lanes the next one is claimed, and the outcomes are
   * written without waiting for them (stop() waits, and gives back a batch claimed but not sent).
   */
  async runOnce(options: { pipelined?: boolean } = {}): Promise<RunSummary> {
    const claimed = await (this.prefetched ?? this.claim());
    this.prefetched = null;
    const summary: RunSummary = { claimed: claimed.length, succeeded: 0, failed: 0, dead: 0 };
    const outcomes: Outcome[] = [];
    let next = 0;
    const lanes = Array.from({ length: Math.min(this.settings.concurrency, claimed.length) }, async () => {
      while (next < claimed.length) {
        const delivery = claimed[next++];
        if (options.pipelined && next === claimed.length && claimed.length >= this.settings.batch) this.prefetched = this.claim();
        const outcome = await this.deliver(delivery);
        outcomes.push(outcome);
        summary[outcome.status]++;
      }
    });
    await Promise.all(lanes);
    if (outcomes.length) {
      this.recording = this.recording.then(() => this.record(claimed[0].token, outcomes));
      if (!options.pipelined) await this.recording;
    }
    return summary;
  }

  /** Waits for outcomes still being written, and gives back a batch claimed ahead but not sent. */
  async stop(): Promise<void> {
    await this.recording;
    const prefetched = await this.prefetched?.catch(() => []);
    this.prefetched = null;
    if (prefetched?.length) {
      await this.db.raw(
        `update webhook_deliveries set claim_token = null, lease_expires_at = null, attempts = attempts - 1 where claim_token = ?`,
        [prefetched[0].token],
      );
    }
  }

  private async record(token: string, outcomes: Outcome[]): Promise<void> {
    try {
      await this.db.raw(
        `update webhook_deliveries d set status = o.status, last_status_code = o.code, last_error = o.error, response_body = o.body,
           last_attempt_at = o.at, next_attempt_at = case when o.status = 'failed' then o.at + make_interval(secs => o.delay) else d.next_attempt_at end,
           delivered_at = case when o.status = 'succeeded' then o.at else d.delivered_at end,
           claim_token = null, lease_expires_at = null, updated_at = now()
         from json_to_recordset(?::json) as o(id int, status text, code int, error text, body text, at timestamptz, delay int)
         where d.id = o.id and d.claim_token = ?`,
        [JSON.stringify(outcomes), token],
      );
    } catch (err) {
      log.error('delivery outcomes not recorded', { delivery_ids: outcomes.map((o) => o.id), ...errorFields(err) });
    }
  }

  private async claim(): Promise<Claimed[]> {
    const token = randomUUID();
    const { maxAttempts, batch, leaseSeconds } = this.settings;
    // Rows whose worker died on their last allowed attempt can never be claimed again: they are dead.
    await this.db.raw(
      `update webhook_deliveries set status = 'dead', claim_token = null, lease_expires_at = null, updated_at = now(),
         last_error = 'Attempt ' || attempts || ' was interrupted: the worker stopped before recording its outcome.'
       where status in ('pending', 'failed') and attempts >= ? and lease_expires_at < now()`,
      [maxAttempts],
    );
    // A pause or delete that raced with an emitting transaction cannot see that transaction's new rows;
    // they are caught here, before anything is sent to a subscription that is no longer active.
    await this.db.raw(
      `update webhook_deliveries d set status = 'dead', claim_token = null, lease_expires_at = null, updated_at = now(),
         last_error = 'The subscription was paused or deleted.'
       where d.status in ('pending', 'failed') and d.next_attempt_at <= now()
         and not exists (select 1 from webhook_subscriptions s where s.id = d.subscription_id and s.active)`,
    );
    const { rows } = await this.db.raw(
      `with due as (
         select id from webhook_deliveries
         where status in ('pending', 'failed') and next_attempt_at <= now() and attempts < ?
           and (lease_expires_at is null or lease_expires_at < now())
         order by next_attempt_at, id
         limit ?
         for update skip locked
       )
       update webhook_deliveries d set
         claim_token = ?, lease_expires_at = now() + make_interval(secs => ?), attempts = d.attempts + 1,
         last_error = case when d.lease_expires_at is not null
           then 'Attempt ' || d.attempts || ' was interrupted: the worker stopped before recording its outcome.'
           else d.last_error end
       from due, webhook_subscriptions s, events e
       where d.id = due.id and s.id = d.subscription_id and e.id = d.event_id
       returning d.id, d.attempts as attempt, s.url, s.signing_secret,
         case when s.previous_secret_expires_at > now() then s.previous_secret end as previous_secret,
         d.event_id, d.event_type,
         '{"id":' || to_json(e.id)::text || ',"type":' || to_json(e.type)::text || ',"created":' || floor(extract(epoch from e.created_at))::bigint
           || ',"organization_id":' || e.workspace_id || ',"data":' || e.data::text || '}' as body`,
      [maxAttempts, batch, token, leaseSeconds],
    );
    return rows.map((r: Record<string, unknown>) => ({
      id: r.id as number,
      token,
      attempt: r.attempt as number,
      url: r.url as string,
      secrets: [r.signing_secret as string, ...(r.previous_secret ? [r.previous_secret as string] : [])],
      event_id: r.event_id as string,
      event_type: r.event_type as string,
      body: r.body as string,
    }));
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
    return { id: delivery.id, status, code: result.status, error, body: result.body, at: new Date().toISOString(), delay };
  }

  close(): void {
    this.agents.http.destroy();
    this.agents.https.destroy();
  }
}
