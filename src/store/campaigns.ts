import type { AttemptPolicy, FallbackSettings, PacingSettings, Provider, ResultSettings, Schedule } from '../domain/campaignSettings.ts'
import type { ComplianceSettings } from '../domain/consent.ts'
import type { Campaign, Channel, JsonObject } from '../domain/types.ts'
import type { Queryable } from './database.ts'
import { iso, isoOrNull } from './rows.ts'

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
  results: ResultSettings
  pacing: PacingSettings
  fallback: FallbackSettings | null
  compliance: ComplianceSettings
  paused_at: Date | null
  created_at: Date
  updated_at: Date
}

const COLUMNS =
  'id, org_id, routing_key, channel, name, context, schedule, attempts, provider, provider_config, max_concurrent, results, pacing, paused_at, created_at, updated_at, fallback, compliance'

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
  results: row.results,
  pacing: row.pacing,
  fallback: row.fallback,
  compliance: row.compliance,
  pausedAt: isoOrNull(row.paused_at),
  createdAt: iso(row.created_at),
  updatedAt: iso(row.updated_at),
})

/** Inserts the campaign; false when the organization already has one for this routing key and channel. */
export async function insertCampaign(db: Queryable, campaign: Campaign): Promise<boolean> {
  const rows = await db.query(
    `INSERT INTO campaigns (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)
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
      campaign.results,
      campaign.pacing,
      campaign.pausedAt,
      campaign.createdAt,
      campaign.updatedAt,
      campaign.fallback,
      campaign.compliance,
    ],
  )
  return rows.length === 1
}

/** Replaces the campaign's changeable fields (routing key and channel never change). */
export async function updateCampaign(db: Queryable, campaign: Campaign): Promise<void> {
  await db.query(
    `UPDATE campaigns SET name = $3, context = $4, schedule = $5, attempts = $6, provider = $7, provider_config = $8,
            max_concurrent = $9, results = $10, updated_at = $11, pacing = $12, fallback = $13, compliance = $14
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
      campaign.results,
      campaign.updatedAt,
      campaign.pacing,
      campaign.fallback,
      campaign.compliance,
    ],
  )
}

/** The organization's campaigns that name `campaignId` as their fallback step. */
export async function campaignsFallingBackTo(db: Queryable, orgId: string, campaignId: string): Promise<string[]> {
  const rows = await db.query<{ id: string }>(`SELECT id FROM campaigns WHERE org_id = $1 AND fallback->>'campaign_id' = $2 ORDER BY id`, [orgId, campaignId])
  return rows.map((row) => row.id)
}

