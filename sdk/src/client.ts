import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import {
  AbortedError,
  ApiError,
  type ApiErrorInit,
  AuthenticationError,
  ConflictError,
  ConnectionError,
  NotFoundError,
  PermissionError,
  RateLimitError,
  ServerError,
  TimeoutError,
  ValidationError,
} from './errors.js'
import type {
  ApiKeyDescription,
  BatchTriggerRequest,
  BatchTriggerResult,
  Campaign,
  CampaignQuery,
  CancelledTask,
  CancelTasksRequest,
  Consent,
  ConsentQuery,
  ConsentRequest,
  ContactabilityDecision,
  ContactabilityRequest,
  DailyCountQuery,
  DailyCounts,
  Erasure,
  ErasureRequest,
  Event,
  EventQuery,
  EventWithDeliveries,
  Interaction,
  InteractionResultRequest,
  ListenForwardReport,
  Redelivery,
  ReachStatistics,
  ReachStatisticsQuery,
  RecordedConsents,
  RedeliverQuery,
  RevokeConsentsRequest,
  RevokedConsents,
  SessionMessage,
  SessionMessageRequest,
  Suppression,
  SuppressionQuery,
  Task,
  TaskQuery,
  TaskSummary,
  Trigger,
  TriggerAccepted,
  TriggerRequest,
  ValidationIssue,
  WebhookEndpoint,
  WebhookEndpointChange,
  WebhookEndpointHealth,
  WebhookEndpointRequest,
  WebhookEndpointWithSecret,
  WebhookRecovery,
  WebhookRecoveryRequest,
  WebhookTestEvent,
} from './types.js'

export interface ClientOptions {
  /** The organization's API key (ctk_...). */
  apiKey: string
  /** Where the service is, e.g. https://triggers.example.com (without /api/v2). */
  baseUrl: string
  /** The fetch to send requests with; the global one by default. */
  fetch?: typeof globalThis.fetch
  /** How many times a request is sent again after a 429, a 503 or a failed connection (default 2). */
  maxRetries?: number
  /** How long one try may take, answer included, in milliseconds (default 60,000). */
  timeoutMs?: number
}

export interface RequestOptions {
  /** Sent as X-Request-ID: the service echoes it, logs it, and it names the request in an ApiError. */
  requestId?: string
  /** Aborts the request, and any wait before a retry. */
  signal?: AbortSignal
}

export interface IdempotentRequestOptions extends RequestOptions {
  /**
   * The Idempotency-Key; a random UUID when not given. The SDK sends the
   * same key on each of its own retries, so a retry never records a second
   * trigger (or sends a second message). Pass your own (the id of the
   * record that caused it) to make your own retries safe too.
   */
  idempotencyKey?: string
}

export type CreateTriggerOptions = IdempotentRequestOptions

/** One page of a list, and where the next one starts: `undefined` on the last page. */
export interface Page<Item> {
  data: Item[]
  nextCursor: string | undefined
}

const DEFAULT_MAX_RETRIES = 2
const DEFAULT_TIMEOUT_MS = 60_000
/** The service's largest page (and what it gives of events and suppressions by default): the iterators ask for it, to make as few requests as they can. */
const MAX_PAGE_SIZE = 100
/** What GET /api/v2/tasks gives when no limit is sent. */
const DEFAULT_TASK_PAGE_SIZE = 50
const FIRST_BACKOFF_MS = 500
const MAX_BACKOFF_MS = 8_000
/** A Retry-After longer than this is not waited out inside one call: the error goes to the caller. */
const MAX_RETRY_AFTER_MS = 60_000

type Query = Record<string, string | number | boolean | undefined>

interface Call {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE'
  path: string
  query?: Query
  body?: unknown
  headers?: Record<string, string>
  /**
   * Whether sending it twice does no harm, so that it may be sent again after
   * a connection failed without an answer (the service may have done it). A
   * 429 or 503 is retried whatever this says: nothing of the request was done.
   */
  repeatable: boolean
  options: RequestOptions | undefined
}

/**
 * A client of the Conversation Trigger Service's API (/api/v2), with an
 * organization API key. Each method returns the answer's `data` and throws
 * an ApiError (of its status's subclass) for an error status, a
 * ConnectionError (TimeoutError) when no answer came, an AbortedError when
 * the caller's signal ended it.
 */
