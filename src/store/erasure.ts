/**
 * Erasing a person's personal data: their name, number, email, the context
 * values sent with their triggers, and what their conversations' results and
 * messages hold (summaries, extracted data, transcripts, recording links),
 * from every row that holds them, events included. The rows themselves stay
 * (a task keeps its status, outcome and attempts; a trigger and its events
 * keep the client's ids; a result keeps its disposition), so that counts,
 * outcomes and the webhooks already sent still add up.
 */
import { ERASED_RESULT_FIELDS } from '../domain/conversationResult.ts'
import type { OutboxEvent } from '../domain/events.ts'
import type { ExternalId } from '../domain/types.ts'
import type { Queryable } from './database.ts'
import { decodeEventBody, encodeEventBody } from './eventBodies.ts'

/** Whom to erase: the person one of the client's ids names, or the holder of a number (E.164). */
export type Person = { id: ExternalId } | { phone: string }

/** What an organization holds of a person: found by the id or the number, and by the numbers of the triggers the id names. */
export interface PersonRecords {
  triggerIds: string[]
  taskIds: string[]
  /** Their numbers (E.164), and the number asked for. */
  phones: string[]
  contactIds: string[]
  /** Every id their triggers named. */
  ids: ExternalId[]
}

/**
 * The person's records. By id: the triggers that named it, the contact it
 * names, and the triggers sent to the numbers of those triggers (the same
 * person under another id, or none) — but not through a test-mode trigger's
 * number, which is the tester's. By number: the triggers sent to it, test
 * mode or not. Each read is an index's: triggers_ids, triggers_by_phone,
 * contact_ids' key.
 */
export async function findPersonRecords(tx: Queryable, orgId: string, person: Person): Promise<PersonRecords> {
  const byId = 'id' in person
  const rows = await tx.query<{ trigger_id: string; task_id: string; phone: string; ids: ExternalId[]; contact_id: string | null }>(
    // By id, the triggers' ids index is read alone (MATERIALIZED keeps the organization's check out of that
    // read): a generic plan that ANDed it with triggers_by_org's bitmap read the organization's every trigger.
    `WITH found_by_key AS MATERIALIZED (
       SELECT id, task_id, phone, ids, test_mode, org_id FROM triggers
       WHERE ${byId ? 'ids @> jsonb_build_array($2::jsonb)' : 'org_id = $1 AND phone = $2'}
     ), named AS (
       SELECT id, task_id, phone, ids, test_mode FROM found_by_key WHERE org_id = $1
     ), numbers AS (
       SELECT DISTINCT phone FROM named WHERE ${byId ? "NOT test_mode AND phone <> ''" : 'false'}
     ), found AS (
       SELECT id, task_id, phone, ids FROM named
       UNION
       SELECT tr.id, tr.task_id, tr.phone, tr.ids FROM numbers JOIN triggers tr ON tr.org_id = $1 AND tr.phone = numbers.phone
     )
     SELECT found.id AS trigger_id, found.task_id, found.phone, found.ids, t.contact_id
     FROM found JOIN tasks t ON t.id = found.task_id
     ORDER BY found.id`,
    [orgId, byId ? JSON.stringify(person.id) : person.phone],
  )
  const contactIds = new Set(rows.flatMap((row) => (row.contact_id === null ? [] : [row.contact_id])))
  if ('id' in person) {
    const named = await tx.query<{ contact_id: string }>(
      'SELECT contact_id FROM contact_ids WHERE org_id = $1 AND source = $2 AND type = $3 AND value = $4',
      [orgId, person.id.source, person.id.type, person.id.value],
    )
    for (const { contact_id } of named) contactIds.add(contact_id)
  }
  const phones = new Set(rows.map((row) => row.phone).filter((phone) => phone !== ''))
  if ('phone' in person) phones.add(person.phone)
  const ids = new Map<string, ExternalId>()
  for (const row of rows) for (const id of row.ids) ids.set(JSON.stringify([id.source, id.type, id.value]), id)
  return {
    triggerIds: rows.map((row) => row.trigger_id),
    taskIds: [...new Set(rows.map((row) => row.task_id))],
    phones: [...phones],
    contactIds: [...contactIds],
    ids: [...ids.values()],
  }
}

