/**
 * The senders' slots (domain/pacing.ts), one row per sender, held by a
 * dispatch batch from its first look to its commit: two workers pacing one
 * sender take their slots one after the other, never the same ones.
 */
import type { SenderSlots } from '../domain/pacing.ts'
import type { Queryable } from './database.ts'

/**
 * Locks the senders' rows (created on first use, as having a slot free at
 * once) in sender order, so that batches never wait on each other in a
 * circle, and returns each one's slots.
 */
export async function lockSenderPaces(tx: Queryable, senders: readonly string[]): Promise<Map<string, SenderSlots>> {
  if (senders.length === 0) return new Map()
  // ON CONFLICT DO UPDATE locks an existing row and returns it: one statement for new and known senders alike.
  const rows = await tx.query<{ sender: string; next_slot_at: Date; held_until_at: Date }>(
    `INSERT INTO sender_paces (sender, next_slot_at, held_until_at)
     SELECT s, 'epoch'::timestamptz, 'epoch'::timestamptz FROM unnest($1::text[]) AS s ORDER BY s
     ON CONFLICT (sender) DO UPDATE SET sender = excluded.sender
     RETURNING sender, next_slot_at, held_until_at`,
    [[...senders].sort()],
  )
  return new Map(rows.map((row) => [row.sender, { nextSlotAt: row.next_slot_at.getTime(), heldUntil: row.held_until_at.getTime() }]))
}

/** Records the senders' slots (of rows this transaction locked), rounded up to the millisecond the columns keep: never earlier. */
export async function saveSenderPaces(tx: Queryable, slots: ReadonlyMap<string, SenderSlots>): Promise<void> {
  if (slots.size === 0) return
  const values = [...slots.values()]
  await tx.query(
    `UPDATE sender_paces p SET next_slot_at = v.next_slot_at, held_until_at = v.held_until_at
     FROM unnest($1::text[], $2::timestamptz[], $3::timestamptz[]) AS v(sender, next_slot_at, held_until_at)
     WHERE p.sender = v.sender`,
    [[...slots.keys()], values.map((at) => new Date(Math.ceil(at.nextSlotAt))), values.map((at) => new Date(Math.ceil(at.heldUntil)))],
  )
}
