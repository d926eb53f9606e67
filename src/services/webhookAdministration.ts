/**
 * Webhook endpoints and events, as the operator (admin API) and an
 * organization (client API, scope webhooks:manage) manage them: both call
 * these, for one organization at a time.
 */
import { type Actor, auditedUrl } from '../domain/audit.ts'
import { ApiError, ValidationFailed, valueError } from '../domain/errors.ts'
import { isId, newId } from '../domain/ids.ts'
import { addCounts, healthWindowStart, type LatencySummary, latencySummary, successRate } from '../domain/endpointHealth.ts'
import { EVENT_TYPES, type EventType, TEST_EVENT_TYPE, type WebhookEndpoint } from '../domain/types.ts'
import {
  MAX_RECOVERED_PER_CALL,
  readRecoveryCursor,
  recoveryCursor,
  recoveryStart,
  type RecoveryProblem,
  recoveryWindowProblems,
} from '../domain/webhookRecovery.ts'
import type { Database } from '../store/database.ts'
import { deliveriesOf, deliveriesOfEvents, type DeliveryLog, giveUpPending, recoverFailedDeliveries, redeliver } from '../store/deliveries.ts'
import { type OutboxEvent, webhookTestEvent } from '../domain/events.ts'
import { endpointHours, type FailedAttempt, lastFailures } from '../store/endpointHealth.ts'
import {
  findEvent,
  insertTestEvent,
  type ListenForward,
  listenForwardsOf,
  listEvents,
  listNewestEvents,
  listTaskEvents,
  recordListenForward,
} from '../store/events.ts'
import { findOrganization } from '../store/organizations.ts'
import { taskExists } from '../store/tasks.ts'
import { deleteEndpoint, findEndpoint, insertEndpoint, listEndpoints, rotateSecret, updateEndpoint } from '../store/webhookEndpoints.ts'
import { webhookUrlProblem } from '../webhooks/urlSafety.ts'
import { newWebhookSecret } from '../webhooks/signing.ts'
import { audited } from './auditTrail.ts'

/** After a rotation the previous secret keeps signing this long, so receivers can switch without losing a webhook. */
const PREVIOUS_SECRET_MS = 24 * 3_600_000
/**
 * Webhooks in flight to one endpoint at once, unless its owner says
 * otherwise: few enough that a receiver of modest capacity keeps up, and at
 * most MAX_IN_FLIGHT, each a connection the deliverer keeps open to it.
 */
export const DEFAULT_MAX_IN_FLIGHT = 4
export const MAX_IN_FLIGHT = 50

export interface WebhookOperations {
  db: Database
  now: () => number
  allowPrivateWebhookUrls: boolean
  /** Told when deliveries were added by hand, so they go at once. */
  onRedeliver: () => void
}

const isoNow = (ops: WebhookOperations) => new Date(ops.now()).toISOString()

function checkUrl(ops: WebhookOperations, url: string): void {
  const problem = webhookUrlProblem(url, ops.allowPrivateWebhookUrls)
  if (problem !== undefined) throw new ValidationFailed([valueError(['body', 'url'], url, problem)])
}

function checkEvents(events: EventType[] | undefined): void {
  if (events !== undefined && events.length === 0) {
    throw new ValidationFailed([valueError(['body', 'events'], events, 'events must name at least one event type; leave it out for all')])
  }
}

export async function createEndpoint(
  ops: WebhookOperations,
  actor: Actor,
  orgId: string,
  input: { url: string; events?: EventType[]; max_in_flight?: number },
): Promise<{ endpoint: WebhookEndpoint; secret: string }> {
  checkUrl(ops, input.url)
  checkEvents(input.events)
  const now = isoNow(ops)
  const endpoint: WebhookEndpoint = {
    id: newId('webhookEndpoint', ops.now()),
    orgId,
    url: input.url,
    events: [...new Set(input.events ?? EVENT_TYPES)],
    enabled: true,
    disabledReason: null,
    maxInFlight: input.max_in_flight ?? DEFAULT_MAX_IN_FLIGHT,
    createdAt: now,
    updatedAt: now,
  }
  const secret = newWebhookSecret()
  await audited(ops, actor, async (tx) => {
    await insertEndpoint(tx, endpoint, secret)
    const details = { url: auditedUrl(endpoint.url), events: endpoint.events, max_in_flight: endpoint.maxInFlight }
    return { result: undefined, audit: { orgId, action: 'webhook_endpoint.created', target: endpoint.id, details } }
  })
  return { endpoint, secret }
}

