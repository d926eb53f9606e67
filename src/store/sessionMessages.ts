/** Session messages (migration 047): what a client sent a person within their window, with what became of it. */
import type { SessionMessageContent } from '../channels/sessionMessages.ts'
import type { PacingSettings, Provider } from '../domain/campaignSettings.ts'
import type { Channel, JsonObject, SessionMessage, SessionMessageStatus } from '../domain/types.ts'
import type { Queryable } from './database.ts'

interface Row {
  id: string
  interaction_id: string
  status: SessionMessageStatus
  content: JsonObject | null
  provider_message_id: string | null
  error: string | null
  created_at: Date
  status_at: Date
  request_hash: Uint8Array | null
}

const COLUMNS = 'id, interaction_id, status, content, provider_message_id, error, created_at, status_at, request_hash'

const toMessage = (row: Row): SessionMessage => ({
  id: row.id,
  interactionId: row.interaction_id,
  status: row.status,
  content: row.content,
  providerMessageId: row.provider_message_id,
  error: row.error,
  createdAt: row.created_at.toISOString(),
  statusAt: row.status_at.toISOString(),
})

/** The interaction a message is to go to, as sending one reads it: only the organization's. */
export interface MessageTarget {
  id: string
  campaignId: string
  channel: Channel
  provider: Provider
  providerConfig: JsonObject
  /** E.164; empty once the person is erased. */
  toPhone: string
  windowClosesAt: number | null
  pacing: PacingSettings
}

export async function findMessageTarget(db: Queryable, orgId: string, interactionId: string): Promise<MessageTarget | undefined> {
  const rows = await db.query<{
    id: string
    campaign_id: string
    channel: Channel
    provider: Provider
    provider_config: JsonObject
    to_phone: string
    window_closes_at: Date | null
    pacing: PacingSettings
  }>(
    // The window is the person's on the task, whichever of its interactions their latest message landed on (a
    // reply after the first is an inbound interaction of the task), and this interaction's own without a task.
    `SELECT i.id, i.campaign_id, i.channel, i.provider, i.provider_config, i.to_phone, c.pacing,
            (SELECT max(w.window_closes_at) FROM interactions w
             WHERE w.id = ANY(ARRAY(SELECT unnest(t.interaction_ids) FROM tasks t WHERE t.id = i.task_id) || i.id)) AS window_closes_at
     FROM interactions i JOIN campaigns c ON c.id = i.campaign_id
     WHERE i.id = $1 AND i.org_id = $2`,
    [interactionId, orgId],
  )
  const row = rows[0]
  if (row === undefined) return undefined
  return {
    id: row.id,
    campaignId: row.campaign_id,
    channel: row.channel,
    provider: row.provider,
    providerConfig: row.provider_config,
    toPhone: row.to_phone,
    windowClosesAt: row.window_closes_at === null ? null : row.window_closes_at.getTime(),
    pacing: row.pacing,
  }
}

/**
 * Locks the interaction against an erasure until the message is recorded (an
 * erasure of its person then waits, and erases the message with the rest);
 * false when its person has been erased meanwhile, or it is gone.
 */
export async function lockReachableInteraction(tx: Queryable, interactionId: string): Promise<boolean> {
  const rows = await tx.query(`SELECT 1 FROM interactions WHERE id = $1 AND to_phone <> '' FOR SHARE`, [interactionId])
  return rows.length === 1
}

/** The message an organization's request with this Idempotency-Key made, with the hash of that request's body. */
export async function findMessageByKey(db: Queryable, orgId: string, key: string): Promise<{ message: SessionMessage; requestHash: Buffer } | undefined> {
  const rows = await db.query<Row>(`SELECT ${COLUMNS} FROM session_messages WHERE org_id = $1 AND idempotency_key = $2`, [orgId, key])
  const row = rows[0]
  return row === undefined ? undefined : { message: toMessage(row), requestHash: Buffer.from(row.request_hash ?? []) }
}

/** Records a message about to be handed to its provider (`sending`); false when a request with its Idempotency-Key has recorded one meanwhile. */
export async function insertSessionMessage(
  tx: Queryable,
  message: { id: string; orgId: string; interactionId: string; provider: Provider; content: SessionMessageContent; key: string | undefined; requestHash: Buffer; at: number },
): Promise<boolean> {
  const rows = await tx.query(
    `INSERT INTO session_messages (id, org_id, interaction_id, provider, content, status, idempotency_key, request_hash, created_at, status_at)
     VALUES ($1, $2, $3, $4, $5, 'sending', $6, $7, $8, $8)
     ON CONFLICT (org_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
     RETURNING id`,
    [message.id, message.orgId, message.interactionId, message.provider, JSON.stringify(message.content), message.key ?? null, message.requestHash, new Date(message.at)],
  )
  return rows.length === 1
}

