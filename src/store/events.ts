/** The outbox: events written in the transaction of the change they report. */
import { countEvents } from '../domain/dailyCounts.ts'
import { countReach } from '../domain/reachCounts.ts'
import type { OrganizationEvent, OutboxEvent } from '../domain/events.ts'
import { type EventType, TEST_EVENT_TYPE } from '../domain/types.ts'
import type { Queryable } from './database.ts'
import { countChangesParameter, insertCountChanges } from './dailyCounts.ts'
import { insertReachChanges, reachChangesParameter } from './reachCounts.ts'
import type { ClaimedDelivery } from './deliveries.ts'
import { decodeEventBody, encodeEventBody } from './eventBodies.ts'
import { tracing } from '../tracing.ts'

/**
 * A claim the writer's own deliverer makes on the deliveries written to the
 * endpoints it holds, so that they go to its queues as they commit rather
 * than wait for a claim round of their own.
 */
export interface HandOff {
  worker: string
  /** `${worker}.${n}`, as for a claim round. */
  claim: string
  now: number
  lockedUntil: number
  /** The endpoints the deliverer holds, each with the deliveries it has claimed there and not yet recorded. */
  endpoints: readonly { id: string; claimed: readonly number[] }[]
}

export interface WrittenDeliveries {
  /** Written claimed by the hand-off's claim, in the order of their events: its deliverer's to send. */
  claimed: ClaimedDelivery[]
  /** How many were written due now, for whichever deliverer claims them. */
  due: number
}

/**
 * Writes the events and, in the same statement, their deliveries: one to each
 * enabled endpoint of the event's organization subscribed to its type, and
 * what they count by day (domain/dailyCounts.ts), as rows of their own. Each
 * event lists the deliveries written with it.
 *
 * With a hand-off, those to the endpoints its deliverer holds are written
 * claimed by it, where one of its claims there still runs: at most one
 * worker's claims on an endpoint run at once (store/deliveries.ts), so no
 * other worker holds the endpoint then. Each endpoint's row is first locked,
 * FOR SHARE, in a statement of its own: settlements share the lock, but it
 * keeps out every claim round (which locks FOR NO KEY UPDATE, skipping what
 * is locked) until the commit, so that the claims seen running still hold
 * the endpoint when the new ones appear, even if they are recorded
 * meanwhile. (Looking instead for another worker's running claim, as a claim
 * round does, steps over every claim of the last lease still in the index,
 * live or dead: at 2,000 webhooks/s that took a settlement's insert from
 * about 5 to 15-25 ms.)
 */
