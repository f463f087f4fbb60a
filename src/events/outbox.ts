import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import type { Db } from '../db/database.js';
import { preparedQuery } from '../db/prepared.js';
import type { Access } from '../access.js';

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

/** Watching workers LISTEN here; a fan-out that queued deliveries NOTIFYs it (delivered on commit). */
export const WEBHOOK_CHANNEL = 'quoting_webhooks';

/**
 * Writes an event to the outbox inside the caller's transaction: it commits with the change or not at all. A failure
 * here fails the operation (its transaction rolls back), never the event alone: an event dropped while its change
 * commits is lost without anyone knowing (the "swallowed" rule of spec §6.8 is for an unreachable database, which
 * fails the operation's own writes just as well). `data` is shaped exactly as the JSON API returns the resource. The
 * deliveries to matching webhook subscriptions are queued in the same statement (see emitWithin): one round trip for
 * the event, its deliveries and their NOTIFY.
 */
export async function emit(trx: Db, access: Access, type: EventType, data: Record<string, unknown>): Promise<void> {
  // With WEBHOOKS_ENABLED=0 (carried by the access value) emitWithin writes nothing to the outbox.
  await emitWithin(trx, access, type, [JSON.stringify(data)], async (event) => {
    if (event) await emitGiven(trx, event);
  });
}

/** The part of a caller's statement that writes an event (foldedEventText); its values come from emitWithin. */
export interface FoldedEvent {
  /** CTEs (`outbox_event`, `outbox_deliveries`, `outbox_notified`) to append to the statement's `with`. */
  ctes: string;
  /** A column for the statement's final select: it makes the NOTIFY run when deliveries were queued. */
  column: string;
}

/** Where a folded event's row comes from: `data`, a json expression over `from` (a row source of the statement). */
export interface EventSource {
  from: string;
  data: string;
}

/**
 * The text of an event folded into a caller's statement (see emitWithin): the same for every call with the same
 * source, so that the caller's statement can be a prepared one. `data` is a json expression over `from`. Its fan-out:
 * one delivery per active subscription of the workspace whose filter matches ('*', the type's prefix such as
 * 'quote.*', or the exact type; several matching entries still make one row), and a NOTIFY, when it queued any, that
 * wakes watching workers once the transaction commits.
 */
function foldedEventText(source: EventSource): FoldedEvent {
  return {
    ctes: `outbox_event as (
         insert into events (id, workspace_id, type, data) select ?, ?, ?, ${source.data} from ${source.from} returning id
       ), outbox_deliveries as (
         insert into webhook_deliveries (workspace_id, subscription_id, event_id, event_type)
         select s.workspace_id, s.id, e.id, ? from outbox_event e
         join webhook_subscriptions s on s.workspace_id = ? and s.active and s.event_types && array['*', ?, ?]::text[]
         returning 1
       ), outbox_notified as (
         select pg_notify(?, '') from (select 1 from outbox_deliveries limit 1) d
       )`,
    column: '(select count(*) from outbox_notified) as outbox_notified',
  };
}

/**
 * The event written by the caller's own statement rather than by round trips of its own, for a write
 * that should hold its locks for as short a time as possible (quote creation holds the workspace's
 * number counter until commit). `statement(event)` runs the caller's statement with the event's CTEs
 * (foldedEventText) in it, given their values, `event`, to put after its own: the event's id, workspace and
 * type, `sourceBindings` (those of its source's `from` and `data`), then the fan-out's. Its failure, the event's
 * included, fails the operation (see emit); with events disabled it runs without them (`statement(null)`).
 */
async function emitWithin<T>(
  trx: Db,
  access: Access,
  type: EventType,
  sourceBindings: (string | number)[],
  statement: (event: (string | number)[] | null) => Promise<T>,
): Promise<T> {
  if (!access.events) return statement(null);
  inTransaction(trx);
  const workspaceId = access.workspaceId;
  return statement([eventId(), workspaceId, type, ...sourceBindings, type, workspaceId, type, `${type.split('.')[0]}.*`, WEBHOOK_CHANNEL]);
}

/**
 * The id of the event a database function writes for the caller (quote_create), in the caller's transaction as
 * emit's; null with events off (WEBHOOKS_ENABLED=0), when the function writes none.
 */
export function functionEventId(trx: Db, access: Access): string | null {
  if (!access.events) return null;
  inTransaction(trx);
  return eventId();
}

/** The event belongs to the operation's transaction: written outside one, it could commit without the change, or the change without it. */
function inTransaction(trx: Db): void {
  if (!trx.isTransaction) throw new Error('an event is written in the transaction of the change it reports');
}

/**
 * Events whose bodies PostgreSQL renders from rows just written (a set-based write's orders and customers): `select`
 * gives a row of `type` and `data` (the body as compact JSON text, as JSON.stringify prints it) per event of `types`,
 * in the order the events are to have. One statement writes the outbox rows, their deliveries and the NOTIFY, in the
 * caller's transaction (a failure fails the operation, as emit's), so no body travels to node and back.
 */
export async function emitSelected(trx: Db, access: Access, types: readonly EventType[], select: string, bindings: readonly Knex.RawBinding[]): Promise<void> {
  if (!access.events || types.length === 0) return;
  const workspaceId = access.workspaceId;
  inTransaction(trx);
  const ids = Array.from({ length: types.length }, eventId);
  await trx.raw(
    `with s as (select s.type, s.data, row_number() over () as n from (${select}) s),
          e as (insert into events (id, workspace_id, type, data)
                select k.id, ?, s.type, s.data::json from s join unnest(?::text[]) with ordinality as k(id, n) using (n)
                order by s.n
                returning id, type),
          d as (insert into webhook_deliveries (workspace_id, subscription_id, event_id, event_type)
                select sub.workspace_id, sub.id, e.id, e.type from e
                  join webhook_subscriptions sub on sub.workspace_id = ? and sub.active
                   and sub.event_types && array['*', e.type, split_part(e.type, '.', 1) || '.*']::text[]
                returning 1),
          notified as (select pg_notify(?, '') from (select 1 from d limit 1) d)
     select (select count(*) from notified) as notified`,
    [...bindings, workspaceId, `{${ids.join(',')}}`, workspaceId, WEBHOOK_CHANNEL],
  );
}

/**
 * A statement of the caller's that writes its event too (see emitWithin), prepared twice: `text(foldedEventText(source))`
 * with the event, `text(null)` without. Run with the statement's own values (and `sourceBindings`, those of the source),
 * it answers the statement's rows; if the event cannot be written, the statement fails.
 */
export function emittingStatement<Row>(name: string, source: EventSource, text: (event: FoldedEvent | null) => string) {
  const without = preparedQuery<Row>(name, text(null));
  const withEvent = preparedQuery<Row>(`${name}_emitting`, text(foldedEventText(source)));
  return (trx: Db, access: Access, type: EventType, values: Knex.Value[], sourceBindings: (string | number)[] = []): Promise<Row[]> =>
    emitWithin(trx, access, type, sourceBindings, (event) => (event ? withEvent(trx, [...values, ...event]) : without(trx, values)));
}

/** emit's statement: the outbox row of data given as JSON text, its deliveries and their NOTIFY. */
const emitGiven = preparedQuery(
  'quoting_emit',
  (({ ctes, column }) => `with ${ctes} select ${column}`)(foldedEventText({ from: '(select ?::json as data) given', data: 'given.data' })),
);
