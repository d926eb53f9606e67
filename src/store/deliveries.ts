/**
 * Deliveries: each event to each endpoint subscribed to its type. Claimed
 * like tasks (FOR UPDATE SKIP LOCKED, a lease that also moves due_at), by
 * endpoint: the worker whose claims on an endpoint's deliveries still run
 * holds the endpoint, so that its cap on sends in flight holds across
 * processes and a slow receiver holds back only its own. Attempts are
 * recorded many at a time.
 */
import { tracing } from '../tracing.ts'
import type { Database, Queryable } from './database.ts'
import { distinctKeys } from './distinctKeys.ts'
import { LATENCY_BOUNDS_MS } from '../domain/endpointHealth.ts'
import { decodeEventBody } from './eventBodies.ts'
import { iso, isoOrNull } from './rows.ts'
import type { RecoveryPosition } from '../domain/webhookRecovery.ts'
import type { AnswerExcerpt } from '../webhooks/httpPoster.ts'

/** An endpoint as its holder sends to it: where, signed with what, and how many at once. */
export interface LeasedEndpoint {
  id: string
  url: string
  maxInFlight: number
  secret: string
  /** After a rotation, the previous secret, which also signs until `previousSecretUntil`. */
  previousSecret: string | null
  previousSecretUntil: number | null
}

/** A claimed delivery with what it takes to send it. */
/**
 * An event as its webhook carries it: its id (the webhook-id) and its JSON
 * text, sent as it was written or as the events table gives it back, never
 * parsed and written again (a result's transcript makes a body of kilobytes).
 */
export interface EventBody {
  id: string
  body: string
  /** The W3C traceparent of its trigger's request, when traces were on as it was recorded. */
  traceParent: string | null
}

export interface ClaimedDelivery {
  id: number
  /** The claim that holds it: only this claim can record its attempt. */
  claim: string
  /** Attempts before this one. */
  attempts: number
  event: EventBody
  endpointId: string
  /** When its lease runs out, unless renewed. */
  lockedUntil: number
}

export interface ClaimRequest {
  worker: string
  /** `${worker}.${n}`: the name of this claim, and so of the worker that makes it. */
  claim: string
  now: number
  lockedUntil: number
  /** Endpoints the worker holds whose queues are full: nothing more is claimed for them. */
  full: readonly string[]
  /** Endpoints the worker holds whose queues run low, with how many more of their due deliveries to claim. */
  refills: readonly { endpointId: string; quota: number }[]
  /** Room for endpoints the worker does not hold, in places: the caps of those taken add up to at most this. */
  room: number
  /** How many due deliveries to claim of each endpoint taken. */
  quota: number
}

export interface Claimed {
  /** The endpoints that are the worker's now, with what it takes to send to them. */
  endpoints: LeasedEndpoint[]
  /** Their deliveries claimed now, in the order they fell due. */
  deliveries: ClaimedDelivery[]
  /** Endpoints it was refilling that another worker holds now: its leases on them ran out. */
  lost: string[]
}

/** The endpoints with pending deliveries (`queued`), from the index the deliverer reads each one's queue by. */
const QUEUED_ENDPOINTS = distinctKeys('queued', { table: 'deliveries', column: 'endpoint_id', where: "status = 'pending'" })

/**
 * Claims due deliveries by endpoint, with a cap on how many of one endpoint's
 * are in flight at once that holds across processes: an endpoint is held by
 * the one worker whose claims on its deliveries still run, which sends at
 * most the endpoint's cap at once (from a queue of them claimed ahead) and
 * claims more as it goes; other workers skip the endpoint until those claims
 * are recorded, handed back or run out. Each claim is a lease, as for tasks:
 * it moves due_at to the lease's end, so that what a worker that died had
 * claimed is due again, and its endpoint free, once the lease runs out.
 *
 * A lease of the endpoint row itself (as graphile-worker's named queues lock
 * theirs) would be a second lease beside the deliveries' own, to renew, to
 * release and to let run out after a crash, while the deliveries' leases
 * already say who holds an endpoint and until when.
 *
 * Two statements in one transaction: the first locks the endpoints to look
 * at (FOR NO KEY UPDATE SKIP LOCKED), so that two workers never look at one
 * at once; the second, whose snapshot is taken after those locks are held,
 * sees every claim committed before, and claims only for endpoints no other
 * worker holds. (In one statement, a worker whose snapshot predates another's
 * claim could lock the endpoint just after that claim commits, not see it,
 * and fill the endpoint's cap a second time.) New endpoints are taken
 * longest-waiting first.
 */
