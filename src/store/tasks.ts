/**
 * Tasks as the dispatcher and the client endpoints see them. The dispatcher
 * takes due tasks in a transaction of its own: it locks them (rows another
 * dispatcher holds are skipped, not waited for), decides, and writes what it
 * decided before it commits. A dispatcher that dies before committing holds
 * nothing: its locks go with its connection, and the tasks are due as before.
 */
import type { AttemptPolicy, FallbackSettings, PacingSettings, Provider, Schedule } from '../domain/campaignSettings.ts'
import { capIsOn, type ContactCap } from '../domain/contactCap.ts'
import type { ComplianceSettings } from '../domain/consent.ts'
import type { DecisionReason, RecordedDecision } from '../domain/contactability.ts'
import type { TaskStep } from '../domain/fallback.ts'
import { type Channel, type Contact, type ExternalId, type Interaction, type JsonObject, type Task, TASK_OUTCOMES, type TaskOutcome, type TaskHold, type TaskStatus, type ZoneSource } from '../domain/types.ts'
import type { Queryable } from './database.ts'
import { distinctKeys } from './distinctKeys.ts'
import { interactionColumns, type InteractionRow, iso, isoOrNull, toInteraction } from './rows.ts'
import { SUPPRESSION_OF_TASK } from './suppressions.ts'

/** A due task, locked, with what it takes to decide on and start its next attempt. */
export interface DueTask {
  id: string
  orgId: string
  triggerId: string
  attempts: number
  testMode: boolean
  context: JsonObject
  /** The contact's candidate zones. */
  timezones: string[]
  /** When it became due (epoch ms): how long it waited for a dispatcher is the time since. */
  dueAt: number
  expiresAt: number
  /** Whom it reaches: the contact as known when its trigger was accepted (the tester, in test mode). */
  contact: Contact
  ids: ExternalId[]
  /** The contact's number is on the organization's suppression list. */
  suppressed: boolean
  /** The W3C traceparent recorded with its trigger, when traces were on. */
  traceParent: string | null
  /** Its organization's cap on attempts to one number; null when it has none. */
  contactCap: ContactCap | null
  /** The steps it left for a fallback step; null when it never fell back. */
  steps: TaskStep[] | null
  /** Why it is due now, when learned timing chose the hour (reason learned_hour): carried on the decision that allows the attempt. */
  timingReason: DecisionReason | null
  campaign: {
    id: string
    routingKey: string
    channel: Channel
    schedule: Schedule
    attempts: AttemptPolicy
    provider: Provider
    providerConfig: JsonObject
    maxConcurrent: number | null
    pacing: PacingSettings
    /** Its fallback step, whose no-reply wait sets when a message is over; null for none. */
    fallback: FallbackSettings | null
    /** Its purpose, subject, voice and consent required, as set. */
    compliance: ComplianceSettings
  }
}

interface DueTaskRow {
  id: string
  org_id: string
  trigger_id: string
  attempts: number
  test_mode: boolean
  context: JsonObject
  timezones: string[]
  due_at: Date
  expires_at: Date
  contact: Contact
  ids: ExternalId[]
  suppressed: boolean
  campaign_id: string
  trace_parent: string | null
  steps: TaskStep[] | null
  timing_reason: DecisionReason | null
}

interface DueCampaignRow {
  id: string
  routing_key: string
  channel: Channel
  schedule: Schedule
  attempts: AttemptPolicy
  provider: Provider
  provider_config: JsonObject
  max_concurrent: number | null
  pacing: PacingSettings
  contact_cap_per_24h: number | null
  contact_cap_per_local_day: number | null
  fallback: FallbackSettings | null
  compliance: ComplianceSettings
}

/**
 * A task's contact and context, in statements that join its trigger `tr`:
 * its own when it keeps them, its trigger's when NULL (migration 040).
 */
export const TASK_CONTACT = 'COALESCE(t.contact, tr.contact)'
export const TASK_CONTEXT = 'COALESCE(t.context, tr.context)'

/** The campaigns with pending tasks (`queued`), from the index the dispatcher reads each one's due tasks by. */
export const QUEUED_CAMPAIGNS = distinctKeys('queued', { table: 'tasks', column: 'campaign_id', where: "status = 'pending'" })

/**
 * Locks up to `limit` due tasks for the rest of the transaction, oldest due
 * first, leaving out paused campaigns and those in `skipCampaigns` (at their
 * max_concurrent). Each campaign with pending tasks is found by one probe
 * of their index and its due tasks read from its own range of it, so however
 * many tasks a paused or skipped campaign has due, they are never read. Rows
 * another transaction holds are skipped, not waited for.
 *
 * Their campaigns are read once each, in a statement of their own, and shared
 * by their tasks: read with every task, a campaign's settings were written
 * out by the server and parsed by the driver once per task (a simulated
 * conversation's result in provider_config made that kilobytes a task).
 */
