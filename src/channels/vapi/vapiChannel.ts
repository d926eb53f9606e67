/**
 * Voice calls held by a Vapi assistant, through Vapi's REST API ("Vapi API"
 * v1.0, https://docs.vapi.ai/api-reference; server-sdk-typescript 2.0.0):
 * - "Create Call", `POST /call` (https://docs.vapi.ai/api-reference/calls/create)
 *   with the campaign's `assistantId` and `phoneNumberId`, the person as
 *   `customer.number`, and `assistantOverrides`: the attempt's variables as
 *   `variableValues` (https://docs.vapi.ai/assistants/dynamic-variables),
 *   the interaction in `metadata` (a Call has no metadata of its own; this
 *   comes back in every server message's `call`) and `maxDurationSeconds`;
 *   the answer's `id` names the call;
 * - "Get Call", `GET /call/{id}` (https://docs.vapi.ai/api-reference/calls/get),
 *   settles a call whose end-of-call-report never came: Vapi does not retry
 *   a server message by default (`server.backoffPlan` unset), so this is
 *   what recovers a lost one, with its transcript and analysis.
 * Both with `Authorization: Bearer` and the organization's private API key.
 * The results come to the server URL (serverMessages.ts; `serverMessages`
 * below says how it is served).
 */
import { agentVariables } from '../../domain/agentVariables.ts'
import type { JsonObject } from '../../domain/types.ts'
import type { CallCallback, SignedRequest } from '../callbacks.ts'
import type { Channel, InteractionProgress, OutboundAttempt, SettledInteraction, StartResult } from '../channel.ts'
import { type ProviderAnswer, requestProvider } from '../providerHttp.ts'
import { retryAfterMs } from '../retryAfter.ts'
import { readVapiConfig, type VapiConfig, VapiConfigSchema } from './config.ts'
import {
  endOfCall,
  inboundCallAsk,
  isAssistantRequest,
  isObject,
  LIVE_STATUSES,
  reportOfMessage,
  type ServerMessage,
  serverMessageOf,
  SIGNATURE_HEADER,
  TIMESTAMP_HEADER,
  verifyVapiSignature,
} from './serverMessages.ts'

export { readVapiConfig } from './config.ts'
export { verifyVapiSignature } from './serverMessages.ts'

export interface VapiChannelOptions {
  /** Default https://api.vapi.ai; tests point it at a fake. */
  apiBaseUrl?: string
  /** Reads a credential from the environment by the variable name the config gives. */
  secret: (envName: string) => string | undefined
  /** Per request to Vapi; default 15 s. */
  timeoutMs?: number
  /** The clock a Retry-After date is read against; default Date.now. */
  now?: () => number
}

/**
 * Past a call's longest duration: time for it to wait in Vapi's queue for a
 * free concurrency slot (10 per account by default,
 * https://docs.vapi.ai/calls/call-concurrency), to ring, and for its
 * analysis and end-of-call-report to come.
 */
const SETTLE_MARGIN_MS = 15 * 60 * 1000
/** Vapi's messages are short; anything longer is not one of them and stays out of the reason. */
const MAX_REASON_MESSAGE = 300
/**
 * A 400 is "Client/policy failure (limits, validation, missing resources)"
 * (openapi CallController_create): one that speaks of a limit or of
 * concurrency passes with time, so the attempt is worth making again.
 */
const PASSING_REFUSAL = /concurren|limit|too many|rate/i

export class VapiChannel implements Channel {
  readonly provider = 'vapi'
  readonly channel = 'voice'
  readonly configSchema = VapiConfigSchema
  readonly #apiBaseUrl: string
  readonly #secret: (envName: string) => string | undefined
  readonly #timeoutMs: number
  readonly #now: () => number

  constructor(options: VapiChannelOptions) {
    this.#apiBaseUrl = (options.apiBaseUrl ?? 'https://api.vapi.ai').replace(/\/+$/, '')
    this.#secret = options.secret
    this.#timeoutMs = options.timeoutMs ?? 15_000
    this.#now = options.now ?? Date.now
  }

