/**
 * How long personal data is kept: an organization's completed tasks keep
 * their contact's name, number, email, context values and what their
 * conversations reported this many days after they completed, and a message
 * that answered no task this many days after it came; then the retention
 * sweep erases them (services/retention.ts).
 */
export const DEFAULT_RETENTION_DAYS = 365
export const MAX_RETENTION_DAYS = 3650

const DAY_MS = 86_400_000

/** The instant before which a task's completion makes its personal data due for erasure. */
export function retentionCutoff(now: number, retentionDays: number | null): number {
  return now - (retentionDays ?? DEFAULT_RETENTION_DAYS) * DAY_MS
}

/** An event the sweep reads: when it was written, and the task it reports completed or the message that answered no task it reports (null for any other event). */
export interface SweepEvent {
  createdAt: number
  completedTaskId: string | null
  tasklessInteractionId: string | null
}

/**
 * Of an organization's events in commit order, the tasks whose completion is
 * before `cutoff` and the messages that answered no task reported before it,
 * read up to the first event at or after it; `through` is the last event read
 * (undefined when none was), where the next sweep goes on from, and
 * `reachedCutoff` whether reading stopped at the cutoff (nothing more is due
 * now) rather than at the end of the events given.
 */
export function dueForErasure<E extends SweepEvent>(
  events: readonly E[],
  cutoff: number,
): { taskIds: string[]; tasklessInteractionIds: string[]; through: E | undefined; reachedCutoff: boolean } {
  const taskIds: string[] = []
  const tasklessInteractionIds: string[] = []
  let through: E | undefined
  for (const event of events) {
    if (event.createdAt >= cutoff) return { taskIds, tasklessInteractionIds, through, reachedCutoff: true }
    if (event.completedTaskId !== null) taskIds.push(event.completedTaskId)
    if (event.tasklessInteractionId !== null) tasklessInteractionIds.push(event.tasklessInteractionId)
    through = event
  }
  return { taskIds, tasklessInteractionIds, through, reachedCutoff: false }
}
