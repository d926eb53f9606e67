/**
 * The Cloud API's webhooks, as Meta sends them to the app's callback URL:
 * - the verification request: GET with `hub.mode=subscribe`, `hub.verify_token`
 *   (the token set in the app dashboard) and `hub.challenge`, answered with
 *   the challenge as the body;
 * - notifications: POST of a `whatsapp_business_account` object whose
 *   `messages` changes carry message statuses (sent, delivered, read, failed)
 *   and inbound messages, signed in `X-Hub-Signature-256` with the app secret
 *   over the raw body bytes (Meta escapes non-ASCII and `/` in that JSON, so a
 *   re-serialized body does not match).
 * Meta retries a notification that is not answered 200, and may send one twice
 * or out of order, so what is read here must be applied idempotently.
 */
import { createHmac, timingSafeEqual } from 'node:crypto'
import { sameSecret } from '../sameSecret.ts'
import { instantOfSeconds, storableId, storableString } from '../../domain/boundedReaders.ts'
import type { MessageMedia } from '../../domain/events.ts'
import type { ProviderReport } from '../channel.ts'
import { isObject } from './config.ts'
import { NOT_ON_WHATSAPP_CODE } from './graphErrors.ts'

export type WhatsAppNotification =
  | { kind: 'report'; phoneNumberId: string; report: ProviderReport }
  | {
      kind: 'inbound'
      phoneNumberId: string
      /** E.164, with `+`: the sender's WhatsApp ID. */
      from: string
      messageId: string
      /** The wamid this message answers (a swipe-reply, a template button, a reaction), when WhatsApp says. */
      replyTo: string | undefined
      /** What the person wrote (a text, or the label of a button or list row they chose, or a file's caption), when it is text. */
      text: string | undefined
      /** A file they sent (an image, a document...), by its media id. */
      media: MessageMedia[]
      at: number
    }

/**
 * The challenge to answer a subscription request with, or undefined when it
 * must be refused (403). No verify token configured refuses every request.
 */
export function verifyWebhookSubscription(query: Record<string, string | undefined>, verifyToken: string | undefined): string | undefined {
  const challenge = query['hub.challenge']
  const token = query['hub.verify_token']
  if (query['hub.mode'] !== 'subscribe' || challenge === undefined || challenge === '' || token === undefined) return undefined
  if (verifyToken === undefined || verifyToken === '') return undefined
  return sameSecret(token, verifyToken) ? challenge : undefined
}

const SIGNATURE = /^sha256=([0-9a-fA-F]{64})$/

/** Whether `header` is `sha256=` and the hex HMAC-SHA256 of the exact body bytes under the app secret. */
export function verifyWhatsAppSignature(appSecret: string, rawBody: Buffer | string, header: string | undefined): boolean {
  if (appSecret === '' || header === undefined) return false
  const match = SIGNATURE.exec(header.trim())
  if (match === null) return false
  const expected = createHmac('sha256', appSecret).update(rawBody).digest()
  return timingSafeEqual(Buffer.from(match[1] as string, 'hex'), expected)
}

/**
 * Codes of a failed status that mean WhatsApp would not hand the message to
 * this person, rather than that sending it went wrong: not a WhatsApp user (or
 * an old app, or terms not accepted), a template needed, Meta's per-user
 * marketing limit (Meta advises against prompt retries, and the campaign's
 * retry delays are minutes to hours), marketing opted out, an experiment
 * holdout. They become `undelivered`, any other failure `failed`: the client
 * learns which, and the campaign's attempt policy treats both as failures.
 */
const UNDELIVERED_CODES = new Set([131026, 131047, 131049, 131050, 130472])
/** "The user has stopped marketing messages": an opt-out, said by WhatsApp. */
const OPTED_OUT_CODE = 131050

const STATUS_WORDS = new Set(['sent', 'delivered', 'read'])

/**
 * What a notification body says, in its order: a report per message status
 * (`sent`/`delivered`/`read` as progress, `failed` as final) and an
 * `inbound` per message a person sent. An inbound message is not turned into
 * a `replied` report here: most replies carry no `replyTo` (only swipe-replies,
 * template buttons and reactions do), so the caller matches them to an
 * interaction by phone number ID and sender. Anything unreadable is skipped;
 * this never throws.
 */
export function notificationsFromWebhook(body: unknown): WhatsAppNotification[] {
  const notifications: WhatsAppNotification[] = []
  if (!isObject(body) || body.object !== 'whatsapp_business_account') return notifications
  for (const entry of arrayOf(body.entry)) {
    if (!isObject(entry)) continue
    for (const change of arrayOf(entry.changes)) {
      if (!isObject(change) || change.field !== 'messages' || !isObject(change.value)) continue
      readChange(change.value, notifications)
    }
  }
  return notifications
}

