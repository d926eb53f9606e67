/** Interactions: one row per attempt to converse, recorded before the provider is asked. */
import type { Provider } from '../domain/campaignSettings.ts'
import { type ConversationResult, interactionResult, type TranscriptTurn } from '../domain/conversationResult.ts'
import type { FinalizedInteraction } from '../domain/events.ts'
import { CUSTOMER_SERVICE_WINDOW_MS } from '../domain/messagingWindow.ts'
import { scheduleZones } from '../domain/schedule.ts'
import type { Channel, Contact, Direction, ExternalId, Handoff, InteractionContext, InteractionOutcome, InteractionStatus, JsonObject } from '../domain/types.ts'
import type { Database, Queryable } from './database.ts'
import { distinctKeys } from './distinctKeys.ts'
import { listSessionMessages } from './sessionMessages.ts'
import { interactionColumns, type InteractionRow, iso, toInteraction } from './rows.ts'
import { TASK_CONTACT, TASK_CONTEXT, TASK_FOR_UPDATE_COLUMNS, type TaskForUpdate, type TaskForUpdateRow, toTaskForUpdate } from './tasks.ts'

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
export async function recordStarts(
  db: Queryable,
  starts: readonly { id: string; providerRef: string | null; settleAt: number; handoff?: Handoff }[],
): Promise<void> {
  if (starts.length === 0) return
  await db.query(
    `UPDATE interactions i
     SET status = CASE WHEN v.provider_ref IS NULL THEN i.status ELSE 'active' END,
         provider_ref = coalesce(v.provider_ref, i.provider_ref), settle_at = v.settle_at, handoff = coalesce(v.handoff::jsonb, i.handoff)
     FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::text[]) AS v(id, provider_ref, settle_at, handoff)
     WHERE i.id = v.id AND i.status || '' = 'starting'`,
    [
      starts.map((s) => s.id),
      starts.map((s) => s.providerRef),
      starts.map((s) => new Date(s.settleAt)),
      starts.map((s) => (s.handoff === undefined ? null : JSON.stringify(s.handoff))),
    ],
  )
}

/** A provider's word on an interaction that is not over (nothing, once it is). */
export async function recordProviderStatus(db: Queryable, id: string, status: string): Promise<void> {
  await db.query(`UPDATE interactions SET provider_status = $2 WHERE id = $1 AND status <> 'finalized'`, [id, status])
}

/**
 * Adds a turn of the business's side (a message the client sent in the
 * conversation) to the transcript of an interaction not finalized yet: a
 * conversation kept open carries both sides. One finalized is left as it
 * was reported.
 */
export async function addAgentTurn(db: Queryable, id: string, turn: TranscriptTurn): Promise<void> {
  await db.query(`UPDATE interactions SET replies = coalesce(replies, '[]'::jsonb) || $2::jsonb WHERE id = $1 AND status <> 'finalized'`, [id, JSON.stringify([turn])])
}

/**
 * Records that a provider delivered this message, to the interaction it went
 * to (it is kept, and deleted, with that interaction; one that went to none,
 * a carriers' keyword the service acted on, is kept a week: store/history.ts);
 * false when it had already.
 */
export async function recordProviderMessage(tx: Queryable, provider: Provider, messageId: string, interactionId: string | null, at: number): Promise<boolean> {
  const rows = await tx.query(
    `INSERT INTO provider_messages (provider, message_id, received_at, interaction_id) VALUES ($1, $2, $3, $4)
     ON CONFLICT DO NOTHING RETURNING message_id`,
    [provider, messageId, new Date(at), interactionId],
  )
  return rows.length === 1
}

/**
 * Keeps each interaction's messaging window open until at least `closesAt`
 * (domain/messagingWindow.ts: a later close it already has stays), and
 * answers, by id, when each now closes.
 */
