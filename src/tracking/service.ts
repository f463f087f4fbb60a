import type { Access } from '../access.js';
import type { Db } from '../db/database.js';
import { preparedQuery } from '../db/prepared.js';
import { scoped } from '../db/scoped.js';
import { Conflict, Forbidden, Gone, NotFound, Validation } from '../errors.js';
import { randomToken, sha256 } from '../crypto.js';
import { getCustomer, upsertCustomer } from '../customers/service.js';
import { readableQuote } from '../quotes/service.js';
import { findWorkspaceBySlug } from '../workspaces/service.js';
import { lockReason } from '../workspaces/model.js';
import type { JoinCodeInput, JoinInput, TrackEventInput } from './schema.js';

/** The API shape of a tracking event: the fields it was sent with, plus id and received_at. */
export const eventJson = (e = 'e') =>
  `json_build_object('id', ${e}.id, 'visitor_id', ${e}.visitor_id, 'type', ${e}.type, 'url', ${e}.url, 'title', ${e}.title, ` +
  `'referrer', ${e}.referrer, 'sku', ${e}.sku, 'category', ${e}.category, 'properties', ${e}.properties, ` +
  `'occurred_at', iso_time(${e}.occurred_at), 'received_at', iso_time(${e}.received_at))`;

export type EventJson = Record<string, unknown> & { id: number; visitor_id: string };

const DAY_MS = 86_400_000;

/**
 * What the tag of the workspace with this slug carries: its current public key, or none while the
 * workspace is locked (the script then sends nothing). Null for an unknown slug.
 */
export async function tagSettings(db: Db, slug: string): Promise<{ key: string | null } | null> {
  const workspace = await findWorkspaceBySlug(db, slug);
  if (!workspace) return null;
  return { key: lockReason(workspace) ? null : workspace.public_key };
}

export interface IngestLimits {
  /** TRACK_RATE_PER_MINUTE */
  perMinute: number;
  /** TRACK_RETENTION_DAYS: an event older than this would be purged at once, so it is refused. */
  retentionDays: number;
}

/** Rows a workspace's one-minute rate window is split into; shard i may accept cap/SHARDS events (the remainder to the first). */
const SHARDS = 8;

/**
 * The event statement. It takes a shard of the workspace's current window that still has room, locking
 * that row, counts the event in it and inserts the event; with no such shard it inserts nothing. `wait`
 * says what to do with a shard another transaction has locked: skip it (the usual case, so concurrent
 * events never queue on each other) or wait for it and look again at its count. When it stored nothing, it
 * also answers how many shards exist and how many had room in its snapshot: counts only grow within a
 * window, so none with room means the window is full. Waiting, shards are taken in one order, lowest first:
 * a row that fails its re-check after the wait stays locked by the statement (PostgreSQL keeps row locks to
 * the end of the transaction), so two waiting statements starting at different shards could each hold a row
 * the other waits for (a deadlock, seen under a burst of the window's first events). The commit does not wait for the WAL flush (synchronous_commit off for this
 * transaction only): a crash can lose the last fraction of a second of events, never corrupt anything.
 */
const eventStatement = (wait: boolean) => `
  with tuning as (select set_config('synchronous_commit', 'off', true)),
  free as (
    select shard from track_rate_windows
     where workspace_id = :ws and window_start = date_trunc('minute', now()) and count < :quota + (shard < :extra)::int
     order by ${wait ? 'shard' : `(shard + :start) % ${SHARDS}`}
     limit 1
     for update${wait ? '' : ' skip locked'}
  ),
  hit as (
    update track_rate_windows w set count = w.count + 1
      from free
     where w.workspace_id = :ws and w.window_start = date_trunc('minute', now()) and w.shard = free.shard
    returning w.shard
  ),
  stored as (
    insert into track_events (workspace_id, visitor_id, type, url, title, referrer, sku, category, properties, product_id, occurred_at)
    select :ws, :visitor, :type, :url, :title, :referrer, :sku, :category, :properties::jsonb,
           coalesce((select p.id from products p where p.workspace_id = :ws and p.sku = :sku),
                    (select v.product_id from variants v where v.workspace_id = :ws and v.sku = :sku)),
           coalesce(:occurred::timestamptz, now())
      from hit, tuning
    returning id
  )
  select s.stored, coalesce(w.shards, 0) as shards, coalesce(w.open, 0) as open
    from (select count(*)::int as stored from stored) s
    left join lateral (
      select count(*)::int as shards, (count(*) filter (where count < :quota + (shard < :extra)::int))::int as open
        from track_rate_windows
       where s.stored = 0 and workspace_id = :ws and window_start = date_trunc('minute', now())) w on true`;
