import type { AttemptPolicy, Provider, Schedule } from '../domain/campaignSettings.ts'
import type { Campaign, Channel, JsonObject } from '../domain/types.ts'
import type { Queryable } from './database.ts'
import { iso } from './rows.ts'

interface CampaignRow {
  id: string
  org_id: string
  routing_key: string
  channel: Channel
  name: string
  context: JsonObject
  schedule: Schedule
  attempts: AttemptPolicy
  provider: Provider
  provider_config: JsonObject
  max_concurrent: number | null
  created_at: Date
  updated_at: Date
}

const COLUMNS =
  'id, org_id, routing_key, channel, name, context, schedule, attempts, provider, provider_config, max_concurrent, created_at, updated_at'

export const toCampaign = (row: CampaignRow): Campaign => ({
  id: row.id,
  orgId: row.org_id,
  routingKey: row.routing_key,
  channel: row.channel,
  name: row.name,
  context: row.context,
  schedule: row.schedule,
  attempts: row.attempts,
  provider: row.provider,
  providerConfig: row.provider_config,
  maxConcurrent: row.max_concurrent,
  createdAt: iso(row.created_at),
  updatedAt: iso(row.updated_at),
})

/** Inserts the campaign; false when the organization already has one for this routing key and channel. */
export async function insertCampaign(db: Queryable, campaign: Campaign): Promise<boolean> {
  const rows = await db.query(
    `INSERT INTO campaigns (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
     ON CONFLICT DO NOTHING RETURNING id`,
    [
      campaign.id,
      campaign.orgId,
      campaign.routingKey,
      campaign.channel,
      campaign.name,
      campaign.context,
      campaign.schedule,
      campaign.attempts,
      campaign.provider,
      campaign.providerConfig,
      campaign.maxConcurrent,
      campaign.createdAt,
      campaign.updatedAt,
    ],
  )
  return rows.length === 1
}

/** Replaces the campaign's changeable fields (routing key and channel never change). */
export async function updateCampaign(db: Queryable, campaign: Campaign): Promise<void> {
  await db.query(
    `UPDATE campaigns SET name = $3, context = $4, schedule = $5, attempts = $6, provider = $7, provider_config = $8,
            max_concurrent = $9, updated_at = $10
     WHERE org_id = $1 AND id = $2`,
    [
      campaign.orgId,
      campaign.id,
      campaign.name,
      campaign.context,
      campaign.schedule,
      campaign.attempts,
      campaign.provider,
      campaign.providerConfig,
      campaign.maxConcurrent,
      campaign.updatedAt,
    ],
  )
}

export async function findCampaign(db: Queryable, orgId: string, id: string): Promise<Campaign | undefined> {
  const rows = await db.query<CampaignRow>(`SELECT ${COLUMNS} FROM campaigns WHERE org_id = $1 AND id = $2`, [orgId, id])
  return rows[0] && toCampaign(rows[0])
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

/** Every organization's WhatsApp Cloud campaigns sending from these phone number ids (one number may serve several campaigns). */
export async function findCampaignsByWhatsAppNumber(db: Queryable, phoneNumberIds: string[]): Promise<Campaign[]> {
  const rows = await db.query<CampaignRow>(
    `SELECT ${COLUMNS} FROM campaigns
     WHERE provider = 'whatsapp_cloud' AND provider_config->>'phone_number_id' = ANY($1::text[])
     ORDER BY id`,
    [phoneNumberIds],
  )
  return rows.map(toCampaign)
}
