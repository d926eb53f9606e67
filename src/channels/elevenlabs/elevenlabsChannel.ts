/**
 * Voice calls placed by an ElevenLabs Agents agent (Conversational AI), as
 * its API reference describes them (SDK elevenlabs-js v2.56.0; the docs'
 * pages as of 2026; docs/providers/voice-platforms.md holds the summary):
 * - start: "Outbound call via Twilio", POST /v1/convai/twilio/outbound-call
 *   (https://elevenlabs.io/docs/eleven-agents/api-reference/twilio/outbound-call),
 *   or the same body to POST /v1/convai/sip-trunk/outbound-call for a SIP
 *   trunk number (`telephony` in provider_config); JSON, header `xi-api-key`.
 *   Its answer `{success, message, conversation_id, callSid|sip_call_id}`
 *   names the conversation: its `conversation_id` is the interaction's
 *   provider_ref;
 * - the agent's variables: `conversation_initiation_client_data.
 *   dynamic_variables`, strings, numbers and booleans
 *   (https://elevenlabs.io/docs/eleven-agents/customization/personalization/dynamic-variables),
 *   made by agentVariables; names starting with `system__` are ElevenLabs'
 *   own and are left out;
 * - settle: GET /v1/convai/conversations/{conversation_id}
 *   (https://elevenlabs.io/docs/api-reference/conversations/get), with its
 *   transcript and analysis as the result.
 *
 * Correlation: the outbound call takes no metadata. A post-call webhook names
 * the conversation by `conversation_id`, which is the provider_ref the start
 * recorded; when the start's answer was lost, the `interaction_id` dynamic
 * variable the agent was given (a transcription's data carries it back) finds
 * the interaction. A call that failed to connect reports only its
 * conversation_id, so such an attempt is settled by its settle time.
 *
 * Refusals: ElevenLabs' 429 (`too_many_concurrent_requests`, `system_busy`:
 * https://help.elevenlabs.io/hc/en-us/articles/19571824571921) and a 5xx are
 * its own momentary state: the start is deferred and costs no attempt. Other
 * 4xx are the request's (a wrong key, agent or number; a quota exceeded), met
 * again by the same request: refused for good. A 200 with `success: false`
 * placed no call: refused for now.
 */
import { createHash } from 'node:crypto'
import { type AgentAttempt, agentVariables } from '../../domain/agentVariables.ts'
import { storableId } from '../../domain/boundedReaders.ts'
import type { JsonObject, LeftOut } from '../../domain/types.ts'
import type { CallCallback } from '../callbacks.ts'
import type { Channel, InteractionProgress, OutboundAttempt, SettledInteraction, StartResult } from '../channel.ts'
import { type ProviderAnswer, requestProvider } from '../providerHttp.ts'
import { sameSecret } from '../sameSecret.ts'
import { retryAfterMs } from '../retryAfter.ts'
import { ElevenLabsConfigSchema, readElevenLabsConfig } from './config.ts'
import { conversationEnd, isObject, reportFromWebhook, verifyElevenLabsSignature, webhookEvent, type WebhookEvent } from './conversation.ts'


export interface ElevenLabsChannelOptions {
  /** Default https://api.elevenlabs.io; tests point it at a fake. */
  apiBaseUrl?: string
  /** Reads a credential from the environment by name. */
  secret: (envName: string) => string | undefined
  /** Per request to ElevenLabs; default 10 s. */
  timeoutMs?: number
  /** The clock a Retry-After date is read against; default Date.now. */
  now?: () => number
}

/** ElevenLabs reserves these names for its own variables (system__time, system__caller_id...). */
const RESERVED_PREFIX = 'system__'
/**
 * How long after its start a call is asked about when no webhook came:
 * ringing, then an hour, well past an agent's conversation limit
 * (`max_duration_seconds`, 600 s unless the agent sets more), then the
 * analysis. A call still running then is asked about again later (settle
 * throws), so this bounds when, not whether, it is found.
 */
const MAX_CALL_MS = 60 * 60 * 1000
const SETTLE_MARGIN_MS = 15 * 60 * 1000
/** ElevenLabs' messages are short; anything longer is not one of them and stays out of the reason. */
const MAX_REASON_MESSAGE = 300

export class ElevenLabsChannel implements Channel {
  readonly provider = 'elevenlabs'
  readonly channel = 'voice'
  readonly configSchema = ElevenLabsConfigSchema
  readonly #apiBaseUrl: string
  readonly #secret: (envName: string) => string | undefined
  readonly #timeoutMs: number
  readonly #now: () => number

  constructor(options: ElevenLabsChannelOptions) {
    this.#apiBaseUrl = (options.apiBaseUrl ?? 'https://api.elevenlabs.io').replace(/\/+$/, '')
    this.#secret = options.secret
    this.#timeoutMs = options.timeoutMs ?? 10_000
    this.#now = options.now ?? Date.now
  }

