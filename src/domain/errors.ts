/**
 * The two error shapes of the API.
 * - 422: the FastAPI/pydantic `detail` array ({@link ValidationFailed}).
 * - everything else: `{"error": {"code", "message"}}` ({@link ApiError}),
 *   with `code` from the closed union below. Clients branch on the code,
 *   never on the message.
 */

export type ErrorCode =
  | 'bad_request'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'conflict'
  | 'idempotency_key_reused'
  | 'idempotency_key_in_use'
  | 'payload_too_large'
  | 'rate_limited'
  | 'provider_error'
  | 'internal_error'
  | 'service_unavailable'

export const STATUS_BY_CODE: Record<ErrorCode, number> = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  idempotency_key_reused: 409,
  idempotency_key_in_use: 409,
  payload_too_large: 413,
  rate_limited: 429,
  provider_error: 502,
  internal_error: 500,
  service_unavailable: 503,
}

export class ApiError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    /** Sent as Retry-After (seconds): when the request may succeed if sent again. */
    readonly retryAfterS?: number,
  ) {
    super(message)
  }
}

/** One entry of a 422 `detail` array, as pydantic v2 reports it through FastAPI. */
export interface ErrorDetail {
  type: string
  loc: (string | number)[]
  msg: string
  input: unknown
  ctx?: Record<string, unknown>
}

export class ValidationFailed extends Error {
  constructor(readonly detail: ErrorDetail[]) {
    super(`request validation failed (${detail.length} errors)`)
  }
}

/** Why a field's value is refused: the `msg` and `ctx` of its `value_error` entry. */
export interface Refusal {
  msg: string
  ctx: Record<string, unknown>
}

/** What a pydantic field validator raising `ValueError(message)` reports. */
export function refuse(message: string): Refusal {
  return { msg: `Value error, ${message}`, ctx: { error: {} } }
}

export function valueError(loc: ErrorDetail['loc'], input: unknown, message: string): ErrorDetail {
  const { msg, ctx } = refuse(message)
  return { type: 'value_error', loc, msg, input, ctx }
}