  /**
   * Its server URL: POST /providers/vapi/webhook, set as the assistant's (or
   * its phone number's) server URL in Vapi, receives the server messages of
   * the service's calls, signed with the HMAC credential of the campaign's
   * server URL over the timestamp and the raw body. A message about no call
   * of the service, or not verified, is refused with 403 and changes nothing.
   * It is answered as soon as it is applied (Vapi waits 20 s by default,
   * server.timeoutSeconds), and applying the same message twice changes
   * nothing more, so a retry Vapi's backoffPlan makes is harmless. An
   * end-of-call-report carries the transcript three times (the text,
   * `messages`, `messagesOpenAIFormatted`) beside the whole Call and its
   * assistant: an hour's call (about 60 kB of transcript) makes some 300 kB,
   * so 2 MiB leaves room for calls of several hours.
   */
  readonly serverMessages: CallCallback<ServerMessage> = {
    provider: 'vapi',
    route: {
      path: '/providers/vapi/webhook',
      summary: 'Vapi server messages',
      bodyLimit: 2 * 1024 * 1024,
      answer: 204,
      ignoresUnknown: false,
      refusal: 'The request is not a verified Vapi server message for a call of this service.',
    },
    parse: (request) => serverMessageOf(request.json),
    claim: (message) => ({ ref: message.callId, interactionId: message.interactionId }),
    verify: (_, request, config, now) => this.#verifiedServerMessage(request, config, now),
    report: (message, interaction, now) => reportOfMessage(message, readVapiConfig(interaction.providerConfig), now),
    // A call to a campaign's number whose phone number has no assistant of its own: Vapi asks the server URL which
    // assistant takes it (https://docs.vapi.ai/server-url/events, "Assistant Request"), and waits 7.5 s for the answer.
    inbound: {
      // Asked of every server message: its type is looked at before anything else is read.
      ask: (request) => {
        if (!isAssistantRequest(request.json)) return undefined
        const message = serverMessageOf(request.json)
        return message === undefined ? undefined : inboundCallAsk(message)
      },
      verify: (request, config, now) => this.#verifiedServerMessage(request, config, now),
      settleAfterMs: (config) => this.settleAfterMs(config),
      answer: (handoff, config) => {
        const settings = readVapiConfig(config)
        // Vapi speaks an `error` to the caller and ends the call.
        if (handoff.taskId === null && settings.unknownCallerMessage !== undefined) return { body: { error: settings.unknownCallerMessage } }
        const { variables, leftOut } = agentVariables({ ...handoff, attempt: null, direction: 'inbound' })
        // Vapi keeps the overrides on the call: its server messages name the interaction as an outbound call's do.
        const metadata = { interaction_id: handoff.interactionId, task_id: handoff.taskId, direction: 'inbound' }
        return { body: { assistantId: settings.assistantId, assistantOverrides: assistantOverrides(settings, variables, metadata) }, leftOut }
      },
    },
  }