export async function lockDueTasks(
  tx: Queryable,
  phoneHashKey: Buffer,
  now: number,
  limit: number,
  skipCampaigns: readonly string[] = [],
): Promise<DueTask[]> {
  const rows = await tx.query<DueTaskRow>(
    // ARRAY(...) rather than IN (SELECT ...): given a subquery, the planner may hash the whole
    // table to join it, where an array of ids is looked up in the primary key.
    `SELECT t.id, t.org_id, t.trigger_id, t.attempts, t.test_mode, ${TASK_CONTEXT} AS context, t.timezones, t.due_at,
            t.expires_at, ${TASK_CONTACT} AS contact, tr.ids, EXISTS (${SUPPRESSION_OF_TASK('tr.phone', '$4')}) AS suppressed, t.campaign_id, tr.trace_parent, t.steps,
            CASE WHEN t.decision->'reasons'->0->>'code' = 'learned_hour' THEN t.decision->'reasons'->0 END AS timing_reason
     FROM tasks t
     JOIN triggers tr ON tr.id = t.trigger_id
     WHERE t.id = ANY(ARRAY(
         WITH RECURSIVE ${QUEUED_CAMPAIGNS}
         SELECT due.id FROM queued JOIN campaigns c ON c.id = queued.id
         CROSS JOIN LATERAL (
           SELECT id, due_at FROM tasks
           WHERE campaign_id = queued.id AND status = 'pending' AND due_at <= $1
           ORDER BY due_at
           LIMIT $2) due
         WHERE c.paused_at IS NULL AND c.id <> ALL($3::text[])
         ORDER BY due.due_at
         LIMIT $2))
       AND t.status || '' = 'pending' AND t.due_at <= $1
     ORDER BY t.id
     FOR UPDATE OF t SKIP LOCKED`,
    [new Date(now), limit, skipCampaigns, phoneHashKey],
  )
  if (rows.length === 0) return []
  const campaigns = await tx.query<DueCampaignRow>(
    // The organization's cap read with each campaign: no statement of its own, and nothing when it has none.
    `SELECT c.id, c.routing_key, c.channel, c.schedule, c.attempts, c.provider, c.provider_config, c.max_concurrent, c.pacing, c.fallback, c.compliance,
            o.contact_cap_per_24h, o.contact_cap_per_local_day
     FROM campaigns c JOIN organizations o ON o.id = c.org_id WHERE c.id = ANY($1::text[])`,
    [[...new Set(rows.map((row) => row.campaign_id))]],
  )
  const caps = new Map(
    campaigns.map((row) => {
      const cap = { per_24h: row.contact_cap_per_24h, per_local_day: row.contact_cap_per_local_day }
      return [row.id, capIsOn(cap) ? cap : null]
    }),
  )
  const byId = new Map(
    campaigns.map((row) => [
      row.id,
      {
        id: row.id,
        routingKey: row.routing_key,
        channel: row.channel,
        schedule: row.schedule,
        attempts: row.attempts,
        provider: row.provider,
        providerConfig: row.provider_config,
        maxConcurrent: row.max_concurrent,
        pacing: row.pacing,
        fallback: row.fallback,
        compliance: row.compliance,
      },
    ]),
  )
  return rows.map((row) => ({
    id: row.id,
    orgId: row.org_id,
    triggerId: row.trigger_id,
    attempts: row.attempts,
    testMode: row.test_mode,
    context: row.context,
    timezones: row.timezones,
    dueAt: row.due_at.getTime(),
    expiresAt: row.expires_at.getTime(),
    contact: row.contact,
    ids: row.ids,
    suppressed: row.suppressed,
    traceParent: row.trace_parent,
    contactCap: caps.get(row.campaign_id)!,
    steps: row.steps,
    timingReason: row.timing_reason,
    campaign: byId.get(row.campaign_id)!,
  }))
}

/** A pending task moved to a later due time, and what holds it (none: its window or its campaign's places). */
export interface Postponement {
  taskId: string
  dueAt: number
  heldBy?: TaskHold
  /** The decision that deferred it (held_by 'law'), kept for its story. */
  decision?: RecordedDecision
}

/** Moves pending tasks the caller holds to their `dueAt`, recording what holds them (or that nothing does now). */
export async function postponeTasks(tx: Queryable, postponements: readonly Postponement[], now: number): Promise<void> {
  if (postponements.length === 0) return
  await tx.query(
    `UPDATE tasks t SET due_at = v.due_at, held_by = v.held_by, decision = nullif(v.decision, 'null'::jsonb), updated_at = $3
     FROM ROWS FROM (unnest($1::text[]), unnest($2::timestamptz[]), unnest($4::text[]), jsonb_array_elements($5::jsonb)) AS v(id, due_at, held_by, decision)
     WHERE t.id = v.id AND t.status || '' = 'pending'`,
    [
      postponements.map((p) => p.taskId),
      postponements.map((p) => new Date(p.dueAt)),
      new Date(now),
      postponements.map((p) => p.heldBy ?? null),
      // As beginAttempts passes its decisions: one JSON array (null where there is none).
      JSON.stringify(postponements.map((p) => p.decision ?? null)),
    ],
  )
}

/**
 * Locks the campaigns (in id order, so that dispatchers never wait on each
 * other in a circle) and counts the interactions each has running: held until
 * the transaction ends, so that two dispatchers cannot both fill the last
 * places of one campaign. One that ended and waits for its result holds no
 * line: it is not counted.
 */
