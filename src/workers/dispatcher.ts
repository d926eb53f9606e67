/**
 * The dispatcher's work: settle the interactions due to be settled and
 * dispatch the due tasks, a batch at a time, until none are left; and, as the
 * periodic janitor, now and then expire the tasks of paused campaigns whose
 * time has come, forget expired idempotency keys, sweep the history that has
 * ended (services/history.ts) and, where nothing else does
 * (store/statistics.ts), analyze the tables that have grown and vacuum those
 * the sweep deletes from.
 *
 * Between batches it yields to the event loop, so that in one process with
 * the API (the default) a long queue never holds requests back for more than
 * one batch. A campaign found at its max_concurrent is left out until one of
 * its interactions ends here or a second passes (another process may end
 * one), so its waiting tasks are neither taken again and again nor in the way
 * of another campaign's.
 */
import type { FastifyBaseLogger } from 'fastify'
import { newId } from '../domain/ids.ts'
import { CAPACITY_RETRY_MS, type Dispatch } from '../services/dispatch.ts'
import type { HistorySweep } from '../services/history.ts'
import type { Database } from '../store/database.ts'
import { deleteExpiredKeys } from '../store/idempotency.ts'
import { nextSettleAt } from '../store/interactions.ts'
import { analyzeGrownTables, HISTORY_TABLES, type HistoryTable, keepsOwnStatistics, vacuumSweptTables } from '../store/statistics.ts'
import { nextDueAt } from '../store/tasks.ts'
import { type Work, WorkLoop } from './workLoop.ts'

/**
 * Tasks (and interactions to settle) taken in one batch. On PostgreSQL a
 * batch costs a few statements whatever its size; PGlite runs in this thread,
 * where a batch holds the event loop for as long as its statements run.
 */
const BATCH = { postgres: 256, pglite: 64 } as const
/** Provider calls in flight at once; no more tasks are taken while this many wait for their providers. */
const MAX_STARTS_IN_FLIGHT = 512
/** Expired idempotency keys are swept this often, a batch at a time. */
const SWEEP_EVERY_MS = 60_000
const SWEEP_BATCH = 1_000
/**
 * How often the tasks of paused campaigns are looked at for their expiry: a
 * read of their due tasks, so not at every round; a task of a paused
 * campaign expires this much late at most.
 */
const PAUSED_EXPIRY_EVERY_MS = 10_000
/**
 * How often the history sweep runs, and for how long at most each time: a
 * tenth of the dispatcher's time while anything is due (and a few index
 * reads when nothing is), so that a backlog (a retention shortened, a
 * service started after a long stop) is worked off over the runs that follow
 * rather than in the way of dispatching.
 */
const HISTORY_EVERY_MS = 1_000
const HISTORY_BUDGET_MS = 100
/**
 * Where nothing vacuums (store/statistics.ts): the rows the sweep deletes
 * before the tables it deletes from are vacuumed, so that their space is used
 * again rather than the files growing; and how often the daily counts'
 * changes, written and deleted every second, are, with one of those tables
 * a round while they are due.
 */
const VACUUM_AFTER_DELETED_ROWS = 50_000
const VACUUM_CHANGES_EVERY_MS = 60_000
/** Where the service keeps its tables' statistics itself, how often it looks for grown tables: a catalog read, and an ANALYZE of those found. */
const STATISTICS_EVERY_MS = 5_000

class Dispatching implements Work {
  readonly name = 'dispatcher'
  /** This worker's name on the attempts it starts: unique per process and start. */
  readonly worker = newId('worker')
  readonly #db: Database
  readonly #dispatch: Dispatch
  readonly #now: () => number
  readonly #onStartsDone: () => void
  readonly #batch: number
  /** Campaigns at their max_concurrent, and until when they are left out. */
  readonly #full = new Map<string, number>()
  readonly #starting = new Set<Promise<void>>()
  #startsInFlight = 0
  #sweptAt = 0
  #pausedExpiryAt = 0
  #statisticsAt = 0
  #historyAt = 0
  #vacuumedAt = 0
  #deletedSinceVacuum = 0
  /**
   * The history tables still to vacuum since the sweep last deleted many rows: one a round, since on the embedded
   * database a VACUUM holds the only session, and every table's at once held the API and the workers for all of them.
   */
  #historyTablesToVacuum: HistoryTable[] = []
  readonly #history: HistorySweep
  #keepsStatistics: boolean | undefined

  constructor(db: Database, dispatch: Dispatch, history: HistorySweep, now: () => number, onStartsDone: () => void) {
    this.#db = db
    this.#dispatch = dispatch
    this.#history = history
    this.#now = now
    this.#onStartsDone = onStartsDone
    this.#batch = BATCH[db.kind]
  }

