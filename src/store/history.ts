/**
 * What the history sweep (services/history.ts) reads and deletes, for a batch
 * of organizations at a time: a statement or two per step whatever the
 * number of organizations in the batch.
 *
 * Each organization's events are read in commit order (events_org_txid) from
 * where the sweep last stopped: a task's task.completed is written by the
 * transaction that completed it, so the tasks due are found in the order
 * they completed, and no index on tasks by completion is needed. The rows a
 * task leaves are each found by what names them: the task names its trigger
 * and interactions, its events are found by task (events_by_task), an event
 * names its deliveries, a delivery's attempts are keyed by it, a provider's
 * message names its interaction. Every delete is by primary key or by one of
 * those indexes, through arrays of ids: given a subquery to match (or a
 * correlated one), the planner may hash a whole table, or all of an
 * organization's events, to join it.
 */
import { DAY_MS, type SweptEvent, UNATTACHED_MESSAGE_DAYS } from '../domain/retention.ts'
import type { Queryable } from './database.ts'

/** Where the sweep of an organization stopped: the last event it read past. */
export interface SweepPosition {
  txid: string
  eventId: string
}

/**
 * Past every event id (ids are `evt_` and 26 characters of lowercase
 * base32, of which z is the last): a position (txid, PAST_EVERY_EVENT) is
 * past every event its transaction wrote, so that a sweep that read them all
 * keeps no event's id.
 */
export const PAST_EVERY_EVENT = `evt_${'z'.repeat(26)}`

export interface SweptOrganization {
  id: string
  retentionDays: number | null
  position: SweepPosition | undefined
}

/**
 * Up to `limit` organizations whose history may be due at `now` (or whose
 * due time is not known yet), longest due first, leaving out `skip` (looked at
 * already in this run), locked for the transaction; another sweep's are
 * skipped, not waited for. Read from organizations_history_due: one with
 * nothing due costs nothing.
 */
export async function lockOrganizationsDue(tx: Queryable, now: number, limit: number, skip: readonly string[]): Promise<SweptOrganization[]> {
  const rows = await tx.query<{ id: string; retention_days: number | null; retention_swept_txid: string | null; retention_swept_event: string | null }>(
    `SELECT id, retention_days, retention_swept_txid::text, retention_swept_event FROM organizations
     WHERE (history_due_at IS NULL OR history_due_at <= $1) AND id <> ALL($3::text[])
     ORDER BY history_due_at NULLS FIRST
     LIMIT $2
     FOR NO KEY UPDATE SKIP LOCKED`,
    [new Date(now), limit, skip],
  )
  return rows.map((row) => ({
    id: row.id,
    retentionDays: row.retention_days,
    position: row.retention_swept_txid === null ? undefined : { txid: row.retention_swept_txid, eventId: row.retention_swept_event! },
  }))
}

/** The earliest time any organization's history may be due: how long the oldest due history has waited. */
export async function earliestHistoryDueAt(db: Queryable): Promise<number | undefined> {
  const rows = await db.query<{ due: Date | null }>('SELECT min(history_due_at) AS due FROM organizations')
  return rows[0]?.due?.getTime()
}

export interface OrganizationEventRow extends SweptEvent {
  orgId: string
  position: SweepPosition
}

/**
 * Each organization's next `limit` events after its position, in commit
 * order, of transactions that have ended: one still in progress may yet
 * write events before any it has written, and what the sweep has passed must
 * be final (as a page of the events list is). An organization never swept
 * starts before its first event.
 */
