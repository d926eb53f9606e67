/**
 * Tasks as the dispatcher and the client endpoints see them. A claim is a
 * lease (`locked_by`, `locked_until`, and `due_at` moved to its end): a task
 * whose worker dies is due again when the lease runs out, and starting an
 * attempt is conditional on still holding the lease, so a worker whose lease
 * ran out and was taken over starts nothing.
 */
import type { AttemptPolicy, Provider, Schedule } from '../domain/campaignSettings.ts'
import type { Channel, Contact, ExternalId, Interaction, JsonObject, Task, TaskOutcome, TaskStatus, ZoneSource } from '../domain/types.ts'
import type { Queryable } from './database.ts'
import { toInteraction, type InteractionRow } from './interactions.ts'
import { iso, isoOrNull } from './rows.ts'

/** A claimed task with what it takes to decide on and start its next attempt. */
export interface ClaimedTask {
  id: string
  orgId: string
  triggerId: string
  attempts: number
  testMode: boolean
  context: JsonObject
  /** The contact's candidate zones. */
  timezones: string[]
  expiresAt: number
  /** Whom it reaches: the contact as known when its trigger was accepted (the tester, in test mode). */
  contact: Contact
  ids: ExternalId[]
  /** The contact's number is on the organization's suppression list. */
  suppressed: boolean
  campaign: {
    id: string
    routingKey: string
    channel: Channel
    schedule: Schedule
    attempts: AttemptPolicy
    provider: Provider
    providerConfig: JsonObject
    maxConcurrent: number | null
  }
}

interface ClaimedRow {
  id: string
  org_id: string
  trigger_id: string
  attempts: number
  test_mode: boolean
  context: JsonObject
  timezones: string[]
  expires_at: Date
  contact: Contact
  ids: ExternalId[]
  suppressed: boolean
  campaign_id: string
  routing_key: string
  channel: Channel
  schedule: Schedule
  attempt_policy: AttemptPolicy
  provider: Provider
  provider_config: JsonObject
  max_concurrent: number | null
}

/**
 * Claims up to `limit` due tasks for `worker` until `lockedUntil`, oldest due
 * first. Rows another worker is claiming at this moment are skipped, not
 * waited for; a claimed task is not due again until its lease runs out.
 */
export async function claimDueTasks(
  db: Queryable,
  worker: string,
  now: number,
  lockedUntil: number,
  limit: number,
): Promise<ClaimedTask[]> {
  const rows = await db.query<ClaimedRow>(
    `WITH claimed AS (
       UPDATE tasks SET locked_by = $1, locked_until = $2, due_at = $2
       WHERE id IN (
         SELECT id FROM tasks
         WHERE status = 'pending' AND due_at <= $3
         ORDER BY due_at
         LIMIT $4
         FOR UPDATE SKIP LOCKED)
       RETURNING id, org_id, trigger_id, campaign_id, attempts, test_mode, context, timezones, expires_at, contact)
     SELECT claimed.id, claimed.org_id, claimed.trigger_id, claimed.attempts, claimed.test_mode, claimed.context,
            claimed.timezones, claimed.expires_at, claimed.contact, tr.ids,
            EXISTS (SELECT 1 FROM suppressions s WHERE s.org_id = claimed.org_id AND s.phone = claimed.contact->>'phone') AS suppressed,
            c.id AS campaign_id, c.routing_key, c.channel,
            c.schedule, c.attempts AS attempt_policy, c.provider, c.provider_config, c.max_concurrent
     FROM claimed
     JOIN triggers tr ON tr.id = claimed.trigger_id
     JOIN campaigns c ON c.id = claimed.campaign_id`,
    [worker, new Date(lockedUntil), new Date(now), limit],
  )
  return rows.map((row) => ({
    id: row.id,
    orgId: row.org_id,
    triggerId: row.trigger_id,
    attempts: row.attempts,
    testMode: row.test_mode,
    context: row.context,
    timezones: row.timezones,
    expiresAt: row.expires_at.getTime(),
    contact: row.contact,
    ids: row.ids,
    suppressed: row.suppressed,
    campaign: {
      id: row.campaign_id,
      routingKey: row.routing_key,
      channel: row.channel,
      schedule: row.schedule,
      attempts: row.attempt_policy,
      provider: row.provider,
      providerConfig: row.provider_config,
      maxConcurrent: row.max_concurrent,
    },
  }))
}

/** Gives a claimed task back, due at `dueAt` (nothing, when the claim was lost meanwhile). */
export async function releaseTask(db: Queryable, taskId: string, worker: string, dueAt: number, now: number): Promise<void> {
  await db.query(
    `UPDATE tasks SET due_at = $3, locked_by = NULL, locked_until = NULL, updated_at = $4
     WHERE id = $1 AND locked_by = $2 AND status = 'pending'`,
    [taskId, worker, new Date(dueAt), new Date(now)],
  )
}

/**
 * Turns a claimed task into a running attempt: the attempt count goes up and
 * the claim is released. Returns the attempt number, or undefined when the
 * claim was lost (its lease ran out; another worker may have the task now).
 */
export async function beginAttempt(tx: Queryable, taskId: string, worker: string, now: number): Promise<number | undefined> {
  const rows = await tx.query<{ attempts: number }>(
    `UPDATE tasks SET status = 'in_progress', attempts = attempts + 1, locked_by = NULL, locked_until = NULL, updated_at = $3
     WHERE id = $1 AND locked_by = $2 AND locked_until > $3 AND status = 'pending'
     RETURNING attempts`,
    [taskId, worker, new Date(now)],
  )
  return rows[0]?.attempts
}

