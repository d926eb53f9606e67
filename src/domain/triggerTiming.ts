/**
 * A trigger's own timing: `not_before`, the earliest instant its first
 * attempt may start, and `expires_at`, when outreach is no longer wanted.
 * The campaign's window still applies in the contact's zones; these only
 * narrow it. Pure rules: the trigger path checks them, the commit applies
 * them (the task is first due at `not_before`, and expires at the earlier of
 * `expires_at` and the campaign's expiry counted from when it is first due).
 */
/** How far ahead `not_before` may be: further is far more likely a mistyped year than a plan. */
export const MAX_NOT_BEFORE_DAYS = 365

import { daysInMonth, FIRST_MS, LAST_MS } from './isoInstants.ts'

const DAY_MS = 86_400_000

/**
 * RFC 3339's date-time: a full date, a time with seconds (and any fraction),
 * and an offset, `Z` or `±hh:mm` (no leap second, no 24:00). A time without an offset is refused: whose
 * local time it would be is what the client means and we cannot guess.
 */
const RFC_3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt]([01]\d|2[0-3]):([0-5]\d):([0-5]\d)(?:\.(\d+))?(?:[Zz]|([+-])([01]\d|2[0-3]):([0-5]\d))$/

/**
 * The instant an RFC 3339 date-time names, in epoch ms (a fraction cut to
 * the millisecond); undefined when it is not one, names no real date (Feb
 * 30), or falls outside years 0001-9999 UTC. Read from the pattern's parts
 * rather than by a date library: every instant of a transcript goes through
 * here, and luxon's parser took 2.4 s of the API process's 89 s in a profile
 * end to end through Vapi; Date.parse would take Feb 30 for Mar 2.
 */
export function parseInstant(text: string): number | undefined {
  const parts = RFC_3339.exec(text)
  if (parts === null) return undefined
  const [year, month, day, hour, minute, second] = parts.slice(1, 7).map(Number) as [number, number, number, number, number, number]
  const [, , , , , , , fraction, sign, offsetHours, offsetMinutes] = parts
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined
  // setUTCFullYear, since Date.UTC takes years 0-99 for 1900-1999.
  const date = new Date(0)
  date.setUTCFullYear(year, month - 1, day)
  const local = date.setUTCHours(hour, minute, second, fraction === undefined ? 0 : Number(fraction.slice(0, 3).padEnd(3, '0')))
  const offsetMs = sign === undefined ? 0 : (sign === '-' ? -1 : 1) * (Number(offsetHours) * 60 + Number(offsetMinutes)) * 60_000
  const at = local - offsetMs
  // An offset can carry a date past years 0001-9999 UTC (0000-01-01T00:00:00+01:00 is in year -1).
  return at >= FIRST_MS && at <= LAST_MS ? at : undefined
}


export interface TriggerTiming {
  notBefore?: number
  expiresAt?: number
}

/** Where a timing is refused, and why: each a `value_error` at its field. */
export interface TimingProblem {
  field: 'not_before' | 'expires_at'
  message: string
}

/** What is wrong with a trigger's timing at `now`; empty when nothing is. */
export function timingProblems(timing: TriggerTiming, now: number): TimingProblem[] {
  const problems: TimingProblem[] = []
  const { notBefore, expiresAt } = timing
  if (notBefore !== undefined && notBefore > now + MAX_NOT_BEFORE_DAYS * DAY_MS) {
    problems.push({ field: 'not_before', message: `not_before must be within ${MAX_NOT_BEFORE_DAYS} days from now` })
  }
  if (expiresAt !== undefined && expiresAt <= now) problems.push({ field: 'expires_at', message: 'expires_at must be in the future' })
  else if (expiresAt !== undefined && notBefore !== undefined && expiresAt <= notBefore) {
    problems.push({ field: 'expires_at', message: 'expires_at must be after not_before' })
  }
  return problems
}

/** From when a trigger's task may start: its `not_before`, or at once. */
export function firstDueAt(timing: TriggerTiming, now: number): number {
  return timing.notBefore === undefined ? now : Math.max(now, timing.notBefore)
}