export async function eventsAfter(tx: Queryable, organizations: readonly SweptOrganization[], limit: number): Promise<OrganizationEventRow[]> {
  const rows = await tx.query<{ org_id: string; txid: string; id: string; type: string; created_at: Date; task_id: string | null; interaction_id: string | null }>(
    `SELECT o.id AS org_id, e.* FROM unnest($1::text[], $2::xid8[], $3::text[]) AS o(id, txid, event_id)
     CROSS JOIN LATERAL (
       SELECT txid::text, id, type, created_at, task_id, interaction_id
       FROM events
       WHERE org_id = o.id AND (txid, id) > (o.txid, o.event_id) AND txid < pg_snapshot_xmin(pg_current_snapshot())
       ORDER BY events.txid, events.id
       LIMIT $4) e
     ORDER BY o.id, e.txid::xid8, e.id`,
    [
      organizations.map((organization) => organization.id),
      organizations.map((organization) => organization.position?.txid ?? '0'),
      organizations.map((organization) => organization.position?.eventId ?? ''),
      limit,
    ],
  )
  return rows.map((row) => ({
    orgId: row.org_id,
    position: { txid: row.txid, eventId: row.id },
    createdAt: row.created_at.getTime(),
    removes:
      row.type === 'task.completed'
        ? { task: row.task_id! }
        : row.type === 'webhook.test'
          ? { event: row.id }
          : row.type === 'interaction.finalized' && row.task_id === null
            ? { interaction: row.interaction_id! }
            : null,
  }))
}

/** What a sweep deletes: completed tasks, messages that answered no task, and webhook.test events. */
export interface HistoryToDelete {
  taskIds: readonly string[]
  interactionIds: readonly string[]
  eventIds: readonly string[]
}

/**
 * Locks the calls and conversations of these, then their tasks, each in id
 * order (as a settlement, a late result, a reply and an erasure lock them:
 * the interaction, then its task), before what holds them back is read: a
 * late result or a reply that wrote an event for one of them has then
 * committed, and its delivery still to be made is seen; one that comes after
 * finds them gone.
 */
export async function lockHistory(tx: Queryable, due: HistoryToDelete): Promise<void> {
  if (due.taskIds.length + due.interactionIds.length === 0) return
  await tx.query(
    `SELECT id FROM interactions
     WHERE id = ANY(ARRAY(SELECT unnest(interaction_ids) FROM tasks WHERE id = ANY($1::text[])) || $2::text[])
     ORDER BY id FOR UPDATE`,
    [due.taskIds, due.interactionIds],
  )
  await tx.query(`SELECT id FROM tasks WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE`, [due.taskIds])
}

/**
 * Of these, the tasks, messages and events whose history must wait: a
 * delivery of one of their events is still to be attempted (it must not be
 * lost), or a call of the task still runs (a task cancelled while one ran).
 * Statuses are read as expressions, so that no plan reads the partial index
 * of running interactions or pending deliveries whole.
 */
export async function heldHistory(tx: Queryable, due: HistoryToDelete): Promise<Set<string>> {
  if (due.taskIds.length + due.interactionIds.length + due.eventIds.length === 0) return new Set()
  const rows = await tx.query<{ id: string }>(
    `WITH listed AS (
       SELECT task_id AS held, delivery_ids FROM events WHERE task_id = ANY($1::text[])
       UNION ALL
       SELECT interaction_id, delivery_ids FROM events
       WHERE interaction_id = ANY($2::text[]) AND task_id IS NULL AND interaction_id IS NOT NULL
       UNION ALL
       SELECT id, delivery_ids FROM events WHERE id = ANY($3::text[])
     )
     SELECT DISTINCT listed.held AS id FROM listed
     WHERE listed.delivery_ids && ARRAY(
       SELECT id FROM deliveries WHERE id = ANY(ARRAY(SELECT unnest(delivery_ids) FROM listed)) AND status || '' = 'pending')
     UNION
     SELECT task_id FROM interactions
     WHERE id = ANY(ARRAY(SELECT unnest(interaction_ids) FROM tasks WHERE id = ANY($1::text[]))) AND status || '' <> 'finalized'`,
    [due.taskIds, due.interactionIds, due.eventIds],
  )
  return new Set(rows.map((row) => row.id))
}

/**
 * Deletes completed tasks with all they left, messages that answered no task
 * with all theirs, and test events, in two statements: first the calls and
 * conversations (and the provider messages kept with them), so that rows are
 * locked in the order a settlement and a late result lock them (the
 * interaction, then its task); then the tasks, their triggers, every event
 * of theirs (and the messages'), the events' deliveries and the deliveries'
 * attempts. Answers the rows deleted, and the contacts on file the deleted
 * tasks named.
 */
