/**
 * The dispatcher's work: settle the interactions due to be settled and
 * dispatch the due tasks, in batches, until none are left; and now and then
 * forget expired idempotency keys.
 */
import type { FastifyBaseLogger } from 'fastify'
import type { ChannelRegistry } from '../channels/registry.ts'
import { newId } from '../domain/ids.ts'
import { TaskLifecycle } from '../services/taskLifecycle.ts'
import type { Database } from '../store/database.ts'
import { deleteExpiredKeys } from '../store/idempotency.ts'
import { nextSettleAt } from '../store/interactions.ts'
import { nextDueAt } from '../store/tasks.ts'
import { type Work, WorkLoop } from './workLoop.ts'

const BATCH = 50
/** Expired idempotency keys are swept this often, a batch at a time. */
const SWEEP_EVERY_MS = 60_000
const SWEEP_BATCH = 1_000

class Dispatch implements Work {
  readonly name = 'dispatcher'
  /** This worker's name on its claims: unique per process and start. */
  readonly worker = newId('worker')

  #sweptAt = 0

  constructor(
    readonly db: Database,
    readonly lifecycle: TaskLifecycle,
    readonly now: () => number,
  ) {}

  /**
   * Settles and dispatches until nothing is due. Settling first frees the
   * places of a campaign at its max_concurrent for the tasks dispatched next.
   */
  async round(): Promise<boolean> {
    let progressed = false
    for (;;) {
      const settled = await this.lifecycle.settleDue(BATCH)
      const dispatched = await this.lifecycle.dispatchDue(this.worker, BATCH)
      progressed ||= settled > 0 || dispatched.claimed > 0
      if (dispatched.claimed < BATCH && settled < BATCH) break
    }
    if (this.now() - this.#sweptAt >= SWEEP_EVERY_MS) {
      this.#sweptAt = this.now()
      while ((await deleteExpiredKeys(this.db, this.#sweptAt, SWEEP_BATCH)) === SWEEP_BATCH) {}
    }
    return progressed
  }

  async nextDueAt(): Promise<number | undefined> {
    const [task, settle] = await Promise.all([nextDueAt(this.db), nextSettleAt(this.db)])
    return Math.min(task ?? Infinity, settle ?? Infinity)
  }

  async drain(): Promise<void> {}
}

/**
 * A dispatcher with its lifecycle; an interaction that ends wakes it (a
 * campaign at its max_concurrent has room again), and so does every event
 * written, through `onEvents`.
 */
export function createDispatcher(deps: {
  db: Database
  channels: ChannelRegistry
  now: () => number
  log: FastifyBaseLogger
  onEvents: () => void
}): { lifecycle: TaskLifecycle; dispatcher: WorkLoop } {
  let dispatcher: WorkLoop | undefined
  const lifecycle = new TaskLifecycle({
    ...deps,
    onEventsWritten: () => {
      dispatcher?.wake()
      deps.onEvents()
    },
  })
  dispatcher = new WorkLoop(new Dispatch(deps.db, lifecycle, deps.now), deps.log)
  return { lifecycle, dispatcher }
}
