/**
 * The audit log of changes to an organization's setup and of erasures:
 * written by the transaction of each change, read by the operator.
 */
import type { Actor, AuditChange, AuditEntry } from '../domain/audit.ts'
import { listAuditEntries, recordChange } from '../store/auditLog.ts'
import type { Database, Queryable } from '../store/database.ts'

/**
 * Makes a change and records it in the audit log, in one transaction: the
 * change appears in the log once, and only if it was made. `change` answers
 * what to record: one change, several (a pause of each campaign of a routing
 * key), or none when nothing changed after all.
 */
export async function audited<T>(
  ops: { db: Database; now: () => number },
  actor: Actor,
  change: (tx: Queryable) => Promise<{ result: T; audit: AuditChange | readonly AuditChange[] | undefined }>,
): Promise<T> {
  return ops.db.transaction(async (tx) => {
    const { result, audit } = await change(tx)
    const changes = audit === undefined ? [] : 'action' in audit ? [audit] : audit
    for (const each of changes) await recordChange(tx, actor, each, ops.now())
    return result
  })
}

export interface AuditOperations {
  db: Database
}

/** The newest entries first, of one organization or of all, before the entry `before`. */
export function auditLog(ops: AuditOperations, options: { orgId?: string; before?: string; limit: number }): Promise<AuditEntry[]> {
  return listAuditEntries(ops.db, options)
}
