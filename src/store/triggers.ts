import type { ConsentKind, Purpose } from '../domain/callingLaw.ts'
import type { CandidateZones, Channel, Contact, ExternalId, JsonObject, TaskStatus, Trigger, TriggerContent } from '../domain/types.ts'
import type { Queryable } from './database.ts'
import { iso, isoOrNull } from './rows.ts'

/** A validated trigger, with its ids chosen, ready to be recorded with its task. */
export interface NewTrigger extends TriggerContent {
  id: string
  taskId: string
  orgId: string
  apiKeyId: string
  campaignId: string
  /**
   * The contact directory's part in this trigger: the contact its ids are
   * expected to name (for a trigger without `contact`, the one they were found
   * to name), or a new contact's id to use should they name none. Null when
   * the trigger leaves the directory alone: it has no ids, or is in test mode.
   */
  contactId: string | null
  /**
   * The zones the reached contact's phone number tells (or the campaign's
   * fallback, for a number of no country): the task's candidate zones unless
   * the contact, as sent or as on file, has a timezone. Null when nothing tells.
   */
  numberZones: CandidateZones | null
  /**
   * The request's Idempotency-Key, reserved beforehand under this trigger's
   * id: the trigger is recorded only while it still holds the key, which the
   * commit marks done with `response`.
   */
  idempotency: { key: string; response: unknown } | null
  /** When its task is first due: now, or its `not_before`. */
  dueAt: string
  /** A consent the trigger carries, recorded for its contact's number in the same statement (migration 041). */
  consent?: {
    id: string
    /** Its number's keyed digest (store/phoneHashKey.ts phoneDigestOf), as consents are kept. */
    phoneDigest: string
    channel: Channel
    purpose: Purpose
    kind: ConsentKind
    source: string
    capturedAt: string
    evidence: string | null
    expiresAt: string | null
  } | null
  /** The W3C traceparent of the request's span, while traces are on (src/tracing.ts). */
  traceParent?: string
}

/** What became of one trigger of a group commit. */
export type RecordOutcome =
  | { kind: 'recorded' }
  /** Its key was revoked, or its Idempotency-Key reservation taken over, before the commit. */
  | { kind: 'not recorded' }
  /** Its ids name more than one contact on file: by index in `ids`, the contact each names. */
  | { kind: 'conflict'; named: { index: number; contactId: string }[] }