/**
 * Locks the interactions an erasure of these records changes, in id order,
 * before their tasks are locked: in the order a settlement locks them (the
 * interaction, then its task), so that an erasure and the settlement of one
 * of the person's calls never wait for each other in a circle. Answers
 * their ids.
 */
export async function lockPersonInteractions(tx: Queryable, orgId: string, records: PersonRecords): Promise<string[]> {
  const rows = await tx.query<{ id: string }>(
    `SELECT id FROM interactions
     WHERE id = ANY(ARRAY(
         SELECT id FROM interactions WHERE task_id = ANY($2::text[])
         UNION ALL
         SELECT id FROM interactions WHERE org_id = $1 AND task_id IS NULL AND to_phone = ANY($3::text[])))
     ORDER BY id
     FOR UPDATE`,
    [orgId, records.taskIds, records.phones],
  )
  return rows.map((row) => row.id)
}

/**
 * Locks the calls begun for these tasks since `locked` were locked (a
 * dispatcher may have begun one in between), once the tasks are held and no
 * more can begin; without waiting: a settlement that holds one waits for a
 * task the caller holds. Throws (lock_not_available, 55P03) if one is held:
 * the caller lets go of everything and starts again.
 */
export async function lockInteractionsBegunSince(tx: Queryable, taskIds: readonly string[], locked: readonly string[]): Promise<void> {
  await tx.query(`SELECT id FROM interactions WHERE task_id = ANY($1::text[]) AND id <> ALL($2::text[]) ORDER BY id FOR UPDATE NOWAIT`, [taskIds, locked])
}

/** What an erasure changed, row by row: rows erased before are left as they are, and not counted. */
export interface ErasedCounts {
  tasks: number
  contacts: number
  interactions: number
}

/** A result with what erasure removes from it set to null (a JSON object to merge over it, `||`). */
const ERASED_RESULT = JSON.stringify(Object.fromEntries(ERASED_RESULT_FIELDS.map((field) => [field, null])))

/** What an interaction keeps of the person: no number, no messages, a result without its free text. */
const ERASED_INTERACTION = `to_phone = '', replies = NULL, result = result || '${ERASED_RESULT}'::jsonb`
/** An interaction that still holds something ERASED_INTERACTION removes. */
const HOLDS_PERSONAL_DATA = `(to_phone <> '' OR replies IS NOT NULL OR result || '${ERASED_RESULT}'::jsonb <> result)`

/**
 * Clears the records' personal data: triggers and tasks keep no contact, no
 * context and (triggers) no number; interactions with the person (those of the
 * tasks, and messages from the numbers that answered no task) keep
 * no number, no messages and a result without its free text, and so do the
 * events that reported them; the contacts are deleted with the ids that named
 * them, so that a trigger sent later without a contact finds no one on file.
 * Events are found by their task (events_by_task), or for a message that
 * answered no task by its interaction (events_of_taskless_interactions).
 */
export async function erasePersonRecords(tx: Queryable, orgId: string, records: PersonRecords): Promise<ErasedCounts> {
  // A person erased before is found again by the ids their triggers keep: only what still holds their data is
  // written (no new row version) and counted, so that erasing them again answers zeros.
  await tx.query(
    `UPDATE triggers SET contact = NULL, context = '{}', phone = ''
     WHERE id = ANY($1::text[]) AND (contact IS NOT NULL OR context <> '{}' OR phone <> '')`,
    [records.triggerIds],
  )
  const tasks = await tx.query(
    // A task whose contact or context is its trigger's (NULL, migration 040) is written too: it is counted, and reads '{}' as one erased before.
    `UPDATE tasks SET contact = '{}', context = '{}'
     WHERE id = ANY($1::text[]) AND (contact IS DISTINCT FROM '{}' OR context IS DISTINCT FROM '{}') RETURNING id`,
    [records.taskIds],
  )
  const ofTasks = await tx.query<{ id: string }>(
    `UPDATE interactions SET ${ERASED_INTERACTION} WHERE task_id = ANY($1::text[]) AND ${HOLDS_PERSONAL_DATA} RETURNING id`,
    [records.taskIds],
  )
  const replies = await tx.query<{ id: string }>(
    `UPDATE interactions SET ${ERASED_INTERACTION}
     WHERE org_id = $1 AND task_id IS NULL AND to_phone = ANY($2::text[]) AND ${HOLDS_PERSONAL_DATA} RETURNING id`,
    [orgId, records.phones],
  )
  await eraseEventResults(tx, orgId, records.taskIds, replies.map((row) => row.id))
  // What was sent to them in their window (a session message can be sent to no erased person: it has no number).
  await tx.query(`UPDATE session_messages SET content = NULL WHERE interaction_id = ANY($1::text[]) AND content IS NOT NULL`, [
    [...ofTasks, ...replies].map((row) => row.id),
  ])
  await tx.query(
    `DELETE FROM contact_ids c USING jsonb_array_elements($3::jsonb) AS e(id)
     WHERE c.org_id = $1 AND c.source = e.id->>'source' AND c.type = e.id->>'type' AND c.value = e.id->>'value'
       AND c.contact_id = ANY($2::text[])`,
    [orgId, records.contactIds, JSON.stringify(records.ids)],
  )
  const contacts = await tx.query(`DELETE FROM contacts WHERE org_id = $1 AND id = ANY($2::text[]) RETURNING id`, [orgId, records.contactIds])
  return { tasks: tasks.length, contacts: contacts.length, interactions: ofTasks.length + replies.length }
}