export async function claimDeliveries(db: Database, request: ClaimRequest): Promise<Claimed> {
  const refillIds = request.refills.map((refill) => refill.endpointId)
  return db.transaction(async (tx) => {
    const locked = await tx.query<{ id: string }>(
      `WITH RECURSIVE ${QUEUED_ENDPOINTS}
       SELECT e.id FROM queued JOIN webhook_endpoints e ON e.id = queued.id
       CROSS JOIN LATERAL (
         SELECT d.due_at FROM deliveries d WHERE d.endpoint_id = queued.id AND d.status = 'pending' AND d.due_at <= $1
         ORDER BY d.due_at LIMIT 1) oldest
       WHERE e.enabled AND e.deleted_at IS NULL AND e.id <> ALL($2::text[])
       ORDER BY e.id = ANY($3::text[]) DESC, oldest.due_at
       LIMIT cardinality($3::text[]) + $4
       FOR NO KEY UPDATE OF e SKIP LOCKED`,
      [new Date(request.now), request.full, refillIds, request.room],
    )
    if (locked.length === 0) return { endpoints: [], deliveries: [], lost: [] }
    const rows = await tx.query<EndpointColumns & { delivery_id: string | null; attempts: number | null; event_id: string | null; body: Uint8Array | null; trace_parent: string | null }>(
      `WITH refills AS (
         SELECT * FROM unnest($6::text[], $7::int[]) AS r(id, quota)
       ), free AS (
         SELECT e.*, (SELECT min(d.due_at) FROM deliveries d WHERE d.endpoint_id = e.id AND d.status = 'pending') AS oldest
         FROM webhook_endpoints e
         WHERE e.id = ANY($5::text[])
           AND NOT EXISTS (
             -- Another worker's claim that still runs: a claim runs at most a lease ahead, and the window, twice that, leaves room for clocks apart.
             SELECT 1 FROM deliveries c
             WHERE c.endpoint_id = e.id AND c.status = 'pending' AND c.due_at > $3::timestamptz
               AND c.due_at <= $4::timestamptz + ($4::timestamptz - $3::timestamptz)
               AND c.locked_by IS NOT NULL AND NOT starts_with(c.locked_by, $1 || '.'))
       ), taken AS (
         -- Those refilled, and as many others as their caps leave room for, longest-waiting first.
         SELECT * FROM (
           SELECT f.*, r.id IS NOT NULL AS refill,
                  sum(CASE WHEN r.id IS NULL THEN f.max_in_flight ELSE 0 END) OVER (ORDER BY f.oldest, f.id) AS places
           FROM free f LEFT JOIN refills r ON r.id = f.id) t
         WHERE refill OR places <= $8
       ), picked AS (
         SELECT due.id, due.due_at FROM taken t
         CROSS JOIN LATERAL (
           SELECT d.id, d.due_at FROM deliveries d
           WHERE d.endpoint_id = t.id AND d.status = 'pending' AND d.due_at <= $3
           ORDER BY d.due_at
           LIMIT coalesce((SELECT quota FROM refills r WHERE r.id = t.id), $9)
           FOR UPDATE SKIP LOCKED) due
       ), claimed AS (
         UPDATE deliveries d SET locked_by = $2, locked_until = $4, due_at = $4
         FROM picked p
         WHERE d.id = p.id AND d.id = ANY(ARRAY(SELECT id FROM picked))
         RETURNING d.id, d.attempts, d.event_id, d.endpoint_id, p.due_at AS fell_due)
       SELECT ${endpointColumns('t')}, c.id AS delivery_id, c.attempts, c.event_id, (SELECT body FROM events WHERE id = c.event_id) AS body,
              -- Looked up only while traces are on: off, the statement reads what it read before they existed.
              CASE WHEN $10::boolean THEN (SELECT trace_parent FROM events WHERE id = c.event_id) END AS trace_parent
       FROM taken t
       LEFT JOIN claimed c ON c.endpoint_id = t.id
       ORDER BY t.id, c.fell_due, c.id`,
      [
        request.worker,
        request.claim,
        new Date(request.now),
        new Date(request.lockedUntil),
        locked.map((row) => row.id),
        refillIds,
        request.refills.map((refill) => refill.quota),
        request.room,
        request.quota,
        tracing.enabled,
      ],
    )
    const endpoints = new Map<string, LeasedEndpoint>()
    const deliveries: ClaimedDelivery[] = []
    for (const row of rows) {
      if (!endpoints.has(row.id)) endpoints.set(row.id, toLeasedEndpoint(row))
      if (row.delivery_id === null) continue
      deliveries.push({
        id: Number(row.delivery_id),
        claim: request.claim,
        attempts: row.attempts!,
        event: { id: row.event_id!, body: decodeEventBody(row.body!), traceParent: row.trace_parent },
        endpointId: row.id,
        lockedUntil: request.lockedUntil,
      })
    }
    const lockedIds = new Set(locked.map((row) => row.id))
    const lost = refillIds.filter((id) => lockedIds.has(id) && !endpoints.has(id))
    return { endpoints: [...endpoints.values()], deliveries, lost }
  })
}

