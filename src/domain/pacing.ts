/**
 * A sender's pace: how many attempts its provider lets it start a second (a
 * WhatsApp business number's messages, a Twilio account's calls). The
 * dispatcher gives each start a slot by virtual scheduling (GCRA): a sender
 * has a next free slot; a start takes max(now, next slot), and the next slot
 * moves on by 1/perSecond. Starts may run ahead of their slot by a little
 * (PACE_AHEAD_MS), so that one batch can start several at once, but never
 * into the next second of the clock: whichever second one counts, a sender
 * starts at most perSecond in it, as providers meter. A task whose slot is
 * further away waits: until that slot, or after the last one told to wait.
 *
 * The next slot lives in the database (store/senderPaces.ts), locked for the
 * batch, so that every worker process on one database keeps one pace.
 */

/** A sender and its pace, as a channel adapter states it. */
export interface SenderPace {
  /** Names the provider and what it meters: `whatsapp_cloud:<phone_number_id>`, `twilio:<account_sid>`. Never a person's value. */
  sender: string
  perSecond: number
}

/** How far ahead of its slot a start may be made: a batch starts up to perSecond / 4 at once. */
export const PACE_AHEAD_MS = 250

/** The most a campaign's pace may be set to: beyond, a pace is no pace. */
export const MAX_PER_SECOND = 1_000_000

/** A sender's slots (epoch ms). */
export interface SenderSlots {
  /** The next free slot: a start takes max(now, it). */
  nextSlotAt: number
  /** When the last task told to wait comes back: the next one comes after it. */
  heldUntil: number
}

export type SlotDecision =
  /** Start it; the sender's slots are now `slots`. */
  | { start: true; slots: SenderSlots }
  /** Wait until `until`; the sender's slots are now `slots`. */
  | { start: false; until: number; slots: SenderSlots }

/**
 * Whether one more start fits the pace now. A next slot further ahead than
 * any start could have put it (a clock that went back: a test's, or another
 * process's behind this one's) counts as now, so that it cannot hold a
 * sender for as long as the clocks differ.
 *
 * A task told to wait does not take a slot: it takes the next free one when
 * it comes back. It comes back one interval after the last one told to wait,
 * so that a crowd due at once comes back spread at the pace, each about when
 * a slot is free, rather than all together again and again.
 */
export function takeSlot(slots: SenderSlots, perSecond: number, now: number): SlotDecision {
  const intervalMs = 1000 / perSecond
  const next = slots.nextSlotAt > now + PACE_AHEAD_MS + intervalMs ? now : slots.nextSlotAt
  const slot = Math.max(now, next)
  if (slot <= now + PACE_AHEAD_MS && slot < secondEnd(now)) return { start: true, slots: { nextSlotAt: slot + intervalMs, heldUntil: slots.heldUntil } }
  const until = Math.max(slot, slots.heldUntil + intervalMs)
  return { start: false, until, slots: { nextSlotAt: slots.nextSlotAt, heldUntil: until } }
}

/** The end of the clock's second that `now` is in. */
const secondEnd = (now: number) => Math.floor(now / 1000) * 1000 + 1000