export class ConversationTriggerClient {
  readonly #apiKey: string
  readonly #baseUrl: string
  readonly #fetch: typeof globalThis.fetch
  readonly #maxRetries: number
  readonly #timeoutMs: number

  constructor(options: ClientOptions) {
    this.#apiKey = options.apiKey
    this.#baseUrl = options.baseUrl.replace(/\/+$/, '')
    this.#fetch = options.fetch ?? globalThis.fetch
    this.#maxRetries = options.maxRetries ?? DEFAULT_MAX_RETRIES
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS
  }

  /** Starts one conversation: records the trigger and creates its task. */
  createTrigger(trigger: TriggerRequest, options: CreateTriggerOptions = {}): Promise<TriggerAccepted> {
    const idempotencyKey = options.idempotencyKey ?? randomUUID()
    return this.#send({ method: 'POST', path: '/api/v2/triggers', body: trigger, headers: { 'idempotency-key': idempotencyKey }, repeatable: true, options })
  }

  /**
   * Up to 1,000 triggers in one request, each accepted or refused on its own:
   * one result per trigger, in order, with the status the single endpoint
   * would have given. A trigger without an idempotency_key is given a random
   * one, so that a retry of the batch records none twice.
   */
  createTriggerBatch(triggers: BatchTriggerRequest[], options: RequestOptions = {}): Promise<BatchTriggerResult[]> {
    const keyed = triggers.map((trigger) => ({ ...trigger, idempotency_key: trigger.idempotency_key ?? randomUUID() }))
    return this.#send({ method: 'POST', path: '/api/v2/triggers/batch', body: { triggers: keyed }, repeatable: true, options })
  }

  getTrigger(id: string, options?: RequestOptions): Promise<Trigger> {
    return this.#send({ method: 'GET', path: `/api/v2/triggers/${encodeURIComponent(id)}`, repeatable: true, options })
  }

  getTask(id: string, options?: RequestOptions): Promise<Task> {
    return this.#send({ method: 'GET', path: `/api/v2/tasks/${encodeURIComponent(id)}`, repeatable: true, options })
  }

  /** One page of tasks, newest first; pass `nextCursor` as `before` for the next. */
  async listTasks(query: TaskQuery = {}, options?: RequestOptions): Promise<Page<TaskSummary>> {
    // The limit is always sent, so that a short page is known to be the last.
    const limit = query.limit ?? DEFAULT_TASK_PAGE_SIZE
    const data = await this.#send<TaskSummary[]>({ method: 'GET', path: '/api/v2/tasks', query: { ...query, limit }, repeatable: true, options })
    return { data, nextCursor: data.length < limit ? undefined : data.at(-1)?.id }
  }

  /** Every task the query matches, newest first, page after page. */
  async *tasks(query: Omit<TaskQuery, 'before'> = {}, options?: RequestOptions): AsyncGenerator<TaskSummary> {
    let before: string | undefined
    do {
      const page = await this.listTasks({ limit: MAX_PAGE_SIZE, ...query, before }, options)
      yield* page.data
      before = page.nextCursor
    } while (before !== undefined)
  }

  /** No further attempt starts; the task completes as cancelled (409 conflict if it had already completed). */
  cancelTask(id: string, options?: RequestOptions): Promise<Task> {
    return this.#send({ method: 'POST', path: `/api/v2/tasks/${encodeURIComponent(id)}/cancel`, repeatable: false, options })
  }

  /** Cancels every task not yet completed whose trigger carried one of these ids (of one campaign, if named). */
  cancelTasksByIds(request: CancelTasksRequest, options?: RequestOptions): Promise<CancelledTask[]> {
    return this.#send({ method: 'POST', path: '/api/v2/tasks/cancel', body: request, repeatable: false, options })
  }

  getInteraction(id: string, options?: RequestOptions): Promise<Interaction> {
    return this.#send({ method: 'GET', path: `/api/v2/interactions/${encodeURIComponent(id)}`, repeatable: true, options })
  }

  /** Reports a conversation's result (scope conversations:write). */
  reportInteractionResult(id: string, result: InteractionResultRequest, options?: RequestOptions): Promise<Interaction> {
    return this.#send({ method: 'POST', path: `/api/v2/interactions/${encodeURIComponent(id)}/result`, body: result, repeatable: false, options })
  }