// Prepared: each connection parses and plans them once, not per event.
const skipLocked = preparedQuery<IngestRow>('quoting_track_event', eventStatement(false));
const waitLocked = preparedQuery<IngestRow>('quoting_track_event_wait', eventStatement(true));

interface IngestRow {
  stored: number;
  shards: number;
  open: number;
}

/**
 * Records one event unless the workspace is over its rate cap this minute; false when it is.
 *
 * The cap is one count per workspace and minute in the database, shared by every server process, split
 * into SHARDS rows so that concurrent events update different rows (one row would make every ingest of
 * a workspace queue on its lock). Usually one statement does it all. Only when it finds no shard with room
 * that is not locked, and cannot tell that the window is full (the window's first event; the last events
 * before the cap), does a transaction create the window's shards and take a shard waiting for the locked
 * ones: so no more than the cap are ever accepted, and none is refused while a shard has room.
 */
export async function recordEvent(db: Db, access: Access, input: TrackEventInput, limits: IngestLimits): Promise<boolean> {
  const occurred = input.occurred_at ?? null;
  if (occurred && occurred.getTime() > Date.now() + DAY_MS) throw new Validation('occurred_at', 'occurred_at: must not be more than a day in the future.');
  if (occurred && occurred.getTime() < Date.now() - limits.retentionDays * DAY_MS) {
    throw new Validation('occurred_at', `occurred_at: must be within the last ${limits.retentionDays} days (older events are not kept).`);
  }
  const ws = access.workspaceId;
  const values = {
    ws,
    quota: Math.floor(limits.perMinute / SHARDS),
    extra: limits.perMinute % SHARDS,
    start: Math.floor(Math.random() * SHARDS),
    visitor: input.visitor_id,
    type: input.type,
    url: input.url ?? null,
    title: input.title ?? null,
    referrer: input.referrer ?? null,
    sku: input.sku ?? null,
    category: input.category ?? null,
    properties: input.properties == null ? null : JSON.stringify(input.properties),
    occurred,
  };
  const [first] = await skipLocked(db, values);
  if (first.stored === 1) return true;
  if (first.shards === SHARDS && first.open === 0) return false;
  return db.transaction(async (trx) => {
    await trx.raw(
      `insert into track_rate_windows (workspace_id, window_start, shard, count)
       select ?, date_trunc('minute', now()), s, 0 from generate_series(0, ${SHARDS - 1}) s
       on conflict do nothing`,
      [ws],
    );
    const [waited] = await waitLocked(trx, values);
    return waited.stored === 1;
  });
}

// ---------------------------------------------------------------------------------------------
// Linking visitors to customers
// ---------------------------------------------------------------------------------------------

/** The customer a join or a join code names: an existing id, or an email (created when new). */
async function customerFor(trx: Db, access: Access, input: JoinCodeInput): Promise<number> {
  if (input.customer_id !== undefined && input.email !== undefined) throw new Validation('email', 'email: give customer_id or email, not both.');
  if (input.customer_id !== undefined) {
    const customer = await scoped(trx, 'customers', access.workspaceId).where({ id: input.customer_id }).first('id');
    if (!customer) throw new Validation('customer_id', `customer_id: no customer ${input.customer_id} in this workspace.`);
    return customer.id;
  }
  if (input.email === undefined) throw new Validation('customer_id', 'customer_id or email is required.');
  // An existing customer is taken as it is: linking a visitor is no profile change (no customer.updated).
  const existing = await scoped(trx, 'customers', access.workspaceId).where({ email: input.email }).first('id');
  if (existing) return existing.id;
  const { customer } = await upsertCustomer(trx, access, { email: input.email });
  return customer.id;
}

const JOIN_CODE_MINUTES = 15;

/** A one-use code, valid 15 minutes, that lets the browser (public key) join its visitor to the customer. */
export async function createJoinCode(trx: Db, access: Access, input: JoinCodeInput): Promise<{ code: string; expires_at: string }> {
  const customerId = await customerFor(trx, access, input);
  const code = `jc_${randomToken(24)}`;
  const [row] = await trx('track_join_codes')
    .insert({ workspace_id: access.workspaceId, code_hash: sha256(code), customer_id: customerId, expires_at: trx.raw(`now() + interval '${JOIN_CODE_MINUTES} minutes'`) })
    .returning(trx.raw('iso_time(expires_at) as expires_at'));
  return { code, expires_at: row.expires_at };
}

