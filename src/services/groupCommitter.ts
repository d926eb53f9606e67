/**
 * Group commit: concurrent callers each submit one item; items that arrive
 * while earlier commits are in flight wait and go together in the next one.
 * Each caller is answered when the commit that holds its item has finished,
 * so nothing is acknowledged before it is durable, while the database does
 * one commit (one WAL flush) for many requests under load.
 *
 * A commit starts on the event loop's next check phase (setImmediate), after
 * every request already read from the sockets has submitted its item, or as
 * soon as `flushAtLength` items wait: an idle system waits for nothing, and a
 * busy one fills its batches even when the database answers within the same
 * tick (PGlite runs in this thread).
 */

export interface GroupCommitterOptions<Item> {
  /** Most items in one commit. */
  maxBatch: number
  /** Most weight (say, bytes) in one commit; a heavier single item still goes, alone. */
  maxBatchWeight: number
  weigh: (item: Item) => number
  /** Most commits in flight at once. */
  maxInFlight: number
  /**
   * Queue length at which a commit starts at once, while further requests are
   * still being read, instead of at the end of the poll phase: the database
   * then works while this process parses, rather than both taking turns.
   */
  flushAtLength: number
  /**
   * Whether the items of a failed batch may be committed again one by one: true
   * only for errors that say the batch was rolled back (so a single poisoned
   * item fails alone); never for an error that leaves the outcome unknown.
   */
  retryAlone: (error: unknown) => boolean
}

interface Waiting<Item, Outcome> {
  item: Item
  weight: number
  resolve: (outcome: Outcome) => void
  reject: (error: unknown) => void
}

export class GroupCommitter<Item, Outcome> {
  readonly #commit: (items: Item[]) => Promise<Outcome[]>
  readonly #options: GroupCommitterOptions<Item>
  readonly #queue: Waiting<Item, Outcome>[] = []
  #inFlight = 0
  #flushScheduled = false
  readonly #idle: (() => void)[] = []

  /** `commit` returns one outcome per item, in the order given. */
  constructor(commit: (items: Item[]) => Promise<Outcome[]>, options: GroupCommitterOptions<Item>) {
    this.#commit = commit
    this.#options = options
  }

  submit(item: Item): Promise<Outcome> {
    return this.submitAll([item])[0]!
  }

  /**
   * Submits several items at once (a batch request's): queued together, so
   * that they fill whole commits rather than each starting a small one.
   */
  submitAll(items: readonly Item[]): Promise<Outcome>[] {
    const answers = items.map(
      (item) => new Promise<Outcome>((resolve, reject) => this.#queue.push({ item, weight: this.#options.weigh(item), resolve, reject })),
    )
    if (this.#queue.length >= this.#options.flushAtLength && this.#inFlight < this.#options.maxInFlight) this.#flush()
    else this.#scheduleFlush()
    return answers
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
      const batch = this.#queue.splice(0, this.#batchLength())
      this.#inFlight++
      void this.#run(batch).finally(() => {
        this.#inFlight--
        this.#scheduleFlush()
        if (this.#inFlight === 0 && this.#queue.length === 0) for (const resolve of this.#idle.splice(0)) resolve()
      })
    }
  }

  /** How many queued items the next commit takes: at least one, within both limits. */
  #batchLength(): number {
    let weight = this.#queue[0]!.weight
    let length = 1
    while (length < this.#queue.length && length < this.#options.maxBatch) {
      weight += this.#queue[length]!.weight
      if (weight > this.#options.maxBatchWeight) break
      length++
    }
    return length
  }

  async #run(batch: Waiting<Item, Outcome>[]): Promise<void> {
    try {
      const outcomes = await this.#commit(batch.map((waiting) => waiting.item))
      batch.forEach((waiting, index) => waiting.resolve(outcomes[index]!))
    } catch (error) {
      if (batch.length > 1 && this.#options.retryAlone(error)) {
        // One after another, within this commit's slot, not all at once.
        for (const waiting of batch) await this.#run([waiting])
      } else {
        for (const waiting of batch) waiting.reject(error)
      }
    }
  }
}

/**
 * Options for commits of up to `maxBatch` equal items on a database of this
 * `concurrency`: two commits overlap on a server (one is built while the other
 * flushes) and start early once 64 items wait; PGlite, which works in this
 * thread, runs one at a time and gains nothing from an early start. A batch
 * is retried item by item only when `retryAlone` says it was rolled back.
 */
export function batchesOf<Item>(concurrency: number, maxBatch: number, retryAlone: (error: unknown) => boolean): GroupCommitterOptions<Item> {
  return {
    maxBatch,
    maxBatchWeight: maxBatch,
    weigh: () => 1,
    maxInFlight: Math.min(2, concurrency),
    flushAtLength: concurrency > 1 ? 64 : Number.POSITIVE_INFINITY,
    retryAlone,
  }
}
