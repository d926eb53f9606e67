/**
 * The fallback step's rules: which of its conditions an interaction's end
 * meets, and when "no reply within N minutes" is over, counted in the
 * contact's hours. Pure; the attempt policy (attemptPolicy.ts) decides with
 * them whether a task goes on to its campaign's fallback.
 */
import type { FallbackCondition, FallbackSettings, Schedule } from './campaignSettings.ts'
import { openPeriods, scheduleZones } from './schedule.ts'
import type { Channel, InteractionOutcome, TaskOutcome } from './types.ts'

/**
 * The condition an interaction's end meets, or null for a reach. The number
 * not on the channel (WhatsApp's 131026) is the most particular; a message
 * that went nowhere (undelivered, failed) is `undelivered`; anything else that
 * reached the person without a conversation (delivered, read, no answer,
 * busy, voicemail) is `no_reply`.
 */
export function fallbackConditionOf(outcome: InteractionOutcome, notOnChannel: boolean): FallbackCondition | null {
  if (outcome === 'completed' || outcome === 'replied') return null
  if (notOnChannel) return 'not_on_whatsapp'
  if (outcome === 'undelivered' || outcome === 'failed') return 'undelivered'
  return 'no_reply'
}

/** Open periods read per round: a day's windows, and then some. */
const PERIODS_PER_ROUND = 16

/**
 * The instant by which `minutes` minutes of the schedule's open time (open
 * in every one of `zones` at once: the contact's hours) have passed since
 * `from`: a message sent at 19:50 into a 09:00–20:00 window, with 60 minutes,
 * has 10 minutes that evening and 50 the next morning, so the deadline is
 * 09:50. Null when the schedule has not that much open time left before
 * `until`. Zero minutes: `from`.
 */
export function afterOpenMinutes(schedule: Schedule, zones: readonly string[], from: number, minutes: number, until: number): number | null {
  let left = minutes * 60_000
  if (left <= 0) return from
  let cursor = from
  while (cursor < until) {
    const periods = openPeriods(schedule, zones, cursor, PERIODS_PER_ROUND)
    if (periods.length === 0) return null
    for (const { opensAt, closesAt } of periods) {
      if (opensAt >= until) return null
      const end = closesAt ?? Number.POSITIVE_INFINITY
      if (opensAt + left <= end) {
        const deadline = opensAt + left
        return deadline < until ? deadline : null
      }
      left -= end - opensAt
      cursor = end
    }
  }
  return null
}

/**
 * When a message of a campaign whose fallback step waits `no_reply_minutes`
 * for a reply is over unanswered: that many open minutes of its schedule in
 * the contact's zones after it started (its expiry, if the schedule has not
 * that much open time before). Its interaction is settled then rather than
 * at the end of the provider's reply window, so that a reply is matched to it
 * for exactly that long and the fallback follows at once. Null when the
 * campaign's fallback step waits for no reply (the reply window applies),
 * and for a call.
 */
export function noReplyDeadline(
  fallback: FallbackSettings | null,
  task: { channel: Channel; schedule: Schedule; timezones: readonly string[]; expiresAt: number },
  startedAt: number,
): number | null {
  // A call is over when it ends; only a message waits for an answer.
  if (task.channel === 'voice' || fallback === null || fallback.no_reply_minutes === undefined || !fallback.when.includes('no_reply')) return null
  const zones = scheduleZones(task.schedule, task.timezones)
  if (zones.length === 0) return null
  return afterOpenMinutes(task.schedule, zones, startedAt, fallback.no_reply_minutes, task.expiresAt) ?? task.expiresAt
}

/**
 * A step a task took: the campaign it ran under, why the step ended (the
 * fallback condition it met, or the task's outcome for its last step) and
 * the attempts it made. A task records the steps it left (tasks.steps);
 * task.completed lists them with its last.
 */
export interface TaskStep {
  campaign_id: string
  /** The campaign's routing key. */
  campaign: string
  channel: Channel
  outcome: FallbackCondition | TaskOutcome
  attempts: number
}

/** Attempts the task made in the steps it left: those of its current step are the rest. */
export function attemptsOfEarlierSteps(steps: readonly TaskStep[] | null): number {
  return steps === null ? 0 : steps.reduce((sum, step) => sum + step.attempts, 0)
}

/** Every step a task took, its last ending with its outcome; undefined for a task that never fell back (one step, its own campaign's). */
export function stepsOfCompletedTask(
  task: { steps?: readonly TaskStep[] | null; attempts: number; campaign: { id: string; routingKey: string; channel: Channel } },
  outcome: TaskOutcome,
): TaskStep[] | undefined {
  if (task.steps == null) return undefined
  const last = { campaign_id: task.campaign.id, campaign: task.campaign.routingKey, channel: task.campaign.channel, outcome, attempts: task.attempts - attemptsOfEarlierSteps(task.steps) }
  return [...task.steps, last]
}