/**
 * Renews the leases of deliveries the worker has claimed, to `lockedUntil`,
 * and returns those renewed. One missing was given up meanwhile (its
 * endpoint disabled or deleted), or its lease ran out and another claim
 * took it.
 */
export async function renewLeases(db: Queryable, deliveries: readonly Pick<ClaimedDelivery, 'id' | 'claim'>[], lockedUntil: number): Promise<Set<number>> {
  if (deliveries.length === 0) return new Set()
  const rows = await db.query<{ id: string }>(
    `UPDATE deliveries d SET locked_until = $3, due_at = $3
     FROM unnest($1::bigint[], $2::text[]) AS v(id, claim)
     WHERE d.id = v.id AND d.id = ANY($1::bigint[]) AND d.locked_by = v.claim AND d.status || '' = 'pending'
     RETURNING d.id`,
    [deliveries.map((delivery) => delivery.id), deliveries.map((delivery) => delivery.claim), new Date(lockedUntil)],
  )
  return new Set(rows.map((row) => Number(row.id)))
}

/** These endpoints as they are now (a changed URL, cap or secret), those that still receive. */
export async function receivingEndpoints(db: Queryable, ids: readonly string[]): Promise<LeasedEndpoint[]> {
  const rows = await db.query<EndpointColumns>(
    `SELECT ${endpointColumns('e')} FROM webhook_endpoints e WHERE e.id = ANY($1::text[]) AND e.enabled AND e.deleted_at IS NULL`,
    [ids],
  )
  return rows.map(toLeasedEndpoint)
}

/** Gives claimed deliveries back, due now, to whichever worker claims next; those no longer held by their claim are left alone. */
export async function handBack(tx: Queryable, deliveries: readonly Pick<ClaimedDelivery, 'id' | 'claim'>[], now: number): Promise<void> {
  if (deliveries.length === 0) return
  await tx.query(
    `UPDATE deliveries d SET locked_by = NULL, locked_until = NULL, due_at = $3
     FROM unnest($1::bigint[], $2::text[]) AS v(id, claim)
     WHERE d.id = v.id AND d.id = ANY($1::bigint[]) AND d.locked_by = v.claim AND d.status || '' = 'pending'`,
    [deliveries.map((delivery) => delivery.id), deliveries.map((delivery) => delivery.claim), new Date(now)],
  )
}

export interface AttemptRecord {
  at: number
  statusCode: number | null
  latencyMs: number
  error: string | null
  /** The answer's headers and body opening; left out when no answer came. */
  answer?: AnswerExcerpt
}

/** An answer as its column keeps it (migration 050). */
interface StoredAnswer {
  headers: Record<string, string>
  body: string
  body_truncated: boolean
}

