/**
 * The numbers each organization must not contact again. A suppression of a
 * number since erased keeps only its digest (phone_digest, migration 027) in
 * `phone`: every lookup by number tries both, with the service's key.
 */
import type { RevocationMeans } from '../domain/consent.ts'
import type { Queryable } from './database.ts'
import { iso } from './rows.ts'

/**
 * Why a number is suppressed: added by hand (`manual`), the person asked by
 * reply (`reply`: STOP on WhatsApp, or an opt-out word in a text), texted one
 * of the carriers' opt-out keywords (`keyword`: the one their START lifts),
 * the provider reported it (`provider`), or a conversation's result said so.
 */
export type SuppressionReason = 'manual' | 'reply' | 'keyword' | 'provider' | 'conversation'

export interface Suppression {
  /** E.164, or the digest a suppression of an erased number keeps ('sha256:...'). */
  phone: string
  reason: SuppressionReason
  createdAt: string
}

interface SuppressionRow {
  phone: string
  reason: SuppressionReason
  created_at: Date
}

const toSuppression = (row: SuppressionRow): Suppression => ({ phone: row.phone, reason: row.reason, createdAt: iso(row.created_at) })

/**
 * Statement text that finds a suppression of task `t`'s number, `phone` (an
 * expression), in the clear or as its digest with the key in parameter `keyParam`.
 */
export const SUPPRESSION_OF_TASK = (phone: string, keyParam: string) =>
  `SELECT 1 FROM suppressions s WHERE s.org_id = t.org_id AND s.phone IN (${phone}, phone_digest(${keyParam}, ${phone}))`

/** How a consent is revoked by each kind of suppression: an opt-out revokes every consent of the number. */
const REVOKED_BY: Record<SuppressionReason, RevocationMeans> = { manual: 'api', reply: 'reply', keyword: 'reply', provider: 'provider', conversation: 'conversation' }

/**
 * Adds a number; one already there keeps its first reason and date. The
 * number's consents not revoked yet are revoked with it (those kept in the
 * clear: an erased person's were revoked by the erasure). Answers whether
 * the suppression was added.
 */
export async function suppress(tx: Queryable, orgId: string, phone: string, reason: SuppressionReason, now: number): Promise<boolean> {
  const rows = await tx.query<{ added: boolean }>(
    `WITH added AS (
       INSERT INTO suppressions (org_id, phone, reason, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING RETURNING phone
     ), revoked AS (
       UPDATE consents SET revoked_at = $4, revoked_by = $5 WHERE org_id = $1 AND phone = $2 AND revoked_at IS NULL RETURNING id
     )
     SELECT EXISTS (SELECT 1 FROM added) AS added, (SELECT count(*) FROM revoked) AS revoked`,
    [orgId, phone, reason, new Date(now), REVOKED_BY[reason]],
  )
  return rows[0]!.added
}

/** The number's suppression: kept in the clear, or (erased since) as its digest. */
export async function findSuppression(db: Queryable, phoneHashKey: Buffer, orgId: string, phone: string): Promise<Suppression | undefined> {
  const rows = await db.query<SuppressionRow>(
    `SELECT phone, reason, created_at FROM suppressions WHERE org_id = $1 AND phone IN ($2, phone_digest($3, $2)) ORDER BY phone LIMIT 1`,
    [orgId, phone, phoneHashKey],
  )
  return rows[0] && toSuppression(rows[0])
}

/** A page of an organization's suppressions, by phone number (the digests of erased ones after), after `after`. */
export async function listSuppressions(db: Queryable, orgId: string, options: { after?: string; limit: number }): Promise<Suppression[]> {
  const rows = await db.query<SuppressionRow>(
    `SELECT phone, reason, created_at FROM suppressions WHERE org_id = $1 AND ($2::text IS NULL OR phone > $2) ORDER BY phone LIMIT $3`,
    [orgId, options.after ?? null, options.limit],
  )
  return rows.map(toSuppression)
}

/**
 * Lifts the number's suppression by the carriers' opt-out keyword, and only
 * that one (in the clear: the person texting START is not erased). Answers
 * whether there was one.
 */
export async function unsuppressKeywordOptOut(tx: Queryable, orgId: string, phone: string): Promise<boolean> {
  const rows = await tx.query(`DELETE FROM suppressions WHERE org_id = $1 AND phone = $2 AND reason = 'keyword' RETURNING phone`, [orgId, phone])
  return rows.length > 0
}

/**
 * The organization's own suppression of a number the person opted out of
 * by keyword: theirs from now on, so that the person's START no longer lifts
 * it. Answers whether it changed one.
 */
export async function adoptKeywordOptOut(tx: Queryable, orgId: string, phone: string): Promise<boolean> {
  const rows = await tx.query(`UPDATE suppressions SET reason = 'manual' WHERE org_id = $1 AND phone = $2 AND reason = 'keyword' RETURNING phone`, [orgId, phone])
  return rows.length > 0
}

/** Lifts the number's suppression, in the clear and as its digest. */
export async function unsuppress(db: Queryable, phoneHashKey: Buffer, orgId: string, phone: string): Promise<void> {
  await db.query('DELETE FROM suppressions WHERE org_id = $1 AND phone IN ($2, phone_digest($3, $2))', [orgId, phone, phoneHashKey])
}

/** The digest a suppression of an erased number keeps of it. */
export async function phoneDigest(db: Queryable, phoneHashKey: Buffer, phone: string): Promise<string> {
  const rows = await db.query<{ digest: string }>('SELECT phone_digest($1, $2) AS digest', [phoneHashKey, phone])
  return rows[0]!.digest
}

/**
 * Replaces the numbers' suppressions by their digests (a number suppressed
 * both ways keeps one); answers how many of the numbers were suppressed.
 */
export async function eraseSuppressedPhones(tx: Queryable, phoneHashKey: Buffer, orgId: string, phones: readonly string[]): Promise<number> {
  const rows = await tx.query<{ phone: string }>(
    `WITH erased AS (
       DELETE FROM suppressions WHERE org_id = $1 AND phone = ANY($2::text[]) RETURNING phone, reason, created_at
     )
     INSERT INTO suppressions (org_id, phone, reason, created_at)
     SELECT $1, phone_digest($3, phone), reason, created_at FROM erased
     ON CONFLICT DO NOTHING
     RETURNING phone`,
    [orgId, phones, phoneHashKey],
  )
  return rows.length
}
