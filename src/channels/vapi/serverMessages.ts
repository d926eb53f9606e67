/**
 * What Vapi sends to a server URL (https://docs.vapi.ai/server-url/events;
 * openapi "Vapi API" v1.0 `ServerMessageStatusUpdate`,
 * `ServerMessageEndOfCallReport`, `Artifact`, `Analysis`): a POST of
 * `{"message": {...}}`, of which two types matter here:
 * - `status-update`: the call's `status` (scheduled, queued, ringing,
 *   in-progress, forwarding, ended);
 * - `end-of-call-report`: `endedReason`, `startedAt`/`endedAt`, the
 *   `artifact` (`messages`, `transcript`, `recordingUrl`) and the
 *   `analysis` (`summary`, `structuredData`), once the analysis is done.
 * Each carries the `call`, whose `assistantOverrides.metadata` holds what
 * the service gave at start (the interaction id). `GET /call/{id}` answers
 * the same fields on the Call itself, so one reading serves both.
 *
 * Signed by the server URL's HMAC credential
 * (https://docs.vapi.ai/server-url/server-authentication; server-sdk-typescript
 * `HmacAuthenticationPlan`), with its defaults: HMAC-SHA256 in hex in
 * `x-signature`, over `{timestamp}.{body}` with the `x-timestamp` header's
 * value.
 */
import { createHmac, timingSafeEqual } from 'node:crypto'
import { isoOfMs } from '../../domain/isoInstants.ts'
import { durationSeconds, instantOfMs, instantOfText, storableId } from '../../domain/boundedReaders.ts'
import type { ReportedResult, TranscriptTurn } from '../../domain/conversationResult.ts'
import { providerResult } from '../../validation/conversationResult.ts'
import type { InboundCallAsk } from '../callbacks.ts'
import type { ProviderReport, SettledInteraction } from '../channel.ts'
import type { VapiConfig } from './config.ts'
import { outcomeOfEndedReason } from './endedReason.ts'

export const SIGNATURE_HEADER = 'x-signature'
export const TIMESTAMP_HEADER = 'x-timestamp'
/** How far a signed timestamp may be from the service's clock: a replay window, as Retell's and Stripe's five minutes. */
const TIMESTAMP_TOLERANCE_MS = 5 * 60 * 1000
/** Vapi does not say whether its timestamp counts seconds or milliseconds: a number this large is milliseconds. */
const MILLISECONDS_FROM = 1e12
const HEX_SHA256 = /^(?:sha256=)?([0-9a-fA-F]{64})$/

/**
 * Whether the signature is the hex HMAC-SHA256, under `secret`, of the
 * timestamp, a dot and the exact body bytes, and the timestamp (Unix seconds
 * or milliseconds) is within five minutes of `now`. A `sha256=` prefix
 * (a credential's signaturePrefix) is allowed.
 */
export function verifyVapiSignature(
  secret: string,
  rawBody: Buffer,
  signature: string | undefined,
  timestamp: string | undefined,
  now: number,
): boolean {
  if (secret === '' || signature === undefined || timestamp === undefined || !/^[0-9]{1,16}$/.test(timestamp)) return false
  const match = HEX_SHA256.exec(signature.trim())
  if (match === null) return false
  const stamped = Number(timestamp)
  const at = stamped >= MILLISECONDS_FROM ? stamped : stamped * 1000
  if (Math.abs(now - at) > TIMESTAMP_TOLERANCE_MS) return false
  const expected = createHmac('sha256', secret).update(`${timestamp}.`).update(rawBody).digest()
  return timingSafeEqual(Buffer.from(match[1] as string, 'hex'), expected)
}

/** A server message, as far as the service reads it before knowing whose it is. */
export interface ServerMessage {
  type: string
  /** Vapi's id of the call: the interaction's providerRef. */
  callId: string
  /** The interaction id the service put in the call's assistantOverrides.metadata, when there. */
  interactionId: string | undefined
  message: Record<string, unknown>
}

/** The message of a server URL request's parsed body, or undefined when it names no call (or a call id no call can have). */
export function serverMessageOf(body: unknown): ServerMessage | undefined {
  const message = isObject(body) ? body.message : undefined
  if (!isObject(message) || typeof message.type !== 'string') return undefined
  const call = isObject(message.call) ? message.call : undefined
  const callId = storableId(call?.id)
  if (callId === undefined) return undefined
  return { type: message.type, callId, interactionId: interactionIdOf(call), message }
}

/** The interaction id the service gave a call (in a server message's `call`, or the Call a GET answers). */
function interactionIdOf(call: Record<string, unknown> | undefined): string | undefined {
  const overrides = isObject(call?.assistantOverrides) ? call.assistantOverrides : undefined
  const metadata = isObject(overrides?.metadata) ? overrides.metadata : undefined
  return typeof metadata?.interaction_id === 'string' ? metadata.interaction_id : undefined
}

/** Whether a server URL request's parsed body is an `assistant-request`. */
export function isAssistantRequest(body: unknown): boolean {
  return isObject(body) && isObject(body.message) && body.message.type === 'assistant-request'
}

/**
 * The ask of an `assistant-request`: Vapi's id of the call, the caller
 * (`customer.number`), and the phone number called, by its Vapi id (a
 * campaign's `phone_number_id`). Undefined for any other message, or one
 * that names no number.
 */
export function inboundCallAsk(message: ServerMessage): InboundCallAsk | undefined {
  if (message.type !== 'assistant-request') return undefined
  const body = message.message
  const call = isObject(body.call) ? body.call : {}
  const phoneNumber = isObject(body.phoneNumber) ? body.phoneNumber : {}
  const customer = isObject(call.customer) ? call.customer : isObject(body.customer) ? body.customer : {}
  const number = storableId(call.phoneNumberId) ?? storableId(phoneNumber.id)
  if (number === undefined) return undefined
  return { call: { ref: message.callId }, from: storableId(customer.number), number: { field: 'phone_number_id', value: number } }
}

