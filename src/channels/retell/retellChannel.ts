/**
 * Voice calls through Retell AI's agents (API reference, OpenAPI "Retell
 * SDK" 3.0.0; retell-sdk TypeScript v5.60.0):
 * - "Create Phone Call", POST /v2/create-phone-call with Bearer auth
 *   (https://docs.retellai.com/api-references/create-phone-call), starts one:
 *   `from_number`, `to_number`, the campaign's agent as
 *   `override_agent_id`/`override_agent_version`, the attempt's variables as
 *   `retell_llm_dynamic_variables` (strings only: agentVariables'
 *   stringsOnly), and `metadata` naming the interaction (it comes back on
 *   every webhook and GET, so a call whose creation answer was lost is still
 *   recognized, and it lists the variables left out, by name and reason);
 * - "Get Call", GET /v2/get-call/{call_id}
 *   (https://docs.retellai.com/api-references/get-call), settles a call
 *   whose webhooks never came, with its transcript and analysis;
 * - webhooks (https://docs.retellai.com/features/webhook-overview):
 *   `call_started` is progress; `call_ended` is the end (its outcome and
 *   duration); `call_analyzed`, which follows it with the whole call object
 *   and `call_analysis`, is the result: transcript, recording, summary,
 *   custom data. The end is reported without a result, so that a campaign's
 *   results.wait_s makes the ended call wait for the analysis (a final report
 *   that carried the transcript alone would end the wait at once); with no
 *   wait, the call is reported at its end and the analysis, come later,
 *   changes nothing. A `call_analyzed` that comes for a call whose
 *   `call_ended` never did is its end and its result at once.
 * Errors are `{"status": "error", "message"}` with 400, 401, 402, 422, 429
 * or 500 (docs/providers/voice-platforms.md, section 1).
 */
import { createHash } from 'node:crypto'
import type { Channel, InteractionProgress, OutboundAttempt, ProviderReport, SettledInteraction, StartResult } from '../channel.ts'
import { agentVariables } from '../../domain/agentVariables.ts'
import type { JsonObject } from '../../domain/types.ts'
import type { CallCallback, ClaimedInteraction, SignedRequest } from '../callbacks.ts'
import { type ProviderAnswer, requestProvider } from '../providerHttp.ts'
import { retryAfterMs } from '../retryAfter.ts'
import {
  callDurationS,
  callEndedAt,
  callOutcome,
  callResult,
  callStartedAt,
  endedForGood,
  interactionIdOf,
  type RetellCall,
  type RetellWebhook,
  readRetellInbound,
  readRetellWebhook,
  verifyRetellSignature,
} from './calls.ts'
import { readRetellConfig, type RetellConfig, RetellConfigSchema } from './config.ts'

export { verifyRetellSignature } from './calls.ts'

export interface RetellChannelOptions {
  /** Default https://api.retellai.com; tests point it at a fake. */
  apiBaseUrl?: string
  /** Reads a credential from the environment by name. */
  secret: (envName: string) => string | undefined
  /** Per request to Retell; default 10 s. */
  timeoutMs?: number
  /** The clock a Retry-After date is read against; default Date.now. */
  now?: () => number
}

/**
 * Retell ends a call at its agent's max_call_duration_ms, at most 2 hours
 * (1 hour by default: https://docs.retellai.com/deploy/concurrency), and lets
 * the phone ring for at most its ring duration (90 s at most).
 */
const MAX_CALL_MS = 2 * 60 * 60 * 1000 + 90 * 1000
/** Time for the post-call analysis and Retell's last webhook retries (three, 10 s apart at most) to arrive. */
const SETTLE_MARGIN_MS = 15 * 60 * 1000
/** Retell's messages are short; anything longer is not one of them and stays out of the reason. */
const MAX_REASON_MESSAGE = 300

export class RetellChannel implements Channel {
  readonly provider = 'retell'
  readonly channel = 'voice'
  readonly configSchema = RetellConfigSchema
  readonly #apiBaseUrl: string
  readonly #secret: (envName: string) => string | undefined
  readonly #timeoutMs: number
  readonly #now: () => number

  constructor(options: RetellChannelOptions) {
    this.#apiBaseUrl = (options.apiBaseUrl ?? 'https://api.retellai.com').replace(/\/+$/, '')
    this.#secret = options.secret
    this.#timeoutMs = options.timeoutMs ?? 10_000
    this.#now = options.now ?? Date.now
  }

