/** Interactions: one row per attempt to converse, recorded before the provider is asked. */
import type { Provider } from '../domain/campaignSettings.ts'
import type { FinalizedInteraction } from '../domain/events.ts'
import type { Channel, Direction, ExternalId, Interaction, InteractionOutcome, JsonObject } from '../domain/types.ts'
import type { Queryable } from './database.ts'
import { iso, isoOrNull } from './rows.ts'
import { TASK_FOR_UPDATE_COLUMNS, type TaskForUpdate, type TaskForUpdateRow, toTaskForUpdate } from './tasks.ts'

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
  providerRef: row.provider_ref,
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

/**
 * Records an interaction as starting: the provider is asked only once this is
 * committed. Its task, if it has one, names it (migration 023).
 */
export async function insertInteraction(tx: Queryable, interaction: NewInteraction): Promise<void> {
  await tx.query(
    `WITH made AS (
       INSERT INTO interactions (id, org_id, task_id, campaign_id, channel, provider, provider_config, direction, attempt, status,
                                 to_phone, test_mode, settle_at, started_by, started_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'starting', $10, $11, $12, $13, $14)
       RETURNING id, task_id
     )
     UPDATE tasks SET interaction_ids = tasks.interaction_ids || made.id FROM made WHERE tasks.id = made.task_id`,
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

/**
 * What became of starts asked of providers, in one statement: a start the
 * provider confirmed (`providerRef`) makes its interaction active, known by
 * that reference from now on; a start whose result is unknown (no reference)
 * waits for the provider's word. Either way the interaction is settled at
 * `settleAt` at the latest. Nothing changes for one no longer starting (a
 * report confirmed or finalized it meanwhile).
 */
export async function recordStarts(db: Queryable, starts: readonly { id: string; providerRef: string | null; settleAt: number }[]): Promise<void> {
  if (starts.length === 0) return
  await db.query(
    `UPDATE interactions i
     SET status = CASE WHEN v.provider_ref IS NULL THEN i.status ELSE 'active' END,
         provider_ref = coalesce(v.provider_ref, i.provider_ref), settle_at = v.settle_at
     FROM unnest($1::text[], $2::text[], $3::timestamptz[]) AS v(id, provider_ref, settle_at)
     WHERE i.id = v.id AND i.status || '' = 'starting'`,
    [starts.map((s) => s.id), starts.map((s) => s.providerRef), starts.map((s) => new Date(s.settleAt))],
  )
}

/** A provider's word on an interaction that is not over (nothing, once it is). */
export async function recordProviderStatus(db: Queryable, id: string, status: string): Promise<void> {
  await db.query(`UPDATE interactions SET provider_status = $2 WHERE id = $1 AND status <> 'finalized'`, [id, status])
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
 * another. The earliest due are read campaign by campaign from the index of
 * running interactions, then locked by id, skipping those another claim
 * holds.
 */
export async function claimInteractionsToSettle(db: Queryable, now: number, leaseMs: number, limit: number): Promise<InteractionWithConfig[]> {
  const rows = await db.query<WithConfigRow>(
    `WITH claimed AS (
       UPDATE interactions SET settle_at = $2
       WHERE id = ANY(ARRAY(
         SELECT id FROM interactions
         WHERE id = ANY(ARRAY(
             SELECT due.id FROM campaigns c
             CROSS JOIN LATERAL (
               SELECT id, settle_at FROM interactions
               WHERE campaign_id = c.id AND status <> 'finalized' AND settle_at <= $1
               ORDER BY settle_at
               LIMIT $3) due
             ORDER BY due.settle_at
             LIMIT $3))
           AND status || '' <> 'finalized' AND settle_at <= $1
         FOR UPDATE SKIP LOCKED))
       RETURNING ${WITH_CONFIG})
     SELECT * FROM claimed`,
    [new Date(now), new Date(now + leaseMs), limit],
  )
  return rows.map(toWithConfig)
}

/** When the earliest running interaction is due to be settled: the least of each campaign's first. */
export async function nextSettleAt(db: Queryable): Promise<number | undefined> {
  const rows = await db.query<{ settle_at: Date | null }>(
    `SELECT min(next.settle_at) AS settle_at FROM campaigns c
     CROSS JOIN LATERAL (SELECT settle_at FROM interactions WHERE campaign_id = c.id AND status <> 'finalized' ORDER BY settle_at LIMIT 1) next`,
  )
  return rows[0]?.settle_at?.getTime()
}

/** An outcome to write on a running interaction. */
export interface InteractionEnd {
  id: string
  outcome: InteractionOutcome
  endedAt: number
  durationS: number | null
  /** Only if its start is still unconfirmed (a settlement that asked the provider nothing). */
  onlyIfStarting: boolean
  /** Its provider's reference, when not recorded before; null keeps the one recorded. */
  providerRef: string | null
}

/** An interaction just finalized, with its task (if it has one) as it stood. */
export interface FinalizedWithTask {
  interaction: FinalizedInteraction
  task: TaskForUpdate | null
}

/**
 * Finalizes running interactions with their outcomes, in one statement,
 * locking them in id order. Returns those finalized, each with its task as
 * the statement read it (not locked: a task whose interaction runs changes
 * only by a cancellation, which the statements that move it on check for).
 * One already over (providers repeat their reports, and only the first
 * counts), or, with `onlyIfStarting`, one whose start has been confirmed
 * meanwhile, is left out. The ids must be distinct.
 */
export async function finalizeInteractions(tx: Queryable, ends: readonly InteractionEnd[]): Promise<FinalizedWithTask[]> {
  if (ends.length === 0) return []
  const sorted = ends.toSorted((a, b) => (a.id < b.id ? -1 : 1))
  const rows = await tx.query<
    {
      id: string
      org_id: string
      campaign_id: string
      to_phone: string
      routing_key: string
      channel: Channel
      provider: Provider
      direction: Direction
      attempt: number | null
      outcome: InteractionOutcome
      test_mode: boolean
      started_at: Date
      ended_at: Date
      duration_s: number | null
    } & ({ task_id: null } | TaskForUpdateRow)
  >(
    `WITH ends AS (
       SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::int[], $5::boolean[], $6::text[])
         AS v(id, outcome, ended_at, duration_s, only_if_starting, provider_ref)
     ), finalized AS (
       -- Each row is locked as it is updated, in id order (the ids come sorted, and whichever side of
       -- the join the primary key's scan is on, rows come out in that order), so that two settlements
       -- never wait for each other in a circle; a lock taken beforehand was one more WAL record per row.
       UPDATE interactions i SET status = 'finalized', outcome = v.outcome, ended_at = greatest(v.ended_at, i.started_at),
                                 duration_s = v.duration_s, settle_at = NULL, provider_ref = coalesce(v.provider_ref, i.provider_ref)
       FROM ends v
       WHERE i.id = v.id AND i.id = ANY($1::text[])
         AND (i.status || '' = 'starting' OR (i.status || '' = 'active' AND NOT v.only_if_starting))
       RETURNING i.*)
     SELECT f.id, f.org_id, f.campaign_id, f.to_phone, ic.routing_key, f.channel, f.provider, f.direction, f.attempt, f.outcome, f.test_mode,
            f.started_at, f.ended_at, f.duration_s, ${TASK_FOR_UPDATE_COLUMNS}
     FROM finalized f
     JOIN campaigns ic ON ic.id = f.campaign_id
     LEFT JOIN tasks t ON t.id = f.task_id
     LEFT JOIN triggers tr ON tr.id = t.trigger_id
     LEFT JOIN campaigns c ON c.id = t.campaign_id
     ORDER BY f.id`,
    [
      sorted.map((e) => e.id),
      sorted.map((e) => e.outcome),
      sorted.map((e) => new Date(e.endedAt)),
      sorted.map((e) => e.durationS),
      sorted.map((e) => e.onlyIfStarting),
      sorted.map((e) => e.providerRef),
    ],
  )
  return rows.map((row) => {
    const task = row.task_id === null ? null : toTaskForUpdate(row)
    return {
      interaction: {
        id: row.id,
        orgId: row.org_id,
        campaignId: row.campaign_id,
        toPhone: row.to_phone,
        taskId: task?.id ?? null,
        triggerId: task?.triggerId ?? null,
        routingKey: row.routing_key,
        channel: row.channel,
        provider: row.provider,
        direction: row.direction,
        attempt: row.attempt,
        outcome: row.outcome,
        testMode: row.test_mode,
        startedAt: iso(row.started_at),
        endedAt: iso(row.ended_at),
        durationS: row.duration_s,
        ids: task?.ids ?? null,
      },
      task,
    }
  })
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
