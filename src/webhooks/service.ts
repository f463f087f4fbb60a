import type { Access } from '../access.js';
import type { Db } from '../db/database.js';
import { scoped } from '../db/scoped.js';
import { Conflict, NotFound } from '../errors.js';
import { randomToken } from '../crypto.js';
import { givenFields } from '../db/fields.js';
import { WEBHOOK_CHANNEL } from '../events/outbox.js';

const subscriptionJson = (s = 's') =>
  `json_build_object('id', ${s}.id, 'organization_id', ${s}.workspace_id, 'url', ${s}.url, 'event_types', to_json(${s}.event_types), ` +
  `'active', ${s}.active, 'description', ${s}.description, 'created_at', iso_time(${s}.created_at), 'updated_at', iso_time(${s}.updated_at))`;

const deliveryJson = (d = 'd', withBody = false) =>
  `json_build_object('id', ${d}.id, 'subscription_id', ${d}.subscription_id, 'event_id', ${d}.event_id, 'event_type', ${d}.event_type, ` +
  `'status', ${d}.status, 'attempts', ${d}.attempts, 'next_attempt_at', iso_time(${d}.next_attempt_at), 'last_status_code', ${d}.last_status_code, ` +
  `'last_error', ${d}.last_error, ${withBody ? `'response_body', ${d}.response_body, ` : ''}'created_at', iso_time(${d}.created_at), ` +
  `'updated_at', iso_time(${d}.updated_at), 'delivered_at', iso_time(${d}.delivered_at))`;

export type SubscriptionJson = Record<string, unknown> & { id: number };
export type DeliveryJson = Record<string, unknown> & { id: number; status: string };

const newSecret = () => `whsec_${randomToken(32)}`;

async function getSubscription(db: Db, workspaceId: number, id: number): Promise<SubscriptionJson> {
  const row = await scoped(db, 'webhook_subscriptions as s', workspaceId).where('s.id', id).first(db.raw(`${subscriptionJson()} as json`));
  if (!row) throw new NotFound('Webhook subscription not found.');
  return row.json;
}

export async function listSubscriptions(db: Db, access: Access): Promise<SubscriptionJson[]> {
  const rows = await scoped(db, 'webhook_subscriptions as s', access.workspaceId).orderBy('s.id').select(db.raw(`${subscriptionJson()} as json`));
  return rows.map((r: { json: SubscriptionJson }) => r.json);
}

/** Creates a subscription; the signing secret is returned this once (and on rotation). */
export async function createSubscription(
  db: Db,
  access: Access,
  input: { url: string; event_types?: string[]; description?: string | null },
): Promise<SubscriptionJson> {
  const secret = newSecret();
  const [row] = await db('webhook_subscriptions')
    .insert({ workspace_id: access.workspaceId, url: input.url, event_types: input.event_types ?? ['*'], description: input.description ?? null, signing_secret: secret })
    .returning('id');
  return { ...(await getSubscription(db, access.workspaceId, row.id)), signing_secret: secret };
}

/** Partial update. Pausing (active false) marks the subscription's pending and failed deliveries dead. */
export async function updateSubscription(
  trx: Db,
  access: Access,
  id: number,
  input: { url?: string; event_types?: string[]; description?: string | null; active?: boolean },
): Promise<SubscriptionJson> {
  const changes = givenFields(input);
  const updated = await scoped(trx, 'webhook_subscriptions', access.workspaceId).where({ id }).update({ ...changes, updated_at: trx.fn.now() });
  if (!updated) throw new NotFound('Webhook subscription not found.');
  if (input.active === false) await killOpenDeliveries(trx, access.workspaceId, id, 'The subscription was paused.');
  return getSubscription(trx, access.workspaceId, id);
}

/** Deletes the subscription for good; its pending and failed deliveries become dead (and stay as history). */
export async function deleteSubscription(trx: Db, access: Access, id: number): Promise<SubscriptionJson> {
  const subscription = await getSubscription(trx, access.workspaceId, id);
  await scoped(trx, 'webhook_subscriptions', access.workspaceId).where({ id }).delete();
  await killOpenDeliveries(trx, access.workspaceId, id, 'The subscription was deleted.');
  return subscription;
}

async function killOpenDeliveries(trx: Db, workspaceId: number, subscriptionId: number, reason: string): Promise<void> {
  await scoped(trx, 'webhook_deliveries', workspaceId)
    .where({ subscription_id: subscriptionId })
    .whereIn('status', ['pending', 'failed'])
    .update({ status: 'dead', last_error: reason, claim_token: null, lease_expires_at: null, updated_at: trx.fn.now() });
}

/** A new secret, returned once; with `overlapSeconds` the old one keeps signing (a second v1=) until then. */
export async function rotateSecret(trx: Db, access: Access, id: number, overlapSeconds: number): Promise<SubscriptionJson> {
  const current = await scoped(trx, 'webhook_subscriptions', access.workspaceId).where({ id }).forUpdate().first('signing_secret');
  if (!current) throw new NotFound('Webhook subscription not found.');
  const secret = newSecret();
  const overlapping = overlapSeconds > 0;
  const [row] = await scoped(trx, 'webhook_subscriptions', access.workspaceId)
    .where({ id })
    .update({
      signing_secret: secret,
      previous_secret: overlapping ? current.signing_secret : null,
      previous_secret_expires_at: overlapping ? trx.raw(`now() + make_interval(secs => ?)`, [overlapSeconds]) : null,
      updated_at: trx.fn.now(),
    })
    .returning(trx.raw('iso_time(previous_secret_expires_at) as expires'));
  return { ...(await getSubscription(trx, access.workspaceId, id)), signing_secret: secret, previous_secret_expires_at: row.expires };
}

