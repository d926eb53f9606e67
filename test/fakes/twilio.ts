/**
 * A local stand-in for Twilio's Programmable Voice REST API (2010-04-01) and
 * its requests about a call, in Twilio's wire format: "Create a Call" and
 * "Fetch a Call" with HTTP basic auth, form-encoded requests, the Call
 * resource as JSON, REST errors as `{code, message, more_info, status}`;
 * the request for the call's instructions when it is answered (to its `Url`,
 * with its `Method`, and to a <Redirect> the TwiML answer names), and status
 * callbacks, form-encoded and signed with `X-Twilio-Signature` as the
 * "Webhooks security" page describes; asynchronous answering-machine
 * detection (`AsyncAmd=true`: the verdict posted to AsyncAmdStatusCallback)
 * and "Update a Call in progress" with `Twiml`. A test drives each call's life.
 * Texts are served beside the calls, as Twilio serves both at one address
 * (`messages`: twilioMessaging.ts).
 *
 * The signature is computed here independently of the service's verifier, so
 * that a test of one against the other checks the algorithm, not a copy of it.
 */
import { createHmac, randomBytes, randomUUID } from 'node:crypto'
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createFakeMessaging, type FakeMessaging } from './twilioMessaging.ts'

export interface RecordedRequest {
  method: string
  /** Path and query, as sent. */
  path: string
  headers: IncomingHttpHeaders
  /** The form-encoded body; empty for a GET. Repeated names (StatusCallbackEvent) stay repeated. */
  form: URLSearchParams
}

export type FinalCallStatus = 'completed' | 'busy' | 'no-answer' | 'failed' | 'canceled'
export type AnsweredBy = 'human' | 'machine_start' | 'machine_end_beep' | 'machine_end_silence' | 'machine_end_other' | 'fax' | 'unknown'

/** Twilio's Call resource, as its REST API returns it. */
export interface CallResource {
  sid: string
  account_sid: string
  parent_call_sid: null
  date_created: string
  date_updated: string
  start_time: string | null
  end_time: string | null
  /** Whole seconds, as a string; null until the call is over. */
  duration: string | null
  to: string
  to_formatted: string
  from: string
  from_formatted: string
  phone_number_sid: string
  status: 'queued' | 'ringing' | 'in-progress' | FinalCallStatus
  price: null
  price_unit: 'USD'
  direction: 'outbound-api' | 'inbound'
  answered_by: AnsweredBy | null
  api_version: '2010-04-01'
  forwarded_from: null
  group_sid: null
  caller_name: null
  queue_time: string
  trunk_sid: null
  annotation: null
  uri: string
  subresource_uris: Record<string, string>
}

