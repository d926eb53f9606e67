/**
 * Consent on file, recorded and revoked by the organization (scope
 * consents:manage) or the operator, one at a time or in bulk; each change
 * recorded in the audit log (by consent id, never by number). Revocation by
 * a STOP reply, a provider's opt-out or a conversation's opt_out comes with
 * the suppression those write (store/suppressions.ts).
 */
import type { Actor } from '../domain/audit.ts'
import type { ConsentKind, Purpose } from '../domain/callingLaw.ts'
import { ApiError } from '../domain/errors.ts'
import { newId } from '../domain/ids.ts'
import type { Channel } from '../domain/types.ts'
import { type Consent, findConsent, insertConsents, listConsentsOfNumber, revokeConsent, revokeConsentsOfNumber } from '../store/consents.ts'
import type { Database } from '../store/database.ts'
import { audited } from './auditTrail.ts'

export interface ConsentOperations {
  db: Database
  now: () => number
  /** Consents are kept by their number's keyed digest. */
  phoneHashKey: Buffer
}

/** A consent as the API takes it: E.164 number, instants as epoch ms. */
export interface ConsentInput {
  phone: string
  channel: Channel
  purpose: Purpose
  kind: ConsentKind
  source: string
  capturedAt: number
  evidence?: string
  expiresAt?: number
}

/** Records consents, one or thousands, in one transaction and one audit entry. */
export async function recordConsents(ops: ConsentOperations, actor: Actor, orgId: string, inputs: readonly ConsentInput[]): Promise<Consent[]> {
  const now = ops.now()
  const consents = inputs.map((input) => ({
    id: newId('consent', now),
    orgId,
    phone: input.phone,
    channel: input.channel,
    purpose: input.purpose,
    kind: input.kind,
    source: input.source,
    capturedAt: input.capturedAt,
    evidence: input.evidence ?? null,
    expiresAt: input.expiresAt ?? null,
    triggerId: null,
  }))
  return audited(ops, actor, async (tx) => {
    const recorded = await insertConsents(tx, ops.phoneHashKey, consents, now)
    const target = recorded.length === 1 ? recorded[0]!.id : `${recorded[0]!.id}..${recorded.at(-1)!.id}`
    return { result: recorded, audit: { orgId, action: 'consent.recorded', target, details: { count: recorded.length } } }
  })
}

export async function requireConsent(ops: ConsentOperations, orgId: string, id: string): Promise<Consent> {
  const consent = await findConsent(ops.db, orgId, id)
  if (consent === undefined) throw new ApiError('not_found', `No consent ${id} exists.`)
  return consent
}

export function consentsOfNumber(ops: ConsentOperations, orgId: string, phone: string, page: { before?: string; limit: number }): Promise<Consent[]> {
  return listConsentsOfNumber(ops.db, ops.phoneHashKey, orgId, phone, page)
}

/** Revokes one consent through the API; revoking it again keeps the first revocation. */
export async function revokeOne(ops: ConsentOperations, actor: Actor, orgId: string, id: string): Promise<Consent> {
  return audited(ops, actor, async (tx) => {
    const before = await findConsent(tx, orgId, id)
    if (before === undefined) throw new ApiError('not_found', `No consent ${id} exists.`)
    const revoked = (await revokeConsent(tx, orgId, id, 'api', ops.now()))!
    return { result: revoked, audit: before.revokedAt === null ? { orgId, action: 'consent.revoked', target: id, details: { by: 'api' } } : undefined }
  })
}

/** Revokes every consent of a number not revoked yet, of one channel or purpose or all; answers their ids. */
export async function revokeOfNumber(
  ops: ConsentOperations,
  actor: Actor,
  orgId: string,
  phone: string,
  scope: { channel?: Channel; purpose?: Purpose },
): Promise<string[]> {
  return audited(ops, actor, async (tx) => {
    const ids = await revokeConsentsOfNumber(tx, ops.phoneHashKey, { orgId, phone }, 'api', ops.now(), scope)
    return { result: ids, audit: ids.map((id) => ({ orgId, action: 'consent.revoked' as const, target: id, details: { by: 'api', ...scope } })) }
  })
}
