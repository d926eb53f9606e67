/**
 * Twilio's requests about a call the service placed, form-encoded and signed
 * with X-Twilio-Signature over the exact URL Twilio was given for the call
 * (its path names the interaction; http/routes/providers/twilio.ts passes
 * them here as they came):
 * - the answer (the call's `Url`): answered with the TwiML that hands the
 *   call to the campaign's conversation (channels/twilio/twiml.ts), and the
 *   handoff recorded;
 * - its status callbacks: reported through the task's lifecycle;
 * - its asynchronous answering-machine detection's verdict (campaigns whose
 *   voicemail policy is `leave_message`): when a machine's greeting has
 *   ended, the live call is given the TwiML that leaves the campaign's
 *   message, once.
 * And the requests of a campaign's number about a call the person made
 * (docs/callbacks.md), signed over the number's webhook URLs:
 * - its voice webhook ("A call comes in"): the call landed on the person's
 *   task (services/inboundCalls.ts) and answered with the TwiML of the
 *   campaign's handoff, with the task's context and `direction=inbound`;
 * - its status callback: the call's end, reported as an outbound call's.
 * A request is believed only when its signature verifies with the auth token
 * of the campaign's account, and it names that account and call: otherwise
 * it is refused (undefined or false) and nothing changes.
 */
import type { FastifyBaseLogger } from 'fastify'
import { greetingEnded, HANG_UP_TWIML, isCallSid, sayAndHangUpTwiml, MESSAGE_LEFT_STATUS, reportFromStatusCallback, type TwilioChannel, withMessageLeft } from '../channels/twilio/twilioChannel.ts'
import { signedByAccount } from '../channels/twilio/webhooks.ts'
import { readTwilioConfig } from '../channels/twilio/config.ts'
import { storableId } from '../domain/boundedReaders.ts'
import { phoneFacts } from '../domain/contact.ts'
import { isId } from '../domain/ids.ts'
import type { JsonObject } from '../domain/types.ts'
import type { Database } from '../store/database.ts'
import { claimVoicemailHandoff, findCalledInteraction, findInteractionWithConfig, type InteractionWithConfig, releaseVoicemailHandoff } from '../store/interactions.ts'
import type { Conversations } from './conversations.ts'
import type { InboundCalls } from './inboundCalls.ts'
import { readableConfig } from './providerCallbacks.ts'
import type { TaskLifecycle } from './taskLifecycle.ts'

/** One of Twilio's requests about a call the person made, to a campaign's number: its form body, its signature. */
export interface TwilioInboundRequest {
  /** The form-encoded body, as sent. */
  form: string
  signature: string | undefined
}

/** One of Twilio's requests about a call: the interaction its URL names, its form body, its signature. */
export interface TwilioCallRequest {
  interactionId: string
  /** The form-encoded body, as sent. */
  form: string
  signature: string | undefined
}

export class TwilioCalls {
  readonly #db: Database
  readonly #twilio: TwilioChannel
  readonly #lifecycle: TaskLifecycle
  readonly #conversations: Conversations
  readonly #inboundCalls: InboundCalls
  readonly #now: () => number
  readonly #log: FastifyBaseLogger

  constructor(deps: {
    db: Database
    twilio: TwilioChannel
    lifecycle: TaskLifecycle
    conversations: Conversations
    inboundCalls: InboundCalls
    now: () => number
    log: FastifyBaseLogger
  }) {
    this.#log = deps.log
    this.#db = deps.db
    this.#twilio = deps.twilio
    this.#lifecycle = deps.lifecycle
    this.#conversations = deps.conversations
    this.#inboundCalls = deps.inboundCalls
    this.#now = deps.now
  }

