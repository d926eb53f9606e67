/**
 * How much work waits in each of the service's queues, for the operator: each
 * read from the partial index its workers take work by, so that it costs the
 * size of the queue, never of the history.
 */
import type { Queryable } from './database.ts'
import { isoOrNull } from './rows.ts'

export interface QueueDepths {
  tasks: { pending: number; due: number; oldestDueAt: string | null }
  interactions: { running: number; oldestStartedAt: string | null }
  deliveries: { pending: number; retrying: number; due: number; oldestDueAt: string | null }
}

export async function queueDepths(db: Queryable, now: number): Promise<QueueDepths> {
  const [row] = await db.query<{
    tasks_pending: number
    tasks_due: number
    tasks_oldest: Date | null
    running: number
    running_oldest: Date | null
    deliveries_pending: number
    deliveries_retrying: number
    deliveries_due: number
    deliveries_oldest: Date | null
  }>(
    `SELECT t.pending AS tasks_pending, t.due AS tasks_due, t.oldest AS tasks_oldest,
            i.running, i.oldest AS running_oldest,
            d.pending AS deliveries_pending, d.retrying AS deliveries_retrying, d.due AS deliveries_due, d.oldest AS deliveries_oldest
     FROM (SELECT count(*)::int AS pending, count(*) FILTER (WHERE due_at <= $1)::int AS due, min(due_at) FILTER (WHERE due_at <= $1) AS oldest
           FROM tasks WHERE status = 'pending') t,
          (SELECT count(*)::int AS running, min(started_at) AS oldest FROM interactions WHERE status <> 'finalized') i,
          (SELECT count(*)::int AS pending, count(*) FILTER (WHERE attempts > 0)::int AS retrying,
                  count(*) FILTER (WHERE due_at <= $1)::int AS due, min(due_at) FILTER (WHERE due_at <= $1) AS oldest
           FROM deliveries WHERE status = 'pending') d`,
    [new Date(now)],
  )
  return {
    tasks: { pending: row!.tasks_pending, due: row!.tasks_due, oldestDueAt: isoOrNull(row!.tasks_oldest) },
    interactions: { running: row!.running, oldestStartedAt: isoOrNull(row!.running_oldest) },
    deliveries: { pending: row!.deliveries_pending, retrying: row!.deliveries_retrying, due: row!.deliveries_due, oldestDueAt: isoOrNull(row!.deliveries_oldest) },
  }
}
