/**
 * Reach counts (migration 051): written as changes by each statement that
 * writes events (store/events.ts), moved into reach_counts by the history
 * sweep, and read as the sum of both, as the daily counts are.
 */
import { REACHED_OUTCOMES } from '../domain/attemptPolicy.ts'
import type { ReachCell, ReachCount } from '../domain/reachCounts.ts'
import { CHANNELS, type Channel } from '../domain/types.ts'
import { changesMover } from './countChanges.ts'
import type { Queryable } from './database.ts'

/** The changes as a statement's JSON parameter: one array per count, its fields by position, as insertReachChanges reads them. */
export function reachChangesParameter(changes: readonly { orgId: string; count: ReachCount }[]): string {
  return JSON.stringify(
    changes.map(({ orgId, count: c }) => [orgId, c.campaign, c.channel, c.testMode, c.localDate, c.hour, c.attempt, c.outcome, c.delayBucket, c.count, c.seconds, c.delayS]),
  )
}

/** A CTE body that inserts the changes of a parameter made by reachChangesParameter, named by `param`. */
export const insertReachChanges = (param: string) =>
  `INSERT INTO reach_count_changes (org_id, campaign, channel, test_mode, local_date, hour, attempt, outcome, delay_bucket, count, seconds, delay_s)
   SELECT c->>0, c->>1, c->>2, (c->>3)::boolean, (c->>4)::date, (c->>5)::smallint, (c->>6)::int, c->>7, (c->>8)::smallint,
          (c->>9)::bigint, (c->>10)::bigint, (c->>11)::bigint
   FROM jsonb_array_elements(${param}::jsonb) AS c`

/** The outcomes that reached the person (domain/attemptPolicy.ts), as an SQL list. */
const REACHED_LIST = `(${REACHED_OUTCOMES.map((outcome) => `'${outcome}'`).join(', ')})`

/** Moves up to `limit` changes into reach_counts, and into reach_hours (migration 052) those not of test mode; answers how many. */
export const moveReachChanges = changesMover({
  changes: 'reach_count_changes',
  counts: 'reach_counts',
  key: ['org_id', 'campaign', 'channel', 'test_mode', 'local_date', 'hour', 'attempt', 'outcome', 'delay_bucket'],
  sums: ['count', 'seconds', 'delay_s'],
  alsoAdd: `INSERT INTO reach_hours AS h (org_id, campaign, channel, hour_of_week, attempts, reached)
    SELECT org_id, campaign, channel, ((extract(isodow FROM local_date)::int - 1) * 24 + hour)::smallint,
           sum(count), sum(CASE WHEN outcome IN ${REACHED_LIST} THEN count ELSE 0 END)
    FROM moved WHERE NOT test_mode GROUP BY 1, 2, 3, 4
    ON CONFLICT (org_id, campaign, channel, hour_of_week) DO UPDATE SET attempts = h.attempts + excluded.attempts, reached = h.reached + excluded.reached`,
})


/** An organization's campaign's attempts and reaches by local hour of the week (reach_hours), excluding test mode. */
export interface ReachHourRow {
  campaign: string
  channel: Channel
  hourOfWeek: number
  attempts: number
  reached: number
}

/** Every campaign's reach by hour of the week of an organization: 168 rows at most a campaign and channel. */
export async function listReachHours(db: Queryable, orgId: string): Promise<ReachHourRow[]> {
  const rows = await db.query<{ campaign: string; channel: Channel; hour_of_week: number; attempts: string; reached: string }>(
    'SELECT campaign, channel, hour_of_week, attempts, reached FROM reach_hours WHERE org_id = $1',
    [orgId],
  )
  return rows.map((row) => ({ campaign: row.campaign, channel: row.channel, hourOfWeek: row.hour_of_week, attempts: Number(row.attempts), reached: Number(row.reached) }))
}

/**
 * The routing keys read: the one asked for, else every one of the
 * organization's campaigns. Each filter is an array the primary key's scan
 * takes as it is, whatever the statement's generic plan: as "$4 IS NULL OR
 * campaign = $4" it read the organization's every row and filtered them (a
 * campaign's month among 1,051,200 rows: 227 ms, 86,400 rows read for 4,320;
 * as arrays, 4,320 read).
 */
const CAMPAIGNS = 'coalesce($4::text[], ARRAY(SELECT routing_key FROM campaigns WHERE org_id = $1))'

/**
 * The counts of an organization's campaign (or all its campaigns) and test
 * mode from local date `from` to `to` (both included), summed over campaign
 * and channel in SQL: a year of a campaign calling 12 hours a day is about
 * 50,000 rows, and the answer a few thousand cells. Read in reach_counts'
 * primary key's range, and the changes not moved yet.
 */
export async function listReachCells(
  db: Queryable,
  orgId: string,
  range: { from: string; to: string; campaign?: string; channel?: Channel; testMode: boolean },
): Promise<ReachCell[]> {
  const rows = await db.query<{
    local_date: string
    weekday: number
    hour: number
    attempt: number
    outcome: string
    delay_bucket: number
    count: string
    seconds: string
    delay_s: string
  }>(
    `SELECT local_date::text, extract(isodow FROM local_date)::int AS weekday, hour::int, attempt, outcome, delay_bucket::int,
            sum(count) AS count, sum(seconds) AS seconds, sum(delay_s) AS delay_s
     FROM (
       SELECT local_date, hour, attempt, outcome, delay_bucket, count, seconds, delay_s FROM reach_counts
       WHERE org_id = $1 AND campaign = ANY(${CAMPAIGNS}) AND channel = ANY($5::text[]) AND test_mode = $6
         AND local_date BETWEEN $2::date AND $3::date
       UNION ALL
       SELECT local_date, hour, attempt, outcome, delay_bucket, count, seconds, delay_s FROM reach_count_changes
       WHERE org_id = $1 AND campaign = ANY(${CAMPAIGNS}) AND channel = ANY($5::text[]) AND test_mode = $6
         AND local_date BETWEEN $2::date AND $3::date
     ) counted
     GROUP BY local_date, hour, attempt, outcome, delay_bucket`,
    [orgId, range.from, range.to, range.campaign === undefined ? null : [range.campaign], range.channel === undefined ? CHANNELS : [range.channel], range.testMode],
  )
  return rows.map((row) => ({
    localDate: row.local_date,
    weekday: row.weekday,
    hour: row.hour,
    attempt: row.attempt,
    outcome: row.outcome,
    delayBucket: row.delay_bucket,
    count: Number(row.count),
    seconds: Number(row.seconds),
    delayS: Number(row.delay_s),
  }))
}
