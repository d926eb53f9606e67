/**
 * An endpoint's health: how its webhook attempts went over a period, read
 * from counts kept by the hour (store/endpointHealth.ts). Latencies are kept
 * as a histogram, as Prometheus keeps them, so that an hour's figures are a
 * fixed-size row however many attempts it held.
 */

/**
 * The upper bounds of the latency buckets, in ms: a bucket counts the
 * attempts that took less than its bound and at least the bound before it;
 * one more bucket counts those that took longer than the last. The last bound
 * is the deliverer's timeout (workers/deliverer.ts), past which no answer is
 * waited for. The counts stored by the hour (endpoint_hours.latency_buckets)
 * are by these bounds: changing them takes a migration of those rows.
 */
export const LATENCY_BOUNDS_MS = [100, 250, 500, 1_000, 2_500, 5_000, 15_000] as const

/** Attempts counted over a period: their number, how many succeeded, and their latencies. */
export interface AttemptCounts {
  attempts: number
  succeeded: number
  latencyMsSum: number
  latencyMsMax: number
  /** One count per bound of LATENCY_BOUNDS_MS, then the count beyond the last. */
  latencyBuckets: number[]
}

export interface LatencySummary {
  meanMs: number
  /** At most this: the bound of the bucket holding the median attempt, or the slowest attempt if that is less. */
  p50Ms: number
  /** As p50Ms, for the 95th percentile. */
  p95Ms: number
  maxMs: number
}

const HOUR_MS = 3_600_000

/**
 * The start of the period an endpoint's health covers at `now`: the hour 24
 * hours ago began. Attempts are counted by the hour, so the period holds
 * between 24 and 25 hours: every attempt of the last 24, none older than 25.
 */
export function healthWindowStart(now: number): number {
  return Math.floor((now - 24 * HOUR_MS) / HOUR_MS) * HOUR_MS
}

/** Sums counts of several hours. */
export function addCounts(counts: readonly AttemptCounts[]): AttemptCounts {
  const total: AttemptCounts = { attempts: 0, succeeded: 0, latencyMsSum: 0, latencyMsMax: 0, latencyBuckets: LATENCY_BOUNDS_MS.map(() => 0).concat(0) }
  for (const hour of counts) {
    total.attempts += hour.attempts
    total.succeeded += hour.succeeded
    total.latencyMsSum += hour.latencyMsSum
    total.latencyMsMax = Math.max(total.latencyMsMax, hour.latencyMsMax)
    hour.latencyBuckets.forEach((count, bucket) => (total.latencyBuckets[bucket]! += count))
  }
  return total
}

/** The share of attempts that succeeded, or null when there were none. */
export function successRate(counts: AttemptCounts): number | null {
  return counts.attempts === 0 ? null : counts.succeeded / counts.attempts
}

/**
 * The latency at quantile `q` (0 < q ≤ 1), as an upper bound: the bound of
 * the bucket that holds the ⌈q·n⌉-th fastest attempt, never more than the
 * slowest attempt (which bounds the last, open bucket).
 */
export function latencyQuantile(counts: AttemptCounts, q: number): number | null {
  if (counts.attempts === 0) return null
  const rank = Math.max(1, Math.ceil(q * counts.attempts))
  let seen = 0
  for (const [bucket, count] of counts.latencyBuckets.entries()) {
    seen += count
    if (seen >= rank) return Math.min(LATENCY_BOUNDS_MS[bucket] ?? counts.latencyMsMax, counts.latencyMsMax)
  }
  return counts.latencyMsMax
}

export function latencySummary(counts: AttemptCounts): LatencySummary | null {
  if (counts.attempts === 0) return null
  return {
    meanMs: Math.round(counts.latencyMsSum / counts.attempts),
    p50Ms: latencyQuantile(counts, 0.5)!,
    p95Ms: latencyQuantile(counts, 0.95)!,
    maxMs: counts.latencyMsMax,
  }
}
