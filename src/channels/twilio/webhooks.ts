/**
 * What Twilio sends to a call's StatusCallback and to its `Url` when it is
 * answered: form-encoded POSTs signed with `X-Twilio-Signature` (Twilio's
 * "Webhooks security" page), carrying the call's fields (`CallSid`,
 * `AccountSid`, `CallStatus`, `AnsweredBy`, `CallDuration`, `Timestamp`, ...).
 */
import { createHmac, timingSafeEqual } from 'node:crypto'
import { instantOfText, storableId } from '../../domain/boundedReaders.ts'
import type { ProviderReport, VoiceOutcome } from '../channel.ts'

/**
 * The URL given to Twilio as a call's StatusCallback. Twilio signs the URL
 * exactly as it was given, so the callback route must verify with this same
 * string, not one rebuilt from the Host header it sees behind a proxy.
 */
export function statusCallbackUrl(publicBaseUrl: string, interactionId: string): string {
  return `${callPath(publicBaseUrl, interactionId)}/status`
}

/**
 * The URL given to Twilio as a call's `Url`: Twilio requests it when the call
 * is answered, signed as its status callbacks are, and the service answers
 * with the TwiML that hands the call to the campaign's conversation.
 */
export function answerUrl(publicBaseUrl: string, interactionId: string): string {
  return `${callPath(publicBaseUrl, interactionId)}/answer`
}

/**
 * The URL given to Twilio as a call's AsyncAmdStatusCallback (a campaign
 * that leaves a message on voicemails): Twilio posts the detection's verdict
 * there, signed as its status callbacks are.
 */
export function amdCallbackUrl(publicBaseUrl: string, interactionId: string): string {
  return `${callPath(publicBaseUrl, interactionId)}/amd`
}

/** The URL a Twilio number's voice webhook is set to ("A call comes in"): a person calling a campaign's number (docs/callbacks.md). */
export function inboundCallUrl(publicBaseUrl: string): string {
  return `${publicBaseUrl.replace(/\/+$/, '')}/providers/twilio/voice/inbound`
}

/** The URL a Twilio number's call status changes are sent to: the end of a call the person made. */
export function inboundStatusUrl(publicBaseUrl: string): string {
  return `${inboundCallUrl(publicBaseUrl)}/status`
}

function callPath(publicBaseUrl: string, interactionId: string): string {
  return `${publicBaseUrl.replace(/\/+$/, '')}/providers/twilio/calls/${encodeURIComponent(interactionId)}`
}

/**
 * Twilio's signature: base64(HMAC-SHA1(auth token, URL followed by every POST
 * parameter's name and value, sorted by name in byte order)). Compared in
 * constant time so that a forger learns nothing from how long a refusal takes.
 */
export function verifyTwilioSignature(authToken: string, url: string, params: Record<string, string>, signature: string | undefined): boolean {
  if (signature === undefined || authToken === '') return false
  let signed = url
  // The default sort compares UTF-16 code units, which is byte order for the ASCII names Twilio sends.
  for (const name of Object.keys(params).sort()) signed += name + params[name]
  const expected = createHmac('sha1', authToken).update(signed, 'utf8').digest()
  const given = Buffer.from(signature, 'base64')
  return given.length === expected.length && timingSafeEqual(given, expected)
}

/**
 * Whether Twilio signed these parameters for `url` with the account's auth
 * token and named that account: what every request of Twilio's about a
 * campaign (a call's, a text's) must be, to be believed.
 */
export function signedByAccount(account: { accountSid: string; authToken: string | undefined }, url: string, params: Record<string, string>, signature: string | undefined): boolean {
  return account.authToken !== undefined && verifyTwilioSignature(account.authToken, url, params, signature) && params.AccountSid === account.accountSid
}

const PROGRESS_STATUSES: ReadonlySet<string> = new Set(['queued', 'initiated', 'ringing', 'in-progress'])

/**
 * The outcome of a call in a final status (of a callback's `CallStatus` or
 * the Calls resource's `status`), or undefined while it is not over.
 * A fax machine answering is `failed`: no one was reached, and no voicemail
 * was left either.
 */
export function finalOutcome(status: string, answeredBy: string | null | undefined): VoiceOutcome | undefined {
  switch (status) {
    case 'completed':
      if (answeredBy?.startsWith('machine_')) return 'voicemail'
      return answeredBy === 'fax' ? 'failed' : 'completed'
    case 'busy':
      return 'busy'
    case 'no-answer':
      return 'no_answer'
    case 'failed':
    case 'canceled':
      return 'failed'
    default:
      return undefined
  }
}

/**
 * The report a status callback makes, or undefined when it names no call or
 * a status Twilio does not document (so the route can ignore it). Twilio
 * sends `AnsweredBy` only when machine detection was requested; without it a
 * completed call counts as answered by a person.
 */
export function reportFromStatusCallback(params: Record<string, string>, now: number): ProviderReport | undefined {
  const providerRef = storableId(params.CallSid)
  const status = params.CallStatus
  if (providerRef === undefined || status === undefined) return undefined
  // Twilio's timestamps are RFC 2822 ("Tue, 14 May 2024 10:30:00 +0000"), which Date.parse reads.
  const at = instantOfText(params.Timestamp) ?? now
  if (PROGRESS_STATUSES.has(status)) return { kind: 'progress', providerRef, status, at }
  const outcome = finalOutcome(status, params.AnsweredBy)
  if (outcome === undefined) return undefined
  const durationS = secondsOf(params.CallDuration)
  return durationS === undefined ? { kind: 'final', providerRef, outcome, at } : { kind: 'final', providerRef, outcome, at, durationS }
}

/**
 * The provider status the service keeps for a call on which it left the
 * campaign's message, so that a settlement that asks Twilio how the call
 * ended (its last callback lost) still tells `voicemail_left`.
 */
export const MESSAGE_LEFT_STATUS = 'message_left'

/**
 * A call on which the service left the campaign's message ends
 * `voicemail_left` when it ended answered: Twilio's completed callback of an
 * asynchronously detected call carries no AnsweredBy (`completed`), and the
 * Call resource names the machine (`voicemail`). A call that failed or was
 * not answered keeps its outcome.
 */
export function outcomeWithMessageLeft(outcome: VoiceOutcome, messageLeft: boolean): VoiceOutcome {
  return messageLeft && (outcome === 'completed' || outcome === 'voicemail') ? 'voicemail_left' : outcome
}

/** A final report, as {@link outcomeWithMessageLeft} says (the callback route knows by the interaction's handoff, `voicemail`). */
export function withMessageLeft(report: ProviderReport, messageLeft: boolean): ProviderReport {
  if (report.kind !== 'final') return report
  const outcome = outcomeWithMessageLeft(report.outcome as VoiceOutcome, messageLeft)
  return outcome === report.outcome ? report : { ...report, outcome }
}

/** Twilio sends durations as decimal strings of whole seconds. */
function secondsOf(value: string | null | undefined): number | undefined {
  return value !== null && value !== undefined && /^[0-9]{1,9}$/.test(value) ? Number(value) : undefined
}
