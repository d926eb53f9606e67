/**
 * A local stand-in for Meta's WhatsApp Cloud API, speaking its wire format:
 * - POST /{version}/{phone-number-id}/messages with a Bearer access token and
 *   a template message, answered as the Graph API answers: the
 *   `{"messaging_product","contacts":[{"input","wa_id"}],"messages":[{"id"}]}`
 *   success, or `{"error":{"message","type","code","error_subcode"?,
 *   "error_data"?,"fbtrace_id"}}` with Meta's status, code and wording;
 * - the webhooks Meta sends to the app's callback URL: the GET verification
 *   handshake, and `whatsapp_business_account` notifications (message statuses,
 *   inbound messages) signed with `X-Hub-Signature-256` over the raw body,
 *   which Meta serializes with non-ASCII and `/` escaped.
 * It sends template messages, and text and interactive (reply buttons, list)
 * session messages within 24 hours of the person's last message to the
 * number (131047 "Re-engagement message" outside); anything else is refused
 * as an unsupported message type.
 */
import { createHmac, randomBytes, randomInt } from 'node:crypto'
import { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse, createServer } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface FakeTemplate {
  /** Meta language codes it is approved in (`en`, `en_US`). */
  languages: string[]
  /** How many {{n}} its body has. */
  bodyParameters: number
}

export interface FakeWhatsAppCloudOptions {
  accessToken: string
  appSecret: string
  phoneNumberIds: string[]
  templates: Record<string, FakeTemplate>
  /**
   * Meta's throughput per business number: past `perSecond` sends in one
   * second of `now`, a send is refused with 130429, as Cloud API does. None
   * unless given.
   */
  throughput?: { perSecond: number; now: () => number }
  /** The clock the customer service window is kept by (a reply's time opens it); default Date.now. */
  now?: () => number
}

export interface RecordedRequest {
  method: string
  /** Path and query, as requested. */
  path: string
  headers: IncomingHttpHeaders
  rawBody: string
  /** The parsed JSON body, or undefined when it was not JSON. */
  body: unknown
}

/** A session message the fake accepted: a text or an interactive message, within the person's window. */
export interface SentSessionMessage {
  wamid: string
  phoneNumberId: string
  to: string
  type: 'text' | 'interactive'
  /** The message's `text` or `interactive` object, as sent. */
  body: Record<string, unknown>
}

/** A message the fake accepted (including one whose answer `dropNext` cut). */
export interface SentMessage {
  wamid: string
  phoneNumberId: string
  /** wa_id: the recipient's digits. */
  to: string
  template: string
  language: string
  parameters: string[]
}

export interface InjectedFailure {
  httpStatus: number
  code: number
  message: string
  /** Default OAuthException, as the Cloud API's own errors are typed. */
  type?: string
  errorSubcode?: number
  details?: string
}

export type MessageStatus = 'sent' | 'delivered' | 'read' | 'failed'

export interface StatusOptions {
  /** Unix milliseconds; default now. Meta's payload carries whole seconds. */
  at?: number
  /** For `failed`: the error code in `errors` (default 131000). */
  errorCode?: number
  errorTitle?: string
  /** For a wamid the fake did not issue. */
  recipientId?: string
  phoneNumberId?: string
}

export interface InboundReply {
  /** The sender's WhatsApp ID: digits, no `+`. */
  from: string
  /** A text message's body; or, with `choice`, the title of the button or list row chosen; or, with `media`, its caption ('' for none). */
  text: string
  /** The person chose a reply button or a list row of an interactive message, rather than typing. */
  choice?: 'button_reply' | 'list_reply'
  /** The person sent a file: an image or a document, as Cloud API's webhook carries it (`{id, mime_type, sha256, caption?}`). */
  media?: { type: 'image' | 'document'; mimeType: string }
  /** The wamid replied to, as WhatsApp sends it for a swipe-reply (`context`). */
  replyTo?: string
  /** Default: the first configured one. */
  phoneNumberId?: string
  /** Unix milliseconds; default now. */
  at?: number
}

