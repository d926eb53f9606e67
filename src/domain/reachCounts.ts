/**
 * Reach counts: what the reach statistics are read from, and what outlives
 * the history as the daily counts do. Per organization, campaign (routing key
 * and channel), test mode, and the person's local date and hour of the
 * attempt's start (in the zone its schedule was read in, as
 * interaction.finalized's `started_at_local` says): how many outbound attempts
 * of each number (1, 2, 3...) ended with each outcome and the seconds they
 * lasted; of those that reached the person, also how long after the trigger
 * they started, as a bucket of REACH_DELAY_BOUNDS_S. Counted from the events
 * as they are written (store/events.ts), so that every attempt is counted
 * once, by the transaction that reports it.
 */
import { conversationTookPlace } from './attemptPolicy.ts'
import { WEEKDAYS, type Weekday } from './campaignSettings.ts'
import type { OutboxEvent } from './events.ts'
import { isId, timeOfId } from './ids.ts'
import { compareCodeUnits } from './text.ts'
import { type Channel, type InteractionOutcome, isChannel } from './types.ts'

/**
 * Upper bounds, in seconds, of the buckets of time from a trigger to the
 * attempt that reached the person: 5 minutes, an hour, 4 hours, a day, 3 days,
 * a week, and more (the last bucket). Bucket 0 is an attempt that reached no one.
 */
export const REACH_DELAY_BOUNDS_S = [300, 3_600, 14_400, 86_400, 259_200, 604_800] as const

export interface ReachKey {
  /** YYYY-MM-DD in the person's zone. */
  localDate: string
  /** 0-23 in the person's zone. */
  hour: number
  campaign: string
  channel: Channel
  testMode: boolean
  /** The attempt's number in its task: 1 for the first. */
  attempt: number
  outcome: string
  /** 0: not reached; 1 to REACH_DELAY_BOUNDS_S.length + 1: reached, this long after the trigger. */
  delayBucket: number
}

export interface ReachCount extends ReachKey {
  count: number
  /** The seconds the attempts lasted. */
  seconds: number
  /** Of attempts that reached the person: the seconds from their trigger to their start, in all. */
  delayS: number
}

/** The bucket of a delay from trigger to reach, in seconds: 1 for up to 5 minutes, ..., 7 for over a week. */
export function reachDelayBucket(delayS: number): number {
  const index = REACH_DELAY_BOUNDS_S.findIndex((bound) => delayS <= bound)
  return (index === -1 ? REACH_DELAY_BOUNDS_S.length : index) + 1
}

const LOCAL_START = /^(\d{4}-\d{2}-\d{2})T(\d{2}):/

/**
 * What these events count: each interaction.finalized of an outbound attempt
 * of a task (numbered, with its local start); nothing else, nor an event that
 * does not say what it reports.
 */
export function countReach(events: readonly OutboxEvent[]): ReachCount[] {
  const counts = new Map<string, ReachCount>()
  for (const { type, data } of events) {
    if (type !== 'interaction.finalized' || data.direction !== 'outbound') continue
    const { campaign, channel, outcome, attempt, started_at_local: local, started_at: startedAt, trigger_id: triggerId } = data
    if (typeof campaign !== 'string' || !isChannel(channel) || typeof outcome !== 'string' || typeof attempt !== 'number' || attempt < 1) continue
    const match = typeof local === 'string' ? LOCAL_START.exec(local) : null
    if (match === null) continue
    const reached = conversationTookPlace(outcome as InteractionOutcome)
    const delayS =
      reached && typeof triggerId === 'string' && isId('trigger', triggerId) && typeof startedAt === 'string'
        ? Math.max(0, Math.round((Date.parse(startedAt) - timeOfId(triggerId)) / 1000))
        : 0
    const key: ReachKey = {
      localDate: match[1]!,
      hour: Number(match[2]),
      campaign,
      channel,
      testMode: data.test_mode === true,
      attempt,
      outcome,
      delayBucket: reached ? reachDelayBucket(delayS) : 0,
    }
    const name = JSON.stringify(Object.values(key))
    const seconds = Number(data.duration_s ?? 0)
    const sum = counts.get(name)
    if (sum === undefined) counts.set(name, { ...key, count: 1, seconds, delayS })
    else {
      sum.count += 1
      sum.seconds += seconds
      sum.delayS += delayS
    }
  }
  return [...counts.values()]
}