export async function insertEvents(tx: Queryable, events: readonly OrganizationEvent[], handOff?: HandOff): Promise<WrittenDeliveries> {
  if (events.length === 0) return { claimed: [], due: 0 }
  const handing = handOff !== undefined && handOff.endpoints.length > 0
  if (handing) {
    // The ids as JSON, as the claim ids below, so that the statement keeps a generic plan: as an array it was planned anew at every call.
    await tx.query('SELECT id FROM webhook_endpoints WHERE id = ANY(ARRAY(SELECT jsonb_array_elements_text($1::jsonb))) ORDER BY id FOR SHARE', [
      JSON.stringify(handOff.endpoints.map((endpoint) => endpoint.id)),
    ])
  }
  // Each event's JSON made once: a delivery handed off sends it, and the table keeps it deflated
  // (store/eventBodies.ts), in base64, which the driver sends as it is (no character of it is escaped in an array).
  const bodies = events.map(({ event }) => JSON.stringify(event))
  const stored = bodies.map((body) => encodeEventBody(body).toString('base64'))
  // Read only while traces are on: off, the column is written NULL from an empty array.
  const traceParents = tracing.enabled ? await traceParentsOf(tx, events) : []
  const counted = countsByOrganization(events)
  const rows = await tx.query<{ id: string; event_id: string; endpoint_id: string; claimed: boolean }>(
    `WITH input AS (
       SELECT v.id, v.org_id, v.type, v.task_id, v.interaction_id, decode(v.body, 'base64') AS body, v.created_at, v.trace_parent
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[], $12::text[], $13::text[], $14::text[])
         AS v(id, org_id, type, body, created_at, trace_parent, task_id, interaction_id)
     ), handed AS MATERIALIZED (
       -- Looked up one by one by primary key, whatever the size the table had when this was planned.
       -- The ids come as JSON: the planner takes an array's length from a custom plan's constant (a few)
       -- and a generic plan's parameter (10), so that the generic plan always looked dearer and the
       -- statement was planned anew at every call (about 0.7 ms each); it cannot see into JSON either way.
       SELECT DISTINCT c.endpoint_id AS id FROM jsonb_array_elements_text($6::jsonb) AS o(id)
       CROSS JOIN LATERAL (SELECT * FROM deliveries c WHERE c.id = o.id::bigint LIMIT 1) c
       WHERE c.status = 'pending' AND starts_with(c.locked_by, $7::text || '.') AND c.due_at > $8::timestamptz
     ), delivered AS (
       INSERT INTO deliveries (event_id, endpoint_id, status, due_at, locked_by, locked_until, created_at)
       SELECT e.id, w.id, 'pending',
              CASE WHEN h.id IS NULL THEN e.created_at ELSE $9 END, CASE WHEN h.id IS NULL THEN NULL ELSE $10::text END,
              CASE WHEN h.id IS NULL THEN NULL ELSE $9 END, e.created_at
       FROM input e
       JOIN webhook_endpoints w ON w.org_id = e.org_id AND w.enabled AND w.deleted_at IS NULL AND e.type = ANY(w.events)
       LEFT JOIN handed h ON h.id = w.id
       ORDER BY e.id
       RETURNING id, event_id, endpoint_id, locked_by IS NOT NULL AS claimed
     ), written AS (
       -- Each event lists its deliveries (migration 019): no table has to be indexed by event to find them.
       INSERT INTO events (id, org_id, type, task_id, interaction_id, body, created_at, delivery_ids, trace_parent)
       SELECT e.id, e.org_id, e.type, e.task_id, e.interaction_id, e.body, e.created_at, coalesce(d.ids, '{}'), e.trace_parent
       FROM input e
       LEFT JOIN (SELECT event_id, array_agg(id ORDER BY id) AS ids FROM delivered GROUP BY event_id) d ON d.event_id = e.id
     ), counted AS (
       ${insertCountChanges('$11')}
     ), reach_counted AS (
       ${insertReachChanges('$15')}
     )
     SELECT id, event_id, endpoint_id, claimed FROM delivered`,
    [
      events.map(({ event }) => event.id),
      events.map(({ orgId }) => orgId),
      events.map(({ event }) => event.type),
      stored,
      events.map(({ event }) => event.timestamp),
      JSON.stringify(handing ? handOff.endpoints.flatMap((endpoint) => endpoint.claimed) : []),
      handOff?.worker ?? '',
      handOff === undefined ? null : new Date(handOff.now),
      handOff === undefined ? null : new Date(handOff.lockedUntil),
      handOff?.claim ?? null,
      countChangesParameter(counted.daily),
      traceParents,
      events.map(({ event }) => namedTask(event)),
      events.map(({ event }) => namedInteraction(event)),
      reachChangesParameter(counted.reach),
    ],
  )
  const byId = new Map(events.map(({ event }, index) => [event.id, { id: event.id, body: bodies[index]!, traceParent: traceParents[index] ?? null }]))
  const claimed: ClaimedDelivery[] = []
  for (const row of rows) {
    if (!row.claimed) continue
    claimed.push({
      id: Number(row.id),
      claim: handOff!.claim,
      attempts: 0,
      event: byId.get(row.event_id)!,
      endpointId: row.endpoint_id,
      lockedUntil: handOff!.lockedUntil,
    })
  }
  return { claimed: claimed.sort((a, b) => a.id - b.id), due: rows.length - claimed.length }
}

/** The trace parent recorded with each event's trigger (null for none), in the events' order. */
async function traceParentsOf(tx: Queryable, events: readonly OrganizationEvent[]): Promise<(string | null)[]> {
  const triggerIds = events.map(({ event }) => triggerOf(event))
  const rows = await tx.query<{ id: string; trace_parent: string }>(
    'SELECT id, trace_parent FROM triggers WHERE id = ANY($1::text[]) AND trace_parent IS NOT NULL',
    [[...new Set(triggerIds.filter((id) => id !== null))]],
  )
  const byTrigger = new Map(rows.map((row) => [row.id, row.trace_parent]))
  return triggerIds.map((id) => (id === null ? null : (byTrigger.get(id) ?? null)))
}

