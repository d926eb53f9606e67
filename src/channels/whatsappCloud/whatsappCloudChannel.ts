/**
 * WhatsApp through Meta's Cloud API. An attempt is one template message, sent
 * with POST /{version}/{phone-number-id}/messages and a system user's access
 * token; the answer's `messages[0].id` (a wamid) names it in the status
 * webhooks (sent, delivered, read, failed) and in the `context` of a reply.
 * The Cloud API has no endpoint to look a message's status up, so an
 * interaction without a final report is settled from the last status it had.
 */
import { type ProviderAnswer, ProviderUnanswered, requestProvider } from '../providerHttp.ts'
import type { SenderPace } from '../../domain/pacing.ts'
import type { JsonObject } from '../../domain/types.ts'
import type { Channel, InteractionOutcome, InteractionProgress, OutboundAttempt, SettledInteraction, StartResult } from '../channel.ts'
import { isObject, readWhatsAppCloudConfig, type WhatsAppCloudConfig, WhatsAppCloudConfigSchema } from './config.ts'
import type { SessionMessageContent } from '../sessionMessages.ts'
import { sessionMessagePayload } from './sessionMessages.ts'
import { retryAfterMs } from '../retryAfter.ts'
import { describeGraphError, graphErrorOf, isPermanent, isThrottling, NOT_ON_WHATSAPP_CODE, WINDOW_CLOSED_CODE } from './graphErrors.ts'

export { DEFAULT_ACCESS_TOKEN_ENV, DEFAULT_APP_SECRET_ENV, readWhatsAppCloudConfig, type WhatsAppCloudConfig } from './config.ts'
export { notificationsFromWebhook, verifyWebhookSubscription, verifyWhatsAppSignature, type WhatsAppNotification } from './webhook.ts'

export interface WhatsAppCloudChannelOptions {
  /** Default https://graph.facebook.com; a fake's address in tests. */
  apiBaseUrl?: string
  /** Graph API version, default v21.0. */
  apiVersion?: string
  /** Reads a credential from the environment by the variable name the config gives. */
  secret: (envName: string) => string | undefined
  /** For the whole request, answer included; default 15 s. */
  timeoutMs?: number
  /** The clock a Retry-After date is read against; default Date.now. */
  now?: () => number
}

export class WhatsAppCloudChannel implements Channel {
  readonly provider = 'whatsapp_cloud'
  readonly channel = 'whatsapp'
  readonly configSchema = WhatsAppCloudConfigSchema
  readonly #apiBaseUrl: string
  readonly #apiVersion: string
  readonly #secret: (envName: string) => string | undefined
  readonly #timeoutMs: number
  readonly #now: () => number

  constructor(options: WhatsAppCloudChannelOptions) {
    this.#apiBaseUrl = (options.apiBaseUrl ?? 'https://graph.facebook.com').replace(/\/+$/, '')
    this.#apiVersion = options.apiVersion ?? 'v21.0'
    this.#secret = options.secret
    this.#timeoutMs = options.timeoutMs ?? 15_000
    this.#now = options.now ?? Date.now
  }

  async start(attempt: OutboundAttempt): Promise<StartResult> {
    const config = readWhatsAppCloudConfig(attempt.config)
    const token = this.#secret(config.accessTokenEnv)
    if (token === undefined || token === '') {
      return refused(true, `the WhatsApp Cloud API access token is not configured: environment variable ${config.accessTokenEnv} is not set`)
    }
    const parameters: { type: 'text'; text: string }[] = []
    for (const [index, key] of config.bodyParameters.entries()) {
      const text = Object.hasOwn(attempt.context, key) ? parameterText(attempt.context[key]) : undefined
      if (text === undefined) {
        return refused(true, `template parameter {{${index + 1}}} is filled from the context key "${key}", which this task's context lacks or leaves empty`)
      }
      parameters.push({ type: 'text', text })
    }
    const template: JsonObject = {
      name: config.templateName,
      language: { code: config.templateLanguage ?? templateLanguageOf(attempt.language) },
    }
    if (parameters.length > 0) template.components = [{ type: 'body', parameters }]
    return this.#send(config, token, { messaging_product: 'whatsapp', recipient_type: 'individual', to: attempt.to.replace(/^\+/, ''), type: 'template', template })
  }

  /**
   * A message within the window the person's latest message opened
   * (docs/messaging.md), answered as a start is: `started` with its wamid,
   * `refused` or `deferred` when WhatsApp certainly did not send it; throws
   * when that is unknown.
   */
  async sendSessionMessage(config: JsonObject, to: string, content: SessionMessageContent): Promise<StartResult> {
    const read = readWhatsAppCloudConfig(config)
    const token = this.#secret(read.accessTokenEnv)
    if (token === undefined || token === '') {
      return refused(true, `the WhatsApp Cloud API access token is not configured: environment variable ${read.accessTokenEnv} is not set`)
    }
    return this.#send(read, token, sessionMessagePayload(to, content))
  }

