/**
 * Inbound calls (services/inboundCalls.ts): the task a caller's number has
 * with an organization, and the call recorded as an inbound interaction on
 * it, once however often the platform repeats its webhook.
 */
import type { Campaign } from '../domain/types.ts'
import type { Queryable } from './database.ts'
import { insertInteraction, recordProviderMessage, recordStarts } from './interactions.ts'

/** A task a caller's call lands on. */
export interface CalledBackTask {
  taskId: string
  orgId: string
  campaignId: string
  testMode: boolean
}

/**
 * The task of one of these organizations that reaches this number (the
 * tester's, in test mode) and is open, or completed within its
 * organization's callback window: an open one first, then the most recently
 * triggered. By triggers_by_phone (org_id, phone): a number has a handful of
 * triggers with an organization, however large its history.
 */
export async function findCallbackTask(db: Queryable, orgIds: readonly string[], phone: string, now: number): Promise<CalledBackTask | undefined> {
  const rows = await db.query<{ id: string; org_id: string; campaign_id: string; test_mode: boolean }>(
    `SELECT t.id, t.org_id, t.campaign_id, t.test_mode
     FROM triggers tr
     JOIN tasks t ON t.id = tr.task_id
     JOIN organizations o ON o.id = tr.org_id
     WHERE tr.org_id = ANY($1::text[]) AND tr.phone = $2
       AND (t.status <> 'completed' OR t.completed_at >= $3::timestamptz - make_interval(days => o.callback_window_days))
     ORDER BY t.status = 'completed', tr.created_at DESC, t.id DESC
     LIMIT 1`,
    [orgIds, phone, new Date(now)],
  )
  const row = rows[0]
  return row && { taskId: row.id, orgId: row.org_id, campaignId: row.campaign_id, testMode: row.test_mode }
}

export interface InboundCallRecord {
  interactionId: string
  /** The campaign whose number was called: the interaction is its. */
  campaign: Campaign
  task: CalledBackTask | undefined
  /** The caller's number ('' when withheld). */
  from: string
  /** The platform's id of the call: the interaction's provider_ref. Undefined where the platform names the call later. */
  providerRef: string | undefined
  /** Without `providerRef`: what a repeat of the platform's request has too. */
  repeatKey: string | undefined
  at: number
  settleAt: number
}

/**
 * How long a platform that names no call in its request repeats it (Retell:
 * up to 3 more times, 10 s apart): a request with the same key within this
 * span is the same call; after it, another call of the same person.
 */
const REPEAT_SPAN_MS = 60_000

/**
 * Records the call as an inbound interaction (on its task, when it has one),
 * or finds the one recorded for it already: a platform repeats a webhook it
 * had no answer to in time, and each repeat must hand the call to the same
 * interaction. Known by its `providerRef`, it is active at once; otherwise
 * it is starting until the platform's first report about it names it (by
 * the interaction in its metadata), as an outbound start whose answer was
 * lost. Its task is held until the call is settled (holdForCallBack); the
 * call's end steps it on (services/settlement.ts).
 */
export async function recordInboundCall(tx: Queryable, call: InboundCallRecord): Promise<{ interactionId: string; campaignId: string } | undefined> {
  const { provider } = call.campaign
  let key: string
  if (call.providerRef !== undefined) key = `call:${call.providerRef}`
  else {
    // Keyed by the span it falls in, and looked for in the one before too: a repeat across a boundary is still one call.
    const span = Math.floor(call.at / REPEAT_SPAN_MS)
    const keys = [span, span - 1].map((each) => `inbound:${call.repeatKey ?? ''}:${each}`)
    const earlier = await recordedFor(tx, provider, keys, call.at - REPEAT_SPAN_MS)
    if (earlier !== undefined) return earlier
    key = keys[0]!
  }
  // Undefined only once the call's interaction is swept with the history: a repeat that late hands nothing over.
  if (!(await recordProviderMessage(tx, provider, key, call.interactionId, call.at))) return recordedFor(tx, provider, [key], 0)
  const taskId = call.task?.taskId ?? null
  if (taskId !== null) await holdForCallBack(tx, taskId, call.settleAt, call.at)
  await insertInteraction(tx, {
    id: call.interactionId,
    orgId: call.campaign.orgId,
    taskId,
    campaignId: call.campaign.id,
    channel: call.campaign.channel,
    provider,
    providerConfig: call.campaign.providerConfig,
    direction: 'inbound',
    attempt: null,
    toPhone: call.from,
    testMode: call.task?.testMode ?? false,
    settleAt: call.settleAt,
    startedBy: null,
    startedAt: call.at,
  })
  if (call.providerRef !== undefined) await recordStarts(tx, [{ id: call.interactionId, providerRef: call.providerRef, settleAt: call.settleAt }])
  return { interactionId: call.interactionId, campaignId: call.campaign.id }
}