  /**
   * Its webhook: POST /providers/retell/webhook, the URL set as the agent's
   * webhook (or the account's), receives `{"event", "call"}` for every call
   * of the agent, signed in `x-retell-signature` with the campaign's API key
   * over the raw body. One about no call of the service, or not verified, is
   * refused with 403 and changes nothing. Retell retries a webhook not
   * answered 2xx within 10 s, up to three times, and may deliver one twice:
   * every report applies idempotently, and the answer, 204, comes as soon as
   * the report is recorded. Bodies are bounded by the service's body limit
   * (1 MiB: an hour's transcript, with its words' timings, is about half that).
   */
  readonly webhook: CallCallback<RetellWebhook> = {
    provider: 'retell',
    route: {
      path: '/providers/retell/webhook',
      summary: 'Retell call webhook',
      // As the service's own body limit (http/limits.ts MAX_BODY_BYTES).
      bodyLimit: 1024 * 1024,
      answer: 204,
      ignoresUnknown: false,
      refusal: 'The request is not a verified Retell webhook for a call of this service.',
    },
    parse: (request) => readRetellWebhook(request.json),
    claim: (webhook) => ({ ref: webhook.call.call_id, interactionId: interactionIdOf(webhook.call) }),
    verify: (_, request, config, now) => this.#signed(request, config, now),
    report: (webhook, interaction, now) => this.#reportFor(webhook, interaction, now),
    // A call to a campaign's number, whose inbound webhook URL is the service's: Retell asks which agent takes it and
    // with what variables, waits 10 s, and repeats up to 3 times. The call has no id yet: its first webhook names the
    // interaction by the metadata answered here.
    inbound: {
      route: {
        path: '/providers/retell/inbound',
        summary: 'Retell inbound call webhook',
        bodyLimit: 64 * 1024,
        refusal: "The request is not a verified Retell inbound webhook for a campaign's number.",
      },
      ask: (request) => {
        const inbound = readRetellInbound(request.json)
        if (inbound === undefined) return undefined
        return { call: { repeatKey: createHash('sha256').update(request.raw).digest('base64url') }, from: inbound.from, number: { field: 'from_number', value: inbound.to } }
      },
      verify: (request, config, now) => this.#signed(request, config, now),
      settleAfterMs: () => this.settleAfterMs(),
      answer: (handoff, config) => {
        const settings = readRetellConfig(config)
        const { variables, leftOut } = agentVariables({ ...handoff, attempt: null, direction: 'inbound' }, { stringsOnly: true })
        const body = {
          call_inbound: {
            ...agentOverride(settings),
            dynamic_variables: variables,
            metadata: { interaction_id: handoff.interactionId, task_id: handoff.taskId, direction: 'inbound' },
          },
        }
        return { body, leftOut }
      },
    },
  }

