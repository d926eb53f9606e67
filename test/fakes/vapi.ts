/**
 * A local stand-in for Vapi's REST API ("Vapi API" v1.0) and its server
 * messages, in Vapi's wire format: "Create Call" (POST /call) and "Get Call"
 * (GET /call/{id}) with `Authorization: Bearer` and the private key, JSON
 * bodies, the Call object (camelCase, `status: "queued"` at creation),
 * NestJS-style errors `{message, error, statusCode}`; and the server
 * messages a call sends to the server URL, `{"message": {...}}`
 * (`status-update`, `end-of-call-report`), signed as an HMAC credential with
 * its defaults signs them: hex HMAC-SHA256 of `{timestamp}.{body}` in
 * `x-signature`, the timestamp in `x-timestamp`. A test drives each call's life.
 *
 * The signature is computed here independently of the service's verifier,
 * so that a test of one against the other checks the algorithm.
 */
import { createHmac, randomUUID } from 'node:crypto'
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface RecordedRequest {
  method: string
  path: string
  headers: IncomingHttpHeaders
  /** The parsed JSON body; undefined for a GET. */
  body: any
}

/** What a test says of a call's end. */
export interface CallEnd {
  endedReason: string
  /** Seconds between startedAt and endedAt. */
  durationS?: number
  messages?: { role: string; message: string }[]
  transcript?: string
  recordingUrl?: string
  summary?: string
  structuredData?: Record<string, unknown>
}

export interface FakeVapi {
  url: string
  requests: RecordedRequest[]
  /** The Call as Get Call answers it. */
  call(id: string): Record<string, any> | undefined
  /** The id of the call created for this interaction (by its metadata). */
  callIdFor(interactionId: string): string | undefined
  /** Where server messages go: the service's server URL. */
  setServerUrl(url: string): void
  /** The next request is answered with this error (and no call is created). */
  failNext(error: { status: number; message?: string | string[]; retryAfter?: string }): void
  /** The next request is handled (a call is created) but its connection destroyed without an answer. */
  dropNext(): void
  /** Moves a call on and sends its status-update; resolves the HTTP status the server URL answered. */
  updateStatus(id: string, status: 'ringing' | 'in-progress'): Promise<number>
  /**
   * Ends a call: Get Call reports it ended with its artifact and analysis.
   * `send` false loses the end-of-call-report (Vapi does not retry by
   * default); otherwise resolves the status the server URL answered.
   */
  endCall(id: string, end: CallEnd, options?: { send?: boolean }): Promise<number | null>
  /**
   * A person calls one of the phone numbers, which has no assistant of its
   * own: Vapi sends the server URL an `assistant-request`, signed (or with
   * `signature` as given; null: none), and the call goes on with the
   * assistant and overrides the answer names (a later endCall reports them
   * on the call). Resolves the call's id, the HTTP status and the answer.
   */
  receiveCall(call: { phoneNumberId: string; from: string; signature?: string | null }): Promise<{ callId: string; status: number; answer: any }>
  /** Sends a message body as given, signed with `secret` (default: the configured one) at `timestampMs`. */
  post(body: string, options?: { secret?: string; signature?: string | null; timestampMs?: number }): Promise<number>
  close(): Promise<void>
}

type Plan = { kind: 'fail'; status: number; message?: string | string[]; retryAfter?: string } | { kind: 'drop' }

