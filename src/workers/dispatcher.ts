/**
 * The dispatcher's loop: take due tasks and due settlements in batches until
 * none are left, then sleep until the earliest known due time, a wake-up (a
 * trigger was just recorded, an interaction ended), or the poll interval,
 * whichever comes first. The poll catches work that other processes created.
 */
import type { FastifyBaseLogger } from 'fastify'
import { newId } from '../domain/ids.ts'
import type { ChannelRegistry } from '../channels/registry.ts'
import { TaskLifecycle } from '../services/taskLifecycle.ts'
import type { Database } from '../store/database.ts'
import { nextSettleAt } from '../store/interactions.ts'
import { nextDueAt } from '../store/tasks.ts'

const BATCH = 50
const POLL_MS = 500

export interface DispatcherDeps {
  db: Database
  lifecycle: TaskLifecycle
  log: FastifyBaseLogger
}

export class Dispatcher {
  /** This worker's name on its claims: unique per process and start. */
  readonly worker = newId('worker')
  readonly #deps: DispatcherDeps
  #running = false
  #loop: Promise<void> | undefined
  #wake: (() => void) | undefined
  #woken = false

  constructor(deps: DispatcherDeps) {
    this.#deps = deps
  }

  start(): void {
    if (this.#running) return
    this.#running = true
    this.#loop = this.#run()
  }

  /** Stops after the current round; resolves when it has. */
  async stop(): Promise<void> {
    this.#running = false
    this.wake()
    await this.#loop
  }

  /** Looks for work now rather than at the next poll. */
  wake(): void {
    this.#woken = true
    this.#wake?.()
  }

  /**
   * One round: settles and dispatches until nothing is due. Settling first
   * frees the places of a campaign at its max_concurrent for the tasks
   * dispatched next.
   */
  async runOnce(): Promise<void> {
    const { lifecycle } = this.#deps
    for (;;) {
      const settled = await lifecycle.settleDue(BATCH)
      const dispatched = await lifecycle.dispatchDue(this.worker, BATCH)
      if (dispatched.claimed < BATCH && settled < BATCH) return
    }
  }

  async #run(): Promise<void> {
    while (this.#running) {
      this.#woken = false
      let delay = POLL_MS
      try {
        await this.runOnce()
        delay = await this.#untilNextDue()
      } catch (error) {
        this.#deps.log.error({ err: error }, 'dispatcher round failed')
      }
      if (this.#running && !this.#woken) await this.#sleep(delay)
    }
  }

  async #untilNextDue(): Promise<number> {
    const [task, settle] = await Promise.all([nextDueAt(this.#deps.db), nextSettleAt(this.#deps.db)])
    const next = Math.min(task ?? Infinity, settle ?? Infinity)
    return Math.max(0, Math.min(POLL_MS, next - Date.now()))
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms)
      function done() {
        clearTimeout(timer)
        resolve()
      }
      this.#wake = () => {
        this.#wake = undefined
        done()
      }
    })
  }
}

/** A dispatcher with its lifecycle, each waking the other's loop when an interaction ends. */
export function createDispatcher(deps: {
  db: Database
  channels: ChannelRegistry
  now: () => number
  log: FastifyBaseLogger
}): { lifecycle: TaskLifecycle; dispatcher: Dispatcher } {
  let dispatcher: Dispatcher | undefined
  const lifecycle = new TaskLifecycle({ ...deps, onCapacityFreed: () => dispatcher?.wake() })
  dispatcher = new Dispatcher({ db: deps.db, lifecycle, log: deps.log })
  return { lifecycle, dispatcher }
}
