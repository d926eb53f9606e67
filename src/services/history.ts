/**
 * The history sweep: history ends (domain/retention.ts). The dispatcher's
 * janitor runs it every second, for a bounded time, a batch per transaction:
 *
 * - the day's counts written beside the events are moved into daily_counts,
 *   and the reach counts into reach_counts;
 * - each organization whose history is due (by history_due_at, longest due
 *   first, so that one with nothing due costs nothing, and however many
 *   organizations there are, each is reached as soon as those due before it
 *   are done) has its completed tasks deleted with all they left, its
 *   messages that answered no task, its test events, its contacts on file
 *   that no task left names, and its old suppressions kept as digests;
 * - now and then, the oldest rows of what has a service-wide bound (endpoint
 *   health, the audit log, the numbers' records for the cap on attempts) are
 *   deleted, and so are the numbers of a registry load cut short.
 *
 * Several processes sweep at once without meeting: each locks the
 * organizations it works on, skipping those another holds.
 */
import type { FastifyBaseLogger } from 'fastify'
import { dueHistory, DAY_MS, type HistoryBounds, historyDueAt, retentionCutoff } from '../domain/retention.ts'
import { moveCountChanges } from '../store/dailyCounts.ts'
import { moveReachChanges } from '../store/reachCounts.ts'
import type { Database } from '../store/database.ts'
import { giveUpUnreceivable } from '../store/deliveries.ts'
import {
  deleteBoundedHistory,
  deleteContactsNamedByNone,
  deleteHistory,
  digestSuppressions,
  earliestHistoryDueAt,
  eventsAfter,
  heldHistory,
  type HistoryToDelete,
  lockHistory,
  lockOrganizationsDue,
  type OrganizationEventRow,
  PAST_EVERY_EVENT,
  saveSweeps,
  type SweepPosition,
} from '../store/history.ts'
import { abandonedGenerations, deleteGenerationNumbers, forgetLoadsBegunBefore, REGISTRY_DELETE_BATCH } from '../store/registries.ts'
import { sqlState } from '../store/rows.ts'
import type { ServiceMetrics } from './metrics.ts'

/**
 * Events read per transaction, shared among the organizations of the batch:
 * about 500 completed tasks' worth (a call's task has two events), each
 * about ten rows to delete (its trigger, task, call, two events and their
 * deliveries). A batch takes up to ORGANIZATIONS_PER_BATCH organizations,
 * each reading at least MIN_EVENTS_PER_ORGANIZATION.
 */
const EVENTS_PER_BATCH = 1_000
const ORGANIZATIONS_PER_BATCH = 50
const MIN_EVENTS_PER_ORGANIZATION = 20
/** Daily count changes moved per statement: a few seconds' worth of settlements. */
const COUNT_CHANGES_PER_BATCH = 10_000
/** Suppressions kept as digests per organization and batch. */
const SUPPRESSIONS_PER_BATCH = 500
/** Rows of the service-wide bounds deleted per statement, and how often they are looked at. */
const BOUNDED_ROWS_PER_BATCH = 1_000
const BOUNDED_EVERY_MS = 60_000
/**
 * How long a registry load may take before its generation counts as
 * abandoned: 10 million numbers load in under a minute (BENCHMARKS.md), the
 * whole US registry (about 250 million) in well under an hour.
 */
const REGISTRY_LOAD_ABANDONED_AFTER_MS = DAY_MS
/**
 * How long this process leaves an organization whose history is held (a
 * webhook still to be delivered, a call still running) before it looks again:
 * held, it is due, and would be looked at first by every run; with hundreds
 * held at once (a receiver many share, down) they took a run's whole budget.
 * Its due time stays as it is, so that the wait still shows in
 * conversation_trigger_retention_backlog_age_seconds.
 */
const HELD_LOOK_AGAIN_MS = 60_000
/** SQLSTATEs of a batch that met another transaction's locks in a circle, or lost to it: tried again at the next run. */
const CONTENDED = new Set(['40P01', '40001'])

/** What one run of the sweep did. */
export interface SweepReport {
  /** Completed tasks whose history was deleted. */
  tasks: number
  /** Rows deleted in all (history, contacts, bounded rows). */
  rows: number
  /** Daily and reach count changes moved. */
  countChanges: number
  /** Whether the run stopped for want of time with history still due. */
  unfinished: boolean
}