/** What the provider answered a message handed to it: its id and `accepted`, or `unknown` (no answer) with why. */
export async function recordHandedMessage(
  db: Queryable,
  id: string,
  outcome: { status: 'accepted'; providerMessageId: string } | { status: 'unknown'; error: string },
  at: number,
): Promise<SessionMessage> {
  const rows = await db.query<Row>(
    `UPDATE session_messages SET status = $2, provider_message_id = $3, error = $4, status_at = $5 WHERE id = $1 RETURNING ${COLUMNS}`,
    [id, outcome.status, outcome.status === 'accepted' ? outcome.providerMessageId : null, outcome.status === 'unknown' ? outcome.error : null, new Date(at)],
  )
  return toMessage(rows[0]!)
}

/** Forgets a message its provider certainly did not send: its Idempotency-Key may be used again. */
export async function deleteUnsentMessage(db: Queryable, id: string): Promise<void> {
  await db.query(`DELETE FROM session_messages WHERE id = $1 AND status = 'sending'`, [id])
}

/** The interaction's session messages, oldest first. */
export async function listSessionMessages(db: Queryable, interactionId: string): Promise<SessionMessage[]> {
  const rows = await db.query<Row>(`SELECT ${COLUMNS} FROM session_messages WHERE interaction_id = $1 ORDER BY id`, [interactionId])
  return rows.map(toMessage)
}

/**
 * How long a message handed to its provider is waited for: past the provider
 * request's own deadline (15 s), a `sending` one was left by a process that
 * stopped, and a status is no longer asked for again on its account.
 */
export const AWAITED_FOR_MS = 60_000

/**
 * A message left `sending` by a process that stopped before the provider's
 * answer was recorded, made `unknown` (whether it reached the person cannot
 * be told), so that a replay of its key answers as for a send that got no
 * answer rather than waiting for ever; any other is answered as it is.
 */
export async function settleAbandonedMessage(db: Queryable, message: SessionMessage, now: number): Promise<SessionMessage> {
  if (message.status !== 'sending' || Date.parse(message.statusAt) > now - AWAITED_FOR_MS) return message
  const rows = await db.query<Row>(
    `UPDATE session_messages SET status = 'unknown', error = $2, status_at = $3 WHERE id = $1 AND status = 'sending' RETURNING ${COLUMNS}`,
    [message.id, 'The process sending it stopped before the provider answered.', new Date(now)],
  )
  return rows[0] === undefined ? message : toMessage(rows[0])
}

/**
 * A status the provider reports of a message, by its id, applied only to a
 * message of these campaigns' interactions and only forward (accepted < sent
 * < delivered < read; failed ends it): Meta repeats and reorders statuses.
 * `awaited` when it names no such message while one of these campaigns'
 * messages still waits for the provider's answer, which may name it: the
 * status came first, and is to be delivered again; `unknown` when it names
 * none at all.
 */
export async function recordMessageStatus(
  db: Queryable,
  provider: Provider,
  providerMessageId: string,
  campaignIds: readonly string[],
  status: 'sent' | 'delivered' | 'read' | 'failed',
  error: string | null,
  at: number,
  now: number,
): Promise<'applied' | 'awaited' | 'unknown'> {
  const rows = await db.query<{ found: boolean; awaited: boolean }>(
    `WITH target AS (
       SELECT m.id, m.status FROM session_messages m JOIN interactions i ON i.id = m.interaction_id
       WHERE m.provider = $1 AND m.provider_message_id = $2 AND i.campaign_id = ANY($3::text[])
     ), moved AS (
       UPDATE session_messages m SET status = $4, error = $5, status_at = $6
       FROM target t
       WHERE m.id = t.id AND t.status NOT IN ('failed', 'read')
         AND array_position(ARRAY['sending', 'unknown', 'accepted', 'sent', 'delivered', 'read'], t.status)
             < coalesce(array_position(ARRAY['sending', 'unknown', 'accepted', 'sent', 'delivered', 'read'], $4), 7)
     )
     SELECT EXISTS (SELECT 1 FROM target) AS found,
            EXISTS (SELECT 1 FROM session_messages m JOIN interactions i ON i.id = m.interaction_id
                    WHERE m.status = 'sending' AND m.provider = $1 AND i.campaign_id = ANY($3::text[]) AND m.status_at > $7) AS awaited`,
    [provider, providerMessageId, [...campaignIds], status, error, new Date(at), new Date(now - AWAITED_FOR_MS)],
  )
  const row = rows[0]!
  return row.found ? 'applied' : row.awaited ? 'awaited' : 'unknown'
}
