/**
 * A local stand-in for ElevenLabs Agents' API and its post-call webhooks, in
 * ElevenLabs' wire format: the outbound call through its Twilio integration
 * (POST /v1/convai/twilio/outbound-call) or a SIP trunk
 * (POST /v1/convai/sip-trunk/outbound-call), JSON with the `xi-api-key`
 * header, answered `{success, message, conversation_id, callSid|sip_call_id}`;
 * GET /v1/convai/conversations/{conversation_id}, the conversation model;
 * errors as FastAPI's `{"detail": ...}` (a 422's list of problems, a 401's or
 * 429's `{status, message}`); and the `post_call_transcription` and
 * `call_initiation_failure` webhooks, signed in `ElevenLabs-Signature` as
 * `t=<unix s>,v0=<hex HMAC-SHA256 of "t.body">` with the webhook's secret. A
 * test drives each conversation's life.
 *
 * The signature is computed here independently of the service's verifier,
 * so that a test of one against the other checks the algorithm.
 */
import { createHmac, randomBytes } from 'node:crypto'
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface RecordedRequest {
  method: string
  path: string
  headers: IncomingHttpHeaders
  /** The parsed JSON body; undefined for a GET. */
  body: any
}

type DynamicValue = string | number | boolean

/** A conversation as GET /v1/convai/conversations/{id} returns it (the fields the service reads, and some it does not). */
export interface Conversation {
  agent_id: string
  conversation_id: string
  status: 'initiated' | 'in-progress' | 'processing' | 'done' | 'failed'
  user_id: string | null
  transcript: {
    role: 'agent' | 'user'
    message: string | null
    time_in_call_secs: number
    tool_calls: object[]
    tool_results: object[]
  }[]
  metadata: {
    start_time_unix_secs: number
    call_duration_secs: number
    termination_reason: string
    error: { code: number; reason: string } | null
    phone_call: { type: 'twilio' | 'sip_trunking'; direction: 'outbound' | 'inbound'; agent_number: string; external_number: string; call_sid: string }
  }
  analysis: {
    call_successful: 'success' | 'failure' | 'unknown'
    transcript_summary: string
    data_collection_results: Record<string, { data_collection_id: string; value: unknown; rationale: string }>
    evaluation_criteria_results: Record<string, { criteria_id: string; result: string; rationale: string }>
  } | null
  conversation_initiation_client_data: { dynamic_variables: Record<string, DynamicValue> }
  has_audio: boolean
  has_user_audio: boolean
  has_response_audio: boolean
}

export interface CallEnd {
  /** Turns, agent and person alternating from the agent's, a few seconds apart. */
  turns?: string[]
  summary?: string
  data?: Record<string, unknown>
  durationS?: number
  /** The agent's voicemail detection tool found a machine. */
  voicemail?: boolean
  /** status `failed` rather than `done`. */
  failed?: boolean
}

export interface WebhookOptions {
  /** Sent as is instead of the right signature (null: no header). */
  signature?: string | null
  /** The signature's timestamp, Unix s; default now. */
  timestamp?: number
}