function readChange(value: Record<string, unknown>, into: WhatsAppNotification[]): void {
  const phoneNumberId = isObject(value.metadata) ? value.metadata.phone_number_id : undefined
  if (typeof phoneNumberId !== 'string' || phoneNumberId === '') return
  for (const status of arrayOf(value.statuses)) {
    const report = isObject(status) ? reportOf(status) : undefined
    if (report !== undefined) into.push({ kind: 'report', phoneNumberId, report })
  }
  for (const message of arrayOf(value.messages)) {
    if (!isObject(message)) continue
    const { from, type } = message
    const id = storableId(message.id)
    const at = instantOf(message.timestamp)
    // A system message (the user changed number) is WhatsApp speaking, not the person.
    if (typeof from !== 'string' || !/^[0-9]{1,20}$/.test(from) || id === undefined || at === undefined || type === 'system') continue
    const media = mediaOf(message)
    into.push({ kind: 'inbound', phoneNumberId, from: `+${from}`, messageId: id, replyTo: repliedTo(message), text: textOf(message, media[0]), media, at })
  }
}

function reportOf(status: Record<string, unknown>): ProviderReport | undefined {
  const providerRef = storableId(status.id)
  const word = status.status
  const at = instantOf(status.timestamp)
  if (providerRef === undefined || typeof word !== 'string' || at === undefined) return undefined
  if (STATUS_WORDS.has(word)) return { kind: 'progress', providerRef, status: word, at }
  if (word !== 'failed') return undefined
  const codes = arrayOf(status.errors).map((error) => (isObject(error) ? error.code : undefined))
  const undelivered = codes.some((code) => UNDELIVERED_CODES.has(code as number))
  const report: ProviderReport = { kind: 'final', providerRef, outcome: undelivered ? 'undelivered' : 'failed', at }
  if (codes.includes(NOT_ON_WHATSAPP_CODE)) report.notOnChannel = true
  return codes.includes(OPTED_OUT_CODE) ? { ...report, optedOut: true } : report
}

/** The message types that carry a file, each as `{id, mime_type, caption?}` under its type's name (Cloud API's webhook reference). */
const MEDIA_TYPES: ReadonlySet<string> = new Set(['image', 'video', 'audio', 'document', 'sticker'])

/** The file a media message carries, by its media id: what the client fetches it by (Graph API GET /{media-id}). */
function mediaOf(message: Record<string, unknown>): MessageMedia[] {
  const type = message.type
  if (typeof type !== 'string' || !MEDIA_TYPES.has(type)) return []
  const file = message[type]
  const ref = isObject(file) ? storableId(file.id) : undefined
  if (!isObject(file) || ref === undefined) return []
  return [{ type, ref, mime_type: typeof file.mime_type === 'string' ? (storableId(file.mime_type) ?? null) : null }]
}

/**
 * What the person wrote: a text message's body, or the label of what they
 * chose: a template's quick-reply button (`button.text`), an interactive
 * message's reply button or list row (`interactive.button_reply.title`,
 * `interactive.list_reply.title`), or a file's caption.
 */
function textOf(message: Record<string, unknown>, media: MessageMedia | undefined): string | undefined {
  const file = media === undefined ? undefined : message[media.type]
  const interactive = isObject(message.interactive) ? message.interactive : undefined
  const chosen = interactive === undefined ? undefined : isObject(interactive.button_reply) ? interactive.button_reply : interactive.list_reply
  const text = isObject(message.text)
    ? message.text.body
    : isObject(message.button)
      ? message.button.text
      : isObject(chosen)
        ? chosen.title
        : isObject(file)
          ? file.caption
          : undefined
  // Kept as the reply's transcript turn, which PostgreSQL refuses with a NUL in it.
  const said = typeof text === 'string' ? storableString(text) : ''
  return said !== '' ? said : undefined
}

function repliedTo(message: Record<string, unknown>): string | undefined {
  return storableId(isObject(message.context) ? message.context.id : isObject(message.reaction) ? message.reaction.message_id : undefined)
}

/** Meta's timestamps are whole Unix seconds, as a string; the service's instants are milliseconds. */
function instantOf(timestamp: unknown): number | undefined {
  const seconds = typeof timestamp === 'string' && /^[0-9]{1,12}$/.test(timestamp) ? Number(timestamp) : timestamp
  return Number.isSafeInteger(seconds) ? instantOfSeconds(seconds) : undefined
}

function arrayOf(value: unknown): unknown[] {
  return Array.isArray(value) ? value : []
}
