/**
 * A local stand-in for Retell AI's API and webhooks, in Retell's wire format
 * (OpenAPI "Retell SDK" 3.0.0, retell-sdk v5.60.0): "Create Phone Call"
 * (POST /v2/create-phone-call) and "Get Call" (GET /v2/get-call/{call_id})
 * with Bearer auth, JSON bodies, errors as `{"status": "error", "message"}`;
 * and the webhooks `call_started`, `call_ended` (the call object without
 * `call_analysis`) and `call_analyzed` (with it), posted as `{"event",
 * "call"}` and signed in `x-retell-signature` as `v=<unix ms>,d=<hex
 * HMAC-SHA256(API key, body + v)>` (https://docs.retellai.com/features/secure-webhook).
 * A test drives each call's life.
 *
 * The signature is computed here independently of the service's verifier, so
 * that a test of one against the other checks the algorithm, not a copy of it.
 */
import { createHmac, randomBytes } from 'node:crypto'
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface RecordedRequest {
  method: string
  path: string
  headers: IncomingHttpHeaders
  /** The JSON body; undefined for a GET. */
  body: any
}

export type DisconnectionReason =
  | 'user_hangup'
  | 'agent_hangup'
  | 'call_transfer'
  | 'voicemail_reached'
  | 'inactivity'
  | 'max_duration_reached'
  | 'dial_busy'
  | 'dial_failed'
  | 'dial_no_answer'
  | 'invalid_destination'
  | 'user_declined'
  | 'error_llm_websocket_open'

/** One line of Retell's `transcript_object`. */
export interface Utterance {
  role: 'agent' | 'user'
  content: string
  /** Seconds from the call's start of the first word. */
  start: number
}

export interface CallAnalysis {
  call_summary?: string
  in_voicemail?: boolean
  user_sentiment?: 'Negative' | 'Positive' | 'Neutral' | 'Unknown'
  call_successful?: boolean
  custom_analysis_data?: Record<string, unknown>
}

/** Retell's call object (V2PhoneCallResponse), as much of it as these tests need, in its field names. */
export interface RetellCallObject {
  call_type: 'phone_call'
  call_id: string
  agent_id: string
  agent_version: number
  call_status: 'registered' | 'not_connected' | 'ongoing' | 'ended' | 'error'
  direction: 'outbound' | 'inbound'
  from_number: string
  to_number: string
  metadata?: unknown
  retell_llm_dynamic_variables?: Record<string, string>
  start_timestamp?: number
  end_timestamp?: number
  duration_ms?: number
  disconnection_reason?: DisconnectionReason
  transcript?: string
  transcript_object?: { role: string; content: string; words: { word: string; start: number; end: number }[] }[]
  recording_url?: string
  public_log_url?: string
  call_analysis?: CallAnalysis
}

export interface FakeRetell {
  url: string
  requests: RecordedRequest[]
  /** Where webhooks are posted (the agent's webhook URL). */
  setWebhookUrl(url: string): void
  call(callId: string): RetellCallObject | undefined
  /** The call whose metadata names this interaction. */
  callIdFor(interactionId: string): string | undefined
  /** The next API request is answered with this error. */
  failNext(error: { status: number; message: string; retryAfter?: string }): void
  /** The next API request is handled (a call is created) but its connection destroyed without an answer. */
  dropNext(): void
  /** Where a number's inbound webhook is posted (its inbound_webhook_url). */
  setInboundWebhookUrl(url: string): void
  /**
   * A person calls one of the numbers: Retell posts `call_inbound` to the
   * number's inbound webhook URL, signed (or with `signature` as given; null:
   * none), and the call connects with the agent, dynamic variables and
   * metadata its answer gives (none: the number's own agent). Resolves the
   * HTTP status, the answer, and the call's id once it connected.
   */
  receiveCall(call: { from: string; to: string; signature?: string | null }): Promise<{ status: number; answer: any; callId: string | undefined }>
  /** The person picks up: the call is ongoing, and `call_started` is sent. Resolves the webhook's HTTP status. */
  startCall(callId: string): Promise<number>
  /** The call ends; `call_ended` is sent (without analysis). */
  endCall(callId: string, end: { reason: DisconnectionReason; durationMs?: number; transcript?: Utterance[] }): Promise<number>
  /** The post-call analysis is done; `call_analyzed` is sent with it. */
  analyzeCall(callId: string, analysis: CallAnalysis): Promise<number>
  /**
   * Sends an event about a call as it stands, again (Retell's retry), or with
   * a signature as given (null: none), or with `mutate` applied to the body
   * after it was signed.
   */
  send(event: 'call_started' | 'call_ended' | 'call_analyzed', callId: string, options?: { signature?: string | null; mutate?: (body: string) => string }): Promise<number>
  close(): Promise<void>
}

