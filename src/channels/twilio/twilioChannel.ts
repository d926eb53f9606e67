/**
 * Voice calls through Twilio's Programmable Voice REST API (2010-04-01):
 * "Create a Call" (POST /Accounts/{AccountSid}/Calls.json, form-encoded, HTTP
 * basic auth) starts one, with status callbacks for its progress events, and
 * "Fetch a Call" (GET /Accounts/{AccountSid}/Calls/{Sid}.json) settles one
 * whose final callback never came, and "Update a Call in progress" (POST
 * /Accounts/{AccountSid}/Calls/{Sid}.json with `Twiml`) leaves a message on a
 * voicemail (voicemail.ts). Refusals are read from Twilio's REST error
 * body `{code, message, more_info, status}`.
 */
import type { ProviderAnswer } from '../providerHttp.ts'
import { accountPath, field, isThrottled, twilioRefusal, twilioRequest, type TwilioRest } from './rest.ts'
import type { Channel, InteractionOutcome, InteractionProgress, OutboundAttempt, SettledInteraction, StartResult } from '../channel.ts'
import type { SenderPace } from '../../domain/pacing.ts'
import type { JsonObject, LeftOut } from '../../domain/types.ts'
import { retryAfterMs } from '../retryAfter.ts'
import { readTwilioConfig, TwilioConfigSchema } from './config.ts'
import { type AnsweredCall, handoffTwiml } from './twiml.ts'
import { voicemailTwiml } from './voicemail.ts'
import { amdCallbackUrl, answerUrl, finalOutcome, inboundCallUrl, inboundStatusUrl, MESSAGE_LEFT_STATUS, outcomeWithMessageLeft, statusCallbackUrl } from './webhooks.ts'
import type { MessageValues } from '../../domain/messageText.ts'

export { HANG_UP_TWIML, sayAndHangUpTwiml } from './twiml.ts'
export { greetingEnded } from './voicemail.ts'
export { MESSAGE_LEFT_STATUS, reportFromStatusCallback, verifyTwilioSignature, withMessageLeft } from './webhooks.ts'

export interface TwilioChannelOptions {
  /** Default https://api.twilio.com; tests point it at a fake. */
  apiBaseUrl?: string
  /** This service's public URL, which Twilio calls back. */
  publicBaseUrl: string
  /** Reads a credential from the environment by name. */
  secret: (envName: string) => string | undefined
  /** Per request to Twilio; default 10 s. */
  timeoutMs?: number
  /** The clock a Retry-After date is read against; default Date.now. */
  now?: () => number
}

/** Every progress event, so a call that never ends still shows how far it got. */
const STATUS_CALLBACK_EVENTS = ['initiated', 'ringing', 'answered', 'completed'] as const
/**
 * Twilio's default TimeLimit (4 hours), sent explicitly so that the settle
 * time below holds whatever the account's defaults are.
 */
const MAX_CALL_S = 4 * 60 * 60
/**
 * Time for a call to leave Twilio's queue (calls are dequeued at the
 * account's calls-per-second rate) and for its last callback to arrive.
 */
const SETTLE_MARGIN_MS = 15 * 60 * 1000
const CALL_SID = /^CA[0-9a-fA-F]{32}$/

/** Whether this is a call SID as Twilio makes them. */
export const isCallSid = (value: string): boolean => CALL_SID.test(value)
/** An account's calls per second unless its owner raised it (a campaign's `pacing` then says so). */
const TWILIO_DEFAULT_CPS = 1

export class TwilioChannel implements Channel {
  readonly provider = 'twilio'
  readonly channel = 'voice'
  readonly configSchema = TwilioConfigSchema
  readonly #rest: TwilioRest
  readonly #publicBaseUrl: string
  readonly #secret: (envName: string) => string | undefined
  readonly #now: () => number

  constructor(options: TwilioChannelOptions) {
    this.#rest = { apiBaseUrl: (options.apiBaseUrl ?? 'https://api.twilio.com').replace(/\/+$/, ''), timeoutMs: options.timeoutMs ?? 10_000 }
    this.#publicBaseUrl = options.publicBaseUrl
    this.#secret = options.secret
    this.#now = options.now ?? Date.now
  }

