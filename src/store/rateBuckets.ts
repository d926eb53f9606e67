/** The organizations' token buckets (migration 026), leased from under a row lock. */
import { type Lease, lease, type RateLimitPolicy } from '../domain/rateLimit.ts'
import type { Database } from './database.ts'

/**
 * Leases tokens from the organization's bucket at `now`, as
 * {@link lease} decides, under the bucket row's lock: concurrent leases of
 * one organization, from any process, take turns. The organization's own
 * figures, where the operator set them, replace `defaults`. Undefined for an
 * organization that does not exist.
 */
export async function leaseTokens(
  db: Database,
  orgId: string,
  defaults: RateLimitPolicy,
  now: number,
  need: number,
  extra: number,
): Promise<{ lease: Lease; policy: RateLimitPolicy } | undefined> {
  return db.transaction(async (tx) => {
    // A new bucket is full: infinitely many tokens, down to the burst once refilled.
    await tx.query(`INSERT INTO rate_buckets (org_id, tokens, at) VALUES ($1, 'Infinity', $2) ON CONFLICT (org_id) DO NOTHING`, [orgId, new Date(now)])
    const [row] = await tx.query<{ per_s: number | null; burst: number | null; tokens: number; at: Date }>(
      `SELECT o.rate_limit_per_s AS per_s, o.rate_limit_burst AS burst, b.tokens, b.at
       FROM rate_buckets b JOIN organizations o ON o.id = b.org_id
       WHERE b.org_id = $1
       FOR UPDATE OF b`,
      [orgId],
    )
    if (row === undefined) return undefined
    const policy = { perSecond: row.per_s ?? defaults.perSecond, burst: row.burst ?? defaults.burst }
    const taken = lease({ tokens: row.tokens, at: row.at.getTime() }, policy, now, need, extra)
    await tx.query('UPDATE rate_buckets SET tokens = $2, at = $3 WHERE org_id = $1', [orgId, taken.bucket.tokens, new Date(taken.bucket.at)])
    return { lease: taken, policy }
  })
}