export async function lockCampaignsCountingRunning(tx: Queryable, campaignIds: readonly string[]): Promise<Map<string, number>> {
  if (campaignIds.length === 0) return new Map()
  const rows = await tx.query<{ id: string; running: number }>(
    `SELECT c.id, (SELECT count(*)::int FROM interactions i WHERE i.campaign_id = c.id AND i.status <> 'finalized' AND i.status <> 'ended') AS running
     FROM campaigns c WHERE c.id = ANY($1::text[])
     ORDER BY c.id
     FOR UPDATE OF c`,
    [campaignIds],
  )
  return new Map(rows.map((row) => [row.id, row.running]))
}

/** An attempt to begin: the locked task and the id its interaction gets. */
export interface AttemptToBegin {
  taskId: string
  interactionId: string
  /** The number it calls or writes to: its task's, as locked. */
  phone: string
  /** The decision that allowed it, kept with its interaction. */
  decision: RecordedDecision
}

/**
 * Turns locked, pending tasks into running attempts, in one statement: each
 * task's attempt count goes up and its interaction is recorded as starting
 * (by `worker`, with the campaign's provider settings as they are now), due
 * to be settled at `settleAt` unless the provider confirms it. Only for tasks
 * whose number is not suppressed now: returns the attempt number of each
 * task begun.
 */
export async function beginAttempts(
  tx: Queryable,
  phoneHashKey: Buffer,
  worker: string,
  attempts: readonly AttemptToBegin[],
  now: number,
  settleAt: number,
): Promise<Map<string, number>> {
  if (attempts.length === 0) return new Map()
  const rows = await tx.query<{ task_id: string; attempt: number }>(
    `WITH begun AS (
       UPDATE tasks t SET status = 'in_progress', attempts = t.attempts + 1, interaction_ids = t.interaction_ids || v.interaction_id, held_by = NULL,
                          decision = NULL, updated_at = $4
       FROM ROWS FROM (unnest($1::text[]), unnest($2::text[]), unnest($7::text[]), jsonb_array_elements($8::jsonb)) AS v(task_id, interaction_id, phone, decision)
       WHERE t.id = v.task_id AND t.status || '' = 'pending'
         AND NOT EXISTS (${SUPPRESSION_OF_TASK('v.phone', '$6')})
       RETURNING t.id, t.org_id, t.campaign_id, t.attempts, t.test_mode, v.phone, v.interaction_id, v.decision
     )
     INSERT INTO interactions (id, org_id, task_id, campaign_id, channel, provider, provider_config, direction, attempt, status,
                               to_phone, test_mode, settle_at, started_by, started_at, decision)
     SELECT b.interaction_id, b.org_id, b.id, b.campaign_id, c.channel, c.provider, c.provider_config, 'outbound', b.attempts, 'starting',
            b.phone, b.test_mode, $5, $3, $4, b.decision
     FROM begun b JOIN campaigns c ON c.id = b.campaign_id
     RETURNING task_id, attempt`,
    [
      attempts.map((a) => a.taskId),
      attempts.map((a) => a.interactionId),
      worker,
      new Date(now),
      new Date(settleAt),
      phoneHashKey,
      attempts.map((a) => a.phone),
      // One JSON array, not a text[] of JSON: pg escapes each element of an array literal, which
      // cost as much as the JSON itself (about 19 µs a start for a law's decision of 890 bytes).
      JSON.stringify(attempts.map((a) => a.decision)),
    ],
  )
  return new Map(rows.map((row) => [row.task_id, row.attempt]))
}

/**
 * Withdraws attempts whose start a provider deferred, as though they had
 * never been begun (beginAttempts is all an attempt writes before its
 * provider answers: no event, no count): the interaction row goes, and its
 * task is pending again, due at `dueAt`, with one attempt fewer and without
 * the interaction among its interaction_ids. Only while the interaction is
 * still 'starting' and its task 'in_progress': a provider's report that
 * confirmed it meanwhile (or anything that ended it) leaves both as they are.
 * One statement, so there is never a task without its row or the reverse.
 * Returns the ids of the interactions withdrawn.
 */
export async function withdrawAttempts(db: Queryable, withdrawals: readonly { interactionId: string; dueAt: number }[], now: number): Promise<Set<string>> {
  if (withdrawals.length === 0) return new Set()
  const rows = await db.query<{ id: string }>(
    `WITH withdrawn AS (
       DELETE FROM interactions i
       USING unnest($1::text[], $2::timestamptz[]) AS v(id, due_at)
       -- Not one given back to a call back (numbered no attempt): its task has gone on without it.
       WHERE i.id = v.id AND i.status || '' = 'starting' AND i.attempt IS NOT NULL
         AND EXISTS (SELECT 1 FROM tasks t WHERE t.id = i.task_id AND t.status = 'in_progress')
       RETURNING i.id, i.task_id, v.due_at
     )
     UPDATE tasks t SET status = 'pending', attempts = t.attempts - 1, interaction_ids = array_remove(t.interaction_ids, w.id),
                        due_at = w.due_at, held_by = 'provider', updated_at = $3
     -- Rechecked on the task's newest version: one cancelled meanwhile stays completed (its interaction, never
     -- started, is gone with the others of the batch rather than failing them all on the outcome's CHECK).
     FROM withdrawn w WHERE t.id = w.task_id AND t.status = 'in_progress'
     RETURNING w.id`,
    [withdrawals.map((w) => w.interactionId), withdrawals.map((w) => new Date(w.dueAt)), new Date(now)],
  )
  return new Set(rows.map((row) => row.id))
}

