/**
 * Twilio's Programmable Messaging, as the Twilio fake (twilio.ts) serves it
 * beside its calls, in Twilio's wire format: "Create a Message" and "Fetch a
 * Message" (form-encoded, HTTP basic auth, the Message resource as JSON,
 * errors as `{code, message, more_info, status}`: 21211 an invalid To, 21606
 * a From that is not the account's, 21617 a Body over 1,600 characters,
 * 21610 a recipient who texted STOP to the sender); status callbacks to a
 * message's StatusCallback (MessageSid, MessageStatus, ErrorCode...) and
 * people's texts to the number's messaging webhook, each form-encoded and
 * signed with X-Twilio-Signature. As Twilio's default opt-out handling does,
 * a text of STOP (STOPALL, UNSUBSCRIBE, CANCEL, END, QUIT) from a person to
 * a sender makes every later text of that sender to them fail with 21610,
 * until they text START (UNSTOP, YES).
 */
import { randomBytes } from 'node:crypto'

export type MessageStatus = 'accepted' | 'queued' | 'sending' | 'sent' | 'delivered' | 'undelivered' | 'failed' | 'read' | 'canceled'

/** Twilio's Message resource, as its REST API returns it (the fields a client reads). */
export interface MessageResource {
  sid: string
  account_sid: string
  messaging_service_sid: string | null
  to: string
  from: string | null
  body: string
  status: MessageStatus
  num_segments: string
  num_media: string
  direction: 'outbound-api' | 'inbound'
  api_version: '2010-04-01'
  date_created: string
  date_updated: string
  date_sent: string | null
  error_code: number | null
  error_message: string | null
  price: null
  price_unit: 'USD'
  uri: string
  subresource_uris: Record<string, string>
}

/** A request Twilio made to the service about texts, and what it was answered. */
export interface MessagingRequest {
  url: string
  params: Record<string, string>
  status: number
  contentType: string | undefined
  body: string
}

export interface FakeMessaging {
  /** Every text created, in order. */
  sent(): MessageResource[]
  message(sid: string): MessageResource | undefined
  /** The texts' StatusCallback, by SID. */
  statusCallbackOf(sid: string): string | undefined
  /**
   * Moves a text on (`sent`, `delivered`, `undelivered` with an error code...)
   * and posts its status callback; null when it has none, or with `lost`
   * (the callback never arrives). A status earlier than the text's is
   * posted as a late, out-of-order callback is, the resource staying as it is.
   */
  advance(sid: string, status: MessageStatus, options?: { errorCode?: number; signature?: string; lost?: boolean }): Promise<MessagingRequest | null>
  /**
   * A person texts one of the account's numbers, whose messaging webhook is
   * `webhookUrl`: posted signed (or with `signature` as given), with Twilio's
   * parameters; a STOP or START is applied to the sender's opt-outs first, as
   * Twilio's default handling does.
   */
  receive(text: { accountSid: string; from: string; to: string; body: string; webhookUrl: string; messagingServiceSid?: string; media?: string[]; signature?: string }): Promise<MessagingRequest>
  /** Numbers that texted STOP to a sender (`${sender} ${person}`). */
  unsubscribed(): string[]
}

const E164 = /^\+[1-9][0-9]{1,14}$/
const MESSAGES = /^\/2010-04-01\/Accounts\/([^/]+)\/Messages\.json$/
const MESSAGE = /^\/2010-04-01\/Accounts\/([^/]+)\/Messages\/([^/]+)\.json$/
/** A text's statuses in the order Twilio moves it through them; the ends last. */
const STATUS_ORDER: Record<string, number> = { accepted: 1, queued: 2, sending: 3, sent: 4, delivered: 5, read: 6, undelivered: 7, failed: 7, canceled: 7 }
const STOP_WORDS = new Set(['stop', 'stopall', 'unsubscribe', 'cancel', 'end', 'quit'])
const START_WORDS = new Set(['start', 'unstop', 'yes'])

/**
 * The messaging half of the fake: `handle` answers the REST requests it
 * knows (undefined for others); `post` sends a signed request to the service.
 */
