/**
 * The SDK's names for the API's shapes, every one taken from the types
 * generated from the service's OpenAPI document (schema.d.ts), by path and
 * method. They are named here, and only here, so that the client never
 * spells a path's response type out, and a change in how the document names
 * its shapes is a change of this file alone.
 */
import type { components, paths, webhooks } from './schema.js'

type Method = 'get' | 'post' | 'patch' | 'delete'
type Operation<Path extends keyof paths, M extends Method> = NonNullable<paths[Path][M]>
type JsonContent<Response> = Response extends { content: { 'application/json': infer Body } } ? Body : never

/** The JSON body of one answer of an operation. */
type ResponseBody<Path extends keyof paths, M extends Method, Status extends number> =
  Operation<Path, M> extends { responses: { [S in Status]: infer Response } } ? JsonContent<Response> : never

/** The `data` of an operation's answer: what the client's methods return. */
type ResponseData<Path extends keyof paths, M extends Method, Status extends number> =
  ResponseBody<Path, M, Status> extends { data: infer Data } ? Data : never

type RequestBody<Path extends keyof paths, M extends Method> =
  Operation<Path, M> extends { requestBody?: infer Body } ? JsonContent<NonNullable<Body>> : never

type QueryOf<Path extends keyof paths, M extends Method> =
  Operation<Path, M> extends { parameters: { query?: infer Query } } ? NonNullable<Query> : never

export type TriggerRequest = RequestBody<'/api/v2/triggers', 'post'>
export type TriggerAccepted = ResponseData<'/api/v2/triggers', 'post', 201>
/** One trigger of a batch: a trigger request with its own optional idempotency_key. */
export type BatchTriggerRequest = RequestBody<'/api/v2/triggers/batch', 'post'>['triggers'][number]
/** One trigger's result in a batch, in request order: the status and body the single endpoint would have given. */
export type BatchTriggerResult = ResponseData<'/api/v2/triggers/batch', 'post', 200>[number]
export type Trigger = ResponseData<'/api/v2/triggers/{id}', 'get', 200>

export type Task = ResponseData<'/api/v2/tasks/{id}', 'get', 200>
/** A task as the list shows it: its interactions without their result. */
export type TaskSummary = ResponseData<'/api/v2/tasks', 'get', 200>[number]
export type TaskQuery = QueryOf<'/api/v2/tasks', 'get'>
export type CancelTasksRequest = RequestBody<'/api/v2/tasks/cancel', 'post'>
export type CancelledTask = ResponseData<'/api/v2/tasks/cancel', 'post', 200>[number]

export type Interaction = ResponseData<'/api/v2/interactions/{id}', 'get', 200>
export type InteractionResultRequest = RequestBody<'/api/v2/interactions/{id}/result', 'post'>
/** A text, reply buttons or a list, to the person of a WhatsApp interaction (a text on an SMS one), in their open window. */
export type SessionMessageRequest = RequestBody<'/api/v2/interactions/{id}/messages', 'post'>
export type SessionMessage = ResponseData<'/api/v2/interactions/{id}/messages', 'post', 201>

export type Campaign = ResponseData<'/api/v2/campaigns/{routing_key}/pause', 'post', 200>
export type CampaignQuery = QueryOf<'/api/v2/campaigns/{routing_key}/pause', 'post'>

export type Event = ResponseData<'/api/v2/events', 'get', 200>[number]
export type EventQuery = QueryOf<'/api/v2/events', 'get'>
/** An event with each delivery to an endpoint and each attempt. */
export type EventWithDeliveries = ResponseData<'/api/v2/events/{id}', 'get', 200>
export type RedeliverQuery = QueryOf<'/api/v2/events/{id}/redeliver', 'post'>
export type Redelivery = ResponseData<'/api/v2/events/{id}/redeliver', 'post', 202>
/** What `cli listen` reports of one try to forward an event to its local receiver. */
export type ListenForwardReport = RequestBody<'/api/v2/events/{id}/listen-forwards', 'post'>

