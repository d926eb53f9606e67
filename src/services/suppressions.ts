/**
 * Opt-outs an organization or the operator sets by hand: adding a number,
 * lifting one, each recorded in the audit log. (Opt-outs by reply or through
 * a provider are added by the lifecycle as it settles the interaction.)
 */
import type { Actor } from '../domain/audit.ts'
import { ApiError } from '../domain/errors.ts'
import type { Database } from '../store/database.ts'
import { adoptKeywordOptOut, findSuppression, suppress, type Suppression, unsuppress } from '../store/suppressions.ts'
import { audited } from './auditTrail.ts'

export interface SuppressionOperations {
  db: Database
  now: () => number
  /** Finds the suppressions of erased numbers, kept as digests. */
  phoneHashKey: Buffer
}

/**
 * Suppresses a number (E.164) for the organization; answers its suppression,
 * the one there already if it was (in the clear, or as the digest of a number
 * erased since, which is not put back in the clear), recorded only when added.
 */
export async function addSuppression(ops: SuppressionOperations, actor: Actor, orgId: string, phone: string): Promise<Suppression> {
  return audited(ops, actor, async (tx) => {
    const existing = await findSuppression(tx, ops.phoneHashKey, orgId, phone)
    // The person's keyword STOP becomes the organization's own: their START will not lift what it asked for.
    if (existing?.reason === 'keyword' && (await adoptKeywordOptOut(tx, orgId, phone))) {
      return { result: { ...existing, reason: 'manual' as const }, audit: { orgId, action: 'suppression.added', target: phone, details: { over: 'keyword' } } }
    }
    if (existing !== undefined) return { result: existing, audit: undefined }
    // Added meanwhile by another transaction, the number is not added again, and the first one's answers.
    const added = await suppress(tx, orgId, phone, 'manual', ops.now())
    const suppression = (await findSuppression(tx, ops.phoneHashKey, orgId, phone))!
    return { result: suppression, audit: added ? { orgId, action: 'suppression.added', target: phone, details: {} } : undefined }
  })
}

/** The number's suppression, or the 404 that says it is not suppressed. */
export async function requireSuppression(ops: SuppressionOperations, orgId: string, phone: string): Promise<Suppression> {
  const suppression = await findSuppression(ops.db, ops.phoneHashKey, orgId, phone)
  if (suppression === undefined) throw new ApiError('not_found', `${phone} is not suppressed.`)
  return suppression
}

/**
 * Lifts a number's suppression, on the person's request. An organization may
 * lift only what it added itself (reason manual); an opt-out by reply or
 * through a provider only the operator can lift.
 */
export async function liftSuppression(ops: SuppressionOperations, actor: Actor, orgId: string, phone: string, byOperator: boolean): Promise<void> {
  const suppression = await requireSuppression(ops, orgId, phone)
  if (suppression.reason !== 'manual' && !byOperator) {
    throw new ApiError('conflict', `${phone} opted out itself (${suppression.reason}); only the operator can lift that, on the person's request.`)
  }
  await audited(ops, actor, async (tx) => {
    await unsuppress(tx, ops.phoneHashKey, orgId, phone)
    return { result: undefined, audit: { orgId, action: 'suppression.lifted', target: phone, details: { reason: suppression.reason } } }
  })
}