export async function keepWindowsOpen(tx: Queryable, windows: readonly { id: string; closesAt: number }[]): Promise<Map<string, number>> {
  if (windows.length === 0) return new Map()
  const rows = await tx.query<{ id: string; window_closes_at: Date }>(
    `UPDATE interactions i SET window_closes_at = greatest(i.window_closes_at, w.closes_at)
     FROM (SELECT id, max(closes_at) AS closes_at FROM unnest($1::text[], $2::timestamptz[]) AS v(id, closes_at) GROUP BY id) w
     WHERE i.id = w.id
     RETURNING i.id, i.window_closes_at`,
    [windows.map((window) => window.id), windows.map((window) => new Date(window.closesAt))],
  )
  return new Map(rows.map((row) => [row.id, row.window_closes_at.getTime()]))
}

/** An interaction with the provider settings it started with, for a provider callback or a settlement. */
export interface InteractionWithConfig {
  id: string
  orgId: string
  taskId: string | null
  campaignId: string
  channel: Channel
  provider: Provider
  status: InteractionStatus
  attempt: number | null
  providerRef: string | null
  providerStatus: string | null
  providerConfig: JsonObject
  /** The person's phone. */
  toPhone: string
  startedAt: number
  /** How it was handed over (handoff.mode), if it was. */
  handoffMode: Handoff['mode'] | null
}

type WithConfigRow = Pick<InteractionRow, 'id' | 'org_id' | 'task_id' | 'campaign_id' | 'channel' | 'provider' | 'status' | 'attempt' | 'provider_ref' | 'started_at'> & {
  provider_status: string | null
  provider_config: JsonObject
  to_phone: string
  handoff_mode: Handoff['mode'] | null
}

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
  handoffMode: row.handoff_mode,
})

const WITH_CONFIG = `id, org_id, task_id, campaign_id, channel, provider, status, attempt, provider_ref, provider_status, provider_config,
                     to_phone, started_at, handoff->>'mode' AS handoff_mode`

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
 * The interaction a provider's callback about a call is of, in one read (a
 * start's answer may be recorded at any moment, between two reads): the one
 * the provider knows by `providerRef`; else the one the call's metadata
 * names (`namedId`), of this provider and with no provider_ref yet (its
 * start's answer is on its way).
 */
export async function findCalledInteraction(
  db: Queryable,
  provider: Provider,
  providerRef: string,
  namedId: string | undefined,
): Promise<InteractionWithConfig | undefined> {
  // Two index probes, the second only when the first finds nothing (an Append stops at its LIMIT): the one
  // statement with an OR was a bitmap scan of both indexes and a sort, 75 µs of PostgreSQL's time a report end to end.
  const rows = await db.query<WithConfigRow>(
    `(SELECT ${WITH_CONFIG} FROM interactions WHERE provider = $1 AND provider_ref = $2)
     UNION ALL
     (SELECT ${WITH_CONFIG} FROM interactions WHERE id = $3 AND provider = $1 AND provider_ref IS NULL)
     LIMIT 1`,
    [provider, providerRef, namedId ?? null],
  )
  return rows[0] && toWithConfig(rows[0])
}

/** The campaigns with interactions running (`running`), from the index they are settled by. */
const RUNNING_CAMPAIGNS = distinctKeys('running', { table: 'interactions', column: 'campaign_id', where: "status <> 'finalized'" })

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
             WITH RECURSIVE ${RUNNING_CAMPAIGNS}
             SELECT due.id FROM running
             CROSS JOIN LATERAL (
               SELECT id, settle_at FROM interactions
               WHERE campaign_id = running.id AND status <> 'finalized' AND settle_at <= $1
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
    `WITH RECURSIVE ${RUNNING_CAMPAIGNS}
     SELECT min(next.settle_at) AS settle_at FROM running
     CROSS JOIN LATERAL (SELECT settle_at FROM interactions WHERE campaign_id = running.id AND status <> 'finalized' ORDER BY settle_at LIMIT 1) next`,
  )
  return rows[0]?.settle_at?.getTime()
}