  /**
   * Sends the person of a WhatsApp or SMS interaction a message while the
   * window their latest message opened is open (409 once it has closed),
   * and answers it once the provider took it (scope messages:send).
   */
  sendInteractionMessage(id: string, message: SessionMessageRequest, options: IdempotentRequestOptions = {}): Promise<SessionMessage> {
    const idempotencyKey = options.idempotencyKey ?? randomUUID()
    return this.#send({ method: 'POST', path: `/api/v2/interactions/${encodeURIComponent(id)}/messages`, body: message, headers: { 'idempotency-key': idempotencyKey }, repeatable: true, options })
  }

  pauseCampaign(routingKey: string, query: CampaignQuery = {}, options?: RequestOptions): Promise<Campaign> {
    return this.#send({ method: 'POST', path: `/api/v2/campaigns/${encodeURIComponent(routingKey)}/pause`, query, repeatable: false, options })
  }

  resumeCampaign(routingKey: string, query: CampaignQuery = {}, options?: RequestOptions): Promise<Campaign> {
    return this.#send({ method: 'POST', path: `/api/v2/campaigns/${encodeURIComponent(routingKey)}/resume`, query, repeatable: false, options })
  }

  /** One page of events, oldest first; pass `nextCursor` as `after` for the next. */
  async listEvents(query: EventQuery = {}, options?: RequestOptions): Promise<Page<Event>> {
    const limit = query.limit ?? MAX_PAGE_SIZE
    const data = await this.#send<Event[]>({ method: 'GET', path: '/api/v2/events', query: { ...query, limit }, repeatable: true, options })
    return { data, nextCursor: data.length < limit ? undefined : data.at(-1)?.id }
  }

  /**
   * Every event after `after` (from the first, without it), oldest first, up
   * to the newest committed: a poller keeps the last id it saw and starts
   * after it next time.
   */
  async *events(query: EventQuery = {}, options?: RequestOptions): AsyncGenerator<Event> {
    let after = query.after
    do {
      const page = await this.listEvents({ limit: MAX_PAGE_SIZE, ...query, after }, options)
      yield* page.data
      after = page.nextCursor
    } while (after !== undefined)
  }

  getEvent(id: string, options?: RequestOptions): Promise<EventWithDeliveries> {
    return this.#send({ method: 'GET', path: `/api/v2/events/${encodeURIComponent(id)}`, repeatable: true, options })
  }

  /** The events written about a task, oldest first (the first 200), with their deliveries. */
  listTaskEvents(taskId: string, options?: RequestOptions): Promise<EventWithDeliveries[]> {
    return this.#send({ method: 'GET', path: `/api/v2/tasks/${encodeURIComponent(taskId)}/events`, repeatable: true, options })
  }

  /** Sends an event again, with the same webhook-id, to one endpoint or to every one subscribed to its type. */
  redeliverEvent(id: string, query: RedeliverQuery = {}, options?: RequestOptions): Promise<Redelivery> {
    return this.#send({ method: 'POST', path: `/api/v2/events/${encodeURIComponent(id)}/redeliver`, query, repeatable: false, options })
  }

  /**
   * Records, on the event's page, one try of a local forwarder (as `cli
   * listen` is) to pass the event on, with its receiver's answer. Not
   * retried after a lost connection, which could record the try twice.
   */
  async reportListenForward(eventId: string, report: ListenForwardReport, options?: RequestOptions): Promise<void> {
    await this.#send({ method: 'POST', path: `/api/v2/events/${encodeURIComponent(eventId)}/listen-forwards`, body: report, repeatable: false, options })
  }

  /** Registers an endpoint; the answer holds its secret, shown this once. */
  createWebhookEndpoint(endpoint: WebhookEndpointRequest, options?: RequestOptions): Promise<WebhookEndpointWithSecret> {
    return this.#send({ method: 'POST', path: '/api/v2/webhook-endpoints', body: endpoint, repeatable: false, options })
  }

  listWebhookEndpoints(options?: RequestOptions): Promise<WebhookEndpoint[]> {
    return this.#send({ method: 'GET', path: '/api/v2/webhook-endpoints', repeatable: true, options })
  }

  getWebhookEndpoint(id: string, options?: RequestOptions): Promise<WebhookEndpoint> {
    return this.#send({ method: 'GET', path: `/api/v2/webhook-endpoints/${encodeURIComponent(id)}`, repeatable: true, options })
  }

