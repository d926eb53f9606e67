/**
 * An organization's cap on attempts to one number, across all its campaigns:
 * at most `per_24h` started in any rolling 24 hours, and at most
 * `per_local_day` started on one calendar day of the contact's time zone.
 * Telephone-solicitation laws (Florida's, Oklahoma's) cap calls to a number
 * per 24 hours whoever makes them, which no single campaign can see.
 *
 * A contact whose zone is not known for sure has several candidate zones:
 * the local-day rule holds in every one, as a campaign's window does, so that
 * a number is never called more often than the cap on the day it is in.
 */
import { DateTime } from 'luxon'

export interface ContactCap {
  /** At most this many attempts started to one number in any 24 hours; null: no such rule. */
  per_24h: number | null
  /** At most this many started on one local calendar day of the contact; null: no such rule. */
  per_local_day: number | null
}

/** The most either figure may be: beyond, a cap is no cap. */
export const MAX_CONTACT_CAP = 1_000

const HOUR_MS = 3_600_000
const ROLLING_MS = 24 * HOUR_MS

/**
 * How long a number's started attempts matter to the cap: a rolling day, or
 * the local day the contact is in, which began at most 25 hours ago (a day
 * that DST makes longer) and, in UTC+14, up to 14 hours before the rolling
 * day did. Older ones are dropped from a number's record when it is written,
 * and a record with none younger is deleted by the history sweep.
 */
export const CAP_MEMORY_MS = 26 * HOUR_MS

/** Whether a cap is set at all: one with neither figure is off. */
export const capIsOn = (cap: ContactCap | null | undefined): cap is ContactCap => cap != null && (cap.per_24h !== null || cap.per_local_day !== null)

/** What the cap says of one more attempt to a number at `now`. */
export type CapStep = { kind: 'allowed' } | { kind: 'held'; until: number }

/**
 * Whether one more attempt to a number may start at `now`, given the instants
 * the number's earlier attempts started (any order; those of the future, a
 * clock behind another's, count as now), the cap and the contact's zones;
 * when not, the first instant the cap allows it, at which every rule holds.
 */
export function capStep(startedAt: readonly number[], cap: ContactCap, zones: readonly string[], now: number): CapStep {
  const times = startedAt.map((at) => Math.min(at, now)).sort((a, b) => a - b)
  let at = now
  // Each rule moves the instant later and never earlier, and past attempts only age: a few turns settle it.
  for (let turn = 0; turn < 8; turn++) {
    const next = Math.max(rollingAllows(times, cap.per_24h, at), localDayAllows(times, cap.per_local_day, zones, at))
    if (next === at) return at === now ? { kind: 'allowed' } : { kind: 'held', until: at }
    at = next
  }
  return { kind: 'held', until: at }
}

/** The first instant from `at` at which fewer than `limit` of `times` (sorted) fall in the 24 hours before it. */
function rollingAllows(times: readonly number[], limit: number | null, at: number): number {
  if (limit === null) return at
  const inWindow = times.filter((time) => time > at - ROLLING_MS)
  if (inWindow.length < limit) return at
  // Once the oldest attempts that keep the count at the limit have aged out of the window.
  return inWindow[inWindow.length - limit]! + ROLLING_MS
}

/** The first instant from `at` at which fewer than `limit` of `times` fall on the local day it is in, in every zone. */
function localDayAllows(times: readonly number[], limit: number | null, zones: readonly string[], at: number): number {
  if (limit === null) return at
  let allows = at
  for (const zone of zones) {
    const day = DateTime.fromMillis(at, { zone }).startOf('day')
    const dayStart = day.toMillis()
    if (times.filter((time) => time >= dayStart).length >= limit) allows = Math.max(allows, day.plus({ days: 1 }).startOf('day').toMillis())
  }
  return allows
}