  /** The TwiML an answered call is given; undefined when the request is refused. */
  async answered(request: TwilioCallRequest): Promise<string | undefined> {
    const verified = await this.#verified(request, (id) => this.#twilio.answerUrl(id))
    if (verified === undefined) return undefined
    const { interaction, params } = verified
    const now = this.#now()
    // Twilio has the call, though its answer to the start may have been lost: this confirms it.
    const report = reportFromStatusCallback(params, now)
    if (interaction.status === 'starting' && report?.kind === 'progress') await this.#lifecycle.report(interaction, report)
    const context = interaction.status === 'finalized' ? undefined : await this.#conversations.contextForProvider(interaction.id)
    // Settled meanwhile (a start taken for failed): no conversation waits for the call.
    if (context === undefined) return HANG_UP_TWIML
    const { mode, twiml, leftOut } = this.#twilio.handoff(interaction.providerConfig, {
      interactionId: interaction.id,
      taskId: interaction.taskId,
      attempt: interaction.attempt,
      language: context.contact?.language,
      firstName: context.contact?.first_name,
      context: context.context,
    })
    await this.#conversations.recordHandoff(interaction.id, { mode, at: new Date(now).toISOString(), left_out: leftOut })
    return twiml
  }

  /** Applies a status callback; false when the request is refused. */
  async statusReported(request: TwilioCallRequest): Promise<boolean> {
    const verified = await this.#verified(request, (id) => this.#twilio.statusCallbackUrl(id))
    if (verified === undefined) return false
    const { interaction, params } = verified
    const report = reportFromStatusCallback(params, this.#now())
    if (report !== undefined) await this.#lifecycle.report(interaction, withMessageLeft(report, interaction.handoffMode === 'voicemail'))
    return true
  }

  /**
   * Applies the detection's verdict; false when the request is refused. Only
   * calls of leave_message campaigns are placed with an AMD callback: a
   * campaign without it costs nothing here. With it, a machine whose
   * greeting ended costs one small transaction (the claim) and one request to Twilio.
   */
  async machineDetected(request: TwilioCallRequest): Promise<boolean> {
    const verified = await this.#verified(request, (id) => this.#twilio.amdCallbackUrl(id))
    if (verified === undefined) return false
    const { interaction, params } = verified
    const callSid = params.CallSid
    // A person (or a fax, or no verdict) goes on as any answered call: the conversation has it already.
    if (!greetingEnded(params.AnsweredBy) || callSid === undefined || !this.#twilio.leavesMessage(interaction.providerConfig)) return true
    if (interaction.status === 'finalized' || interaction.handoffMode === 'voicemail') return true
    const context = await this.#conversations.contextForProvider(interaction.id)
    if (context === undefined) return true
    // Claimed before Twilio is asked, so that a repeated callback leaves no second message.
    const claimed = await claimVoicemailHandoff(this.#db, interaction.id, { mode: 'voicemail', at: new Date(this.#now()).toISOString(), left_out: [] }, MESSAGE_LEFT_STATUS)
    if (claimed === undefined) return true
    const values = { firstName: context.contact?.first_name, lastName: context.contact?.last_name, language: context.contact?.language, context: context.context }
    let left: boolean
    try {
      left = await this.#twilio.leaveMessage(interaction.providerConfig, callSid, values, phoneFacts(interaction.toPhone)?.country)
    } catch (error) {
      await releaseVoicemailHandoff(this.#db, interaction.id, claimed)
      throw error
    }
    // The call ended before the message could be left (Twilio refused the update): it ends as a machine's call.
    if (!left) await releaseVoicemailHandoff(this.#db, interaction.id, claimed)
    return true
  }

  /**
   * The TwiML a call to a campaign's number is answered with; undefined when
   * the request is refused (no campaign calls from the number it names, or
   * it verifies with the account of none of them). Twilio repeats nothing
   * that it had an answer to; a call it asks about again (its fallback URL
   * set to the same one) is answered for the interaction recorded first.
   */
  async inbound(request: TwilioInboundRequest): Promise<string | undefined> {
    const params = Object.fromEntries(new URLSearchParams(request.form))
    const to = storableId(params.To)
    const callSid = storableId(params.CallSid)
    if (to === undefined || callSid === undefined || !isCallSid(callSid)) return undefined
    const url = this.#twilio.inboundUrls().call
    const landed = await this.#inboundCalls.land({ provider: 'twilio', field: 'from', value: to }, (config) => this.#signedFor(config, url, params, request.signature), {
      call: { ref: callSid },
      from: storableId(params.From),
      settleAfterMs: (campaign) => this.#twilio.settleAfterMs(campaign.providerConfig),
    })
    if (landed.kind === 'unknown' || landed.kind === 'refused') return undefined
    if (landed.kind === 'gone') return HANG_UP_TWIML
    const { interactionId, campaign, context } = landed
    const message = context.interaction.taskId === null ? readTwilioConfig(campaign.providerConfig).unknownCallerMessage : undefined
    if (message !== undefined) return sayAndHangUpTwiml(message)
    const { mode, twiml, leftOut } = this.#twilio.handoff(campaign.providerConfig, {
      interactionId,
      taskId: context.interaction.taskId,
      attempt: null,
      direction: 'inbound',
      language: context.contact?.language,
      firstName: context.contact?.first_name,
      context: context.context,
    })
    await this.#conversations.recordHandoff(interactionId, { mode, at: new Date(this.#now()).toISOString(), left_out: leftOut })
    return twiml
  }

  /** Applies a status callback of a call the person made; false when the request is refused (about no call the service answered, or not signed for it). */
  async inboundStatusReported(request: TwilioInboundRequest): Promise<boolean> {
    const params = Object.fromEntries(new URLSearchParams(request.form))
    const callSid = storableId(params.CallSid)
    if (callSid === undefined || !isCallSid(callSid)) return false
    const interaction = await findCalledInteraction(this.#db, 'twilio', callSid, undefined)
    if (interaction === undefined) return false
    const url = this.#twilio.inboundUrls().status
    if (!readableConfig(this.#log, interaction.campaignId, () => this.#signedFor(interaction.providerConfig, url, params, request.signature))) return false
    const report = reportFromStatusCallback(params, this.#now())
    if (report !== undefined) await this.#lifecycle.report(interaction, report)
    return true
  }

  /** Whether Twilio signed these parameters for `url` with the auth token of the config's account, naming that account. */
  #signedFor(config: JsonObject, url: string, params: Record<string, string>, signature: string | undefined): boolean {
    return signedByAccount({ accountSid: readTwilioConfig(config).accountSid, authToken: this.#twilio.authTokenFor(config) }, url, params, signature)
  }

  /** The interaction a request names, with the request's parameters, when Twilio signed it for the URL it was given for the call. */
  async #verified(request: TwilioCallRequest, urlOf: (interactionId: string) => string): Promise<{ interaction: InteractionWithConfig; params: Record<string, string> } | undefined> {
    const { interactionId } = request
    const interaction = isId('interaction', interactionId) ? await findInteractionWithConfig(this.#db, interactionId) : undefined
    if (interaction === undefined || interaction.provider !== 'twilio' || interaction.channel !== 'voice') return undefined
    const params = Object.fromEntries(new URLSearchParams(request.form))
    const verified = readableConfig(this.#log, interaction.campaignId, () => this.#signedFor(interaction.providerConfig, urlOf(interactionId), params, request.signature))
    if (!verified || (interaction.providerRef !== null && params.CallSid !== interaction.providerRef)) return undefined
    return { interaction, params }
  }
}
