/**
 * Webhook endpoints (scope webhooks:manage) and events (triggers:read to
 * read, webhooks:manage to redeliver), for an organization and the operator.
 */
import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { LATENCY_BOUNDS_MS } from '../../domain/endpointHealth.ts'
import { EVENT_TYPES, type EventType, TEST_EVENT_TYPE, type WebhookEndpoint } from '../../domain/types.ts'
import { actorOf } from '../auth.ts'
import type { Authenticator } from '../../services/authenticator.ts'
import {
  changeEndpoint,
  createEndpoint,
  DEFAULT_MAX_IN_FLIGHT,
  endpointHealth,
  type EndpointHealth,
  LAST_FAILURES,
  recoverEndpoint,
  eventWithDeliveries,
  type EventHistory,
  listOrganizationEvents,
  listWebhookEndpoints,
  MAX_IN_FLIGHT,
  redeliverEvent,
  removeEndpoint,
  reportListenForward,
  requireEndpoint,
  rotateEndpointSecret,
  sendTestEvent,
  taskEventsWithDeliveries,
  type WebhookOperations,
} from '../../services/webhookAdministration.ts'
import type { DeliveryLog } from '../../store/deliveries.ts'
import { LISTEN_FORWARDS_KEPT, type ListenForward, MAX_TASK_EVENTS } from '../../store/events.ts'
import { envelope } from '../reply.ts'
import { type Audience, audiences } from './audiences.ts'
import { authErrors, conflict, Envelope, instant, notFound, OneOf, Timestamp, validationErrors } from '../schemas.ts'
import { MAX_RECOVERED_PER_CALL } from '../../domain/webhookRecovery.ts'
import { component } from '../openapi.ts'
import { RESPONSE_BODY_EXCERPT_BYTES, RESPONSE_HEADER_VALUE_CHARS, RESPONSE_HEADERS_KEPT } from '../../webhooks/httpPoster.ts'

const MAX_PAGE = 100

const EventTypeSchema = OneOf(EVENT_TYPES)
/** The type of an event sent: one an endpoint subscribes to, or a test. */
const SentEventTypeSchema = OneOf([...EVENT_TYPES, TEST_EVENT_TYPE])

const MaxInFlight = Type.Integer({
  minimum: 1,
  maximum: MAX_IN_FLIGHT,
  description: `Most webhooks in flight to the endpoint at once (default ${DEFAULT_MAX_IN_FLIGHT}): the rest wait their turn, each sent as one ends.`,
})

const EndpointSchema = component('WebhookEndpoint', Type.Object({
  id: Type.String({ examples: ['whe_01jd3y5v8m6m1r9cz8xk4j2h7q'] }),
  url: Type.String(),
  events: Type.Array(EventTypeSchema),
  enabled: Type.Boolean(),
  disabled_reason: Type.Union([Type.String(), Type.Null()], { description: 'Why the service disabled it (the receiver answered 410).' }),
  max_in_flight: MaxInFlight,
  created_at: Timestamp,
  updated_at: Timestamp,
}))

const WithSecret = component('WebhookEndpointWithSecret', Type.Composite([
  EndpointSchema,
  Type.Object({ secret: Type.String({ description: 'whsec_...: shown this once. Verify signatures with it (Standard Webhooks).' }) }),
]))

const CreateBody = component('WebhookEndpointCreateRequest', Type.Object({
  url: Type.String({ minLength: 1, maxLength: 2048, description: 'https, to a public address.' }),
  events: Type.Optional(Type.Array(EventTypeSchema, { maxItems: EVENT_TYPES.length, description: 'Default: every type.' })),
  max_in_flight: Type.Optional(MaxInFlight),
}))

const ChangeBody = component('WebhookEndpointUpdateRequest', Type.Object({
  url: Type.Optional(Type.String({ minLength: 1, maxLength: 2048 })),
  events: Type.Optional(Type.Array(EventTypeSchema, { maxItems: EVENT_TYPES.length })),
  enabled: Type.Optional(Type.Boolean({ description: 'true also lifts a disable by the service (after a 410).' })),
  max_in_flight: Type.Optional(MaxInFlight),
}))

/** An event of one of `types`: the events list holds those an endpoint subscribes to; one event, or a task's, may be a test. */
const EventOf = (types: typeof EventTypeSchema | typeof SentEventTypeSchema) =>
  Type.Object({
    id: Type.String({ description: 'Also the webhook-id header of its deliveries.' }),
    type: types,
    timestamp: Timestamp,
    data: Type.Record(Type.String(), Type.Unknown(), {
      description: "By type: TaskCompletedData, InteractionFinalizedData or InteractionResultAddedData (the document's components); webhook.test: endpoint_id and message.",
    }),
  })