  /** Interactions of these campaigns ended: they have places again. */
  placesFreed(campaignIds: ReadonlySet<string>): void {
    for (const id of campaignIds) this.#full.delete(id)
  }

  /**
   * Settles and dispatches until nothing is due. Settling first frees the
   * places of a campaign at its max_concurrent for the tasks dispatched next.
   */
  async round(): Promise<boolean> {
    let progressed = false
    for (;;) {
      const settled = await this.#dispatch.settleDue(this.#batch)
      const room = Math.min(this.#batch, MAX_STARTS_IN_FLIGHT - this.#startsInFlight)
      let taken = 0
      if (room > 0) {
        const batch = await this.#dispatch.dispatchDue(this.worker, room, this.#skipped())
        taken = batch.taken
        for (const id of batch.full) this.#full.set(id, this.#now() + CAPACITY_RETRY_MS)
        this.#track(batch.starts, batch.started)
      }
      progressed ||= settled > 0 || taken > 0
      if ((room <= 0 || taken < room) && settled < this.#batch) break
      // Let the requests that arrived meanwhile in before the next batch.
      await new Promise((resolve) => setImmediate(resolve))
    }
    if (this.#now() - this.#pausedExpiryAt >= PAUSED_EXPIRY_EVERY_MS) {
      this.#pausedExpiryAt = this.#now()
      while ((await this.#dispatch.expirePaused(this.#batch)) === this.#batch) {}
    }
    if (this.#now() - this.#sweptAt >= SWEEP_EVERY_MS) {
      this.#sweptAt = this.#now()
      while ((await deleteExpiredKeys(this.#db, this.#sweptAt, SWEEP_BATCH)) === SWEEP_BATCH) {}
    }
    if (this.#now() - this.#historyAt >= HISTORY_EVERY_MS) {
      this.#historyAt = this.#now()
      this.#deletedSinceVacuum += (await this.#history.sweep(HISTORY_BUDGET_MS)).rows
    }
    if (this.#now() - this.#statisticsAt >= STATISTICS_EVERY_MS) {
      this.#statisticsAt = this.#now()
      this.#keepsStatistics ??= await keepsOwnStatistics(this.#db)
      if (this.#keepsStatistics) await analyzeGrownTables(this.#db)
    }
    if (this.#keepsStatistics && this.#now() - this.#vacuumedAt >= VACUUM_CHANGES_EVERY_MS) {
      this.#vacuumedAt = this.#now()
      if (this.#deletedSinceVacuum >= VACUUM_AFTER_DELETED_ROWS) {
        this.#deletedSinceVacuum = 0
        this.#historyTablesToVacuum = [...HISTORY_TABLES]
      }
      await vacuumSweptTables(this.#db, this.#historyTablesToVacuum.shift())
    }
    return progressed
  }

  async nextDueAt(): Promise<number | undefined> {
    const [task, settle] = await Promise.all([nextDueAt(this.#db, this.#skipped()), nextSettleAt(this.#db)])
    return Math.min(task ?? Infinity, settle ?? Infinity, ...this.#full.values())
  }

  async drain(): Promise<void> {
    while (this.#starting.size > 0) await Promise.all(this.#starting)
  }

  #track(starts: Promise<void>, count: number): void {
    if (count === 0) return
    this.#startsInFlight += count
    const tracked = starts.finally(() => {
      this.#startsInFlight -= count
      this.#starting.delete(tracked)
      this.#onStartsDone()
    })
    this.#starting.add(tracked)
  }

  /** The campaigns still at their max_concurrent, as far as this worker knows. */
  #skipped(): string[] {
    const now = this.#now()
    for (const [id, until] of this.#full) if (until <= now) this.#full.delete(id)
    return [...this.#full.keys()]
  }
}

/** A dispatcher loop: woken by new due tasks, by interactions that ended, and when provider calls it waited for are answered. */
export function createDispatcher(deps: {
  db: Database
  dispatch: Dispatch
  history: HistorySweep
  now: () => number
  log: FastifyBaseLogger
}): { loop: WorkLoop; placesFreed: (campaignIds: ReadonlySet<string>) => void } {
  let loop: WorkLoop | undefined
  const work = new Dispatching(deps.db, deps.dispatch, deps.history, deps.now, () => loop?.wake())
  loop = new WorkLoop(work, deps.log)
  return { loop, placesFreed: (campaignIds) => work.placesFreed(campaignIds) }
}