  /**
   * Its post-call webhook: POST /providers/elevenlabs/webhook, the URL set on
   * the workspace's webhook (Settings > Webhooks) that the agent's post-call
   * webhook uses, signed in `ElevenLabs-Signature` with that webhook's HMAC
   * secret over the exact bytes, and believed only for the campaign's agent
   * (otherwise 403, and nothing changes). A `post_call_transcription` ends its
   * interaction with its transcript and analysis as the result; a
   * `call_initiation_failure` ends it as busy, not answered or failed; other
   * events (`post_call_audio`) are not read. ElevenLabs expects a 200 and
   * disables a webhook that keeps failing, so one about no conversation of
   * this service (a call from the dashboard, an inbound call) is answered 200
   * and ignored; its retries send the same report again, which a finalized
   * interaction ignores. A transcript with its per-turn details (tool calls,
   * timings, LLM usage: several times the words, where a result keeps at
   * most 256 KiB) can exceed the API's 1 MiB bodies: up to 4 MiB are taken.
   */
  readonly postCallWebhook: CallCallback<WebhookEvent> = {
    provider: 'elevenlabs',
    route: {
      path: '/providers/elevenlabs/webhook',
      summary: 'ElevenLabs post-call webhook',
      bodyLimit: 4 * 1024 * 1024,
      answer: 200,
      ignoresUnknown: true,
      refusal: 'The webhook is not signed by ElevenLabs for a conversation of this service.',
    },
    parse: (request) => webhookEvent(request.json),
    claim: (event) => ({ ref: event.conversationId, interactionId: event.interactionId }),
    verify: (event, request, config, now) => {
      const secret = this.#webhookSecret(config)
      if (secret === undefined || !verifyElevenLabsSignature(secret, request.raw, request.header('elevenlabs-signature'), now)) return false
      return event.agentId === undefined || event.agentId === readElevenLabsConfig(config).agentId
    },
    report: (event, interaction, now) => reportFromWebhook(event, readElevenLabsConfig(interaction.providerConfig), now),
    // A call to one of the agent's numbers, with "fetch initiation data" enabled and the workspace's conversation
    // initiation webhook set to the service: ElevenLabs asks for the conversation's dynamic variables
    // (customization/personalization/twilio-personalization). The webhook is not signed: it carries the headers the
    // workspace set, here `Authorization: Bearer <the campaign's initiation secret>`. The conversation is named by its
    // post-call webhook, whose initiation data holds the interaction answered here.
    inbound: {
      route: {
        path: '/providers/elevenlabs/conversation-initiation',
        summary: 'ElevenLabs conversation initiation webhook',
        bodyLimit: 64 * 1024,
        refusal: "The request does not carry the webhook secret of a campaign of the agent it names.",
      },
      ask: (request) => {
        const body = isObject(request.json) ? request.json : undefined
        const agentId = storableId(body?.agent_id)
        if (agentId === undefined) return undefined
        const callSid = storableId(body?.call_sid)
        return {
          call: { repeatKey: callSid ?? createHash('sha256').update(request.raw).digest('base64url') },
          from: storableId(body?.caller_id),
          number: { field: 'agent_id', value: agentId },
        }
      },
      // A secret of its own, not the post-call webhook's HMAC secret: whoever sees the workspace's headers could sign with that.
      verify: (request, config) => {
        const secret = this.#credential(readElevenLabsConfig(config).initiationSecretEnv)
        const given = /^Bearer (.+)$/.exec(request.header('authorization') ?? '')?.[1]
        return secret !== undefined && given !== undefined && sameSecret(given, secret)
      },
      settleAfterMs: (config) => this.settleAfterMs(config),
      answer: (handoff) => {
        const { variables, leftOut } = this.variables({ ...handoff, attempt: null, direction: 'inbound' })
        // ElevenLabs wants every variable the agent's prompt names: one written for outbound calls names these too.
        return { body: { type: 'conversation_initiation_client_data', dynamic_variables: { task_id: '', attempt: '', ...variables } }, leftOut }
      },
    },
  }