export async function deleteHistory(tx: Queryable, due: HistoryToDelete, now: number): Promise<{ rows: number; contactIds: string[] }> {
  if (due.taskIds.length + due.interactionIds.length + due.eventIds.length === 0) return { rows: 0, contactIds: [] }
  // A message received less than a week ago is still remembered against its provider's delivering it again (a
  // retention shorter than that), named by nothing: its provider and id alone, deleted when a week old.
  const [interactions] = await tx.query<{ rows: string }>(
    `WITH gone_interactions AS (
       DELETE FROM interactions
       WHERE id = ANY(ARRAY(SELECT unnest(interaction_ids) FROM tasks WHERE id = ANY($1::text[]) AND status = 'completed'))
          OR (id = ANY($2::text[]) AND task_id IS NULL)
       RETURNING id
     ), gone_messages AS (
       DELETE FROM provider_messages WHERE interaction_id = ANY(ARRAY(SELECT id FROM gone_interactions)) AND received_at < $3 RETURNING 1
     ), remembered_messages AS (
       UPDATE provider_messages SET interaction_id = NULL
       WHERE interaction_id = ANY(ARRAY(SELECT id FROM gone_interactions)) AND received_at >= $3
     )
     SELECT (SELECT count(*) FROM gone_interactions) + (SELECT count(*) FROM gone_messages) AS rows`,
    [due.taskIds, due.interactionIds, new Date(now - UNATTACHED_MESSAGE_DAYS * DAY_MS)],
  )
  const [rest] = await tx.query<{ rows: string; contact_ids: string[] }>(
    `WITH gone_tasks AS (
       DELETE FROM tasks WHERE id = ANY($1::text[]) AND status = 'completed' RETURNING id, trigger_id, contact_id
     ), gone_triggers AS (
       DELETE FROM triggers WHERE id = ANY(ARRAY(SELECT trigger_id FROM gone_tasks)) RETURNING 1
     ), gone_events AS (
       DELETE FROM events WHERE task_id = ANY(ARRAY(SELECT id FROM gone_tasks)) RETURNING delivery_ids
     ), gone_message_events AS (
       DELETE FROM events
       WHERE interaction_id = ANY($2::text[]) AND task_id IS NULL AND interaction_id IS NOT NULL
       RETURNING delivery_ids
     ), gone_test_events AS (
       DELETE FROM events WHERE id = ANY($3::text[]) AND type = 'webhook.test' RETURNING delivery_ids
     ), gone_deliveries AS (
       DELETE FROM deliveries
       WHERE id = ANY(ARRAY(SELECT unnest(delivery_ids) FROM gone_events UNION ALL SELECT unnest(delivery_ids) FROM gone_message_events
                            UNION ALL SELECT unnest(delivery_ids) FROM gone_test_events))
       RETURNING id
     ), gone_attempts AS (
       DELETE FROM delivery_attempts WHERE delivery_id = ANY(ARRAY(SELECT id FROM gone_deliveries)) RETURNING 1
     )
     SELECT (SELECT count(*) FROM gone_tasks) + (SELECT count(*) FROM gone_triggers) + (SELECT count(*) FROM gone_events)
              + (SELECT count(*) FROM gone_message_events) + (SELECT count(*) FROM gone_test_events) + (SELECT count(*) FROM gone_deliveries)
              + (SELECT count(*) FROM gone_attempts) AS rows,
            ARRAY(SELECT DISTINCT contact_id FROM gone_tasks WHERE contact_id IS NOT NULL) AS contact_ids`,
    [due.taskIds, due.interactionIds, due.eventIds],
  )
  return { rows: Number(interactions!.rows) + Number(rest!.rows), contactIds: rest!.contact_ids }
}

/**
 * Deletes, with the ids linked to them, those of these contacts on file that
 * no trigger left names: a person is on file as long as one of their tasks
 * is kept. A trigger that names any id linked to a contact reached that
 * contact (links are only ever added, and a trigger whose ids name two
 * contacts is refused), so each id is looked up in the triggers' ids index.
 * Answers the rows deleted.
 */
