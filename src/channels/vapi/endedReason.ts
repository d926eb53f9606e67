/**
 * How a Vapi call ended (`endedReason`, https://docs.vapi.ai/calls/call-ended-reason)
 * as the service's voice outcome. Vapi's enum is long and grows (571 values
 * in server-sdk-typescript 2.0.0, 627 in its openapi of 2026-08), so the
 * reasons are read by rules, not listed one by one, and anything unknown is
 * a failed attempt, which the campaign's attempt policy may try again.
 *
 * - No answer: `customer-did-not-answer`, and a SIP 408 or 480 on the
 *   outbound leg ("phone rang but no answer").
 * - Busy: `customer-busy`, and a SIP 486, 600 or 603 (busy everywhere,
 *   declined) on the outbound leg.
 * - Voicemail: `voicemail`.
 * - Completed (a conversation took place): either side ended the call, an
 *   end-call phrase, a forward or transfer (the person was reached), silence
 *   or the maximum duration after the person answered, the telephony
 *   provider's own end of a call in progress, a call-ending hook.
 * - Failed, everything else: the call could not start (the assistant or the
 *   number cannot be had, the subscription, credentials, concurrency),
 *   Vapi's or a provider's fault, a call cancelled or deleted, and an error
 *   in the middle of a call (`call.in-progress.error-*`): a conversation cut
 *   by a fault is not one the client can use, so it is another attempt
 *   rather than a reached person.
 */
import type { VoiceOutcome } from '../channel.ts'

const NO_ANSWER_SIP = /-sip-(408|480)-/
const BUSY_SIP = /-sip-(486|600|603)-/

const COMPLETED_EXACT: ReadonlySet<string> = new Set([
  'assistant-said-end-call-phrase',
  'assistant-forwarded-call',
  'silence-timed-out',
  'exceeded-max-duration',
  'call.in-progress.twilio-completed-call',
  'call.in-progress.sip-completed-call',
  'vonage-completed',
  'call.forwarding.operator-busy',
])
const COMPLETED_PREFIXES = ['customer-ended-call', 'assistant-ended-call', 'call.ending.hook-']
const COMPLETED_PARTS = ['transfer-failed', 'warm-transfer-']

export function outcomeOfEndedReason(endedReason: string | undefined): VoiceOutcome {
  if (endedReason === undefined) return 'failed'
  switch (endedReason) {
    case 'customer-did-not-answer':
      return 'no_answer'
    case 'customer-busy':
      return 'busy'
    case 'voicemail':
      return 'voicemail'
  }
  if (NO_ANSWER_SIP.test(endedReason)) return 'no_answer'
  if (BUSY_SIP.test(endedReason)) return 'busy'
  // A transfer that failed was still a conversation with the person, even when Vapi files it as an error.
  if (COMPLETED_PARTS.some((part) => endedReason.includes(part))) return 'completed'
  if (endedReason.startsWith('call.in-progress.error-')) return 'failed'
  if (COMPLETED_EXACT.has(endedReason)) return 'completed'
  if (COMPLETED_PREFIXES.some((prefix) => endedReason.startsWith(prefix))) return 'completed'
  return 'failed'
}