export type WebhookEndpoint = ResponseData<'/api/v2/webhook-endpoints/{id}', 'get', 200>
/** An endpoint as registered: with its secret (whsec_...), shown this once. */
export type WebhookEndpointWithSecret = ResponseData<'/api/v2/webhook-endpoints', 'post', 201>
export type WebhookEndpointRequest = RequestBody<'/api/v2/webhook-endpoints', 'post'>
export type WebhookEndpointChange = RequestBody<'/api/v2/webhook-endpoints/{id}', 'patch'>
export type WebhookEndpointHealth = ResponseData<'/api/v2/webhook-endpoints/{id}/health', 'get', 200>
export type WebhookTestEvent = ResponseData<'/api/v2/webhook-endpoints/{id}/test', 'post', 202>
/** The window of failed deliveries to send again (`after`: the previous answer's `next`, to go on). */
export type WebhookRecoveryRequest = RequestBody<'/api/v2/webhook-endpoints/{id}/recover', 'post'>
export type WebhookRecovery = ResponseData<'/api/v2/webhook-endpoints/{id}/recover', 'post', 202>

export type Suppression = ResponseData<'/api/v2/suppressions/{phone}', 'get', 200>
export type SuppressionQuery = QueryOf<'/api/v2/suppressions', 'get'>
export type ConsentRequest = RequestBody<'/api/v2/consents', 'post'>
export type Consent = ResponseData<'/api/v2/consents/{consent_id}', 'get', 200>
export type ConsentQuery = QueryOf<'/api/v2/consents', 'get'>
/** A batch recorded: how many, and each consent, in request order. */
export type RecordedConsents = ResponseData<'/api/v2/consents/batch', 'post', 201>
/** A number, and the channel or purpose whose consents to revoke (neither: all of them). */
export type RevokeConsentsRequest = RequestBody<'/api/v2/consents/revoke', 'post'>
export type RevokedConsents = ResponseData<'/api/v2/consents/revoke', 'post', 200>
export type ContactabilityRequest = RequestBody<'/api/v2/contactability', 'post'>
/** The decision made before an attempt, as the dry run answers it and as a task and its interactions keep it. */
export type ContactabilityDecision = ResponseData<'/api/v2/contactability', 'post', 200>
/** One rule behind a decision: what it relied on, what holds it, or what blocks it. */
export type DecisionReason = ContactabilityDecision['reasons'][number]
export type ErasureRequest = RequestBody<'/api/v2/contacts/erase', 'post'>
export type Erasure = ResponseData<'/api/v2/contacts/erase', 'post', 200>
export type DailyCountQuery = QueryOf<'/api/v2/daily-counts', 'get'>
export type DailyCounts = ResponseData<'/api/v2/daily-counts', 'get', 200>
export type ReachStatisticsQuery = QueryOf<'/api/v2/reach-statistics', 'get'>
export type ReachStatistics = ResponseData<'/api/v2/reach-statistics', 'get', 200>
export type ApiKeyDescription = ResponseData<'/api/v2/key', 'get', 200>

/** The body of every error other than a 422. */
export type ErrorBody = ResponseBody<'/api/v2/triggers', 'post', 401>
/** One problem of a 422, in FastAPI/pydantic v2's shape. */
export type ValidationIssue = ResponseBody<'/api/v2/triggers', 'post', 422>['detail'][number]

/*
 * Webhook events: the document's `webhooks` section describes each one the
 * service sends, by its type, with its envelope and data; the union is made
 * from it, so that a type the document adds is a case of WebhookEvent.
 */
type WebhookBody<Type extends keyof webhooks> = webhooks[Type]['post'] extends { requestBody: { content: { 'application/json': infer Body } } } ? Body : never

/** Every webhook the service sends, told apart by `type`: `switch (event.type)` narrows `event.data`. */
export type WebhookEvent = { [Type in keyof webhooks]: WebhookBody<Type> }[keyof webhooks]
/** Each event type the service sends: `task.completed`, `interaction.finalized`... */
export type WebhookEventType = WebhookEvent['type']
/** The event of one type, e.g. `WebhookEventOf<'task.completed'>`. */
export type WebhookEventOf<Type extends WebhookEventType> = Extract<WebhookEvent, { type: Type }>

export type ConversationResult = components['schemas']['ConversationResult']
export type TaskCompletedData = components['schemas']['TaskCompletedData']
export type InteractionFinalizedData = components['schemas']['InteractionFinalizedData']
export type InteractionResultAddedData = components['schemas']['InteractionResultAddedData']
export type InteractionMessageReceivedData = components['schemas']['InteractionMessageReceivedData']
export type WebhookTestData = components['schemas']['WebhookTestData']
