import type { ValidationIssue } from './types.js'

/** Every error this SDK throws is one of these, so that `instanceof ConversationTriggerError` catches them all. */
export class ConversationTriggerError extends Error {
  override name = 'ConversationTriggerError'
}

export interface ApiErrorInit {
  status: number
  code: string
  message: string
  requestId: string | undefined
  details: ValidationIssue[]
  retryAfterSeconds: number | undefined
  retryAt: Date | undefined
  body: unknown
}

/**
 * The service answered with an error status. `code` is the error body's
 * stable code (`not_found`, `rate_limited`, `idempotency_key_reused`...);
 * a 422 carries no code of its own, so the SDK names it `validation_error`
 * and lists its problems in `details`. The statuses a caller branches on
 * have a subclass each (AuthenticationError... ServerError); any other
 * (400, 413...) is an ApiError itself.
 */
export class ApiError extends ConversationTriggerError {
  override name = 'ApiError'
  readonly status: number
  readonly code: string
  /** The service's id of the request (the X-Request-ID sent, or its own req_...): quote it when asking why. */
  readonly requestId: string | undefined
  /** A 422's problems, every one at once (ValidationError's `detail`); empty for any other status. */
  readonly details: ValidationIssue[]
  /** Seconds the service asked to wait before sending the request again (429, 503), from Retry-After. */
  readonly retryAfterSeconds: number | undefined
  /** The same wait as an instant: when the request may be sent again. */
  readonly retryAt: Date | undefined
  /** The body as the service sent it, parsed when it was JSON. */
  readonly body: unknown

  constructor(init: ApiErrorInit) {
    super(init.message)
    this.status = init.status
    this.code = init.code
    this.requestId = init.requestId
    this.details = init.details
    this.retryAfterSeconds = init.retryAfterSeconds
    this.retryAt = init.retryAt
    this.body = init.body
  }
}

/** 401: the API key is missing, unknown or revoked. */
export class AuthenticationError extends ApiError {
  override name = 'AuthenticationError'
}

/** 403: the key lacks the scope the operation needs. */
export class PermissionError extends ApiError {
  override name = 'PermissionError'
}

/** 404: no such resource in the key's organization. */
export class NotFoundError extends ApiError {
  override name = 'NotFoundError'
}

/** 409: the resource's state refuses the request (a task already completed, an Idempotency-Key reused...): `code` says which. */
export class ConflictError extends ApiError {
  override name = 'ConflictError'
}

/** 422: the request is invalid; `detail` lists every problem, as the API's body does. */
export class ValidationError extends ApiError {
  override name = 'ValidationError'
  /** The body's `detail`, each `{type, loc, msg, input}`. */
  readonly detail: ValidationIssue[]

  constructor(init: ApiErrorInit) {
    super(init)
    this.detail = init.details
  }
}

/** 429: the organization's rate limit, or a sender's pace, is taken; `retryAfterSeconds` and `retryAt` say when to come back. */
export class RateLimitError extends ApiError {
  override name = 'RateLimitError'
}

/** 5xx: the service failed, or is unavailable for now (503, with Retry-After). */
export class ServerError extends ApiError {
  override name = 'ServerError'
}

/** The X-Request-ID the SDK sent, when the caller gave one: no answer came to echo it. */
interface SentRequest {
  requestId: string | undefined
}

/** No answer came: the connection failed, on the last try. The cause is the underlying error. */
export class ConnectionError extends ConversationTriggerError {
  override name = 'ConnectionError'
  readonly requestId: string | undefined

  constructor(message: string, init: SentRequest & { cause: unknown }) {
    super(message, { cause: init.cause })
    this.requestId = init.requestId
  }
}

/** No answer came within the client's `timeoutMs`, on the last try: a kind of ConnectionError. */
export class TimeoutError extends ConnectionError {
  override name = 'TimeoutError'
}

/** The caller's AbortSignal ended the request (or the wait before a retry); `cause` is the signal's reason. */
export class AbortedError extends ConversationTriggerError {
  override name = 'AbortedError'
  readonly requestId: string | undefined

  constructor(message: string, init: SentRequest & { cause: unknown }) {
    super(message, { cause: init.cause })
    this.requestId = init.requestId
  }
}

/** A webhook that must not be trusted: a missing header, no matching signature, or a timestamp outside the tolerance. */
export class WebhookVerificationError extends ConversationTriggerError {
  override name = 'WebhookVerificationError'
}