export interface FakeWhatsAppCloud {
  /** Use as the adapter's apiBaseUrl, in place of https://graph.facebook.com. */
  readonly url: string
  /** Every request to the Graph API side, in arrival order. */
  readonly requests: RecordedRequest[]
  readonly sent: SentMessage[]
  /** The text and interactive messages it accepted, in order. */
  readonly sessionSent: SentSessionMessage[]
  /** The next send is refused with this Graph API error. Calls queue up, one send each, with `dropNext` and `delayNext`. */
  failNext(failure: InjectedFailure): void
  /** The next send is accepted, then its connection is cut before the answer. */
  dropNext(): void
  /** The next send is answered after `ms`. */
  delayNext(ms: number): void
  setWebhookUrl(url: string): void
  /** POSTs a signed status notification for `wamid`; resolves to the HTTP status the receiver answered. */
  sendStatus(wamid: string, status: MessageStatus, options?: StatusOptions): Promise<number>
  /** POSTs a signed inbound message notification (a text, or an interactive message's choice); resolves to the HTTP status the receiver answered. */
  sendReply(reply: InboundReply): Promise<number>
  /** Meta's GET verification handshake against `url`. */
  verifySubscription(url: string, verifyToken: string): Promise<{ status: number; body: string; challenge: string }>
  close(): Promise<void>
}

type Behaviour = { kind: 'fail'; failure: InjectedFailure } | { kind: 'drop' } | { kind: 'delay'; ms: number }

interface GraphAnswer {
  status: number
  body: unknown
  headers?: Record<string, string>
}

const MESSAGES_PATH = /^\/(v[0-9]+\.[0-9]+)\/([^/]+)\/messages$/
const BUSINESS_ACCOUNT_ID = '102290129340398'
const ERROR_CODES_HREF = 'https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes/'
const FAILURE_TITLES: Record<number, string> = {
  131000: 'Something went wrong',
  131026: 'Message undeliverable',
  131047: 'Re-engagement message',
  131049: 'This message was not delivered to maintain healthy ecosystem engagement.',
  131050: 'User has stopped marketing messages',
  131053: 'Media upload error',
}

