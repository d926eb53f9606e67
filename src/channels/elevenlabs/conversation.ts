/**
 * What ElevenLabs says of a conversation, read into the service's terms: its
 * post-call webhooks (`post_call_transcription`, `call_initiation_failure`;
 * https://elevenlabs.io/docs/eleven-agents/workflows/post-call-webhooks),
 * whose `data` for a transcription is the model GET
 * /v1/convai/conversations/{conversation_id} answers
 * (https://elevenlabs.io/docs/api-reference/conversations/get), and the
 * signature of those webhooks.
 *
 * ElevenLabs publishes no enum of end reasons (`metadata.termination_reason`
 * is free text), so the outcome is read from what is typed:
 * - a call initiation failure's `failure_reason` (`busy`, `no-answer`,
 *   `unknown`), and for `unknown` its telephony body: Twilio's `CallStatus`,
 *   or the SIP status code (486/600/603 busy, 408/480 no answer);
 * - a conversation's `status`: `failed` is a failed call; `done` is a
 *   conversation that took place, unless the agent's voicemail detection tool
 *   reported a voicemail (a system tool result `voicemail_detection_success`
 *   in the transcript). ElevenLabs sends no initiation failure for a call a
 *   machine answered, so without that tool a voicemail counts as reached.
 * `initiated`, `in-progress` and `processing` (over, its analysis pending)
 * are not an end yet.
 */
import { isoOfMs } from '../../domain/isoInstants.ts'
import { createHmac, timingSafeEqual } from 'node:crypto'
import { durationSeconds, instantAfter, instantOfSeconds, storableId } from '../../domain/boundedReaders.ts'
import type { ReportedResult, TranscriptTurn } from '../../domain/conversationResult.ts'
import type { JsonObject, VoiceOutcome } from '../../domain/types.ts'
import { providerResult } from '../../validation/conversationResult.ts'
import type { ProviderReport } from '../channel.ts'
import type { ElevenLabsConfig } from './config.ts'

/** A conversation's end, as the webhook or the GET tells it. */
export interface ConversationEnd {
  outcome: VoiceOutcome
  durationS?: number
  result?: ReportedResult
}

/** The webhook events this service reads; `post_call_audio` (the recording as base64) is not one. */
export const READ_EVENTS = ['post_call_transcription', 'call_initiation_failure'] as const
type ReadEvent = (typeof READ_EVENTS)[number]

/** A webhook body's envelope: enough to find its interaction before its signature is checked. */
export interface WebhookEvent {
  type: ReadEvent
  /** Unix ms. */
  at: number | undefined
  conversationId: string
  agentId: string | undefined
  /** The `interaction_id` dynamic variable the start gave, when the data carries it (a failure to initiate does not). */
  interactionId: string | undefined
  data: Record<string, unknown>
}

/** Undefined for an event this service does not read, or a body that is not one (no conversation id a conversation can have). */
export function webhookEvent(body: unknown): WebhookEvent | undefined {
  if (!isObject(body) || !READ_EVENTS.includes(body.type as ReadEvent) || !isObject(body.data)) return undefined
  const { data } = body
  const conversationId = storableId(data.conversation_id)
  if (conversationId === undefined) return undefined
  const variables = isObject(data.conversation_initiation_client_data) ? data.conversation_initiation_client_data.dynamic_variables : undefined
  const interactionId = isObject(variables) && typeof variables.interaction_id === 'string' ? variables.interaction_id : undefined
  return {
    type: body.type as ReadEvent,
    at: secondsToMs(body.event_timestamp),
    conversationId,
    agentId: typeof data.agent_id === 'string' ? data.agent_id : undefined,
    interactionId,
    data,
  }
}

/** The report a verified webhook makes: always a final one, for both events read are sent once the call is over. */
export function reportFromWebhook(event: WebhookEvent, config: ElevenLabsConfig, now: number): ProviderReport {
  const at = event.at ?? now
  if (event.type === 'call_initiation_failure') return { kind: 'final', providerRef: event.conversationId, outcome: initiationFailureOutcome(event.data), at, durationS: 0 }
  // Sent after the analysis, so whatever its status word says the conversation is over.
  const end = conversationEnd({ ...event.data, status: event.data.status === 'failed' ? 'failed' : 'done' }, config)!
  return { kind: 'final', providerRef: event.conversationId, at, ...end }
}

/** The outcome of a call ElevenLabs could not connect. */
export function initiationFailureOutcome(data: Record<string, unknown>): VoiceOutcome {
  if (data.failure_reason === 'busy') return 'busy'
  if (data.failure_reason === 'no-answer') return 'no_answer'
  const metadata = isObject(data.metadata) ? data.metadata : {}
  const body = isObject(metadata.body) ? metadata.body : {}
  if (body.CallStatus === 'busy') return 'busy'
  if (body.CallStatus === 'no-answer') return 'no_answer'
  const sipStatus = Number(body.sip_status_code ?? body.SipResponseCode)
  if (SIP_BUSY.has(sipStatus)) return 'busy'
  if (SIP_NO_ANSWER.has(sipStatus)) return 'no_answer'
  return 'failed'
}

/** RFC 3261: 486 Busy Here, 600 Busy Everywhere, 603 Decline; 408 Request Timeout and 480 Temporarily Unavailable are a phone that was not picked up. */
const SIP_BUSY = new Set([486, 600, 603])
const SIP_NO_ANSWER = new Set([408, 480])