const ListedEventSchema = component('Event', EventOf(EventTypeSchema))
const EventSchema = component('SentEvent', EventOf(SentEventTypeSchema))

const DeliverySchema = component('Delivery', Type.Object({
  endpoint_id: Type.String(),
  status: OneOf(['pending', 'succeeded', 'failed'] as const),
  next_attempt_at: Type.Union([Timestamp, Type.Null()]),
  attempts: Type.Array(
    Type.Object({
      attempt: Type.Integer(),
      at: Timestamp,
      status_code: Type.Union([Type.Integer(), Type.Null()]),
      latency_ms: Type.Integer(),
      error: Type.Union([Type.String(), Type.Null()]),
      response: Type.Union(
        [
          Type.Object({
            headers: Type.Record(Type.String(), Type.String(), {
              description: `Its first ${RESPONSE_HEADERS_KEPT} headers, by lower-case name, each value cut at ${RESPONSE_HEADER_VALUE_CHARS} characters.`,
            }),
            body: Type.String({ description: `The opening of its body, at most ${RESPONSE_BODY_EXCERPT_BYTES / 1024} KiB of it as UTF-8 text.` }),
            body_truncated: Type.Boolean({ description: 'The body was longer than what is shown.' }),
          }),
          Type.Null(),
        ],
        { description: "The receiver's answer besides its status; null when none came, or for an attempt made before the service kept answers." },
      ),
    }),
  ),
}))

/** The local receiver's answer to a try of listen's, and why none came. */
const ForwardStatus = Type.Integer({ minimum: 100, maximum: 599 })
const ForwardLatency = Type.Integer({ minimum: 0, maximum: 3_600_000 })
const ForwardError = Type.String({ maxLength: 500, description: 'Why no answer came (refused, timed out).' })

/** A try of listen's to forward an event, as the event lists it. */
const ListenForwardSchema = Type.Object({
  at: Timestamp,
  status_code: Type.Union([ForwardStatus, Type.Null()], { description: "The local receiver's answer; null when none came (see error)." }),
  latency_ms: ForwardLatency,
  error: Type.Union([ForwardError, Type.Null()]),
})
/** A try of listen's to forward an event, as listen reports it. */
const ListenForwardReport = Type.Object({
  at: instant('at', 'When listen made the try, by its clock.'),
  status_code: Type.Optional({ ...ForwardStatus, description: "The local receiver's answer; left out when none came (then say why in error)." }),
  latency_ms: ForwardLatency,
  error: Type.Optional(ForwardError),
})

const EndpointHealthSchema = component('WebhookEndpointHealth', Type.Object({
  since: { ...Timestamp, description: 'The start of the first hour counted: the hour 24 hours ago began.' },
  attempts: Type.Integer({ description: 'Attempts to send a webhook to it since then.' }),
  succeeded: Type.Integer({ description: 'Those answered with a 2xx.' }),
  success_rate: Type.Union([Type.Number({ minimum: 0, maximum: 1 }), Type.Null()], { description: 'succeeded / attempts; null with no attempt.' }),
  latency_ms: Type.Union(
    [
      Type.Object({
        mean: Type.Integer(),
        p50: Type.Integer({ description: 'At most this long: the median attempt took under this bound.' }),
        p95: Type.Integer({ description: 'As p50, for 95 attempts in 100.' }),
        max: Type.Integer(),
      }),
      Type.Null(),
    ],
    {
      description: `How long each attempt took, to its answer or its failure. Counted in buckets bounded at ${LATENCY_BOUNDS_MS.join(', ')} ms: p50 and p95 are the bound of the bucket that holds them (or max, when less). Null with no attempt.`,
    },
  ),
  last_failures: Type.Array(
    Type.Object({
      event_id: Type.String(),
      event_type: SentEventTypeSchema,
      attempt: Type.Integer(),
      at: Timestamp,
      status_code: Type.Union([Type.Integer(), Type.Null()], { description: 'The receiver\'s answer; null when none came (see error).' }),
      latency_ms: Type.Integer(),
      error: Type.Union([Type.String(), Type.Null()]),
      final: Type.Boolean({ description: 'The delivery gave up after it; otherwise it was tried again.' }),
    }),
    { description: `The last ${LAST_FAILURES} failed attempts, newest first, whenever they were.` },
  ),
}))