export interface FakeTwilio {
  /** http://127.0.0.1:port, to use as the API base URL. */
  url: string
  /** Every REST request received, in order. */
  requests: RecordedRequest[]
  /** The current state of a call, as "Fetch a Call" returns it. */
  call(callSid: string): CallResource | undefined
  /** The SID of the call created with this StatusCallback URL, if any. */
  callSidFor(statusCallback: string): string | undefined
  /** The next REST request is answered with this Twilio error. */
  failNext(error: { status: number; code: number; message: string; retryAfter?: string }): void
  /** The next REST request is handled (a call is created) but its connection destroyed without an answer. */
  dropNext(): void
  /** The next REST request is handled (a call is created) but answered only after `ms`. */
  delayNext(ms: number): void
  /**
   * Moves a call on and sends the matching callback (`ringing` for ringing,
   * `answered` for in-progress). Resolves the HTTP status the callback got,
   * or null when Twilio would send none (no StatusCallback, or the event not
   * subscribed).
   */
  progressCall(callSid: string, status: 'ringing' | 'in-progress'): Promise<number | null>
  /**
   * The call is picked up: it moves to in-progress and Twilio requests its
   * instructions from its `Url` with its `Method` (TwiML's "Twilio's request
   * to your application"), signed, or with `signature` as given (null: none).
   * Resolves the request and its answer. (Twilio would then follow a
   * <Redirect> in it; a test reads where to.)
   */
  answerCall(callSid: string, options?: { answeredBy?: AnsweredBy; signature?: string | null }): Promise<AnswerRequest>
  /**
   * Asynchronous detection's verdict on a call placed with `AsyncAmd=true`:
   * posted to its AsyncAmdStatusCallback (CallSid, AccountSid, AnsweredBy,
   * MachineDetectionDuration), signed, or with `signature` as given.
   * Resolves the HTTP status it got.
   */
  detectMachine(callSid: string, answeredBy: AnsweredBy, options?: { signature?: string }): Promise<number>
  /**
   * A person calls one of the account's numbers, whose voice webhook is
   * `voiceUrl` (and status callback `statusCallback`, when set): Twilio
   * requests the call's instructions from it with POST, signed, or with
   * `signature` as given (null: none). Resolves the call's SID with the
   * request and its answer; {@link finishCall} ends it.
   */
  receiveCall(call: { accountSid: string; from: string; to: string; voiceUrl: string; statusCallback?: string; signature?: string | null }): Promise<{ callSid: string; answer: AnswerRequest }>
  /** Every TwiML a call was updated with (Update a Call's `Twiml`), in order. */
  twimlOf(callSid: string): string[]
  /** Ends a call and sends its `completed` event callback, as {@link progressCall}; with `lost`, the callback never arrives (null). */
  finishCall(callSid: string, result: { status: FinalCallStatus; answeredBy?: AnsweredBy; duration?: number; lost?: boolean }): Promise<number | null>
  /** Its Programmable Messaging: texts sent, their statuses, people's texts to the account's numbers. */
  messages: FakeMessaging
  close(): Promise<void>
}

/** A request Twilio made for a call's instructions, and what it was answered. */
export interface AnswerRequest {
  url: string
  method: string
  params: Record<string, string>
  status: number
  contentType: string | undefined
  body: string
}

interface FakeCall {
  resource: CallResource
  /** Where and how its instructions are fetched when it is answered. */
  url: string
  method: string
  statusCallback: string | undefined
  /** Twilio sends only the `completed` event when StatusCallbackEvent is not given. */
  events: Set<string>
  /** Synchronous detection: AnsweredBy comes with the answer request and the callbacks. */
  machineDetection: boolean
  /** Asynchronous detection: AnsweredBy goes to this URL alone. */
  asyncAmdCallback: string | undefined
  /** The TwiML the call was updated with. */
  twiml: string[]
  /** SequenceNumber of the next callback; Twilio counts from 0. */
  sequence: number
}

type Plan = { kind: 'fail'; status: number; code: number; message: string; retryAfter?: string } | { kind: 'drop' } | { kind: 'delay'; ms: number }

const E164 = /^\+[1-9][0-9]{1,14}$/
const CALLS = /^\/2010-04-01\/Accounts\/([^/]+)\/Calls\.json$/
const CALL = /^\/2010-04-01\/Accounts\/([^/]+)\/Calls\/([^/]+)\.json$/