  /** Whether a request is signed with the campaign's API key, as Retell signs its webhooks. */
  #signed(request: SignedRequest, config: JsonObject, now: number): boolean {
    const apiKey = this.#apiKey(config)
    return apiKey !== undefined && verifyRetellSignature(apiKey, request.raw, request.header('x-retell-signature'), now)
  }

  /** The API key of a campaign: what its calls are created with and its webhooks signed with. Undefined when unset or empty. */
  #apiKey(config: JsonObject): string | undefined {
    const key = this.#secret(readRetellConfig(config).apiKeyEnv)
    return key === '' ? undefined : key
  }

  async start(attempt: OutboundAttempt): Promise<StartResult> {
    const config = readRetellConfig(attempt.config)
    const apiKey = this.#apiKey(attempt.config)
    if (apiKey === undefined) return { kind: 'refused', permanent: true, reason: `no Retell API key: environment variable ${config.apiKeyEnv} is not set` }
    // Retell publishes no bound on the variables; it takes strings only.
    const { variables, leftOut } = agentVariables(attempt, { stringsOnly: true })
    const body: JsonObject = {
      from_number: config.fromNumber,
      to_number: attempt.to,
      ...agentOverride(config),
      retell_llm_dynamic_variables: variables,
      metadata: { interaction_id: attempt.interactionId, task_id: attempt.taskId, attempt: attempt.attempt },
    }
    const answer = await this.#request('POST', '/v2/create-phone-call', apiKey, body)
    if (answer.status >= 200 && answer.status < 300) {
      const callId = field(answer.body, 'call_id')
      // Retell has taken the call but we cannot name it: its outcome is unknown, not refused.
      if (typeof callId !== 'string' || callId === '') throw new Error(`Retell answered HTTP ${answer.status} to Create Phone Call without a call_id`)
      return { kind: 'started', providerRef: callId, leftOut }
    }
    return refusal(answer, attempt.to, this.#now())
  }

  /** Long enough for any call to be over and analysed: its longest ring and duration, and the analysis' and webhooks' time. */
  /** Retell documents a limit of calls at once, not a rate: its campaign's max_concurrent is the pace. */
  senderPace(): undefined {
    return undefined
  }

  settleAfterMs(): number {
    return MAX_CALL_MS + SETTLE_MARGIN_MS
  }

  /**
   * Asks Retell how the call ended, with its transcript and analysis as the
   * result. A call still running past its longest duration has gone wrong,
   * and one whose creation is uncertain (no call id) is not redialled
   * blindly: both are failed attempts.
   */
  async settle(progress: InteractionProgress): Promise<SettledInteraction> {
    const callId = progress.providerRef
    const apiKey = this.#apiKey(progress.config)
    if (callId === null || apiKey === undefined) return { outcome: 'failed' }
    const answer = await this.#request('GET', `/v2/get-call/${encodeURIComponent(callId)}`, apiKey)
    // A 5xx or a 429 says nothing of the call: throw, and it is asked again later.
    if (answer.status >= 500 || answer.status === 429) throw new Error(`Retell answered HTTP ${answer.status} when asked about a call`)
    if (answer.status !== 200 || field(answer.body, 'call_id') !== callId) return { outcome: 'failed' }
    const call = answer.body as RetellCall
    const outcome = callOutcome(call)
    if (outcome === undefined) return { outcome: 'failed' }
    const result = callResult(call, readRetellConfig(progress.config))
    const durationS = callDurationS(call)
    return { outcome, ...(result === undefined ? {} : { result }), ...(durationS === undefined ? {} : { durationS }), ...(endedForGood(call) ? { permanent: true } : {}) }
  }

  /**
   * The report a verified webhook makes about an interaction in `status`, or
   * undefined for an event that says nothing the service keeps
   * (transcript_updated, transfers...); `now` stands for a time Retell leaves
   * out. See the header for which event is the end and which the result.
   */
  #reportFor(webhook: RetellWebhook, interaction: ClaimedInteraction, now: number): ProviderReport | undefined {
    const { event, call } = webhook
    const providerRef = call.call_id
    if (event === 'call_started') {
      // Progress says nothing new of a call already over.
      const live = interaction.status === 'starting' || interaction.status === 'active'
      return live ? { kind: 'progress', providerRef, status: 'ongoing', at: callStartedAt(call) ?? now } : undefined
    }
    if (event !== 'call_ended' && event !== 'call_analyzed') return undefined
    const outcome = callOutcome(call)
    const at = callEndedAt(call) ?? now
    const durationS = callDurationS(call)
    const result = event === 'call_analyzed' ? callResult(call, readRetellConfig(interaction.providerConfig)) : undefined
    if (event === 'call_analyzed' && interaction.status === 'ended') return result === undefined ? undefined : { kind: 'result', providerRef, result, at }
    if (outcome === undefined) return undefined
    return {
      kind: 'final',
      providerRef,
      outcome,
      at,
      ...(durationS === undefined ? {} : { durationS }),
      ...(result === undefined ? {} : { result }),
      ...(endedForGood(call) ? { permanent: true } : {}),
    }
  }

  /** One request to the API, with the key (see providerHttp.ts). */
  #request(method: 'GET' | 'POST', path: string, apiKey: string, body?: JsonObject): Promise<ProviderAnswer> {
    return requestProvider(this.#apiBaseUrl + path, { method, headers: { authorization: `Bearer ${apiKey}` }, body, timeoutMs: this.#timeoutMs, label: `Retell ${method} ${path}` })
  }
}

/**
 * A start Retell answered with an error. Its throttling (429 "Account rate
 * limited") and its server errors (500 "An unexpected server error
 * occurred", and a gateway's 502 to 504) defer the start, at its Retry-After
 * if it sends one, spending no attempt: an error answer carries no call, so
 * the call is taken as not created. Retell does not document that a 5xx
 * never follows a registered call; should one have been, its webhooks name an
 * interaction that was withdrawn, and are refused. Every other refusal (400 a malformed request or a number
 * it will not dial, 401 the key, 402 billing, 404 an agent or number not
 * found, 422 an asset not under the key) meets the same request again: for
 * good.
 */
function refusal(answer: ProviderAnswer, to: string, now: number): StartResult {
  const rawMessage = field(answer.body, 'message')
  // A message may quote the number called: keep contact data out of reasons.
  const message = typeof rawMessage === 'string' ? rawMessage.replaceAll(to, '[to_number]').slice(0, MAX_REASON_MESSAGE) : undefined
  const said = message === undefined ? '' : `: ${message}`
  if (answer.status === 429 || answer.status >= 500) {
    return { kind: 'deferred', retryAfterMs: retryAfterMs(answer.retryAfter, now), reason: `Retell turned the call away for now (HTTP ${answer.status})${said}` }
  }
  return { kind: 'refused', permanent: true, reason: `Retell refused the call (HTTP ${answer.status})${said}` }
}


function field(body: unknown, name: string): unknown {
  return typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>)[name] : undefined
}

/** The campaign's agent (and version), where it names one rather than the number's own, as Create Phone Call and the inbound webhook's answer both take it. */
function agentOverride(config: RetellConfig): { override_agent_id?: string; override_agent_version?: number } {
  return {
    ...(config.agentId === undefined ? {} : { override_agent_id: config.agentId }),
    ...(config.agentVersion === undefined ? {} : { override_agent_version: config.agentVersion }),
  }
}
