/** The numbers each organization must not contact again. */
import type { Queryable } from './database.ts'
import { iso } from './rows.ts'

export type SuppressionReason = 'manual' | 'reply' | 'provider'

export interface Suppression {
  phone: string
  reason: SuppressionReason
  createdAt: string
}

/** Adds a number; one already there keeps its first reason and date. */
export async function suppress(tx: Queryable, orgId: string, phone: string, reason: SuppressionReason, now: number): Promise<void> {
  await tx.query(
    `INSERT INTO suppressions (org_id, phone, reason, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`,
    [orgId, phone, reason, new Date(now)],
  )
}

export async function isSuppressed(tx: Queryable, orgId: string, phone: string): Promise<boolean> {
  const rows = await tx.query('SELECT 1 FROM suppressions WHERE org_id = $1 AND phone = $2', [orgId, phone])
  return rows.length === 1
}

export async function findSuppression(db: Queryable, orgId: string, phone: string): Promise<Suppression | undefined> {
  const rows = await db.query<{ phone: string; reason: SuppressionReason; created_at: Date }>(
    'SELECT phone, reason, created_at FROM suppressions WHERE org_id = $1 AND phone = $2',
    [orgId, phone],
  )
  const row = rows[0]
  return row && { phone: row.phone, reason: row.reason, createdAt: iso(row.created_at) }
}

/** A page of an organization's suppressions, by phone number, after `after`. */
export async function listSuppressions(db: Queryable, orgId: string, options: { after?: string; limit: number }): Promise<Suppression[]> {
  const rows = await db.query<{ phone: string; reason: SuppressionReason; created_at: Date }>(
    `SELECT phone, reason, created_at FROM suppressions WHERE org_id = $1 AND ($2::text IS NULL OR phone > $2) ORDER BY phone LIMIT $3`,
    [orgId, options.after ?? null, options.limit],
  )
  return rows.map((row) => ({ phone: row.phone, reason: row.reason, createdAt: iso(row.created_at) }))
}

export async function unsuppress(db: Queryable, orgId: string, phone: string): Promise<void> {
  await db.query('DELETE FROM suppressions WHERE org_id = $1 AND phone = $2', [orgId, phone])
}