  updateWebhookEndpoint(id: string, change: WebhookEndpointChange, options?: RequestOptions): Promise<WebhookEndpoint> {
    return this.#send({ method: 'PATCH', path: `/api/v2/webhook-endpoints/${encodeURIComponent(id)}`, body: change, repeatable: true, options })
  }

  /** Deletes an endpoint; what was pending for it is given up. Not retried after a lost connection, which would answer 404 to a delete that was done. */
  async deleteWebhookEndpoint(id: string, options?: RequestOptions): Promise<void> {
    await this.#send({ method: 'DELETE', path: `/api/v2/webhook-endpoints/${encodeURIComponent(id)}`, repeatable: false, options })
  }

  /** A new secret, shown once; for 24 hours both it and the previous one sign. */
  rotateWebhookSecret(id: string, options?: RequestOptions): Promise<WebhookEndpointWithSecret> {
    return this.#send({ method: 'POST', path: `/api/v2/webhook-endpoints/${encodeURIComponent(id)}/rotate-secret`, repeatable: false, options })
  }

  getWebhookEndpointHealth(id: string, options?: RequestOptions): Promise<WebhookEndpointHealth> {
    return this.#send({ method: 'GET', path: `/api/v2/webhook-endpoints/${encodeURIComponent(id)}/health`, repeatable: true, options })
  }

  /** Sends the endpoint a webhook.test event now. */
  sendTestWebhook(id: string, options?: RequestOptions): Promise<WebhookTestEvent> {
    return this.#send({ method: 'POST', path: `/api/v2/webhook-endpoints/${encodeURIComponent(id)}/test`, repeatable: false, options })
  }

  /**
   * After an outage of the receiver: sends now, once and in the order
   * recorded, every event not delivered to the endpoint in the window: those
   * whose delivery failed or was given up, and those waiting for a retry
   * (brought forward: `brought_forward` counts them). A second call queues
   * none of those already on their way, so it is safe to repeat. When `next` is not null, call again with
   * it as `after` (and the same since and until) to go on.
   */
  recoverWebhookEndpoint(id: string, request: WebhookRecoveryRequest, options?: RequestOptions): Promise<WebhookRecovery> {
    return this.#send({ method: 'POST', path: `/api/v2/webhook-endpoints/${encodeURIComponent(id)}/recover`, body: request, repeatable: true, options })
  }

  addSuppression(phone: string, options?: RequestOptions): Promise<Suppression> {
    return this.#send({ method: 'POST', path: '/api/v2/suppressions', body: { phone }, repeatable: false, options })
  }

  /** One page of the suppression list, by number; pass `nextCursor` as `after` for the next. */
  async listSuppressions(query: SuppressionQuery = {}, options?: RequestOptions): Promise<Page<Suppression>> {
    const limit = query.limit ?? MAX_PAGE_SIZE
    const data = await this.#send<Suppression[]>({ method: 'GET', path: '/api/v2/suppressions', query: { ...query, limit }, repeatable: true, options })
    return { data, nextCursor: data.length < limit ? undefined : data.at(-1)?.phone }
  }

  getSuppression(phone: string, options?: RequestOptions): Promise<Suppression> {
    return this.#send({ method: 'GET', path: `/api/v2/suppressions/${encodeURIComponent(phone)}`, repeatable: true, options })
  }

  async removeSuppression(phone: string, options?: RequestOptions): Promise<void> {
    await this.#send({ method: 'DELETE', path: `/api/v2/suppressions/${encodeURIComponent(phone)}`, repeatable: false, options })
  }

  /** Records that the person agreed to be contacted on a channel, for a purpose (scope consents:manage). */
  recordConsent(consent: ConsentRequest, options?: RequestOptions): Promise<Consent> {
    return this.#send({ method: 'POST', path: '/api/v2/consents', body: consent, repeatable: false, options })
  }

  /** Up to 10,000 consents in one request, recorded together or not at all: a 422 names each one refused. */
  recordConsents(consents: ConsentRequest[], options?: RequestOptions): Promise<RecordedConsents> {
    return this.#send({ method: 'POST', path: '/api/v2/consents/batch', body: { consents }, repeatable: false, options })
  }

