/**
 * Graph API errors, as the Cloud API returns them for a refused send:
 * `{"error": {"message", "type", "code", "error_subcode"?, "error_data"?:
 * {"messaging_product", "details"}, "fbtrace_id"}}`, and which of them a later
 * attempt could get past. The codes and their meanings are those of Meta's
 * "Cloud API error codes" and "Graph API error handling" pages.
 */
import { isObject } from './config.ts'

export interface GraphError {
  code: number
  message: string
  type: string | undefined
  subcode: number | undefined
  details: string | undefined
  fbtraceId: string | undefined
}

/** The error a Graph API answer carries, or undefined when its body is not one. */
export function graphErrorOf(body: unknown): GraphError | undefined {
  if (!isObject(body) || !isObject(body.error)) return undefined
  const { code, message, type, error_subcode: subcode, error_data: data, fbtrace_id: fbtraceId } = body.error
  if (typeof code !== 'number') return undefined
  return {
    code,
    message: typeof message === 'string' ? message : '',
    type: typeof type === 'string' ? type : undefined,
    subcode: typeof subcode === 'number' ? subcode : undefined,
    details: isObject(data) && typeof data.details === 'string' ? data.details : undefined,
    fbtraceId: typeof fbtraceId === 'string' ? fbtraceId : undefined,
  }
}

/**
 * Codes a later attempt may get past: throttling (the app's, the business
 * account's, the pair's, spam protection), Meta's transient failures, a
 * template paused for a few hours for its quality, an account in maintenance.
 */
const TRANSIENT_CODES = new Set([
  1, // API Unknown: possibly a temporary server problem
  2, // API Service: temporary downtime or overload
  4, // API Too Many Calls: app rate limit
  17, // API User Too Many Calls
  341, // Application limit reached
  368, // Temporarily blocked for policy violations
  613, // Calls to this API exceeded the rate limit
  80007, // WhatsApp Business Account rate limit
  130429, // Cloud API throughput reached
  131000, // Something went wrong (unknown, Meta suggests retrying)
  131016, // Service unavailable
  131048, // Spam rate limit hit
  131049, // Meta chose not to deliver, to keep engagement healthy: Meta suggests retrying later
  131056, // Pair rate limit: too many messages to this number
  131057, // Business account in maintenance mode
  132015, // Template paused for low quality
  133004, // Server temporarily unavailable
])

/**
 * Codes no retry gets past until someone changes the campaign, the
 * credentials or the account, or that are about this recipient for good.
 */
const PERMANENT_CODES = new Set([
  0, // AuthException
  3, // API Method: capability or permission missing
  10, // Permission denied
  100, // Invalid parameter (also an unknown phone number ID, subcode 33)
  104, // No access token
  190, // Access token invalid or expired
  130472, // Recipient is in a marketing message experiment holdout
  130497, // Business may not message users in this country
  131005, // Access denied
  131008, // Required parameter missing
  131009, // Parameter value not valid
  131021, // Recipient is the sender
  131026, // Undeliverable: not on WhatsApp, old app, or terms not accepted
  131031, // Business account locked
  131037, // Display name not approved
  131042, // Payment problem on the business account
  131045, // Phone number certificate problem
  131047, // Re-engagement needed (a non-template outside the window)
  131050, // Recipient stopped marketing messages
  131051, // Unsupported message type
  132000, // Template parameter count mismatch
  132001, // Template does not exist in that language
  132005, // Template text too long once filled
  132007, // Template format character policy violated
  132012, // Template parameter format mismatch
  132016, // Template disabled
  132018, // Template parameter text not allowed (newlines, tabs, long space runs)
  133000, // Incomplete deregistration of the number
  133010, // Phone number not registered on the Cloud API
  135000, // Generic user error in the request's parameters
])

/**
 * Throttling that turns a send away before it is accepted, and that clears
 * within seconds: 130429 (the phone number's throughput, messages per second)
 * and 131056 (too many messages to one recipient in a short time). Such a
 * send is deferred, costing no attempt, rather than refused.
 */
const THROTTLING_CODES = new Set([130429, 131056])

/** Undeliverable: the number is not on WhatsApp (or has an old app, or has not accepted the terms); a call may still reach it. */
export const NOT_ON_WHATSAPP_CODE = 131026
/** 131047, "Re-engagement message": a message other than a template outside the person's customer service window. */
export const WINDOW_CLOSED_CODE = 131047

/** Whether the error is throttling a moment's wait gets past (the send is then deferred). */
export function isThrottling(error: GraphError): boolean {
  return THROTTLING_CODES.has(error.code)
}

/**
 * Whether retrying cannot help. 200–299 are Graph's permission errors. A code
 * in neither list is retried: the attempt policy bounds what that costs,
 * while calling it permanent would end the task on a guess.
 */
export function isPermanent(error: GraphError): boolean {
  if (TRANSIENT_CODES.has(error.code)) return false
  return PERMANENT_CODES.has(error.code) || (error.code >= 200 && error.code <= 299)
}

/** A reason for the records: Meta's own words, its details and trace id for support, never a credential. */
export function describeGraphError(httpStatus: number, error: GraphError): string {
  const subcode = error.subcode === undefined ? '' : `, subcode ${error.subcode}`
  const details = error.details === undefined ? '' : ` (${error.details})`
  const trace = error.fbtraceId === undefined ? '' : ` [fbtrace_id ${error.fbtraceId}]`
  return `WhatsApp Cloud API refused the message: HTTP ${httpStatus}, code ${error.code}${subcode}: ${error.message}${details}${trace}`
}