export async function startFakeVapi(options: { apiKey: string; webhookSecret: string; assistantIds: string[]; phoneNumberIds: string[]; now: () => number }): Promise<FakeVapi> {
  const calls = new Map<string, Record<string, any>>()
  const requests: RecordedRequest[] = []
  let plan: Plan | undefined
  let serverUrl: string | undefined

  const server = createServer((req, res) => {
    serve(req, res).catch(() => res.destroy())
  })

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let text = ''
    for await (const chunk of req) text += chunk
    const path = req.url ?? '/'
    const body = text === '' ? undefined : JSON.parse(text)
    requests.push({ method: req.method ?? '', path, headers: req.headers, body })
    const planned = plan
    plan = undefined
    if (planned?.kind === 'fail') {
      send(res, planned.status, nestError(planned.status, planned.message ?? 'Rate limit exceeded'), planned.retryAfter === undefined ? {} : { 'retry-after': planned.retryAfter })
      return
    }
    const [status, answer] = handle(req.method ?? '', path, req.headers.authorization, body)
    if (planned?.kind === 'drop') {
      req.socket.destroy()
      return
    }
    send(res, status, answer)
  }

  function handle(method: string, path: string, authorization: string | undefined, body: any): [number, unknown] {
    if (authorization !== `Bearer ${options.apiKey}`) return [401, nestError(401, 'Invalid Key. Hot tip, you may be using the private key instead of the public key, or vice versa.')]
    if (method === 'POST' && path === '/call') return createCall(body)
    const match = /^\/call\/([^/]+)$/.exec(path)
    if (method === 'GET' && match !== null) {
      const call = calls.get(decodeURIComponent(match[1]!))
      return call === undefined ? [404, nestError(404, 'Not Found')] : [200, call]
    }
    return [404, nestError(404, `Cannot ${method} ${path}`)]
  }

  function createCall(body: any): [number, unknown] {
    const problems: string[] = []
    if (typeof body?.assistantId !== 'string') problems.push('assistantId must be a string')
    else if (!options.assistantIds.includes(body.assistantId)) return [400, nestError(400, `Couldn't Get Assistant. \`assistantId\` ${body.assistantId} Does Not Exist.`)]
    if (typeof body?.phoneNumberId !== 'string') problems.push('phoneNumberId must be a string')
    else if (!options.phoneNumberIds.includes(body.phoneNumberId)) return [400, nestError(400, `Couldn't Get Phone Number. \`phoneNumberId\` ${body.phoneNumberId} Does Not Exist.`)]
    if (!/^\+[1-9][0-9]{1,14}$/.test(body?.customer?.number ?? '')) problems.push('customer.number must be a valid phone number in the E.164 format.')
    const known = new Set(['assistantId', 'phoneNumberId', 'customer', 'assistantOverrides'])
    for (const key of Object.keys(body ?? {})) if (!known.has(key)) problems.push(`property ${key} should not exist`)
    if (problems.length > 0) return [400, nestError(400, problems)]
    const at = new Date(options.now()).toISOString()
    const call = {
      id: randomUUID(),
      orgId: randomUUID(),
      type: 'outboundPhoneCall',
      status: 'queued',
      createdAt: at,
      updatedAt: at,
      assistantId: body.assistantId,
      phoneNumberId: body.phoneNumberId,
      customer: body.customer,
      assistantOverrides: body.assistantOverrides,
      phoneCallProvider: 'twilio',
      phoneCallTransport: 'pstn',
      monitor: {},
      transport: {},
    }
    calls.set(call.id, call)
    return [201, call]
  }

  async function post(body: string, postOptions: { secret?: string; signature?: string | null; timestampMs?: number } = {}): Promise<number> {
    const response = await postForAnswer(body, postOptions)
    return response.status
  }

  async function postForAnswer(body: string, postOptions: { secret?: string; signature?: string | null; timestampMs?: number } = {}): Promise<{ status: number; text: string }> {
    if (serverUrl === undefined) throw new Error('no server URL set')
    const timestamp = String(postOptions.timestampMs ?? options.now())
    const signature =
      postOptions.signature !== undefined
        ? postOptions.signature
        : createHmac('sha256', postOptions.secret ?? options.webhookSecret).update(`${timestamp}.${body}`).digest('hex')
    const headers: Record<string, string> = { 'content-type': 'application/json', 'x-timestamp': timestamp }
    if (signature !== null) headers['x-signature'] = signature
    const response = await fetch(serverUrl, { method: 'POST', headers, body })
    return { status: response.status, text: await response.text() }
  }

  const message = (call: Record<string, any>, fields: Record<string, unknown>) =>
    JSON.stringify({ message: { timestamp: options.now(), ...fields, call, phoneNumber: { id: call.phoneNumberId }, customer: call.customer } })

  return {
    url: `http://127.0.0.1:${await listen(server)}`,
    requests,
    call: (id) => calls.get(id),
    callIdFor: (interactionId) => [...calls.values()].find((call) => call.assistantOverrides?.metadata?.interaction_id === interactionId)?.id,
    setServerUrl(url) {
      serverUrl = url
    },
    failNext(error) {
      plan = { kind: 'fail', ...error }
    },
    dropNext() {
      plan = { kind: 'drop' }
    },
    async updateStatus(id, status) {
      const call = calls.get(id)!
      call.status = status
      if (status === 'in-progress') call.startedAt = new Date(options.now()).toISOString()
      return post(message(call, { type: 'status-update', status }))
    },
    async endCall(id, end, endOptions = {}) {
      const call = calls.get(id)!
      const endedAt = options.now()
      const startedAt = endedAt - (end.durationS ?? 0) * 1000
      const messages = (end.messages ?? []).map((turn, index) => ({ ...turn, time: startedAt + index * 1000, endTime: startedAt + index * 1000 + 900, secondsFromStart: index }))
      const artifact = {
        messages: [{ role: 'system', message: 'You are a recruiter…', time: startedAt, secondsFromStart: 0 }, ...messages],
        messagesOpenAIFormatted: messages.map((turn) => ({ role: turn.role === 'bot' ? 'assistant' : turn.role, content: turn.message })),
        transcript: end.transcript ?? messages.map((turn) => `${turn.role === 'bot' ? 'AI' : 'User'}: ${turn.message}`).join('\n'),
        ...(end.recordingUrl === undefined ? {} : { recordingUrl: end.recordingUrl }),
      }
      const analysis = { ...(end.summary === undefined ? {} : { summary: end.summary }), ...(end.structuredData === undefined ? {} : { structuredData: end.structuredData }) }
      Object.assign(call, { status: 'ended', endedReason: end.endedReason, startedAt: new Date(startedAt).toISOString(), endedAt: new Date(endedAt).toISOString(), artifact, analysis })
      if (endOptions.send === false) return null
      return post(
        message(call, {
          type: 'end-of-call-report',
          endedReason: end.endedReason,
          startedAt: call.startedAt,
          endedAt: call.endedAt,
          cost: 0.12,
          artifact,
          analysis,
        }),
      )
    },
    async receiveCall(incoming) {
      const at = new Date(options.now()).toISOString()
      const call: Record<string, any> = {
        id: randomUUID(),
        orgId: randomUUID(),
        type: 'inboundPhoneCall',
        status: 'ringing',
        createdAt: at,
        updatedAt: at,
        phoneNumberId: incoming.phoneNumberId,
        customer: { number: incoming.from },
        phoneCallProvider: 'twilio',
        phoneCallTransport: 'pstn',
      }
      calls.set(call.id, call)
      const response = await postForAnswer(message(call, { type: 'assistant-request' }), { signature: incoming.signature })
      const answer = response.text === '' ? undefined : JSON.parse(response.text)
      if (response.status === 200 && typeof answer?.assistantId === 'string') Object.assign(call, { assistantId: answer.assistantId, assistantOverrides: answer.assistantOverrides, status: 'in-progress' })
      return { callId: call.id as string, status: response.status, answer }
    },
    post,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

function nestError(status: number, message: string | string[]) {
  const error: Record<number, string> = { 400: 'Bad Request', 401: 'Unauthorized', 404: 'Not Found', 429: 'Too Many Requests', 500: 'Internal Server Error' }
  return { message, error: error[status] ?? 'Error', statusCode: status }
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers }).end(JSON.stringify(body))
}

async function listen(server: ReturnType<typeof createServer>): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return (server.address() as AddressInfo).port
}