export async function startFakeWhatsAppCloud(options: FakeWhatsAppCloudOptions): Promise<FakeWhatsAppCloud> {
  const requests: RecordedRequest[] = []
  const sent: SentMessage[] = []
  const sessionSent: SentSessionMessage[] = []
  /** When each person (`${phoneNumberId}:${wa_id}`) last wrote: the customer service window opens from it. */
  const lastInbound = new Map<string, number>()
  const behaviours: Behaviour[] = []
  const sendsPerSecond = new Map<string, number>()
  const timers = new Set<NodeJS.Timeout>()
  let webhookUrl: string | undefined

  const server = createServer(async (request, response) => {
    const rawBody = await readBody(request)
    const path = request.url ?? '/'
    requests.push({ method: request.method ?? '', path, headers: request.headers, rawBody, body: parseJson(rawBody) })
    const route = MESSAGES_PATH.exec(new URL(path, 'http://fake').pathname)
    if (route === null) return answer(response, graphError(400, 2500, `Unknown path components: ${path}`))
    if (request.method !== 'POST') return answer(response, unsupportedRequest(request.method ?? '', route[2] as string))

    const behaviour = behaviours.shift()
    if (behaviour?.kind === 'fail') {
      const { httpStatus, code, message, type, errorSubcode, details } = behaviour.failure
      return answer(response, graphError(httpStatus, code, message, { type, subcode: errorSubcode, details }))
    }
    const result = send(request.headers.authorization, route[2] as string, parseJson(rawBody))
    result.headers = { ...result.headers, 'facebook-api-version': route[1] as string }
    if (behaviour?.kind === 'drop') {
      request.socket.destroy()
      return
    }
    if (behaviour?.kind === 'delay') {
      const timer = setTimeout(() => {
        timers.delete(timer)
        answer(response, result)
      }, behaviour.ms)
      timers.add(timer)
      return
    }
    answer(response, result)
  })

  function send(authorization: string | undefined, phoneNumberId: string, body: unknown): GraphAnswer {
    if (authorization === undefined) return graphError(400, 104, 'An access token is required to request this resource.')
    if (authorization !== `Bearer ${options.accessToken}`) {
      return graphError(401, 190, 'Invalid OAuth access token - Cannot parse access token', {
        headers: { 'www-authenticate': 'OAuth "Facebook Platform" "invalid_token" "Invalid OAuth access token - Cannot parse access token"' },
      })
    }
    if (!options.phoneNumberIds.includes(phoneNumberId)) return unsupportedRequest('POST', phoneNumberId)
    if (options.throughput !== undefined) {
      const key = `${phoneNumberId}@${Math.floor(options.throughput.now() / 1000)}`
      const count = (sendsPerSecond.get(key) ?? 0) + 1
      sendsPerSecond.set(key, count)
      if (count > options.throughput.perSecond) return graphError(400, 130429, '(#130429) Rate limit hit', { details: 'Cloud API message throughput has been reached.' })
    }
    const message = isObject(body) ? body : {}
    if (message.messaging_product === undefined) return required('messaging_product')
    if (message.messaging_product !== 'whatsapp') {
      return graphError(400, 100, `(#100) Param messaging_product must be one of {WHATSAPP} - got "${String(message.messaging_product)}".`)
    }
    if (message.recipient_type !== undefined && message.recipient_type !== 'individual') {
      return graphError(400, 100, `(#100) Param recipient_type must be one of {INDIVIDUAL} - got "${String(message.recipient_type)}".`)
    }
    if (message.to === undefined) return required('to')
    if (typeof message.to !== 'string' || !/^\+?[0-9]{6,15}$/.test(message.to)) {
      return graphError(400, 131009, '(#131009) Parameter value is not valid', { details: 'The parameter to is not a valid phone number' })
    }
    if (message.type === 'text' || message.type === 'interactive') return sendSession(phoneNumberId, message.to, message.type, message)
    if (message.type !== 'template') return graphError(400, 131051, '(#131051) Unsupported message type', { details: `Message type ${String(message.type)} is not supported` })
    const template = message.template
    if (!isObject(template)) return required('template')
    if (typeof template.name !== 'string') return required("template['name']")
    const language = isObject(template.language) ? template.language.code : undefined
    if (typeof language !== 'string') return required("template['language']['code']")
    const known = options.templates[template.name]
    if (known === undefined || !known.languages.includes(language)) {
      return graphError(404, 132001, '(#132001) Template name does not exist in the translation', {
        details: `template name (${template.name}) does not exist in ${language}`,
      })
    }
    const parameters: string[] = []
    for (const component of Array.isArray(template.components) ? template.components : []) {
      const given = isObject(component) && Array.isArray(component.parameters) ? component.parameters : []
      if (!isObject(component) || component.type !== 'body') {
        const type = isObject(component) ? String(component.type) : 'component'
        return countMismatch(type, given.length, 0)
      }
      for (const parameter of given) {
        const text = isObject(parameter) && parameter.type === 'text' ? parameter.text : undefined
        if (typeof text !== 'string' || text === '') {
          return graphError(400, 131008, '(#131008) Required parameter is missing', { details: 'Parameter of type text is missing text value' })
        }
        if (/[\n\t]| {5}/.test(text)) {
          return graphError(400, 132018, '(#132018) There was an issue with the parameters in your template.', {
            details: 'Param text cannot have new-line/tab characters or more than 4 consecutive spaces',
          })
        }
        parameters.push(text)
      }
    }
    if (parameters.length !== known.bodyParameters) return countMismatch('body', parameters.length, known.bodyParameters)

    const waId = message.to.replace(/^\+/, '')
    const wamid = newWamid(waId)
    sent.push({ wamid, phoneNumberId, to: waId, template: template.name, language, parameters })
    return {
      status: 200,
      body: { messaging_product: 'whatsapp', contacts: [{ input: message.to, wa_id: waId }], messages: [{ id: wamid, message_status: 'accepted' }] },
    }
  }

  /** A text or interactive message: taken only within 24 hours of the person's last message (131047 outside), and only as Meta shapes it. */
  function sendSession(phoneNumberId: string, to: string, type: 'text' | 'interactive', message: Record<string, unknown>): GraphAnswer {
    const waId = to.replace(/^\+/, '')
    const wrote = lastInbound.get(`${phoneNumberId}:${waId}`)
    if (wrote === undefined || (options.now ?? Date.now)() - wrote > 86_400_000) {
      return graphError(400, 131047, '(#131047) Re-engagement message', {
        details: 'Message failed to send because more than 24 hours have passed since the customer last replied to this number.',
      })
    }
    const body = message[type]
    if (!isObject(body)) return required(type)
    if (type === 'text' && (typeof body.body !== 'string' || body.body === '' || body.body.length > 4096)) return graphError(400, 100, "(#100) Param text['body'] is required and at most 4096 characters")
    if (type === 'interactive') {
      const action = isObject(body.action) ? body.action : undefined
      const bodyText = isObject(body.body) ? body.body.text : undefined
      if (typeof bodyText !== 'string' || bodyText === '') return required("interactive['body']['text']")
      if (body.type === 'button' && !(Array.isArray(action?.buttons) && action.buttons.length >= 1 && action.buttons.length <= 3)) {
        return graphError(400, 131009, '(#131009) Parameter value is not valid', { details: 'Buttons count should be between 1 and 3' })
      }
      if (body.type === 'list' && !(typeof action?.button === 'string' && Array.isArray(action.sections) && action.sections.length >= 1)) {
        return graphError(400, 131009, '(#131009) Parameter value is not valid', { details: "interactive['action'] needs a button and sections" })
      }
      if (body.type !== 'button' && body.type !== 'list') return graphError(400, 131009, '(#131009) Parameter value is not valid', { details: `Interactive type ${String(body.type)} is not supported here` })
    }
    const wamid = newWamid(waId)
    sessionSent.push({ wamid, phoneNumberId, to: waId, type, body })
    return { status: 200, body: { messaging_product: 'whatsapp', contacts: [{ input: to, wa_id: waId }], messages: [{ id: wamid }] } }
  }

  async function notify(phoneNumberId: string, value: Record<string, unknown>): Promise<number> {
    if (webhookUrl === undefined) throw new Error('setWebhookUrl first')
    const payload = {
      object: 'whatsapp_business_account',
      entry: [
        {
          id: BUSINESS_ACCOUNT_ID,
          changes: [
            {
              value: { messaging_product: 'whatsapp', metadata: { display_phone_number: displayNumber(phoneNumberId), phone_number_id: phoneNumberId }, ...value },
              field: 'messages',
            },
          ],
        },
      ],
    }
    const body = metaJson(payload)
    const response = await fetch(webhookUrl, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'user-agent': 'facebookexternalua',
        'x-hub-signature-256': `sha256=${createHmac('sha256', options.appSecret).update(body).digest('hex')}`,
      },
      body,
    })
    await response.arrayBuffer()
    return response.status
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    sent,
    sessionSent,
    failNext: (failure) => void behaviours.push({ kind: 'fail', failure }),
    dropNext: () => void behaviours.push({ kind: 'drop' }),
    delayNext: (ms) => void behaviours.push({ kind: 'delay', ms }),
    setWebhookUrl(url) {
      webhookUrl = url
    },
    sendStatus(wamid, status, statusOptions = {}) {
      const message = sent.find((candidate) => candidate.wamid === wamid) ?? sessionSent.find((candidate) => candidate.wamid === wamid)
      const recipientId = statusOptions.recipientId ?? message?.to
      const phoneNumberId = statusOptions.phoneNumberId ?? message?.phoneNumberId
      if (recipientId === undefined || phoneNumberId === undefined) throw new Error(`the fake did not send ${wamid}: give recipientId and phoneNumberId`)
      const timestamp = unixSeconds(statusOptions.at)
      const entry: Record<string, unknown> = { id: wamid, status, timestamp, recipient_id: recipientId }
      if (status === 'sent' || status === 'delivered') {
        // Meta prices the conversation the template opened on these two.
        entry.conversation = { id: randomBytes(16).toString('hex'), expiration_timestamp: String(Number(timestamp) + 86_400), origin: { type: 'marketing' } }
        entry.pricing = { billable: true, pricing_model: 'CBP', category: 'marketing' }
      }
      if (status === 'failed') {
        const code = statusOptions.errorCode ?? 131000
        const title = statusOptions.errorTitle ?? FAILURE_TITLES[code] ?? 'Message failed to send'
        entry.errors = [{ code, title, message: title, error_data: { details: title }, href: ERROR_CODES_HREF }]
      }
      return notify(phoneNumberId, { statuses: [entry] })
    },
    sendReply(reply) {
      const phoneNumberId = reply.phoneNumberId ?? options.phoneNumberIds[0]
      if (phoneNumberId === undefined) throw new Error('the fake has no phone number IDs')
      const key = `${phoneNumberId}:${reply.from}`
      lastInbound.set(key, Math.max(lastInbound.get(key) ?? 0, reply.at ?? (options.now ?? Date.now)()))
      const message: Record<string, unknown> = {
        from: reply.from,
        id: newWamid(reply.from),
        timestamp: unixSeconds(reply.at),
        ...(reply.media !== undefined
          ? {
              type: reply.media.type,
              [reply.media.type]: { id: String(randomInt(100_000_000_000, 281_000_000_000_000)), mime_type: reply.media.mimeType, sha256: randomBytes(32).toString('base64'), ...(reply.text === '' ? {} : { caption: reply.text }) },
            }
          : reply.choice === undefined
            ? { text: { body: reply.text }, type: 'text' }
            : { interactive: { type: reply.choice, [reply.choice]: { id: `choice-${randomBytes(4).toString('hex')}`, title: reply.text } }, type: 'interactive' }),
      }
      if (reply.replyTo !== undefined) message.context = { from: displayNumber(phoneNumberId), id: reply.replyTo }
      return notify(phoneNumberId, { contacts: [{ profile: { name: 'Test Contact' }, wa_id: reply.from }], messages: [message] })
    },
    async verifySubscription(url, verifyToken) {
      const challenge = String(randomInt(1_000_000_000, 2_000_000_000))
      const target = new URL(url)
      target.searchParams.set('hub.mode', 'subscribe')
      target.searchParams.set('hub.challenge', challenge)
      target.searchParams.set('hub.verify_token', verifyToken)
      const response = await fetch(target, { headers: { 'user-agent': 'facebookplatform/1.0 (+http://developers.facebook.com)' } })
      return { status: response.status, body: await response.text(), challenge }
    },
    async close() {
      for (const timer of timers) clearTimeout(timer)
      server.closeAllConnections()
      await new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())))
    },
  }
}