const INSERT_TRIGGERS_WITH_TASKS = `WITH input AS (
       -- One JSON array a trigger, its fields by position (see insertTriggersWithTasks); the fields that may be
       -- null (text through ->>, contact and response through NULLIF) are NULL then.
       -- As objects, their keys spelt out and sorted by jsonb, the same rows cost PostgreSQL twice as much to
       -- read: 9.5 against 4.5 µs a trigger, 1,000 a statement.
       SELECT r.ord::int AS ord, r.f->>0 AS id, r.f->>1 AS task_id, r.f->>2 AS org_id, r.f->>3 AS api_key_id,
              r.f->>4 AS campaign_id, r.f->>5 AS request_id, r.f->6 AS ids, NULLIF(r.f->7, 'null') AS contact, r.f->8 AS context,
              (r.f->>9)::boolean AS test_mode, r.f->>10 AS contact_id,
              ARRAY(SELECT jsonb_array_elements_text(NULLIF(r.f->11, 'null'))) AS number_zones, r.f->>12 AS number_zone_source,
              (r.f->>13)::timestamptz AS created_at, (r.f->>14)::timestamptz AS not_before,
              (r.f->>15)::timestamptz AS wanted_until, (r.f->>16)::timestamptz AS due_at,
              r.f->>17 AS idempotency_key, NULLIF(r.f->18, 'null') AS response, NULLIF(r.f->19, 'null') AS consent, r.f->>20 AS trace_parent
       FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS r(f, ord)
     ), owned AS (
       -- Locked, so that a takeover of a stalled reservation cannot slip between this check and the commit.
       SELECT input.id FROM input
       JOIN idempotency_keys k ON k.org_id = input.org_id AND k.key = input.idempotency_key AND k.token = input.id AND k.status = 'in_flight'
       FOR UPDATE OF k
     ), eligible AS (
       -- The campaign's expiry counts from when the task is first due (its not_before), the trigger's own caps it.
       SELECT input.*, campaigns.context AS campaign_context,
              LEAST(input.due_at + make_interval(secs => (campaigns.attempts->>'expire_after_s')::int), input.wanted_until) AS expires_at
       FROM input
       JOIN api_keys ON api_keys.id = input.api_key_id AND api_keys.org_id = input.org_id AND api_keys.revoked_at IS NULL
       JOIN campaigns ON campaigns.id = input.campaign_id AND campaigns.org_id = input.org_id
       WHERE input.idempotency_key IS NULL OR input.id IN (SELECT id FROM owned)
     ), named AS (
       -- Each id of a trigger that uses the directory, with the contact it names now (NULL: none yet).
       -- Looked up one id at a time in the key's index: as a join, the planner, which cannot see into $1, may hash all of contact_ids.
       -- (LIMIT 1, never more than one row, keeps the subquery from being turned into that join.)
       SELECT eligible.id AS trigger_id, e.n - 1 AS index, e.id->>'source' AS source, e.id->>'type' AS type,
              e.id->>'value' AS value, link.contact_id
       FROM eligible
       CROSS JOIN LATERAL jsonb_array_elements(eligible.ids) WITH ORDINALITY AS e(id, n)
       LEFT JOIN LATERAL (
         SELECT contact_ids.contact_id FROM contact_ids
         WHERE contact_ids.org_id = eligible.org_id AND contact_ids.source = e.id->>'source'
           AND contact_ids.type = e.id->>'type' AND contact_ids.value = e.id->>'value'
         LIMIT 1
       ) link ON true
       WHERE eligible.contact_id IS NOT NULL
     ), resolved AS (
       SELECT trigger_id, count(DISTINCT contact_id) AS contacts, min(contact_id) AS contact_id FROM named GROUP BY trigger_id
     ), accepted AS (
       -- The contact reached: the one the ids name, else a new one; its fields as on file with the trigger's merged over them.
       SELECT eligible.*, COALESCE(resolved.contact_id, eligible.contact_id) AS reached_id,
              CASE WHEN eligible.contact_id IS NULL THEN eligible.contact
                   ELSE COALESCE(stored.fields, '{}') || COALESCE(eligible.contact, '{}') END AS reached
       FROM eligible
       LEFT JOIN resolved ON resolved.trigger_id = eligible.id
       LEFT JOIN contacts stored ON stored.id = resolved.contact_id
       WHERE COALESCE(resolved.contacts, 0) <= 1 AND (eligible.contact IS NOT NULL OR stored.id IS NOT NULL)
     ), new_triggers AS (
       INSERT INTO triggers (id, org_id, api_key_id, campaign_id, request_id, ids, contact, context, test_mode, created_at, task_id,
                             not_before, expires_at, phone, trace_parent)
       SELECT id, org_id, api_key_id, campaign_id, request_id, ids, contact, context, test_mode, created_at, task_id,
              not_before, wanted_until, reached->>'phone', trace_parent FROM accepted
       RETURNING id
     ), new_tasks AS (
       -- The contact's candidate zones: its timezone as sent or on file, else those its number tells.
       -- Its contact and context only when they are not its trigger's (migration 040).
       INSERT INTO tasks (id, org_id, trigger_id, campaign_id, status, context, test_mode, contact_id, contact,
                          timezones, timezone_source, due_at, expires_at, created_at, updated_at)
       SELECT task_id, org_id, id, campaign_id, 'pending', NULLIF(campaign_context || context, context), test_mode,
              CASE WHEN contact_id IS NOT NULL THEN reached_id END, NULLIF(reached, contact),
              CASE WHEN reached ? 'timezone' THEN ARRAY[reached->>'timezone'] ELSE COALESCE(number_zones, '{}') END,
              CASE WHEN contact ? 'timezone' THEN 'sent' WHEN reached ? 'timezone' THEN 'on_file' ELSE number_zone_source END,
              due_at, expires_at, created_at, created_at
       FROM accepted
     ), contact_changes AS (
       -- Several triggers of the batch may update one contact: the later one's fields win.
       SELECT reached_id AS id, org_id, jsonb_merge_agg(contact ORDER BY ord) AS fields, max(created_at) AS at
       FROM accepted
       WHERE contact_id IS NOT NULL AND contact IS NOT NULL
       GROUP BY reached_id, org_id
     ), saved_contacts AS (
       -- In id order, as every commit takes their locks, so that two commits never wait for each other in a cycle.
       -- A person triggered again with the fields on file is left as is: no new row version, and updated_at says
       -- when the fields last changed.
       INSERT INTO contacts (id, org_id, fields, created_at, updated_at)
       SELECT id, org_id, fields, at, at FROM contact_changes ORDER BY id
       ON CONFLICT (id) DO UPDATE SET fields = contacts.fields || excluded.fields, updated_at = excluded.updated_at
       WHERE contacts.fields || excluded.fields <> contacts.fields
     ), new_links AS (
       -- No ON CONFLICT: an id linked meanwhile by another commit (or twice in this batch) fails the batch,
       -- whose triggers are then recorded one by one, each seeing the links before it. In key order, as
       -- the contacts are in id order, so that two commits never wait for each other in a cycle.
       -- Driven from the new ids (none, once a person's ids are on file), each finding its trigger: the planner,
       -- blind to both CTEs' sizes, would otherwise scan all of named once per accepted trigger.
       INSERT INTO contact_ids (org_id, source, type, value, contact_id, created_at)
       SELECT DISTINCT reached.org_id, named.source, named.type, named.value, reached.reached_id, reached.created_at
       FROM named
       CROSS JOIN LATERAL (SELECT org_id, reached_id, created_at FROM accepted WHERE accepted.id = named.trigger_id) reached
       WHERE named.contact_id IS NULL
       ORDER BY reached.org_id, named.source, named.type, named.value
     ), new_consents AS (
       -- A consent the trigger carries, for the number it reaches (a trigger carrying one sends contact.phone).
       INSERT INTO consents (id, org_id, phone_digest, phone, channel, purpose, kind, source, captured_at, evidence, expires_at, trigger_id, created_at)
       SELECT consent->>'id', org_id, consent->>'phoneDigest', reached->>'phone', consent->>'channel', consent->>'purpose', consent->>'kind',
              consent->>'source', (consent->>'capturedAt')::timestamptz, consent->>'evidence', (consent->>'expiresAt')::timestamptz, id, created_at
       FROM accepted WHERE consent IS NOT NULL
     ), remembered AS (
       UPDATE idempotency_keys k SET status = 'done', response = accepted.response
       FROM accepted
       WHERE accepted.idempotency_key IS NOT NULL AND k.org_id = accepted.org_id AND k.key = accepted.idempotency_key AND k.token = accepted.id
     ), notified AS (
       -- Worker processes hear of the new due tasks as this commits: a NOTIFY of its own would be
       -- one more commit, with its own WAL flush, for every group commit.
       SELECT pg_notify($2, $3) WHERE $2 <> '' AND EXISTS (SELECT 1 FROM accepted)
     )
     SELECT id, NULL::jsonb AS conflict FROM new_triggers CROSS JOIN (SELECT count(*) FROM notified) AS told
     UNION ALL
     SELECT named.trigger_id, jsonb_agg(jsonb_build_object('index', named.index, 'contact_id', named.contact_id) ORDER BY named.index)
     FROM named JOIN resolved ON resolved.trigger_id = named.trigger_id
     WHERE resolved.contacts > 1 AND named.contact_id IS NOT NULL
     GROUP BY named.trigger_id`