/** A conversation's end from its model (the GET's body, a transcription webhook's data); undefined while it is not over. */
export function conversationEnd(conversation: Record<string, unknown>, config: ElevenLabsConfig): ConversationEnd | undefined {
  const outcome = conversationOutcome(conversation)
  if (outcome === undefined) return undefined
  const metadata = isObject(conversation.metadata) ? conversation.metadata : {}
  const durationS = durationSeconds(metadata.call_duration_secs, 1000)
  const end: ConversationEnd = { outcome }
  if (durationS !== undefined) end.durationS = durationS
  const result = conversationResult(conversation, config)
  if (result !== undefined) end.result = result
  return end
}

/** The outcome of a conversation by its `status` and transcript; undefined while it is not over. */
export function conversationOutcome(conversation: Record<string, unknown>): VoiceOutcome | undefined {
  if (conversation.status === 'failed') return 'failed'
  if (conversation.status !== 'done') return undefined
  return voicemailDetected(conversation.transcript) ? 'voicemail' : 'completed'
}

function voicemailDetected(transcript: unknown): boolean {
  return arrayOf(transcript).some(
    (turn) => isObject(turn) && arrayOf(turn.tool_results).some((tool) => isObject(tool) && isObject(tool.result) && tool.result.result_type === 'voicemail_detection_success'),
  )
}

/**
 * The conversation's result: its transcript (the agent's turns and the
 * person's), the analysis' summary, the data collection items' values as
 * `data`, and the client's disposition, callback time and opt-out from the
 * items the campaign names. ElevenLabs keeps the recording behind its API key
 * (GET .../audio), so no recording URL is given.
 */
export function conversationResult(conversation: Record<string, unknown>, config: ElevenLabsConfig): ReportedResult | undefined {
  const analysis = isObject(conversation.analysis) ? conversation.analysis : {}
  const metadata = isObject(conversation.metadata) ? conversation.metadata : {}
  const startMs = secondsToMs(metadata.start_time_unix_secs)
  const transcript: TranscriptTurn[] = []
  for (const turn of arrayOf(conversation.transcript)) {
    if (!isObject(turn) || typeof turn.message !== 'string' || turn.message.trim() === '') continue
    const role = turn.role === 'agent' ? 'agent' : turn.role === 'user' ? 'contact' : undefined
    if (role === undefined) continue
    const saidAt = instantAfter(startMs, turn.time_in_call_secs)
    const at = saidAt === undefined ? undefined : isoOfMs(saidAt)
    transcript.push(at === undefined ? { role, text: turn.message } : { role, text: turn.message, at })
  }
  const data: JsonObject = {}
  if (isObject(analysis.data_collection_results)) {
    for (const [id, item] of Object.entries(analysis.data_collection_results)) {
      if (isObject(item) && item.value !== undefined && item.value !== null) data[id] = item.value as JsonObject[string]
    }
  }
  const named = (field: string | undefined) => (field === undefined ? undefined : data[field])
  const disposition = named(config.dispositionField)
  const callbackAt = named(config.callbackAtField)
  return providerResult({
    transcript: transcript.length > 0 ? transcript : undefined,
    summary: typeof analysis.transcript_summary === 'string' && analysis.transcript_summary !== '' ? analysis.transcript_summary : undefined,
    data: Object.keys(data).length > 0 ? data : undefined,
    disposition: typeof disposition === 'string' ? disposition : undefined,
    callback_at: typeof callbackAt === 'string' ? callbackAt : undefined,
    opt_out: named(config.optOutField) === true ? true : undefined,
  })
}

/**
 * How far in the past a signature's timestamp may be: 30 minutes, as
 * ElevenLabs' SDK (`webhooks.constructEvent`) and the post-call webhooks
 * page's example check; like them, no bound on the future.
 */
export const SIGNATURE_TOLERANCE_MS = 30 * 60 * 1000

/**
 * Whether `header` (ElevenLabs-Signature: `t=<unix s>,v0=<hex>`) carries the
 * hex HMAC-SHA256, under the webhook's shared secret, of `<t>.<raw body>`,
 * with `t` recent enough at `now`.
 */
export function verifyElevenLabsSignature(secret: string, rawBody: Buffer, header: string | undefined, now: number): boolean {
  if (secret === '' || header === undefined) return false
  let timestamp: string | undefined
  const signatures: string[] = []
  for (const part of header.split(',')) {
    const equals = part.indexOf('=')
    const [name, value] = [part.slice(0, equals).trim(), part.slice(equals + 1).trim()]
    if (name === 't') timestamp = value
    else if (name === 'v0') signatures.push(value)
  }
  if (timestamp === undefined || !/^[0-9]{1,12}$/.test(timestamp) || Number(timestamp) * 1000 < now - SIGNATURE_TOLERANCE_MS) return false
  const expected = createHmac('sha256', secret).update(`${timestamp}.`).update(rawBody).digest()
  return signatures.some((signature) => /^[0-9a-fA-F]{64}$/.test(signature) && timingSafeEqual(Buffer.from(signature, 'hex'), expected))
}

/** ElevenLabs' instants are whole Unix seconds. */
function secondsToMs(value: unknown): number | undefined {
  return Number.isSafeInteger(value) ? instantOfSeconds(value) : undefined
}

function arrayOf(value: unknown): unknown[] {
  return Array.isArray(value) ? value : []
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