const storedAnswer = (answer: AnswerExcerpt | undefined): string | null =>
  answer === undefined ? null : JSON.stringify({ headers: answer.headers, body: answer.body, body_truncated: answer.bodyTruncated } satisfies StoredAnswer)

const answerOf = (stored: StoredAnswer | null): AnswerExcerpt | null =>
  stored === null ? null : { headers: stored.headers, body: stored.body, bodyTruncated: stored.body_truncated }

/** One attempt of a delivery, and where it leaves the delivery: done (`succeeded`, or `failed` when it gives up) or due again at `retryAt`. */
export interface AttemptResult {
  delivery: Pick<ClaimedDelivery, 'id' | 'claim'>
  attempt: AttemptRecord
  next: { status: 'succeeded' | 'failed' } | { status: 'pending'; retryAt: number }
}

/**
 * Adds the attempts recorded (`moved`, with their `result`) to their
 * endpoints' hours (migration 025), a row per endpoint and hour, in key order
 * so that two statements never wait for each other in a circle. An
 * endpoint's deliveries are recorded by the one worker that holds it, so its
 * row is seldom waited for.
 */
const COUNT_ATTEMPTS_BY_ENDPOINT_HOUR = `INSERT INTO endpoint_hours AS h (endpoint_id, hour, attempts, succeeded, latency_ms_sum, latency_ms_max, latency_buckets)
       SELECT m.endpoint_id, date_bin('1 hour', r.attempted_at, timestamptz '2000-01-01 00:00:00Z') AS hour, count(*),
              count(*) FILTER (WHERE m.status = 'succeeded'), sum(r.latency_ms), max(r.latency_ms),
              ARRAY[${LATENCY_BOUNDS_MS.map((bound, n) => `count(*) FILTER (WHERE r.latency_ms ${n === 0 ? '' : `>= ${LATENCY_BOUNDS_MS[n - 1]} AND r.latency_ms `}< ${bound})`).join(', ')},
                    count(*) FILTER (WHERE r.latency_ms >= ${LATENCY_BOUNDS_MS.at(-1)})]
       FROM moved m JOIN result r ON r.id = m.id AND r.claim = m.claim
       GROUP BY 1, 2
       ORDER BY 1, 2
       ON CONFLICT (endpoint_id, hour) DO UPDATE SET
         attempts = h.attempts + excluded.attempts, succeeded = h.succeeded + excluded.succeeded,
         latency_ms_sum = h.latency_ms_sum + excluded.latency_ms_sum, latency_ms_max = greatest(h.latency_ms_max, excluded.latency_ms_max),
         latency_buckets = ARRAY(SELECT a + b FROM unnest(h.latency_buckets, excluded.latency_buckets) WITH ORDINALITY AS u(a, b, n) ORDER BY n)`

/**
 * Logs attempts and moves their deliveries on, many in one statement, each
 * only while its claim still holds it. The attempt that settles a delivery
 * (it succeeded, or it gives up) is written on the delivery's row as it is
 * settled (migration 017); one after which it is due again, to
 * delivery_attempts. Returns the deliveries recorded: one missing was given
 * up meanwhile (its endpoint disabled or deleted), or its lease ran out and
 * another claim took it (which logs its own attempt).
 */
