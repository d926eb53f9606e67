/**
 * Retell's call object as its webhooks and "Get Call" carry it, read into
 * what the service keeps: an outcome from `call_status` and
 * `disconnection_reason`, and a conversation's result from the transcript,
 * the recording and the post-call analysis. Webhooks are `{"event", "call"}`
 * JSON bodies signed in `x-retell-signature`.
 *
 * Sources: https://docs.retellai.com/features/webhook-overview (events, their
 * call object, retries), https://docs.retellai.com/features/secure-webhook
 * and retell-sdk (TypeScript) v5.60.0 `src/lib/webhook_auth.ts` (the
 * signature), https://docs.retellai.com/api-references/get-call (OpenAPI
 * "Retell SDK" 3.0.0: the call object, `disconnection_reason`'s 34 values),
 * https://docs.retellai.com/reliability/debug-call-disconnect and
 * .../debug-outbound-call (what each reason means); summarized with their
 * sources in docs/providers/voice-platforms.md, sections 2 to 5.
 */
import { isoOfMs } from '../../domain/isoInstants.ts'
import { createHmac, timingSafeEqual } from 'node:crypto'
import { durationSeconds, instantAfter, instantOfMs, storableId } from '../../domain/boundedReaders.ts'
import type { ReportedResult, TranscriptTurn } from '../../domain/conversationResult.ts'
import type { VoiceOutcome } from '../../domain/types.ts'
import { providerResult } from '../../validation/conversationResult.ts'
import type { RetellConfig } from './config.ts'

/** The parts of Retell's call object this service reads; everything is optional on the wire. */
export interface RetellCall {
  call_id: string
  call_status?: string
  disconnection_reason?: string
  start_timestamp?: number
  end_timestamp?: number
  duration_ms?: number
  transcript?: string
  transcript_object?: { role?: string; content?: string; words?: { start?: number }[] }[]
  recording_url?: string
  metadata?: Record<string, unknown>
  call_analysis?: {
    call_summary?: string
    custom_analysis_data?: Record<string, unknown>
    in_voicemail?: boolean
  }
}

export interface RetellWebhook {
  event: string
  call: RetellCall
}

/** A signature older or newer than this is refused (the SDK's and the docs' window), so that a captured request cannot be replayed later. */
const SIGNATURE_TOLERANCE_MS = 5 * 60 * 1000
const SIGNATURE = /^v=(\d+),d=([0-9a-f]{64})$/i

/**
 * Whether `header` is Retell's `v=<unix ms>,d=<hex>` for this exact body:
 * d = hex(HMAC-SHA256(API key, raw body followed by v)), with v within five
 * minutes of `now`. Compared in constant time.
 */
export function verifyRetellSignature(apiKey: string, rawBody: Buffer, header: string | undefined, now: number): boolean {
  if (apiKey === '' || header === undefined) return false
  const match = SIGNATURE.exec(header.trim())
  if (match === null) return false
  const [, timestamp, digest] = match as unknown as [string, string, string]
  if (Math.abs(now - Number(timestamp)) > SIGNATURE_TOLERANCE_MS) return false
  const expected = createHmac('sha256', apiKey).update(rawBody).update(timestamp, 'utf8').digest()
  return timingSafeEqual(Buffer.from(digest, 'hex'), expected)
}

/** A webhook body as Retell sends it, or undefined when it is not one (no event, or no call id a call can have). */
export function readRetellWebhook(body: unknown): RetellWebhook | undefined {
  if (!isRecord(body) || typeof body.event !== 'string' || !isRecord(body.call) || storableId(body.call.call_id) === undefined) return undefined
  return { event: body.event, call: body.call as unknown as RetellCall }
}

/**
 * A phone number's inbound webhook (https://docs.retellai.com/features/inbound-call-webhook):
 * `{"event": "call_inbound", "call_inbound": {"from_number", "to_number",
 * "agent_id"?, "agent_version"?}}`, sent before the call connects, so with
 * no call id. Undefined for any other body, or one without a number called.
 */
export function readRetellInbound(body: unknown): { from: string | undefined; to: string } | undefined {
  if (!isRecord(body) || body.event !== 'call_inbound' || !isRecord(body.call_inbound)) return undefined
  const to = storableId(body.call_inbound.to_number)
  return to === undefined ? undefined : { from: storableId(body.call_inbound.from_number), to }
}

/** When the call started, Unix ms; undefined when Retell does not say or says an instant no one can keep. */
export function callStartedAt(call: RetellCall): number | undefined {
  return instantOfMs(call.start_timestamp)
}

/** When the call ended, Unix ms; undefined as {@link callStartedAt}. */
export function callEndedAt(call: RetellCall): number | undefined {
  return instantOfMs(call.end_timestamp)
}

/** The interaction the service named in the call's metadata when it created it. */
export function interactionIdOf(call: RetellCall): string | undefined {
  const id = call.metadata?.interaction_id
  return typeof id === 'string' ? id : undefined
}

/**
 * `disconnection_reason` → outcome. A reason not listed here (Retell adds
 * values: 34 in SDK v5.60.0) is a failure: another attempt follows, by the
 * campaign's delay for failures. A machine answering (an IVR) is a voicemail:
 * no one was reached. Errors after the person answered
 * (error_llm_websocket_*...) are failures too: the conversation broke off,
 * and the campaign tries again rather than keeping half a conversation.
 */
