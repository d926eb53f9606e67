/**
 * A provider's callback about one of its calls, applied (channels/callbacks.ts
 * for the adapter's half): the interaction is the one the call's metadata
 * names, of that provider, whose provider_ref is the call's or not recorded
 * yet (its start's answer is on its way); else the one whose provider_ref is
 * the call's. The
 * callback is believed only when it verifies with that interaction's
 * campaign's settings; what it then tells is applied through the task's
 * lifecycle, idempotently (a finalized interaction stays as it is), so that
 * a platform's retries are harmless. Nothing is changed before the check.
 */
import type { CallCallback, SignedRequest } from '../channels/callbacks.ts'
import { isId } from '../domain/ids.ts'
import type { Database } from '../store/database.ts'
import { findInteractionByProviderRef, findInteractionWithConfig, type InteractionWithConfig } from '../store/interactions.ts'
import type { TaskLifecycle } from './taskLifecycle.ts'

export type CallbackOutcome =
  /** Not a message of the platform's: nothing read further. */
  | { kind: 'unreadable' }
  /** About no call of this service. */
  | { kind: 'unknown' }
  /** About one, but not verified with its campaign's settings: nothing changed. */
  | { kind: 'refused' }
  | { kind: 'applied'; interactionId: string; ref: string }

export class ProviderCallbacks {
  readonly #db: Database
  readonly #lifecycle: TaskLifecycle
  readonly #now: () => number

  constructor(deps: { db: Database; lifecycle: TaskLifecycle; now: () => number }) {
    this.#db = deps.db
    this.#lifecycle = deps.lifecycle
    this.#now = deps.now
  }

  async receive<Message>(callback: CallCallback<Message>, request: SignedRequest): Promise<CallbackOutcome> {
    const message = callback.parse(request)
    if (message === undefined) return { kind: 'unreadable' }
    const claim = callback.claim(message)
    const interaction = await this.#claimed(callback.provider, claim.ref, claim.interactionId)
    if (interaction === undefined) return { kind: 'unknown' }
    const now = this.#now()
    if (!callback.verify(message, request, interaction.providerConfig, now)) return { kind: 'refused' }
    const report = callback.report(message, interaction, now)
    if (report !== undefined) await this.#lifecycle.report(interaction, report)
    return { kind: 'applied', interactionId: interaction.id, ref: claim.ref }
  }

  /**
   * The interaction a callback names is read first, in one read: the start's
   * answer may be recorded at any moment (a platform reports a call as soon as
   * it has created it), and a read by reference that finds nothing, then one by
   * the named id that finds the reference set meanwhile, refused 74 of 1,666
   * reports end to end through Vapi. By the reference alone when none is named.
   */
  async #claimed(provider: InteractionWithConfig['provider'], ref: string, named: string | undefined): Promise<InteractionWithConfig | undefined> {
    const interaction = named !== undefined && isId('interaction', named) ? await findInteractionWithConfig(this.#db, named) : undefined
    if (interaction?.provider === provider && (interaction.providerRef === null || interaction.providerRef === ref)) return interaction
    return findInteractionByProviderRef(this.#db, provider, ref)
  }
}
