/**
 * Daily counts: what outlives the history that the retention sweep deletes.
 * Per UTC day, campaign (routing key and channel) and test mode: the tasks
 * completed with each outcome and the attempts they took, and the outbound
 * attempts and inbound messages that ended with each outcome and the seconds
 * they lasted. Counted from the events as they are written
 * (store/events.ts), so that every completion is counted once, by the
 * transaction that reports it.
 */
import type { OutboxEvent } from './events.ts'
import { compareCodeUnits } from './text.ts'
import { type Channel, INTERACTION_OUTCOMES, isChannel, TASK_OUTCOMES } from './types.ts'

export type CountKind = 'task' | 'outbound' | 'inbound'

export interface CountKey {
  /** YYYY-MM-DD, UTC. */
  day: string
  campaign: string
  channel: Channel
  testMode: boolean
  kind: CountKind
  outcome: string
}

export interface DailyCount extends CountKey {
  count: number
  /** Of tasks: the attempts they took. */
  attempts: number
  /** Of interactions: the seconds they lasted. */
  seconds: number
}

/**
 * What these events count: one task.completed is a task, one
 * interaction.finalized an attempt or an inbound message; nothing else
 * counts, nor an event that does not say what it reports (its campaign,
 * channel and outcome), which the service never writes.
 */
export function countEvents(events: readonly OutboxEvent[]): DailyCount[] {
  const counts = new Map<string, DailyCount>()
  for (const { type, timestamp, data } of events) {
    let counted: DailyCount | undefined
    if (type === 'task.completed') {
      const key = keyOf(data, data.completed_at ?? timestamp, 'task')
      counted = key && { ...key, count: 1, attempts: Number(data.attempts ?? 0), seconds: 0 }
    } else if (type === 'interaction.finalized') {
      const key = keyOf(data, data.ended_at ?? timestamp, data.direction === 'inbound' ? 'inbound' : 'outbound')
      counted = key && { ...key, count: 1, attempts: 0, seconds: Number(data.duration_s ?? 0) }
    }
    if (counted === undefined) continue
    const name = JSON.stringify([counted.day, counted.campaign, counted.channel, counted.testMode, counted.kind, counted.outcome])
    const sum = counts.get(name)
    if (sum === undefined) counts.set(name, counted)
    else {
      sum.count += counted.count
      sum.attempts += counted.attempts
      sum.seconds += counted.seconds
    }
  }
  return [...counts.values()]
}

/** What an event is counted under: the UTC day of `at`, its campaign, test mode and outcome. */
function keyOf(data: Record<string, unknown>, at: unknown, kind: CountKind): CountKey | undefined {
  const { campaign, channel, outcome } = data
  if (typeof campaign !== 'string' || !isChannel(channel) || typeof outcome !== 'string') return undefined
  const day = typeof at === 'string' && /^\d{4}-\d{2}-\d{2}T/.test(at) ? at.slice(0, 10) : undefined
  return day === undefined ? undefined : { day, campaign, channel, testMode: data.test_mode === true, kind, outcome }
}

/** One day of one campaign, as the API answers it: every outcome named, zero where none. */
export interface CampaignDay {
  day: string
  campaign: string
  channel: Channel
  testMode: boolean
  tasks: Record<string, number> & { total: number }
  /** The attempts the day's completed tasks took in all. */
  taskAttempts: number
  outbound: Record<string, number> & { total: number }
  inbound: number
  /** How long the day's outbound attempts lasted, in seconds. */
  outboundSeconds: number
}

/** Every outcome at zero, as a day begins: one object per kind and channel, copied for each day. */
const NO_TASKS: Readonly<Record<string, number>> = { total: 0, ...Object.fromEntries(TASK_OUTCOMES.map((outcome) => [outcome, 0])) }
const NO_ATTEMPTS: Readonly<Record<Channel, Readonly<Record<string, number>>>> = {
  voice: { total: 0, ...Object.fromEntries(INTERACTION_OUTCOMES.voice.map((outcome) => [outcome, 0])) },
  whatsapp: { total: 0, ...Object.fromEntries(INTERACTION_OUTCOMES.whatsapp.map((outcome) => [outcome, 0])) },
  sms: { total: 0, ...Object.fromEntries(INTERACTION_OUTCOMES.sms.map((outcome) => [outcome, 0])) },
}

/**
 * The counts gathered by day and campaign, oldest day first, then by
 * campaign (in code-unit order, whatever the locale), channel and test
 * mode. A count's key may come more than once (its moved part and the
 * changes not moved yet): they add up.
 */
export function campaignDays(counts: readonly DailyCount[]): CampaignDay[] {
  const days = new Map<string, CampaignDay>()
  for (const count of counts) {
    // A routing key is letters, digits, dot, dash and underscore: \u0000 cannot run into the next field.
    const key = `${count.day}\u0000${count.campaign}\u0000${count.channel}\u0000${count.testMode}`
    let day = days.get(key)
    if (day === undefined) {
      day = {
        day: count.day,
        campaign: count.campaign,
        channel: count.channel,
        testMode: count.testMode,
        tasks: { ...NO_TASKS } as CampaignDay['tasks'],
        taskAttempts: 0,
        outbound: { ...NO_ATTEMPTS[count.channel] } as CampaignDay['outbound'],
        inbound: 0,
        outboundSeconds: 0,
      }
      days.set(key, day)
    }
    if (count.kind === 'task') {
      day.tasks[count.outcome] = (day.tasks[count.outcome] ?? 0) + count.count
      day.tasks.total += count.count
      day.taskAttempts += count.attempts
    } else if (count.kind === 'outbound') {
      day.outbound[count.outcome] = (day.outbound[count.outcome] ?? 0) + count.count
      day.outbound.total += count.count
      day.outboundSeconds += count.seconds
    } else day.inbound += count.count
  }
  return [...days.values()].sort(
    (a, b) =>
      compareCodeUnits(a.day, b.day) || compareCodeUnits(a.campaign, b.campaign) || compareCodeUnits(a.channel, b.channel) || Number(a.testMode) - Number(b.testMode),
  )
}
