import type { Channel, Contact, ExternalId, JsonObject, TaskStatus, Trigger, TriggerContent } from '../domain/types.ts'
import type { PreparedStatement, Queryable } from './database.ts'
import { iso } from './rows.ts'

/** A validated trigger, with its ids chosen, ready to be recorded with its task. */
export interface NewTrigger extends TriggerContent {
  id: string
  taskId: string
  orgId: string
  apiKeyId: string
  campaignId: string
  /** The contact's IANA zone, as far as the trigger and its phone number tell. */
  timezone: string | null
  /**
   * The request's Idempotency-Key, reserved beforehand under this trigger's
   * id: the trigger is recorded only while it still holds the key, which the
   * commit marks done with `response`.
   */
  idempotency: { key: string; response: unknown } | null
}

const INSERT_TRIGGERS_WITH_TASKS: PreparedStatement = {
  name: 'insert_triggers_with_tasks',
  text: `WITH input AS (
       SELECT * FROM jsonb_to_recordset($1::jsonb) AS i(
         id text, task_id text, org_id text, api_key_id text, campaign_id text, request_id text,
         ids jsonb, contact jsonb, context jsonb, test_mode boolean, timezone text, created_at timestamptz,
         idempotency_key text, response jsonb)
     ), owned AS (
       -- Locked, so that a takeover of a stalled reservation cannot slip between this check and the commit.
       SELECT input.id FROM input
       JOIN idempotency_keys k ON k.org_id = input.org_id AND k.key = input.idempotency_key AND k.token = input.id AND k.status = 'in_flight'
       FOR UPDATE OF k
     ), accepted AS (
       SELECT input.*, campaigns.context AS campaign_context,
              input.created_at + make_interval(secs => (campaigns.attempts->>'expire_after_s')::int) AS expires_at
       FROM input
       JOIN api_keys ON api_keys.id = input.api_key_id AND api_keys.org_id = input.org_id AND api_keys.revoked_at IS NULL
       JOIN campaigns ON campaigns.id = input.campaign_id AND campaigns.org_id = input.org_id
       WHERE input.idempotency_key IS NULL OR input.id IN (SELECT id FROM owned)
     ), new_triggers AS (
       INSERT INTO triggers (id, org_id, api_key_id, campaign_id, request_id, ids, contact, context, test_mode, created_at)
       SELECT id, org_id, api_key_id, campaign_id, request_id, ids, contact, context, test_mode, created_at FROM accepted
       RETURNING id
     ), new_tasks AS (
       INSERT INTO tasks (id, org_id, trigger_id, campaign_id, status, context, test_mode, timezone, due_at, expires_at,
                          created_at, updated_at)
       SELECT task_id, org_id, id, campaign_id, 'pending', campaign_context || context, test_mode, timezone, created_at,
              expires_at, created_at, created_at
       FROM accepted
     ), remembered AS (
       UPDATE idempotency_keys k SET status = 'done', response = accepted.response
       FROM accepted
       WHERE accepted.idempotency_key IS NOT NULL AND k.org_id = accepted.org_id AND k.key = accepted.idempotency_key AND k.token = accepted.id
     )
     SELECT id FROM new_triggers`,
}

/**
 * Records many triggers, each with its task, in one statement and so in one
 * transaction: the group commit of the trigger path. A trigger is recorded
 * only if the API key that sent it is still unrevoked as the statement runs,
 * key and campaign belong to its organization, and its request still holds
 * its Idempotency-Key if it has one; the ids of the recorded triggers are
 * returned.
 * The task's context is the campaign's default context with the trigger's
 * merged over it, and its expiry the campaign's, both read here so that they
 * are current at commit. Each task is due at once: the dispatcher checks the
 * schedule.
 */
export async function insertTriggersWithTasks(db: Queryable, triggers: readonly NewTrigger[]): Promise<Set<string>> {
  const batch = triggers.map((t) => ({
    id: t.id,
    task_id: t.taskId,
    org_id: t.orgId,
    api_key_id: t.apiKeyId,
    campaign_id: t.campaignId,
    request_id: t.requestId,
    ids: t.ids,
    contact: t.contact,
    context: t.context,
    test_mode: t.testMode,
    timezone: t.timezone,
    created_at: t.createdAt,
    idempotency_key: t.idempotency?.key ?? null,
    response: t.idempotency?.response ?? null,
  }))
  const rows = await db.query<{ id: string }>(INSERT_TRIGGERS_WITH_TASKS, [JSON.stringify(batch)])
  return new Set(rows.map((row) => row.id))
}

interface TriggerRow {
  id: string
  org_id: string
  campaign_id: string
  routing_key: string
  channel: Channel
  request_id: string
  ids: ExternalId[]
  contact: Contact
  context: JsonObject
  test_mode: boolean
  created_at: Date
  task_id: string
  task_status: TaskStatus
}

export async function findTrigger(db: Queryable, orgId: string, id: string): Promise<Trigger | undefined> {
  const rows = await db.query<TriggerRow>(
    `SELECT t.id, t.org_id, t.campaign_id, c.routing_key, c.channel, t.request_id, t.ids, t.contact, t.context,
            t.test_mode, t.created_at, k.id AS task_id, k.status AS task_status
     FROM triggers t
     JOIN campaigns c ON c.id = t.campaign_id
     JOIN tasks k ON k.trigger_id = t.id
     WHERE t.org_id = $1 AND t.id = $2`,
    [orgId, id],
  )
  const row = rows[0]
  return (
    row && {
      id: row.id,
      orgId: row.org_id,
      campaign: { id: row.campaign_id, routingKey: row.routing_key, channel: row.channel },
      requestId: row.request_id,
      ids: row.ids,
      contact: row.contact,
      context: row.context,
      testMode: row.test_mode,
      createdAt: iso(row.created_at),
      task: { id: row.task_id, status: row.task_status },
    }
  )
}
