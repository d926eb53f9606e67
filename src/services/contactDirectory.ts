/**
 * The contact directory as the trigger path reads it: which contact on file a
 * trigger that leaves `contact` out reaches, and the 422 for ids that name
 * more than one person. What the directory learns from each trigger it learns
 * in the trigger's own commit (store/triggers.ts).
 */
import { type ErrorDetail, valueError } from '../domain/errors.ts'
import type { Contact, ExternalId, Source } from '../domain/types.ts'
import { findContactsNamedBy, type NamedContact } from '../store/contacts.ts'
import type { Queryable } from '../store/database.ts'

/** One of a trigger's ids, normalized, with its index in the body; a part that cannot be read is undefined. */
export interface ReadableId {
  index: number
  source: string
  type: string | undefined
  value: string | undefined
}

export interface ContactOnFile {
  contactId: string
  contact: Contact
}

/**
 * The contact on file that a trigger without `contact` reaches: the one named
 * by an id of a source whose contact is optional, provided no id names
 * another. Otherwise the 422 entry that says why there is none.
 */
export async function contactOnFile(
  db: Queryable,
  orgId: string,
  sources: ReadonlyMap<string, Source>,
  ids: readonly ReadableId[],
  body: unknown,
): Promise<ContactOnFile | ErrorDetail> {
  const missing = missingContact(body)
  const mayName = ids.filter((id) => sources.get(id.source)?.contact === 'optional')
  if (mayName.length === 0) return missing
  const complete = ids.filter((id) => id.type !== undefined && id.value !== undefined)
  const found = await findContactsNamedBy(db, orgId, complete.map(({ source, type, value }) => ({ source, type: type!, value: value! })))
  // Positions in the body, not in the list looked up.
  const named = found.map((entry) => ({ ...entry, index: complete[entry.index]!.index }))
  if (namesSeveral(named)) return idsNameSeveralContacts((body as { ids: unknown }).ids, named)
  const reached = named.find((entry) => mayName.some((id) => id.index === entry.index))
  return reached === undefined ? missing : { contactId: reached.contactId, contact: reached.contact }
}

/**
 * The time zone on file for the person a trigger's ids name: its task's one
 * candidate zone when the trigger's own contact has none, since
 * fields a trigger leaves out stay as they are on file. A contact's timezone,
 * once on file, is never removed, so what is read here still holds at the
 * commit. The 422 entry when the ids name several people.
 */
export async function timezoneOnFile(db: Queryable, orgId: string, ids: readonly ExternalId[]): Promise<{ timezone: string | undefined } | ErrorDetail> {
  const named = await findContactsNamedBy(db, orgId, ids)
  if (namesSeveral(named)) return idsNameSeveralContacts(ids, named)
  return { timezone: named[0]?.contact.timezone }
}

function namesSeveral(named: readonly NamedContact[]): boolean {
  return new Set(named.map((entry) => entry.contactId)).size > 1
}

/** The 422 entry for a body that leaves out a contact it needs, as pydantic reports a missing field. */
export function missingContact(body: unknown): ErrorDetail {
  return { type: 'missing', loc: ['body', 'contact'], msg: 'Field required', input: body }
}

/** The 422 entry for ids that name different contacts on file, saying which ids name which. */
export function idsNameSeveralContacts(ids: unknown, named: readonly { index: number; contactId: string }[]): ErrorDetail {
  const groups = new Map<string, number[]>()
  for (const { index, contactId } of named) groups.set(contactId, [...(groups.get(contactId) ?? []), index])
  const which = [...groups.values()]
    .map((indexes, group) => {
      const subject = indexes.map((index) => `ids[${index}]`).join(' and ')
      if (group > 0) return `${subject} another`
      return `${subject} ${indexes.length === 1 ? 'names' : 'name'} one`
    })
    .join(', ')
  return valueError(['body', 'ids'], ids, `the ids name ${groups.size} different contacts on file: ${which}; send the ids of one person only`)
}
