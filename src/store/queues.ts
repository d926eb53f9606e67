/**
 * How much work waits in each of the service's queues, for the operator: each
 * read from the partial index its workers take work by, so that it costs the
 * size of the queue, never of the history. Completed tasks are history: no
 * index reads them cheaply, and the services count them as they complete
 * instead (services/metrics.ts).
 */
import type { Queryable } from './database.ts'
import { isoOrNull } from './rows.ts'
import { QUEUED_CAMPAIGNS } from './tasks.ts'

export interface QueueDepths {
  /**
   * inProgress: tasks with an attempt running, read through the running
   * interactions. oldestDispatchableAt: the oldest due task of the campaigns
   * not paused, which the dispatchers take (oldestDueAt counts paused ones too).
   */
  tasks: { pending: number; due: number; inProgress: number; oldestDueAt: string | null; oldestDispatchableAt: string | null }
  interactions: { running: number; oldestStartedAt: string | null }
  deliveries: { pending: number; retrying: number; due: number; oldestDueAt: string | null }
}

export async function queueDepths(db: Queryable, now: number): Promise<QueueDepths> {
  const [row] = await db.query<{
    tasks_pending: number
    tasks_due: number
    tasks_oldest: Date | null
    tasks_oldest_dispatchable: Date | null
    tasks_in_progress: number
    running: number
    running_oldest: Date | null
    deliveries_pending: number
    deliveries_retrying: number
    deliveries_due: number
    deliveries_oldest: Date | null
  }>(
    `WITH RECURSIVE ${QUEUED_CAMPAIGNS}
     SELECT t.pending AS tasks_pending, t.due AS tasks_due, t.oldest AS tasks_oldest, r.oldest AS tasks_oldest_dispatchable,
            i.running, i.tasks_in_progress, i.oldest AS running_oldest,
            d.pending AS deliveries_pending, d.retrying AS deliveries_retrying, d.due AS deliveries_due, d.oldest AS deliveries_oldest
     FROM (SELECT count(*)::int AS pending, count(*) FILTER (WHERE due_at <= $1)::int AS due, min(due_at) FILTER (WHERE due_at <= $1) AS oldest
           FROM tasks WHERE status = 'pending') t,
          -- As the dispatcher reads them (store/tasks.ts): the first due task of each running campaign, from its own index range.
          (SELECT min(first.due_at) AS oldest FROM queued JOIN campaigns c ON c.id = queued.id
           CROSS JOIN LATERAL (SELECT due_at FROM tasks WHERE campaign_id = queued.id AND status = 'pending' AND due_at <= $1 ORDER BY due_at LIMIT 1) first
           WHERE c.paused_at IS NULL) r,
          -- A task is in progress exactly while its attempt runs (one at a time), unless cancelled meanwhile:
          -- read through the running interactions, since no index holds the tasks in progress.
          (SELECT count(*)::int AS running, count(*) FILTER (WHERE t.status = 'in_progress')::int AS tasks_in_progress, min(i.started_at) AS oldest
           FROM interactions i LEFT JOIN tasks t ON t.id = i.task_id WHERE i.status <> 'finalized') i,
          (SELECT count(*)::int AS pending, count(*) FILTER (WHERE attempts > 0)::int AS retrying,
                  count(*) FILTER (WHERE due_at <= $1)::int AS due, min(due_at) FILTER (WHERE due_at <= $1) AS oldest
           FROM deliveries WHERE status = 'pending') d`,
    [new Date(now)],
  )
  return {
    tasks: {
      pending: row!.tasks_pending,
      due: row!.tasks_due,
      inProgress: row!.tasks_in_progress,
      oldestDueAt: isoOrNull(row!.tasks_oldest),
      oldestDispatchableAt: isoOrNull(row!.tasks_oldest_dispatchable),
    },
    interactions: { running: row!.running, oldestStartedAt: isoOrNull(row!.running_oldest) },
    deliveries: { pending: row!.deliveries_pending, retrying: row!.deliveries_retrying, due: row!.deliveries_due, oldestDueAt: isoOrNull(row!.deliveries_oldest) },
  }
}
