/**
 * Attempts to each number that a calling law's cap counted (migration 041),
 * with each attempt's subject: one row a number of an organization, by its
 * keyed digest, written only by a dispatch batch that started an attempt a
 * cap bound. Kept as long as the longest such cap looks back.
 */
import type { PastAttempt } from '../domain/contactability.ts'
import type { Queryable } from './database.ts'
import { type OrganizationNumber, numberKey } from './numberAttempts.ts'

const HOUR_MS = 3_600_000

/**
 * Locks the numbers' rows for the rest of the transaction (creating those
 * not there yet, in primary-key order so that dispatchers never wait on each
 * other in a circle), and answers each number's remembered attempts, by
 * numberKey. One statement for the batch.
 */
export async function lockLawAttempts(tx: Queryable, phoneHashKey: Buffer, numbers: readonly OrganizationNumber[], now: number): Promise<Map<string, PastAttempt[]>> {
  const unique = [...new Map(numbers.map((number) => [numberKey(number), number])).values()]
  if (unique.length === 0) return new Map()
  const rows = await tx.query<{ org_id: string; phone: string; started_at: Date[]; subjects: string[] }>(
    `WITH v AS (
       SELECT org_id, phone, phone_digest($3, phone) AS digest FROM unnest($1::text[], $2::text[]) AS v(org_id, phone)
     ), locked AS (
       INSERT INTO law_attempts AS n (org_id, phone_digest, started_at, subjects, kept_until)
       SELECT org_id, digest, '{}', '{}', $4 FROM v ORDER BY org_id, digest
       ON CONFLICT (org_id, phone_digest) DO UPDATE SET kept_until = n.kept_until
       RETURNING n.org_id, n.phone_digest, n.started_at, n.subjects
     )
     SELECT v.org_id, v.phone, locked.started_at, locked.subjects FROM locked JOIN v ON v.org_id = locked.org_id AND v.digest = locked.phone_digest`,
    [unique.map((number) => number.orgId), unique.map((number) => number.phone), phoneHashKey, new Date(now)],
  )
  return new Map(
    rows.map((row) => [
      numberKey({ orgId: row.org_id, phone: row.phone }),
      row.started_at.map((at, index) => ({ at: new Date(at).getTime(), subject: row.subjects[index]! })),
    ]),
  )
}

/** Writes the numbers' attempts (locked in this transaction), each without those older than `keepHours` before now. */
export async function saveLawAttempts(
  tx: Queryable,
  phoneHashKey: Buffer,
  numbers: readonly (OrganizationNumber & { attempts: readonly PastAttempt[]; keepHours: number })[],
  now: number,
): Promise<void> {
  if (numbers.length === 0) return
  const kept = numbers.map((number) => number.attempts.filter((attempt) => attempt.at > now - number.keepHours * HOUR_MS).sort((a, b) => a.at - b.at))
  await tx.query(
    `UPDATE law_attempts n SET started_at = v.started_at::timestamptz[], subjects = ARRAY(SELECT jsonb_array_elements_text(v.subjects::jsonb)), kept_until = v.kept_until
     FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[]) AS v(org_id, phone, started_at, subjects, kept_until)
     WHERE n.org_id = v.org_id AND n.phone_digest = phone_digest($6, v.phone)`,
    [
      numbers.map((number) => number.orgId),
      numbers.map((number) => number.phone),
      kept.map((attempts) => `{${attempts.map((attempt) => new Date(attempt.at).toISOString()).join(',')}}`),
      // As JSON: a subject is any text, which an array literal would have to escape.
      kept.map((attempts) => JSON.stringify(attempts.map((attempt) => attempt.subject))),
      numbers.map((number, index) => new Date((kept[index]!.at(-1)?.at ?? now) + number.keepHours * HOUR_MS)),
      phoneHashKey,
    ],
  )
}

/**
 * Forgets one attempt to a number that was withdrawn (its provider deferred
 * its start: it never took place), the one that started at `startedAt`,
 * with its subject. Nothing when no cap counted it.
 */
export async function forgetLawAttempt(db: Queryable, phoneHashKey: Buffer, number: OrganizationNumber, startedAt: number): Promise<void> {
  await db.query(
    `UPDATE law_attempts n SET started_at = n.started_at[:x.p - 1] || n.started_at[x.p + 1:], subjects = n.subjects[:x.p - 1] || n.subjects[x.p + 1:]
     FROM (SELECT org_id, phone_digest, array_position(started_at, $4) AS p FROM law_attempts WHERE org_id = $1 AND phone_digest = phone_digest($3, $2)) x
     WHERE n.org_id = x.org_id AND n.phone_digest = x.phone_digest AND x.p IS NOT NULL`,
    [number.orgId, number.phone, phoneHashKey, new Date(startedAt)],
  )
}

/** The numbers' remembered attempts, read without a lock: what a dry run counts. */
export async function readLawAttempts(db: Queryable, phoneHashKey: Buffer, number: OrganizationNumber): Promise<PastAttempt[]> {
  const rows = await db.query<{ started_at: Date[]; subjects: string[] }>(
    'SELECT started_at, subjects FROM law_attempts WHERE org_id = $1 AND phone_digest = phone_digest($2, $3)',
    [number.orgId, phoneHashKey, number.phone],
  )
  return rows[0] === undefined ? [] : rows[0].started_at.map((at, index) => ({ at: new Date(at).getTime(), subject: rows[0]!.subjects[index]! }))
}

/** Deletes the organization's rows of these numbers (in the clear): erasure. */
export async function eraseLawAttempts(tx: Queryable, phoneHashKey: Buffer, orgId: string, phones: readonly string[]): Promise<void> {
  if (phones.length === 0) return
  await tx.query(`DELETE FROM law_attempts WHERE org_id = $1 AND phone_digest IN (SELECT phone_digest($3, phone) FROM unnest($2::text[]) AS phone)`, [
    orgId,
    phones,
    phoneHashKey,
  ])
}