  /** Whether a server URL request is signed with the campaign's HMAC credential. */
  #verifiedServerMessage(request: SignedRequest, config: JsonObject, now: number): boolean {
    const secret = this.#webhookSecret(config)
    return secret !== undefined && verifyVapiSignature(secret, request.raw, request.header(SIGNATURE_HEADER), request.header(TIMESTAMP_HEADER), now)
  }

  /** The secret of the server URL's HMAC credential for a campaign: what its server messages are signed with. Undefined when unset or empty. */
  #webhookSecret(config: JsonObject): string | undefined {
    return this.#credential(readVapiConfig(config).webhookSecretEnv)
  }

  async start(attempt: OutboundAttempt): Promise<StartResult> {
    const config = readVapiConfig(attempt.config)
    const apiKey = this.#credential(config.apiKeyEnv)
    if (apiKey === undefined) return { kind: 'refused', permanent: true, reason: `no Vapi API key: environment variable ${config.apiKeyEnv} is not set` }
    // Vapi takes any JSON in variableValues and publishes no bound for them: none is applied here.
    const { variables, leftOut } = agentVariables(attempt)
    const body = {
      assistantId: config.assistantId,
      phoneNumberId: config.phoneNumberId,
      customer: { number: attempt.to },
      assistantOverrides: assistantOverrides(config, variables, { interaction_id: attempt.interactionId, task_id: attempt.taskId, attempt: attempt.attempt }),
    }
    const answer = await this.#request('POST', '/call', apiKey, body)
    if (answer.status >= 200 && answer.status < 300) {
      const id = isObject(answer.body) ? answer.body.id : undefined
      // Vapi has taken the call but we cannot name it: its outcome is unknown, not refused.
      if (typeof id !== 'string' || id === '') throw new Error(`Vapi answered HTTP ${answer.status} to Create Call without a call id`)
      return { kind: 'started', providerRef: id, leftOut }
    }
    return refusal(answer, attempt.to, this.#now())
  }

  /** Long enough for any call to be over: the longest it may last, sent with it, and the margin. */
  /** Vapi documents a limit of calls at once per organization, not a rate: its campaign's max_concurrent is the pace. */
  senderPace(): undefined {
    return undefined
  }

  settleAfterMs(config: JsonObject): number {
    return readVapiConfig(config).maxDurationS * 1000 + SETTLE_MARGIN_MS
  }

  /**
   * Asks Vapi how the call ended, with its transcript and analysis. A call
   * still queued or live after its longest duration has gone wrong, and a
   * call whose start is uncertain (no id) cannot be asked about: both count
   * as a failed attempt, never redialled blindly.
   */
  async settle(progress: InteractionProgress): Promise<SettledInteraction> {
    const callId = progress.providerRef
    if (callId === null) return { outcome: 'failed' }
    const config = readVapiConfig(progress.config)
    const apiKey = this.#credential(config.apiKeyEnv)
    if (apiKey === undefined) return { outcome: 'failed' }
    const answer = await this.#request('GET', `/call/${encodeURIComponent(callId)}`, apiKey)
    // A 429 or a 5xx says nothing of the call: thrown, it is asked again later.
    if (answer.status === 429 || answer.status >= 500) throw new Error(`Vapi answered HTTP ${answer.status} when asked about a call`)
    if (answer.status !== 200 || !isObject(answer.body) || answer.body.status !== 'ended') return { outcome: 'failed' }
    return endOfCall(answer.body, config)
  }

  #credential(envName: string): string | undefined {
    const value = this.#secret(envName)
    return value === '' ? undefined : value
  }

  /** One request to the API, with the key (see providerHttp.ts). */
  #request(method: 'GET' | 'POST', path: string, apiKey: string, body?: object): Promise<ProviderAnswer> {
    return requestProvider(this.#apiBaseUrl + path, { method, headers: { authorization: `Bearer ${apiKey}` }, body, timeoutMs: this.#timeoutMs, label: `Vapi ${method} ${path}` })
  }
}

/**
 * Vapi's answer to a Create Call it did not take. Its openapi documents 400
 * (client or policy failure) and 500 (its system: database, queue); a 429
 * comes from its API rate limit (shown in Org Settings, numbers not
 * published). A 429 or a 5xx defers the start, at its Retry-After if sent:
 * the call was not created, and the attempt is made again shortly without
 * using one up. A 400 about a limit or concurrency is refused for now;
 * other refusals (validation, an assistant or number it does not know, an
 * invalid key) meet the same request again and are refused for good.
 */
function refusal(answer: ProviderAnswer, to: string, now: number): StartResult {
  const said = messageOf(answer.body, to)
  const what = `HTTP ${answer.status}${said === undefined ? '' : `: ${said}`}`
  if (answer.status === 429 || answer.status >= 500) {
    return { kind: 'deferred', retryAfterMs: retryAfterMs(answer.retryAfter, now), reason: `Vapi did not take the call for now (${what})` }
  }
  const passing = answer.status === 400 && said !== undefined && PASSING_REFUSAL.test(said)
  return { kind: 'refused', permanent: !passing, reason: `Vapi refused the call (${what})` }
}

/** The message of Vapi's error body (NestJS: `{message: string | string[], error, statusCode}`), without the number called. */
function messageOf(body: unknown, to: string): string | undefined {
  const raw = isObject(body) ? body.message : undefined
  const text = Array.isArray(raw) ? raw.filter((part) => typeof part === 'string').join('; ') : raw
  if (typeof text !== 'string' || text === '') return undefined
  return text.replaceAll(to, '[To]').slice(0, MAX_REASON_MESSAGE)
}

/** What a call's assistant is given, outbound (Create Call) or inbound (an assistant-request's answer): the variables, the service's metadata, the longest it may last. */
function assistantOverrides(config: VapiConfig, variables: Record<string, unknown>, metadata: Record<string, unknown>) {
  return { variableValues: variables, metadata, maxDurationSeconds: config.maxDurationS }
}
