import type { ValidationIssue } from './types.js'

/** Every error this SDK throws is one of these, so that `instanceof ConversationTriggerError` catches them all. */
export class ConversationTriggerError extends Error {
  override name = 'ConversationTriggerError'
}

/**
 * The service answered with an error status. `code` is the error body's
 * stable code (`not_found`, `rate_limited`, `idempotency_key_reused`...);
 * a 422 carries no code of its own, so the SDK names it `validation_error`
 * and lists its problems in `details`.
 */
export class ApiError extends ConversationTriggerError {
  override name = 'ApiError'
  readonly status: number
  readonly code: string
  /** The service's id of the request (the X-Request-ID sent, or its own req_...): quote it when asking why. */
  readonly requestId: string | undefined
  /** A 422's problems, every one at once; empty for any other status. */
  readonly details: ValidationIssue[]
  /** Seconds the service asked to wait before sending the request again (429, 503). */
  readonly retryAfterSeconds: number | undefined
  /** The body as the service sent it, parsed when it was JSON. */
  readonly body: unknown

  constructor(init: { status: number; code: string; message: string; requestId: string | undefined; details: ValidationIssue[]; retryAfterSeconds: number | undefined; body: unknown }) {
    super(init.message)
    this.status = init.status
    this.code = init.code
    this.requestId = init.requestId
    this.details = init.details
    this.retryAfterSeconds = init.retryAfterSeconds
    this.body = init.body
  }
}

/** No answer came: the connection failed or the timeout ran out, on the last try. The cause is the underlying error. */
export class ConnectionError extends ConversationTriggerError {
  override name = 'ConnectionError'
}

/** A webhook that must not be trusted: a missing header, no matching signature, or a timestamp outside the tolerance. */
export class WebhookVerificationError extends ConversationTriggerError {
  override name = 'WebhookVerificationError'
}