export async function recordAttempts(tx: Queryable, results: readonly AttemptResult[]): Promise<Set<number>> {
  if (results.length === 0) return new Set()
  const rows = await tx.query<{ id: string }>(
    `WITH result AS (
       SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::timestamptz[], $5::timestamptz[], $6::int[], $7::int[], $8::text[], $9::jsonb[])
         AS r(id, claim, status, retry_at, attempted_at, status_code, latency_ms, error, answer)
     ), moved AS (
       UPDATE deliveries d SET attempts = d.attempts + 1, status = r.status, due_at = coalesce(r.retry_at, d.due_at),
              completed_at = CASE WHEN r.status = 'pending' THEN NULL ELSE r.attempted_at END, locked_by = NULL, locked_until = NULL,
              final_status_code = CASE WHEN r.status = 'pending' THEN NULL ELSE r.status_code END,
              final_latency_ms = CASE WHEN r.status = 'pending' THEN NULL ELSE r.latency_ms END,
              final_error = CASE WHEN r.status = 'pending' THEN NULL ELSE r.error END,
              final_response = CASE WHEN r.status = 'pending' THEN NULL ELSE r.answer END
       FROM result r
       WHERE d.id = r.id AND d.id = ANY($1::bigint[]) AND d.locked_by = r.claim AND d.status || '' = 'pending'
       RETURNING d.id, d.endpoint_id, d.attempts, d.status, r.claim
     ), logged AS (
       INSERT INTO delivery_attempts (delivery_id, endpoint_id, attempt, attempted_at, status_code, latency_ms, error, response)
       SELECT m.id, m.endpoint_id, m.attempts, r.attempted_at, r.status_code, r.latency_ms, r.error, r.answer
       FROM moved m JOIN result r ON r.id = m.id AND r.claim = m.claim
       WHERE m.status = 'pending'
     ), counted AS (
       ${COUNT_ATTEMPTS_BY_ENDPOINT_HOUR}
     )
     SELECT id FROM moved`,
    [
      results.map((result) => result.delivery.id),
      results.map((result) => result.delivery.claim),
      results.map((result) => result.next.status),
      results.map((result) => (result.next.status === 'pending' ? new Date(result.next.retryAt) : null)),
      results.map((result) => new Date(result.attempt.at)),
      results.map((result) => result.attempt.statusCode),
      results.map((result) => Math.round(result.attempt.latencyMs)),
      results.map((result) => result.attempt.error),
      results.map((result) => storedAnswer(result.attempt.answer)),
    ],
  )
  return new Set(rows.map((row) => Number(row.id)))
}

interface EndpointColumns {
  id: string
  url: string
  max_in_flight: number
  secret: string
  previous_secret: string | null
  previous_secret_until: Date | null
}

const endpointColumns = (table: string) =>
  ['id', 'url', 'max_in_flight', 'secret', 'previous_secret', 'previous_secret_until'].map((column) => `${table}.${column}`).join(', ')

const toLeasedEndpoint = (row: EndpointColumns): LeasedEndpoint => ({
  id: row.id,
  url: row.url,
  maxInFlight: row.max_in_flight,
  secret: row.secret,
  previousSecret: row.previous_secret,
  previousSecretUntil: row.previous_secret_until?.getTime() ?? null,
})

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

/**
 * Gives up the deliveries still pending to endpoints that no longer receive
 * (disabled or deleted). A disable gives up what is pending as it commits,
 * but the settlement of a call committing beside it, which read the endpoint
 * as receiving, can add one after: never sent, it would hold its task's
 * history back from deletion for ever. Answers how many were given up.
 */
export async function giveUpUnreceivable(db: Queryable, now: number): Promise<number> {
  const rows = await db.query<{ id: string }>(
    `UPDATE deliveries SET status = 'failed', completed_at = $1, locked_by = NULL, locked_until = NULL
     WHERE status = 'pending' AND endpoint_id = ANY(ARRAY(SELECT id FROM webhook_endpoints WHERE NOT enabled OR deleted_at IS NOT NULL))
     RETURNING id`,
    [new Date(now)],
  )
  return rows.length
}

/** When the deliverer next has something to do. */
export async function nextDeliveryDueAt(db: Queryable): Promise<number | undefined> {
  const rows = await db.query<{ due_at: Date | null }>(
    `WITH RECURSIVE ${QUEUED_ENDPOINTS}
     SELECT min(next.due_at) AS due_at FROM queued JOIN webhook_endpoints e ON e.id = queued.id
     CROSS JOIN LATERAL (SELECT due_at FROM deliveries WHERE endpoint_id = queued.id AND status = 'pending' ORDER BY due_at LIMIT 1) next
     WHERE e.enabled AND e.deleted_at IS NULL`,
  )
  return rows[0]?.due_at?.getTime()
}

/**
 * Sends an event to one of its organization's endpoints now: a delivery of
 * it still pending there is brought forward (unless a send is in flight), so
 * that asking twice never queues it twice; otherwise a new delivery is made,
 * and the event lists it. Only while the endpoint receives: false, doing
 * nothing, once it is disabled or deleted. Its row is locked (FOR SHARE) so
 * that a disable waits for this to commit, and then gives up what it made.
 */