/** The trigger an event is about: none for an inbound interaction's, or a test's. */
function triggerOf(event: OutboxEvent): string | null {
  const id = event.data.trigger_id
  return typeof id === 'string' ? id : null
}

/** What the events count, daily and of reach, organization by organization. */
function countsByOrganization(events: readonly OrganizationEvent[]) {
  const byOrg = new Map<string, OutboxEvent[]>()
  for (const { orgId, event } of events) {
    const ofOrg = byOrg.get(orgId)
    if (ofOrg === undefined) byOrg.set(orgId, [event])
    else ofOrg.push(event)
  }
  const ofEach = <Count>(count: (events: OutboxEvent[]) => Count[]) => [...byOrg].flatMap(([orgId, ofOrg]) => count(ofOrg).map((each) => ({ orgId, count: each })))
  return { daily: ofEach(countEvents), reach: ofEach(countReach) }
}

/**
 * An organization's events in the order their transactions committed (but
 * the tests sent to its endpoints, which report nothing), after
 * the event `after`, leaving out every transaction still in progress: a page
 * never passes an event that is yet to appear. Undefined when `after` is not
 * one of the organization's events.
 */
export async function listEvents(
  db: Queryable,
  orgId: string,
  options: { type?: EventType; after?: string; limit: number },
): Promise<OutboxEvent[] | undefined> {
  const rows = await db.query<{ body: Uint8Array }>(
    `WITH cursor AS (SELECT txid, id FROM events WHERE org_id = $1 AND id = $3)
     SELECT e.body FROM events e
     WHERE e.org_id = $1 AND ($2::text IS NULL OR e.type = $2) AND e.type <> '${TEST_EVENT_TYPE}'
       AND ($3::text IS NULL OR (e.txid, e.id) > (SELECT txid, id FROM cursor))
       AND e.txid < pg_snapshot_xmin(pg_current_snapshot())
     ORDER BY e.txid, e.id
     LIMIT $4`,
    [orgId, options.type ?? null, options.after ?? null, options.limit],
  )
  if (options.after !== undefined && rows.length === 0 && (await findEvent(db, orgId, options.after)) === undefined) return undefined
  return rows.map(eventOf)
}

/**
 * The organization's newest events, newest first (at most `limit`): where a
 * reader that wants only what is recorded from now on starts, `after` the
 * first of them. Only events of committed transactions older than every one
 * still open, as listEvents reads them, so that no event is written behind it.
 */
export async function listNewestEvents(db: Queryable, orgId: string, options: { type?: EventType; limit: number }): Promise<OutboxEvent[]> {
  const rows = await db.query<{ body: Uint8Array }>(
    `SELECT e.body FROM events e
     WHERE e.org_id = $1 AND ($2::text IS NULL OR e.type = $2) AND e.type <> '${TEST_EVENT_TYPE}'
       AND e.txid < pg_snapshot_xmin(pg_current_snapshot())
     ORDER BY e.txid DESC, e.id DESC
     LIMIT $3`,
    [orgId, options.type ?? null, options.limit],
  )
  return rows.map(eventOf)
}

/**
 * The most of a task's events read at once: one per attempt (at most 20) and
 * its completion, and one per inbound reply tied to it, which a person could
 * send without end: the first ones tell the story.
 */
export const MAX_TASK_EVENTS = 200

/** The first MAX_TASK_EVENTS events of an organization's task, oldest first (event ids grow with time). */
export async function listTaskEvents(db: Queryable, orgId: string, taskId: string): Promise<OutboxEvent[]> {
  const rows = await db.query<{ body: Uint8Array }>(
    `SELECT body FROM events WHERE task_id = $2 AND org_id = $1 ORDER BY id LIMIT ${MAX_TASK_EVENTS}`,
    [orgId, taskId],
  )
  return rows.map(eventOf)
}

export async function findEvent(db: Queryable, orgId: string, id: string): Promise<OutboxEvent | undefined> {
  const rows = await db.query<{ body: Uint8Array }>('SELECT body FROM events WHERE org_id = $1 AND id = $2', [orgId, id])
  return rows[0] === undefined ? undefined : eventOf(rows[0])
}

function eventOf(row: { body: Uint8Array }): OutboxEvent {
  return JSON.parse(decodeEventBody(row.body)) as OutboxEvent
}

