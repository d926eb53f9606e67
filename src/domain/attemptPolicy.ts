/**
 * The attempt policy: when a due task may start an attempt, what follows an
 * interaction that ended (its outcome, and the result its conversation
 * reported), and what a result that came after its interaction's end still
 * changes. Pure rules; the dispatcher, the settlement and the conversation
 * results apply them and write what they decide.
 */
import {
  type AttemptPolicy,
  DEFAULT_AFTER_VOICEMAIL_LEFT,
  DEFAULT_VOICEMAIL_LEFT_RETRY_DELAY_S,
  type FallbackCondition,
  type RetryOutcome,
  type Schedule,
} from './campaignSettings.ts'
import { afterOpenMinutes, fallbackConditionOf } from './fallback.ts'
import { nextOpening, scheduleZones } from './schedule.ts'
import type { InteractionOutcome, TaskOutcome, TaskStatus } from './types.ts'

/** Outcomes that mean the person was reached: the task is done. */
export const REACHED_OUTCOMES = ['completed', 'replied'] as const satisfies readonly InteractionOutcome[]
const REACHED: ReadonlySet<InteractionOutcome> = new Set(REACHED_OUTCOMES)

/** Whether a conversation took place: only then is a result worth waiting for (results.wait_s). */
export function conversationTookPlace(outcome: InteractionOutcome): boolean {
  return REACHED.has(outcome)
}