const presentHealth = (health: EndpointHealth) => ({
  since: health.since,
  attempts: health.attempts,
  succeeded: health.succeeded,
  success_rate: health.successRate,
  latency_ms:
    health.latency === null ? null : { mean: health.latency.meanMs, p50: health.latency.p50Ms, p95: health.latency.p95Ms, max: health.latency.maxMs },
  last_failures: health.lastFailures.map((failure) => ({
    event_id: failure.eventId,
    event_type: failure.eventType,
    attempt: failure.attempt,
    at: failure.at,
    status_code: failure.statusCode,
    latency_ms: failure.latencyMs,
    error: failure.error,
    final: failure.final,
  })),
})

const RecoverBody = Type.Object({
  since: instant(
    'since',
    'Recover what was not delivered since this instant: deliveries that failed or were given up at or after it, and those waiting for a retry after an attempt that failed at or after it (brought forward). In the past, and within the history kept (the retention).',
  ),
  until: Type.Optional(instant('until', 'And before this instant (default: now); after since, not in the future.')),
  after: Type.Optional(Type.String({ maxLength: 64, description: 'The `next` of the previous answer, to go on where it stopped (with the same since and until).' })),
})

const RecoverySchema = Type.Object({
  queued: Type.Integer({ description: 'Events queued to be sent now, each once.' }),
  brought_forward: Type.Integer({
    description: 'Of those, how many were waiting for a retry: their pending delivery falls due now, and no second one is made.',
  }),
  since: Timestamp,
  until: { ...Timestamp, description: 'The end of the window recovered: the one asked for, or the time of the call.' },
  next: Type.Union([Type.String(), Type.Null()], {
    description: `Null when the whole window was read. Otherwise the call stopped after ${MAX_RECOVERED_PER_CALL.toLocaleString('en')} deliveries of one kind (failed, or waiting for a retry): call again with the same since and until and this as \`after\`.`,
  }),
})

const EventWithDeliveries = component(
  'EventWithDeliveries',
  Type.Composite([
    EventSchema,
    Type.Object({
      deliveries: Type.Array(DeliverySchema),
      listen_forwards: Type.Array(ListenForwardSchema, {
        description: `What \`cli listen\` reported of forwarding the event to its local receiver, each try, oldest first (the last ${LISTEN_FORWARDS_KEPT}); empty when it never did. The service sent nothing itself: this is listen's word.`,
      }),
    }),
  ]),
)

const EventsQuery = Type.Object({
  type: Type.Optional(EventTypeSchema),
  after: Type.Optional(Type.String({ maxLength: 40, description: 'The last event id of the previous page.' })),
  newest: Type.Optional(
    Type.Boolean({ description: 'The newest events instead, newest first (not with `after`): a reader that wants only the events recorded from now on reads on `after` the first of them.' }),
  ),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE, description: `Default ${MAX_PAGE}.` })),
})

const presentEndpoint = (endpoint: WebhookEndpoint) => ({
  id: endpoint.id,
  url: endpoint.url,
  events: endpoint.events,
  enabled: endpoint.enabled,
  disabled_reason: endpoint.disabledReason,
  max_in_flight: endpoint.maxInFlight,
  created_at: endpoint.createdAt,
  updated_at: endpoint.updatedAt,
})

const presentDelivery = (delivery: DeliveryLog) => ({
  endpoint_id: delivery.endpointId,
  status: delivery.status,
  next_attempt_at: delivery.nextAttemptAt,
  attempts: delivery.attempts.map((attempt) => ({
    attempt: attempt.attempt,
    at: attempt.at,
    status_code: attempt.statusCode,
    latency_ms: attempt.latencyMs,
    error: attempt.error,
    response: attempt.answer === null ? null : { headers: attempt.answer.headers, body: attempt.answer.body, body_truncated: attempt.answer.bodyTruncated },
  })),
})

const presentEventHistory = ({ event, deliveries, listenForwards }: EventHistory) => ({
  ...event,
  deliveries: deliveries.map(presentDelivery),
  listen_forwards: listenForwards.map((forward) => ({ at: forward.at, status_code: forward.statusCode, latency_ms: forward.latencyMs, error: forward.error })),
})

export function webhookRoutes(app: FastifyInstance, deps: { ops: WebhookOperations; authenticator: Authenticator }) {
  for (const audience of audiences({ db: deps.ops.db, authenticator: deps.authenticator }, 'webhooks')) routesFor(app, deps.ops, audience)
}