/** How many interactions of the campaign are running; the caller holds the campaign's lock. */
export async function countRunningInteractions(tx: Queryable, campaignId: string): Promise<number> {
  await tx.query('SELECT id FROM campaigns WHERE id = $1 FOR UPDATE', [campaignId])
  const rows = await tx.query<{ running: number }>(
    `SELECT count(*)::int AS running FROM interactions WHERE campaign_id = $1 AND status <> 'finalized'`,
    [campaignId],
  )
  return rows[0]!.running
}

/** A task as its lifecycle needs it after an interaction: locked for the rest of the transaction. */
export interface TaskForUpdate {
  id: string
  orgId: string
  triggerId: string
  status: TaskStatus
  attempts: number
  testMode: boolean
  /** The contact's candidate zones. */
  timezones: string[]
  expiresAt: number
  ids: ExternalId[]
  campaign: { id: string; routingKey: string; channel: Channel; schedule: Schedule; attempts: AttemptPolicy }
}

interface TaskForUpdateRow {
  id: string
  org_id: string
  trigger_id: string
  status: TaskStatus
  attempts: number
  test_mode: boolean
  timezones: string[]
  expires_at: Date
  ids: ExternalId[]
  campaign_id: string
  routing_key: string
  channel: Channel
  schedule: Schedule
  attempt_policy: AttemptPolicy
}

export async function lockTask(tx: Queryable, taskId: string, orgId?: string): Promise<TaskForUpdate | undefined> {
  const rows = await tx.query<TaskForUpdateRow>(
    `SELECT t.id, t.org_id, t.trigger_id, t.status, t.attempts, t.test_mode, t.timezones, t.expires_at, tr.ids,
            c.id AS campaign_id, c.routing_key, c.channel, c.schedule, c.attempts AS attempt_policy
     FROM tasks t
     JOIN triggers tr ON tr.id = t.trigger_id
     JOIN campaigns c ON c.id = t.campaign_id
     WHERE t.id = $1 AND ($2::text IS NULL OR t.org_id = $2)
     FOR UPDATE OF t`,
    [taskId, orgId ?? null],
  )
  const row = rows[0]
  return (
    row && {
      id: row.id,
      orgId: row.org_id,
      triggerId: row.trigger_id,
      status: row.status,
      attempts: row.attempts,
      testMode: row.test_mode,
      timezones: row.timezones,
      expiresAt: row.expires_at.getTime(),
      ids: row.ids,
      campaign: {
        id: row.campaign_id,
        routingKey: row.routing_key,
        channel: row.channel,
        schedule: row.schedule,
        attempts: row.attempt_policy,
      },
    }
  )
}

/** Back to pending for the next attempt, due at `dueAt`. */
export async function scheduleNextAttempt(tx: Queryable, taskId: string, dueAt: number, now: number): Promise<void> {
  await tx.query(
    `UPDATE tasks SET status = 'pending', due_at = $2, locked_by = NULL, locked_until = NULL, updated_at = $3 WHERE id = $1`,
    [taskId, new Date(dueAt), new Date(now)],
  )
}

/** Completes the task with its outcome; false when it had already completed. */
export async function completeTask(tx: Queryable, taskId: string, outcome: TaskOutcome, now: number): Promise<boolean> {
  const rows = await tx.query(
    `UPDATE tasks SET status = 'completed', outcome = $2, completed_at = $3, updated_at = $3, locked_by = NULL, locked_until = NULL
     WHERE id = $1 AND status <> 'completed'
     RETURNING id`,
    [taskId, outcome, new Date(now)],
  )
  return rows.length === 1
}

/** When the dispatcher next has something to do: the earliest due task (claimed ones are due when their lease ends). */
export async function nextDueAt(db: Queryable): Promise<number | undefined> {
  const rows = await db.query<{ due_at: Date }>(`SELECT due_at FROM tasks WHERE status = 'pending' ORDER BY due_at LIMIT 1`)
  return rows[0]?.due_at.getTime()
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
}

const TASK_SELECT = `
  SELECT t.id, t.org_id, t.trigger_id, t.campaign_id, c.routing_key, c.channel, t.status, t.outcome, t.attempts,
         t.due_at, t.contact, t.timezones, t.timezone_source, t.test_mode, tr.ids, t.created_at, t.expires_at, t.completed_at
  FROM tasks t
  JOIN triggers tr ON tr.id = t.trigger_id
  JOIN campaigns c ON c.id = t.campaign_id`

async function withInteractions(db: Queryable, rows: TaskRow[]): Promise<Task[]> {
  if (rows.length === 0) return []
  const interactions = await db.query<InteractionRow>(
    `SELECT * FROM interactions WHERE task_id = ANY($1::text[]) ORDER BY task_id, attempt`,
    [rows.map((row) => row.id)],
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
    interactions: byTask.get(row.id) ?? [],
  }))
}

export async function findTask(db: Queryable, orgId: string, id: string): Promise<Task | undefined> {
  const rows = await db.query<TaskRow>(`${TASK_SELECT} WHERE t.org_id = $1 AND t.id = $2`, [orgId, id])
  return (await withInteractions(db, rows))[0]
}

/** The organization's tasks whose trigger carried this external id, newest first. */
export async function findTasksByExternalId(db: Queryable, orgId: string, externalId: ExternalId, limit: number): Promise<Task[]> {
  const rows = await db.query<TaskRow>(
    `${TASK_SELECT} WHERE t.org_id = $1 AND tr.org_id = $1 AND tr.ids @> $2::jsonb ORDER BY t.id DESC LIMIT $3`,
    [orgId, JSON.stringify([externalId]), limit],
  )
  return withInteractions(db, rows)
}