  /** The auth token of a campaign's account: what Twilio's callbacks for it are signed with. Undefined when unset or empty. */
  authTokenFor(config: JsonObject): string | undefined {
    const token = this.#secret(readTwilioConfig(config).authTokenEnv)
    return token === '' ? undefined : token
  }

  /** The StatusCallback URL this channel gives Twilio for an interaction, which its callback signatures cover. */
  statusCallbackUrl(interactionId: string): string {
    return statusCallbackUrl(this.#publicBaseUrl, interactionId)
  }

  /** The `Url` this channel gives Twilio for an interaction's call, which the signature of Twilio's request for it covers. */
  answerUrl(interactionId: string): string {
    return answerUrl(this.#publicBaseUrl, interactionId)
  }

  /** Where a campaign's number sends a call the person makes (its voice webhook), and that call's status changes. */
  inboundUrls(): { call: string; status: string } {
    return { call: inboundCallUrl(this.#publicBaseUrl), status: inboundStatusUrl(this.#publicBaseUrl) }
  }

  /** The AsyncAmdStatusCallback URL this channel gives Twilio for an interaction's call, which the AMD callback's signature covers. */
  amdCallbackUrl(interactionId: string): string {
    return amdCallbackUrl(this.#publicBaseUrl, interactionId)
  }

  /** Whether the campaign leaves a message on a voicemail (its calls are placed with asynchronous detection). */
  leavesMessage(config: JsonObject): boolean {
    return readTwilioConfig(config).voicemail.policy === 'leave_message'
  }

  /**
   * Gives a live call the TwiML that leaves the campaign's message and hangs
   * up ("Update a Call in progress"). True when Twilio took it; false when it
   * refused (the call is already over: error 21220, or gone); throws when no
   * answer or a 5xx says nothing of whether it did.
   */
  async leaveMessage(config: JsonObject, callSid: string, values: MessageValues, numberCountry: string | undefined): Promise<boolean> {
    const settings = readTwilioConfig(config)
    const token = this.authTokenFor(config)
    if (token === undefined || !CALL_SID.test(callSid)) return false
    const form = new URLSearchParams({ Twiml: voicemailTwiml(settings.voicemail, values, numberCountry) })
    const answer = await twilioRequest(this.#rest, 'POST', `${accountPath(settings.accountSid)}/Calls/${callSid}.json`, settings.accountSid, token, form)
    if (answer.status >= 200 && answer.status < 300) return true
    if (answer.status >= 400 && answer.status < 500 && answer.status !== 429) return false
    throw new Error(`Twilio answered HTTP ${answer.status} to Update Call`)
  }

  /** The TwiML that hands an answered call to the campaign's conversation, and which context keys it left out. */
  handoff(config: JsonObject, call: AnsweredCall): { mode: 'redirect' | 'stream'; twiml: string; leftOut: LeftOut[] } {
    const settings = readTwilioConfig(config)
    return { mode: settings.handoff, ...handoffTwiml(settings, call) }
  }

  async start(attempt: OutboundAttempt): Promise<StartResult> {
    const config = readTwilioConfig(attempt.config)
    const token = this.authTokenFor(attempt.config)
    if (token === undefined) {
      return { kind: 'refused', permanent: true, reason: `no Twilio auth token: environment variable ${config.authTokenEnv} is not set` }
    }
    const form = new URLSearchParams({
      To: attempt.to,
      From: config.from,
      // The service answers the call itself, to hand it to the conversation with its context.
      Url: this.answerUrl(attempt.interactionId),
      Method: 'POST',
      StatusCallback: this.statusCallbackUrl(attempt.interactionId),
      StatusCallbackMethod: 'POST',
    })
    for (const event of STATUS_CALLBACK_EVENTS) form.append('StatusCallbackEvent', event)
    form.append('Timeout', String(config.ringTimeoutS))
    form.append('TimeLimit', String(MAX_CALL_S))
    if (config.voicemail.policy === 'leave_message') {
      // Asynchronous detection to the greeting's end: a person is handed to the conversation at once,
      // and a machine gets the message after its beep (the AMD callback route updates the call).
      form.append('MachineDetection', 'DetectMessageEnd')
      form.append('AsyncAmd', 'true')
      form.append('AsyncAmdStatusCallback', this.amdCallbackUrl(attempt.interactionId))
      form.append('AsyncAmdStatusCallbackMethod', 'POST')
    } else if (config.machineDetection) {
      // Synchronous detection: Twilio reports AnsweredBy with the call, so a voicemail is told from a person.
      form.append('MachineDetection', 'Enable')
    }

    const answer = await twilioRequest(this.#rest, 'POST', `${accountPath(config.accountSid)}/Calls.json`, config.accountSid, token, form)
    if (answer.status >= 200 && answer.status < 300) {
      const sid = field(answer.body, 'sid')
      // Twilio has taken the call but we cannot name it: its outcome is unknown, not refused.
      if (typeof sid !== 'string' || !CALL_SID.test(sid)) throw new Error(`Twilio answered HTTP ${answer.status} to Create Call without a call SID`)
      return { kind: 'started', providerRef: sid }
    }
    if (answer.status >= 400 && answer.status < 500) return refusal(answer, attempt.to, this.#now())
    throw new Error(`Twilio answered HTTP ${answer.status} to Create Call; the call may or may not have been placed`)
  }

  /**
   * Long enough for any call to be over: it rings for at most the ring
   * timeout, then lasts at most the TimeLimit sent with it; Twilio does not
   * retry status callbacks, so this is when a lost final one is given up on.
   */
  /**
   * Twilio places an account's API calls at its calls per second (CPS), 1 by
   * default (twilio.com/docs/glossary/cps), queueing what comes faster: a
   * call queued there rings later than its window and its settle time allow.
   */
  senderPace(config: JsonObject): SenderPace {
    return { sender: `twilio:${readTwilioConfig(config).accountSid}`, perSecond: TWILIO_DEFAULT_CPS }
  }

  settleAfterMs(config: JsonObject): number {
    return (readTwilioConfig(config).ringTimeoutS + MAX_CALL_S) * 1000 + SETTLE_MARGIN_MS
  }

  /**
   * Asks Twilio how the call ended. Anything short of a final status from it
   * counts as a failed attempt: a call still live after its time limit has
   * gone wrong, and a call whose start is uncertain is not redialled blindly.
   */
  async settle(progress: InteractionProgress): Promise<SettledInteraction> {
    return { outcome: await this.#outcome(progress) }
  }

  async #outcome(progress: InteractionProgress): Promise<InteractionOutcome> {
    const callSid = progress.providerRef
    if (callSid === null || !CALL_SID.test(callSid)) return 'failed'
    const config = readTwilioConfig(progress.config)
    const token = this.authTokenFor(progress.config)
    if (token === undefined) return 'failed'
    // No answer, a 5xx or a 429 says nothing of the call: throw, and it is asked again later.
    const answer = await twilioRequest(this.#rest, 'GET', `${accountPath(config.accountSid)}/Calls/${callSid}.json`, config.accountSid, token)
    if (answer.status >= 500 || answer.status === 429) throw new Error(`Twilio answered HTTP ${answer.status} when asked about a call`)
    const status = field(answer.body, 'status')
    if (answer.status !== 200 || typeof status !== 'string') return 'failed'
    const answeredBy = field(answer.body, 'answered_by')
    const outcome = finalOutcome(status, typeof answeredBy === 'string' ? answeredBy : null)
    return outcome === undefined ? 'failed' : outcomeWithMessageLeft(outcome, progress.providerStatus === MESSAGE_LEFT_STATUS)
  }
}

/**
 * Twilio refuses with 4xx only when it did not place the call. A rate limit
 * (HTTP 429, error 20429 "Too Many Requests") is Twilio's own throttling: the
 * start is deferred, at the delay its Retry-After says if it sends one, and
 * costs no attempt. Most other refusals are about the number or the account
 * (invalid or unreachable To, a From not owned, geo permissions, blocked
 * numbers, bad credentials), which the same request meets again; only the
 * 31xxx connection errors are worth another attempt later.
 */
function refusal(answer: ProviderAnswer, to: string, now: number): StartResult {
  const { code, what, said } = twilioRefusal(answer, to)
  if (isThrottled(answer, code)) return { kind: 'deferred', retryAfterMs: retryAfterMs(answer.retryAfter, now), reason: `Twilio is throttling calls (${what})${said}` }
  const transient = code !== undefined && code >= 31000 && code < 32000
  return { kind: 'refused', permanent: !transient, reason: `Twilio refused the call (${what})${said}` }
}