export async function startFakeTwilio(options: { accounts: Record<string, string>; messagingServices?: Record<string, string[]> }): Promise<FakeTwilio> {
  const calls = new Map<string, FakeCall>()
  const messaging = createFakeMessaging({
    sign: (accountSid, url, params) => twilioSignature(options.accounts[accountSid] ?? '', url, params),
    messagingServices: options.messagingServices ?? {},
    async post(url, params, signature) {
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'user-agent': 'TwilioProxy/1.1', 'x-twilio-signature': signature },
        body: new URLSearchParams(params).toString(),
      })
      return { url, params, status: response.status, contentType: response.headers.get('content-type') ?? undefined, body: await response.text() }
    },
  })
  const requests: RecordedRequest[] = []
  const timers = new Set<NodeJS.Timeout>()
  let plan: Plan | undefined

  const server = createServer((req, res) => {
    serve(req, res).catch(() => res.destroy())
  })

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req)
    const path = req.url ?? '/'
    const form = req.method === 'POST' ? new URLSearchParams(body) : new URLSearchParams()
    requests.push({ method: req.method ?? '', path, headers: req.headers, form })
    const planned = plan
    plan = undefined
    if (planned?.kind === 'fail') {
      sendJson(res, planned.status, twilioError(planned.status, planned.code, planned.message), planned.retryAfter === undefined ? {} : { 'retry-after': planned.retryAfter })
      return
    }
    const [status, answer] = handle(req.method ?? '', path, req.headers.authorization, form)
    if (planned?.kind === 'drop') {
      req.socket.destroy()
      return
    }
    if (planned?.kind === 'delay') {
      const timer = setTimeout(() => {
        timers.delete(timer)
        sendJson(res, status, answer)
      }, planned.ms)
      timers.add(timer)
      return
    }
    sendJson(res, status, answer)
  }

  function handle(method: string, path: string, authorization: string | undefined, form: URLSearchParams): [number, unknown] {
    const messagingAccount = messaging.accountOf(path)
    if (messagingAccount !== undefined) {
      if (!authenticates(authorization, messagingAccount)) return [401, twilioError(401, 20003, 'Authenticate')]
      return messaging.handle(method, path, messagingAccount, form) ?? notFound(path)
    }
    const create = CALLS.exec(path)
    const fetchOne = CALL.exec(path)
    const accountSid = create?.[1] ?? fetchOne?.[1]
    if (accountSid === undefined || (create && method !== 'POST')) return notFound(path)
    if (!authenticates(authorization, accountSid)) {
      return [401, twilioError(401, 20003, 'Authenticate')]
    }
    if (fetchOne && method === 'POST') return updateCall(accountSid, fetchOne[2] ?? '', form)
    if (fetchOne) {
      const call = calls.get(fetchOne[2] ?? '')
      return call && call.resource.account_sid === accountSid ? [200, call.resource] : notFound(path)
    }
    return createCall(accountSid, form)
  }

  function authenticates(authorization: string | undefined, accountSid: string): boolean {
    const match = /^Basic ([A-Za-z0-9+/=]+)$/.exec(authorization ?? '')
    if (!match) return false
    const decoded = Buffer.from(match[1] ?? '', 'base64').toString('utf8')
    const colon = decoded.indexOf(':')
    const user = decoded.slice(0, colon)
    const token = options.accounts[user]
    return colon > 0 && user === accountSid && token !== undefined && decoded.slice(colon + 1) === token
  }

  function createCall(accountSid: string, form: URLSearchParams): [number, unknown] {
    const to = form.get('To')
    const from = form.get('From')
    const url = form.get('Url')
    if (!to) return [400, twilioError(400, 21201, "No 'To' number is specified")]
    if (!from) return [400, twilioError(400, 21213, "No 'From' number is specified")]
    if (!url) return [400, twilioError(400, 21205, 'Url parameter is required')]
    if (!E164.test(to)) return [400, twilioError(400, 21211, `The 'To' number ${to} is not a valid phone number.`)]
    if (!E164.test(from)) return [400, twilioError(400, 21212, `The 'From' number ${from} is not a valid phone number.`)]
    if (!isHttpUrl(url)) return [400, twilioError(400, 21205, `Url is not a valid URL: ${url}`)]

    const resource = callResource(accountSid, { to, from, direction: 'outbound-api', status: 'queued' })
    const events = form.getAll('StatusCallbackEvent').flatMap((value) => value.split(' '))
    const machineDetection = form.get('MachineDetection')
    const asyncAmd = form.get('AsyncAmd') === 'true'
    if (asyncAmd && !form.get('AsyncAmdStatusCallback')) return [400, twilioError(400, 21262, 'No AMD status callback URL provided')]
    calls.set(resource.sid, {
      resource,
      url,
      method: form.get('Method') ?? 'POST',
      statusCallback: form.get('StatusCallback') ?? undefined,
      events: new Set(events.length > 0 ? events : ['completed']),
      machineDetection: !asyncAmd && (machineDetection === 'Enable' || machineDetection === 'DetectMessageEnd'),
      asyncAmdCallback: asyncAmd ? (form.get('AsyncAmdStatusCallback') ?? undefined) : undefined,
      twiml: [],
      sequence: 0,
    })
    return [201, resource]
  }

  function callResource(accountSid: string, call: Pick<CallResource, 'to' | 'from' | 'direction' | 'status'>): CallResource {
    const sid = `CA${randomBytes(16).toString('hex')}`
    const now = rfc2822(new Date())
    const uri = `/2010-04-01/Accounts/${accountSid}/Calls/${sid}`
    return {
      sid,
      account_sid: accountSid,
      parent_call_sid: null,
      date_created: now,
      date_updated: now,
      start_time: null,
      end_time: null,
      duration: null,
      to: call.to,
      to_formatted: call.to,
      from: call.from,
      from_formatted: call.from,
      phone_number_sid: `PN${randomBytes(16).toString('hex')}`,
      status: call.status,
      price: null,
      price_unit: 'USD',
      direction: call.direction,
      answered_by: null,
      api_version: '2010-04-01',
      forwarded_from: null,
      group_sid: null,
      caller_name: null,
      queue_time: '0',
      trunk_sid: null,
      annotation: null,
      uri: `${uri}.json`,
      subresource_uris: {
        notifications: `${uri}/Notifications.json`,
        recordings: `${uri}/Recordings.json`,
        payments: `${uri}/Payments.json`,
        events: `${uri}/Events.json`,
        siprec: `${uri}/Siprec.json`,
        streams: `${uri}/Streams.json`,
        user_defined_message_subscriptions: `${uri}/UserDefinedMessageSubscriptions.json`,
        user_defined_messages: `${uri}/UserDefinedMessages.json`,
      },
    }
  }

  /** Update a Call in progress: only a live call takes new TwiML (error 21220 otherwise). */
  function updateCall(accountSid: string, callSid: string, form: URLSearchParams): [number, unknown] {
    const call = calls.get(callSid)
    if (!call || call.resource.account_sid !== accountSid) return notFound(`/2010-04-01/Accounts/${accountSid}/Calls/${callSid}.json`)
    const twiml = form.get('Twiml')
    if (twiml === null) return [400, twilioError(400, 21205, 'Url parameter is required')]
    if (!['queued', 'ringing', 'in-progress'].includes(call.resource.status)) {
      return [400, twilioError(400, 21220, 'Call is not in-progress. Cannot redirect.')]
    }
    call.twiml.push(twiml)
    call.resource.date_updated = rfc2822(new Date())
    return [200, call.resource]
  }

  /** A call that is not over yet: Twilio sends nothing more about one that is. */
  function liveCall(callSid: string): FakeCall {
    const call = calls.get(callSid)
    if (!call) throw new Error(`the fake Twilio has no call ${callSid}`)
    if (!['queued', 'ringing', 'in-progress'].includes(call.resource.status)) throw new Error(`call ${callSid} is already ${call.resource.status}`)
    return call
  }

  /** The parameters Twilio sends with every request for a call's instructions. */
  function callParams(call: FakeCall): Record<string, string> {
    const { resource } = call
    return {
      AccountSid: resource.account_sid,
      ApiVersion: '2010-04-01',
      CallSid: resource.sid,
      CallStatus: resource.status,
      Called: resource.to,
      Caller: resource.from,
      Direction: resource.direction,
      From: resource.from,
      To: resource.to,
      ToCountry: '',
      FromCountry: '',
    }
  }

  /** One signed request for instructions, answered; a POST sends the parameters as a form, a GET in the query. */
  async function requestInstructions(call: FakeCall, url: string, method: string, params: Record<string, string>, signature: string | null | undefined): Promise<AnswerRequest> {
    const token = options.accounts[call.resource.account_sid] ?? ''
    const target = method === 'GET' ? `${url}${url.includes('?') ? '&' : '?'}${new URLSearchParams(params)}` : url
    const signed = signature === undefined ? twilioSignature(token, target, method === 'GET' ? {} : params) : signature
    const response = await fetch(target, {
      method,
      headers: {
        ...(method === 'POST' ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
        'user-agent': 'TwilioProxy/1.1',
        ...(signed === null ? {} : { 'x-twilio-signature': signed }),
      },
      body: method === 'POST' ? new URLSearchParams(params).toString() : undefined,
      redirect: 'manual',
    })
    return { url: target, method, params, status: response.status, contentType: response.headers.get('content-type') ?? undefined, body: await response.text() }
  }

  /** Posts a call's status callback as Twilio does, when the call subscribed to the event. */
  async function sendCallback(call: FakeCall, event: string, extra: Record<string, string>): Promise<number | null> {
    if (call.statusCallback === undefined || !call.events.has(event)) return null
    const { resource } = call
    const params: Record<string, string> = {
      AccountSid: resource.account_sid,
      ApiVersion: '2010-04-01',
      CallSid: resource.sid,
      CallStatus: resource.status,
      Called: resource.to,
      CalledCity: '',
      CalledCountry: '',
      CalledState: '',
      CalledZip: '',
      Caller: resource.from,
      CallerCity: '',
      CallerCountry: '',
      CallerState: '',
      CallerZip: '',
      Direction: resource.direction,
      From: resource.from,
      FromCity: '',
      FromCountry: '',
      FromState: '',
      FromZip: '',
      To: resource.to,
      ToCity: '',
      ToCountry: '',
      ToState: '',
      ToZip: '',
      Timestamp: rfc2822(new Date()),
      CallbackSource: 'call-progress-events',
      SequenceNumber: String(call.sequence++),
      ...extra,
    }
    const token = options.accounts[resource.account_sid] ?? ''
    const response = await fetch(call.statusCallback, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'user-agent': 'TwilioProxy/1.1',
        'i-twilio-idempotency-token': randomUUID(),
        'x-twilio-signature': twilioSignature(token, call.statusCallback, params),
      },
      body: new URLSearchParams(params).toString(),
      redirect: 'manual',
    })
    await response.arrayBuffer()
    return response.status
  }

  return {
    url: `http://127.0.0.1:${await listen(server)}`,
    requests,
    call: (callSid) => {
      const call = calls.get(callSid)
      return call && structuredClone(call.resource)
    },
    callSidFor: (statusCallback) => [...calls.values()].find((call) => call.statusCallback === statusCallback)?.resource.sid,
    failNext: (error) => {
      plan = { kind: 'fail', ...error }
    },
    dropNext: () => {
      plan = { kind: 'drop' }
    },
    delayNext: (ms) => {
      plan = { kind: 'delay', ms }
    },
    progressCall: (callSid, status) => {
      const call = liveCall(callSid)
      const now = rfc2822(new Date())
      call.resource.status = status
      call.resource.date_updated = now
      if (status === 'in-progress') call.resource.start_time = now
      return sendCallback(call, status === 'ringing' ? 'ringing' : 'answered', {})
    },
    answerCall: async (callSid, answer = {}) => {
      const call = liveCall(callSid)
      call.resource.status = 'in-progress'
      call.resource.start_time = rfc2822(new Date())
      const params = callParams(call)
      if (call.machineDetection) params.AnsweredBy = answer.answeredBy ?? 'human'
      return requestInstructions(call, call.url, call.method, params, answer.signature)
    },
    detectMachine: async (callSid, answeredBy, detection = {}) => {
      const call = liveCall(callSid)
      if (call.asyncAmdCallback === undefined) throw new Error('Twilio posts an AMD verdict only for calls placed with AsyncAmd=true')
      call.resource.answered_by = answeredBy
      const { resource } = call
      const params = { AccountSid: resource.account_sid, CallSid: resource.sid, AnsweredBy: answeredBy, MachineDetectionDuration: '4210' }
      const token = options.accounts[resource.account_sid] ?? ''
      const response = await fetch(call.asyncAmdCallback, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          'user-agent': 'TwilioProxy/1.1',
          'x-twilio-signature': detection.signature ?? twilioSignature(token, call.asyncAmdCallback, params),
        },
        body: new URLSearchParams(params).toString(),
        redirect: 'manual',
      })
      await response.arrayBuffer()
      return response.status
    },
    receiveCall: async (incoming) => {
      const resource = callResource(incoming.accountSid, { to: incoming.to, from: incoming.from, direction: 'inbound', status: 'ringing' })
      const call: FakeCall = {
        resource,
        url: incoming.voiceUrl,
        method: 'POST',
        statusCallback: incoming.statusCallback,
        events: new Set(['completed']),
        machineDetection: false,
        asyncAmdCallback: undefined,
        twiml: [],
        sequence: 0,
      }
      calls.set(resource.sid, call)
      resource.status = 'in-progress'
      resource.start_time = rfc2822(new Date())
      return { callSid: resource.sid, answer: await requestInstructions(call, call.url, call.method, callParams(call), incoming.signature) }
    },
    twimlOf: (callSid) => [...(calls.get(callSid)?.twiml ?? [])],
    finishCall: (callSid, result) => {
      const call = liveCall(callSid)
      // Twilio reports AnsweredBy only when detection was asked for, and only for a call someone (or something) picked up.
      if (result.answeredBy !== undefined && (!call.machineDetection || result.status !== 'completed')) {
        throw new Error('Twilio gives AnsweredBy only for completed calls placed with MachineDetection')
      }
      const now = rfc2822(new Date())
      const seconds = result.status === 'completed' ? (result.duration ?? 0) : 0
      const answeredBy = call.machineDetection && result.status === 'completed' ? (result.answeredBy ?? 'human') : null
      // An asynchronous verdict stays on the Call resource, but not in the status callback.
      if (call.asyncAmdCallback !== undefined && result.status !== 'completed') call.resource.answered_by = null
      Object.assign(call.resource, {
        status: result.status,
        date_updated: now,
        start_time: call.resource.start_time ?? (result.status === 'completed' ? now : null),
        end_time: now,
        duration: String(seconds),
        answered_by: call.asyncAmdCallback === undefined ? answeredBy : call.resource.answered_by,
      })
      const extra: Record<string, string> = { CallDuration: String(seconds) }
      // Duration is the billed minutes, rounded up, of a call that connected.
      if (result.status === 'completed') extra.Duration = String(Math.ceil(seconds / 60))
      if (answeredBy !== null) extra.AnsweredBy = answeredBy
      if (result.lost === true) return Promise.resolve(null)
      return sendCallback(call, 'completed', extra)
    },
    messages: messaging.api,
    close: async () => {
      for (const timer of timers) clearTimeout(timer)
      server.closeAllConnections()
      await new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())))
    },
  }
}

/** base64(HMAC-SHA1(token, URL + each parameter's name and value, sorted by name)). */
export function twilioSignature(token: string, url: string, params: Record<string, string>): string {
  const names = Object.keys(params).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
  const data = url + names.map((name) => `${name}${params[name]}`).join('')
  return createHmac('sha1', token).update(Buffer.from(data, 'utf8')).digest('base64')
}

function twilioError(status: number, code: number, message: string) {
  return { code, message, more_info: `https://www.twilio.com/docs/errors/${code}`, status }
}

function notFound(path: string): [number, unknown] {
  return [404, twilioError(404, 20404, `The requested resource ${path} was not found`)]
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body)
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), ...headers })
  res.end(text)
}

/** Twilio fetches TwiML over http or https. */
function isHttpUrl(value: string): boolean {
  try {
    return ['http:', 'https:'].includes(new URL(value).protocol)
  } catch {
    return false
  }
}

/** Twilio's date format: "Tue, 31 Aug 2010 20:36:28 +0000". */
function rfc2822(date: Date): string {
  return date.toUTCString().replace('GMT', '+0000')
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

async function listen(server: ReturnType<typeof createServer>): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return (server.address() as AddressInfo).port
}
