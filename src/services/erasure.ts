/**
 * Erasure on request (a person's right to it): by one of the client's ids or
 * by number, the person's open tasks are cancelled and their personal data
 * cleared from every row that holds it, in one transaction recorded in the
 * audit log. What stays: each task's status, outcome and attempts, the
 * client's ids on triggers and events (the webhooks already sent carry them),
 * a suppression of the number, as a keyed digest only, and its consents as
 * revocations (by digest, without the number, evidence or source).
 */
import type { Actor } from '../domain/audit.ts'
import type { Database } from '../store/database.ts'
import { eraseAuditedPhones } from '../store/auditLog.ts'
import { erasePersonRecords, findPersonRecords, lockInteractionsBegunSince, lockPersonInteractions, type Person } from '../store/erasure.ts'
import { sqlState } from '../store/rows.ts'
import { eraseSuppressedPhones, phoneDigest } from '../store/suppressions.ts'
import { eraseNumberAttempts } from '../store/numberAttempts.ts'
import { eraseLawAttempts } from '../store/lawAttempts.ts'
import { eraseConsents } from '../store/consents.ts'
import { lockTasks } from '../store/tasks.ts'
import { audited } from './auditTrail.ts'
import { completeAllAs } from './settlement.ts'
import type { ServiceMetrics } from './metrics.ts'
import type { Wake } from './wake.ts'

export interface ErasureOperations {
  db: Database
  now: () => number
  phoneHashKey: Buffer
  wake: Wake
  metrics: ServiceMetrics
}

/** What an erasure found and did. */
export interface ErasureReport {
  /** The person's tasks whose personal data this erasure removed, each kept with its status and outcome. */
  tasks: number
  /** Of those, the ones still open, now completed as cancelled. */
  cancelled: number
  /** Contacts on file deleted, with the ids that named them. */
  contacts: number
  /** Calls and conversations with the person, now without their number. */
  interactions: number
  /** The person's numbers that were suppressed: still suppressed, kept as digests. */
  suppressions: number
  /** Consents recorded for their numbers: kept as revocations, without number or evidence. */
  consents: number
  erasedAt: string
}

/**
 * An erasure takes its locks in a settlement's order (the person's
 * interactions, then their tasks), then those of calls begun in between
 * without waiting: one a settlement holds then, the erasure lets go of all
 * and runs again, from what the database holds by then. SQLSTATEs of such a
 * collision (lock_not_available; deadlock_detected, should another order
 * meet it), and how many times it is run again.
 */
const COLLISIONS = new Set(['55P03', '40P01'])
const MAX_COLLISIONS = 5

export async function erasePerson(ops: ErasureOperations, actor: Actor, orgId: string, person: Person): Promise<ErasureReport> {
  for (let collisions = 0; ; collisions++) {
    try {
      return await eraseOnce(ops, actor, orgId, person)
    } catch (error) {
      if (!COLLISIONS.has(sqlState(error) ?? '') || collisions >= MAX_COLLISIONS) throw error
      // Long enough for the settlement it met to commit.
      await new Promise((resolve) => setTimeout(resolve, 5 * (collisions + 1)))
    }
  }
}

async function eraseOnce(ops: ErasureOperations, actor: Actor, orgId: string, person: Person): Promise<ErasureReport> {
  const now = ops.now()
  const { report, cancelled } = await audited(ops, actor, async (tx) => {
    const records = await findPersonRecords(tx, orgId, person)
    const locked = await lockPersonInteractions(tx, orgId, records)
    const tasks = await lockTasks(tx, records.taskIds, orgId)
    await lockInteractionsBegunSince(tx, records.taskIds, locked)
    const open = [...tasks.values()].filter((task) => task.status !== 'completed')
    const cancelled = await completeAllAs(tx, open, 'cancelled', now)
    const erased = await erasePersonRecords(tx, orgId, records)
    const suppressions = await eraseSuppressedPhones(tx, ops.phoneHashKey, orgId, records.phones)
    await eraseAuditedPhones(tx, ops.phoneHashKey, orgId, records.phones)
    await eraseNumberAttempts(tx, ops.phoneHashKey, orgId, records.phones)
    await eraseLawAttempts(tx, ops.phoneHashKey, orgId, records.phones)
    const consents = await eraseConsents(tx, ops.phoneHashKey, orgId, records.phones, now)
    const report: ErasureReport = {
      tasks: erased.tasks,
      cancelled: cancelled.length,
      contacts: erased.contacts,
      interactions: erased.interactions,
      suppressions,
      consents,
      erasedAt: new Date(now).toISOString(),
    }
    // Asked by number, the log keeps its digest: the number itself is what was erased.
    const target = 'id' in person ? `${person.id.source}/${person.id.type}/${person.id.value}` : await phoneDigest(tx, ops.phoneHashKey, person.phone)
    const { erasedAt: _, ...counts } = report
    return { result: { report, cancelled }, audit: { orgId, action: 'contact.erased', target, details: { by: 'id' in person ? 'id' : 'phone', ...counts } } }
  })
  ops.metrics.countCommitted({ tasks: cancelled })
  if (cancelled.length > 0) ops.wake.deliveries()
  return report
}