/** A task as its lifecycle needs it after an interaction: to decide its next step, and to report its completion. */
export interface TaskForUpdate {
  id: string
  orgId: string
  triggerId: string
  status: TaskStatus
  /** What holds it, pending (tasks.held_by). */
  heldBy: TaskHold | null
  attempts: number
  testMode: boolean
  /** The contact's candidate zones. */
  timezones: string[]
  expiresAt: number
  ids: ExternalId[]
  /** The steps it left for a fallback step; null when it never fell back. */
  steps: TaskStep[] | null
  campaign: { id: string; routingKey: string; channel: Channel; schedule: Schedule; attempts: AttemptPolicy; fallback: FallbackSettings | null }
}

/** The columns of a TaskForUpdate, from tasks `t`, its trigger `tr` and its campaign `c`, as {@link toTaskForUpdate} reads them. */
export const TASK_FOR_UPDATE_COLUMNS = `t.id AS task_id, t.org_id AS task_org_id, t.trigger_id AS task_trigger_id, t.status AS task_status, t.held_by AS task_held_by,
  t.attempts AS task_attempts, t.test_mode AS task_test_mode, t.timezones AS task_timezones, t.expires_at AS task_expires_at, tr.ids AS task_ids,
  c.id AS task_campaign_id, c.routing_key AS task_routing_key, c.channel AS task_channel, c.schedule AS task_schedule, c.attempts AS task_attempt_policy,
  t.steps AS task_steps, c.fallback AS task_fallback`

/** Tasks as TaskForUpdate rows, for a statement to add its conditions to: from tasks `t`, with its trigger `tr` and campaign `c`. */
const SELECT_TASKS_FOR_UPDATE = `SELECT ${TASK_FOR_UPDATE_COLUMNS}
     FROM tasks t
     JOIN triggers tr ON tr.id = t.trigger_id
     JOIN campaigns c ON c.id = t.campaign_id`

export interface TaskForUpdateRow {
  task_id: string
  task_org_id: string
  task_trigger_id: string
  task_status: TaskStatus
  task_held_by: TaskHold | null
  task_attempts: number
  task_test_mode: boolean
  task_timezones: string[]
  task_expires_at: Date
  task_ids: ExternalId[]
  task_campaign_id: string
  task_routing_key: string
  task_channel: Channel
  task_schedule: Schedule
  task_attempt_policy: AttemptPolicy
  task_steps: TaskStep[] | null
  task_fallback: FallbackSettings | null
}

export const toTaskForUpdate = (row: TaskForUpdateRow): TaskForUpdate => ({
  id: row.task_id,
  orgId: row.task_org_id,
  triggerId: row.task_trigger_id,
  status: row.task_status,
  heldBy: row.task_held_by,
  attempts: row.task_attempts,
  testMode: row.task_test_mode,
  timezones: row.task_timezones,
  expiresAt: row.task_expires_at.getTime(),
  ids: row.task_ids,
  steps: row.task_steps,
  campaign: {
    id: row.task_campaign_id,
    routingKey: row.task_routing_key,
    channel: row.task_channel,
    schedule: row.task_schedule,
    attempts: row.task_attempt_policy,
    fallback: row.task_fallback,
  },
})

/** What learned retry timing reads of a task beyond its TaskForUpdate: when its outbound attempts started, its campaign's compliance and provider. */
export interface LearningFacts {
  starts: number[]
  compliance: ComplianceSettings
  provider: Provider
}

/** The learning facts of tasks, by id: one statement for a commit's learned retries. */
export async function learningFactsOf(tx: Queryable, taskIds: readonly string[]): Promise<Map<string, LearningFacts>> {
  const rows = await tx.query<{ id: string; starts: number[]; compliance: ComplianceSettings; provider: Provider }>(
    // Epoch milliseconds: both drivers read a float8[] as numbers.
    `SELECT t.id, c.compliance, c.provider,
            ARRAY(SELECT (extract(epoch FROM i.started_at) * 1000)::float8 FROM interactions i WHERE i.id = ANY(t.interaction_ids) AND i.direction = 'outbound') AS starts
     FROM tasks t JOIN campaigns c ON c.id = t.campaign_id
     WHERE t.id = ANY($1::text[])`,
    [taskIds],
  )
  return new Map(rows.map((row) => [row.id, { starts: row.starts, compliance: row.compliance, provider: row.provider }]))
}

/**
 * Locks tasks for the rest of the transaction, in id order (so that two
 * transactions locking overlapping tasks never wait on each other in a
 * circle), optionally only the organization's.
 */
