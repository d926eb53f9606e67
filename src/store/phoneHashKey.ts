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
 * SHA-256 of the key and the number, of which both of its keyed digests are
 * made: a suppression's or a consent's (phoneDigestOf) and a registry's
 * (store/registries.ts registryDigestOfHash). Hashed once where a number
 * needs both, as a dispatch batch's do.
 */
export function phoneHash(key: Buffer, phone: string): Buffer {
  return createHash('sha256').update(key).update(phone, 'utf8').digest()
}

/** A number's keyed digest as phone_digest (migration 027) makes it: 'sha256:' and the hash's hex. */
export const phoneDigestOfHash = (hash: Buffer): string => `sha256:${hash.toString('hex')}`

/**
 * A number's keyed digest as the SQL function phone_digest makes it: for a
 * statement that is handed digests rather than the key (computed here, a
 * lookup by digest costs PostgreSQL about 3 µs less a number).
 */
export const phoneDigestOf = (key: Buffer, phone: string): string => phoneDigestOfHash(phoneHash(key, phone))