/** Erases what the person said from an event: its result's fields, or the text and files of the message it reports; false when it held nothing of it. */
function eraseFrom(event: OutboxEvent): boolean {
  const { message, result } = event.data as { message?: { text: string | null; media?: unknown[] }; result?: unknown }
  if (event.type === 'interaction.message_received' && message !== undefined) {
    // An event written before messages carried files has no media: it stays without.
    if (message.text === null && (message.media ?? []).length === 0) return false
    message.text = null
    if (message.media !== undefined) message.media = []
    return true
  }
  if (typeof result !== 'object' || result === null) return false
  const fields = result as Record<string, unknown>
  if (ERASED_RESULT_FIELDS.every((field) => fields[field] === null || fields[field] === undefined)) return false
  for (const field of ERASED_RESULT_FIELDS) fields[field] = null
  return true
}

/**
 * Erases the results the events of the tasks, and of the interactions that
 * answered no task, carry (interaction.finalized, task.completed and
 * interaction.result_added of a conversation that reported something), and
 * the text of the messages they report (interaction.message_received), and
 * what their receivers answered to each delivery attempt. Their bodies are deflated (store/eventBodies.ts): each is read, and written again
 * only when its result still holds something to erase, in id order, as a
 * redelivery locks events.
 */
async function eraseEventResults(tx: Queryable, orgId: string, taskIds: readonly string[], tasklessInteractionIds: readonly string[]): Promise<void> {
  const rows = await tx.query<{ id: string; body: Uint8Array }>(
    `SELECT id, body FROM events WHERE id = ANY(ARRAY(
       SELECT id FROM events WHERE task_id = ANY($2::text[]) AND org_id = $1
       UNION ALL
       SELECT id FROM events WHERE interaction_id = ANY($3::text[]) AND task_id IS NULL AND interaction_id IS NOT NULL AND org_id = $1))
     ORDER BY id FOR UPDATE`,
    [orgId, taskIds, tasklessInteractionIds],
  )
  // What the receivers answered to these events (migration 050) may echo what the events said.
  await tx.query(
    `WITH delivered AS (SELECT unnest(delivery_ids) AS id FROM events WHERE id = ANY($1::text[])), answers AS (
       UPDATE delivery_attempts SET response = NULL WHERE delivery_id IN (SELECT id FROM delivered) AND response IS NOT NULL
     )
     UPDATE deliveries SET final_response = NULL WHERE id IN (SELECT id FROM delivered) AND final_response IS NOT NULL`,
    [rows.map(({ id }) => id)],
  )
  const erased: { id: string; body: string }[] = []
  for (const row of rows) {
    const event = JSON.parse(decodeEventBody(row.body)) as OutboxEvent
    if (eraseFrom(event)) erased.push({ id: row.id, body: encodeEventBody(JSON.stringify(event)).toString('base64') })
  }
  if (erased.length === 0) return
  await tx.query(`UPDATE events e SET body = decode(v.body, 'base64') FROM unnest($1::text[], $2::text[]) AS v(id, body) WHERE e.id = v.id`, [
    erased.map(({ id }) => id),
    erased.map(({ body }) => body),
  ])
}