/** The task an event names, which it is found by (events_by_task); null for one that names none (a webhook.test, a reply that answered no task). */
function namedTask(event: OutboxEvent): string | null {
  return typeof event.data.task_id === 'string' ? event.data.task_id : null
}

/**
 * The interaction an event names when it names no task (a message that
 * answered none), which it is found by (events_of_taskless_interactions);
 * the others are found by their task, and keep 31 bytes less.
 */
function namedInteraction(event: OutboxEvent): string | null {
  return namedTask(event) === null && typeof event.data.interaction_id === 'string' ? event.data.interaction_id : null
}

/**
 * Writes a webhook.test event with one delivery to its endpoint, due now,
 * while the endpoint receives: false, writing nothing, when it is disabled or
 * deleted. The endpoint's row is locked (FOR SHARE) so that a disable cannot
 * commit between this check and the delivery: it waits, and then gives the
 * delivery up with what else is pending there.
 */
export async function insertTestEvent(db: Queryable, orgId: string, endpointId: string, event: OutboxEvent): Promise<boolean> {
  const rows = await db.query<{ id: string }>(
    `WITH target AS (
       SELECT id FROM webhook_endpoints WHERE id = $2 AND org_id = $3 AND enabled AND deleted_at IS NULL FOR SHARE
     ), delivered AS (
       INSERT INTO deliveries (event_id, endpoint_id, status, due_at, created_at)
       SELECT $1, id, 'pending', $5, $5 FROM target
       RETURNING id
     )
     INSERT INTO events (id, org_id, type, body, created_at, delivery_ids)
     SELECT $1, $3, $4, $6, $5, ARRAY(SELECT id FROM delivered)
     WHERE EXISTS (SELECT 1 FROM delivered)
     RETURNING id`,
    [event.id, endpointId, orgId, event.type, event.timestamp, encodeEventBody(JSON.stringify(event))],
  )
  return rows.length > 0
}

/** One try of `cli listen` to forward an event to its local receiver, as listen reported it. */
export interface ListenForward {
  at: string
  /** The local receiver's answer; null when none came (see error). */
  statusCode: number | null
  latencyMs: number
  error: string | null
}

/** How many of an event's forwards by listen are kept, the newest: one run tries an event at most five times. */
export const LISTEN_FORWARDS_KEPT = 10

interface StoredForward {
  at: string
  status_code: number | null
  latency_ms: number
  error: string | null
}

/**
 * Adds a forward by listen to the organization's event (migration 050),
 * keeping its LISTEN_FORWARDS_KEPT newest. False when the organization has
 * no such event.
 */
export async function recordListenForward(db: Queryable, orgId: string, eventId: string, forward: ListenForward): Promise<boolean> {
  const stored: StoredForward = { at: forward.at, status_code: forward.statusCode, latency_ms: forward.latencyMs, error: forward.error }
  const rows = await db.query(
    `UPDATE events SET listen_forwards = (
       SELECT jsonb_agg(f.forward ORDER BY f.n) FROM jsonb_array_elements(coalesce(listen_forwards, '[]') || jsonb_build_array($3::jsonb)) WITH ORDINALITY AS f(forward, n)
       WHERE f.n > coalesce(jsonb_array_length(listen_forwards), 0) + 1 - ${LISTEN_FORWARDS_KEPT})
     WHERE org_id = $1 AND id = $2
     RETURNING 1`,
    [orgId, eventId, JSON.stringify(stored)],
  )
  return rows.length > 0
}

/** What listen reported of forwarding each of these events, oldest first, by event id (none for an event it never forwarded). */
export async function listenForwardsOf(db: Queryable, eventIds: readonly string[]): Promise<Map<string, ListenForward[]>> {
  if (eventIds.length === 0) return new Map()
  const rows = await db.query<{ id: string; listen_forwards: StoredForward[] }>(
    'SELECT id, listen_forwards FROM events WHERE id = ANY($1::text[]) AND listen_forwards IS NOT NULL',
    [eventIds],
  )
  return new Map(
    rows.map((row) => [
      row.id,
      row.listen_forwards.map((forward) => ({ at: forward.at, statusCode: forward.status_code, latencyMs: forward.latency_ms, error: forward.error })),
    ]),
  )
}
