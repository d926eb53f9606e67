/**
 * What the retention sweep reads and keeps: each organization's events in
 * commit order (events_org_txid), from where it last stopped. A task's
 * task.completed event is written by the transaction that completed it, so
 * the tasks due for erasure are those of the completions read, in the order
 * they completed, and the sweep never reads a task table's worth of rows to
 * find them, nor needs an index of its own on tasks.
 */
import type { Queryable } from './database.ts'

/** Where the sweep of an organization stopped: the last event it read. */
export interface SweepPosition {
  txid: string
  eventId: string
}

export interface SweptOrganization {
  retentionDays: number | null
  position: SweepPosition | undefined
}

export async function organizationIds(db: Queryable): Promise<string[]> {
  const rows = await db.query<{ id: string }>('SELECT id FROM organizations ORDER BY id')
  return rows.map((row) => row.id)
}

/** The organization's retention and sweep position, locked for this transaction; undefined when another sweep holds it. */
export async function lockForSweep(tx: Queryable, orgId: string): Promise<SweptOrganization | undefined> {
  const rows = await tx.query<{ retention_days: number | null; retention_swept_txid: string | null; retention_swept_event: string | null }>(
    `SELECT retention_days, retention_swept_txid::text, retention_swept_event FROM organizations WHERE id = $1 FOR NO KEY UPDATE SKIP LOCKED`,
    [orgId],
  )
  const row = rows[0]
  if (row === undefined) return undefined
  const position = row.retention_swept_txid === null ? undefined : { txid: row.retention_swept_txid, eventId: row.retention_swept_event! }
  return { retentionDays: row.retention_days, position }
}

export interface SweptEvent {
  position: SweepPosition
  /** The task a task.completed event reports; null for any other event. */
  completedTaskId: string | null
  /** The message that answered no task an interaction.finalized reports; null for any other event. */
  tasklessInteractionId: string | null
  createdAt: number
}

const SWEPT_EVENT_COLUMNS = `txid::text, id, CASE WHEN type = 'task.completed' THEN payload #>> '{data,task_id}' END AS task_id,
  CASE WHEN type = 'interaction.finalized' AND payload #>> '{data,task_id}' IS NULL THEN payload #>> '{data,interaction_id}' END AS taskless_interaction_id,
  created_at`

/**
 * The organization's next `limit` events after `position`, in commit order.
 * Two statements rather than one with `$2 IS NULL OR ...`: a prepared
 * statement's generic plan cannot start the index scan at a position it may
 * not have, and would read the organization's whole history up to it.
 */
export async function eventsAfter(tx: Queryable, orgId: string, position: SweepPosition | undefined, limit: number): Promise<SweptEvent[]> {
  type Row = { txid: string; id: string; task_id: string | null; taskless_interaction_id: string | null; created_at: Date }
  const rows =
    position === undefined
      ? await tx.query<Row>(`SELECT ${SWEPT_EVENT_COLUMNS} FROM events WHERE org_id = $1 ORDER BY events.txid, events.id LIMIT $2`, [orgId, limit])
      : await tx.query<Row>(
          `SELECT ${SWEPT_EVENT_COLUMNS} FROM events WHERE org_id = $1 AND (txid, id) > ($2::xid8, $3::text) ORDER BY events.txid, events.id LIMIT $4`,
          [orgId, position.txid, position.eventId, limit],
        )
  return rows.map((row) => ({
    position: { txid: row.txid, eventId: row.id },
    completedTaskId: row.task_id,
    tasklessInteractionId: row.taskless_interaction_id,
    createdAt: row.created_at.getTime(),
  }))
}

export async function saveSweepPosition(tx: Queryable, orgId: string, position: SweepPosition): Promise<void> {
  await tx.query('UPDATE organizations SET retention_swept_txid = $2::xid8, retention_swept_event = $3 WHERE id = $1', [
    orgId,
    position.txid,
    position.eventId,
  ])
}

/** The triggers of these tasks. */
export async function triggersOfTasks(tx: Queryable, taskIds: readonly string[]): Promise<string[]> {
  const rows = await tx.query<{ trigger_id: string }>('SELECT trigger_id FROM tasks WHERE id = ANY($1::text[])', [taskIds])
  return rows.map((row) => row.trigger_id)
}