export async function lockTasks(tx: Queryable, taskIds: readonly string[], orgId?: string): Promise<Map<string, TaskForUpdate>> {
  if (taskIds.length === 0) return new Map()
  const rows = await tx.query<TaskForUpdateRow>(
    `${SELECT_TASKS_FOR_UPDATE}
     WHERE t.id = ANY($1::text[]) AND ($2::text IS NULL OR t.org_id = $2)
     ORDER BY t.id
     FOR UPDATE OF t`,
    [taskIds, orgId ?? null],
  )
  return new Map(rows.map((row) => [row.task_id, toTaskForUpdate(row)]))
}

/** Back to pending for their next attempt, each due at its `dueAt`; a task no longer in progress (cancelled meanwhile) is left as it is. */
/** A task in progress due again at `dueAt`; `decision`: why then, when learned timing chose it (shown on the task as it waits). */
export interface Retry {
  taskId: string
  dueAt: number
  decision?: RecordedDecision
}

export async function scheduleNextAttempts(tx: Queryable, retries: readonly Retry[], now: number): Promise<void> {
  if (retries.length === 0) return
  await tx.query(
    `UPDATE tasks t SET status = 'pending', due_at = v.due_at, decision = nullif(v.decision, 'null'::jsonb), updated_at = $3
     FROM ROWS FROM (unnest($1::text[]), unnest($2::timestamptz[]), jsonb_array_elements($4::jsonb)) AS v(id, due_at, decision)
     WHERE t.id = v.id AND t.status = 'in_progress'`,
    [retries.map((r) => r.taskId), retries.map((r) => new Date(r.dueAt)), new Date(now), JSON.stringify(retries.map((r) => r.decision ?? null))],
  )
}

/** A task going on to its campaign's fallback step: the campaign it leaves and the one it goes on to, when it is due, and the step it leaves. */
export interface FallBack {
  taskId: string
  fromCampaignId: string
  toCampaignId: string
  dueAt: number
  step: TaskStep
}

/**
 * Moves tasks in progress on to their fallback campaigns, pending, due at
 * `dueAt`, with the step they leave recorded; returns the ids of those moved.
 * Only a task still in progress under the campaign it leaves, that has taken
 * no fallback step yet: so a task falls back once, whoever settles its
 * interaction and whatever comes late, and a task cancelled meanwhile stays
 * completed.
 */
export async function fallBackTasks(tx: Queryable, moves: readonly FallBack[], now: number): Promise<Set<string>> {
  if (moves.length === 0) return new Set()
  const rows = await tx.query<{ id: string }>(
    `UPDATE tasks t SET campaign_id = v.to_campaign, status = 'pending', due_at = v.due_at, steps = jsonb_build_array(v.step::jsonb), updated_at = $6
     FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::text[]) AS v(id, from_campaign, to_campaign, due_at, step)
     WHERE t.id = v.id AND t.status = 'in_progress' AND t.campaign_id = v.from_campaign AND t.steps IS NULL
     RETURNING t.id`,
    [
      moves.map((m) => m.taskId),
      moves.map((m) => m.fromCampaignId),
      moves.map((m) => m.toCampaignId),
      moves.map((m) => new Date(m.dueAt)),
      moves.map((m) => JSON.stringify(m.step)),
      new Date(now),
    ],
  )
  return new Set(rows.map((row) => row.id))
}

/**
 * Completes tasks with their outcomes; returns those completed (not those
 * that had completed already), each with its last decision for its
 * task.completed: the one given (the block of a task completed
 * not_permitted), else the one it kept (the law's deferral it expired
 * under), else the one that allowed its last attempt (kept with that
 * interaction); null when none was made.
 */
export async function completeTasks(
  tx: Queryable,
  completions: readonly { taskId: string; outcome: TaskOutcome; decision?: RecordedDecision }[],
  now: number,
): Promise<Map<string, RecordedDecision | null>> {
  if (completions.length === 0) return new Map()
  // The decision that blocked a task not_permitted is kept with it; any other completion keeps the task's last.
  const rows = await tx.query<{ id: string; decision: RecordedDecision | null }>(
    `UPDATE tasks t SET status = 'completed', outcome = v.outcome, completed_at = $3, updated_at = $3, decision = coalesce(nullif(v.decision, 'null'::jsonb), t.decision)
     FROM ROWS FROM (unnest($1::text[]), unnest($2::text[]), jsonb_array_elements($4::jsonb)) AS v(id, outcome, decision)
     WHERE t.id = v.id AND t.status <> 'completed'
     RETURNING t.id, coalesce(t.decision, (SELECT i.decision FROM interactions i WHERE i.id = t.interaction_ids[cardinality(t.interaction_ids)])) AS decision`,
    [completions.map((c) => c.taskId), completions.map((c) => c.outcome), new Date(now), JSON.stringify(completions.map((c) => c.decision ?? null))],
  )
  return new Map(rows.map((row) => [row.id, row.decision]))
}

/**
 * When the dispatcher next has something to do: the earliest due task of the
 * running campaigns not in `skipCampaigns`, read campaign by campaign from the
 * same index the dispatcher takes tasks by. A paused campaign's tasks are
 * left out, so that they do not wake the dispatcher for nothing: its resume
 * wakes it.
 */
