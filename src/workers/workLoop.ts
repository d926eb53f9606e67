/**
 * The loop every worker runs: a round of work until nothing is due, then
 * sleep until the earliest known due time, a wake-up (new work written in
 * this process), or the poll interval, whichever comes first. The poll
 * catches work that other processes wrote.
 */
import type { FastifyBaseLogger } from 'fastify'

const POLL_MS = 500

export interface Work {
  readonly name: string
  /** Takes on what is due now; false when it could take on nothing (even if something is due). */
  round(): Promise<boolean>
  /** When something is next due, as far as the database tells. */
  nextDueAt(): Promise<number | undefined>
  /** Waits for what the rounds so far have started (the deliverer's sends run beyond their round). */
  drain(): Promise<void>
}

export class WorkLoop {
  readonly #work: Work
  readonly #log: FastifyBaseLogger
  #running = false
  #loop: Promise<void> | undefined
  #wake: (() => void) | undefined
  #woken = false

  constructor(work: Work, log: FastifyBaseLogger) {
    this.#work = work
    this.#log = log
  }

  start(): void {
    if (this.#running) return
    this.#running = true
    this.#loop = this.#run()
  }

  /** Stops after the current round and waits for the work it started. */
  async stop(): Promise<void> {
    this.#running = false
    this.wake()
    await this.#loop
    await this.#work.drain()
  }

  /** Looks for work now rather than at the next poll. */
  wake(): void {
    this.#woken = true
    this.#wake?.()
  }

  /** One round, waiting for all it starts: for tests, which move an injected clock between rounds. */
  async runOnce(): Promise<void> {
    await this.#work.round()
    await this.#work.drain()
  }

  async #run(): Promise<void> {
    while (this.#running) {
      this.#woken = false
      let delay = POLL_MS
      try {
        const progressed = await this.#work.round()
        const next = await this.#work.nextDueAt()
        // Due but not taken (a receiver at its limit of sends in flight): wait for a wake-up or the poll, not spin.
        const pastDue = next !== undefined && next <= Date.now()
        delay = !progressed && pastDue ? POLL_MS : Math.max(0, Math.min(POLL_MS, (next ?? Infinity) - Date.now()))
      } catch (error) {
        this.#log.error({ err: error }, `${this.#work.name} round failed`)
      }
      if (this.#running && !this.#woken) await this.#sleep(delay)
    }
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
