/** The outbox: events written in the transaction of the change they report. */
import type { EventType } from '../domain/types.ts'
import type { Queryable } from './database.ts'
import { fanOut } from './deliveries.ts'

/** An event exactly as it is sent: the webhook body. */
export interface OutboxEvent {
  id: string
  type: EventType
  timestamp: string
  data: Record<string, unknown>
}

/** Writes the event and, in the same transaction, its deliveries to the organization's endpoints. */
export async function insertEvent(tx: Queryable, orgId: string, event: OutboxEvent): Promise<void> {
  await tx.query('INSERT INTO events (id, org_id, type, payload, created_at) VALUES ($1, $2, $3, $4, $5)', [
    event.id,
    orgId,
    event.type,
    event,
    event.timestamp,
  ])
  await fanOut(tx, orgId, event.id, event.type, event.timestamp)
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