  /** The HMAC secret of a campaign's post-call webhook. Undefined when unset or empty. */
  #webhookSecret(config: JsonObject): string | undefined {
    return this.#credential(readElevenLabsConfig(config).webhookSecretEnv)
  }

  /** The variables an attempt's agent receives, and what of the attempt is not among them (with why). */
  variables(attempt: AgentAttempt): { variables: Record<string, string | number | boolean>; leftOut: LeftOut[] } {
    const made = agentVariables(attempt)
    const variables: Record<string, string | number | boolean> = {}
    const leftOut = [...made.leftOut]
    for (const [name, value] of Object.entries(made.variables)) {
      if (name.startsWith(RESERVED_PREFIX)) leftOut.push({ key: name, reason: `ElevenLabs reserves names starting with ${RESERVED_PREFIX}` })
      else variables[name] = value
    }
    return { variables, leftOut }
  }

  async start(attempt: OutboundAttempt): Promise<StartResult> {
    const config = readElevenLabsConfig(attempt.config)
    const apiKey = this.#credential(config.apiKeyEnv)
    if (apiKey === undefined) return { kind: 'refused', permanent: true, reason: `no ElevenLabs API key: environment variable ${config.apiKeyEnv} is not set` }
    const { variables, leftOut } = this.variables(attempt)
    const body = {
      agent_id: config.agentId,
      agent_phone_number_id: config.agentPhoneNumberId,
      to_number: attempt.to,
      conversation_initiation_client_data: { dynamic_variables: variables },
      // Sent explicitly, so that the settle time below holds whatever the number's defaults are.
      telephony_call_config: { ringing_timeout_secs: config.ringTimeoutS },
    }
    const path = config.telephony === 'twilio' ? '/v1/convai/twilio/outbound-call' : '/v1/convai/sip-trunk/outbound-call'
    const answer = await this.#request('POST', path, apiKey, body)
    if (answer.status >= 200 && answer.status < 300) {
      const conversationId = field(answer.body, 'conversation_id')
      if (field(answer.body, 'success') === false) {
        return { kind: 'refused', permanent: false, reason: `ElevenLabs did not place the call (HTTP ${answer.status})${said(answer.body, attempt.to)}` }
      }
      // ElevenLabs has taken the call but we cannot name it: its outcome is unknown, not refused.
      if (typeof conversationId !== 'string' || conversationId === '') throw new Error(`ElevenLabs answered HTTP ${answer.status} to an outbound call without a conversation_id`)
      return { kind: 'started', providerRef: conversationId, leftOut }
    }
    if (answer.status === 429 || answer.status >= 500) {
      return {
        kind: 'deferred',
        retryAfterMs: retryAfterMs(answer.retryAfter, this.#now()),
        reason: `ElevenLabs cannot take the call now (HTTP ${answer.status})${said(answer.body, attempt.to)}`,
      }
    }
    return { kind: 'refused', permanent: true, reason: `ElevenLabs refused the call (HTTP ${answer.status})${said(answer.body, attempt.to)}` }
  }

  /** ElevenLabs documents a limit of conversations at once per plan, not a rate: its campaign's max_concurrent is the pace. */
  senderPace(): undefined {
    return undefined
  }

  settleAfterMs(config: JsonObject): number {
    return readElevenLabsConfig(config).ringTimeoutS * 1000 + MAX_CALL_MS + SETTLE_MARGIN_MS
  }

  /**
   * Asks ElevenLabs how the conversation ended, with its transcript and
   * analysis. One not over yet (or whose analysis is pending), or a question
   * ElevenLabs cannot answer now (429, 5xx, no answer), throws: it is asked
   * again later. A conversation ElevenLabs does not know, or an attempt whose
   * start is uncertain, is a failed attempt: never redialled blindly.
   */
  async settle(progress: InteractionProgress): Promise<SettledInteraction> {
    const conversationId = progress.providerRef
    if (conversationId === null) return { outcome: 'failed' }
    const config = readElevenLabsConfig(progress.config)
    const apiKey = this.#credential(config.apiKeyEnv)
    if (apiKey === undefined) return { outcome: 'failed' }
    const answer = await this.#request('GET', `/v1/convai/conversations/${encodeURIComponent(conversationId)}`, apiKey)
    if (answer.status >= 500 || answer.status === 429) throw new Error(`ElevenLabs answered HTTP ${answer.status} when asked about a conversation`)
    if (answer.status !== 200 || !isObject(answer.body)) return { outcome: 'failed' }
    const end = conversationEnd(answer.body, config)
    if (end === undefined) throw new Error(`the ElevenLabs conversation is not over yet (status ${String(answer.body.status)})`)
    return end
  }

  #credential(name: string): string | undefined {
    const value = this.#secret(name)
    return value === '' ? undefined : value
  }

  /** One request to the API, with the key (see providerHttp.ts). */
  #request(method: 'GET' | 'POST', path: string, apiKey: string, body?: object): Promise<ProviderAnswer> {
    return requestProvider(this.#apiBaseUrl + path, { method, headers: { 'xi-api-key': apiKey }, body, timeoutMs: this.#timeoutMs, label: `ElevenLabs ${method} ${path.split('/').slice(0, 4).join('/')}` })
  }
}

/**
 * What an answer says of itself, for a reason: ElevenLabs' `detail.status`
 * and `detail.message` (its errors), the first validation problem's location
 * and message (a 422's FastAPI `detail` list), or `message` (a 200 that placed
 * nothing); the number called replaced, never an input echoed.
 */
function said(body: unknown, to: string): string {
  const detail = field(body, 'detail')
  let text: string | undefined
  if (isObject(detail)) text = [detail.status, detail.message].filter((part) => typeof part === 'string' && part !== '').join(': ')
  else if (Array.isArray(detail) && isObject(detail[0])) {
    const loc = Array.isArray(detail[0].loc) ? detail[0].loc.join('.') : undefined
    text = [loc, detail[0].msg].filter((part) => typeof part === 'string' && part !== '').join(': ')
  } else if (typeof detail === 'string') text = detail
  else if (typeof field(body, 'message') === 'string') text = field(body, 'message') as string
  if (text === undefined || text === '') return ''
  return `: ${text.replaceAll(to, '[To]').slice(0, MAX_REASON_MESSAGE)}`
}


function field(body: unknown, name: string): unknown {
  return isObject(body) ? body[name] : undefined
}