/** What a task needs of the campaign it falls back to: its schedule, read by id within the organization. */
export async function findFallbackSchedules(db: Queryable, wanted: readonly { orgId: string; campaignId: string }[]): Promise<Map<string, Schedule>> {
  if (wanted.length === 0) return new Map()
  const rows = await db.query<{ id: string; schedule: Schedule }>(
    `SELECT c.id, c.schedule FROM campaigns c JOIN unnest($1::text[], $2::text[]) AS v(org_id, id) ON c.id = v.id AND c.org_id = v.org_id`,
    [wanted.map((w) => w.orgId), wanted.map((w) => w.campaignId)],
  )
  return new Map(rows.map((row) => [row.id, row.schedule]))
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

/**
 * Every organization's Twilio SMS campaigns a text to this number reached:
 * those sending from it, or through the Messaging Service it came in by.
 */
export async function findTextCampaignsByNumber(db: Queryable, number: string, messagingServiceSid: string | undefined): Promise<Campaign[]> {
  const rows = await db.query<CampaignRow>(
    `SELECT ${COLUMNS} FROM campaigns
     WHERE provider = 'twilio' AND channel = 'sms'
       AND (provider_config->>'from' = $1 OR provider_config->>'messaging_service_sid' = $2)
     ORDER BY id`,
    [number, messagingServiceSid ?? null],
  )
  return rows.map(toCampaign)
}

/** Every organization's Twilio SMS campaigns of an account. */
export async function findTextCampaignsByAccount(db: Queryable, accountSid: string): Promise<Campaign[]> {
  const rows = await db.query<CampaignRow>(
    `SELECT ${COLUMNS} FROM campaigns WHERE provider = 'twilio' AND channel = 'sms' AND provider_config->>'account_sid' = $1 ORDER BY id`,
    [accountSid],
  )
  return rows.map(toCampaign)
}

/**
 * The voice campaigns a call to this number (or the provider's id of it) is
 * for: those of the provider whose provider_config names it in `field`, and,
 * when an organization names it as its callback number (store/callbackNumbers.ts),
 * every campaign of that organization on the provider, the one the number
 * is answered through first. Campaigns are few (a read of them all costs
 * less than keeping an index current for every provider's field).
 */
export async function findCampaignsByNumber(db: Queryable, provider: Provider, field: string, number: string): Promise<Campaign[]> {
  const rows = await db.query<CampaignRow>(
    `WITH named AS (SELECT org_id, campaign_id FROM callback_numbers WHERE provider = $1 AND number = $3)
     SELECT ${COLUMNS} FROM campaigns
     WHERE provider = $1 AND channel = 'voice' AND (provider_config->>$2 = $3 OR org_id IN (SELECT org_id FROM named))
     ORDER BY id IN (SELECT campaign_id FROM named) DESC, id`,
    [provider, field, number],
  )
  return rows.map(toCampaign)
}

/** Which of an organization's campaigns: one by id, or a routing key's, on one channel or on all of them. */
export type CampaignSelection = { id: string } | { routingKey: string; channel?: Channel }

/** The condition on `campaigns` for $1 (organization) and $2..$4 from {@link selectionParams}. */
const SELECTED = `org_id = $1 AND ($2::text IS NULL OR id = $2) AND ($3::text IS NULL OR routing_key = $3) AND ($4::text IS NULL OR channel = $4)`

const selectionParams = (selection: CampaignSelection) =>
  'id' in selection ? [selection.id, null, null] : [null, selection.routingKey, selection.channel ?? null]

/** Pauses the selected campaigns; one paused already keeps the time it was paused at. Returns them as they now are, by channel. */
export async function pauseCampaigns(db: Queryable, orgId: string, selection: CampaignSelection, now: number): Promise<Campaign[]> {
  const rows = await db.query<CampaignRow>(
    `WITH paused AS (UPDATE campaigns SET paused_at = coalesce(paused_at, $5) WHERE ${SELECTED} RETURNING ${COLUMNS})
     SELECT * FROM paused ORDER BY channel`,
    [orgId, ...selectionParams(selection), new Date(now)],
  )
  return rows.map(toCampaign)
}

/**
 * Resumes the selected campaigns and returns them as they now are, by
 * channel, with whether any was paused: if one was, `notify` is sent as this
 * commits, so that worker processes start its due tasks at once.
 */
export async function resumeCampaigns(
  db: Queryable,
  orgId: string,
  selection: CampaignSelection,
  /** A notification the commit sends, when other processes are to hear of the tasks due again. */
  notify?: { channel: string; payload: string },
): Promise<{ campaigns: Campaign[]; resumed: boolean }> {
  const rows = await db.query<CampaignRow & { was_paused: boolean }>(
    // Locked to read whether each was paused as this commits, not as a concurrent pause or resume left it.
    `WITH selected AS (
       SELECT id AS campaign_id, paused_at AS was_paused_at FROM campaigns WHERE ${SELECTED} FOR UPDATE
     ), resumed AS (
       UPDATE campaigns SET paused_at = NULL FROM selected WHERE id = selected.campaign_id
       RETURNING ${COLUMNS}, was_paused_at IS NOT NULL AS was_paused
     ), notified AS (
       -- Sent with the commit rather than as a NOTIFY of its own, as the trigger intake does.
       SELECT pg_notify($5, $6) WHERE $5 <> '' AND EXISTS (SELECT 1 FROM resumed WHERE was_paused)
     )
     SELECT resumed.* FROM resumed CROSS JOIN (SELECT count(*) FROM notified) AS told ORDER BY channel`,
    [orgId, ...selectionParams(selection), notify?.channel ?? '', notify?.payload ?? ''],
  )
  return { campaigns: rows.map(toCampaign), resumed: rows.some((row) => row.was_paused) }
}
