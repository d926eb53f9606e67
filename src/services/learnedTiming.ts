/**
 * Learned retry timing as a settlement applies it (a campaign's
 * `attempts.timing: "learned"`): a retry the attempt policy made due at its
 * first opening after the delay is moved to the local hour, within the next
 * three days, inside the campaign's schedule and the law's calling hours and
 * forbidden dates, where Thompson sampling over the campaign's reach by hour
 * of the week draws the highest rate (domain/learnedTiming.ts). The task
 * keeps why, as its decision (reason `learned_hour`), which the attempt's
 * own decision carries on.
 *
 * What it reads: the organization's reach by hour of the week (reach_hours,
 * 168 rows a campaign at most), kept here for {@link TALLIES_REFRESH_MS} by
 * each process: the hours learn over days, and a statement per retry would
 * cost every settlement a read; and, per commit with learned retries, one
 * statement for their tasks' past starts and campaigns' compliance.
 */
import type { Schedule } from '../domain/campaignSettings.ts'
import { complianceOf } from '../domain/consent.ts'
import { lawWindows, type RecordedDecision } from '../domain/contactability.ts'
import { jurisdictionsOfNumber } from '../domain/jurisdictions.ts'
import { HOURS_OF_WEEK, hourOfWeek, type HourTally, learnedAttemptTime, learnedReason } from '../domain/learnedTiming.ts'
import { scheduleZones } from '../domain/schedule.ts'
import type { Channel } from '../domain/types.ts'
import type { Queryable } from '../store/database.ts'
import { listReachHours } from '../store/reachCounts.ts'
import { learningFactsOf } from '../store/tasks.ts'
import type { CallingLaw } from './callingLaw.ts'

/**
 * How long a process keeps an organization's reach by hour: the history
 * sweep moves new counts in every few minutes, and an hour's rate is made of
 * hundreds of attempts, which ten minutes more barely change.
 */
export const TALLIES_REFRESH_MS = 10 * 60_000

/** A retry the attempt policy made, of a campaign of learned timing. */
export interface LearnedRetry {
  taskId: string
  orgId: string
  campaign: { routingKey: string; channel: Channel; schedule: Schedule }
  timezones: readonly string[]
  expiresAt: number
  /** When the policy made it due: its first opening after the retry delay. */
  dueAt: number
  /** The number dialled. */
  phone: string
  /** The number the attempt will have. */
  attempt: number
}

interface Tallies {
  readAt: number
  byCampaign: Map<string, HourTally[]>
  organization: HourTally[]
}

const emptyWeek = (): HourTally[] => Array.from({ length: HOURS_OF_WEEK }, () => ({ attempts: 0, reached: 0 }))

export class LearnedTiming {
  readonly #now: () => number
  readonly #law: CallingLaw
  readonly #tallies = new Map<string, Tallies>()

  constructor(deps: { now: () => number; law: CallingLaw }) {
    this.#now = deps.now
    this.#law = deps.law
  }

  /**
   * When each retry goes, and why, by task id: those whose windows open no
   * hour in the horizon are left out (they keep the policy's time).
   */
  async retime(tx: Queryable, retries: readonly LearnedRetry[], now: number): Promise<Map<string, { dueAt: number; decision: RecordedDecision }>> {
    const timed = new Map<string, { dueAt: number; decision: RecordedDecision }>()
    if (retries.length === 0) return timed
    const facts = await learningFactsOf(tx, retries.map((retry) => retry.taskId))
    const { profiles } = await this.#law.current(tx)
    for (const retry of retries) {
      const fact = facts.get(retry.taskId)
      if (fact === undefined) continue
      const tallies = await this.#talliesOf(tx, retry.orgId)
      const scheduleZonesOf = scheduleZones(retry.campaign.schedule, retry.timezones)
      const zone = scheduleZonesOf[0]
      if (zone === undefined) continue
      const compliance = complianceOf(fact.compliance, { routingKey: retry.campaign.routingKey, channel: retry.campaign.channel, provider: fact.provider })
      const nature = { profiles, jurisdictions: jurisdictionsOfNumber(retry.phone), purpose: compliance.purpose, channel: retry.campaign.channel, artificialVoice: compliance.artificialVoice }
      // A law's hours are read where the person may be, as the decision before the attempt reads them.
      const lawZones = retry.timezones.length > 0 ? retry.timezones : scheduleZonesOf
      const windows = [{ schedule: retry.campaign.schedule, zones: scheduleZonesOf }, ...lawWindows(nature, lawZones, retry.dueAt)]
      const choice = learnedAttemptTime({
        windows,
        zone,
        earliest: retry.dueAt,
        until: retry.expiresAt,
        campaign: tallies.byCampaign.get(`${retry.campaign.routingKey} ${retry.campaign.channel}`) ?? emptyWeek(),
        organization: tallies.organization,
        triedHoursOfDay: new Set(fact.starts.map((start) => hourOfWeek(start, zone) % 24)),
        seed: `${retry.taskId}:${retry.attempt}`,
      })
      if (choice === null) continue
      timed.set(retry.taskId, {
        dueAt: choice.at,
        decision: { decision: 'deferred', at: new Date(now).toISOString(), not_before: new Date(choice.at).toISOString(), reasons: [learnedReason(choice, retry.attempt, zone)], profiles: [] },
      })
    }
    return timed
  }

  async #talliesOf(tx: Queryable, orgId: string): Promise<Tallies> {
    const kept = this.#tallies.get(orgId)
    if (kept !== undefined && this.#now() - kept.readAt < TALLIES_REFRESH_MS) return kept
    const readAt = this.#now()
    const byCampaign = new Map<string, HourTally[]>()
    const organization = emptyWeek()
    for (const row of await listReachHours(tx, orgId)) {
      const key = `${row.campaign} ${row.channel}`
      let week = byCampaign.get(key)
      if (week === undefined) byCampaign.set(key, (week = emptyWeek()))
      week[row.hourOfWeek] = { attempts: row.attempts, reached: row.reached }
      const total = organization[row.hourOfWeek]!
      organization[row.hourOfWeek] = { attempts: total.attempts + row.attempts, reached: total.reached + row.reached }
    }
    const tallies = { readAt, byCampaign, organization }
    this.#tallies.set(orgId, tallies)
    return tallies
  }
}
