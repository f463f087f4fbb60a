import { randomBytes } from 'node:crypto';
import type { Db } from '../db/database.js';
import { errorFields, log } from '../log.js';
import { enqueueDeliveries } from '../webhooks/service.js';

export const eventTypes = [
  'quote.created', 'quote.updated', 'quote.sent', 'quote.accepted', 'quote.declined', 'quote.cancelled', 'quote.paid',
  'quote.line_added', 'quote.line_updated', 'quote.line_removed', 'quote.deleted',
  'order.created', 'order.updated', 'order.deleted',
  'customer.created', 'customer.updated', 'customer.deleted',
] as const;

export type EventType = (typeof eventTypes)[number];

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** `evt_` + 26 characters of Crockford base-32 (130 random bits). */
export function eventId(): string {
  const bytes = randomBytes(17);
  let bits = 0n;
  for (const byte of bytes) bits = (bits << 8n) | BigInt(byte);
  let id = '';
  for (let i = 0; i < 26; i++) {
    id = CROCKFORD[Number(bits & 31n)] + id;
    bits >>= 5n;
  }
  return `evt_${id}`;
}

let enabled = true;

/** WEBHOOKS_ENABLED=0 stops emission: nothing is written to the outbox. */
export function setEventsEnabled(value: boolean): void {
  enabled = value;
}

/**
 * Writes an event to the outbox inside the caller's transaction, under a savepoint: it commits with
 * the change, and a failure here is logged and swallowed so the operation itself still succeeds.
 * `data` is shaped exactly as the JSON API returns the resource. The deliveries to matching
 * webhook subscriptions are queued in the same savepoint.
 */
export async function emit(trx: Db, workspaceId: number, type: EventType, data: Record<string, unknown>): Promise<void> {
  if (!enabled) return;
  try {
    await trx.transaction(async (savepoint) => {
      const id = eventId();
      await savepoint('events').insert({ id, workspace_id: workspaceId, type, data: JSON.stringify(data) });
      await enqueueDeliveries(savepoint, workspaceId, id, type);
    });
  } catch (err) {
    log.error('event not emitted', { type, workspace_id: workspaceId, ...errorFields(err) });
  }
}
