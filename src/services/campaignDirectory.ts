/**
 * Resolves a trigger's routing key (and optional channel) to one of the
 * organization's campaigns, keeping recent answers in memory so that the
 * trigger path does not read the database for them.
 *
 * Only answers that name a campaign are kept, and only for a few seconds; a
 * routing key or channel the cache does not know is always asked of the
 * database, so a campaign created on another process is usable at once. One
 * staleness remains: when another process adds a second channel to a routing
 * key this process has cached with one, triggers here that send no channel go
 * to the first campaign for up to TTL_MS instead of being asked to choose. The
 * campaign's default context is read at commit, so it is never stale.
 */
import { type ErrorDetail, valueError } from '../domain/errors.ts'
import type { Campaign, Channel } from '../domain/types.ts'
import type { Database } from '../store/database.ts'
import { findCampaignsByRoutingKey } from '../store/campaigns.ts'
import { SharedReads } from './sharedReads.ts'

const TTL_MS = 5_000
const MAX_CACHED_ROUTING_KEYS = 10_000

export type CampaignChoice = { campaign: Campaign } | { error: ErrorDetail }

export class CampaignDirectory {
  readonly #db: Database
  readonly #now: () => number
  readonly #cache = new Map<string, { campaigns: Campaign[]; expiresAt: number }>()
  readonly #reads = new SharedReads<Campaign[]>()
  /** Bumped by forget(), so that a read begun before it cannot put back what it forgot. */
  #generation = 0

  constructor(db: Database, now: () => number) {
    this.#db = db
    this.#now = now
  }

  async choose(orgId: string, routingKey: string, channel: Channel | undefined): Promise<CampaignChoice> {
    const cacheKey = `${orgId}\n${routingKey}`
    const cached = this.#cache.get(cacheKey)
    if (cached !== undefined && cached.expiresAt > this.#now()) {
      const choice = chooseCampaign(cached.campaigns, routingKey, channel)
      if ('campaign' in choice) return choice
    }
    return chooseCampaign(await this.#read(orgId, routingKey, cacheKey), routingKey, channel)
  }

  /** The routing key's campaigns from the database, kept when they name a campaign. */
  #read(orgId: string, routingKey: string, cacheKey: string): Promise<Campaign[]> {
    return this.#reads.read(cacheKey, async () => {
      const generation = this.#generation
      const campaigns = await findCampaignsByRoutingKey(this.#db, orgId, routingKey)
      this.#cache.delete(cacheKey)
      if (campaigns.length > 0 && generation === this.#generation) {
        if (this.#cache.size >= MAX_CACHED_ROUTING_KEYS) this.#cache.delete(this.#cache.keys().next().value!)
        this.#cache.set(cacheKey, { campaigns, expiresAt: this.#now() + TTL_MS })
      }
      return campaigns
    })
  }

  /** Forgets what is cached for a routing key, when this process changes its campaigns. */
  forget(orgId: string, routingKey: string): void {
    this.#generation++
    this.#cache.delete(`${orgId}\n${routingKey}`)
    this.#reads.forget(`${orgId}\n${routingKey}`)
  }
}

/** Picks the campaign a trigger names, or says (as a 422 entry) why none can be picked. */
function chooseCampaign(campaigns: readonly Campaign[], routingKey: string, channel: Channel | undefined): CampaignChoice {
  if (campaigns.length === 0) {
    return { error: valueError(['body', 'campaign'], routingKey, `no campaign has the routing key '${routingKey}'`) }
  }
  if (channel !== undefined) {
    const campaign = campaigns.find((candidate) => candidate.channel === channel)
    if (campaign) return { campaign }
    const offered = campaigns.map((candidate) => `'${candidate.channel}'`).join(' and ')
    return {
      error: valueError(['body', 'channel'], channel, `campaign '${routingKey}' has no ${channel} campaign; its channels: ${offered}`),
    }
  }
  if (campaigns.length > 1) {
    const offered = campaigns.map((candidate) => `'${candidate.channel}'`).join(' or ')
    return {
      error: valueError(['body', 'channel'], null, `campaign '${routingKey}' runs on more than one channel; send channel ${offered} to choose one`),
    }
  }
  return { campaign: campaigns[0]! }
}
