import type { Access } from '../access.js';
import type { Db } from '../db/database.js';
import { scoped } from '../db/scoped.js';

/**
 * Deletes what the customer's visitors browsed, in the caller's transaction: the customer cascade
 * removes the visitors, and their events are personal data of the customer that go with them.
 */
export async function eraseVisitorEvents(trx: Db, access: Access, customerId: number): Promise<number> {
  return scoped(trx, 'track_events', access.workspaceId)
    .whereIn('visitor_id', scoped(trx, 'visitors', access.workspaceId).where({ customer_id: customerId }).select('visitor_id'))
    .delete();
}