export class HistorySweep {
  readonly #db: Database
  readonly #now: () => number
  readonly #phoneHashKey: Buffer
  readonly #bounds: HistoryBounds
  readonly #metrics: ServiceMetrics
  readonly #log: FastifyBaseLogger
  #boundedAt = -Infinity
  /** Organizations found held, and when this process looks at each again. */
  readonly #heldUntil = new Map<string, number>()

  constructor(deps: { db: Database; now: () => number; phoneHashKey: Buffer; bounds: HistoryBounds; metrics: ServiceMetrics; log: FastifyBaseLogger }) {
    this.#db = deps.db
    this.#now = deps.now
    this.#phoneHashKey = deps.phoneHashKey
    this.#bounds = deps.bounds
    this.#metrics = deps.metrics
    this.#log = deps.log
  }

  /**
   * Sweeps until nothing is due or `budgetMs` has passed (on the process's
   * monotonic clock), yielding to the event loop between batches.
   */
  async sweep(budgetMs: number): Promise<SweepReport> {
    const started = performance.now()
    const outOfTime = () => performance.now() - started >= budgetMs
    const report: SweepReport = { tasks: 0, rows: 0, countChanges: 0, unfinished: false }
    // Before the run as well as after it: a run that fails (its batch held up, the database gone) still says how long history has waited.
    await this.#reportBacklog()
    for (const move of [moveCountChanges, moveReachChanges]) {
      for (let moved = COUNT_CHANGES_PER_BATCH; moved === COUNT_CHANGES_PER_BATCH && !outOfTime(); ) {
        moved = await move(this.#db, COUNT_CHANGES_PER_BATCH)
        report.countChanges += moved
      }
    }
    if (this.#now() - this.#boundedAt >= BOUNDED_EVERY_MS) {
      this.#boundedAt = this.#now()
      const givenUp = await giveUpUnreceivable(this.#db, this.#boundedAt)
      if (givenUp > 0) this.#log.info({ deliveries: givenUp }, 'deliveries left pending to endpoints that no longer receive were given up')
      report.rows += await this.#deleteBounded(outOfTime)
      report.rows += await this.#deleteAbandonedRegistryNumbers(outOfTime)
    }
    // An organization whose history is held, or not due yet, is not looked at again in the run; one with more due is.
    const done = new Set<string>(this.#stillHeld())
    for (;;) {
      if (outOfTime()) {
        report.unfinished = true
        break
      }
      const batch = await this.#sweepBatch([...done])
      if (batch === undefined) break
      for (const step of batch.steps) {
        if (!step.more) done.add(step.orgId)
        if (step.held) this.#heldUntil.set(step.orgId, this.#now() + HELD_LOOK_AGAIN_MS)
        report.tasks += step.tasks
      }
      report.rows += batch.rows
      await new Promise((resolve) => setImmediate(resolve))
    }
    this.#metrics.retentionDeletedRows.inc(report.rows)
    await this.#reportBacklog()
    return report
  }

  /** The organizations found held that this process leaves alone for now; those whose time has come are forgotten. */
  #stillHeld(): string[] {
    const now = this.#now()
    for (const [orgId, until] of this.#heldUntil) if (until <= now) this.#heldUntil.delete(orgId)
    return [...this.#heldUntil.keys()]
  }

  async #reportBacklog(): Promise<void> {
    const due = await earliestHistoryDueAt(this.#db)
    this.#metrics.retentionBacklog.set(due === undefined ? 0 : Math.max(0, (this.#now() - due) / 1000))
  }

  /** The numbers of registry generations abandoned by a load cut short (store/registries.ts abandonedGenerations), a batch at a time. */
  async #deleteAbandonedRegistryNumbers(outOfTime: () => boolean): Promise<number> {
    let rows = 0
    await forgetLoadsBegunBefore(this.#db, this.#now() - REGISTRY_LOAD_ABANDONED_AFTER_MS)
    for (const generation of await abandonedGenerations(this.#db)) {
      for (let deleted = REGISTRY_DELETE_BATCH; deleted === REGISTRY_DELETE_BATCH && !outOfTime(); ) {
        deleted = await deleteGenerationNumbers(this.#db, generation, REGISTRY_DELETE_BATCH)
        rows += deleted
      }
      if (outOfTime()) break
      this.#log.info({ generation }, "an abandoned registry load's numbers were deleted")
    }
    return rows
  }

  async #deleteBounded(outOfTime: () => boolean): Promise<number> {
    const now = this.#now()
    const bounds = {
      endpointHoursBefore: now - this.#bounds.endpointHealthDays * DAY_MS,
      auditBefore: now - this.#bounds.auditLogDays * DAY_MS,
      now,
    }
    let rows = 0
    for (let deleted = BOUNDED_ROWS_PER_BATCH; deleted >= BOUNDED_ROWS_PER_BATCH && !outOfTime(); ) {
      deleted = await deleteBoundedHistory(this.#db, bounds, BOUNDED_ROWS_PER_BATCH)
      rows += deleted
    }
    return rows
  }

  /**
   * In one transaction, what is due of a batch of the organizations longest
   * due (but those in `skip`), a few statements for the whole batch;
   * undefined when none is due. A batch that met another transaction in a
   * circle of locks is rolled back and left to the next run.
   */
  async #sweepBatch(skip: readonly string[]): Promise<{ steps: { orgId: string; tasks: number; more: boolean; held: boolean }[]; rows: number } | undefined> {
    try {
      return await this.#db.transaction(async (tx) => {
        const now = this.#now()
        const organizations = await lockOrganizationsDue(tx, now, ORGANIZATIONS_PER_BATCH, skip)
        if (organizations.length === 0) return undefined
        // One more than each one's share: the first left unread says when more of its history is due.
        const share = Math.max(MIN_EVENTS_PER_ORGANIZATION, Math.floor(EVENTS_PER_BATCH / organizations.length))
        const read = await eventsAfter(tx, organizations, share + 1)
        const byOrganization = new Map(organizations.map((organization) => [organization.id, [] as OrganizationEventRow[]]))
        for (const event of read) byOrganization.get(event.orgId)!.push(event)
        const cutoffs = new Map(organizations.map((organization) => [organization.id, retentionCutoff(now, organization.retentionDays)]))
        const candidates = organizations.map((organization) => dueHistory(byOrganization.get(organization.id)!.slice(0, share), cutoffs.get(organization.id)!, new Set()))
        await lockHistory(tx, gathered(candidates))
        const held = await heldHistory(tx, gathered(candidates))
        const steps = organizations.map((organization) => {
          const events = byOrganization.get(organization.id)!
          const cutoff = cutoffs.get(organization.id)!
          const due = dueHistory(events.slice(0, share), cutoff, held)
          const next = due.stoppedAt === 'end' ? events[share] : due.next
          return {
            organization,
            due,
            save: {
              orgId: organization.id,
              position: positionAfter(due.through, next, organization.position),
              dueAt: historyDueAt(next, now, organization.retentionDays),
              suppressionsBefore: cutoff,
            },
            more: due.stoppedAt === 'end' && next !== undefined && next.createdAt < cutoff,
          }
        })
        const deleted = await deleteHistory(tx, gathered(steps.map((step) => step.due)), now)
        const contacts = await deleteContactsNamedByNone(tx, deleted.contactIds)
        const clear = new Set(await saveSweeps(tx, steps.map((step) => step.save)))
        let rows = deleted.rows + contacts
        const report = []
        for (const { organization, due, save, more } of steps) {
          const digested = clear.has(organization.id) ? await digestSuppressions(tx, this.#phoneHashKey, organization.id, save.suppressionsBefore, SUPPRESSIONS_PER_BATCH) : 0
          rows += digested
          report.push({ orgId: organization.id, tasks: due.taskIds.length, more: more || digested === SUPPRESSIONS_PER_BATCH, held: due.stoppedAt === 'held' })
        }
        return { steps: report, rows }
      })
    } catch (error) {
      const state = sqlState(error)
      if (state === undefined || !CONTENDED.has(state)) throw error
      this.#log.warn({ code: state }, 'a history sweep batch met another transaction; it is tried again at the next run')
      return undefined
    }
  }
}

/** What several organizations' sweeps delete, together. */
function gathered(due: readonly HistoryToDelete[]): HistoryToDelete {
  return {
    taskIds: due.flatMap((each) => each.taskIds),
    interactionIds: due.flatMap((each) => each.interactionIds),
    eventIds: due.flatMap((each) => each.eventIds),
  }
}

/**
 * Where the next reading starts: past the last event read past, or past its
 * whole transaction when the next event (if any) is of a later one, so that
 * the position names no event (and none that is deleted).
 */
function positionAfter(through: OrganizationEventRow | undefined, next: OrganizationEventRow | undefined, before: SweepPosition | undefined): SweepPosition | undefined {
  if (through === undefined) return before
  const { txid } = through.position
  return next?.position.txid === txid ? through.position : { txid, eventId: PAST_EVERY_EVENT }
}