  /** POSTs one message from the campaign's number, and reads Meta's answer. */
  async #send(config: WhatsAppCloudConfig, token: string, message: Record<string, unknown>): Promise<StartResult> {
    const redact = (text: string) => text.replaceAll(token, '[redacted]')
    const path = `/${this.#apiVersion}/${config.phoneNumberId}/messages`
    let answer: ProviderAnswer
    try {
      answer = await requestProvider(`${this.#apiBaseUrl}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}` },
        body: message,
        timeoutMs: this.#timeoutMs,
        label: `WhatsApp Cloud API POST ${path}`,
      })
    } catch (error) {
      throw new Error(redact(`WhatsApp Cloud API POST ${path} got no answer, so whether the message was sent is unknown: ${causeOf(error)}`), { cause: error })
    }
    const { status, body, retryAfter } = answer
    const graphError = graphErrorOf(body)
    if (status >= 500) {
      // Meta's own 5xx (code 1, 2, 131000, 131016) may come after the message went out.
      const said = graphError === undefined ? '' : `: ${describeGraphError(status, graphError)}`
      throw new Error(redact(`WhatsApp Cloud API POST ${path} answered HTTP ${status}, so whether the message was sent is unknown${said}`))
    }
    if (status >= 200 && status < 300) {
      const wamid = isObject(body) && Array.isArray(body.messages) && isObject(body.messages[0]) ? body.messages[0].id : undefined
      if (typeof wamid === 'string' && wamid !== '') return { kind: 'started', providerRef: wamid }
      throw new Error(`WhatsApp Cloud API POST ${path} answered HTTP ${status} without a message id, so whether the message was sent is unknown`)
    }
    if (graphError !== undefined && isThrottling(graphError)) {
      return { kind: 'deferred', retryAfterMs: retryAfterMs(retryAfter, this.#now()), reason: redact(describeGraphError(status, graphError)) }
    }
    if (graphError !== undefined) {
      const reason = redact(describeGraphError(status, graphError))
      if (graphError.code === NOT_ON_WHATSAPP_CODE) return { kind: 'refused', permanent: true, reason, notOnChannel: true }
      if (graphError.code === WINDOW_CLOSED_CODE) return { kind: 'refused', permanent: true, reason, windowClosed: true }
      return refused(isPermanent(graphError), reason)
    }
    // A 4xx from something in front of the Graph API (a proxy, a gateway): the request went no further.
    return refused(false, `WhatsApp Cloud API POST ${path} answered HTTP ${status} without a Graph API error`)
  }

  /**
   * Cloud API's throughput is 80 messages a second per business phone number
   * by default (Meta's "Throughput" page), past which it refuses with 130429.
   */
  senderPace(config: JsonObject): SenderPace {
    return { sender: `whatsapp_cloud:${readWhatsAppCloudConfig(config).phoneNumberId}`, perSecond: WHATSAPP_DEFAULT_MPS }
  }

  settleAfterMs(config: JsonObject): number {
    return readWhatsAppCloudConfig(config).replyWindowS * 1000
  }

  /**
   * The reply window ended without a reply: the furthest the message got is
   * the outcome. (A failed status has finalized it already.)
   */
  async settle(progress: InteractionProgress): Promise<SettledInteraction> {
    return { outcome: outcomeOf(progress) }
  }
}

function outcomeOf(progress: InteractionProgress): InteractionOutcome {
  if (progress.providerRef === null) return 'failed'
  switch (progress.providerStatus) {
    case 'read':
      return 'read'
    case 'delivered':
      return 'delivered'
    default:
      return 'undelivered'
  }
}

function refused(permanent: boolean, reason: string): StartResult {
  return { kind: 'refused', permanent, reason }
}

/**
 * A context value as template text. Meta refuses an empty parameter (131008)
 * and one with newlines, tabs or more than four spaces in a row (132018), so
 * multi-line values are flattened rather than failing the task.
 */
function parameterText(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined
  const text = typeof value === 'string' ? value : typeof value === 'number' || typeof value === 'boolean' ? String(value) : JSON.stringify(value)
  const flat = text.replace(/[ ]*[\r\n\t]+[ \r\n\t]*/g, ' ').replace(/ {5,}/g, '    ')
  return flat.trim() === '' ? undefined : flat
}

/**
 * The languages Meta approves templates in by region; every other language
 * is approved under its bare code (`de`, `fr`, `ja`).
 */
/** A number's default throughput; an upgraded one (1,000) or a Business app one (20): the campaign's `pacing` says so. */
const WHATSAPP_DEFAULT_MPS = 80

const REGIONAL_TEMPLATE_LANGUAGES = new Set(['en_GB', 'en_US', 'es_AR', 'es_ES', 'es_MX', 'pt_BR', 'pt_PT', 'zh_CN', 'zh_HK', 'zh_TW'])

/** Meta's template language code for a contact's BCP 47 tag (`en-US` → `en_US`, `de-AT` → `de`), `en` without one. */
export function templateLanguageOf(contactLanguage: string | undefined): string {
  if (contactLanguage === undefined) return 'en'
  const subtags = contactLanguage.split('-')
  const language = (subtags[0] ?? '').toLowerCase()
  const region = subtags.slice(1).find((subtag) => /^[A-Za-z]{2}$/.test(subtag))?.toUpperCase()
  const regional = `${language}_${region}`
  if (region !== undefined && REGIONAL_TEMPLATE_LANGUAGES.has(regional)) return regional
  return language === '' ? 'en' : language
}


/** Why requestProvider got no answer, with its cause's message (a refused connection's code). */
function causeOf(error: unknown): string {
  if (!(error instanceof ProviderUnanswered)) return String(error)
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : ''
  return `${error.why}${cause}`
}
