/**
 * Texts (SMS, and MMS for what people send) through Twilio's Programmable
 * Messaging REST API (2010-04-01): "Create a Message" (POST
 * /Accounts/{AccountSid}/Messages.json, form-encoded, HTTP basic auth) sends
 * an attempt's text, with a StatusCallback that names the interaction, and
 * "Fetch a Message" (GET /Accounts/{AccountSid}/Messages/{Sid}.json) settles
 * one whose last status never came. The person's replies come to the
 * number's messaging webhook (services/twilioMessages.ts).
 */
import type { ProviderAnswer } from '../providerHttp.ts'
import type { Channel, InteractionOutcome, InteractionProgress, OutboundAttempt, SettledInteraction, StartResult } from '../channel.ts'
import type { SenderPace } from '../../domain/pacing.ts'
import { chooseMessageText, fillPlaceholders } from '../../domain/messageText.ts'
import type { JsonObject } from '../../domain/types.ts'
import type { SessionMessageContent } from '../sessionMessages.ts'
import { retryAfterMs } from '../retryAfter.ts'
import { MAX_SMS_CHARACTERS, readTwilioMessagingConfig, TwilioMessagingConfigSchema, type TwilioMessagingConfig } from './messagingConfig.ts'
import { errorCodeOf, inboundMessageUrl, isMessageSid, messageEnd, messageStatusUrl, sessionMessageStatusUrl, UNSUBSCRIBED_CODE } from './messagingWebhooks.ts'
import { accountPath, field, isThrottled, twilioRefusal, twilioRequest, type TwilioRest } from './rest.ts'

export interface TwilioMessagingChannelOptions {
  /** Default https://api.twilio.com; tests point it at a fake. */
  apiBaseUrl?: string
  /** This service's public URL, which Twilio calls back. */
  publicBaseUrl: string
  secret: (envName: string) => string | undefined
  /** Per request to Twilio; default 10 s. */
  timeoutMs?: number
  now?: () => number
}

/**
 * A US or Canadian long code sends one segment a second (Twilio's "Understanding
 * Twilio Rate Limits and Message Queues"); Twilio queues what comes faster
 * for up to four hours, so a text paced faster would leave later than its
 * window allows. A Messaging Service's rate is its numbers' together: the
 * campaign's `pacing` says it.
 */
const LONG_CODE_MPS = 1
/** 21611: the sender's queue is full (Twilio's own throttling by another name). */
const QUEUE_FULL_CODE = 21611

export class TwilioMessagingChannel implements Channel {
  readonly provider = 'twilio'
  readonly channel = 'sms'
  readonly configSchema = TwilioMessagingConfigSchema
  readonly #rest: TwilioRest
  readonly #publicBaseUrl: string
  readonly #secret: (envName: string) => string | undefined
  readonly #now: () => number

  constructor(options: TwilioMessagingChannelOptions) {
    this.#rest = { apiBaseUrl: (options.apiBaseUrl ?? 'https://api.twilio.com').replace(/\/+$/, ''), timeoutMs: options.timeoutMs ?? 10_000 }
    this.#publicBaseUrl = options.publicBaseUrl
    this.#secret = options.secret
    this.#now = options.now ?? Date.now
  }

  /** The auth token of a campaign's account: what Twilio's requests about its texts are signed with. Undefined when unset or empty. */
  authTokenFor(config: JsonObject): string | undefined {
    const token = this.#secret(readTwilioMessagingConfig(config).authTokenEnv)
    return token === '' ? undefined : token
  }