  /** One page of a number's consents, revoked and expired ones too, newest first; pass `nextCursor` as `before` for the next. */
  async listConsents(query: ConsentQuery, options?: RequestOptions): Promise<Page<Consent>> {
    const limit = query.limit ?? MAX_PAGE_SIZE
    const data = await this.#send<Consent[]>({ method: 'GET', path: '/api/v2/consents', query: { ...query, limit }, repeatable: true, options })
    return { data, nextCursor: data.length < limit ? undefined : data.at(-1)?.id }
  }

  getConsent(id: string, options?: RequestOptions): Promise<Consent> {
    return this.#send({ method: 'GET', path: `/api/v2/consents/${encodeURIComponent(id)}`, repeatable: true, options })
  }

  /** It no longer counts, from now on. Revoking it again keeps the first revocation, so a retry after a lost answer does no harm. */
  revokeConsent(id: string, options?: RequestOptions): Promise<Consent> {
    return this.#send({ method: 'POST', path: `/api/v2/consents/${encodeURIComponent(id)}/revoke`, repeatable: true, options })
  }

  /**
   * Revokes every consent of the number not revoked yet, of one channel or
   * purpose, or all; answers the ids revoked now. Not retried after a lost
   * connection, which would answer none revoked for those the first try did.
   */
  revokeConsentsOfNumber(request: RevokeConsentsRequest, options?: RequestOptions): Promise<RevokedConsents> {
    return this.#send({ method: 'POST', path: '/api/v2/consents/revoke', body: request, repeatable: false, options })
  }

  /** The decision the dispatcher would make before an attempt to the number, now or at `at`, with its reasons; nothing is recorded (scope triggers:read). */
  checkContactability(request: ContactabilityRequest, options?: RequestOptions): Promise<ContactabilityDecision> {
    return this.#send({ method: 'POST', path: '/api/v2/contactability', body: request, repeatable: true, options })
  }

  /** Erases a person's personal data, by one of your ids or their number (scope contacts:erase). */
  eraseContact(request: ErasureRequest, options?: RequestOptions): Promise<Erasure> {
    return this.#send({ method: 'POST', path: '/api/v2/contacts/erase', body: request, repeatable: false, options })
  }

  dailyCounts(query: DailyCountQuery, options?: RequestOptions): Promise<DailyCounts> {
    return this.#send({ method: 'GET', path: '/api/v2/daily-counts', query, repeatable: true, options })
  }

  /** Attempts by the person's local weekday and hour, attempt number, date and time to reach, for a period of local dates (scope triggers:read). */
  reachStatistics(query: ReachStatisticsQuery, options?: RequestOptions): Promise<ReachStatistics> {
    return this.#send({ method: 'GET', path: '/api/v2/reach-statistics', query, repeatable: true, options })
  }

  /** The key this client sends (never the key itself), its scopes and its organization. */
  describeApiKey(options?: RequestOptions): Promise<ApiKeyDescription> {
    return this.#send({ method: 'GET', path: '/api/v2/key', repeatable: true, options })
  }