export async function nextDueAt(db: Queryable, skipCampaigns: readonly string[] = []): Promise<number | undefined> {
  const rows = await db.query<{ due_at: Date | null }>(
    `WITH RECURSIVE ${QUEUED_CAMPAIGNS}
     SELECT min(next.due_at) AS due_at FROM queued JOIN campaigns c ON c.id = queued.id
     CROSS JOIN LATERAL (SELECT due_at FROM tasks WHERE campaign_id = queued.id AND status = 'pending' ORDER BY due_at LIMIT 1) next
     WHERE c.paused_at IS NULL AND c.id <> ALL($1::text[])`,
    [skipCampaigns],
  )
  return rows[0]?.due_at?.getTime()
}

interface TaskRow {
  id: string
  org_id: string
  trigger_id: string
  campaign_id: string
  routing_key: string
  channel: Channel
  status: TaskStatus
  outcome: TaskOutcome | null
  attempts: number
  due_at: Date
  contact: Contact
  timezones: string[]
  timezone_source: ZoneSource | null
  test_mode: boolean
  ids: ExternalId[]
  created_at: Date
  expires_at: Date
  completed_at: Date | null
  interaction_ids: string[]
  campaign_paused: boolean
  held_by: TaskHold | null
  steps: TaskStep[] | null
  decision: RecordedDecision | null
}

/** A TaskRow's columns, from tasks `t`, its trigger `tr` and its campaign `c`. */
const TASK_COLUMNS = `
  SELECT t.id, t.org_id, t.trigger_id, t.campaign_id, c.routing_key, c.channel, t.status, t.outcome, t.attempts,
         t.due_at, ${TASK_CONTACT} AS contact, t.timezones, t.timezone_source, t.test_mode, tr.ids, t.created_at, t.expires_at, t.completed_at,
         t.interaction_ids, t.status = 'pending' AND c.paused_at IS NOT NULL AS campaign_paused, t.held_by, t.steps, t.decision`

const TASK_SELECT = `${TASK_COLUMNS}
  FROM tasks t
  JOIN triggers tr ON tr.id = t.trigger_id
  JOIN campaigns c ON c.id = t.campaign_id`

/** The tasks with their interactions; with their results for one task's page, not for a list (a result may hold a long transcript). */
async function withInteractions(db: Queryable, rows: TaskRow[], { results }: { results: boolean }): Promise<Task[]> {
  if (rows.length === 0) return []
  // Each by primary key, as its task names it (migration 023).
  const interactions = await db.query<InteractionRow>(
    `SELECT ${interactionColumns('i', { results })} FROM interactions i WHERE i.id = ANY($1::text[]) ORDER BY i.task_id, i.attempt, i.started_at`,
    [rows.flatMap((row) => row.interaction_ids)],
  )
  const byTask = new Map<string, Interaction[]>()
  for (const row of interactions) {
    const list = byTask.get(row.task_id!) ?? []
    list.push(toInteraction(row))
    byTask.set(row.task_id!, list)
  }
  return rows.map((row) => ({
    id: row.id,
    orgId: row.org_id,
    triggerId: row.trigger_id,
    campaign: { id: row.campaign_id, routingKey: row.routing_key, channel: row.channel },
    status: row.status,
    outcome: row.outcome,
    attempts: row.attempts,
    nextAttemptAt: row.status === 'pending' ? iso(row.due_at) : null,
    contact: row.contact,
    timezones: row.timezones,
    timezoneSource: row.timezone_source,
    testMode: row.test_mode,
    ids: row.ids,
    createdAt: iso(row.created_at),
    expiresAt: iso(row.expires_at),
    completedAt: isoOrNull(row.completed_at),
    campaignPaused: row.campaign_paused,
    ...(row.status === 'pending' && row.held_by !== null && { waiting: { for: row.held_by, until: iso(row.due_at) } }),
    steps: row.steps,
    decision: row.decision,
    interactions: byTask.get(row.id) ?? [],
  }))
}

export async function taskExists(db: Queryable, orgId: string, id: string): Promise<boolean> {
  return (await db.query('SELECT 1 FROM tasks WHERE id = $2 AND org_id = $1', [orgId, id])).length > 0
}

export async function findTask(db: Queryable, orgId: string, id: string): Promise<Task | undefined> {
  const rows = await db.query<TaskRow>(`${TASK_SELECT} WHERE t.org_id = $1 AND t.id = $2`, [orgId, id])
  return (await withInteractions(db, rows, { results: true }))[0]
}

/** Which of an organization's tasks to list: every condition given must hold. */
export interface TaskFilter {
  status?: TaskStatus
  outcome?: TaskOutcome
  /** A routing key: its campaigns on every channel. */
  campaign?: string
  testMode?: boolean
  /** Its trigger carried this id. */
  externalId?: ExternalId
  /** It reaches this number (E.164). */
  phone?: string
  createdFrom?: number
  createdBefore?: number
  /** Only tasks listed after this one, which the caller has checked is the organization's (see {@link taskListPosition}). */
  after?: TaskListPosition
}

/** Where a task stands in its organization's list: its trigger's creation time and id. */
export interface TaskListPosition {
  createdAt: Date
  triggerId: string
}

