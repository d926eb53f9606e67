/**
 * Deliveries: each event to each endpoint subscribed to its type. Claimed
 * like tasks (FOR UPDATE SKIP LOCKED, a lease that also moves due_at), with
 * a cap on how many of one endpoint's deliveries are in flight at once, so
 * that a slow receiver holds back only its own.
 */
import type { EventType } from '../domain/types.ts'
import type { Queryable } from './database.ts'
import type { OutboxEvent } from './events.ts'
import { iso, isoOrNull } from './rows.ts'

/** Creates the deliveries of a new event, to every enabled endpoint of its organization subscribed to its type. */
export async function fanOut(tx: Queryable, orgId: string, eventId: string, type: EventType, at: string): Promise<void> {
  await tx.query(
    `INSERT INTO deliveries (event_id, endpoint_id, org_id, status, due_at, created_at)
     SELECT $2, id, org_id, 'pending', $4, $4 FROM webhook_endpoints
     WHERE org_id = $1 AND enabled AND deleted_at IS NULL AND $3 = ANY(events)`,
    [orgId, eventId, type, at],
  )
}

/** A claimed delivery with what it takes to send it. */
export interface ClaimedDelivery {
  id: number
  attempts: number
  event: OutboxEvent
  endpoint: { id: string; url: string; enabled: boolean; secrets: string[] }
}

/**
 * Claims up to `limit` due deliveries for `claim`, at most `perEndpoint` in
 * flight for any one endpoint: each endpoint with due work is locked while
 * its room is counted and filled, so workers claiming at once skip it rather
 * than both fill it.
 */
export async function claimDueDeliveries(
  db: Queryable,
  claim: string,
  now: number,
  lockedUntil: number,
  limit: number,
  perEndpoint: number,
): Promise<ClaimedDelivery[]> {
  const rows = await db.query<{
    id: string
    attempts: number
    payload: OutboxEvent
    endpoint_id: string
    url: string
    enabled: boolean
    deleted: boolean
    secret: string
    previous_secret: string | null
    previous_secret_until: Date | null
  }>(
    `WITH endpoints AS (
       SELECT w.id, $5 - (SELECT count(*) FROM deliveries r
                          WHERE r.endpoint_id = w.id AND r.status = 'pending' AND r.locked_until > $3) AS room
       FROM webhook_endpoints w
       WHERE EXISTS (SELECT 1 FROM deliveries d WHERE d.endpoint_id = w.id AND d.status = 'pending' AND d.due_at <= $3)
       FOR NO KEY UPDATE SKIP LOCKED
     ), picked AS (
       SELECT due.id FROM endpoints e
       CROSS JOIN LATERAL (
         SELECT d.id FROM deliveries d
         WHERE d.endpoint_id = e.id AND d.status = 'pending' AND d.due_at <= $3
         ORDER BY d.due_at
         LIMIT greatest(e.room, 0)
         FOR UPDATE SKIP LOCKED) due
       LIMIT $4
     ), claimed AS (
       UPDATE deliveries SET locked_by = $1, locked_until = $2, due_at = $2
       WHERE id IN (SELECT id FROM picked)
       RETURNING id, attempts, event_id, endpoint_id)
     SELECT c.id, c.attempts, e.payload, w.id AS endpoint_id, w.url, w.enabled, w.deleted_at IS NOT NULL AS deleted, w.secret,
            w.previous_secret, w.previous_secret_until
     FROM claimed c
     JOIN events e ON e.id = c.event_id
     JOIN webhook_endpoints w ON w.id = c.endpoint_id`,
    [claim, new Date(lockedUntil), new Date(now), limit, perEndpoint],
  )
  return rows.map((row) => ({
    id: Number(row.id),
    attempts: row.attempts,
    event: row.payload,
    endpoint: {
      id: row.endpoint_id,
      url: row.url,
      enabled: row.enabled && !row.deleted,
      secrets:
        row.previous_secret !== null && row.previous_secret_until !== null && row.previous_secret_until.getTime() > now
          ? [row.secret, row.previous_secret]
          : [row.secret],
    },
  }))
}

export interface AttemptRecord {
  at: number
  statusCode: number | null
  latencyMs: number
  error: string | null
}

/**
 * Logs an attempt and moves the delivery on: done (`succeeded`, or `failed`
 * when it gives up) or due again at `retryAt`. Only while `claim` still holds
 * it: false when its lease ran out and it was claimed again (the later claim
 * logs its own attempt).
 */
export async function recordAttempt(
  tx: Queryable,
  deliveryId: number,
  claim: string,
  attempt: AttemptRecord,
  next: { status: 'succeeded' | 'failed' } | { status: 'pending'; retryAt: number },
): Promise<boolean> {
  const rows = await tx.query<{ attempts: number }>(
    `UPDATE deliveries SET attempts = attempts + 1, status = $3, due_at = coalesce($4::timestamptz, due_at),
            completed_at = CASE WHEN $3 = 'pending' THEN NULL ELSE $5::timestamptz END, locked_by = NULL, locked_until = NULL
     WHERE id = $1 AND locked_by = $2 AND status = 'pending'
     RETURNING attempts`,
    [deliveryId, claim, next.status, next.status === 'pending' ? new Date(next.retryAt) : null, new Date(attempt.at)],
  )
  if (rows.length === 0) return false
  await tx.query(
    `INSERT INTO delivery_attempts (delivery_id, attempt, attempted_at, status_code, latency_ms, error)
     VALUES ($1, $2, $3, $4, $5, $6)`,
    [deliveryId, rows[0]!.attempts, new Date(attempt.at), attempt.statusCode, Math.round(attempt.latencyMs), attempt.error],
  )
  return true
}