export function createFakeMessaging(deps: {
  sign: (accountSid: string, url: string, params: Record<string, string>) => string
  post: (url: string, params: Record<string, string>, signature: string) => Promise<MessagingRequest>
  /** The numbers each Messaging Service sends from. */
  messagingServices: Record<string, string[]>
}): { handle(method: string, path: string, accountSid: string | undefined, form: URLSearchParams): [number, unknown] | undefined; accountOf(path: string): string | undefined; api: FakeMessaging } {
  const messages = new Map<string, { resource: MessageResource; statusCallback: string | undefined }>()
  const stopped = new Set<string>()

  function create(accountSid: string, form: URLSearchParams): [number, unknown] {
    const to = form.get('To')
    const from = form.get('From')
    const service = form.get('MessagingServiceSid')
    const body = form.get('Body')
    if (!to) return [400, twilioError(400, 21604, "A 'To' phone number is required.")]
    if (!E164.test(to)) return [400, twilioError(400, 21211, `Invalid 'To' Phone Number: ${to}`)]
    if (!from && !service) return [400, twilioError(400, 21603, "A 'From' phone number is required.")]
    if (service && deps.messagingServices[service] === undefined) return [400, twilioError(400, 21701, 'The Messaging Service Sid is invalid.')]
    if (from && !E164.test(from)) return [400, twilioError(400, 21606, `The From phone number ${from} is not a valid, SMS-capable inbound phone number or short code for your account.`)]
    if (!body) return [400, twilioError(400, 21602, 'Message body is required.')]
    if ([...body].length > 1600) return [400, twilioError(400, 21617, 'The concatenated message body exceeds the 1600 character limit.')]
    const sender = from ?? deps.messagingServices[service!]![0]!
    if (stopped.has(`${service ?? sender} ${to}`) || stopped.has(`${sender} ${to}`)) {
      return [400, twilioError(400, 21610, 'Attempt to send to unsubscribed recipient')]
    }
    const sid = `SM${randomBytes(16).toString('hex')}`
    const now = new Date().toUTCString().replace('GMT', '+0000')
    const resource: MessageResource = {
      sid,
      account_sid: accountSid,
      messaging_service_sid: service,
      to,
      from: service ? null : from,
      body,
      status: service ? 'accepted' : 'queued',
      num_segments: String(Math.ceil([...body].length / 153)),
      num_media: '0',
      direction: 'outbound-api',
      api_version: '2010-04-01',
      date_created: now,
      date_updated: now,
      date_sent: null,
      error_code: null,
      error_message: null,
      price: null,
      price_unit: 'USD',
      uri: `/2010-04-01/Accounts/${accountSid}/Messages/${sid}.json`,
      subresource_uris: { media: `/2010-04-01/Accounts/${accountSid}/Messages/${sid}/Media.json` },
    }
    messages.set(sid, { resource, statusCallback: form.get('StatusCallback') ?? undefined })
    return [201, resource]
  }

  const api: FakeMessaging = {
    sent: () => [...messages.values()].map((message) => message.resource),
    message: (sid) => messages.get(sid)?.resource,
    statusCallbackOf: (sid) => messages.get(sid)?.statusCallback,
    async advance(sid, status, options = {}) {
      const message = messages.get(sid)
      if (message === undefined) throw new Error(`no message ${sid}`)
      const { resource } = message
      if ((STATUS_ORDER[status] ?? 0) > (STATUS_ORDER[resource.status] ?? 0)) {
        resource.status = status
        resource.error_code = options.errorCode ?? null
        resource.date_updated = new Date().toUTCString().replace('GMT', '+0000')
        if (status === 'sent') resource.date_sent = resource.date_updated
      }
      if (message.statusCallback === undefined || options.lost === true) return null
      const params: Record<string, string> = {
        AccountSid: resource.account_sid,
        ApiVersion: '2010-04-01',
        From: resource.from ?? deps.messagingServices[resource.messaging_service_sid!]![0]!,
        MessageSid: sid,
        MessageStatus: status,
        SmsSid: sid,
        SmsStatus: status,
        To: resource.to,
      }
      if (resource.messaging_service_sid !== null) params.MessagingServiceSid = resource.messaging_service_sid
      if (options.errorCode !== undefined) params.ErrorCode = String(options.errorCode)
      return deps.post(message.statusCallback, params, options.signature ?? deps.sign(resource.account_sid, message.statusCallback, params))
    },
    async receive(text) {
      const sid = `${(text.media?.length ?? 0) > 0 ? 'MM' : 'SM'}${randomBytes(16).toString('hex')}`
      const word = text.body.trim().toLowerCase()
      const sender = text.messagingServiceSid ?? text.to
      if (STOP_WORDS.has(word)) stopped.add(`${sender} ${text.from}`)
      if (START_WORDS.has(word)) stopped.delete(`${sender} ${text.from}`)
      const params: Record<string, string> = {
        AccountSid: text.accountSid,
        ApiVersion: '2010-04-01',
        Body: text.body,
        From: text.from,
        FromCountry: 'US',
        MessageSid: sid,
        NumMedia: String(text.media?.length ?? 0),
        NumSegments: '1',
        SmsMessageSid: sid,
        SmsSid: sid,
        SmsStatus: 'received',
        To: text.to,
        ToCountry: 'US',
      }
      if (text.messagingServiceSid !== undefined) params.MessagingServiceSid = text.messagingServiceSid
      for (const [index, url] of (text.media ?? []).entries()) {
        params[`MediaUrl${index}`] = url
        params[`MediaContentType${index}`] = 'image/jpeg'
      }
      return deps.post(text.webhookUrl, params, text.signature ?? deps.sign(text.accountSid, text.webhookUrl, params))
    },
    unsubscribed: () => [...stopped],
  }

  return {
    accountOf: (path) => (MESSAGES.exec(path) ?? MESSAGE.exec(path))?.[1],
    handle(method, path, accountSid, form) {
      if (accountSid === undefined) return undefined
      if (MESSAGES.test(path)) return method === 'POST' ? create(accountSid, form) : undefined
      const one = MESSAGE.exec(path)
      if (one === null || method !== 'GET') return undefined
      const message = messages.get(one[2] ?? '')
      return message && message.resource.account_sid === accountSid ? [200, message.resource] : [404, twilioError(404, 20404, `The requested resource ${path} was not found`)]
    },
    api,
  }
}

function twilioError(status: number, code: number, message: string) {
  return { code, message, more_info: `https://www.twilio.com/docs/errors/${code}`, status }
}
