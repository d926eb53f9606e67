/**
 * Inbound calls (services/inboundCalls.ts): the task a caller's number has
 * with an organization, and the call recorded as an inbound interaction on
 * it, once however often the platform repeats its webhook.
 */
import type { Campaign, InteractionStatus } from '../domain/types.ts'
import type { Queryable } from './database.ts'
import { insertInteraction, recordStarts } from './interactions.ts'

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
  /**
   * The platform's id of the call (the interaction's provider_ref: a repeat
   * of the same call names it too), or, where the platform names the call
   * only later, what a repeat of the same request has (a digest of it).
   */
  call: { ref: string } | { repeatKey: string }
  at: number
  settleAt: number
}

/**
 * How long a platform that names no call in its request repeats it (Retell:
 * up to 3 more times, 10 s apart): a request with the same key within this
 * span, whose interaction is not named by the platform yet, is the same
 * call; otherwise another call of the same person.
 */
const REPEAT_SPAN_MS = 60_000

/**
 * Records the call as an inbound interaction (on its task, when it has one),
 * or finds the one recorded for it already: a platform repeats a webhook it
 * had no answer to in time, and each repeat must hand the call to the same
 * interaction. Known by its reference, it is active at once; otherwise it is
 * starting until the platform's first report about it names it (by the
 * interaction in its metadata), as an outbound start whose answer was lost.
 * Its task is held until the call is settled (holdForCallBack); the call's
 * end steps it on (services/settlement.ts).
 */
export async function recordInboundCall(tx: Queryable, call: InboundCallRecord): Promise<{ interactionId: string; campaignId: string } | undefined> {
  const { provider } = call.campaign
  const key = 'ref' in call.call ? `call:${call.call.ref}` : `inbound:${call.call.repeatKey}`
  const inserted = await tx.query(
    `INSERT INTO provider_messages (provider, message_id, received_at, interaction_id) VALUES ($1, $2, $3, $4)
     ON CONFLICT (provider, message_id) DO NOTHING RETURNING 1`,
    [provider, key, new Date(call.at), call.interactionId],
  )
  if (inserted.length === 0) {
    // The key is taken: read, locked, by a statement of its own, so that a request recorded concurrently is seen.
    const [earlier] = await tx.query<{ received_at: Date; id: string | null; campaign_id: string | null; status: InteractionStatus | null }>(
      `SELECT m.received_at, i.id, i.campaign_id, i.status
       FROM provider_messages m LEFT JOIN interactions i ON i.id = m.interaction_id
       WHERE m.provider = $1 AND m.message_id = $2
       FOR UPDATE OF m`,
      [provider, key],
    )
    // A call the platform names: the same call. A request without a reference: the same call while its interaction
    // is unnamed and within the span; after that, the person calling again, who takes the key over.
    const repeat = 'ref' in call.call || (earlier!.received_at.getTime() >= call.at - REPEAT_SPAN_MS && earlier!.status === 'starting')
    // Undefined only once the call's interaction is swept with the history: a repeat that late hands nothing over.
    if (repeat) return earlier!.id === null ? undefined : { interactionId: earlier!.id, campaignId: earlier!.campaign_id! }
    await tx.query('UPDATE provider_messages SET received_at = $3, interaction_id = $4 WHERE provider = $1 AND message_id = $2', [provider, key, new Date(call.at), call.interactionId])
  }
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
  if ('ref' in call.call) await recordStarts(tx, [{ id: call.interactionId, providerRef: call.call.ref, settleAt: call.settleAt }])
  return { interactionId: call.interactionId, campaignId: call.campaign.id }
}

/**
 * Holds a task for a call back until `until` (held_by 'callback'), so that
 * no attempt dials the person while they talk: a pending one (its due time
 * kept in callback_resume_at, for when the hold ends), and one whose outbound
 * attempt is starting or running (the person called as it was placed). The
 * call back wins that race: the attempt is given back, as a withdrawn
 * start's is (the task's attempts one fewer, and the interaction numbered no
 * attempt: it then steers the task no more, services/settlement.ts), and the
 * task is due again when the hold ends. A task whose conversation took
 * place and waits for its result is not held (the call back's end may still
 * complete it), nor one that completed.
 *
 * Locked in the order a settlement locks: the live outbound interactions,
 * then the task; then read afresh, by statements of their own, so that an
 * attempt a dispatcher began while it held the task is seen.
 */
async function holdForCallBack(tx: Queryable, taskId: string, until: number, now: number): Promise<void> {
  await tx.query(
    `SELECT i.id FROM interactions i
     WHERE i.id = ANY(ARRAY(SELECT unnest(interaction_ids) FROM tasks WHERE id = $1)) AND i.direction = 'outbound' AND i.status IN ('starting', 'active')
     ORDER BY i.id FOR UPDATE OF i`,
    [taskId],
  )
  await tx.query('SELECT 1 FROM tasks WHERE id = $1 FOR UPDATE', [taskId])
  await tx.query(
    `WITH given_back AS (
       UPDATE interactions i SET attempt = NULL
       FROM tasks t
       WHERE t.id = $1 AND t.status = 'in_progress' AND i.id = ANY(t.interaction_ids) AND i.direction = 'outbound' AND i.status IN ('starting', 'active')
         AND i.attempt IS NOT NULL
       RETURNING i.id
     )
     UPDATE tasks t
     SET attempts = t.attempts - (SELECT count(*) FROM given_back),
         -- A hold that ended otherwise (its time passed, the dispatcher took the task) left its resume time behind.
         callback_resume_at = CASE WHEN t.status <> 'pending' THEN $3 WHEN t.held_by = 'callback' THEN coalesce(t.callback_resume_at, t.due_at) ELSE t.due_at END,
         due_at = greatest(t.due_at, $2),
         status = 'pending', held_by = 'callback', updated_at = $3
     WHERE t.id = $1 AND (t.status = 'pending' OR EXISTS (SELECT 1 FROM given_back))`,
    [taskId, new Date(until), new Date(now)],
  )
}

/** A task held by a call back is due at `at` when the hold ends, unless the call back says otherwise (a callback time a late result asked for). */
export async function resumeCallbackHoldAt(tx: Queryable, taskId: string, at: number): Promise<void> {
  await tx.query(`UPDATE tasks SET callback_resume_at = $2 WHERE id = $1 AND status = 'pending' AND held_by = 'callback'`, [taskId, new Date(at)])
}

/**
 * Tasks held by a call back that ended without completing them: pending
 * again, due at `dueAt` (a callback time the person asked for), or, null,
 * when they were before the hold (now at the earliest). Not while another
 * call back of the task still runs. A task no longer held is left as it is.
 */
export async function releaseCallbackHolds(tx: Queryable, releases: readonly { taskId: string; dueAt: number | null }[], now: number): Promise<void> {
  if (releases.length === 0) return
  await tx.query(
    `UPDATE tasks t
     SET due_at = coalesce(v.due_at, greatest(t.callback_resume_at, $3)), held_by = NULL, callback_resume_at = NULL, updated_at = $3
     FROM unnest($1::text[], $2::timestamptz[]) AS v(id, due_at)
     WHERE t.id = v.id AND t.status = 'pending' AND t.held_by = 'callback'
       AND NOT EXISTS (SELECT 1 FROM interactions i WHERE i.id = ANY(t.interaction_ids) AND i.direction = 'inbound' AND i.status IN ('starting', 'active'))`,
    [releases.map((r) => r.taskId), releases.map((r) => (r.dueAt === null ? null : new Date(r.dueAt))), new Date(now)],
  )
}