export const END_REASONS: Readonly<Record<string, VoiceOutcome>> = {
  user_hangup: 'completed',
  agent_hangup: 'completed',
  call_transfer: 'completed',
  transfer_bridged: 'completed',
  transfer_cancelled: 'completed',
  call_take_over: 'completed',
  inactivity: 'completed',
  max_duration_reached: 'completed',
  voicemail_reached: 'voicemail',
  ivr_reached: 'voicemail',
  dial_no_answer: 'no_answer',
  dial_busy: 'busy',
  user_declined: 'busy',
}

/**
 * Reasons that say the number itself cannot be called: another attempt would
 * end the same way, so the task fails rather than spending its attempts.
 * Retell's other refusals to dial (SIP credentials, payment, routing) are the
 * account's, mended by its owner: those are failures worth another attempt.
 */
const PERMANENT_REASONS: ReadonlySet<string> = new Set(['invalid_destination'])

/** Whether a call ended for a reason that another attempt cannot change (PERMANENT_REASONS). */
export function endedForGood(call: RetellCall): boolean {
  return call.disconnection_reason !== undefined && PERMANENT_REASONS.has(call.disconnection_reason)
}

/** Retell's `call_status` values of a call that is not over yet. */
const RUNNING: ReadonlySet<string> = new Set(['registered', 'ongoing'])

/**
 * How a call ended, or undefined while it runs. The analysis' `in_voicemail`
 * (when it is there) tells a voicemail the agent talked to from a person.
 */
export function callOutcome(call: RetellCall): VoiceOutcome | undefined {
  if (call.call_status !== undefined && RUNNING.has(call.call_status)) return undefined
  if (call.call_status === undefined && call.disconnection_reason === undefined) return undefined
  const outcome = (call.disconnection_reason !== undefined && Object.hasOwn(END_REASONS, call.disconnection_reason) ? END_REASONS[call.disconnection_reason] : undefined) ?? 'failed'
  return outcome === 'completed' && call.call_analysis?.in_voicemail === true ? 'voicemail' : outcome
}

/** Whole seconds the call lasted, when Retell says. */
export function callDurationS(call: RetellCall): number | undefined {
  return durationSeconds(call.duration_ms, 1)
}

/**
 * The conversation's result: the transcript (turn by turn from
 * `transcript_object`, else read from the `transcript` text's "Agent:" and
 * "User:" lines), the recording URL, the analysis' summary and its custom data
 * as `data`, with the client's disposition, a callback time and an opt-out read
 * from the data's fields the campaign names. Made by `providerResult`, which
 * cuts what exceeds a result's bounds and leaves out what is not valid (a
 * callback time that is not an instant). Undefined when there is nothing.
 */
export function callResult(call: RetellCall, config: Pick<RetellConfig, 'dispositionField' | 'callbackAtField' | 'optOutField'>): ReportedResult | undefined {
  const analysis = isRecord(call.call_analysis) ? call.call_analysis : undefined
  const data = isRecord(analysis?.custom_analysis_data) ? analysis.custom_analysis_data : undefined
  const field = (name: string) => (data !== undefined && Object.hasOwn(data, name) ? data[name] : undefined)
  const disposition = field(config.dispositionField)
  const callbackAt = field(config.callbackAtField)
  const optOut = field(config.optOutField)
  return providerResult({
    disposition: typeof disposition === 'string' ? disposition : undefined,
    summary: typeof analysis?.call_summary === 'string' ? analysis.call_summary : undefined,
    data: data !== undefined && Object.keys(data).length > 0 ? data : undefined,
    transcript: transcriptOf(call),
    recording_url: call.recording_url,
    callback_at: typeof callbackAt === 'string' ? callbackAt : undefined,
    opt_out: typeof optOut === 'boolean' ? optOut : undefined,
  })
}

const ROLES: Readonly<Record<string, TranscriptTurn['role']>> = { agent: 'agent', user: 'contact' }

function transcriptOf(call: RetellCall): TranscriptTurn[] | undefined {
  if (Array.isArray(call.transcript_object) && call.transcript_object.length > 0) {
    const turns: TranscriptTurn[] = []
    for (const utterance of call.transcript_object) {
      const role = isRecord(utterance) && typeof utterance.role === 'string' ? ROLES[utterance.role] : undefined
      if (role === undefined || typeof utterance.content !== 'string' || utterance.content === '') continue
      // Words carry seconds from the call's start: the turn's first word says when it was said.
      const offsetS = Array.isArray(utterance.words) ? utterance.words[0]?.start : undefined
      const saidAt = instantAfter(callStartedAt(call), offsetS)
      const at = saidAt === undefined ? undefined : isoOfMs(saidAt)
      turns.push(at === undefined ? { role, text: utterance.content } : { role, text: utterance.content, at })
    }
    return turns.length > 0 ? turns : undefined
  }
  if (typeof call.transcript !== 'string' || call.transcript === '') return undefined
  const turns: TranscriptTurn[] = []
  for (const line of call.transcript.split('\n')) {
    const speaker = /^(Agent|User): ?(.*)$/.exec(line)
    if (speaker !== null) turns.push({ role: speaker[1] === 'Agent' ? 'agent' : 'contact', text: speaker[2]! })
    else if (turns.length > 0) turns.at(-1)!.text += `\n${line}`
  }
  // The text ends each line with a newline: a turn is what its lines say, without the last one's.
  const said = turns.map((turn) => ({ ...turn, text: turn.text.trimEnd() })).filter((turn) => turn.text !== '')
  return said.length > 0 ? said : undefined
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