export async function deleteContactsNamedByNone(tx: Queryable, contactIds: readonly string[]): Promise<number> {
  if (contactIds.length === 0) return 0
  const [row] = await tx.query<{ rows: string }>(
    // Each link is looked up in the triggers' ids index by counting what names it, the organization checked
    // on what is found: asked only whether one trigger names it (EXISTS, LIMIT 1), the planner, which
    // cannot know the id and takes one trigger in a hundred to name it, read the organization's triggers
    // until it met one, and the links asked about are those that their last triggers no longer name:
    // every one of them, 56 ms a link at 12,000 triggers, against 0.03 through the index.
    `WITH named AS (
       SELECT DISTINCT l.contact_id FROM contact_ids l
       WHERE l.contact_id = ANY($1::text[])
         AND (SELECT count(*) FILTER (WHERE tr.org_id = l.org_id) FROM triggers tr
              WHERE tr.ids @> jsonb_build_array(jsonb_build_object('source', l.source, 'type', l.type, 'value', l.value))) > 0
     ), unnamed AS (
       SELECT id FROM contacts WHERE id = ANY($1::text[]) AND id <> ALL(ARRAY(SELECT contact_id FROM named)) ORDER BY id FOR UPDATE
     ), gone_links AS (
       DELETE FROM contact_ids WHERE contact_id = ANY(ARRAY(SELECT id FROM unnamed)) RETURNING 1
     ), gone_contacts AS (
       DELETE FROM contacts WHERE id = ANY(ARRAY(SELECT id FROM unnamed)) RETURNING 1
     )
     SELECT (SELECT count(*) FROM gone_links) + (SELECT count(*) FROM gone_contacts) AS rows`,
    [contactIds],
  )
  return Number(row!.rows)
}

/** Where an organization's sweep stopped, when its history may next be due, and before when its suppressions keep only digests. */
export interface SweepSaved {
  orgId: string
  position: SweepPosition | undefined
  dueAt: number
  suppressionsBefore: number
}

/**
 * Saves where each organization's sweep stopped and when its history may next
 * be due; answers those of them with a suppression made before its
 * `suppressionsBefore` that still keeps its number in the clear.
 */
export async function saveSweeps(tx: Queryable, saves: readonly SweepSaved[]): Promise<string[]> {
  if (saves.length === 0) return []
  const rows = await tx.query<{ id: string }>(
    `WITH saved AS (
       -- Due again when its next event is, or when its oldest suppression in the clear passes the retention period, if
       -- sooner: an organization without events would otherwise keep a suppression's number up to two periods.
       UPDATE organizations o SET retention_swept_txid = v.txid, retention_swept_event = v.event_id,
         history_due_at = LEAST(v.due_at, (SELECT min(s.created_at) FROM suppressions s WHERE s.org_id = o.id AND s.phone NOT LIKE 'sha256:%')
                                          + make_interval(days => o.retention_days))
       FROM unnest($1::text[], $2::xid8[], $3::text[], $4::timestamptz[], $5::timestamptz[]) AS v(id, txid, event_id, due_at, suppressions_before)
       WHERE o.id = v.id
       RETURNING o.id, v.suppressions_before
     )
     SELECT saved.id FROM saved
     WHERE EXISTS (SELECT 1 FROM suppressions WHERE org_id = saved.id AND created_at < saved.suppressions_before AND phone NOT LIKE 'sha256:%')`,
    [
      saves.map((save) => save.orgId),
      saves.map((save) => save.position?.txid ?? null),
      saves.map((save) => save.position?.eventId ?? null),
      saves.map((save) => new Date(save.dueAt)),
      saves.map((save) => new Date(save.suppressionsBefore)),
    ],
  )
  return rows.map((row) => row.id)
}

/**
 * Replaces the numbers of the organization's suppressions made before
 * `before` by their digests (as an erasure does: a suppression still meets
 * its number), in them and in the audit log's entries about them, at most
 * `limit`; answers how many.
 */