export async function redeliver(db: Database, orgId: string, eventId: string, endpointId: string, now: number): Promise<boolean> {
  return db.transaction(async (tx) => {
    // The event's row is locked in a statement of its own: a redelivery that waited on another's lock
    // then sees, in the next statement's snapshot, the delivery the other made, and makes no second one.
    const [event] = await tx.query<{ delivery_ids: string[] }>('SELECT delivery_ids FROM events WHERE id = $1 FOR UPDATE', [eventId])
    if (event === undefined) return false
    const [receiving] = await tx.query(
      'SELECT 1 FROM webhook_endpoints WHERE id = $1 AND org_id = $2 AND enabled AND deleted_at IS NULL FOR SHARE',
      [endpointId, orgId],
    )
    if (receiving === undefined) return false
    await tx.query(
      `WITH hurried AS (
         UPDATE deliveries SET due_at = $3
         WHERE id = ANY($4::bigint[]) AND endpoint_id = $2 AND status || '' = 'pending' AND (locked_until IS NULL OR locked_until <= $3)
       ), made AS (
         INSERT INTO deliveries (event_id, endpoint_id, status, due_at, created_at)
         SELECT $1, $2, 'pending', $3, $3
         WHERE NOT EXISTS (SELECT 1 FROM deliveries WHERE id = ANY($4::bigint[]) AND endpoint_id = $2 AND status || '' = 'pending')
         RETURNING id
       )
       UPDATE events SET delivery_ids = delivery_ids || ARRAY(SELECT id FROM made) WHERE id = $1 AND EXISTS (SELECT 1 FROM made)`,
      [eventId, endpointId, new Date(now), event.delivery_ids],
    )
    return true
  })
}

/** What a recovery did: how many events it queued, and how far it read (undefined: it read nothing). */
export interface Recovered {
  queued: number
  /** How many it brought forward of those queued: deliveries waiting for a retry, sent now instead of a new one. */
  broughtForward: number
  /** Whether it read as many deliveries as it was allowed, of either kind: more may follow. */
  full: boolean
  /** The last failed delivery it read, where the next call goes on from (undefined: none). */
  last: RecoveryPosition | undefined
}

/**
 * Sends again, in the transaction `tx`, each event not delivered to the
 * endpoint in the window, at most `limit` of each kind:
 * - given up: the failed deliveries after `from` in (completed_at, id) order
 *   and completed before `until`;
 * - waiting for a retry: the pending deliveries that were attempted, whose
 *   last attempt failed at or after `since` and before `until`, and which are
 *   due later (a retry maybe hours away on the schedule) and held by no
 *   claim. They are brought forward, not doubled: the delivery waiting is
 *   the one that falls due now, and its attempts go on counting.
 * Each event goes once, however many of its deliveries there failed, and not
 * at all when one of them succeeded or is pending without a failed attempt
 * to wait out (another recovery's, a redelivery's, one being attempted now),
 * or when the endpoint no longer receives its type. What is queued falls due
 * now, a microsecond apart in the order the events were recorded (commit
 * order, as the events list), for the claim takes an endpoint's due
 * deliveries by due_at alone. Undefined, doing nothing, when the endpoint no
 * longer receives (disabled or deleted).
 *
 * Three statements. The first reads the failed deliveries through
 * deliveries_failed_by_endpoint_and_completion (migration 032) and the
 * waiting ones through deliveries_pending_by_endpoint (their last attempt by
 * delivery_attempts' primary key), and locks their events FOR UPDATE in id
 * order, as a redelivery locks its event before its endpoint: a redelivery
 * or another recovery of one of them waits for this to commit, and then sees
 * what it made. The second locks the endpoint FOR SHARE, so that a disable
 * waits and then gives up what this queued. The third, whose snapshot is
 * taken with those locks held, makes the deliveries and brings forward the
 * waiting ones; a claim that took one meanwhile keeps it (the update
 * requires no live lease), and that attempt is its sending.
 *
 * EXPLAIN ANALYZE on PostgreSQL 15 under plan_cache_mode = force_generic_plan,
 * 400,000 deliveries to 50 endpoints, 1,728 of one failed in the window: the
 * first reads an Index Scan of deliveries_failed_by_endpoint_and_completion
 * under the Limit (Index Cond: endpoint_id = $1, ROW(completed_at, id) >
 * ROW($2, $3), completed_at < $4), and its events by events_pkey (0.15 s,
 * most of it locking them); the third finds the events by events_pkey and
 * their deliveries by deliveries_pkey (through delivery_ids), 0.14 s.
 */
