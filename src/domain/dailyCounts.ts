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
import { type Channel, INTERACTION_OUTCOMES, TASK_OUTCOMES } from './types.ts'

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

const keyOf = (key: CountKey) => JSON.stringify([key.day, key.campaign, key.channel, key.testMode, key.kind, key.outcome])

/** What these events count: one task.completed is a task, one interaction.finalized an attempt or an inbound message; nothing else counts. */
export function countEvents(events: readonly OutboxEvent[]): DailyCount[] {
  const counts = new Map<string, DailyCount>()
  for (const { type, data } of events) {
    let counted: DailyCount
    if (type === 'task.completed') {
      counted = { ...common(data, data.completed_at), kind: 'task', count: 1, attempts: Number(data.attempts), seconds: 0 }
    } else if (type === 'interaction.finalized') {
      const kind = data.direction === 'inbound' ? 'inbound' : 'outbound'
      counted = { ...common(data, data.ended_at), kind, count: 1, attempts: 0, seconds: Number(data.duration_s ?? 0) }
    } else continue
    const key = keyOf(counted)
    const sum = counts.get(key)
    if (sum === undefined) counts.set(key, counted)
    else {
      sum.count += counted.count
      sum.attempts += counted.attempts
      sum.seconds += counted.seconds
    }
  }
  return [...counts.values()]
}

function common(data: Record<string, unknown>, at: unknown): Omit<CountKey, 'kind'> {
  return {
    day: String(at).slice(0, 10),
    campaign: String(data.campaign),
    channel: data.channel as Channel,
    testMode: data.test_mode === true,
    outcome: String(data.outcome),
  }
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

/** The counts gathered by day and campaign, oldest day first, then by campaign, channel and test mode. */
export function campaignDays(counts: readonly DailyCount[]): CampaignDay[] {
  const days = new Map<string, CampaignDay>()
  for (const count of counts) {
    const key = JSON.stringify([count.day, count.campaign, count.channel, count.testMode])
    let day = days.get(key)
    if (day === undefined) {
      day = {
        day: count.day,
        campaign: count.campaign,
        channel: count.channel,
        testMode: count.testMode,
        tasks: { total: 0, ...Object.fromEntries(TASK_OUTCOMES.map((outcome) => [outcome, 0])) },
        taskAttempts: 0,
        outbound: { total: 0, ...Object.fromEntries(INTERACTION_OUTCOMES[count.channel].map((outcome) => [outcome, 0])) },
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
      a.day.localeCompare(b.day) || a.campaign.localeCompare(b.campaign) || a.channel.localeCompare(b.channel) || Number(a.testMode) - Number(b.testMode),
  )
}