  /** Sends a request, retrying as ClientOptions says, and returns its answer's `data`. */
  async #send<Data>(call: Call): Promise<Data> {
    const url = `${this.#baseUrl}${call.path}${queryString(call.query)}`
    const headers: Record<string, string> = { accept: 'application/json', authorization: `Bearer ${this.#apiKey}`, ...call.headers }
    if (call.body !== undefined) headers['content-type'] = 'application/json'
    if (call.options?.requestId !== undefined) headers['x-request-id'] = call.options.requestId
    const body = call.body === undefined ? undefined : JSON.stringify(call.body)
    const callerSignal = call.options?.signal
    const sent = { requestId: call.options?.requestId }
    const aborted = () => {
      // A signal's reason is whatever its caller passed to abort(): an Error, or any value.
      const reason: unknown = callerSignal?.reason
      return new AbortedError(`${call.method} ${call.path}: aborted (${reason instanceof Error ? reason.message : String(reason)})`, { ...sent, cause: reason })
    }
    /** The pause before a retry, which the caller's signal ends too. */
    const pause = (ms: number) => sleep(ms, undefined, { signal: callerSignal }).catch(() => Promise.reject(aborted()))
    for (let retry = 0; ; retry++) {
      const timeout = AbortSignal.timeout(this.#timeoutMs)
      let response: Response
      let text: string
      try {
        response = await this.#fetch(url, { method: call.method, headers, body, signal: callerSignal === undefined ? timeout : AbortSignal.any([callerSignal, timeout]) })
        text = await response.text()
      } catch (error) {
        if (callerSignal?.aborted) throw aborted()
        if (!call.repeatable || retry >= this.#maxRetries) {
          if (timeout.aborted) throw new TimeoutError(`${call.method} ${call.path}: no answer within ${this.#timeoutMs} ms`, { ...sent, cause: error })
          throw new ConnectionError(`${call.method} ${call.path}: ${failureOf(error)}`, { ...sent, cause: error })
        }
        await pause(backoffMs(retry))
        continue
      }
      if (response.ok) return (text === '' ? undefined : (JSON.parse(text) as { data: Data }).data) as Data
      const error = apiError(response, text)
      // A 429 or a 503 did nothing of the request: sending it again is always safe.
      const waitMs = error.retryAfterSeconds === undefined ? backoffMs(retry) : error.retryAfterSeconds * 1000
      if ((error.status !== 429 && error.status !== 503) || retry >= this.#maxRetries || waitMs > MAX_RETRY_AFTER_MS) throw error
      await pause(waitMs)
    }
  }
}

/** What went wrong with a fetch: Node's says only "fetch failed", its cause why (ECONNREFUSED...). */
function failureOf(error: unknown): string {
  const { message, cause } = error as { message?: string; cause?: { message?: string } }
  return cause?.message ?? message ?? String(error)
}

/** Exponential, with jitter so that many clients refused at once do not all come back at once. */
function backoffMs(retry: number): number {
  const ceiling = Math.min(FIRST_BACKOFF_MS * 2 ** retry, MAX_BACKOFF_MS)
  return ceiling / 2 + Math.random() * (ceiling / 2)
}

function queryString(query: Query | undefined): string {
  const params = new URLSearchParams()
  for (const [name, value] of Object.entries(query ?? {})) if (value !== undefined) params.set(name, String(value))
  const text = params.toString()
  return text === '' ? '' : `?${text}`
}

function apiError(response: Response, text: string): ApiError {
  let body: unknown = text
  try {
    body = JSON.parse(text)
  } catch {
    // Not JSON (a proxy's page, say): kept as text.
  }
  const parsed = (typeof body === 'object' && body !== null ? body : {}) as {
    error?: { code?: string; message?: string }
    detail?: ValidationIssue[]
    metadata?: { request_id?: string }
  }
  const requestId = response.headers.get('x-request-id') ?? parsed.metadata?.request_id
  const retryAfterSeconds = retryAfter(response.headers.get('retry-after'))
  const retryAt = retryAfterSeconds === undefined ? undefined : new Date(Date.now() + retryAfterSeconds * 1000)
  const common = { status: response.status, requestId, retryAfterSeconds, retryAt, body }
  if (response.status === 422 && Array.isArray(parsed.detail)) {
    const first = parsed.detail[0]
    const where = first === undefined ? '' : ` at ${first.loc.join('.')}: ${first.msg}`
    const more = parsed.detail.length > 1 ? ` (and ${parsed.detail.length - 1} more)` : ''
    return new ValidationError({ ...common, code: 'validation_error', message: `Invalid request${where}${more}`, details: parsed.detail })
  }
  return new (errorClassOf(response.status))({
    ...common,
    code: parsed.error?.code ?? `http_${response.status}`,
    message: parsed.error?.message ?? `HTTP ${response.status} ${response.statusText}`,
    details: [],
  })
}

/** The error class of a status a caller branches on; ApiError itself for the others (400, 413...). */
function errorClassOf(status: number): new (init: ApiErrorInit) => ApiError {
  if (status >= 500) return ServerError
  switch (status) {
    case 401:
      return AuthenticationError
    case 403:
      return PermissionError
    case 404:
      return NotFoundError
    case 409:
      return ConflictError
    case 422:
      return ValidationError
    case 429:
      return RateLimitError
    default:
      return ApiError
  }
}

/** Retry-After as seconds: a number of seconds, or an HTTP date. */
function retryAfter(header: string | null): number | undefined {
  if (header === null) return undefined
  if (/^\d+$/.test(header.trim())) return Number(header)
  const date = Date.parse(header)
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - Date.now()) / 1000))
}
