/**
 * Pausing and resuming campaigns: by the operator (one campaign, by id; the
 * admin API and the CLI) and by the organization itself (the campaigns of one
 * of its routing keys). While a campaign is paused its triggers are still
 * accepted and its running interactions end as usual, but the dispatcher
 * starts none of its tasks. A dispatcher does not lock the campaigns it takes
 * tasks of (that would make every batch wait on an operator's change), so a
 * batch that read the campaign running just before the pause committed may
 * still start what it took. A resume wakes the workers, in this process and
 * in the others, so that the tasks that fell due meanwhile start at once
 * rather than at the next poll.
 */
import type { Actor } from '../domain/audit.ts'
import { ApiError } from '../domain/errors.ts'
import { isId } from '../domain/ids.ts'
import type { Campaign, Channel } from '../domain/types.ts'
import type { Database } from '../store/database.ts'
import { type CampaignSelection, pauseCampaigns, resumeCampaigns } from '../store/campaigns.ts'
import { findOrganization } from '../store/organizations.ts'
import { audited } from './auditTrail.ts'
import type { Wake } from './wake.ts'

export const PAUSE_ACTIONS = ['pause', 'resume'] as const
export type PauseAction = (typeof PAUSE_ACTIONS)[number]

export class CampaignPauses {
  readonly #db: Database
  readonly #now: () => number
  readonly #wake: Wake

  constructor(deps: { db: Database; now: () => number; wake: Wake }) {
    this.#db = deps.db
    this.#now = deps.now
    this.#wake = deps.wake
  }

  /**
   * Pauses or resumes one of the organization's campaigns. Pausing a paused
   * one keeps the time it was first paused at; resuming one that runs
   * changes nothing.
   */
  async ofCampaign(action: PauseAction, actor: Actor, orgId: string, campaignId: string): Promise<Campaign> {
    return this.#one(orgId, campaignId, isId('campaign', campaignId) ? await this.#apply(action, actor, orgId, { id: campaignId }) : [])
  }

  /** Pauses or resumes the organization's campaigns of a routing key: the one on `channel`, or every one. */
  async ofRoutingKey(action: PauseAction, actor: Actor, orgId: string, routingKey: string, channel: Channel | undefined): Promise<Campaign[]> {
    return ofRoutingKey(routingKey, channel, await this.#apply(action, actor, orgId, { routingKey, channel }))
  }

  /** Each campaign selected is recorded in the audit log as paused or resumed, whether or not it already was. */
  async #apply(action: PauseAction, actor: Actor, orgId: string, selection: CampaignSelection): Promise<Campaign[]> {
    const { campaigns, resumed } = await audited({ db: this.#db, now: this.#now }, actor, async (tx) => {
      const result =
        action === 'pause'
          ? { campaigns: await pauseCampaigns(tx, orgId, selection, this.#now()), resumed: false }
          : await resumeCampaigns(tx, orgId, selection, this.#wake.notification('tasks'))
      const audit = result.campaigns.map((campaign) => ({
        orgId,
        action: action === 'pause' ? ('campaign.paused' as const) : ('campaign.resumed' as const),
        target: campaign.id,
        details: { routing_key: campaign.routingKey, channel: campaign.channel },
      }))
      return { result, audit }
    })
    if (resumed) this.#wake.written('tasks')
    return campaigns
  }

  /** The campaign changed, or a 404 that says whether the organization or only its campaign is unknown. */
  async #one(orgId: string, campaignId: string, changed: Campaign[]): Promise<Campaign> {
    if (changed[0] !== undefined) return changed[0]
    const organization = isId('organization', orgId) ? await findOrganization(this.#db, orgId) : undefined
    if (organization === undefined) throw new ApiError('not_found', `No organization ${orgId} exists.`)
    throw new ApiError('not_found', `Organization ${orgId} has no campaign ${campaignId}.`)
  }
}

function ofRoutingKey(routingKey: string, channel: Channel | undefined, changed: Campaign[]): Campaign[] {
  if (changed.length > 0) return changed
  const which = channel === undefined ? 'campaign' : `${channel} campaign`
  throw new ApiError('not_found', `No ${which} has the routing key '${routingKey}'.`)
}