/**
 * Gives up what is pending for an endpoint that no longer receives (deleted,
 * disabled by its owner, or gone with a 410); the event log still lists it,
 * and an event can be redelivered once the endpoint is enabled again.
 */
export async function giveUpPending(tx: Queryable, endpointId: string, now: number): Promise<void> {
  await tx.query(
    `UPDATE deliveries SET status = 'failed', completed_at = $2, locked_by = NULL, locked_until = NULL
     WHERE endpoint_id = $1 AND status = 'pending'`,
    [endpointId, new Date(now)],
  )
}

/** When the deliverer next has something to do. */
export async function nextDeliveryDueAt(db: Queryable): Promise<number | undefined> {
  const rows = await db.query<{ due_at: Date }>(`SELECT due_at FROM deliveries WHERE status = 'pending' ORDER BY due_at LIMIT 1`)
  return rows[0]?.due_at.getTime()
}

/**
 * Sends an event to one of its organization's endpoints now: a delivery of
 * it still pending there is brought forward (unless a send is in flight), so
 * that asking twice never queues it twice; otherwise a new delivery is made.
 */
export async function redeliver(db: Queryable, orgId: string, eventId: string, endpointId: string, now: number): Promise<void> {
  await db.query(
    `WITH hurried AS (
       UPDATE deliveries SET due_at = $4
       WHERE event_id = $1 AND endpoint_id = $2 AND status = 'pending' AND (locked_until IS NULL OR locked_until <= $4)
     )
     INSERT INTO deliveries (event_id, endpoint_id, org_id, status, due_at, created_at)
     SELECT $1, $2, $3, 'pending', $4, $4
     WHERE NOT EXISTS (SELECT 1 FROM deliveries WHERE event_id = $1 AND endpoint_id = $2 AND status = 'pending')`,
    [eventId, endpointId, orgId, new Date(now)],
  )
}

export interface DeliveryLog {
  endpointId: string
  status: 'pending' | 'succeeded' | 'failed'
  nextAttemptAt: string | null
  attempts: { attempt: number; at: string; statusCode: number | null; latencyMs: number; error: string | null }[]
}

/** Every delivery of an event, with its attempts, oldest first. */
export async function deliveriesOf(db: Queryable, eventId: string): Promise<DeliveryLog[]> {
  const rows = await db.query<{
    id: string
    endpoint_id: string
    status: DeliveryLog['status']
    due_at: Date
    attempt: number | null
    attempted_at: Date | null
    status_code: number | null
    latency_ms: number | null
    error: string | null
  }>(
    `SELECT d.id, d.endpoint_id, d.status, d.due_at, a.attempt, a.attempted_at, a.status_code, a.latency_ms, a.error
     FROM deliveries d
     LEFT JOIN delivery_attempts a ON a.delivery_id = d.id
     WHERE d.event_id = $1
     ORDER BY d.id, a.attempt`,
    [eventId],
  )
  const logs = new Map<string, DeliveryLog>()
  for (const row of rows) {
    let log = logs.get(row.id)
    if (log === undefined) {
      log = {
        endpointId: row.endpoint_id,
        status: row.status,
        nextAttemptAt: row.status === 'pending' ? iso(row.due_at) : null,
        attempts: [],
      }
      logs.set(row.id, log)
    }
    if (row.attempt !== null) {
      log.attempts.push({
        attempt: row.attempt,
        at: isoOrNull(row.attempted_at)!,
        statusCode: row.status_code,
        latencyMs: row.latency_ms!,
        error: row.error,
      })
    }
  }
  return [...logs.values()]
}

export interface DeliveryMetrics {
  succeeded: number
  failed: number
  pending: number
  /** Pending deliveries that have failed at least once. */
  retrying: number
  attempts: number
  disabledEndpoints: number
  /** Age of the oldest pending delivery, in seconds; 0 when none is pending. */
  oldestPendingAgeS: number
  /** How long the most overdue delivery has been due, in seconds: the deliverers' lag. */
  lagS: number
}

export async function deliveryMetrics(db: Queryable, now: number): Promise<DeliveryMetrics> {
  const [row] = await db.query<{
    succeeded: number
    failed: number
    pending: number
    retrying: number
    attempts: number
    oldest: Date | null
    overdue: Date | null
    disabled: number
  }>(
    `SELECT count(*) FILTER (WHERE status = 'succeeded')::int AS succeeded,
            count(*) FILTER (WHERE status = 'failed')::int AS failed,
            count(*) FILTER (WHERE status = 'pending')::int AS pending,
            count(*) FILTER (WHERE status = 'pending' AND attempts > 0)::int AS retrying,
            coalesce(sum(attempts), 0)::float8 AS attempts,
            min(created_at) FILTER (WHERE status = 'pending') AS oldest,
            min(due_at) FILTER (WHERE status = 'pending' AND due_at <= $1) AS overdue,
            (SELECT count(*)::int FROM webhook_endpoints WHERE NOT enabled AND deleted_at IS NULL AND disabled_reason IS NOT NULL) AS disabled
     FROM deliveries`,
    [new Date(now)],
  )
  const secondsSince = (instant: Date | null) => (instant === null ? 0 : Math.max(0, (now - instant.getTime()) / 1000))
  return {
    succeeded: row!.succeeded,
    failed: row!.failed,
    pending: row!.pending,
    retrying: row!.retrying,
    attempts: row!.attempts,
    disabledEndpoints: row!.disabled,
    oldestPendingAgeS: secondsSince(row!.oldest),
    lagS: secondsSince(row!.overdue),
  }
}
