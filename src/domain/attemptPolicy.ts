/**
 * The attempt policy: when a due task may start an attempt, and what follows
 * an interaction that ended. Pure rules; the dispatcher and the settlement
 * apply them to whole batches and write what they decide.
 */
import type { AttemptPolicy, RetryOutcome, Schedule } from './campaignSettings.ts'
import { nextOpening, scheduleZones } from './schedule.ts'
import type { InteractionOutcome, TaskOutcome } from './types.ts'

/** Outcomes that mean the person was reached: the task is done. */
const REACHED: ReadonlySet<InteractionOutcome> = new Set(['completed', 'replied'])

/** The retry delay that applies after each interaction outcome that is not a reach. */
const RETRY_DELAY_FOR: Record<Exclude<InteractionOutcome, 'completed' | 'replied'>, RetryOutcome> = {
  no_answer: 'no_answer',
  busy: 'busy',
  voicemail: 'voicemail',
  failed: 'failed',
  // A message that was delivered or read but not answered is an unanswered call.
  delivered: 'no_answer',
  read: 'no_answer',
  undelivered: 'failed',
}

/** What a task's schedule and expiry allow: its zones, schedule and expiry. */
export interface TaskTiming {
  schedule: Schedule
  /** The contact's candidate zones. */
  timezones: string[]
  expiresAt: number
}

/** What a claimed, due task comes to now, before the campaign's max_concurrent is counted. */
export type DueStep = { kind: 'complete'; outcome: TaskOutcome } | { kind: 'wait'; until: number } | { kind: 'start' }

export function stepWhenDue(task: TaskTiming & { suppressed: boolean }, now: number): DueStep {
  // The person asked not to be contacted: the task closes at once, whatever the hour.
  if (task.suppressed) return { kind: 'complete', outcome: 'opted_out' }
  if (now >= task.expiresAt) return { kind: 'complete', outcome: 'expired' }
  const zones = scheduleZones(task.schedule, task.timezones)
  // The trigger was accepted with zones; only a later change of the schedule can leave none.
  if (zones.length === 0) return { kind: 'complete', outcome: 'failed' }
  // No attempt can start before the task expires: it stays pending until then, so it expires on time.
  const opening = nextOpening(task.schedule, zones, now, task.expiresAt)
  if (opening === null) return { kind: 'wait', until: task.expiresAt }
  return opening > now ? { kind: 'wait', until: opening } : { kind: 'start' }
}

/** What follows an interaction of a task that has not completed. */
export type NextStep = { kind: 'complete'; outcome: TaskOutcome } | { kind: 'retry'; dueAt: number }

export interface EndedInteraction {
  outcome: InteractionOutcome
  endedAt: number
  /** The provider refused for good: retrying cannot help. */
  permanent: boolean
  /** The person opted out with it (wrote STOP, or the provider says so). */
  optedOut: boolean
}

/**
 * Done when reached, opted out, or failed for good; unreachable when its
 * attempts have run out; otherwise due again at the later of the retry delay
 * and the next opening, or (no opening before expiry) pending until it
 * expires, so that it expires on time.
 */
export function stepAfterInteraction(
  ended: EndedInteraction,
  task: TaskTiming & { attempts: number; policy: AttemptPolicy },
  now: number,
): NextStep {
  if (ended.optedOut) return { kind: 'complete', outcome: 'opted_out' }
  if (REACHED.has(ended.outcome)) return { kind: 'complete', outcome: 'reached' }
  if (ended.permanent) return { kind: 'complete', outcome: 'failed' }
  if (task.attempts >= task.policy.max) return { kind: 'complete', outcome: 'unreachable' }
  const delayS = task.policy.retry_delays_s[RETRY_DELAY_FOR[ended.outcome as keyof typeof RETRY_DELAY_FOR]]
  const earliest = ended.endedAt + delayS * 1000
  const zones = scheduleZones(task.schedule, task.timezones)
  const opening = zones.length === 0 ? null : nextOpening(task.schedule, zones, earliest, task.expiresAt)
  return { kind: 'retry', dueAt: opening ?? Math.max(task.expiresAt, now) }
}