/** Spends the code (under its row lock, so two redemptions cannot both succeed) and returns its customer. */
async function redeemJoinCode(trx: Db, access: Access, code: string): Promise<number> {
  const hash = sha256(code);
  const spent = await scoped(trx, 'track_join_codes', access.workspaceId)
    .where({ code_hash: hash })
    .whereNull('used_at')
    .where('expires_at', '>', trx.fn.now())
    .update({ used_at: trx.fn.now() })
    .returning('customer_id');
  if (spent.length === 1) return spent[0].customer_id;
  const known = await scoped(trx, 'track_join_codes', access.workspaceId).where({ code_hash: hash }).first('used_at');
  if (!known) throw new NotFound('Join code not found.');
  throw new Gone(known.used_at ? 'This join code has already been used.' : 'This join code has expired.');
}

/**
 * Links the visitor to a customer: with the secret key by customer_id or email, with either key by a
 * join code. A visitor belongs to one customer: linking it to another is 409, repeating the link is fine.
 */
export async function joinVisitor(trx: Db, access: Access, input: JoinInput): Promise<{ visitor_id: string; customer_id: number }> {
  let customerId: number;
  if (input.code !== undefined) {
    if (input.customer_id !== undefined || input.email !== undefined) throw new Validation('code', 'code: give either code, or customer_id or email, not both.');
    customerId = await redeemJoinCode(trx, access, input.code);
  } else if (access.via === 'public') {
    if (input.customer_id !== undefined || input.email !== undefined) {
      throw new Forbidden('With the public key a visitor joins only with a code from POST /track/join-codes; customer_id and email need the secret key.');
    }
    throw new Validation('code', 'code is required with the public key (a backend gets one from POST /track/join-codes with the secret key).');
  } else {
    customerId = await customerFor(trx, access, input);
  }
  const ws = access.workspaceId;
  const { rows } = await trx.raw(
    `insert into visitors as v (workspace_id, visitor_id, customer_id, first_seen_at)
     values (?, ?, ?, coalesce((select min(occurred_at) from track_events where workspace_id = ? and visitor_id = ?), now()))
     on conflict (workspace_id, visitor_id) do update set customer_id = excluded.customer_id, last_seen_at = now()
      where v.customer_id is null or v.customer_id = excluded.customer_id
     returning v.customer_id`,
    [ws, input.visitor_id, customerId, ws, input.visitor_id],
  );
  if (rows.length === 0) throw new Conflict('This visitor is already linked to another customer.');
  return { visitor_id: input.visitor_id, customer_id: rows[0].customer_id };
}

// ---------------------------------------------------------------------------------------------
// Reading events
// ---------------------------------------------------------------------------------------------

/** The newest events of the customer's visitors (by occurred_at, then id). */
async function eventsOfCustomer(db: Db, access: Access, customerId: number, limit: number): Promise<EventJson[]> {
  const rows = await scoped(db, 'track_events as e', access.workspaceId)
    .whereIn('e.visitor_id', scoped(db, 'visitors as v', access.workspaceId).where('v.customer_id', customerId).select('v.visitor_id'))
    .orderBy([{ column: 'e.occurred_at', order: 'desc' }, { column: 'e.id', order: 'desc' }])
    .limit(limit)
    .select(db.raw(`${eventJson()} as json`));
  return rows.map((r: { json: EventJson }) => r.json);
}

export async function customerEvents(db: Db, access: Access, customerId: number, limit: number): Promise<EventJson[]> {
  await getCustomer(db, access, customerId);
  return eventsOfCustomer(db, access, customerId, limit);
}

const BROWSING_RECORDS = 50;

/** What the quote's customer browsed: readable by whoever may read the quote (its channel's roles). */
export async function quoteBrowsing(db: Db, access: Access, quoteId: number): Promise<EventJson[]> {
  const quote = await readableQuote(db, access, quoteId);
  const customerId = quote.customer_id as number | null;
  return customerId ? eventsOfCustomer(db, access, customerId, BROWSING_RECORDS) : [];
}
