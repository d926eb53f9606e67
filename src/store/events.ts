/** The outbox: events written in the transaction of the change they report. */
import type { Queryable } from './database.ts'

export type EventType = 'task.completed' | 'interaction.finalized'

/** An event exactly as it is sent: the webhook body. */
export interface OutboxEvent {
  id: string
  type: EventType
  timestamp: string
  data: Record<string, unknown>
}

export async function insertEvent(tx: Queryable, orgId: string, event: OutboxEvent): Promise<void> {
  await tx.query('INSERT INTO events (id, org_id, type, payload, created_at) VALUES ($1, $2, $3, $4, $5)', [
    event.id,
    orgId,
    event.type,
    event,
    event.timestamp,
  ])
}

/** An organization's events, oldest first, after the event `after` (ids sort by time). */
export async function listEvents(db: Queryable, orgId: string, options: { after?: string; limit: number }): Promise<OutboxEvent[]> {
  const rows = await db.query<{ payload: OutboxEvent }>(
    `SELECT payload FROM events WHERE org_id = $1 AND ($2::text IS NULL OR id > $2) ORDER BY id LIMIT $3`,
    [orgId, options.after ?? null, options.limit],
  )
  return rows.map((row) => row.payload)
}
