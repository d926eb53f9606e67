/**
 * Each organization's rate limit on the client API: a token bucket. It holds
 * at most `burst` tokens and gains `perSecond` a second; a request takes one
 * token, a batch one per trigger. A request that asks for more than the
 * bucket can ever hold (a batch larger than the burst) is let through when
 * the bucket is full, and leaves it in debt: the organization then waits for
 * the tokens it borrowed, so that its rate over time still holds.
 *
 * The bucket itself lives in the database (store/rateBuckets.ts), shared by
 * every process; each process leases tokens from it a few at a time and
 * spends them from memory (services/rateLimiter.ts).
 */

export interface RateLimitPolicy {
  perSecond: number
  burst: number
}

export const DEFAULT_RATE_LIMIT: RateLimitPolicy = { perSecond: 100, burst: 200 }

/** The most either figure may be: beyond, a limit is no limit. */
export const MAX_RATE_LIMIT = 1_000_000

/** A bucket's tokens at an instant (epoch ms); negative while in debt. */
export interface Bucket {
  tokens: number
  at: number
}

/** The bucket at `now`: refilled for the time since, up to its burst. A clock behind the bucket's adds nothing. */
export function refill(bucket: Bucket, policy: RateLimitPolicy, now: number): Bucket {
  const elapsedS = Math.max(0, now - bucket.at) / 1000
  return { tokens: Math.min(policy.burst, bucket.tokens + elapsedS * policy.perSecond), at: Math.max(now, bucket.at) }
}

/** What a lease took from the bucket, and what it left. */
export interface Lease {
  /** Tokens taken: 0 when `need` could not be had; otherwise `need` and up to `extra` more. */
  granted: number
  bucket: Bucket
  /** When `need` could not be had, how long until it can (ms); 0 when granted. */
  waitMs: number
}

/**
 * Takes `need` tokens from the bucket at `now`, and up
 * to `extra` more that are there beyond them, for the caller to spend later;
 * or nothing, when `need` is not there. `need` beyond the burst is taken
 * only from a full bucket, which it leaves in debt.
 */
export function lease(bucket: Bucket, policy: RateLimitPolicy, now: number, need: number, extra: number): Lease {
  const current = refill(bucket, policy, now)
  const available = current.tokens
  if (available < need && available < policy.burst) {
    return { granted: 0, bucket: current, waitMs: msUntil(current, policy, Math.min(need, policy.burst)) }
  }
  const granted = need + Math.min(extra, Math.max(0, Math.floor(available - need)))
  return { granted, bucket: { tokens: available - granted, at: current.at }, waitMs: 0 }
}

/** How long until the bucket holds `tokens` (ms; 0 if it does). */
export function msUntil(bucket: Bucket, policy: RateLimitPolicy, tokens: number): number {
  return Math.max(0, ((tokens - bucket.tokens) / policy.perSecond) * 1000)
}

/** A wait as the Retry-After field says it: whole seconds, at least one. */
export const retryAfterSeconds = (waitMs: number) => Math.max(1, Math.ceil(waitMs / 1000))

/**
 * How many tokens a process leases beyond what a request needs: a tenth of a
 * second's worth (at least one). Tokens leased and not yet spent are the
 * limit's only error: with P processes at most P tenths of a second's worth
 * more are refused than the bucket would, and never more let through. At the
 * default 100/s and two processes, 20 of the first second's 300.
 */
export function leaseChunk(policy: RateLimitPolicy): number {
  return Math.max(1, Math.ceil(policy.perSecond / 10))
}

/**
 * The IETF RateLimit-Policy field (draft-ietf-httpapi-ratelimit-headers-10):
 * the sustained rate as a quota per one-second window, and the burst as a
 * vendor parameter, the draft's way to say what a window cannot.
 */
export function rateLimitPolicyField(policy: RateLimitPolicy): string {
  return `"org";q=${policy.perSecond};w=1;cts-burst=${policy.burst}`
}

/** The RateLimit field: the whole tokens left, and the seconds until one is there (0 while some are). */
export function rateLimitField(policy: RateLimitPolicy, remaining: number): string {
  const left = Math.max(0, Math.floor(remaining))
  const untilOneS = left > 0 ? 0 : retryAfterSeconds(msUntil({ tokens: remaining, at: 0 }, policy, 1))
  return `"org";r=${left};t=${untilOneS}`
}
