/**
 * Group commit: concurrent callers each submit one item; items that arrive
 * while earlier commits are in flight wait and go together in the next one.
 * Each caller is answered when the commit that holds its item has finished,
 * so nothing is acknowledged before it is durable, while the database does
 * one commit (one WAL flush) for many requests under load.
 *
 * A commit starts on the event loop's next check phase (setImmediate), after
 * every request already read from the sockets has submitted its item: an idle
 * system waits for nothing, and a busy one fills its batches even when the
 * database answers within the same tick (PGlite runs in this thread).
 */

export interface GroupCommitterOptions {
  /** Most items in one commit. */
  maxBatch: number
  /** Most commits in flight at once. */
  maxInFlight: number
  /**
   * Whether the items of a failed batch may be committed again one by one: true
   * only for errors that say the batch was rolled back (so a single poisoned
   * item fails alone); never for an error that leaves the outcome unknown.
   */
  retryAlone: (error: unknown) => boolean
}

interface Waiting<Item, Outcome> {
  item: Item
  resolve: (outcome: Outcome) => void
  reject: (error: unknown) => void
}

export class GroupCommitter<Item, Outcome> {
  readonly #commit: (items: Item[]) => Promise<Outcome[]>
  readonly #options: GroupCommitterOptions
  #queue: Waiting<Item, Outcome>[] = []
  #inFlight = 0
  #flushScheduled = false
  #idle: (() => void)[] = []

  /** `commit` returns one outcome per item, in the order given. */
  constructor(commit: (items: Item[]) => Promise<Outcome[]>, options: GroupCommitterOptions) {
    this.#commit = commit
    this.#options = options
  }

  submit(item: Item): Promise<Outcome> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ item, resolve, reject })
      this.#scheduleFlush()
    })
  }

  /** Resolves once every submitted item has been answered. */
  drained(): Promise<void> {
    if (this.#inFlight === 0 && this.#queue.length === 0) return Promise.resolve()
    return new Promise((resolve) => this.#idle.push(resolve))
  }

  #scheduleFlush(): void {
    if (this.#flushScheduled) return
    this.#flushScheduled = true
    setImmediate(() => {
      this.#flushScheduled = false
      this.#flush()
    })
  }

  #flush(): void {
    while (this.#inFlight < this.#options.maxInFlight && this.#queue.length > 0) {
      const batch = this.#queue.splice(0, this.#options.maxBatch)
      this.#inFlight++
      void this.#run(batch).finally(() => {
        this.#inFlight--
        this.#scheduleFlush()
        if (this.#inFlight === 0 && this.#queue.length === 0) for (const resolve of this.#idle.splice(0)) resolve()
      })
    }
  }

  async #run(batch: Waiting<Item, Outcome>[]): Promise<void> {
    try {
      const outcomes = await this.#commit(batch.map((waiting) => waiting.item))
      batch.forEach((waiting, index) => waiting.resolve(outcomes[index]!))
    } catch (error) {
      if (batch.length > 1 && this.#options.retryAlone(error)) {
        await Promise.all(batch.map((waiting) => this.#run([waiting])))
      } else {
        for (const waiting of batch) waiting.reject(error)
      }
    }
  }
}