/**
 * An outcome to write on a running interaction, or the end of the wait of one
 * that ended for its result (`closesWait`), or the person's messages to add
 * to one that waits (`turns`).
 */
export interface InteractionEnd {
  id: string
  /** Null for the end of a wait only: the outcome was written when the interaction ended. */
  outcome: InteractionOutcome | null
  endedAt: number
  durationS: number | null
  /** Only if its start is still unconfirmed (a settlement that asked the provider nothing). */
  onlyIfStarting: boolean
  /** Its provider's reference, when not recorded before; null keeps the one recorded. */
  providerRef: string | null
  /** A result its conversation reported with the end; null keeps the one recorded (if any). */
  result: ConversationResult | null
  /**
   * What the person wrote, added to what they wrote before; null for none. To
   * an interaction that waits for its result, they are added and it waits on.
   */
  turns: TranscriptTurn[] | null
  /** A conversation took place: the interaction waits for its result if its campaign says so and none has come. */
  mayWaitForResult: boolean
  /** An interaction that waits for its result waits no more: it is finalized now. */
  closesWait: boolean
}

/** An interaction just finalized (or, `ended`, waiting for its result), with its task (if it has one) as it stood. */
export interface FinalizedWithTask {
  status: 'ended' | 'finalized'
  interaction: FinalizedInteraction
  task: TaskForUpdate | null
}

/** The campaign's wait for results of interaction `i`, in seconds. */
const RESULT_WAIT_S = `(SELECT coalesce((c.results->>'wait_s')::int, 0) FROM campaigns c WHERE c.id = i.campaign_id)`
/** The longest conversation of interaction `i`'s campaign, in seconds (results.conversation_s), null for none. */
const CONVERSATION_S = `(SELECT (c.results->>'conversation_s')::int FROM campaigns c WHERE c.id = i.campaign_id)`
/** The window a message of the person's opens on a message channel (domain/messagingWindow.ts): a conversation of interaction `i` ends with it. */
const WINDOW_AFTER = (at: string) =>
  `CASE WHEN i.channel <> 'voice' THEN ${at} + ${CUSTOMER_SERVICE_WINDOW_MS / 1000} * interval '1 second' END`
/**
 * Whether ending `v` makes running interaction `i` wait for its result: a
 * conversation took place, no result has come (with the end or before it),
 * and its campaign waits for one, or keeps its conversations open. In a
 * CASE, so that the campaign is read only when it matters.
 */
const STARTS_WAITING = `CASE WHEN v.may_wait AND v.result IS NULL AND i.result IS NULL THEN ${CONVERSATION_S} IS NOT NULL OR ${RESULT_WAIT_S} > 0 ELSE false END`
/**
 * When the wait `v` starts ends: a conversation kept open, its campaign's
 * conversation_s after the person's reply or their window's close, whichever
 * is first;
 * else results.wait_s from now.
 */
const WAIT_ENDS = `CASE WHEN ${CONVERSATION_S} IS NOT NULL THEN least(v.ended_at + ${CONVERSATION_S} * interval '1 second', ${WINDOW_AFTER('v.ended_at')})
                        ELSE $10::timestamptz + ${RESULT_WAIT_S} * interval '1 second' END`
/**
 * When the wait of interaction `i`, ended, ends once the person writes again
 * (`v`): a conversation kept open stays open to their new window's close,
 * within its length from their first reply (`i.ended_at`); never sooner than
 * it was (a message delivered late). Any other wait keeps its end.
 */
const WAIT_GOES_ON = `CASE WHEN ${CONVERSATION_S} IS NOT NULL
                           THEN greatest(i.settle_at, least(i.ended_at + ${CONVERSATION_S} * interval '1 second', ${WINDOW_AFTER('v.ended_at')}))
                           ELSE i.settle_at END`

