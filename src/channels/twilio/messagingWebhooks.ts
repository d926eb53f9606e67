/**
 * What Twilio sends about texts, form-encoded and signed with
 * X-Twilio-Signature as its call callbacks are (webhooks.ts): a message's
 * status callbacks (`MessageSid`, `MessageStatus`, `ErrorCode`), and the
 * messages people send to a campaign's number (`MessageSid`, `From`, `To`,
 * `Body`, `NumMedia`, `MessagingServiceSid`, `OptOutType`).
 */
import { storableId, storableText } from '../../domain/boundedReaders.ts'
import type { MessageMedia } from '../../domain/events.ts'
import type { SmsOutcome } from '../../domain/types.ts'
import type { ProviderReport } from '../channel.ts'

const MESSAGE_SID = /^(?:SM|MM)[0-9a-fA-F]{32}$/

/** Whether this is a message SID as Twilio makes them (SM for a text, MM for one with media). */
export const isMessageSid = (value: string): boolean => MESSAGE_SID.test(value)

/** The URL given to Twilio as a text's StatusCallback; its signatures cover it exactly as given. */
export function messageStatusUrl(publicBaseUrl: string, interactionId: string): string {
  return `${publicBaseUrl.replace(/\/+$/, '')}/providers/twilio/messages/${encodeURIComponent(interactionId)}/status`
}

/** The URL given to Twilio as the StatusCallback of a text sent in a conversation (a session message: docs/messaging.md). */
export function sessionMessageStatusUrl(publicBaseUrl: string): string {
  return `${publicBaseUrl.replace(/\/+$/, '')}/providers/twilio/messages/status`
}

/** The URL a Twilio number's (or Messaging Service's) messaging webhook is set to ("A message comes in"). */
export function inboundMessageUrl(publicBaseUrl: string): string {
  return `${publicBaseUrl.replace(/\/+$/, '')}/providers/twilio/messages/inbound`
}

/** Statuses on the way: kept as the interaction's provider status, in this order (a later one never goes back). */
export const MESSAGE_STATUS_RANK: Readonly<Record<string, number>> = { accepted: 1, scheduled: 1, queued: 2, sending: 3, sent: 4, partially_delivered: 5, delivered: 5, read: 6 }

/**
 * Twilio's error codes that say the number cannot take a text at all, so
 * that the task fails rather than spending its attempts: 21211 (an invalid
 * To), 21612 (no route to it), 21614 (not a mobile number), 30005 (an
 * unknown or inactive handset), 30006 (a landline or an unreachable
 * carrier). Twilio's "Error and Warning Dictionary".
 */
const UNREACHABLE_CODES: ReadonlySet<number> = new Set([21211, 21612, 21614, 30005, 30006])
/** 21610: the person texted STOP to the sender, which Twilio will not message again until they text START. */
export const UNSUBSCRIBED_CODE = 21610

/** A text's end as its status and error code tell it; undefined while it is on its way. */
export function messageEnd(status: string, errorCode: number | undefined): { outcome: SmsOutcome; permanent: boolean; optedOut: boolean } | undefined {
  const permanent = errorCode !== undefined && UNREACHABLE_CODES.has(errorCode)
  const optedOut = errorCode === UNSUBSCRIBED_CODE
  switch (status) {
    case 'undelivered':
      return { outcome: 'undelivered', permanent, optedOut }
    case 'failed':
    case 'canceled':
      return { outcome: 'failed', permanent, optedOut }
    default:
      return undefined
  }
}

/**
 * The report a status callback makes, or undefined when it names no message
 * or a status Twilio does not document. `delivered` and `read` are progress:
 * the text waits for a reply until its reply window ends.
 */
export function reportFromMessageStatus(params: Record<string, string>, now: number): ProviderReport | undefined {
  const providerRef = storableId(params.MessageSid)
  const status = params.MessageStatus
  if (providerRef === undefined || status === undefined) return undefined
  if (Object.hasOwn(MESSAGE_STATUS_RANK, status)) return { kind: 'progress', providerRef, status, at: now }
  const end = messageEnd(status, errorCodeOf(params.ErrorCode))
  if (end === undefined) return undefined
  return { kind: 'final', providerRef, outcome: end.outcome, at: now, permanent: end.permanent || undefined, optedOut: end.optedOut || undefined }
}

export function errorCodeOf(value: string | number | null | undefined): number | undefined {
  if (typeof value === 'number') return Number.isInteger(value) ? value : undefined
  return typeof value === 'string' && /^[0-9]{1,6}$/.test(value) ? Number(value) : undefined
}

/** A file's type as WhatsApp names them: image, video, audio by the content type, any other a document. */
function fileType(mimeType: string | null): string {
  const kind = mimeType?.split('/')[0]
  return kind === 'image' || kind === 'video' || kind === 'audio' ? kind : 'document'
}

/** The longest MediaUrl kept: Twilio's are about 160 characters. */
const MAX_MEDIA_URL = 2048

/** A message a person sent to a campaign's number, as its webhook tells it. */
export interface InboundText {
  messageSid: string
  accountSid: string | undefined
  from: string
  to: string
  messagingServiceSid: string | undefined
  /** Undefined for a message of media alone. */
  text: string | undefined
  /** The files it carries (MMS), by their MediaUrl. */
  media: MessageMedia[]
  /** Twilio's Advanced Opt-Out verdict on it, when the sender has it on: STOP, START or HELP. */
  optOutType: string | undefined
}

/** The message an inbound webhook carries, or undefined when it names no message, sender or number. */
export function inboundText(params: Record<string, string>): InboundText | undefined {
  const messageSid = storableId(params.MessageSid)
  const from = storableId(params.From)
  const to = storableId(params.To)
  if (messageSid === undefined || !isMessageSid(messageSid) || from === undefined || to === undefined) return undefined
  const body = params.Body
  const count = Number(params.NumMedia ?? '0')
  const media: MessageMedia[] = []
  // Twilio sends at most 10 files a message (MediaUrl0..9), each with its content type.
  for (let index = 0; Number.isInteger(count) && index < Math.min(count, 10); index++) {
    const ref = storableText(params[`MediaUrl${index}`], MAX_MEDIA_URL)
    const mimeType = storableId(params[`MediaContentType${index}`]) ?? null
    if (ref !== undefined) media.push({ type: fileType(mimeType), ref, mime_type: mimeType })
  }
  return {
    messageSid,
    accountSid: params.AccountSid,
    from,
    to,
    messagingServiceSid: storableId(params.MessagingServiceSid),
    text: body === undefined || body === '' ? undefined : body,
    media,
    optOutType: params.OptOutType?.toUpperCase(),
  }
}