export function listWebhookEndpoints(ops: WebhookOperations, orgId: string): Promise<WebhookEndpoint[]> {
  return listEndpoints(ops.db, orgId)
}

export async function requireEndpoint(ops: WebhookOperations, orgId: string, id: string): Promise<WebhookEndpoint> {
  const endpoint = isId('webhookEndpoint', id) ? await findEndpoint(ops.db, orgId, id) : undefined
  if (endpoint === undefined) throw new ApiError('not_found', `No webhook endpoint ${id} exists.`)
  return endpoint
}

export async function changeEndpoint(
  ops: WebhookOperations,
  actor: Actor,
  orgId: string,
  id: string,
  changes: { url?: string; events?: EventType[]; enabled?: boolean; max_in_flight?: number },
): Promise<WebhookEndpoint> {
  const current = await requireEndpoint(ops, orgId, id)
  if (changes.url !== undefined) checkUrl(ops, changes.url)
  checkEvents(changes.events)
  const enabled = changes.enabled ?? current.enabled
  const endpoint: WebhookEndpoint = {
    ...current,
    url: changes.url ?? current.url,
    events: changes.events === undefined ? current.events : [...new Set(changes.events)],
    enabled,
    disabledReason: enabled ? null : current.disabledReason,
    maxInFlight: changes.max_in_flight ?? current.maxInFlight,
    updatedAt: isoNow(ops),
  }
  await audited(ops, actor, async (tx) => {
    await updateEndpoint(tx, endpoint)
    // A disabled endpoint receives nothing: what was pending for it is given up (and can be redelivered).
    if (!enabled) await giveUpPending(tx, id, ops.now())
    const details = { ...changes, ...(changes.url !== undefined && { url: auditedUrl(changes.url) }) }
    return { result: undefined, audit: { orgId, action: 'webhook_endpoint.changed', target: id, details } }
  })
  return endpoint
}

export async function removeEndpoint(ops: WebhookOperations, actor: Actor, orgId: string, id: string): Promise<void> {
  const removed =
    isId('webhookEndpoint', id) &&
    (await audited(ops, actor, async (tx) => {
      if (!(await deleteEndpoint(tx, orgId, id, ops.now()))) return { result: false, audit: undefined }
      await giveUpPending(tx, id, ops.now())
      return { result: true, audit: { orgId, action: 'webhook_endpoint.deleted', target: id, details: {} } }
    }))
  if (!removed) throw new ApiError('not_found', `No webhook endpoint ${id} exists.`)
}

/** A new secret, shown this once; the previous one also signs for the next 24 hours. */
export async function rotateEndpointSecret(
  ops: WebhookOperations,
  actor: Actor,
  orgId: string,
  id: string,
): Promise<{ endpoint: WebhookEndpoint; secret: string; previousSecretExpiresAt: string }> {
  await requireEndpoint(ops, orgId, id)
  const secret = newWebhookSecret()
  const until = ops.now() + PREVIOUS_SECRET_MS
  const rotated = await audited(ops, actor, async (tx) => {
    const done = await rotateSecret(tx, orgId, id, secret, until, ops.now())
    return { result: done, audit: done ? { orgId, action: 'webhook_endpoint.secret_rotated', target: id, details: {} } : undefined }
  })
  if (!rotated) {
    throw new ApiError('conflict', 'The previous secret still signs, for up to 24 hours after the last rotation; rotate again after that.')
  }
  return { endpoint: await requireEndpoint(ops, orgId, id), secret, previousSecretExpiresAt: new Date(until).toISOString() }
}

export async function listOrganizationEvents(
  ops: WebhookOperations,
  orgId: string,
  query: { type?: EventType; after?: string; newest?: boolean; limit: number },
): Promise<OutboxEvent[]> {
  if (query.newest === true && query.after !== undefined) {
    throw new ValidationFailed([valueError(['query', 'newest'], query.newest, 'newest reads the newest events, and after the ones after an event: send one of them')])
  }
  if (query.newest === true) return listNewestEvents(ops.db, orgId, query)
  const events = await listEvents(ops.db, orgId, query)
  if (events === undefined) {
    throw new ValidationFailed([valueError(['query', 'after'], query.after, 'after must be the id of an event of a page before')])
  }
  return events
}

