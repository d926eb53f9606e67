/** What an endpoint's health is read from: its attempts counted by the hour, and its failures (migration 025). */
import type { AttemptCounts } from '../domain/endpointHealth.ts'
import type { SentEventType } from '../domain/types.ts'
import type { Queryable } from './database.ts'
import { iso } from './rows.ts'

/** The endpoint's counts of each hour that starts at or after `since`. */
export async function endpointHours(db: Queryable, endpointId: string, since: number): Promise<AttemptCounts[]> {
  const rows = await db.query<{ attempts: number; succeeded: number; latency_ms_sum: string; latency_ms_max: number; latency_buckets: number[] }>(
    `SELECT attempts, succeeded, latency_ms_sum, latency_ms_max, latency_buckets FROM endpoint_hours WHERE endpoint_id = $1 AND hour >= $2`,
    [endpointId, new Date(since)],
  )
  return rows.map((row) => ({
    attempts: row.attempts,
    succeeded: row.succeeded,
    latencyMsSum: Number(row.latency_ms_sum),
    latencyMsMax: row.latency_ms_max,
    latencyBuckets: row.latency_buckets,
  }))
}

/** An attempt that failed: its event, and the receiver's answer (a status code) or why there was none. */
export interface FailedAttempt {
  eventId: string
  eventType: SentEventType
  attempt: number
  at: string
  statusCode: number | null
  latencyMs: number
  error: string | null
  /** Whether the delivery gave up after it. */
  final: boolean
}

/**
 * The endpoint's last `limit` failed attempts, newest first: those after
 * which their delivery was due again, and the last of each delivery that gave
 * up, each read newest first from an index of failures only.
 */
export async function lastFailures(db: Queryable, endpointId: string, limit: number): Promise<FailedAttempt[]> {
  const rows = await db.query<{
    event_id: string
    type: SentEventType
    attempt: number
    at: Date
    status_code: number | null
    latency_ms: number
    error: string | null
    final: boolean
  }>(
    `SELECT f.*, e.type FROM (
       (SELECT d.event_id, a.attempt, a.attempted_at AS at, a.status_code, a.latency_ms, a.error, false AS final
        FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id
        WHERE a.endpoint_id = $1 ORDER BY a.attempted_at DESC LIMIT $2)
       UNION ALL
       (SELECT d.event_id, d.attempts, d.completed_at, d.final_status_code, d.final_latency_ms, d.final_error, true
        FROM deliveries d
        WHERE d.endpoint_id = $1 AND d.status = 'failed' AND d.final_latency_ms IS NOT NULL ORDER BY d.completed_at DESC LIMIT $2)
     ) f
     JOIN events e ON e.id = f.event_id
     ORDER BY f.at DESC, f.attempt DESC
     LIMIT $2`,
    [endpointId, limit],
  )
  return rows.map((row) => ({
    eventId: row.event_id,
    eventType: row.type,
    attempt: row.attempt,
    at: iso(row.at),
    statusCode: row.status_code,
    latencyMs: row.latency_ms,
    error: row.error,
    final: row.final,
  }))
}
