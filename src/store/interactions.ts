/** Interactions: one row per attempt to converse, recorded before the provider is asked. */
import type { Provider } from '../domain/campaignSettings.ts'
import type { Channel, Direction, ExternalId, Interaction, InteractionOutcome, JsonObject } from '../domain/types.ts'
import type { Queryable } from './database.ts'
import { iso, isoOrNull } from './rows.ts'

export interface InteractionRow {
  id: string
  org_id: string
  task_id: string | null
  campaign_id: string
  channel: Channel
  provider: Provider
  provider_config: JsonObject
  direction: Direction
  attempt: number | null
  status: Interaction['status']
  to_phone: string
  test_mode: boolean
  provider_ref: string | null
  provider_status: string | null
  outcome: InteractionOutcome | null
  settle_at: Date | null
  started_at: Date
  ended_at: Date | null
  duration_s: number | null
}

export const toInteraction = (row: InteractionRow): Interaction => ({
  id: row.id,
  taskId: row.task_id,
  channel: row.channel,
  provider: row.provider,
  direction: row.direction,
  attempt: row.attempt,
  status: row.status,
  outcome: row.outcome,
  testMode: row.test_mode,
  startedAt: iso(row.started_at),
  endedAt: isoOrNull(row.ended_at),
  durationS: row.duration_s,
})

export interface NewInteraction {
  id: string
  orgId: string
  taskId: string | null
  campaignId: string
  channel: Channel
  provider: Provider
  /** The campaign's provider_config now: the interaction keeps it. */
  providerConfig: JsonObject
  direction: Direction
  attempt: number | null
  /** The person's phone: called or written to, or (inbound) the sender. */
  toPhone: string
  testMode: boolean
  /** When it is settled if its start is never confirmed. */
  settleAt: number | null
  /** The dispatcher's worker; null for an inbound interaction. */
  startedBy: string | null
  startedAt: number
}

/** Records an interaction as starting: the provider is asked only once this is committed. */
export async function insertInteraction(tx: Queryable, interaction: NewInteraction): Promise<void> {
  await tx.query(
    `INSERT INTO interactions (id, org_id, task_id, campaign_id, channel, provider, provider_config, direction, attempt, status,
                               to_phone, test_mode, settle_at, started_by, started_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'starting', $10, $11, $12, $13, $14)`,
    [
      interaction.id,
      interaction.orgId,
      interaction.taskId,
      interaction.campaignId,
      interaction.channel,
      interaction.provider,
      interaction.providerConfig,
      interaction.direction,
      interaction.attempt,
      interaction.toPhone,
      interaction.testMode,
      interaction.settleAt === null ? null : new Date(interaction.settleAt),
      interaction.startedBy,
      new Date(interaction.startedAt),
    ],
  )
}

/** The provider has the interaction: from now on it is known by `providerRef` and settled at `settleAt` at the latest. */
export async function markStarted(db: Queryable, id: string, providerRef: string, settleAt: number): Promise<void> {
  await db.query(
    `UPDATE interactions SET status = 'active', provider_ref = $2, settle_at = $3 WHERE id = $1 AND status = 'starting'`,
    [id, providerRef, new Date(settleAt)],
  )
}

/** A provider's word on an interaction that is not over (nothing, once it is). */
export async function recordProviderStatus(db: Queryable, id: string, status: string): Promise<void> {
  await db.query(`UPDATE interactions SET provider_status = $2 WHERE id = $1 AND status <> 'finalized'`, [id, status])
}

/** A start whose result is unknown waits for the provider's word until `settleAt` (nothing, once it has come). */
export async function awaitConfirmation(db: Queryable, id: string, settleAt: number): Promise<void> {
  await db.query(`UPDATE interactions SET settle_at = $2 WHERE id = $1 AND status = 'starting'`, [id, new Date(settleAt)])
}

/** Records that a provider delivered this message; false when it had already. */
export async function recordProviderMessage(tx: Queryable, provider: Provider, messageId: string, at: number): Promise<boolean> {
  const rows = await tx.query(
    `INSERT INTO provider_messages (provider, message_id, received_at) VALUES ($1, $2, $3)
     ON CONFLICT DO NOTHING RETURNING message_id`,
    [provider, messageId, new Date(at)],
  )
  return rows.length === 1
}


/** An interaction with the provider settings it started with, for a provider callback or a settlement. */
export interface InteractionWithConfig {
  id: string
  orgId: string
  taskId: string | null
  campaignId: string
  channel: Channel
  provider: Provider
  status: Interaction['status']
  attempt: number | null
  providerRef: string | null
  providerStatus: string | null
  providerConfig: JsonObject
  /** The person's phone. */
  toPhone: string
  startedAt: number
}

type WithConfigRow = Pick<
  InteractionRow,
  | 'id'
  | 'org_id'
  | 'task_id'
  | 'campaign_id'
  | 'channel'
  | 'provider'
  | 'status'
  | 'attempt'
  | 'provider_ref'
  | 'provider_status'
  | 'provider_config'
  | 'to_phone'
  | 'started_at'
>

const toWithConfig = (row: WithConfigRow): InteractionWithConfig => ({
  id: row.id,
  orgId: row.org_id,
  taskId: row.task_id,
  campaignId: row.campaign_id,
  channel: row.channel,
  provider: row.provider,
  status: row.status,
  attempt: row.attempt,
  providerRef: row.provider_ref,
  providerStatus: row.provider_status,
  providerConfig: row.provider_config,
  toPhone: row.to_phone,
  startedAt: row.started_at.getTime(),
})