async function requireEvent(ops: WebhookOperations, orgId: string, id: string): Promise<OutboxEvent> {
  const event = isId('event', id) ? await findEvent(ops.db, orgId, id) : undefined
  if (event === undefined) throw new ApiError('not_found', `No event ${id} exists.`)
  return event
}

/** An event with what became of it: its deliveries to endpoints with their attempts, and what listen reported of forwarding it. */
export interface EventHistory {
  event: OutboxEvent
  deliveries: DeliveryLog[]
  listenForwards: ListenForward[]
}

export async function eventWithDeliveries(ops: WebhookOperations, orgId: string, id: string): Promise<EventHistory> {
  const event = await requireEvent(ops, orgId, id)
  const [deliveries, forwards] = await Promise.all([deliveriesOf(ops.db, id), listenForwardsOf(ops.db, [id])])
  return { event, deliveries, listenForwards: forwards.get(id) ?? [] }
}

/**
 * Records what `cli listen` reports of one try to forward an event to its
 * local receiver: the service sends it nothing itself (no endpoint is
 * registered), so this is all it knows of it, and the console says so.
 */
export async function reportListenForward(ops: WebhookOperations, orgId: string, id: string, forward: ListenForward): Promise<void> {
  if (!isId('event', id) || !(await recordListenForward(ops.db, orgId, id, forward))) throw new ApiError('not_found', `No event ${id} exists.`)
}

/**
 * The events written for a task (its interactions' interaction.finalized,
 * its task.completed), oldest first and at most MAX_TASK_EVENTS (store/events.ts), each with
 * its deliveries and their attempts: what was sent about the task, to whom,
 * and how each answered.
 */
export async function taskEventsWithDeliveries(
  ops: WebhookOperations,
  orgId: string,
  taskId: string,
): Promise<EventHistory[]> {
  if (!isId('task', taskId) || !(await taskExists(ops.db, orgId, taskId))) throw new ApiError('not_found', `No task ${taskId} exists.`)
  const events = await listTaskEvents(ops.db, orgId, taskId)
  const ids = events.map((event) => event.id)
  const [deliveries, forwards] = await Promise.all([deliveriesOfEvents(ops.db, ids), listenForwardsOf(ops.db, ids)])
  return events.map((event) => ({ event, deliveries: deliveries.get(event.id) ?? [], listenForwards: forwards.get(event.id) ?? [] }))
}

/**
 * Sends an event again, with the same webhook-id: to one endpoint, or to
 * every enabled endpoint subscribed to its type (a test: to the endpoint it
 * tested). Returns the endpoints.
 */
export async function redeliverEvent(
  ops: WebhookOperations,
  orgId: string,
  id: string,
  endpointId: string | undefined,
): Promise<WebhookEndpoint[]> {
  const event = await requireEvent(ops, orgId, id)
  let targets: WebhookEndpoint[]
  if (endpointId !== undefined) targets = [await requireEndpoint(ops, orgId, endpointId)]
  else if (event.type === TEST_EVENT_TYPE) targets = [await requireEndpoint(ops, orgId, String(event.data.endpoint_id))]
  else targets = (await listEndpoints(ops.db, orgId)).filter((endpoint) => endpoint.enabled && endpoint.events.includes(event.type as EventType))
  const disabled = targets.find((endpoint) => !endpoint.enabled)
  if (disabled !== undefined) throw new ApiError('conflict', `Webhook endpoint ${disabled.id} is disabled; enable it first.`)
  const sent: WebhookEndpoint[] = []
  // An endpoint disabled or deleted since it was read here receives nothing: for one asked by id, that is a conflict.
  for (const endpoint of targets) if (await redeliver(ops.db, orgId, event.id, endpoint.id, ops.now())) sent.push(endpoint)
  if (endpointId !== undefined && sent.length === 0) throw new ApiError('conflict', `Webhook endpoint ${endpointId} is disabled; enable it first.`)
  ops.onRedeliver()
  return sent
}

export interface Recovery {
  /** Events queued to be sent now. */
  queued: number
  /** Of those, how many were waiting for a retry and were brought forward (no second delivery). */
  brought_forward: number
  since: string
  until: string
  /** Where the next call goes on from (as `after`), when this one stopped at its bound; null when it read the whole window. */
  next: string | null
}