export async function digestSuppressions(tx: Queryable, phoneHashKey: Buffer, orgId: string, before: number, limit: number): Promise<number> {
  const rows = await tx.query<{ digested: string }>(
    `WITH old AS (
       SELECT phone FROM suppressions
       WHERE org_id = $1 AND created_at < $2 AND phone NOT LIKE 'sha256:%'
       ORDER BY created_at
       LIMIT $4
       FOR UPDATE
     ), erased AS (
       DELETE FROM suppressions s USING old WHERE s.org_id = $1 AND s.phone = old.phone RETURNING s.phone, s.reason, s.created_at
     ), digested AS (
       INSERT INTO suppressions (org_id, phone, reason, created_at)
       SELECT $1, phone_digest($3, phone), reason, created_at FROM erased
       ON CONFLICT DO NOTHING
     ), audited AS (
       UPDATE audit_log SET target = phone_digest($3, target)
       WHERE org_id = $1 AND target = ANY(ARRAY(SELECT phone FROM erased)) AND action LIKE 'suppression.%'
     )
     SELECT count(*) AS digested FROM erased`,
    [orgId, new Date(before), phoneHashKey, limit],
  )
  return Number(rows[0]!.digested)
}

/**
 * Deletes at most `limit` of the oldest rows of the service-wide history with
 * bounds of its own: endpoints' counts by the hour before `endpointHoursBefore`
 * (read endpoint by endpoint in their primary key), audit entries before
 * `auditBefore`, provider messages that name no interaction (recorded
 * before messages named theirs, migration 029, or outliving their
 * interaction's history) received more than a week ago, and the numbers'
 * records of attempts for the cap (number_attempts) and for the law's caps
 * (law_attempts) that no longer matter.
 * Answers the rows deleted.
 */
export async function deleteBoundedHistory(
  db: Queryable,
  bounds: { endpointHoursBefore: number; auditBefore: number; now: number },
  limit: number,
): Promise<number> {
  const [row] = await db.query<{ rows: string }>(
    `WITH gone_hours AS (
       DELETE FROM endpoint_hours h USING (
         SELECT old.endpoint_id, old.hour FROM webhook_endpoints w
         CROSS JOIN LATERAL (SELECT endpoint_id, hour FROM endpoint_hours WHERE endpoint_id = w.id AND hour < $1 ORDER BY hour LIMIT $4) old
         LIMIT $4) old
       WHERE h.endpoint_id = old.endpoint_id AND h.hour = old.hour
       RETURNING 1
     ), gone_entries AS (
       DELETE FROM audit_log WHERE id = ANY(ARRAY(SELECT id FROM audit_log WHERE at < $2 ORDER BY at LIMIT $4)) RETURNING 1
     ), gone_messages AS (
       DELETE FROM provider_messages
       WHERE (provider, message_id) IN (SELECT provider, message_id FROM provider_messages WHERE interaction_id IS NULL AND received_at < $3 LIMIT $4)
       RETURNING 1
     ), gone_numbers AS (
       DELETE FROM number_attempts
       WHERE (org_id, phone_digest) IN (SELECT org_id, phone_digest FROM number_attempts WHERE kept_until < $5 ORDER BY kept_until LIMIT $4)
       RETURNING 1
     ), gone_law_attempts AS (
       DELETE FROM law_attempts
       WHERE (org_id, phone_digest) IN (SELECT org_id, phone_digest FROM law_attempts WHERE kept_until < $5 ORDER BY kept_until LIMIT $4)
       RETURNING 1
     )
     SELECT (SELECT count(*) FROM gone_hours) + (SELECT count(*) FROM gone_entries) + (SELECT count(*) FROM gone_messages)
          + (SELECT count(*) FROM gone_numbers) + (SELECT count(*) FROM gone_law_attempts) AS rows`,
    [new Date(bounds.endpointHoursBefore), new Date(bounds.auditBefore), new Date(bounds.now - UNATTACHED_MESSAGE_DAYS * DAY_MS), limit, new Date(bounds.now)],
  )
  return Number(row!.rows)
}
