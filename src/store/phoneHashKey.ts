/**
 * The phone hash key's fingerprint: the first process to start keeps it; any
 * later one started with another key is refused, since with it an erased
 * number sent again would no longer meet its suppression.
 */
import { createHash } from 'node:crypto'
import type { Queryable } from './database.ts'

export async function matchesPhoneHashKey(db: Queryable, key: Buffer, now: number): Promise<boolean> {
  await db.query(
    `INSERT INTO service_keys (name, fingerprint, created_at) VALUES ('phone_hash', phone_digest($1, 'fingerprint'), $2) ON CONFLICT (name) DO NOTHING`,
    [key, new Date(now)],
  )
  // A statement of its own: processes starting together on a new database insert at once, and the one whose
  // insert did nothing reads the other's fingerprint only in a snapshot taken after that insert committed.
  const rows = await db.query<{ matches: boolean }>(`SELECT fingerprint = phone_digest($1, 'fingerprint') AS matches FROM service_keys WHERE name = 'phone_hash'`, [key])
  return rows[0]!.matches
}

/**
 * A number's keyed digest as the SQL function phone_digest makes it
 * (migration 027: 'sha256:' and the hex of SHA-256 of the key and the
 * number): for a statement that is handed digests rather than the key.
 */
export function phoneDigestOf(key: Buffer, phone: string): string {
  return `sha256:${createHash('sha256').update(key).update(phone, 'utf8').digest('hex')}`
}