/**
 * Finalizes running interactions with their outcomes, in one statement,
 * locking them in id order. Returns those finalized, each with its task as
 * the statement read it (not locked: a task whose interaction runs changes
 * only by a cancellation, which the statements that move it on check for).
 * One already over (providers repeat their reports, and only the first
 * counts), or, with `onlyIfStarting`, one whose start has been confirmed
 * meanwhile, is left out. The ids must be distinct.
 *
 * An interaction whose conversation took place, with no result yet, of a
 * campaign that waits for results, is not finalized but `ended`: its outcome
 * is written, and it is finalized when its result comes or its wait is over
 * (`closesWait`); what the person writes meanwhile is added to it. The result
 * and the person's messages an end carries are written with it.
 */
export async function finalizeInteractions(tx: Queryable, ends: readonly InteractionEnd[], now: number): Promise<FinalizedWithTask[]> {
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
      status: 'ended' | 'finalized'
      outcome: InteractionOutcome
      test_mode: boolean
      started_at: Date
      ended_at: Date
      duration_s: number | null
      result: ConversationResult | null
      replies: TranscriptTurn[] | null
    } & ({ task_id: null } | TaskForUpdateRow)
  >(
    // What each end reports besides its outcome goes as one JSON array (a text[] of results was escaped
    // by the driver and parsed twice by the server); a result the end carried is not read back.
    `WITH ends AS (
       SELECT v.*, x.value->'result' AS result, x.value->'turns' AS turns
       FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::int[], $5::boolean[], $6::text[], $8::boolean[], $9::boolean[])
         WITH ORDINALITY AS v(id, outcome, ended_at, duration_s, only_if_starting, provider_ref, may_wait, closes_wait, n)
       JOIN jsonb_array_elements($7::jsonb) WITH ORDINALITY AS x(value, n) ON x.n = v.n
     ), finalized AS (
       -- Each row is locked as it is updated, in id order (the ids come sorted, and whichever side of
       -- the join the primary key's scan is on, rows come out in that order), so that two settlements
       -- never wait for each other in a circle; a lock taken beforehand was one more WAL record per row.
       -- The right-hand sides read the row as it was: an interaction that ended keeps what it ended with.
       UPDATE interactions i
       SET status = CASE WHEN i.status = 'ended' THEN CASE WHEN v.closes_wait THEN 'finalized' ELSE 'ended' END
                         WHEN ${STARTS_WAITING} THEN 'ended' ELSE 'finalized' END,
           settle_at = CASE WHEN i.status = 'ended' THEN CASE WHEN v.closes_wait THEN NULL ELSE ${WAIT_GOES_ON} END
                            WHEN ${STARTS_WAITING} THEN ${WAIT_ENDS} END,
           outcome = CASE WHEN i.status = 'ended' THEN i.outcome ELSE v.outcome END,
           ended_at = CASE WHEN i.status = 'ended' THEN i.ended_at ELSE greatest(v.ended_at, i.started_at) END,
           duration_s = CASE WHEN i.status = 'ended' THEN i.duration_s ELSE v.duration_s END,
           provider_ref = coalesce(v.provider_ref, i.provider_ref),
           result = coalesce(v.result, i.result),
           replies = CASE WHEN v.turns IS NULL THEN i.replies ELSE coalesce(i.replies, '[]'::jsonb) || v.turns END
       FROM ends v
       WHERE i.id = v.id AND i.id = ANY($1::text[])
         AND CASE WHEN i.status || '' = 'ended' THEN v.closes_wait OR v.turns IS NOT NULL
                  WHEN v.outcome IS NULL THEN false
                  ELSE i.status || '' = 'starting' OR (i.status || '' = 'active' AND NOT v.only_if_starting) END
       RETURNING i.*)
     SELECT f.id, f.org_id, f.campaign_id, f.to_phone, ic.routing_key, f.channel, f.provider, f.direction, f.attempt, f.status, f.outcome,
            f.test_mode, f.started_at, f.ended_at, f.duration_s, CASE WHEN v.result IS NULL THEN f.result END AS result, f.replies,
            ${TASK_FOR_UPDATE_COLUMNS}
     FROM finalized f
     JOIN ends v ON v.id = f.id
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
      JSON.stringify(sorted.map((e) => ({ result: e.result ?? undefined, turns: e.turns ?? undefined }))),
      sorted.map((e) => e.mayWaitForResult),
      sorted.map((e) => e.closesWait),
      new Date(now),
    ],
  )
  const reported = new Map(sorted.map((e) => [e.id, e.result]))
  return rows.map((row) => {
    const task = row.task_id === null ? null : toTaskForUpdate(row)
    return {
      status: row.status,
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
        result: interactionResult(row.result ?? reported.get(row.id) ?? null, row.replies),
        localZone: task === null ? null : (scheduleZones(task.campaign.schedule, task.timezones)[0] ?? null),
      },
      task,
    }
  })
}

/**
 * The latest outbound interaction of these campaigns with a phone, running
 * ones first, for a reply that names no message: read from the triggers
 * sent to the number (triggers_by_phone), through their tasks, which name
 * their interactions, whichever campaign the trigger named (a fallback
 * step's interaction is of another campaign than its trigger's). (Looked for
 * among interactions by number, it was a scan of every organization's:
 * 232 ms among 2 million.)
 */
export async function findLatestInteractionWith(
  db: Queryable,
  campaigns: readonly { id: string; orgId: string }[],
  phone: string,
): Promise<InteractionWithConfig | undefined> {
  const rows = await db.query<WithConfigRow>(
    `SELECT ${WITH_CONFIG} FROM interactions
     WHERE id = ANY(ARRAY(
         SELECT unnest(t.interaction_ids) FROM triggers tr JOIN tasks t ON t.id = tr.task_id
         WHERE tr.org_id = ANY($2::text[]) AND tr.phone = $3))
       AND direction = 'outbound' AND campaign_id = ANY($1::text[])
     ORDER BY status = 'finalized', started_at DESC LIMIT 1`,
    [campaigns.map((campaign) => campaign.id), [...new Set(campaigns.map((campaign) => campaign.orgId))], phone],
  )
  return rows[0] && toWithConfig(rows[0])
}

interface ContextRow extends InteractionRow {
  to_phone: string
  settle_at: Date | null
  window_closes_at: Date | null
  routing_key: string
  trigger_id: string | null
  contact: Contact | null
  context: JsonObject | null
  timezones: string[] | null
  ids: ExternalId[] | null
}

/** An interaction with what its conversation is to know: its task's contact, context and ids; only the organization's, when one is given. */
export async function findInteractionContext(db: Queryable, id: string, orgId?: string): Promise<InteractionContext | undefined> {
  const rows = await db.query<ContextRow>(
    `SELECT ${interactionColumns('i', { results: true })}, i.to_phone, i.settle_at, i.window_closes_at,
            c.routing_key, t.trigger_id, ${TASK_CONTACT} AS contact, ${TASK_CONTEXT} AS context, t.timezones, tr.ids
     FROM interactions i
     JOIN campaigns c ON c.id = i.campaign_id
     LEFT JOIN tasks t ON t.id = i.task_id
     LEFT JOIN triggers tr ON tr.id = t.trigger_id
     WHERE i.id = $1${orgId === undefined ? '' : ' AND i.org_id = $2'}`,
    orgId === undefined ? [id] : [id, orgId],
  )
  const row = rows[0]
  if (row === undefined) return undefined
  const interaction = toInteraction(row)
  const person = row.contact ?? undefined
  return {
    interaction: { ...interaction, result: interaction.result ?? null },
    orgId: row.org_id,
    routingKey: row.routing_key,
    triggerId: row.trigger_id,
    ids: row.ids ?? [],
    // Erased, an interaction keeps no number.
    contact:
      row.to_phone === ''
        ? null
        : { first_name: person?.first_name, last_name: person?.last_name, language: person?.language, phone: row.to_phone },
    context: row.context ?? {},
    timezones: row.timezones ?? [],
    resultDueBy: row.status === 'ended' && row.settle_at !== null ? iso(row.settle_at) : null,
    windowClosesAt: row.window_closes_at === null ? null : iso(row.window_closes_at),
    messages: interaction.channel === 'voice' ? [] : await listSessionMessages(db, interaction.id),
  }
}

/** An interaction as a result for it finds it: locked until the transaction ends. */
export interface InteractionForResult {
  status: InteractionStatus
  taskId: string | null
  /** Its person was erased: it keeps nothing of theirs, and takes nothing more. */
  erased: boolean
  /** The result reported so far (not what the person wrote). */
  result: ConversationResult | null
}

/** Locks the organization's interaction for a result (in the order a settlement locks: the interaction, then its task). */
export async function lockInteractionForResult(tx: Queryable, orgId: string, id: string): Promise<InteractionForResult | undefined> {
  const rows = await tx.query<{ status: InteractionStatus; task_id: string | null; result: ConversationResult | null; erased: boolean }>(
    `SELECT status, task_id, result, to_phone = '' AS erased FROM interactions WHERE id = $1 AND org_id = $2 FOR UPDATE`,
    [id, orgId],
  )
  const row = rows[0]
  return row && { status: row.status, taskId: row.task_id, result: row.result, erased: row.erased }
}

/** Writes the result of an interaction the caller holds, replacing any before it. */
export async function writeResult(tx: Queryable, id: string, result: ConversationResult): Promise<void> {
  await tx.query('UPDATE interactions SET result = $2 WHERE id = $1', [id, JSON.stringify(result)])
}

/**
 * Keeps a result for an interaction that has not ended yet (its end then
 * carries it); false when it has ended meanwhile, and nothing was written.
 */
export async function keepResultForEnd(db: Queryable, id: string, result: ConversationResult): Promise<boolean> {
  const rows = await db.query(`UPDATE interactions SET result = $2 WHERE id = $1 AND status || '' IN ('starting', 'active') RETURNING id`, [id, JSON.stringify(result)])
  return rows.length === 1
}

/** Records how an answered call was handed to its conversation. */
export async function recordHandoff(db: Queryable, id: string, handoff: Handoff): Promise<void> {
  await db.query('UPDATE interactions SET handoff = $2 WHERE id = $1', [id, JSON.stringify(handoff)])
}

/** What an interaction had before it was claimed for a voicemail message, to be put back when the message could not be left. */
export interface BeforeVoicemail {
  handoff: Handoff | null
  providerStatus: string | null
}

/**
 * Records `handoff` (mode `voicemail`) and `providerStatus` on an
 * interaction still running that has no handoff of that mode yet, and
 * answers what they replaced; undefined when nothing was recorded (already
 * taken for the voicemail, or over): so that of two deliveries of one
 * callback, one leaves the message.
 */
export async function claimVoicemailHandoff(db: Database, id: string, handoff: Handoff, providerStatus: string): Promise<BeforeVoicemail | undefined> {
  return db.transaction(async (tx) => {
    const rows = await tx.query<{ handoff: Handoff | null; provider_status: string | null; status: string }>(
      'SELECT handoff, provider_status, status FROM interactions WHERE id = $1 FOR UPDATE',
      [id],
    )
    const row = rows[0]
    if (row === undefined || row.status === 'finalized' || row.handoff?.mode === 'voicemail') return undefined
    await tx.query('UPDATE interactions SET handoff = $2, provider_status = $3 WHERE id = $1', [id, JSON.stringify(handoff), providerStatus])
    return { handoff: row.handoff, providerStatus: row.provider_status }
  })
}

/** Puts back what {@link claimVoicemailHandoff} replaced. */
export async function releaseVoicemailHandoff(db: Queryable, id: string, before: BeforeVoicemail): Promise<void> {
  await db.query(`UPDATE interactions SET handoff = $2, provider_status = $3 WHERE id = $1 AND handoff->>'mode' = 'voicemail'`, [
    id,
    before.handoff === null ? null : JSON.stringify(before.handoff),
    before.providerStatus,
  ])
}