function answer(response: ServerResponse, result: GraphAnswer): void {
  if (response.destroyed) return
  const body = JSON.stringify(result.body)
  response.writeHead(result.status, {
    'content-type': 'application/json; charset=UTF-8',
    'x-fb-trace-id': fbtraceId(),
    ...result.headers,
  })
  response.end(body)
}

function graphError(
  status: number,
  code: number,
  message: string,
  extra: { type?: string; subcode?: number; details?: string; headers?: Record<string, string> } = {},
): GraphAnswer {
  const error: Record<string, unknown> = { message, type: extra.type ?? 'OAuthException', code }
  if (extra.subcode !== undefined) error.error_subcode = extra.subcode
  if (extra.details !== undefined) error.error_data = { messaging_product: 'whatsapp', details: extra.details }
  error.fbtrace_id = fbtraceId()
  return { status, body: { error }, headers: extra.headers }
}

/** What the Graph API says for an object it does not know (or may not touch) and for a method it does not have. */
function unsupportedRequest(method: string, objectId: string): GraphAnswer {
  return graphError(
    400,
    100,
    `Unsupported ${method.toLowerCase()} request. Object with ID '${objectId}' does not exist, cannot be loaded due to missing permissions, or does not support this operation. Please read the Graph API documentation at https://developers.facebook.com/docs/graph-api`,
    { type: 'GraphMethodException', subcode: 33 },
  )
}

