import type { Campaign, Channel, JsonObject } from '../domain/types.ts'
import type { Queryable } from './database.ts'
import { iso, sqlState, UNIQUE_VIOLATION } from './rows.ts'

interface CampaignRow {
  id: string
  org_id: string
  routing_key: string
  channel: Channel
  name: string
  context: JsonObject
  created_at: Date
}

const COLUMNS = 'id, org_id, routing_key, channel, name, context, created_at'

const toCampaign = (row: CampaignRow): Campaign => ({
  id: row.id,
  orgId: row.org_id,
  routingKey: row.routing_key,
  channel: row.channel,
  name: row.name,
  context: row.context,
  createdAt: iso(row.created_at),
})

/** Inserts the campaign; false when the organization already has one for this routing key and channel. */
export async function insertCampaign(db: Queryable, campaign: Campaign): Promise<boolean> {
  try {
    await db.query(
      `INSERT INTO campaigns (id, org_id, routing_key, channel, name, context, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [campaign.id, campaign.orgId, campaign.routingKey, campaign.channel, campaign.name, campaign.context, campaign.createdAt],
    )
    return true
  } catch (error) {
    if (sqlState(error) === UNIQUE_VIOLATION) return false
    throw error
  }
}

export async function listCampaigns(db: Queryable, orgId: string): Promise<Campaign[]> {
  const rows = await db.query<CampaignRow>(`SELECT ${COLUMNS} FROM campaigns WHERE org_id = $1 ORDER BY id`, [orgId])
  return rows.map(toCampaign)
}

/** The organization's campaigns for one routing key, one per channel. */
export async function findCampaignsByRoutingKey(db: Queryable, orgId: string, routingKey: string): Promise<Campaign[]> {
  const rows = await db.query<CampaignRow>(
    `SELECT ${COLUMNS} FROM campaigns WHERE org_id = $1 AND routing_key = $2 ORDER BY channel`,
    [orgId, routingKey],
  )
  return rows.map(toCampaign)
}