const WITH_CONFIG = `id, org_id, task_id, campaign_id, channel, provider, status, attempt, provider_ref, provider_status, provider_config,
                     to_phone, started_at`

export async function findInteractionWithConfig(db: Queryable, id: string): Promise<InteractionWithConfig | undefined> {
  const rows = await db.query<WithConfigRow>(`SELECT ${WITH_CONFIG} FROM interactions WHERE id = $1`, [id])
  return rows[0] && toWithConfig(rows[0])
}

/** The interaction a provider knows by `providerRef`. */
export async function findInteractionByProviderRef(
  db: Queryable,
  provider: Provider,
  providerRef: string,
): Promise<InteractionWithConfig | undefined> {
  const rows = await db.query<WithConfigRow>(`SELECT ${WITH_CONFIG} FROM interactions WHERE provider = $1 AND provider_ref = $2`, [
    provider,
    providerRef,
  ])
  return rows[0] && toWithConfig(rows[0])
}

/**
 * Claims interactions that are due to be settled (no final report by their
 * settle time, or a start that was never confirmed): their settle time moves
 * `leaseMs` on, so that a worker that dies while settling one leaves it to
 * another.
 */
export async function claimInteractionsToSettle(db: Queryable, now: number, leaseMs: number, limit: number): Promise<InteractionWithConfig[]> {
  const rows = await db.query<WithConfigRow>(
    `WITH claimed AS (
       UPDATE interactions SET settle_at = $2
       WHERE id IN (
         SELECT id FROM interactions
         WHERE status <> 'finalized' AND settle_at <= $1
         ORDER BY settle_at
         LIMIT $3
         FOR UPDATE SKIP LOCKED)
       RETURNING ${WITH_CONFIG})
     SELECT * FROM claimed`,
    [new Date(now), new Date(now + leaseMs), limit],
  )
  return rows.map(toWithConfig)
}

/** When the earliest running interaction is due to be settled. */
export async function nextSettleAt(db: Queryable): Promise<number | undefined> {
  const rows = await db.query<{ settle_at: Date | null }>(`SELECT min(settle_at) AS settle_at FROM interactions WHERE status <> 'finalized'`)
  return rows[0]?.settle_at?.getTime()
}

/** What an interaction.finalized event reports, read as the interaction is finalized. */
export interface FinalizedInteraction {
  id: string
  orgId: string
  /** The person's phone. */
  toPhone: string
  taskId: string | null
  triggerId: string | null
  routingKey: string
  channel: Channel
  direction: Direction
  attempt: number | null
  outcome: InteractionOutcome
  testMode: boolean
  startedAt: string
  endedAt: string
  durationS: number | null
  ids: ExternalId[] | null
}

/**
 * Finalizes a running interaction with its outcome. Undefined when it was
 * already over (providers repeat their reports, and only the first counts),
 * or, with `onlyIfStarting`, when its start has been confirmed meanwhile.
 */
export async function finalizeInteraction(
  tx: Queryable,
  id: string,
  outcome: InteractionOutcome,
  endedAt: number,
  durationS: number | null,
  onlyIfStarting = false,
): Promise<FinalizedInteraction | undefined> {
  const rows = await tx.query<{
    id: string
    org_id: string
    to_phone: string
    task_id: string | null
    trigger_id: string | null
    routing_key: string
    channel: Channel
    direction: Direction
    attempt: number | null
    outcome: InteractionOutcome
    test_mode: boolean
    started_at: Date
    ended_at: Date
    duration_s: number | null
    ids: ExternalId[] | null
  }>(
    `WITH finalized AS (
       UPDATE interactions SET status = 'finalized', outcome = $2, ended_at = greatest($3, started_at), duration_s = $4, settle_at = NULL
       WHERE id = $1 AND (status = 'starting' OR (status = 'active' AND NOT $5::boolean))
       RETURNING *)
     SELECT f.id, f.org_id, f.to_phone, f.task_id, t.trigger_id, c.routing_key, f.channel, f.direction, f.attempt, f.outcome, f.test_mode,
            f.started_at, f.ended_at, f.duration_s, tr.ids
     FROM finalized f
     JOIN campaigns c ON c.id = f.campaign_id
     LEFT JOIN tasks t ON t.id = f.task_id
     LEFT JOIN triggers tr ON tr.id = t.trigger_id`,
    [id, outcome, new Date(endedAt), durationS, onlyIfStarting],
  )
  const row = rows[0]
  return (
    row && {
      id: row.id,
      orgId: row.org_id,
      toPhone: row.to_phone,
      taskId: row.task_id,
      triggerId: row.trigger_id,
      routingKey: row.routing_key,
      channel: row.channel,
      direction: row.direction,
      attempt: row.attempt,
      outcome: row.outcome,
      testMode: row.test_mode,
      startedAt: iso(row.started_at),
      endedAt: iso(row.ended_at),
      durationS: row.duration_s,
      ids: row.ids,
    }
  )
}

/**
 * The latest outbound interaction of these campaigns with a phone, running
 * ones first, for a reply that names no message.
 */
export async function findLatestInteractionWith(
  db: Queryable,
  campaignIds: string[],
  phone: string,
): Promise<InteractionWithConfig | undefined> {
  const rows = await db.query<WithConfigRow>(
    `SELECT ${WITH_CONFIG} FROM interactions
     WHERE campaign_id = ANY($1::text[]) AND to_phone = $2 AND direction = 'outbound'
     ORDER BY status = 'finalized', started_at DESC LIMIT 1`,
    [campaignIds, phone],
  )
  return rows[0] && toWithConfig(rows[0])
}
