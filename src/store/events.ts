/** The outbox: events written in the transaction of the change they report. */
import type { OrganizationEvent, OutboxEvent } from '../domain/events.ts'
import type { EventType } from '../domain/types.ts'
import type { Queryable } from './database.ts'

/**
 * Writes the events and, in the same statement, their deliveries: one to each
 * enabled endpoint of the event's organization subscribed to its type.
 */
export async function insertEvents(tx: Queryable, events: readonly OrganizationEvent[]): Promise<void> {
  if (events.length === 0) return
  await tx.query(
    `WITH written AS (
       INSERT INTO events (id, org_id, type, payload, created_at)
       SELECT v.id, v.org_id, v.type, v.payload::jsonb, v.created_at
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[]) AS v(id, org_id, type, payload, created_at)
       RETURNING id, org_id, type, created_at)
     INSERT INTO deliveries (event_id, endpoint_id, org_id, status, due_at, created_at)
     SELECT e.id, w.id, w.org_id, 'pending', e.created_at, e.created_at
     FROM written e
     JOIN webhook_endpoints w ON w.org_id = e.org_id AND w.enabled AND w.deleted_at IS NULL AND e.type = ANY(w.events)
     ORDER BY e.id`,
    [
      events.map(({ event }) => event.id),
      events.map(({ orgId }) => orgId),
      events.map(({ event }) => event.type),
      events.map(({ event }) => JSON.stringify(event)),
      events.map(({ event }) => event.timestamp),
    ],
  )
}

/**
 * An organization's events in the order their transactions committed, after
 * the event `after`, leaving out every transaction still in progress: a page
 * never passes an event that is yet to appear. Undefined when `after` is not
 * one of the organization's events.
 */
export async function listEvents(
  db: Queryable,
  orgId: string,
  options: { type?: EventType; after?: string; limit: number },
): Promise<OutboxEvent[] | undefined> {
  const rows = await db.query<{ payload: OutboxEvent | null }>(
    `WITH cursor AS (SELECT txid, id FROM events WHERE org_id = $1 AND id = $3)
     SELECT e.payload FROM events e
     WHERE e.org_id = $1 AND ($2::text IS NULL OR e.type = $2)
       AND ($3::text IS NULL OR (e.txid, e.id) > (SELECT txid, id FROM cursor))
       AND e.txid < pg_snapshot_xmin(pg_current_snapshot())
     ORDER BY e.txid, e.id
     LIMIT $4`,
    [orgId, options.type ?? null, options.after ?? null, options.limit],
  )
  if (options.after !== undefined && rows.length === 0 && (await findEvent(db, orgId, options.after)) === undefined) return undefined
  return rows.map((row) => row.payload!)
}

export async function findEvent(db: Queryable, orgId: string, id: string): Promise<OutboxEvent | undefined> {
  const rows = await db.query<{ payload: OutboxEvent }>('SELECT payload FROM events WHERE org_id = $1 AND id = $2', [orgId, id])
  return rows[0]?.payload
}