export interface FakeElevenLabs {
  url: string
  requests: RecordedRequest[]
  conversation(id: string): Conversation | undefined
  /** The id of the conversation started with this `interaction_id` dynamic variable. */
  conversationFor(interactionId: string): string | undefined
  /** The next request is answered with this status and body (FastAPI's `detail`). */
  failNext(error: { status: number; detail?: unknown; retryAfter?: string; body?: unknown }): void
  /** The next request is handled (a conversation is started) but its connection destroyed without an answer. */
  dropNext(): void
  /** Where the workspace's webhook posts. */
  setWebhookUrl(url: string): void
  /** The workspace's conversation initiation webhook: its URL and the headers it sends (`request_headers`). */
  setInitiationWebhook(url: string, headers: Record<string, string>): void
  /**
   * A person calls the agent's Twilio number: the initiation webhook is asked
   * for the conversation's data (caller_id, agent_id, called_number,
   * call_sid), with the configured headers (or `headers` as given), and the
   * conversation starts with the dynamic variables answered. Resolves the
   * HTTP status, the answer, and the conversation's id once started.
   */
  receiveCall(call: { agentId: string; callerId: string; calledNumber: string; headers?: Record<string, string> }): Promise<{ status: number; answer: any; conversationId: string | undefined }>
  /**
   * Ends a conversation (analysis done) and posts its `post_call_transcription`,
   * signed; resolves the HTTP status it got, or null when `deliver` is false
   * (a webhook lost: only the GET tells).
   */
  endCall(id: string, end: CallEnd, options?: WebhookOptions & { deliver?: boolean }): Promise<number | null>
  /** The call was not connected; posts its `call_initiation_failure` (Twilio telephony). */
  failCall(id: string, reason: 'busy' | 'no-answer' | 'unknown', options?: WebhookOptions): Promise<number>
  /** Posts the body of the last webhook sent again (ElevenLabs' retry, re-signed), or this body. */
  resend(body?: string, options?: WebhookOptions): Promise<number>
  close(): Promise<void>
}

const E164 = /^\+[1-9][0-9]{1,14}$/

