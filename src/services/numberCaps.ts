/**
 * The organizations' caps on attempts to one number (domain/contactCap.ts),
 * as a dispatch batch applies them: the numbers of its due tasks whose
 * organization has a cap are locked and read at once, each task is decided
 * in memory (the batch's own attempts counted as they are taken), and the
 * attempts begun are written back before the batch commits. Two dispatchers
 * wanting one number wait for each other on its row, so that they never both
 * take its last place.
 *
 * Cost: none for a batch with no capped organization (not a statement, not
 * a write). With one, two statements a batch: the lock (a row version of
 * each number) and the write of the numbers called.
 */
import { capStep } from '../domain/contactCap.ts'
import { scheduleZones } from '../domain/schedule.ts'
import type { Queryable } from '../store/database.ts'
import { lockNumberAttempts, numberKey, saveNumberAttempts } from '../store/numberAttempts.ts'
import type { DueTask } from '../store/tasks.ts'

export class NumberCaps {
  /** Each locked number's attempts as read, by numberKey. */
  readonly #started: Map<string, number[]>
  /** The attempts this batch has taken to each number. */
  readonly #taken = new Map<string, number>()
  readonly #phoneHashKey: Buffer

  private constructor(started: Map<string, number[]>, phoneHashKey: Buffer) {
    this.#started = started
    this.#phoneHashKey = phoneHashKey
  }

  /** Locks the numbers of the due tasks whose organization has a cap (none of the suppressed ones, which start nothing). */
  static async lock(tx: Queryable, phoneHashKey: Buffer, due: readonly DueTask[], now: number): Promise<NumberCaps> {
    const capped = due.filter((task) => task.contactCap !== null && !task.suppressed)
    const started = await lockNumberAttempts(tx, phoneHashKey, capped.map(numberOf), now)
    return new NumberCaps(started, phoneHashKey)
  }

  /** When the cap lets the task's next attempt start, if not now; undefined when it may start now. */
  heldUntil(task: DueTask, now: number): number | undefined {
    if (task.contactCap === null) return undefined
    const key = numberKey(numberOf(task))
    const started = [...(this.#started.get(key) ?? []), ...Array<number>(this.#taken.get(key) ?? 0).fill(now)]
    const step = capStep(started, task.contactCap, capZones(task), now)
    return step.kind === 'held' ? step.until : undefined
  }

  /** Counts an attempt the batch is about to begin for the task. */
  take(task: DueTask): void {
    if (task.contactCap === null) return
    const key = numberKey(numberOf(task))
    this.#taken.set(key, (this.#taken.get(key) ?? 0) + 1)
  }

  /** Writes the attempts begun for tasks of capped organizations, each started at `now`. */
  async record(tx: Queryable, begun: readonly DueTask[], now: number): Promise<void> {
    const byNumber = new Map<string, { orgId: string; phone: string; startedAt: number[] }>()
    for (const task of begun) {
      if (task.contactCap === null) continue
      const number = numberOf(task)
      const key = numberKey(number)
      const entry = byNumber.get(key) ?? { ...number, startedAt: [...(this.#started.get(key) ?? [])] }
      entry.startedAt.push(now)
      byNumber.set(key, entry)
    }
    await saveNumberAttempts(tx, this.#phoneHashKey, [...byNumber.values()], now)
  }
}

const numberOf = (task: DueTask) => ({ orgId: task.orgId, phone: task.contact.phone })

/**
 * The zones whose calendar days the local-day rule counts in: the contact's
 * candidate zones, or, when the task has none (its campaign kept a zone of
 * its own when it was accepted), the zones its schedule is read in.
 */
function capZones(task: DueTask): readonly string[] {
  if (task.timezones.length > 0) return task.timezones
  const zones = scheduleZones(task.campaign.schedule, [])
  return zones.length > 0 ? zones : ['UTC']
}
