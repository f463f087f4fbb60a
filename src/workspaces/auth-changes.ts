import type { Knex } from 'knex';
import type { Db } from '../db/database.js';
import { log } from '../log.js';

/**
 * What a change makes stale for whoever caches what authenticates a request: one session, every
 * session of a user (their password, workspace or role), a workspace's (its keys, its status), or anything.
 */
export type AuthScope = { sessionId: number } | { userId: number } | { workspaceId: number } | 'all';

/** The NOTIFY channel other processes hear the changes on. */
export const AUTH_CHANNEL = 'quoting_auth';

type Hearer = (scope: AuthScope) => void;

/** Told of this process's own changes, as they commit: no NOTIFY round trip between a change and the next request. */
const hearers = new Set<Hearer>();

/** Hears the changes made in this process once they commit; returns the way to stop. */
export function hearAuthChanges(hearer: Hearer): () => void {
  hearers.add(hearer);
  return () => void hearers.delete(hearer);
}

function tell(scope: AuthScope): void {
  for (const hearer of hearers) hearer(scope);
}

/**
 * Called by the service that made the change, on the handle it made it with. In a transaction, the
 * NOTIFY reaches other processes when it commits (never if it rolls back) and this process's hearers
 * are told then; a NOTIFY that fails fails the change, which would otherwise commit unheard. Outside
 * one, the change has committed: hearers are told at once, and a failed NOTIFY is only logged (the
 * caches' TTL is the backstop).
 */
export async function authChanged(db: Db, scope: AuthScope): Promise<void> {
  const notify = () => db.raw('select pg_notify(?, ?)', [AUTH_CHANNEL, JSON.stringify(scope)]);
  if (db.isTransaction) {
    await notify();
    const told = () => tell(scope); // also on a rollback: evicting is always safe
    void outermost(db as Knex.Transaction).executionPromise.then(told, told);
    return;
  }
  tell(scope);
  try {
    await notify();
  } catch (err) {
    log.warn('could not notify other processes of an auth change', { error: (err as Error).message });
  }
}

/** A savepoint's end is not the commit: the outermost transaction's is. */
function outermost(trx: Knex.Transaction): Knex.Transaction {
  while (trx.parentTransaction) trx = trx.parentTransaction;
  return trx;
}