/**
 * Records many triggers, each with its task, in one statement and so in one
 * transaction: the group commit of the trigger path. A trigger is recorded
 * only if the API key that sent it is still unrevoked as the statement runs,
 * key and campaign belong to its organization, its request still holds its
 * Idempotency-Key if it has one, and its ids name at most one contact on file.
 * The task's context is the campaign's default context with the trigger's
 * merged over it, and its expiry the campaign's, both read here so that they
 * are current at commit (the expiry counted from when the task is first due,
 * and capped by the trigger's own `expires_at`). Each task is due at once, or
 * at its trigger's `not_before`: the dispatcher checks the schedule.
 * In the same statement the contact directory learns from each trigger that
 * uses it: the contact is created or its fields updated, and its new ids are
 * linked to it, and `notify` is sent when it commits. Returns what became of
 * each trigger, in the order given.
 */
export async function insertTriggersWithTasks(
  db: Queryable,
  triggers: readonly NewTrigger[],
  /** A notification the commit sends, when other processes are to hear of the new tasks. */
  notify?: { channel: string; payload: string },
): Promise<RecordOutcome[]> {
  // In the order the statement reads them (its input CTE); the trace parent, last, only when there is one.
  const batch = triggers.map((t) => [
    t.id,
    t.taskId,
    t.orgId,
    t.apiKeyId,
    t.campaignId,
    t.requestId,
    t.ids,
    t.contact,
    t.context,
    t.testMode,
    t.contactId,
    t.numberZones?.zones ?? null,
    t.numberZones?.source ?? null,
    t.createdAt,
    t.notBefore,
    t.expiresAt,
    t.dueAt,
    t.idempotency?.key ?? null,
    t.idempotency?.response ?? null,
    t.consent ?? null,
    ...(t.traceParent === undefined ? [] : [t.traceParent]),
  ])
  const rows = await db.query<{ id: string; conflict: { index: number; contact_id: string }[] | null }>(INSERT_TRIGGERS_WITH_TASKS, [
    JSON.stringify(batch),
    notify?.channel ?? '',
    notify?.payload ?? '',
  ])
  const outcomes = new Map(
    rows.map((row): [string, RecordOutcome] => [
      row.id,
      row.conflict === null
        ? { kind: 'recorded' }
        : { kind: 'conflict', named: row.conflict.map(({ index, contact_id }) => ({ index, contactId: contact_id })) },
    ]),
  )
  return triggers.map((trigger) => outcomes.get(trigger.id) ?? { kind: 'not recorded' })
}

interface TriggerRow {
  id: string
  org_id: string
  campaign_id: string
  routing_key: string
  channel: Channel
  request_id: string
  ids: ExternalId[]
  contact: Contact | null
  context: JsonObject
  test_mode: boolean
  created_at: Date
  not_before: Date | null
  expires_at: Date | null
  task_id: string
  task_status: TaskStatus
}

export async function findTrigger(db: Queryable, orgId: string, id: string): Promise<Trigger | undefined> {
  const rows = await db.query<TriggerRow>(
    `SELECT t.id, t.org_id, t.campaign_id, c.routing_key, c.channel, t.request_id, t.ids, t.contact, t.context,
            t.test_mode, t.created_at, t.not_before, t.expires_at, k.id AS task_id, k.status AS task_status
     FROM triggers t
     JOIN campaigns c ON c.id = t.campaign_id
     JOIN tasks k ON k.id = t.task_id
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
      notBefore: isoOrNull(row.not_before),
      expiresAt: isoOrNull(row.expires_at),
      task: { id: row.task_id, status: row.task_status },
    }
  )
}
