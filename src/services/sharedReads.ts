/**
 * Reads of the database that concurrent callers share: while one read of a
 * key is under way, every caller that asks for that key gets its answer
 * rather than making a read of its own. The triggers of a batch request that
 * find a directory's cache cold (or expired) then cost one read, not one
 * each.
 */
export class SharedReads<Value> {
  readonly #reading = new Map<string, Promise<Value>>()

  /** The read of `key` under way, or a new one made by `read`. */
  read(key: string, read: () => Promise<Value>): Promise<Value> {
    const underWay = this.#reading.get(key)
    if (underWay !== undefined) return underWay
    const reading = read().finally(() => {
      if (this.#reading.get(key) === reading) this.#reading.delete(key)
    })
    this.#reading.set(key, reading)
    return reading
  }

  /** A read of `key` begun before a change in this process is not shared with the callers after it. */
  forget(key: string): void {
    this.#reading.delete(key)
  }
}