/**
 * Holds a task for a call back until `until` (held_by 'callback'), so that
 * no attempt dials the person while they talk: a pending one, and one whose
 * outbound attempt is starting or running (the person called as it was
 * placed). The call back wins that race: the attempt is given back (the
 * task's attempts one fewer, as a withdrawn start's), and its end steers the
 * task no more (services/settlement.ts); the call back's end does. A task
 * whose conversation took place and waits for its result, or that has
 * completed, is left as it is.
 */
async function holdForCallBack(tx: Queryable, taskId: string, until: number, now: number): Promise<void> {
  // Locked first, then read by a statement of its own: one that waited for a dispatcher's lock sees the attempt it
  // began (an UPDATE's own recheck would read the interactions as of before the wait).
  await tx.query('SELECT 1 FROM tasks WHERE id = $1 FOR UPDATE', [taskId])
  await tx.query(
    `UPDATE tasks t
     SET attempts = CASE WHEN t.status = 'in_progress' THEN t.attempts - 1 ELSE t.attempts END,
         due_at = CASE WHEN t.status = 'pending' THEN greatest(t.due_at, $2) ELSE $2 END,
         status = 'pending', held_by = 'callback', updated_at = $3
     WHERE t.id = $1 AND (t.status = 'pending' OR (t.status = 'in_progress' AND EXISTS (
       SELECT 1 FROM interactions i WHERE i.id = ANY(t.interaction_ids) AND i.direction = 'outbound' AND i.status IN ('starting', 'active'))))`,
    [taskId, new Date(until), new Date(now)],
  )
}

/** The interaction recorded for the first of these keys received since `since`. */
async function recordedFor(tx: Queryable, provider: string, keys: readonly string[], since: number): Promise<{ interactionId: string; campaignId: string } | undefined> {
  const rows = await tx.query<{ id: string; campaign_id: string }>(
    `SELECT i.id, i.campaign_id FROM provider_messages m JOIN interactions i ON i.id = m.interaction_id
     WHERE m.provider = $1 AND m.message_id = ANY($2::text[]) AND m.received_at >= $3
     ORDER BY m.received_at LIMIT 1`,
    [provider, keys, new Date(since)],
  )
  return rows[0] && { interactionId: rows[0].id, campaignId: rows[0].campaign_id }
}

/**
 * Tasks held by a call back that ended without completing them: pending
 * again, due at `dueAt` (the attempt policy's next step after the call).
 * A task no longer held (completed, or an outbound attempt that was already
 * running) is left as it is.
 */
export async function releaseCallbackHolds(tx: Queryable, releases: readonly { taskId: string; dueAt: number }[], now: number): Promise<void> {
  if (releases.length === 0) return
  await tx.query(
    `UPDATE tasks t SET due_at = v.due_at, held_by = NULL, updated_at = $3
     FROM unnest($1::text[], $2::timestamptz[]) AS v(id, due_at)
     WHERE t.id = v.id AND t.status = 'pending' AND t.held_by = 'callback'`,
    [releases.map((r) => r.taskId), releases.map((r) => new Date(r.dueAt)), new Date(now)],
  )
}