function routesFor(app: FastifyInstance, ops: WebhookOperations, audience: Audience) {
  const { prefix, docs, params } = audience
  // The operator may name an organization that does not exist.
  const unknownOrganization = audience.operator ? notFound : {}
  const endpoints = `${prefix}/webhook-endpoints`
  const oneEndpoint = Type.Object({ ...params, id: Type.String() })

  app.post(
    endpoints,
    {
      onRequest: audience.guard('webhooks:manage'),
      schema: {
        ...docs,
        operationId: audience.operationId('createWebhookEndpoint'),
        summary: 'Register a webhook endpoint',
        description: 'Its secret is returned this once. Events are signed with it (Standard Webhooks) and retried until they succeed or give up.',
        params: Type.Object(params),
        body: CreateBody,
        response: { 201: Envelope(WithSecret), ...authErrors, ...notFound, ...validationErrors },
      },
    },
    async (request, reply) => {
      const { endpoint, secret } = await createEndpoint(ops, actorOf(request), await audience.orgId(request), request.body as { url: string; events?: EventType[]; max_in_flight?: number })
      return reply.code(201).send(envelope(request, { ...presentEndpoint(endpoint), secret }))
    },
  )

  app.get(
    endpoints,
    {
      onRequest: audience.guard('webhooks:manage'),
      schema: {
        ...docs,
        operationId: audience.operationId('listWebhookEndpoints'),
        summary: 'List webhook endpoints',
        description: 'Every endpoint, enabled or not, without its secret.',
        params: Type.Object(params),
        response: { 200: Envelope(Type.Array(EndpointSchema)), ...authErrors, ...unknownOrganization },
      },
    },
    async (request, reply) => {
      const endpoints = await listWebhookEndpoints(ops, await audience.orgId(request))
      return reply.send(envelope(request, endpoints.map(presentEndpoint)))
    },
  )

  app.get(
    `${endpoints}/:id`,
    {
      onRequest: audience.guard('webhooks:manage'),
      schema: { ...docs, operationId: audience.operationId('getWebhookEndpoint'), summary: 'Look up a webhook endpoint', description: 'The endpoint, without its secret.', params: oneEndpoint, response: { 200: Envelope(EndpointSchema), ...authErrors, ...notFound } },
    },
    async (request, reply) => {
      const { id } = request.params as { id: string }
      return reply.send(envelope(request, presentEndpoint(await requireEndpoint(ops, await audience.orgId(request), id))))
    },
  )

  app.patch(
    `${endpoints}/:id`,
    {
      onRequest: audience.guard('webhooks:manage'),
      schema: {
        ...docs,
        operationId: audience.operationId('updateWebhookEndpoint'),
        summary: 'Change a webhook endpoint',
        description: 'Only the fields sent change. Its secret stays: rotate it apart.',
        params: oneEndpoint,
        body: ChangeBody,
        response: { 200: Envelope(EndpointSchema), ...authErrors, ...notFound, ...validationErrors },
      },
    },
    async (request, reply) => {
      const { id } = request.params as { id: string }
      const changes = request.body as { url?: string; events?: EventType[]; enabled?: boolean; max_in_flight?: number }
      return reply.send(envelope(request, presentEndpoint(await changeEndpoint(ops, actorOf(request), await audience.orgId(request), id, changes))))
    },
  )

  app.delete(
    `${endpoints}/:id`,
    {
      onRequest: audience.guard('webhooks:manage'),
      schema: {
        ...docs,
        operationId: audience.operationId('deleteWebhookEndpoint'),
        summary: 'Delete a webhook endpoint',
        description: 'What was still to be delivered to it is given up; its delivery log is kept.',
        params: oneEndpoint,
        response: { 204: Type.Null(), ...authErrors, ...notFound },
      },
    },
    async (request, reply) => {
      const { id } = request.params as { id: string }
      await removeEndpoint(ops, actorOf(request), await audience.orgId(request), id)
      return reply.code(204).send()
    },
  )

  app.post(
    `${endpoints}/:id/rotate-secret`,
    {
      onRequest: audience.guard('webhooks:manage'),
      schema: {
        ...docs,
        operationId: audience.operationId('rotateWebhookEndpointSecret'),
        summary: "Rotate a webhook endpoint's secret",
        description:
          'The new secret is returned this once; for 24 hours webhooks carry signatures by both the new and the previous secret. Rotating again within those 24 hours answers 409.',
        params: oneEndpoint,
        response: {
          200: Envelope(Type.Composite([WithSecret, Type.Object({ previous_secret_expires_at: Timestamp })])),
          ...authErrors,
          ...notFound,
          ...conflict,
        },
      },
    },
    async (request, reply) => {
      const { id } = request.params as { id: string }
      const rotated = await rotateEndpointSecret(ops, actorOf(request), await audience.orgId(request), id)
      return reply.send(
        envelope(request, { ...presentEndpoint(rotated.endpoint), secret: rotated.secret, previous_secret_expires_at: rotated.previousSecretExpiresAt }),
      )
    },
  )

  app.get(
    `${endpoints}/:id/health`,
    {
      onRequest: audience.guard('webhooks:manage'),
      schema: {
        ...docs,
        operationId: audience.operationId('getWebhookEndpointHealth'),
        summary: "A webhook endpoint's health",
        description:
          'How its webhooks went over the last 24 hours (counted by the hour): attempts, the share that succeeded, latency; and its last failed attempts with the answer each got. Why the service disabled it is on the endpoint (`disabled_reason`).',
        params: oneEndpoint,
        response: { 200: Envelope(EndpointHealthSchema), ...authErrors, ...notFound },
      },
    },
    async (request, reply) => {
      const { id } = request.params as { id: string }
      return reply.send(envelope(request, presentHealth(await endpointHealth(ops, await audience.orgId(request), id))))
    },
  )

  app.post(
    `${endpoints}/:id/test`,
    {
      onRequest: audience.guard('webhooks:manage'),
      schema: {
        ...docs,
        operationId: audience.operationId('testWebhookEndpoint'),
        summary: 'Send a test event to a webhook endpoint',
        description:
          `Sends it a \`${TEST_EVENT_TYPE}\` event now, signed and retried as any other, whatever event types it receives: \`data\` names the endpoint and says it reports nothing. ` +
          'Its delivery is logged (`GET .../events/{id}`, the endpoint\'s health) but the events list leaves it out. A disabled endpoint answers 409.',
        params: oneEndpoint,
        response: { 202: Envelope(EventSchema), ...authErrors, ...notFound, ...conflict },
      },
    },
    async (request, reply) => {
      const { id } = request.params as { id: string }
      return reply.code(202).send(envelope(request, await sendTestEvent(ops, await audience.orgId(request), id)))
    },
  )

  app.post(
    `${endpoints}/:id/recover`,
    {
      onRequest: audience.guard('webhooks:manage'),
      schema: {
        ...docs,
        operationId: audience.operator ? 'adminRecoverWebhookEndpoint' : 'recoverWebhookEndpoint',
        summary: "Send again a webhook endpoint's failed deliveries",
        description:
          'After an outage of the receiver: every event whose delivery to the endpoint failed or was given up at or after `since` (and before `until`) is sent again with the same webhook-id, ' +
          'once, in the order the events were recorded (an endpoint with max_in_flight 1 receives them in that order). Left out: an event delivered to it since, or already on its way again ' +
          `(a redelivery, an earlier recovery), and one of a type it no longer receives. At most ${MAX_RECOVERED_PER_CALL.toLocaleString('en')} failed deliveries are read a call: then \`next\` says where to go on. A disabled endpoint answers 409.`,
        params: oneEndpoint,
        body: RecoverBody,
        response: { 202: Envelope(RecoverySchema), ...authErrors, ...notFound, ...conflict, ...validationErrors },
      },
    },
    async (request, reply) => {
      const { id } = request.params as { id: string }
      const asked = request.body as { since: string; until?: string; after?: string }
      return reply.code(202).send(envelope(request, await recoverEndpoint(ops, actorOf(request), await audience.orgId(request), id, asked)))
    },
  )

  app.get(
    `${prefix}/events`,
    {
      onRequest: audience.guard('triggers:read'),
      schema: {
        ...docs,
        operationId: audience.operationId('listEvents'),
        summary: 'List events',
        description: `In the order they were recorded, after the event \`after\`, at most \`limit\` (${MAX_PAGE}). The next page starts after the last id of this one; an empty page means none newer yet, and no event is ever written behind a page already read. A client that cannot receive webhooks can poll this. Test events sent to an endpoint on request are left out.`,
        params: Type.Object(params),
        querystring: EventsQuery,
        response: { 200: Envelope(Type.Array(ListedEventSchema)), ...authErrors, ...unknownOrganization, ...validationErrors },
      },
    },
    async (request, reply) => {
      const query = request.query as { type?: EventType; after?: string; newest?: boolean; limit?: number }
      const events = await listOrganizationEvents(ops, await audience.orgId(request), { ...query, limit: query.limit ?? MAX_PAGE })
      return reply.send(envelope(request, events))
    },
  )

  app.get(
    `${prefix}/events/:id`,
    {
      onRequest: audience.guard('triggers:read'),
      schema: {
        ...docs,
        operationId: audience.operationId('getEvent'),
        summary: 'Look up an event, with every delivery attempt',
        description: 'The event as it was sent (test events too), with its delivery to each endpoint and every attempt: time, status code, latency, error, the answer\'s headers and body opening; and what `cli listen` reported of forwarding it.',
        params: Type.Object({ ...params, id: Type.String() }),
        response: {
          200: Envelope(EventWithDeliveries),
          ...authErrors,
          ...notFound,
        },
      },
    },
    async (request, reply) => {
      const { id } = request.params as { id: string }
      return reply.send(envelope(request, presentEventHistory(await eventWithDeliveries(ops, await audience.orgId(request), id))))
    },
  )

  app.get(
    `${prefix}/tasks/:id/events`,
    {
      onRequest: audience.guard('triggers:read'),
      schema: {
        ...docs,
        operationId: audience.operationId('listTaskEvents'),
        summary: "A task's events, with every delivery attempt",
        description:
          `The events written about the task, oldest first (the first ${MAX_TASK_EVENTS}): the interaction.finalized of each of its interactions and its task.completed, each with its deliveries to your endpoints and every attempt (time, status code, latency, error, the answer's headers and body opening), and what \`cli listen\` reported of forwarding it.`,
        params: Type.Object({ ...params, id: Type.String() }),
        response: { 200: Envelope(Type.Array(EventWithDeliveries)), ...authErrors, ...notFound },
      },
    },
    async (request, reply) => {
      const { id } = request.params as { id: string }
      const events = await taskEventsWithDeliveries(ops, await audience.orgId(request), id)
      return reply.send(envelope(request, events.map(presentEventHistory)))
    },
  )

  app.post(
    `${prefix}/events/:id/redeliver`,
    {
      onRequest: audience.guard('webhooks:manage'),
      schema: {
        ...docs,
        operationId: audience.operationId('redeliverEvent'),
        summary: 'Send an event again',
        description: 'With the same webhook-id, to one endpoint or to every enabled endpoint subscribed to its type (a test event: to the endpoint it tested).',
        params: Type.Object({ ...params, id: Type.String() }),
        querystring: Type.Object({ endpoint_id: Type.Optional(Type.String({ maxLength: 40, description: 'Only to this endpoint.' })) }),
        response: { 202: Envelope(Type.Object({ endpoints: Type.Array(Type.String()) })), ...authErrors, ...notFound, ...conflict },
      },
    },
    async (request, reply) => {
      const { id } = request.params as { id: string }
      const { endpoint_id } = request.query as { endpoint_id?: string }
      const targets = await redeliverEvent(ops, await audience.orgId(request), id, endpoint_id)
      return reply.code(202).send(envelope(request, { endpoints: targets.map((endpoint) => endpoint.id) }))
    },
  )

  // listen runs with the organization's key; the operator has nothing to report.
  if (audience.operator) return
  app.post(
    `${prefix}/events/:id/listen-forwards`,
    {
      onRequest: audience.guard('triggers:read'),
      schema: {
        ...docs,
        operationId: audience.operationId('reportListenForward'),
        summary: 'Report a forward of an event by cli listen',
        description:
          `\`cli listen\` calls this after each try to forward an event to its local receiver, with the receiver's answer, so that the event's page can say it was forwarded, when, and how it was answered (the event's \`listen_forwards\`, its last ${LISTEN_FORWARDS_KEPT}). ` +
          'It needs only the key listen reads events with (triggers:read), and changes nothing but that record.',
        params: Type.Object({ ...params, id: Type.String() }),
        body: ListenForwardReport,
        response: { 204: Type.Null(), ...authErrors, ...notFound, ...validationErrors },
      },
    },
    async (request, reply) => {
      const { id } = request.params as { id: string }
      const body = request.body as { at: string; status_code?: number; latency_ms: number; error?: string }
      const forward: ListenForward = { at: body.at, statusCode: body.status_code ?? null, latencyMs: body.latency_ms, error: body.error ?? null }
      await reportListenForward(ops, await audience.orgId(request), id, forward)
      return reply.code(204).send()
    },
  )
}