export async function taskListPosition(db: Queryable, orgId: string, taskId: string): Promise<TaskListPosition | undefined> {
  const rows = await db.query<{ created_at: Date; id: string }>(
    `SELECT tr.created_at, tr.id FROM tasks t JOIN triggers tr ON tr.id = t.trigger_id WHERE t.org_id = $1 AND t.id = $2`,
    [orgId, taskId],
  )
  return rows[0] === undefined ? undefined : { createdAt: rows[0].created_at, triggerId: rows[0].id }
}

/**
 * The organization's tasks, newest first (by their trigger's creation, then
 * its id), at most `limit`, each read from an index whose entries are the
 * answer rather than the history (plans checked on a history of a million
 * tasks; see BENCHMARKS.md):
 * - one reaching a number, by triggers_by_phone; one of the client's ids, by
 *   the triggers' ids index: a person's tasks, however many filters follow;
 * - pending tasks, campaign by campaign from the dispatcher's index of them;
 *   those in progress, from the index of running interactions: the queue;
 * - given an outcome, a campaign, a test mode or the completed status: the
 *   completed tasks from tasks_completed_by_campaign, campaign by campaign,
 *   outcome by outcome and test mode by test mode (each range read
 *   newest first, at most a page of each), with, unless the status or an
 *   outcome says otherwise, the queue's tasks of those campaigns;
 * - else, every task backwards along triggers_by_org, from the page's start
 *   or the creation time range.
 * Every other filter given is checked on the tasks read. Each combination is
 * a statement of its own, planned for what it filters on (a few hundred at
 * most; see store/database.ts).
 */
export async function listTasks(db: Queryable, orgId: string, filter: TaskFilter, limit: number): Promise<Task[]> {
  const params: unknown[] = [orgId, limit]
  const param = (value: unknown) => {
    params.push(value)
    return `$${params.length}`
  }
  /** The filters on a task `t` (with its creation and trigger's id) that its access path does not apply itself. */
  const holds = (skip: readonly (keyof TaskFilter)[] = []) => {
    const conditions: string[] = []
    const given = <K extends keyof TaskFilter>(name: K) => (skip.includes(name) ? undefined : filter[name])
    if (given('status') !== undefined) conditions.push(`t.status || '' = ${param(filter.status)}`)
    if (given('outcome') !== undefined) conditions.push(`t.outcome = ${param(filter.outcome)}`)
    if (given('testMode') !== undefined) conditions.push(`t.test_mode = ${param(filter.testMode)}`)
    if (given('campaign') !== undefined) conditions.push(`t.campaign_id IN (SELECT id FROM campaigns WHERE org_id = $1 AND routing_key = ${param(filter.campaign)})`)
    conditions.push(...range('t.created_at', 't.trigger_id'))
    return conditions
  }
  /** The creation time range and the page's start, on these columns. */
  const range = (createdAt: string, triggerId: string) => {
    const conditions: string[] = []
    if (filter.createdFrom !== undefined) conditions.push(`${createdAt} >= ${param(new Date(filter.createdFrom))}`)
    if (filter.createdBefore !== undefined) conditions.push(`${createdAt} < ${param(new Date(filter.createdBefore))}`)
    if (filter.after !== undefined) conditions.push(`(${createdAt}, ${triggerId}) < (${param(filter.after.createdAt)}, ${param(filter.after.triggerId)})`)
    return conditions
  }
  const where = (conditions: readonly string[]) => (conditions.length === 0 ? '' : `AND ${conditions.join(' AND ')}`)
  /** Of campaigns `c`, the organization's, of the routing key given. */
  const ofScope = () => `c.org_id = $1 ${filter.campaign === undefined ? '' : `AND c.routing_key = ${param(filter.campaign)}`}`
  /** Tasks `t` by id, newest first, at most a page. */
  const newest = (ids: string, conditions: readonly string[]) =>
    `SELECT t.id, t.created_at, t.trigger_id FROM tasks t WHERE t.id = ANY(ARRAY(${ids})) AND t.org_id = $1 ${where(conditions)}
     ORDER BY t.created_at DESC, t.trigger_id DESC LIMIT $2`
  const pending = (conditions: readonly string[]) =>
    newest(`SELECT due.id FROM campaigns c CROSS JOIN LATERAL (SELECT id FROM tasks WHERE campaign_id = c.id AND status = 'pending') due WHERE ${ofScope()}`, [
      `t.status || '' = 'pending'`,
      ...conditions,
    ])
  const inProgress = (conditions: readonly string[]) =>
    newest(
      `SELECT running.task_id FROM campaigns c CROSS JOIN LATERAL (SELECT task_id FROM interactions WHERE campaign_id = c.id AND status <> 'finalized') running
       WHERE ${ofScope()}`,
      [`t.status || '' = 'in_progress'`, ...conditions],
    )

  let chosen: string
  if (filter.phone !== undefined || filter.externalId !== undefined) {
    // A person's triggers; the organization is checked on their tasks, so that the ids index is read alone.
    const person = filter.phone !== undefined ? `tr.org_id = $1 AND tr.phone = ${param(filter.phone)}` : `tr.ids @> ${param(JSON.stringify([filter.externalId]))}::jsonb`
    const also = filter.phone !== undefined && filter.externalId !== undefined ? ` AND tr.ids @> ${param(JSON.stringify([filter.externalId]))}::jsonb` : ''
    chosen = newest(`SELECT tr.task_id FROM triggers tr WHERE ${person}${also}`, holds())
  } else if (filter.status === 'pending') {
    chosen = pending(holds(['status', 'campaign']))
  } else if (filter.status === 'in_progress') {
    chosen = inProgress(holds(['status', 'campaign']))
  } else if (filter.outcome !== undefined || filter.campaign !== undefined || filter.testMode !== undefined || filter.status === 'completed') {
    const outcomes = filter.outcome === undefined ? TASK_OUTCOMES : [filter.outcome]
    const testModes = filter.testMode === undefined ? [false, true] : [filter.testMode]
    const completed = `SELECT page.id, page.created_at, page.trigger_id FROM campaigns c
       CROSS JOIN unnest(${param(outcomes)}::text[]) AS o(outcome)
       CROSS JOIN unnest(${param(testModes)}::boolean[]) AS m(test_mode)
       CROSS JOIN LATERAL (
         SELECT t.id, t.created_at, t.trigger_id FROM tasks t
         WHERE t.campaign_id = c.id AND t.status = 'completed' AND t.outcome = o.outcome AND t.test_mode = m.test_mode ${where(range('t.created_at', 't.trigger_id'))}
         ORDER BY t.created_at DESC, t.trigger_id DESC
         LIMIT $2) page
       WHERE ${ofScope()}`
    const open = filter.status === undefined && filter.outcome === undefined
    const queue = open ? [pending(holds(['campaign'])), inProgress(holds(['campaign']))].map((part) => `UNION ALL (${part})`).join('\n') : ''
    chosen = `SELECT * FROM ((${completed}) ${queue}) found ORDER BY created_at DESC, trigger_id DESC LIMIT $2`
  } else {
    chosen = `SELECT tr.task_id AS id, tr.created_at, tr.id AS trigger_id FROM triggers tr WHERE tr.org_id = $1 ${where(range('tr.created_at', 'tr.id'))}
       ORDER BY tr.created_at DESC, tr.id DESC LIMIT $2`
  }
  const rows = await db.query<TaskRow>(
    `${TASK_SELECT}
     WHERE t.id = ANY(ARRAY(SELECT id FROM (${chosen}) chosen)) AND t.org_id = $1
     ORDER BY t.created_at DESC, t.trigger_id DESC`,
    params,
  )
  return withInteractions(db, rows, { results: false })
}