export async function listDeliveries(db: Db, access: Access, subscriptionId: number): Promise<DeliveryJson[]> {
  await getSubscription(db, access.workspaceId, subscriptionId);
  const rows = await scoped(db, 'webhook_deliveries as d', access.workspaceId)
    .where('d.subscription_id', subscriptionId)
    .orderBy('d.id', 'desc')
    .limit(50)
    .select(db.raw(`${deliveryJson()} as json`));
  return rows.map((r: { json: DeliveryJson }) => r.json);
}

export async function getDelivery(db: Db, access: Access, id: number): Promise<DeliveryJson> {
  const row = await scoped(db, 'webhook_deliveries as d', access.workspaceId).where('d.id', id).first(db.raw(`${deliveryJson('d', true)} as json`));
  if (!row) throw new NotFound('Delivery not found.');
  return row.json;
}

/**
 * Puts deliveries back on the queue, due now, with a fresh attempt count (so the retry schedule
 * starts over). A delivery whose subscription is paused or gone cannot be resent and is left as it is; nor can
 * one a worker is attempting under a live lease (clearing its claim would let a second worker send
 * it at the same time). Returns the ids re-queued.
 */
export async function resendDeliveries(
  db: Db,
  filter: { workspaceId?: number; ids?: number[]; status?: 'dead' | 'failed'; since?: Date; subscriptionId?: number },
): Promise<number[]> {
  const query = db('webhook_deliveries as d')
    .whereExists((sub) => sub.select(db.raw('1')).from('webhook_subscriptions as s').whereRaw('s.id = d.subscription_id and s.workspace_id = d.workspace_id and s.active'))
    .where((q) => q.whereNull('d.lease_expires_at').orWhere('d.lease_expires_at', '<', db.fn.now()));
  if (filter.workspaceId !== undefined) query.where('d.workspace_id', filter.workspaceId);
  else query.queryContext({ allWorkspaces: 'the operator resends across workspaces' });
  if (filter.ids) query.whereIn('d.id', filter.ids);
  if (filter.status) query.where('d.status', filter.status);
  if (filter.since) query.where('d.created_at', '>=', filter.since);
  if (filter.subscriptionId !== undefined) query.where('d.subscription_id', filter.subscriptionId);
  const rows = await query
    .update({ status: 'pending', attempts: 0, next_attempt_at: db.fn.now(), claim_token: null, lease_expires_at: null, updated_at: db.fn.now() })
    .returning('d.id');
  if (rows.length) await db.raw('select pg_notify(?, ?)', [WEBHOOK_CHANNEL, '']);
  return rows.map((r: { id: number }) => r.id);
}

export async function resendDelivery(db: Db, access: Access, id: number): Promise<DeliveryJson> {
  const delivery = await getDelivery(db, access, id);
  const [requeued] = await resendDeliveries(db, { workspaceId: access.workspaceId, ids: [id] });
  if (!requeued) {
    const leased = await scoped(db, 'webhook_deliveries', access.workspaceId).where({ id }).where('lease_expires_at', '>=', db.fn.now()).first('id');
    throw new Conflict(
      leased
        ? `Delivery ${delivery.id} is being attempted right now; resend it once the attempt is over.`
        : `Delivery ${delivery.id} cannot be resent: its subscription is paused or was deleted.`,
    );
  }
  return getDelivery(db, access, id);
}

/** One subscription, without its secret (the API reads it through the list; a page opens it by id). */
export function findSubscription(db: Db, access: Access, id: number): Promise<SubscriptionJson> {
  return getSubscription(db, access.workspaceId, id);
}

/** Each subscription's most recent delivery, by subscription id: the outcome a list of subscriptions shows beside each. */
export async function lastDeliveries(db: Db, access: Access): Promise<Map<number, DeliveryJson>> {
  const rows = await scoped(db, 'webhook_deliveries as d', access.workspaceId)
    .distinctOn('d.subscription_id')
    .orderBy([{ column: 'd.subscription_id' }, { column: 'd.id', order: 'desc' }])
    .select('d.subscription_id', db.raw(`${deliveryJson()} as json`));
  return new Map(rows.map((r: { subscription_id: number; json: DeliveryJson }) => [r.subscription_id, r.json]));
}

export type FailingDelivery = DeliveryJson & { url: string };

/**
 * Deliveries that failed and still need the owner: retrying (failed) or given up (dead after at least one attempt),
 * changed in the last `days`, of a subscription that is still active (a paused or deleted one's cannot be resent).
 * A resend puts one back to pending, which takes it off this list. Newest first, with the subscription's URL.
 */
export async function failingDeliveries(db: Db, access: Access, limit: number, days = 7): Promise<FailingDelivery[]> {
  const rows = await scoped(db, 'webhook_deliveries as d', access.workspaceId)
    .join('webhook_subscriptions as s', (on) => on.on('s.id', 'd.subscription_id').andOn('s.workspace_id', 'd.workspace_id'))
    .where('s.active', true)
    .whereIn('d.status', ['failed', 'dead'])
    .where('d.attempts', '>', 0)
    .where('d.updated_at', '>', db.raw(`now() - make_interval(days => ?)`, [days]))
    .orderBy('d.id', 'desc')
    .limit(limit)
    .select('s.url', db.raw(`${deliveryJson()} as json`));
  return rows.map((r: { url: string; json: DeliveryJson }) => ({ ...r.json, url: r.url }));
}