/** One cell of the counts as the store sums them for a period: a local date and hour, attempt number, outcome and delay bucket. */
export interface ReachCell {
  localDate: string
  /** 1 Monday to 7 Sunday, the local date's. */
  weekday: number
  hour: number
  attempt: number
  outcome: string
  delayBucket: number
  count: number
  seconds: number
  delayS: number
}

interface Tally {
  attempts: number
  reached: number
}

/** The reach statistics of a period, as the API answers them. */
export interface ReachStatistics {
  attempts: number
  reached: number
  attemptSeconds: number
  /** Attempts by outcome. */
  outcomes: Record<string, number>
  /** Shares of the attempts: reached, a machine answered (with or without a message left), nobody answered. */
  rates: { reach: number | null; voicemail: number | null; noAnswer: number | null }
  /** By local weekday (Monday first) and hour, only those with attempts. */
  byHour: (Tally & { weekday: Weekday; hour: number })[]
  /** The funnel: attempts of each number, and how many reached the person (people reached at their 1st, 2nd... attempt). */
  byAttempt: (Tally & { attempt: number })[]
  /** By local date, oldest first, only those with attempts. */
  byDay: (Tally & { date: string; outcomes: Record<string, number> })[]
  /** Of the attempts that reached the person: how long after the trigger they started. */
  timeToReach: { meanS: number | null; buckets: { upToS: number | null; reached: number }[] }
}

const VOICEMAIL_OUTCOMES: ReadonlySet<string> = new Set(['voicemail', 'voicemail_left'])

/** The statistics of the cells of a period: sums by hour of the week, attempt number, day and delay. */
export function reachStatistics(cells: readonly ReachCell[]): ReachStatistics {
  const outcomes: Record<string, number> = {}
  const byHour = new Map<number, Tally & { weekday: Weekday; hour: number }>()
  const byAttempt = new Map<number, Tally & { attempt: number }>()
  const byDay = new Map<string, Tally & { date: string; outcomes: Record<string, number> }>()
  const buckets = Array.from({ length: REACH_DELAY_BOUNDS_S.length + 1 }, (_, index) => ({ upToS: REACH_DELAY_BOUNDS_S[index] ?? null, reached: 0 }))
  let attempts = 0
  let reached = 0
  let attemptSeconds = 0
  let delayS = 0
  let voicemail = 0
  for (const cell of cells) {
    const cellReached = conversationTookPlace(cell.outcome as InteractionOutcome) ? cell.count : 0
    attempts += cell.count
    reached += cellReached
    attemptSeconds += cell.seconds
    if (VOICEMAIL_OUTCOMES.has(cell.outcome)) voicemail += cell.count
    outcomes[cell.outcome] = (outcomes[cell.outcome] ?? 0) + cell.count
    const hourKey = (cell.weekday - 1) * 24 + cell.hour
    const hour = byHour.get(hourKey) ?? { weekday: WEEKDAYS[cell.weekday - 1]!, hour: cell.hour, attempts: 0, reached: 0 }
    hour.attempts += cell.count
    hour.reached += cellReached
    byHour.set(hourKey, hour)
    const numbered = byAttempt.get(cell.attempt) ?? { attempt: cell.attempt, attempts: 0, reached: 0 }
    numbered.attempts += cell.count
    numbered.reached += cellReached
    byAttempt.set(cell.attempt, numbered)
    const day = byDay.get(cell.localDate) ?? { date: cell.localDate, attempts: 0, reached: 0, outcomes: {} }
    day.attempts += cell.count
    day.reached += cellReached
    day.outcomes[cell.outcome] = (day.outcomes[cell.outcome] ?? 0) + cell.count
    byDay.set(cell.localDate, day)
    if (cellReached > 0 && cell.delayBucket >= 1) {
      buckets[cell.delayBucket - 1]!.reached += cellReached
      delayS += cell.delayS
    }
  }
  const share = (part: number) => (attempts === 0 ? null : part / attempts)
  return {
    attempts,
    reached,
    attemptSeconds,
    outcomes,
    rates: { reach: share(reached), voicemail: share(voicemail), noAnswer: share(outcomes.no_answer ?? 0) },
    byHour: [...byHour].sort(([a], [b]) => a - b).map(([, tally]) => tally),
    byAttempt: [...byAttempt.values()].sort((a, b) => a.attempt - b.attempt),
    byDay: [...byDay.values()].sort((a, b) => compareCodeUnits(a.date, b.date)),
    timeToReach: { meanS: reached === 0 ? null : delayS / reached, buckets },
  }
}