/** The retry delay that applies after each interaction outcome that is not a reach. */
const RETRY_DELAY_FOR: Record<Exclude<InteractionOutcome, 'completed' | 'replied' | 'voicemail_left'>, RetryOutcome> = {
  no_answer: 'no_answer',
  busy: 'busy',
  voicemail: 'voicemail',
  failed: 'failed',
  // A message that was delivered or read but not answered is an unanswered call;
  // a text the carrier took without a receipt, most likely delivered, too.
  delivered: 'no_answer',
  read: 'no_answer',
  sent: 'no_answer',
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

/**
 * What follows an interaction of a task that has not completed. `fall_back`:
 * the task goes on to its campaign's fallback step (`campaignId`), for
 * `condition`, due at `dueAt`, its attempts counted afresh under that
 * campaign's policy.
 */
export type NextStep =
  | { kind: 'complete'; outcome: TaskOutcome }
  /** `callback`: the time is the one the person asked for, which learned timing leaves alone. */
  | { kind: 'retry'; dueAt: number; callback: boolean }
  | { kind: 'fall_back'; campaignId: string; condition: FallbackCondition; dueAt: number }

/**
 * The fallback step a task may still take: its campaign's, read with the
 * fallback campaign's schedule. Null when its campaign names none, or the
 * task has taken one already (a task falls back once).
 */
export interface FallbackPlan {
  campaignId: string
  when: readonly FallbackCondition[]
  /** Open minutes of the task's own campaign, from the message's start, that a reply has (0: none beyond the interaction's end). */
  noReplyMinutes: number
  /** The fallback campaign's schedule: the task is due at its next opening in the contact's zones. */
  schedule: Schedule
}

export interface EndedInteraction {
  outcome: InteractionOutcome
  endedAt: number
  /** The provider refused for good: retrying cannot help. */
  permanent: boolean
  /** The person opted out with it (wrote STOP, the provider says so, or its result does). */
  optedOut: boolean
  /** When its result asks for the person to be called again; null when it does not. */
  callbackAt: number | null
  /** When it started: a no-reply wait is counted from then. */
  startedAt: number
  /** The provider says the number is not on the channel at all (WhatsApp's 131026). */
  notOnChannel: boolean
}

/**
 * Done when opted out; due again at the first opening from a callback time
 * the person asked for, as the task's next attempt; done when reached; on to
 * the fallback step when the end meets one of its conditions (before the
 * step's own retries: a fallback is for the first message that does not get
 * through), due at the fallback campaign's first opening from the end (a
 * no-reply from the later of the end and the reply's deadline, counted in
 * the open minutes of the task's own campaign); failed for good; unreachable when its attempts have run out; otherwise due
 * again at the later of the retry delay and the next opening, or (no opening
 * before expiry) pending until it expires, so that it expires on time.
 *
 * A message left on a voicemail follows the policy's `voicemail_left`: the
 * task completes `unreachable` (`stop`, the default: nobody was reached,
 * and the message was the last word), or it is retried after its own delay
 * like any other outcome.
 *
 * A callback is an attempt like any other: it counts towards the policy's
 * max. One the task cannot make (its attempts used up, or no opening from
 * the callback time before the task expires) is not made, and the task goes
 * on as the outcome says: a person reached completes it `reached`, and the
 * client finds the callback time in the result.
 */
export function stepAfterInteraction(
  ended: EndedInteraction,
  task: TaskTiming & { attempts: number; policy: AttemptPolicy; fallback: FallbackPlan | null },
  now: number,
): NextStep {
  if (ended.optedOut) return { kind: 'complete', outcome: 'opted_out' }
  const callback = ended.callbackAt === null || ended.permanent ? null : callbackOpening(ended.callbackAt, task)
  if (callback !== null) return { kind: 'retry', dueAt: callback, callback: true }
  if (REACHED.has(ended.outcome)) return { kind: 'complete', outcome: 'reached' }
  const condition = task.fallback === null ? null : fallbackConditionOf(ended.outcome, ended.notOnChannel)
  if (task.fallback !== null && condition !== null && task.fallback.when.includes(condition)) {
    return { kind: 'fall_back', campaignId: task.fallback.campaignId, condition, dueAt: fallbackDueAt(ended, condition, task, task.fallback, now) }
  }
  if (ended.permanent) return { kind: 'complete', outcome: 'failed' }
  if (task.attempts >= task.policy.max) return { kind: 'complete', outcome: 'unreachable' }
  let delayS: number
  if (ended.outcome === 'voicemail_left') {
    const after = task.policy.voicemail_left ?? DEFAULT_AFTER_VOICEMAIL_LEFT
    if (after.then === 'stop') return { kind: 'complete', outcome: 'unreachable' }
    delayS = after.delay_s ?? DEFAULT_VOICEMAIL_LEFT_RETRY_DELAY_S
  } else {
    delayS = task.policy.retry_delays_s[RETRY_DELAY_FOR[ended.outcome as keyof typeof RETRY_DELAY_FOR]]
  }
  const earliest = ended.endedAt + delayS * 1000
  const zones = scheduleZones(task.schedule, task.timezones)
  const opening = zones.length === 0 ? null : nextOpening(task.schedule, zones, earliest, task.expiresAt)
  return { kind: 'retry', dueAt: opening ?? Math.max(task.expiresAt, now), callback: false }
}

/** When a task that falls back is due: the fallback campaign's first opening from when its step may start, or (none before expiry) its expiry. */
function fallbackDueAt(ended: EndedInteraction, condition: FallbackCondition, task: TaskTiming, fallback: FallbackPlan, now: number): number {
  let earliest = ended.endedAt
  if (condition === 'no_reply' && fallback.noReplyMinutes > 0) {
    const ownZones = scheduleZones(task.schedule, task.timezones)
    const deadline = ownZones.length === 0 ? null : afterOpenMinutes(task.schedule, ownZones, ended.startedAt, fallback.noReplyMinutes, task.expiresAt)
    earliest = deadline === null ? task.expiresAt : Math.max(earliest, deadline)
  }
  const zones = scheduleZones(fallback.schedule, task.timezones)
  const opening = zones.length === 0 || earliest >= task.expiresAt ? null : nextOpening(fallback.schedule, zones, earliest, task.expiresAt)
  return opening ?? Math.max(task.expiresAt, now)
}

/** The first opening from a callback time before the task expires, when the task has an attempt left for it; otherwise null. */
function callbackOpening(callbackAt: number, task: TaskTiming & { attempts: number; policy: AttemptPolicy }): number | null {
  if (task.attempts >= task.policy.max) return null
  const zones = scheduleZones(task.schedule, task.timezones)
  return zones.length === 0 ? null : nextOpening(task.schedule, zones, callbackAt, task.expiresAt)
}

/** What a result that came after its interaction had been finalized still changes about its task. */
export type LateResultStep = { kind: 'complete'; outcome: 'opted_out' } | { kind: 'reschedule'; dueAt: number } | { kind: 'none' }

/**
 * A result's word comes late when its interaction was finalized without it
 * (the campaign waited for none, or not long enough): the task has moved on.
 * An opt-out still closes a task that has not completed. A callback time
 * still moves a task that waits for its next attempt to the callback's
 * opening, as {@link stepAfterInteraction} would have; a task that
 * completed, or has an attempt running, is not moved.
 */
export function stepAfterLateResult(
  result: { optOut: boolean; callbackAt: number | null },
  task: (TaskTiming & { status: TaskStatus; attempts: number; policy: AttemptPolicy }) | null,
): LateResultStep {
  if (task === null || task.status === 'completed') return { kind: 'none' }
  if (result.optOut) return { kind: 'complete', outcome: 'opted_out' }
  if (result.callbackAt === null || task.status !== 'pending') return { kind: 'none' }
  const opening = callbackOpening(result.callbackAt, task)
  return opening === null ? { kind: 'none' } : { kind: 'reschedule', dueAt: opening }
}
