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
 * circle, and returns each one's slots. A known sender's row is locked
 * without being written: the batch writes it once, with its slots.
 */
export async function lockSenderPaces(tx: Queryable, senders: readonly string[]): Promise<Map<string, SenderSlots>> {
  if (senders.length === 0) return new Map()
  const wanted = [...senders].sort()
  const slots = new Map<string, SenderSlots>()
  // Twice at most: a sender another batch created meanwhile is not inserted here (DO NOTHING), and is locked the second time.
  for (let round = 0; round < 2 && slots.size < wanted.length; round++) {
    const missing = wanted.filter((sender) => !slots.has(sender))
    const rows = await tx.query<{ sender: string; next_slot_ms: number; held_until_ms: number }>(
      `WITH known AS (
         SELECT sender, next_slot_ms, held_until_ms FROM sender_paces WHERE sender = ANY($1::text[]) ORDER BY sender FOR UPDATE
       ), added AS (
         INSERT INTO sender_paces (sender, next_slot_ms, held_until_ms)
         SELECT s, 0, 0 FROM unnest($1::text[]) AS s WHERE s NOT IN (SELECT sender FROM known) ORDER BY s
         ON CONFLICT (sender) DO NOTHING
         RETURNING sender, next_slot_ms, held_until_ms
       )
       SELECT * FROM known UNION ALL SELECT * FROM added`,
      [missing],
    )
    for (const row of rows) slots.set(row.sender, { nextSlotAt: Number(row.next_slot_ms), heldUntil: Number(row.held_until_ms) })
  }
  if (slots.size < wanted.length) throw new Error('a sender\'s pace could not be locked')
  return slots
}

/** Records the senders' slots, of rows this transaction locked. */
export async function saveSenderPaces(tx: Queryable, slots: ReadonlyMap<string, SenderSlots>): Promise<void> {
  if (slots.size === 0) return
  const values = [...slots.values()]
  await tx.query(
    `UPDATE sender_paces p SET next_slot_ms = v.next_slot_ms, held_until_ms = v.held_until_ms
     FROM unnest($1::text[], $2::float8[], $3::float8[]) AS v(sender, next_slot_ms, held_until_ms)
     WHERE p.sender = v.sender`,
    [[...slots.keys()], values.map((at) => at.nextSlotAt), values.map((at) => at.heldUntil)],
  )
}
