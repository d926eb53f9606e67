/**
 * A provider's callback about one of its calls, applied (channels/callbacks.ts
 * for the adapter's half): the interaction is the one whose provider_ref is
 * the call's, or, while its start's answer is not recorded, the one the
 * call's metadata names, of that provider and with no provider_ref yet. The
 * callback is believed only when it verifies with that interaction's
 * campaign's settings; what it then tells is applied through the task's
 * lifecycle, idempotently (a finalized interaction stays as it is), so that
 * a platform's retries are harmless. Nothing is changed before the check.
 */
import type { FastifyBaseLogger } from 'fastify'
import type { CallCallback, InboundCallAsk, InboundCallbacks, SignedRequest } from '../channels/callbacks.ts'
import type { Provider } from '../domain/campaignSettings.ts'
import { StoredConfigRefused } from '../channels/providerConfig.ts'
import { isId } from '../domain/ids.ts'
import type { Database } from '../store/database.ts'
import { findCalledInteraction, recordHandoff } from '../store/interactions.ts'
import type { InboundCalls } from './inboundCalls.ts'
import type { TaskLifecycle } from './taskLifecycle.ts'

export type CallbackOutcome =
  /** Not a message of the platform's: nothing read further. */
  | { kind: 'unreadable' }
  /** About no call of this service. */
  | { kind: 'unknown' }
  /** About one, but not verified with its campaign's settings: nothing changed. */
  | { kind: 'refused' }
  | { kind: 'applied'; interactionId: string; ref: string }
  /** A call the person made, landed (services/inboundCalls.ts): the platform is answered with `body`. */
  | { kind: 'answered'; body: unknown }

export class ProviderCallbacks {
  readonly #db: Database
  readonly #lifecycle: TaskLifecycle
  readonly #inboundCalls: InboundCalls
  readonly #now: () => number
  readonly #log: FastifyBaseLogger

  constructor(deps: { db: Database; lifecycle: TaskLifecycle; inboundCalls: InboundCalls; now: () => number; log: FastifyBaseLogger }) {
    this.#db = deps.db
    this.#lifecycle = deps.lifecycle
    this.#inboundCalls = deps.inboundCalls
    this.#now = deps.now
    this.#log = deps.log
  }

  async receive<Message>(callback: CallCallback<Message>, request: SignedRequest): Promise<CallbackOutcome> {
    const message = callback.parse(request)
    if (message === undefined) return { kind: 'unreadable' }
    // Asked at this route (Vapi's assistant-request comes with its server messages).
    if (callback.inbound !== undefined && callback.inbound.route === undefined) {
      const ask = callback.inbound.ask(request)
      if (ask !== undefined) return this.#answer(callback.provider, callback.inbound, request, ask)
    }
    const claim = callback.claim(message)
    // One read: read by reference, then by the named id, a report that came while its start's answer was being
    // recorded found the reference set between the two (74 of 1,666 end-of-call-reports refused end to end through Vapi).
    const named = claim.interactionId !== undefined && isId('interaction', claim.interactionId) ? claim.interactionId : undefined
    const interaction = await findCalledInteraction(this.#db, callback.provider, claim.ref, named)
    if (interaction === undefined) return { kind: 'unknown' }
    const now = this.#now()
    // A stored config its schema refuses cannot verify anything: refused (and logged), never a 500 the platform retries.
    if (!readableConfig(this.#log, interaction.campaignId, () => callback.verify(message, request, interaction.providerConfig, now))) return { kind: 'refused' }
    const report = callback.report(message, interaction, now)
    if (report !== undefined) await this.#lifecycle.report(interaction, report)
    return { kind: 'applied', interactionId: interaction.id, ref: claim.ref }
  }

  /** A platform's ask at its inbound route of its own (services/providerCallbacks.ts serves it): answered as {@link receive} answers one at the callbacks' route. */
  async answerInbound(provider: Provider, inbound: InboundCallbacks, request: SignedRequest): Promise<CallbackOutcome> {
    const ask = inbound.ask(request)
    return ask === undefined ? { kind: 'unreadable' } : this.#answer(provider, inbound, request, ask)
  }

  /**
   * A call to a campaign's number: believed only when it verifies with the
   * settings of a campaign of that number, then landed on the caller's task
   * and answered with what the conversation is to know.
   */
  async #answer(provider: Provider, inbound: InboundCallbacks, request: SignedRequest, ask: InboundCallAsk): Promise<CallbackOutcome> {
    const landed = await this.#inboundCalls.land({ provider, ...ask.number }, (config, now) => inbound.verify(request, config, now), {
      call: ask.call,
      from: ask.from,
      settleAfterMs: (campaign) => inbound.settleAfterMs(campaign.providerConfig),
    })
    if (landed.kind === 'refused') return { kind: 'refused' }
    if (landed.kind !== 'landed') return { kind: 'unknown' }
    const { context } = landed
    const handoff = {
      interactionId: landed.interactionId,
      taskId: context.interaction.taskId,
      firstName: context.contact?.first_name,
      language: context.contact?.language,
      ids: context.ids,
      context: context.context,
    }
    const { body, leftOut } = inbound.answer(handoff, landed.campaign.providerConfig)
    // What of the task the agent was not given, as an outbound start records it.
    if (leftOut !== undefined) await recordHandoff(this.#db, landed.interactionId, { mode: 'variables', at: new Date(this.#now()).toISOString(), left_out: leftOut })
    return { kind: 'answered', body }
  }

}

/**
 * What `check` answers of a campaign's stored config, false when the config
 * cannot be read (StoredConfigRefused, logged with the campaign so that its
 * operator can save it again): a callback about it is refused, never answered
 * 500, which a platform would retry into the same fault.
 */
export function readableConfig(log: FastifyBaseLogger, campaignId: string, check: () => boolean): boolean {
  try {
    return check()
  } catch (error) {
    if (!(error instanceof StoredConfigRefused)) throw error
    log.error({ err: error, campaign: campaignId }, "a campaign's stored provider_config cannot be read: its callbacks are refused until it is saved again")
    return false
  }
}
