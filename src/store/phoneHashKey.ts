/**
 * The phone hash key's fingerprint: the first process to start keeps it; any
 * later one started with another key is refused, since with it an erased
 * number sent again would no longer meet its suppression.
 */
import type { Queryable } from './database.ts'

export async function matchesPhoneHashKey(db: Queryable, key: Buffer, now: number): Promise<boolean> {
  const rows = await db.query<{ matches: boolean }>(
    `WITH kept AS (
       INSERT INTO service_keys (name, fingerprint, created_at) VALUES ('phone_hash', phone_digest($1, 'fingerprint'), $2)
       ON CONFLICT (name) DO NOTHING RETURNING fingerprint
     )
     SELECT coalesce((SELECT fingerprint FROM kept), (SELECT fingerprint FROM service_keys WHERE name = 'phone_hash')) = phone_digest($1, 'fingerprint') AS matches`,
    [key, new Date(now)],
  )
  return rows[0]!.matches
}