/**
 * Locks, as {@link lockTasks} does, the organization's tasks not yet
 * completed whose trigger carried any of these external ids, optionally only
 * those of the campaigns of one routing key. Each id is looked up on its own
 * in the triggers' ids index, alone: the organization is checked on the
 * tasks found, since a generic plan that also read triggers_by_org for it
 * (to AND the two bitmaps) read an organization's every trigger at each
 * call, 1.4 to 1.6 s with a million of them.
 */
export async function lockOpenTasksByExternalIds(
  tx: Queryable,
  orgId: string,
  externalIds: readonly ExternalId[],
  routingKey?: string,
): Promise<TaskForUpdate[]> {
  if (externalIds.length === 0) return []
  const rows = await tx.query<TaskForUpdateRow>(
    `${SELECT_TASKS_FOR_UPDATE}
     WHERE t.id = ANY(ARRAY(
         SELECT named.task_id FROM jsonb_array_elements($2::jsonb) AS wanted(id)
         CROSS JOIN LATERAL (SELECT task_id FROM triggers WHERE ids @> jsonb_build_array(wanted.id)) named))
       AND t.org_id = $1 AND t.status <> 'completed' AND ($3::text IS NULL OR c.routing_key = $3)
     ORDER BY t.id
     FOR UPDATE OF t`,
    [orgId, JSON.stringify(externalIds.map(({ source, type, value }) => ({ source, type, value }))), routingKey ?? null],
  )
  return rows.map(toTaskForUpdate)
}

/**
 * Locks, as {@link lockTasks} does (skipping rows another transaction holds),
 * up to `limit` tasks of paused campaigns whose expiry has come. The
 * dispatcher reads no task of a paused campaign, so these would otherwise
 * expire only at the resume. A task is always due by its expiry (it waits
 * for its next opening or its expiry, whichever is first), so its campaign's
 * due range holds it: what is read is the due tasks of paused campaigns.
 */
export async function lockExpiredTasksOfPausedCampaigns(tx: Queryable, now: number, limit: number): Promise<TaskForUpdate[]> {
  const rows = await tx.query<TaskForUpdateRow>(
    `${SELECT_TASKS_FOR_UPDATE}
     WHERE t.id = ANY(ARRAY(
         SELECT expired.id FROM campaigns c
         CROSS JOIN LATERAL (
           SELECT id FROM tasks
           WHERE campaign_id = c.id AND status = 'pending' AND due_at <= $1 AND expires_at <= $1
           LIMIT $2) expired
         WHERE c.paused_at IS NOT NULL
         LIMIT $2))
       AND t.status || '' = 'pending'
     ORDER BY t.id
     FOR UPDATE OF t SKIP LOCKED`,
    [new Date(now), limit],
  )
  return rows.map(toTaskForUpdate)
}