const required = (parameter: string) => graphError(400, 100, `(#100) The parameter ${parameter} is required.`)

const countMismatch = (component: string, given: number, expected: number) =>
  graphError(400, 132000, '(#132000) Number of parameters does not match the expected number of params', {
    details: `${component}: number of localizable_params (${given}) does not match the expected number of params (${expected})`,
  })

/** Meta's wamids are base64 of a small binary record that includes the recipient's number. */
function newWamid(waId: string): string {
  const record = Buffer.concat([Buffer.from([0x1c, 0x18, waId.length]), Buffer.from(waId), Buffer.from([0x15, 0x02, 0x00, 0x11, 0x18, 0x12]), Buffer.from(randomBytes(9).toString('hex').toUpperCase()), Buffer.from([0x00])])
  return `wamid.${record.toString('base64')}`
}

function fbtraceId(): string {
  return randomBytes(8).toString('base64').replace(/[^A-Za-z0-9]/g, '').slice(0, 11).padEnd(11, 'A')
}

function displayNumber(phoneNumberId: string): string {
  return `1555${phoneNumberId.slice(-7).padStart(7, '0')}`
}

function unixSeconds(at: number | undefined): string {
  return String(Math.floor((at ?? Date.now()) / 1000))
}

/** JSON as Meta writes webhook bodies: non-ASCII as \uXXXX and `/` as `\/`, which the signature covers. */
function metaJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/[\u007f-\uffff]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`)
    .replaceAll('/', '\\/')
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of request) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