  /** The StatusCallback URL an interaction's text is sent with. */
  statusCallbackUrl(interactionId: string): string {
    return messageStatusUrl(this.#publicBaseUrl, interactionId)
  }

  /** Where a campaign's number sends the texts people write to it. */
  inboundUrl(): string {
    return inboundMessageUrl(this.#publicBaseUrl)
  }

  async start(attempt: OutboundAttempt): Promise<StartResult> {
    const config = readTwilioMessagingConfig(attempt.config)
    const chosen = chooseMessageText(config.text, attempt.language)
    const body = fillPlaceholders(chosen.text, { firstName: attempt.firstName, lastName: attempt.lastName, language: attempt.language, context: attempt.context }).trim()
    if (body === '') return { kind: 'refused', permanent: true, reason: "the campaign's text is empty once this task's values are filled in" }
    if ([...body].length > MAX_SMS_CHARACTERS) {
      return { kind: 'refused', permanent: true, reason: `the campaign's text is longer than Twilio's ${MAX_SMS_CHARACTERS} characters once this task's values are filled in` }
    }
    return this.#send(config, attempt.config, attempt.to, body, this.statusCallbackUrl(attempt.interactionId))
  }

  /**
   * A text in the conversation (docs/messaging.md), within the window the
   * person's latest text opened (services/sessionMessages.ts). Text only: buttons
   * and lists are WhatsApp's (services/sessionMessages.ts refuses them).
   * Its statuses come to one URL for every such text, by its SID.
   */
  async sendSessionMessage(config: JsonObject, to: string, content: SessionMessageContent): Promise<StartResult> {
    if (content.text === undefined) return { kind: 'refused', permanent: true, reason: 'an SMS carries text only' }
    return this.#send(readTwilioMessagingConfig(config), config, to, content.text, this.sessionStatusUrl())
  }

  /** The StatusCallback URL of the texts sent in conversations. */
  sessionStatusUrl(): string {
    return sessionMessageStatusUrl(this.#publicBaseUrl)
  }

  async #send(config: TwilioMessagingConfig, stored: JsonObject, to: string, body: string, statusCallback: string): Promise<StartResult> {
    const token = this.authTokenFor(stored)
    if (token === undefined) return { kind: 'refused', permanent: true, reason: `no Twilio auth token: environment variable ${config.authTokenEnv} is not set` }
    const form = new URLSearchParams({ To: to, Body: body })
    if (config.messagingServiceSid !== undefined) form.set('MessagingServiceSid', config.messagingServiceSid)
    else form.set('From', config.from!)
    form.set('StatusCallback', statusCallback)
    const answer = await twilioRequest(this.#rest, 'POST', `${accountPath(config.accountSid)}/Messages.json`, config.accountSid, token, form)
    if (answer.status >= 200 && answer.status < 300) {
      const sid = field(answer.body, 'sid')
      if (typeof sid !== 'string' || !isMessageSid(sid)) throw new Error(`Twilio answered HTTP ${answer.status} to Create Message without a message SID`)
      return { kind: 'started', providerRef: sid }
    }
    if (answer.status >= 400 && answer.status < 500) return refusal(answer, to, this.#now())
    throw new Error(`Twilio answered HTTP ${answer.status} to Create Message; the text may or may not have been sent`)
  }

  senderPace(config: JsonObject): SenderPace | undefined {
    const settings = readTwilioMessagingConfig(config)
    return settings.from === undefined ? undefined : { sender: `twilio_sms:${settings.from}`, perSecond: LONG_CODE_MPS }
  }

  settleAfterMs(config: JsonObject): number {
    return readTwilioMessagingConfig(config).replyWindowS * 1000
  }

  /**
   * The reply window ended without a reply (a failure has finalized it
   * already): Twilio is asked how far the text got, its last status kept
   * when it cannot tell (the account's token gone, the message deleted).
   */
  async settle(progress: InteractionProgress): Promise<SettledInteraction> {
    const sid = progress.providerRef
    if (sid === null || !isMessageSid(sid)) return { outcome: 'failed' }
    const config = readTwilioMessagingConfig(progress.config)
    const token = this.authTokenFor(progress.config)
    if (token === undefined) return { outcome: outcomeOfStatus(progress.providerStatus) }
    const answer = await twilioRequest(this.#rest, 'GET', `${accountPath(config.accountSid)}/Messages/${sid}.json`, config.accountSid, token)
    if (answer.status >= 500 || answer.status === 429) throw new Error(`Twilio answered HTTP ${answer.status} when asked about a text`)
    const status = field(answer.body, 'status')
    if (answer.status !== 200 || typeof status !== 'string') return { outcome: outcomeOfStatus(progress.providerStatus) }
    const end = messageEnd(status, errorCodeOf(field(answer.body, 'error_code') as string | number | null | undefined))
    return end === undefined ? { outcome: outcomeOfStatus(status) } : { outcome: end.outcome, permanent: end.permanent || undefined, optedOut: end.optedOut || undefined }
  }
}

/** How far a text got by its last status on the way: delivered, sent (no receipt), or never left Twilio's queue. */
function outcomeOfStatus(status: string | null): InteractionOutcome {
  switch (status) {
    case 'delivered':
    case 'partially_delivered':
    case 'read':
      return 'delivered'
    case 'sent':
      return 'sent'
    default:
      return 'undelivered'
  }
}

/**
 * Twilio refuses with 4xx only when it did not take the text. Its throttling
 * (HTTP 429, 20429, a full queue: 21611) defers the start; 21610 says the
 * person has opted out of the sender's texts (the number is suppressed);
 * every other refusal is about the number, the sender or the account, which
 * the same request meets again.
 */
function refusal(answer: ProviderAnswer, to: string, now: number): StartResult {
  const { code, what, said } = twilioRefusal(answer, to)
  if (isThrottled(answer, code) || code === QUEUE_FULL_CODE) {
    return { kind: 'deferred', retryAfterMs: retryAfterMs(answer.retryAfter, now), reason: `Twilio is throttling texts (${what})${said}` }
  }
  return { kind: 'refused', permanent: true, reason: `Twilio refused the text (${what})${said}`, optedOut: code === UNSUBSCRIBED_CODE || undefined }
}
