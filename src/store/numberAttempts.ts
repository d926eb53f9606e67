/**
 * When attempts to each number started, for the organizations with a cap on
 * them (domain/contactCap.ts, migration 038): one row a number, by its keyed
 * digest. Only the dispatcher of an organization with a cap writes here;
 * erasure and the history sweep delete.
 */
import { CAP_MEMORY_MS } from '../domain/contactCap.ts'
import type { Queryable } from './database.ts'

/** A number of an organization, in the clear as its tasks hold it. */
export interface OrganizationNumber {
  orgId: string
  phone: string
}

export const numberKey = (number: OrganizationNumber) => `${number.orgId} ${number.phone}`

/**
 * Locks the numbers' rows for the rest of the transaction (in the order of
 * their primary key, so that dispatchers never wait on each other in a
 * circle; creating those not there yet), and answers when each number's
 * remembered attempts started, by {@link numberKey}. One statement for the
 * batch; it writes a version of each row (ON CONFLICT DO UPDATE is what locks
 * a row that may not exist yet), HOT, as no indexed column changes.
 */
export async function lockNumberAttempts(
  tx: Queryable,
  phoneHashKey: Buffer,
  numbers: readonly OrganizationNumber[],
  now: number,
): Promise<Map<string, number[]>> {
  const unique = [...new Map(numbers.map((number) => [numberKey(number), number])).values()]
  if (unique.length === 0) return new Map()
  const rows = await tx.query<{ org_id: string; phone: string; started_at: Date[] }>(
    `WITH v AS (
       SELECT org_id, phone, phone_digest($3, phone) AS digest FROM unnest($1::text[], $2::text[]) AS v(org_id, phone)
     ), locked AS (
       INSERT INTO number_attempts AS n (org_id, phone_digest, started_at, kept_until)
       SELECT org_id, digest, '{}', $4 FROM v ORDER BY org_id, digest
       ON CONFLICT (org_id, phone_digest) DO UPDATE SET kept_until = n.kept_until
       RETURNING n.org_id, n.phone_digest, n.started_at
     )
     SELECT v.org_id, v.phone, locked.started_at FROM locked JOIN v ON v.org_id = locked.org_id AND v.digest = locked.phone_digest`,
    [unique.map((number) => number.orgId), unique.map((number) => number.phone), phoneHashKey, new Date(now)],
  )
  return new Map(rows.map((row) => [numberKey({ orgId: row.org_id, phone: row.phone }), row.started_at.map((at) => new Date(at).getTime())]))
}

/**
 * Writes the numbers' attempts (locked by {@link lockNumberAttempts} in this
 * transaction), each without those too old to matter any more; the row is
 * kept as long as its newest does.
 */
export async function saveNumberAttempts(
  tx: Queryable,
  phoneHashKey: Buffer,
  numbers: readonly (OrganizationNumber & { startedAt: readonly number[] })[],
  now: number,
): Promise<void> {
  if (numbers.length === 0) return
  const kept = numbers.map((number) => number.startedAt.filter((at) => at > now - CAP_MEMORY_MS).sort((a, b) => a - b))
  await tx.query(
    `UPDATE number_attempts n SET started_at = v.started_at::timestamptz[], kept_until = v.kept_until
     FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[]) AS v(org_id, phone, started_at, kept_until)
     WHERE n.org_id = v.org_id AND n.phone_digest = phone_digest($5, v.phone)`,
    [
      numbers.map((number) => number.orgId),
      numbers.map((number) => number.phone),
      kept.map((times) => `{${times.map((at) => new Date(at).toISOString()).join(',')}}`),
      kept.map((times) => new Date((times.at(-1) ?? now) + CAP_MEMORY_MS)),
      phoneHashKey,
    ],
  )
}

/**
 * Forgets one attempt to a number that was withdrawn (its provider deferred
 * its start: it never took place), the one that started at `startedAt`.
 */
export async function forgetNumberAttempt(db: Queryable, phoneHashKey: Buffer, number: OrganizationNumber, startedAt: number): Promise<void> {
  await db.query(
    `UPDATE number_attempts SET started_at = started_at[:array_position(started_at, $4) - 1] || started_at[array_position(started_at, $4) + 1:]
     WHERE org_id = $1 AND phone_digest = phone_digest($3, $2) AND $4 = ANY(started_at)`,
    [number.orgId, number.phone, phoneHashKey, new Date(startedAt)],
  )
}

/** Deletes the organization's rows of these numbers (in the clear): erasure. Answers how many. */
export async function eraseNumberAttempts(tx: Queryable, phoneHashKey: Buffer, orgId: string, phones: readonly string[]): Promise<number> {
  if (phones.length === 0) return 0
  const rows = await tx.query(
    `DELETE FROM number_attempts WHERE org_id = $1 AND phone_digest IN (SELECT phone_digest($3, phone) FROM unnest($2::text[]) AS phone) RETURNING 1`,
    [orgId, phones, phoneHashKey],
  )
  return rows.length
}