export async function recoverFailedDeliveries(
  tx: Queryable,
  request: { orgId: string; endpointId: string; since: number; from: RecoveryPosition; until: number; limit: number; now: number },
): Promise<Recovered | undefined> {
  const [read] = await tx.query<{ failed: number; waiting: number; last_completed_at: Date | null; last_id: string | null; event_ids: string[] }>(
    `WITH failed AS MATERIALIZED (
       SELECT d.id, d.event_id, d.completed_at FROM deliveries d
       WHERE d.endpoint_id = $1 AND d.status = 'failed' AND (d.completed_at, d.id) > ($2::timestamptz, $3::bigint) AND d.completed_at < $4
       ORDER BY d.completed_at, d.id
       LIMIT $5
     ), waiting AS MATERIALIZED (
       -- Only those the third statement brings forward: of a type the endpoint receives (a webhook.test is of none),
       -- so that a call that read as many as it may has brought them all forward, and the next reads on.
       SELECT d.event_id FROM deliveries d
       JOIN events e ON e.id = d.event_id
       WHERE d.endpoint_id = $1 AND d.status = 'pending' AND d.due_at > $7 AND d.attempts > 0 AND (d.locked_until IS NULL OR d.locked_until <= $7)
         AND EXISTS (SELECT 1 FROM delivery_attempts a WHERE a.delivery_id = d.id AND a.attempt = d.attempts AND a.attempted_at >= $8 AND a.attempted_at < $4)
         AND e.type = ANY((SELECT events FROM webhook_endpoints WHERE id = $1)::text[])
       ORDER BY d.due_at
       LIMIT $5
     ), locked AS (
       SELECT e.id FROM events e WHERE e.id IN (SELECT event_id FROM failed UNION SELECT event_id FROM waiting) AND e.org_id = $6 ORDER BY e.id FOR UPDATE
     ), last AS (
       SELECT completed_at, id FROM failed ORDER BY completed_at DESC, id DESC LIMIT 1
     )
     SELECT (SELECT count(*)::int FROM failed) AS failed, (SELECT count(*)::int FROM waiting) AS waiting,
            (SELECT completed_at FROM last) AS last_completed_at, (SELECT id FROM last) AS last_id,
            ARRAY(SELECT id FROM locked) AS event_ids`,
    [
      request.endpointId,
      new Date(request.from.completedAt),
      request.from.deliveryId,
      new Date(request.until),
      request.limit,
      request.orgId,
      new Date(request.now),
      new Date(request.since),
    ],
  )
  const [receiving] = await tx.query<{ events: string[] }>(
    'SELECT events FROM webhook_endpoints WHERE id = $1 AND org_id = $2 AND enabled AND deleted_at IS NULL FOR SHARE',
    [request.endpointId, request.orgId],
  )
  if (receiving === undefined) return undefined
  const [made] = await tx.query<{ queued: number; brought_forward: number }>(
    `WITH due AS (
       SELECT e.id, w.id AS waiting_id, row_number() OVER (ORDER BY e.txid, e.id) AS n, count(*) OVER () AS total
       FROM events e
       LEFT JOIN LATERAL (
         SELECT o.id FROM deliveries o
         WHERE o.id = ANY(e.delivery_ids) AND o.endpoint_id = $1 AND o.status = 'pending' AND o.due_at > $3 AND o.attempts > 0
           AND (o.locked_until IS NULL OR o.locked_until <= $3)
         LIMIT 1
       ) w ON true
       WHERE e.id = ANY($2::text[]) AND e.type = ANY($4::text[])
         AND (w.id IS NOT NULL OR NOT EXISTS (SELECT 1 FROM deliveries o WHERE o.id = ANY(e.delivery_ids) AND o.endpoint_id = $1 AND o.status IN ('pending', 'succeeded')))
     ), brought_forward AS (
       UPDATE deliveries d SET due_at = $3::timestamptz - (due.total - due.n) * interval '1 microsecond'
       FROM due
       WHERE d.id = due.waiting_id AND d.status || '' = 'pending' AND (d.locked_until IS NULL OR d.locked_until <= $3)
       RETURNING d.id
     ), made AS (
       INSERT INTO deliveries (event_id, endpoint_id, status, due_at, created_at)
       SELECT id, $1, 'pending', $3::timestamptz - (total - n) * interval '1 microsecond', $3 FROM due WHERE waiting_id IS NULL ORDER BY n
       RETURNING id, event_id
     ), listed AS (
       UPDATE events e SET delivery_ids = e.delivery_ids || m.id FROM made m WHERE e.id = m.event_id
       RETURNING e.id
     )
     SELECT (SELECT count(*)::int FROM listed) + (SELECT count(*)::int FROM brought_forward) AS queued,
            (SELECT count(*)::int FROM brought_forward) AS brought_forward`,
    [request.endpointId, read!.event_ids, new Date(request.now), receiving.events],
  )
  return {
    queued: made!.queued,
    broughtForward: made!.brought_forward,
    full: read!.failed === request.limit || read!.waiting === request.limit,
    last: read!.last_id === null ? undefined : { completedAt: read!.last_completed_at!.getTime(), deliveryId: Number(read!.last_id) },
  }
}

