/**
 * Reading the contact directory. It is written only by the group commit of
 * the trigger path (store/triggers.ts), which creates and updates contacts
 * and links their ids in the statement that records the triggers.
 */
import type { Contact, ExternalId } from '../domain/types.ts'
import type { Queryable } from './database.ts'

/** A contact on file, as one of a trigger's ids names it. */
export interface NamedContact {
  /** The id's position in the trigger's `ids`. */
  index: number
  contactId: string
  contact: Contact
}

/** The contacts on file that the given ids of an organization name, by the ids' positions, in order. */
export async function findContactsNamedBy(db: Queryable, orgId: string, ids: readonly ExternalId[]): Promise<NamedContact[]> {
  const rows = await db.query<{ index: number; id: string; fields: Contact }>(
    // One id at a time in the key's index, as the group commit looks them up (see store/triggers.ts).
    `SELECT e.n - 1 AS index, contacts.id, contacts.fields
     FROM jsonb_array_elements($2::jsonb) WITH ORDINALITY AS e(id, n)
     CROSS JOIN LATERAL (
       SELECT contact_ids.contact_id FROM contact_ids
       WHERE contact_ids.org_id = $1 AND contact_ids.source = e.id->>'source'
         AND contact_ids.type = e.id->>'type' AND contact_ids.value = e.id->>'value'
       LIMIT 1
     ) link
     JOIN contacts ON contacts.id = link.contact_id
     ORDER BY e.n`,
    [orgId, JSON.stringify(ids)],
  )
  return rows.map((row) => ({ index: Number(row.index), contactId: row.id, contact: row.fields }))
}
