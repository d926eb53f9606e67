/**
 * The senders' paces within one dispatch batch (domain/pacing.ts): which
 * sender each due task starts from, at what pace, and each sender's slots,
 * locked for the batch and saved with it.
 *
 * Cost: nothing when no campaign of the batch is paced (a simulator or agent
 * platform campaign without `pacing`): no statement, no lock. When one is,
 * two statements a batch (lock the senders' rows, save their slots), and
 * batches of one sender on several workers take turns on its row.
 */
import type { ChannelRegistry } from '../channels/registry.ts'
import { type SenderPace, type SenderSlots, takeSlot } from '../domain/pacing.ts'
import type { Queryable } from '../store/database.ts'
import { lockSenderPaces, saveSenderPaces } from '../store/senderPaces.ts'
import type { DueTask } from '../store/tasks.ts'

export class SenderPacer {
  readonly #paceOf: ReadonlyMap<string, SenderPace>
  readonly #slots: Map<string, SenderSlots>
  readonly #moved = new Set<string>()

  private constructor(paceOf: ReadonlyMap<string, SenderPace>, slots: Map<string, SenderSlots>) {
    this.#paceOf = paceOf
    this.#slots = slots
  }

  /** The pacer of a batch's tasks, their senders locked; undefined when none of them is paced. */
  static async lock(tx: Queryable, channels: ChannelRegistry, due: readonly DueTask[]): Promise<SenderPacer | undefined> {
    const paceOf = new Map<string, SenderPace>()
    for (const { campaign } of due) {
      if (paceOf.has(campaign.id)) continue
      const stated = channels.get(campaign.provider, campaign.channel).senderPace(campaign.providerConfig)
      const perSecond = campaign.pacing.per_second ?? stated?.perSecond
      // A provider that names no sender: the campaign's own pace is its alone.
      if (perSecond !== undefined) paceOf.set(campaign.id, { sender: stated?.sender ?? `campaign:${campaign.id}`, perSecond })
    }
    if (paceOf.size === 0) return undefined
    return new SenderPacer(paceOf, await lockSenderPaces(tx, [...new Set([...paceOf.values()].map((pace) => pace.sender))]))
  }

  /**
   * Until when the task waits for its sender; undefined when its slot has
   * come (then `take` it if it starts).
   */
  heldUntil(task: DueTask, now: number): number | undefined {
    const pace = this.#paceOf.get(task.campaign.id)
    if (pace === undefined) return undefined
    const decision = takeSlot(this.#slots.get(pace.sender)!, pace.perSecond, now)
    if (decision.start) return undefined
    this.#record(pace.sender, decision.slots)
    return decision.until
  }

  /** Takes the slot of a task that starts. */
  take(task: DueTask, now: number): void {
    const pace = this.#paceOf.get(task.campaign.id)
    if (pace === undefined) return
    const decision = takeSlot(this.#slots.get(pace.sender)!, pace.perSecond, now)
    if (decision.start) this.#record(pace.sender, decision.slots)
  }

  #record(sender: string, slots: SenderSlots): void {
    this.#slots.set(sender, slots)
    this.#moved.add(sender)
  }

  /** Records the slots the batch moved. */
  async save(tx: Queryable): Promise<void> {
    await saveSenderPaces(tx, new Map([...this.#moved].map((sender) => [sender, this.#slots.get(sender)!])))
  }
}