export interface DeliveryLog {
  endpointId: string
  status: 'pending' | 'succeeded' | 'failed'
  nextAttemptAt: string | null
  attempts: { attempt: number; at: string; statusCode: number | null; latencyMs: number; error: string | null; answer: AnswerExcerpt | null }[]
}

/** Every delivery of an event, with its attempts, oldest first. */
export async function deliveriesOf(db: Queryable, eventId: string): Promise<DeliveryLog[]> {
  return (await deliveriesOfEvents(db, [eventId])).get(eventId) ?? []
}

/** Every delivery of each of these events, with its attempts, oldest first, in one statement: by event id. */
export async function deliveriesOfEvents(db: Queryable, eventIds: readonly string[]): Promise<Map<string, DeliveryLog[]>> {
  const byEvent = new Map<string, DeliveryLog[]>()
  if (eventIds.length === 0) return byEvent
  const rows = await db.query<{
    event_id: string
    id: string
    endpoint_id: string
    status: DeliveryLog['status']
    due_at: Date
    attempt: number | null
    attempted_at: Date | null
    status_code: number | null
    latency_ms: number | null
    error: string | null
    response: StoredAnswer | null
  }>(
    `SELECT e.id AS event_id, d.id, d.endpoint_id, d.status, d.due_at, a.attempt, a.attempted_at, a.status_code, a.latency_ms, a.error, a.response
     FROM events e
     CROSS JOIN LATERAL unnest(e.delivery_ids) AS listed(id)
     JOIN deliveries d ON d.id = listed.id
     LEFT JOIN LATERAL (
       SELECT attempt, attempted_at, status_code, latency_ms, error, response FROM delivery_attempts WHERE delivery_id = d.id
       UNION ALL
       -- The attempt that settled it, on its own row (migration 017).
       SELECT d.attempts, d.completed_at, d.final_status_code, d.final_latency_ms, d.final_error, d.final_response WHERE d.final_latency_ms IS NOT NULL
     ) a ON true
     WHERE e.id = ANY($1::text[])
     ORDER BY d.id, a.attempt`,
    [eventIds],
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
      byEvent.set(row.event_id, [...(byEvent.get(row.event_id) ?? []), log])
    }
    if (row.attempt !== null) {
      log.attempts.push({
        attempt: row.attempt,
        at: isoOrNull(row.attempted_at)!,
        statusCode: row.status_code,
        latencyMs: row.latency_ms!,
        error: row.error,
        answer: answerOf(row.response),
      })
    }
  }
  return byEvent
}