/** The statuses of a call not over yet (the Call's `status` enum, but ended and the two failures of a lookup). */
export const LIVE_STATUSES: ReadonlySet<string> = new Set(['scheduled', 'queued', 'ringing', 'in-progress', 'forwarding'])

/**
 * The report a server message makes, or undefined for one that changes
 * nothing. A `status-update` to `ended` is not the end here: the
 * end-of-call-report that follows it carries the end reason with the
 * transcript and analysis, and an interaction finalized without its result
 * would keep none that came after. When that report is lost (Vapi does not
 * retry by default), the GET at the settle time ends the interaction.
 */
export function reportOfMessage(message: ServerMessage, config: VapiConfig, now: number): ProviderReport | undefined {
  const body = message.message
  if (message.type === 'status-update') {
    const status = body.status
    if (typeof status !== 'string' || !LIVE_STATUSES.has(status)) return undefined
    return { kind: 'progress', providerRef: message.callId, status, at: instantOf(body.timestamp) ?? now }
  }
  if (message.type !== 'end-of-call-report') return undefined
  const ended = endOfCall(body, config)
  const at = instantOf(body.endedAt) ?? instantOf(body.timestamp) ?? now
  const report: ProviderReport = { kind: 'final', providerRef: message.callId, outcome: ended.outcome, at }
  if (ended.durationS !== undefined) report.durationS = ended.durationS
  if (ended.result !== undefined) report.result = ended.result
  return report
}

/**
 * How a call ended, from an end-of-call-report or the Call a GET answers
 * (both carry `endedReason`, `startedAt`, `endedAt`, `artifact` and
 * `analysis`).
 */
export function endOfCall(source: Record<string, unknown>, config: VapiConfig): SettledInteraction {
  const endedReason = typeof source.endedReason === 'string' ? source.endedReason : undefined
  const ended: SettledInteraction = { outcome: outcomeOfEndedReason(endedReason) }
  const startedAt = instantOf(source.startedAt)
  const endedAt = instantOf(source.endedAt)
  const durationS = startedAt !== undefined && endedAt !== undefined ? durationSeconds(endedAt - startedAt, 1) : undefined
  if (durationS !== undefined) ended.durationS = durationS
  const result = resultOf(source, config)
  if (result !== undefined) ended.result = result
  return ended
}

/**
 * The conversation's result: the analysis' summary and structured data
 * (`data`, whole), the client's disposition, callback time and opt-out read
 * from the structured data's fields the config names, the transcript turn
 * by turn, and the recording's URL; made valid by `providerResult`.
 */
export function resultOf(source: Record<string, unknown>, config: VapiConfig): ReportedResult | undefined {
  const analysis = isObject(source.analysis) ? source.analysis : {}
  const artifact = isObject(source.artifact) ? source.artifact : {}
  const data = isObject(analysis.structuredData) ? analysis.structuredData : undefined
  const field = (name: string | undefined) => (name === undefined || data === undefined ? undefined : data[name])
  const recording = isObject(artifact.recording) && isObject(artifact.recording.mono) ? artifact.recording.mono.combinedUrl : undefined
  const optOut = field(config.optOutField)
  return providerResult({
    disposition: field(config.dispositionField),
    summary: analysis.summary,
    data,
    transcript: transcriptOf(artifact.messages) ?? transcriptOfText(artifact.transcript ?? source.transcript),
    recording_url: artifact.recordingUrl ?? recording ?? source.recordingUrl,
    callback_at: field(config.callbackAtField),
    opt_out: typeof optOut === 'boolean' ? optOut : undefined,
  })
}

/** Vapi's roles for the two sides: `bot` (the assistant; `assistant` in its OpenAI-formatted copy) and `user`. */
const ROLES: Record<string, TranscriptTurn['role']> = { bot: 'agent', assistant: 'agent', user: 'contact' }

/** `artifact.messages` as turns: what the assistant and the person said, with when (`time`, Unix ms); system prompts and tool calls left out. */
function transcriptOf(messages: unknown): TranscriptTurn[] | undefined {
  if (!Array.isArray(messages)) return undefined
  const turns: TranscriptTurn[] = []
  for (const message of messages) {
    if (!isObject(message) || typeof message.role !== 'string' || typeof message.message !== 'string') continue
    const role = ROLES[message.role]
    if (role === undefined || message.message.trim() === '') continue
    const said = instantOf(message.time)
    const at = said === undefined ? undefined : isoOfMs(said)
    turns.push(at === undefined ? { role, text: message.message } : { role, text: message.message, at })
  }
  return turns.length === 0 ? undefined : turns
}

/** The transcript as text ("AI: …" and "User: …" lines), when no messages came. */
function transcriptOfText(text: unknown): TranscriptTurn[] | undefined {
  if (typeof text !== 'string') return undefined
  const turns: TranscriptTurn[] = []
  for (const line of text.split('\n')) {
    const match = /^(AI|User):\s*(.*\S)\s*$/.exec(line)
    if (match !== null) turns.push({ role: match[1] === 'AI' ? 'agent' : 'contact', text: match[2] as string })
  }
  return turns.length === 0 ? undefined : turns
}

/** Vapi's instants: ISO 8601 strings (`startedAt`, `endedAt`) or Unix milliseconds (`timestamp`, a message's `time`). */
function instantOf(value: unknown): number | undefined {
  return typeof value === 'number' ? instantOfMs(value) : instantOfText(value)
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
