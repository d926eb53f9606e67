/**
 * A person calling back a number that called them (services/inboundCalls.ts):
 * the call lands on their open task of the organization, or on one completed
 * within the organization's window, the most recent first.
 */
import type { NextStep } from './attemptPolicy.ts'
import type { Provider } from './campaignSettings.ts'
import { normalizePhone } from './contact.ts'

/** The window a new organization has: a person may call back within two weeks of the task's end, the span a retry ladder and a voicemail's "call us back" cover. */
export const DEFAULT_CALLBACK_WINDOW_DAYS = 14
/** As long as the default retention keeps a task's personal data (domain/retention.ts): a callback past it could not be matched anyway. */
export const MAX_CALLBACK_WINDOW_DAYS = 365

/** What the end of a call back does to the task it landed on. */
export type CallBackStep = { kind: 'complete'; outcome: 'reached' | 'opted_out' } | { kind: 'release'; dueAt: number | null }

/**
 * A call back steers its task as an outbound attempt's conversation does
 * (the attempt policy's `step`, from stepAfterInteraction): a person reached
 * completes it `reached`, an opt-out `opted_out`, a callback time asked for
 * makes it due then. A call back that reached no conversation (the caller
 * hung up before it was handed over) is no attempt of the task's: it spends
 * none, falls back to nothing, completes nothing, and the task, held while
 * the call ran, is due again when it was before (`dueAt` null).
 */
export function stepAfterCallBack(step: NextStep, reached: boolean): CallBackStep {
  if (step.kind === 'complete' && step.outcome === 'opted_out') return { kind: 'complete', outcome: 'opted_out' }
  if (!reached) return { kind: 'release', dueAt: null }
  if (step.kind === 'retry') return { kind: 'release', dueAt: step.dueAt }
  return { kind: 'complete', outcome: 'reached' }
}

/**
 * How each platform that takes calls to a campaign's number names the
 * number a person called (the provider_config field an inbound call is
 * matched by): an E.164 number (Twilio's `from`, Retell's `from_number`) or
 * the platform's id of it (Vapi's `phone_number_id`; ElevenLabs names the
 * agent called, `agent_id`). An organization's callback numbers are given in
 * the same form. The others take no calls.
 */
export const CALLBACK_NUMBER_FORMS: Partial<Record<Provider, 'phone' | 'id'>> = { twilio: 'phone', retell: 'phone', vapi: 'id', elevenlabs: 'id' }

/** Longer than any platform's ids of a number or agent (UUIDs, ElevenLabs' agent ids). */
export const MAX_CALLBACK_NUMBER_ID_LENGTH = 256

/**
 * A callback number as it is kept for a campaign on `provider`: an E.164
 * number normalized (as a contact's), or an id as given; why not, as a
 * sentence for the operator, when the platform takes no calls or the number
 * is not of its form.
 */
export function callbackNumberOf(provider: Provider, number: string): { number: string } | { problem: string } {
  const form = CALLBACK_NUMBER_FORMS[provider]
  if (form === undefined) return { problem: `a campaign on ${provider} takes no calls: a callback number answers through a campaign on ${Object.keys(CALLBACK_NUMBER_FORMS).join(', ')}` }
  if (form === 'id') {
    const id = number.trim()
    return id !== '' && id.length <= MAX_CALLBACK_NUMBER_ID_LENGTH && /^[\x21-\x7e]+$/.test(id) ? { number: id } : { problem: `a ${provider} number is named by its id: 1 to ${MAX_CALLBACK_NUMBER_ID_LENGTH} printable ASCII characters` }
  }
  const phone = normalizePhone(number)
  return phone === null ? { problem: `a ${provider} number must be a phone number in international form, such as +14155550100` } : { number: phone }
}
