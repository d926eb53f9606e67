/**
 * The retention sweep: each organization's completed tasks, and the messages
 * that answered no task, lose their personal data (as an erasure clears it)
 * once they completed (came) longer ago than its retention_days. The dispatcher's janitor runs it now and then, a
 * bounded batch per transaction, for a bounded time per run, so that a
 * backlog (a retention shortened, a service started after a long stop) is
 * worked off over several runs rather than in the way of dispatching.
 */
import { dueForErasure, retentionCutoff } from '../domain/retention.ts'
import type { Database } from '../store/database.ts'
import { erasePersonRecords } from '../store/erasure.ts'
import { eventsAfter, lockForSweep, organizationIds, saveSweepPosition, triggersOfTasks } from '../store/retention.ts'

/** Events read per transaction: a few completed tasks' worth each (their triggers, tasks and interactions updated). */
const RETENTION_BATCH = 500

export class RetentionSweep {
  readonly #db: Database
  readonly #now: () => number

  constructor(deps: { db: Database; now: () => number }) {
    this.#db = deps.db
    this.#now = deps.now
  }

  /**
   * Sweeps every organization until nothing is due or `budgetMs` has passed
   * (on the process's monotonic clock); answers the tasks erased. Between
   * batches it yields to the event loop.
   */
  async sweep(budgetMs: number): Promise<number> {
    const started = performance.now()
    let erased = 0
    for (const orgId of await organizationIds(this.#db)) {
      for (;;) {
        const step = await this.#sweepBatch(orgId)
        erased += step.erased
        if (performance.now() - started >= budgetMs) return erased
        if (!step.more) break
        await new Promise((resolve) => setImmediate(resolve))
      }
    }
    return erased
  }

  /** One batch of one organization's events, in one transaction: skipped while another process sweeps it. */
  #sweepBatch(orgId: string): Promise<{ erased: number; more: boolean }> {
    return this.#db.transaction(async (tx) => {
      const organization = await lockForSweep(tx, orgId)
      if (organization === undefined) return { erased: 0, more: false }
      const events = await eventsAfter(tx, orgId, organization.position, RETENTION_BATCH)
      const due = dueForErasure(events, retentionCutoff(this.#now(), organization.retentionDays))
      if (due.through === undefined) return { erased: 0, more: false }
      if (due.taskIds.length > 0 || due.tasklessInteractionIds.length > 0) {
        const triggerIds = await triggersOfTasks(tx, due.taskIds)
        await erasePersonRecords(tx, orgId, {
          triggerIds,
          taskIds: due.taskIds,
          phones: [],
          contactIds: [],
          ids: [],
          tasklessInteractionIds: due.tasklessInteractionIds,
        })
      }
      await saveSweepPosition(tx, orgId, due.through.position)
      return { erased: due.taskIds.length, more: !due.reachedCutoff && events.length === RETENTION_BATCH }
    })
  }
}
