/**
 * Wake-ups: the one way a change tells the workers that something is due now
 * rather than at their next poll. New due tasks (a trigger committed, a retry
 * scheduled), events written (deliveries due), and interactions that ended
 * (a campaign at its max_concurrent has room again).
 *
 * A process that runs the workers tells them in memory. One that does not
 * (an API process beside worker processes on one PostgreSQL) publishes the
 * wake-up instead, and each worker process listens and wakes its own: a
 * transaction that writes the work sends it as it commits (`notification`,
 * as the trigger intake's group commit does), and any other goes as a NOTIFY
 * of its own, coalesced to at most one in flight and one waiting per kind. A
 * NOTIFY is a transaction of its own, with its own WAL flush, so a process
 * with workers publishes nothing: other worker processes sharing the queue
 * find the work at their poll, which also stays as the safety net for a
 * notification lost with a connection.
 */
export type WakeKind = 'tasks' | 'deliveries'

const KINDS: ReadonlySet<string> = new Set<WakeKind>(['tasks', 'deliveries'])

/** How this process sends wake-ups to the others. */
export interface Publisher {
  /** The NOTIFY channel. */
  channel: string
  /** Sends a notification now, in a transaction of its own; resolves once it is sent. */
  send(payload: string): Promise<void>
}

export class Wake {
  readonly #listeners: Record<WakeKind, Set<() => void>> = { tasks: new Set(), deliveries: new Set() }
  readonly #endedListeners = new Set<(campaignIds: ReadonlySet<string>) => void>()
  readonly #publishing: Record<WakeKind, 'idle' | 'sending' | 'again'> = { tasks: 'idle', deliveries: 'idle' }
  #publisher: Publisher | undefined
  /** This process's mark on the wake-ups it sends, so that it can tell them from the others'. */
  readonly #tag = `${process.pid}.${Math.random().toString(36).slice(2, 10)}`

  /** Due tasks were written. */
  tasks(): void {
    this.#wake('tasks')
  }

  /** Events were written: their deliveries are due. */
  deliveries(): void {
    this.#wake('deliveries')
  }

  /** Interactions of these campaigns ended: their tasks may start again. */
  interactionsEnded(campaignIds: ReadonlySet<string>): void {
    for (const listener of this.#endedListeners) listener(campaignIds)
    this.#wake('tasks')
  }

  on(kind: WakeKind, listener: () => void): void {
    this.#listeners[kind].add(listener)
  }

  onInteractionsEnded(listener: (campaignIds: ReadonlySet<string>) => void): void {
    this.#endedListeners.add(listener)
  }

  /** From now on a wake-up that no worker of this process listens for is sent to the other processes. */
  publishWith(publisher: Publisher): void {
    this.#publisher = publisher
  }

  /**
   * The notification a transaction that writes work of this kind should send
   * as it commits, sparing a NOTIFY of its own; undefined when this process
   * wakes its own workers (or has no one to tell).
   */
  notification(kind: WakeKind): { channel: string; payload: string } | undefined {
    if (this.#listeners[kind].size > 0 || this.#publisher === undefined) return undefined
    return { channel: this.#publisher.channel, payload: this.#payload(kind) }
  }

  /** After a commit that sent `notification(kind)`: tells this process's own workers, if it has any. */
  written(kind: WakeKind): void {
    if (this.#listeners[kind].size > 0) this.#tell(kind)
  }

  /** A notification heard on the channel: wakes this process's listeners, unless this process sent it. */
  heard(payload: string): void {
    const [kind, tag] = payload.split(' ')
    if (kind !== undefined && KINDS.has(kind) && tag !== this.#tag) this.#tell(kind as WakeKind)
  }

  #tell(kind: WakeKind): void {
    for (const listener of this.#listeners[kind]) listener()
  }

  #payload(kind: WakeKind): string {
    return `${kind} ${this.#tag}`
  }

  #wake(kind: WakeKind): void {
    if (this.#listeners[kind].size > 0) this.#tell(kind)
    else if (this.#publisher !== undefined) this.#send(kind)
  }

  /** One notification in flight per kind; any asked for meanwhile go as one more after it. */
  #send(kind: WakeKind): void {
    if (this.#publishing[kind] !== 'idle') {
      this.#publishing[kind] = 'again'
      return
    }
    this.#publishing[kind] = 'sending'
    // A lost notification costs only latency: the workers poll.
    void this.#publisher!.send(this.#payload(kind))
      .catch(() => {})
      .finally(() => {
        const again = this.#publishing[kind] === 'again'
        this.#publishing[kind] = 'idle'
        if (again) this.#send(kind)
      })
  }
}