/**
 * Sends now every event not delivered to an enabled endpoint since `since`
 * (and before `until`, by default now), once each and with its own id, in the
 * order the events were recorded: those whose delivery failed or was given
 * up in the window, and those waiting for a retry after an attempt that
 * failed in it (brought forward: the delivery waiting is the one sent). At
 * most MAX_RECOVERED_PER_CALL deliveries of each kind are read a call, and a
 * call that stopped there answers `next`, for the next to go on from
 * (`after`). Recorded in the audit log when it queued any.
 */
export async function recoverEndpoint(
  ops: WebhookOperations,
  actor: Actor,
  orgId: string,
  id: string,
  asked: { since: string; until?: string; after?: string },
): Promise<Recovery> {
  const endpoint = await requireEndpoint(ops, orgId, id)
  if (!endpoint.enabled) throw new ApiError('conflict', `Webhook endpoint ${endpoint.id} is disabled; enable it first.`)
  const now = ops.now()
  const since = Date.parse(asked.since)
  const until = asked.until === undefined ? now : Date.parse(asked.until)
  const after = asked.after === undefined ? undefined : readRecoveryCursor(asked.after)
  const { retentionDays } = (await findOrganization(ops.db, orgId))!
  const problems: RecoveryProblem[] = recoveryWindowProblems({ since, until: asked.until === undefined ? undefined : until }, now, retentionDays)
  if (asked.after !== undefined && after === undefined) problems.push({ field: 'after', message: 'after must be the next of an earlier answer' })
  if (problems.length > 0) {
    throw new ValidationFailed(problems.map((problem) => valueError(['body', problem.field], asked[problem.field], problem.message)))
  }
  const from = recoveryStart(since, after)
  const recovery = await audited(ops, actor, async (tx) => {
    const recovered = await recoverFailedDeliveries(tx, {
      orgId,
      endpointId: endpoint.id,
      since,
      from,
      until,
      limit: MAX_RECOVERED_PER_CALL,
      now,
    })
    if (recovered === undefined) return { result: undefined, audit: undefined }
    const result: Recovery = {
      queued: recovered.queued,
      brought_forward: recovered.broughtForward,
      since: new Date(since).toISOString(),
      until: new Date(until).toISOString(),
      // Stopped at the bound of waiting deliveries alone, the next call reads the failed ones from where this one did.
      next: recovered.full ? recoveryCursor(recovered.last ?? from) : null,
    }
    const details = { since: result.since, until: result.until, queued: result.queued, brought_forward: result.brought_forward }
    return { result, audit: recovered.queued === 0 ? undefined : { orgId, action: 'webhook_endpoint.recovered' as const, target: endpoint.id, details } }
  })
  // Disabled or deleted since it was read above.
  if (recovery === undefined) throw new ApiError('conflict', `Webhook endpoint ${endpoint.id} is disabled; enable it first.`)
  if (recovery.queued > 0) ops.onRedeliver()
  return recovery
}

/** How many of an endpoint's last failures its health lists. */
export const LAST_FAILURES = 10

export interface EndpointHealth {
  /** The start of the first hour counted: the hour 24 hours ago began. */
  since: string
  attempts: number
  succeeded: number
  successRate: number | null
  latency: LatencySummary | null
  lastFailures: FailedAttempt[]
}

/**
 * How an endpoint's webhooks have gone: its attempts over the last 24 hours
 * (counted by the hour, from the start of the hour 24 hours ago), how many
 * succeeded and how long they took, and its last failures with the
 * receiver's answers.
 */
export async function endpointHealth(ops: WebhookOperations, orgId: string, id: string): Promise<EndpointHealth> {
  const endpoint = await requireEndpoint(ops, orgId, id)
  const since = healthWindowStart(ops.now())
  const counts = addCounts(await endpointHours(ops.db, endpoint.id, since))
  return {
    since: new Date(since).toISOString(),
    attempts: counts.attempts,
    succeeded: counts.succeeded,
    successRate: successRate(counts),
    latency: latencySummary(counts),
    lastFailures: await lastFailures(ops.db, endpoint.id, LAST_FAILURES),
  }
}

/** Sends a webhook.test event to an enabled endpoint now; returns the event. */
export async function sendTestEvent(ops: WebhookOperations, orgId: string, id: string): Promise<OutboxEvent> {
  const endpoint = await requireEndpoint(ops, orgId, id)
  const event = webhookTestEvent(endpoint.id, ops.now())
  if (!(await insertTestEvent(ops.db, orgId, endpoint.id, event))) {
    throw new ApiError('conflict', `Webhook endpoint ${endpoint.id} is disabled; enable it first.`)
  }
  ops.onRedeliver()
  return event
}
