/**
 * Recovery of an endpoint's failed deliveries (POST .../webhook-endpoints/{id}/recover):
 * after a receiver's outage, every event whose delivery to it failed or was
 * given up within a window is sent again, once, with its own id. Pure rules:
 * which windows may be asked for, and the cursor a call that stopped at its
 * bound answers with, for the next call to go on from.
 */
import { DAY_MS, retentionCutoff } from './retention.ts'

/** Failed deliveries looked at in one call, at most: one transaction's work, and what a receiver just back takes in a few minutes. */
export const MAX_RECOVERED_PER_CALL = 10_000

/** The window of completion times recovered: deliveries that failed or were given up at or after `since` and before `until`. */
export interface RecoveryWindow {
  since: number
  until: number
}

/** Where a refused window is wrong, and why: each a `value_error` at its field. */
export interface RecoveryProblem {
  field: 'since' | 'until' | 'after'
  message: string
}

/**
 * What is wrong with a window asked for at `now` by an organization that
 * keeps `retentionDays` of history (null: the service's default): `since` in
 * the past, but not before the oldest history kept (what is older may be
 * deleted already, and a recovery of it would be partial without saying so);
 * `until`, when given, after `since` and not in the future. Empty when
 * nothing is.
 */
export function recoveryWindowProblems(asked: { since: number; until?: number }, now: number, retentionDays: number | null): RecoveryProblem[] {
  const problems: RecoveryProblem[] = []
  const oldest = retentionCutoff(now, retentionDays)
  if (asked.since > now) problems.push({ field: 'since', message: 'since must not be in the future' })
  else if (asked.since < oldest) {
    const days = Math.round((now - oldest) / DAY_MS)
    problems.push({ field: 'since', message: `since must be within the history kept: the last ${days} days, from ${new Date(oldest).toISOString()}` })
  }
  if (asked.until !== undefined) {
    if (asked.until > now) problems.push({ field: 'until', message: 'until must not be in the future' })
    else if (asked.until <= asked.since) problems.push({ field: 'until', message: 'until must be after since' })
  }
  return problems
}

/**
 * How far a recovery got: the last failed delivery it looked at, in the order
 * it reads them (by completion time, then delivery id, so that deliveries
 * given up at one instant, as a disable gives up what was pending, are still
 * read past one by one).
 */
export interface RecoveryPosition {
  completedAt: number
  deliveryId: number
}

/**
 * Where a call starts: after the cursor it was given, or at `since` when it
 * was given none, or one from before `since` (from a call with another).
 */
export function recoveryStart(since: number, after: RecoveryPosition | undefined): RecoveryPosition {
  return after === undefined || after.completedAt < since ? { completedAt: since, deliveryId: 0 } : after
}

/** The cursor a client sends back as `after`: opaque to it, so that what it holds may change. */
export function recoveryCursor(position: RecoveryPosition): string {
  return Buffer.from(`${position.completedAt}.${position.deliveryId}`).toString('base64url')
}

/** The position a cursor names; undefined when it is none that recoveryCursor wrote. */
export function readRecoveryCursor(cursor: string): RecoveryPosition | undefined {
  const match = /^(\d{1,15})\.(\d{1,15})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'))
  if (match === null) return undefined
  return { completedAt: Number(match[1]), deliveryId: Number(match[2]) }
}