export async function startFakeElevenLabs(options: {
  apiKey: string
  webhookSecret: string
  agents: string[]
  phoneNumbers: Record<string, 'twilio' | 'sip_trunk'>
  /** The fake's clock, Unix ms (conversation times, signatures). */
  now: () => number
}): Promise<FakeElevenLabs> {
  const conversations = new Map<string, Conversation>()
  const requests: RecordedRequest[] = []
  let plan: { kind: 'fail'; status: number; body: unknown; retryAfter?: string } | { kind: 'drop' } | undefined
  let webhookUrl: string | undefined
  let initiation: { url: string; headers: Record<string, string> } | undefined
  let lastWebhook: string | undefined
  const seconds = () => Math.floor(options.now() / 1000)

  const server = createServer((req, res) => {
    serve(req, res).catch(() => res.destroy())
  })

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const text = await readBody(req)
    const path = req.url ?? '/'
    let body: any
    try {
      body = req.method === 'POST' ? JSON.parse(text) : undefined
    } catch {
      body = undefined
    }
    requests.push({ method: req.method ?? '', path, headers: req.headers, body })
    const planned = plan
    plan = undefined
    if (planned?.kind === 'fail') {
      sendJson(res, planned.status, planned.body, planned.retryAfter === undefined ? {} : { 'retry-after': planned.retryAfter })
      return
    }
    const [status, answer] = handle(req.method ?? '', path, req.headers['xi-api-key'], body)
    if (planned?.kind === 'drop') {
      req.socket.destroy()
      return
    }
    sendJson(res, status, answer)
  }

  function handle(method: string, path: string, apiKey: string | string[] | undefined, body: any): [number, unknown] {
    if (apiKey !== options.apiKey) return [401, { detail: { status: 'invalid_api_key', message: 'Invalid API key' } }]
    const outbound = /^\/v1\/convai\/(twilio|sip-trunk)\/outbound-call$/.exec(path)
    if (outbound && method === 'POST') return startCall(outbound[1] === 'twilio' ? 'twilio' : 'sip_trunk', body)
    const one = /^\/v1\/convai\/conversations\/([^/?]+)$/.exec(path)
    if (one && method === 'GET') {
      const conversation = conversations.get(decodeURIComponent(one[1]!))
      return conversation ? [200, conversation] : [404, { detail: { status: 'conversation_not_found', message: 'Conversation not found' } }]
    }
    return [404, { detail: 'Not Found' }]
  }

  function startCall(telephony: 'twilio' | 'sip_trunk', body: any): [number, unknown] {
    const problems: object[] = []
    for (const field of ['agent_id', 'agent_phone_number_id', 'to_number']) {
      if (typeof body?.[field] !== 'string') problems.push({ type: 'missing', loc: ['body', field], msg: 'Field required' })
    }
    if (problems.length > 0) return [422, { detail: problems }]
    const variables = body.conversation_initiation_client_data?.dynamic_variables ?? {}
    for (const [name, value] of Object.entries(variables)) {
      if (!['string', 'number', 'boolean'].includes(typeof value)) {
        problems.push({ type: 'type_error', loc: ['body', 'conversation_initiation_client_data', 'dynamic_variables', name], msg: 'Input should be a string, number or boolean' })
      }
      if (name.startsWith('system__')) problems.push({ type: 'value_error', loc: ['body', 'conversation_initiation_client_data', 'dynamic_variables', name], msg: 'system__ variables are reserved' })
    }
    if (!E164.test(body.to_number)) problems.push({ type: 'value_error', loc: ['body', 'to_number'], msg: `Invalid phone number ${body.to_number}` })
    if (problems.length > 0) return [422, { detail: problems }]
    if (!options.agents.includes(body.agent_id)) return [404, { detail: { status: 'agent_not_found', message: 'Agent not found' } }]
    if (options.phoneNumbers[body.agent_phone_number_id] !== telephony) {
      return [404, { detail: { status: 'phone_number_not_found', message: `No ${telephony} phone number with this id` } }]
    }
    const id = `conv_${randomBytes(12).toString('hex')}`
    const callSid = `CA${randomBytes(16).toString('hex')}`
    startConversation(id, {
      agentId: body.agent_id,
      status: 'initiated',
      phoneCall: { type: telephony === 'twilio' ? 'twilio' : 'sip_trunking', direction: 'outbound', agent_number: '+14155550100', external_number: body.to_number, call_sid: callSid },
      variables,
    })
    return telephony === 'twilio'
      ? [200, { success: true, message: 'Success', conversation_id: id, callSid }]
      : [200, { success: true, message: 'Success', conversation_id: id, sip_call_id: callSid }]
  }

  /** A conversation begun, as Get Conversation answers it until it ends. */
  function startConversation(
    id: string,
    start: { agentId: string; status: Conversation['status']; phoneCall: Conversation['metadata']['phone_call']; variables: Record<string, DynamicValue> },
  ): void {
    conversations.set(id, {
      agent_id: start.agentId,
      conversation_id: id,
      status: start.status,
      user_id: null,
      transcript: [],
      metadata: { start_time_unix_secs: seconds(), call_duration_secs: 0, termination_reason: '', error: null, phone_call: start.phoneCall },
      analysis: null,
      conversation_initiation_client_data: { dynamic_variables: start.variables },
      has_audio: false,
      has_user_audio: false,
      has_response_audio: false,
    })
  }

  function live(id: string): Conversation {
    const conversation = conversations.get(id)
    if (!conversation) throw new Error(`the fake ElevenLabs has no conversation ${id}`)
    if (conversation.status === 'done' || conversation.status === 'failed') throw new Error(`conversation ${id} is already ${conversation.status}`)
    return conversation
  }

  function signature(body: string, timestamp: number): string {
    return `t=${timestamp},v0=${createHmac('sha256', options.webhookSecret).update(`${timestamp}.${body}`).digest('hex')}`
  }

  async function post(body: string, webhook: WebhookOptions = {}): Promise<number> {
    if (webhookUrl === undefined) throw new Error('no webhook URL set on the fake ElevenLabs')
    lastWebhook = body
    const header = webhook.signature === undefined ? signature(body, webhook.timestamp ?? seconds()) : webhook.signature
    const response = await fetch(webhookUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(header === null ? {} : { 'elevenlabs-signature': header }) },
      body,
    })
    await response.arrayBuffer()
    return response.status
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    conversation: (id) => conversations.get(id),
    setInitiationWebhook: (url, headers) => {
      initiation = { url, headers }
    },
    receiveCall: async (incoming) => {
      if (initiation === undefined) throw new Error('no initiation webhook set on the fake ElevenLabs')
      const callSid = `CA${randomBytes(16).toString('hex')}`
      const response = await fetch(initiation.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(incoming.headers ?? initiation.headers) },
        body: JSON.stringify({ caller_id: incoming.callerId, agent_id: incoming.agentId, called_number: incoming.calledNumber, call_sid: callSid }),
      })
      const text = await response.text()
      const answer = text === '' ? undefined : JSON.parse(text)
      // Without its data the agent does not take the call (the variables its prompt names would be missing).
      if (response.status !== 200 || answer?.type !== 'conversation_initiation_client_data') return { status: response.status, answer, conversationId: undefined }
      const id = `conv_${randomBytes(12).toString('hex')}`
      startConversation(id, {
        agentId: incoming.agentId,
        status: 'in-progress',
        phoneCall: { type: 'twilio', direction: 'inbound', agent_number: incoming.calledNumber, external_number: incoming.callerId, call_sid: callSid },
        variables: answer.dynamic_variables ?? {},
      })
      return { status: response.status, answer, conversationId: id }
    },
    conversationFor: (interactionId) =>
      [...conversations.values()].find((conversation) => conversation.conversation_initiation_client_data.dynamic_variables.interaction_id === interactionId)
        ?.conversation_id,
    failNext(error) {
      plan = { kind: 'fail', status: error.status, body: error.body ?? { detail: error.detail ?? null }, retryAfter: error.retryAfter }
    },
    dropNext() {
      plan = { kind: 'drop' }
    },
    setWebhookUrl(url) {
      webhookUrl = url
    },
    async endCall(id, end, webhook = {}) {
      const conversation = live(id)
      const turns = end.turns ?? []
      conversation.status = end.failed ? 'failed' : 'done'
      conversation.transcript = turns.map((message, index) => ({
        role: index % 2 === 0 ? 'agent' : 'user',
        message,
        time_in_call_secs: index * 3,
        tool_calls: [],
        tool_results: [],
      }))
      if (end.voicemail) {
        conversation.transcript.push({
          role: 'agent',
          message: null,
          time_in_call_secs: turns.length * 3,
          tool_calls: [{ type: 'system', tool_name: 'voicemail_detection', params_as_json: '{}' }],
          tool_results: [{ type: 'system', tool_name: 'voicemail_detection', is_error: false, result: { result_type: 'voicemail_detection_success', status: 'success', voicemail_message: null, reason: 'beep' } }],
        })
      }
      conversation.metadata.call_duration_secs = end.durationS ?? turns.length * 3
      conversation.metadata.termination_reason = 'Call ended by remote party'
      conversation.analysis = {
        call_successful: end.failed ? 'failure' : 'success',
        transcript_summary: end.summary ?? '',
        data_collection_results: Object.fromEntries(
          Object.entries(end.data ?? {}).map(([key, value]) => [key, { data_collection_id: key, value, rationale: 'said so in the call' }]),
        ),
        evaluation_criteria_results: {},
      }
      conversation.has_audio = true
      if (webhook.deliver === false) return null
      return post(JSON.stringify({ type: 'post_call_transcription', event_timestamp: seconds(), data: conversation }), webhook)
    },
    async failCall(id, reason, webhook = {}) {
      const conversation = live(id)
      conversation.status = 'failed'
      const callStatus = reason === 'unknown' ? 'failed' : reason
      const data = {
        agent_id: conversation.agent_id,
        conversation_id: id,
        failure_reason: reason,
        metadata: { type: 'twilio', body: { CallSid: conversation.metadata.phone_call.call_sid, CallStatus: callStatus, To: conversation.metadata.phone_call.external_number } },
      }
      return post(JSON.stringify({ type: 'call_initiation_failure', event_timestamp: seconds(), data }), webhook)
    },
    resend(body, webhook) {
      const sent = body ?? lastWebhook
      if (sent === undefined) throw new Error('no webhook sent yet')
      return post(sent, webhook)
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body)
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers })
  res.end(text)
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}
