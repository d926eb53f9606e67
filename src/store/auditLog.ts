/** The audit log: appended to inside the transaction of each change it records, read newest first. */
import type { Actor, AuditChange, AuditEntry } from '../domain/audit.ts'
import type { Queryable } from './database.ts'
import { iso } from './rows.ts'

export async function recordChange(tx: Queryable, actor: Actor, change: AuditChange, now: number): Promise<void> {
  await tx.query(
    'INSERT INTO audit_log (at, org_id, actor, address, action, target, details) VALUES ($1, $2, $3, $4, $5, $6, $7)',
    [new Date(now), change.orgId, actor.id, actor.address, change.action, change.target, JSON.stringify(change.details)],
  )
}

interface AuditRow {
  id: string
  at: Date
  org_id: string | null
  actor: string
  address: string | null
  action: AuditChange['action']
  target: string
  details: AuditChange['details']
}

const AUDIT_COLUMNS = 'id::text, at, org_id, actor, address, action, target, details'
/** Past every id: the first page's `before`. */
const AFTER_EVERY_ID = '9223372036854775807'

/**
 * Entries newest first, before the entry `before` (an id), of one
 * organization (read backward in audit_log_by_org) or of all (in the primary
 * key). Two statements rather than one with `$1 IS NULL OR ...`, which a
 * prepared statement's generic plan reads as a filter over the whole log.
 */
export async function listAuditEntries(
  db: Queryable,
  options: { orgId?: string; before?: string; limit: number },
): Promise<AuditEntry[]> {
  const before = options.before ?? AFTER_EVERY_ID
  const rows =
    options.orgId === undefined
      ? await db.query<AuditRow>(`SELECT ${AUDIT_COLUMNS} FROM audit_log WHERE id < $1 ORDER BY audit_log.id DESC LIMIT $2`, [before, options.limit])
      : await db.query<AuditRow>(
          `SELECT ${AUDIT_COLUMNS} FROM audit_log WHERE org_id = $1 AND id < $2 ORDER BY audit_log.org_id DESC, audit_log.id DESC LIMIT $3`,
          [options.orgId, before, options.limit],
        )
  return rows.map((row) => ({
    id: row.id,
    at: iso(row.at),
    orgId: row.org_id,
    actor: { id: row.actor, address: row.address },
    action: row.action,
    target: row.target,
    details: row.details,
  }))
}

/** Replaces the numbers the organization's suppression entries name by their digests: the numbers were erased. */
export async function eraseAuditedPhones(tx: Queryable, phoneHashKey: Buffer, orgId: string, phones: readonly string[]): Promise<void> {
  await tx.query(
    `UPDATE audit_log SET target = phone_digest($3, target) WHERE org_id = $1 AND target = ANY($2::text[]) AND action LIKE 'suppression.%'`,
    [orgId, phones, phoneHashKey],
  )
}
