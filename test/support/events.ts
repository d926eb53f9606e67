/** Events as the outbox stores them (store/eventBodies.ts), read back for assertions. */
import { decodeEventBody } from '../../src/store/eventBodies.ts'
import type { Queryable } from '../../src/store/database.ts'

/** The events that name a task, oldest first. */
export async function eventsOfTask(db: Queryable, taskId: string): Promise<any[]> {
  return decoded(await db.query<{ body: Uint8Array }>('SELECT body FROM events WHERE task_id = $1 ORDER BY id', [taskId]))
}

/** The events that name an interaction of no task (a reply that answered none), newest first. */
export async function eventsOfTasklessInteractions(db: Queryable): Promise<any[]> {
  return decoded(await db.query<{ body: Uint8Array }>('SELECT body FROM events WHERE task_id IS NULL AND interaction_id IS NOT NULL ORDER BY id DESC'))
}

function decoded(rows: readonly { body: Uint8Array }[]): any[] {
  return rows.map((row) => JSON.parse(decodeEventBody(row.body)))
}
