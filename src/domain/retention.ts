/**
 * How long history is kept. An organization's completed task, with its
 * trigger, its calls and conversations, its events and their deliveries, is
 * deleted `retention_days` after it completed, and a message that answered
 * no task (with its events) that long after it came; its contact on file
 * goes with the last task that named it, and its number's suppression keeps
 * only a digest from then on. What survives is counted by day
 * (domain/dailyCounts.ts). Endpoint health and the audit log have bounds of
 * their own, for the whole service.
 */
export const DEFAULT_RETENTION_DAYS = 365
export const MAX_RETENTION_DAYS = 3650

/** The service-wide bounds, in days: an endpoint's counts by the hour, and the audit log (ENDPOINT_HEALTH_RETENTION_DAYS, AUDIT_LOG_RETENTION_DAYS). */
export interface HistoryBounds {
  endpointHealthDays: number
  auditLogDays: number
}
export const DEFAULT_HISTORY_BOUNDS: HistoryBounds = { endpointHealthDays: 90, auditLogDays: 730 }

/**
 * A provider's message is remembered (against its delivering it again) with
 * the interaction it went to; one recorded before messages named theirs is
 * kept this long: Meta retries a webhook for up to seven days.
 */
export const UNATTACHED_MESSAGE_DAYS = 7

export const DAY_MS = 86_400_000

/** The instant before which a task's completion makes its history due for deletion. */
export function retentionCutoff(now: number, retentionDays: number | null): number {
  return now - (retentionDays ?? DEFAULT_RETENTION_DAYS) * DAY_MS
}

/**
 * An event the sweep reads, in commit order: when it was written, and what
 * goes with it when it is due. A task's whole history goes at its completion
 * (task.completed), a message that answered no task at its
 * interaction.finalized, a webhook.test on its own; any other event goes with
 * its task or its message.
 */
export interface SweptEvent {
  createdAt: number
  removes: { task: string } | { interaction: string } | { event: string } | null
}

/** What the sweep deletes of a run of events, and where it stops. */
export interface DueHistory<E extends SweptEvent> {
  taskIds: string[]
  /** Messages that answered no task. */
  interactionIds: string[]
  /** webhook.test events. */
  eventIds: string[]
  /** The last event read past, where the next reading goes on from; undefined when none was. */
  through: E | undefined
  /**
   * Why reading stopped: at the first event not due yet (`cutoff`), at one
   * whose history must wait (`held`: a delivery of it still to be attempted,
   * or a call of its task still running), or at the end of the events given.
   */
  stoppedAt: 'cutoff' | 'held' | 'end'
  /** The event reading stopped at: not read past (for `cutoff` and `held`). */
  next: E | undefined
}

/**
 * Of an organization's events in commit order, what is due for deletion
 * before `cutoff`: read up to the first event at or after it, or to the
 * first whose history is held (`held`, by what it removes).
 */
export function dueHistory<E extends SweptEvent>(events: readonly E[], cutoff: number, held: ReadonlySet<string>): DueHistory<E> {
  const due: DueHistory<E> = { taskIds: [], interactionIds: [], eventIds: [], through: undefined, stoppedAt: 'end', next: undefined }
  for (const event of events) {
    if (event.createdAt >= cutoff) return { ...due, stoppedAt: 'cutoff', next: event }
    const removes = event.removes
    if (removes !== null) {
      const id = 'task' in removes ? removes.task : 'interaction' in removes ? removes.interaction : removes.event
      if (held.has(id)) return { ...due, stoppedAt: 'held', next: event }
      if ('task' in removes) due.taskIds.push(id)
      else if ('interaction' in removes) due.interactionIds.push(id)
      else due.eventIds.push(id)
    }
    due.through = event
  }
  return due
}

/**
 * When the sweep is to look at the organization again: when the first event
 * it has not read past (`next`, written at its createdAt) is due; with none
 * (every event read), when whatever is written from `now` on can first be.
 */
export function historyDueAt(next: { createdAt: number } | undefined, now: number, retentionDays: number | null): number {
  return (next?.createdAt ?? now) + (retentionDays ?? DEFAULT_RETENTION_DAYS) * DAY_MS
}
