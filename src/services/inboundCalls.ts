/**
 * A person calling a campaign's number, landed: the call is matched to the
 * person's task by their number (store/inboundCalls.ts: an open task of the
 * organization first, then one completed within its callback window, the
 * most recent first), recorded as an active inbound interaction on it, the
 * task held while the call runs, and handed to the conversation with the
 * task's context, as an outbound call's is. A caller with no such task (or
 * who withholds their number) gets the campaign's conversation without a
 * task: an inbound interaction of the campaign alone.
 *
 * The call's end (the platform's report, or the settlement at its settle
 * time) steers the task as an outbound conversation does (domain/callbacks.ts).
 * The platform adapters (services/twilioCalls.ts for Twilio) verify the
 * request with the campaigns of the number called before anything is landed.
 */
import type { FastifyBaseLogger } from 'fastify'
import type { Provider } from '../domain/campaignSettings.ts'
import { newId } from '../domain/ids.ts'
import { normalizePhone } from '../domain/contact.ts'
import type { Campaign, InteractionContext, JsonObject } from '../domain/types.ts'
import { findCampaignsByNumber } from '../store/campaigns.ts'
import type { Database } from '../store/database.ts'
import { findCallbackTask, type InboundCallRecord, recordInboundCall } from '../store/inboundCalls.ts'
import type { Conversations } from './conversations.ts'
import { readableConfig } from './providerCallbacks.ts'

/** A call landed: its interaction, the campaign it is handled by, and what its conversation is to know. */
export interface LandedCall {
  kind: 'landed'
  interactionId: string
  campaign: Campaign
  /** The interaction with its task's contact, context and ids (none without a task). */
  context: InteractionContext
}

export type Landing =
  | LandedCall
  /** No campaign has the number: nothing changed. */
  | { kind: 'unknown' }
  /** The request is the platform's for none of the number's campaigns: nothing changed. */
  | { kind: 'refused' }
  /** A repeat of a call so late that its interaction is gone with the history. */
  | { kind: 'gone' }

export class InboundCalls {
  readonly #db: Database
  readonly #conversations: Conversations
  readonly #now: () => number
  readonly #log: FastifyBaseLogger

  constructor(deps: { db: Database; conversations: Conversations; now: () => number; log: FastifyBaseLogger }) {
    this.#db = deps.db
    this.#conversations = deps.conversations
    this.#now = deps.now
    this.#log = deps.log
  }

  /**
   * Lands a call to a number (`field` of a campaign's provider_config names
   * it, or an organization's callback number) of the campaigns whose
   * settings `verify` the request, from `from` (undefined when withheld),
   * known to the platform by its reference (or, where the platform names it
   * later, by a request's repeat key). A repeat of the same call lands on the
   * interaction recorded for it.
   */
  async land(
    number: { provider: Provider; field: string; value: string },
    verify: (config: JsonObject, now: number) => boolean,
    call: { call: InboundCallRecord['call']; from: string | undefined; settleAfterMs: (campaign: Campaign) => number },
  ): Promise<Landing> {
    const now = this.#now()
    const candidates = await findCampaignsByNumber(this.#db, number.provider, number.field, number.value)
    // A campaign whose stored config cannot be read verifies nothing; the others of the number still may.
    const campaigns = candidates.filter((candidate) => readableConfig(this.#log, candidate.id, () => verify(candidate.providerConfig, now)))
    if (campaigns.length === 0) return { kind: candidates.length === 0 ? 'unknown' : 'refused' }
    const from = call.from === undefined ? null : normalizePhone(call.from)
    const orgIds = [...new Set(campaigns.map((campaign) => campaign.orgId))]
    const task = from === null ? undefined : await findCallbackTask(this.#db, orgIds, from, now)
    // The task's own campaign when the number is its; else a campaign of the task's organization with this number.
    const campaign =
      campaigns.find((candidate) => candidate.id === task?.campaignId) ?? campaigns.find((candidate) => candidate.orgId === task?.orgId) ?? campaigns[0]!
    const recorded = await this.#db.transaction((tx) =>
      recordInboundCall(tx, {
        interactionId: newId('interaction', now),
        campaign,
        task,
        from: from ?? '',
        call: call.call,
        at: now,
        settleAt: now + call.settleAfterMs(campaign),
      }),
    )
    const context = recorded && (await this.#conversations.contextForProvider(recorded.interactionId))
    if (recorded === undefined || context === undefined) return { kind: 'gone' }
    return { kind: 'landed', interactionId: recorded.interactionId, campaign: campaigns.find((candidate) => candidate.id === recorded.campaignId) ?? campaign, context }
  }
}