const E164 = /^\+[1-9][0-9]{1,14}$/

export async function startFakeRetell(options: {
  apiKey: string
  /** The numbers bought in the account, each with the agent bound to it for outbound calls. */
  numbers: Record<string, string>
  /** Retell's clock, for the signature's timestamp and the calls' times. */
  now: () => number
}): Promise<FakeRetell> {
  const calls = new Map<string, RetellCallObject>()
  const requests: RecordedRequest[] = []
  let webhookUrl: string | undefined
  let inboundWebhookUrl: string | undefined
  let plan: { kind: 'fail'; status: number; message: string; retryAfter?: string } | { kind: 'drop' } | undefined

  const server = createServer((req, res) => {
    serve(req, res).catch(() => res.destroy())
  })

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let text = ''
    for await (const chunk of req) text += chunk
    const path = req.url ?? '/'
    let body: any
    try {
      body = text === '' ? undefined : JSON.parse(text)
    } catch {
      body = Symbol('not json')
    }
    requests.push({ method: req.method ?? '', path, headers: req.headers, body })
    const planned = plan
    plan = undefined
    if (planned?.kind === 'fail') {
      sendJson(res, planned.status, { status: 'error', message: planned.message }, planned.retryAfter === undefined ? {} : { 'retry-after': planned.retryAfter })
      return
    }
    const [status, answer] = handle(req.method ?? '', path, req.headers.authorization, body)
    if (planned?.kind === 'drop') {
      req.socket.destroy()
      return
    }
    sendJson(res, status, answer)
  }

  function handle(method: string, path: string, authorization: string | undefined, body: any): [number, unknown] {
    if (authorization !== `Bearer ${options.apiKey}`) return [401, { status: 'error', message: 'API key is missing or invalid.' }]
    if (method === 'POST' && path === '/v2/create-phone-call') return createCall(body)
    const get = /^\/v2\/get-call\/([^/]+)$/.exec(path)
    if (method === 'GET' && get !== null) {
      const call = calls.get(decodeURIComponent(get[1]!))
      return call === undefined ? [404, { status: 'error', message: 'Cannot find requested asset under given api key.' }] : [200, call]
    }
    return [404, { status: 'error', message: 'Not found' }]
  }

  function createCall(body: any): [number, unknown] {
    const invalid: [number, unknown] = [400, { status: 'error', message: 'Invalid request format, please check API reference.' }]
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return invalid
    if (typeof body.from_number !== 'string' || typeof body.to_number !== 'string' || !E164.test(body.to_number)) return invalid
    const variables = body.retell_llm_dynamic_variables
    if (variables !== undefined && (typeof variables !== 'object' || variables === null || Object.values(variables).some((value) => typeof value !== 'string'))) return invalid
    const boundAgent = options.numbers[body.from_number]
    if (boundAgent === undefined) return [422, { status: 'error', message: 'Cannot find requested asset under given api key.' }]
    const call: RetellCallObject = {
      call_type: 'phone_call',
      call_id: randomBytes(16).toString('base64url'),
      agent_id: typeof body.override_agent_id === 'string' ? body.override_agent_id : boundAgent,
      agent_version: typeof body.override_agent_version === 'number' ? body.override_agent_version : 0,
      call_status: 'registered',
      direction: 'outbound',
      from_number: body.from_number,
      to_number: body.to_number,
      // Omitted when not provided (webhook-overview).
      ...(body.metadata === undefined ? {} : { metadata: body.metadata }),
      ...(variables === undefined ? {} : { retell_llm_dynamic_variables: variables }),
    }
    calls.set(call.call_id, call)
    return [201, call]
  }

  function must(callId: string): RetellCallObject {
    const call = calls.get(callId)
    if (call === undefined) throw new Error(`no call ${callId}`)
    return call
  }

  async function send(event: string, callId: string, sendOptions: { signature?: string | null; mutate?: (body: string) => string } = {}): Promise<number> {
    if (webhookUrl === undefined) throw new Error('no webhook URL set')
    const call = must(callId)
    // call_ended carries the whole call object but its analysis; call_analyzed all of it.
    const { call_analysis: analysis, ...rest } = call
    const body = JSON.stringify({ event, call: event === 'call_analyzed' ? { ...rest, call_analysis: analysis } : rest })
    const response = await postSigned(webhookUrl, body, sendOptions)
    await response.arrayBuffer()
    return response.status
  }

  function postSigned(url: string, body: string, sendOptions: { signature?: string | null; mutate?: (body: string) => string }): Promise<Response> {
    const timestamp = String(options.now())
    const signature = `v=${timestamp},d=${createHmac('sha256', options.apiKey).update(body + timestamp).digest('hex')}`
    const headers: Record<string, string> = { 'content-type': 'application/json' }
    const given = sendOptions.signature === undefined ? signature : sendOptions.signature
    if (given !== null) headers['x-retell-signature'] = given
    return fetch(url, { method: 'POST', headers, body: sendOptions.mutate === undefined ? body : sendOptions.mutate(body) })
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    setWebhookUrl: (url) => {
      webhookUrl = url
    },
    setInboundWebhookUrl: (url) => {
      inboundWebhookUrl = url
    },
    receiveCall: async (incoming) => {
      if (inboundWebhookUrl === undefined) throw new Error('no inbound webhook URL set')
      const boundAgent = options.numbers[incoming.to]
      const inbound = { from_number: incoming.from, to_number: incoming.to, ...(boundAgent === undefined ? {} : { agent_id: boundAgent, agent_version: 0 }) }
      const response = await postSigned(inboundWebhookUrl, JSON.stringify({ event: 'call_inbound', call_inbound: inbound }), { signature: incoming.signature })
      const text = await response.text()
      const answer = text === '' ? undefined : JSON.parse(text)
      const given = answer?.call_inbound
      const agent = typeof given?.override_agent_id === 'string' ? given.override_agent_id : boundAgent
      // No agent to take it: Retell disconnects the call.
      if (response.status !== 200 || agent === undefined) return { status: response.status, answer, callId: undefined }
      const call: RetellCallObject = {
        call_type: 'phone_call',
        call_id: randomBytes(16).toString('base64url'),
        agent_id: agent,
        agent_version: typeof given?.override_agent_version === 'number' ? given.override_agent_version : 0,
        call_status: 'registered',
        direction: 'inbound',
        from_number: incoming.from,
        to_number: incoming.to,
        ...(given?.metadata === undefined ? {} : { metadata: given.metadata }),
        ...(given?.dynamic_variables === undefined ? {} : { retell_llm_dynamic_variables: given.dynamic_variables }),
      }
      calls.set(call.call_id, call)
      return { status: response.status, answer, callId: call.call_id }
    },
    call: (callId) => calls.get(callId),
    callIdFor: (interactionId) => [...calls.values()].find((call) => (call.metadata as { interaction_id?: string } | undefined)?.interaction_id === interactionId)?.call_id,
    failNext: (error) => {
      plan = { kind: 'fail', ...error }
    },
    dropNext: () => {
      plan = { kind: 'drop' }
    },
    startCall: (callId) => {
      Object.assign(must(callId), { call_status: 'ongoing', start_timestamp: options.now() })
      return send('call_started', callId)
    },
    endCall: (callId, end) => {
      const call = must(callId)
      const connected = !['dial_busy', 'dial_failed', 'dial_no_answer', 'invalid_destination', 'user_declined'].includes(end.reason)
      const start = call.start_timestamp ?? options.now()
      const durationMs = connected ? (end.durationMs ?? 0) : 0
      Object.assign(call, {
        call_status: connected ? 'ended' : 'not_connected',
        disconnection_reason: end.reason,
        start_timestamp: start,
        end_timestamp: start + durationMs,
        duration_ms: durationMs,
        ...(connected
          ? {
              recording_url: `https://dxc03zgurdly9.cloudfront.net/${callId}/recording.wav`,
              public_log_url: `https://dxc03zgurdly9.cloudfront.net/${callId}/public.log`,
            }
          : {}),
        ...(end.transcript === undefined
          ? {}
          : {
              transcript: end.transcript.map((line) => `${line.role === 'agent' ? 'Agent' : 'User'}: ${line.content}\n`).join(''),
              transcript_object: end.transcript.map((line) => ({
                role: line.role,
                content: line.content,
                words: line.content.split(' ').map((word, index) => ({ word, start: line.start + index * 0.3, end: line.start + index * 0.3 + 0.25 })),
              })),
            }),
      })
      return send('call_ended', callId)
    },
    analyzeCall: (callId, analysis) => {
      must(callId).call_analysis = analysis
      return send('call_analyzed', callId)
    },
    send,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body)
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers }).end(text)
}
