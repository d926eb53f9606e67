/** Table tests of an endpoint's health figures: success rate and latency from counts kept by the hour. */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { type AttemptCounts, addCounts, LATENCY_BOUNDS_MS, latencyQuantile, latencySummary, successRate } from '../src/domain/endpointHealth.ts'

/** Counts with `n` attempts in each bucket, as listed (fewer buckets: the rest are empty). */
function counts(buckets: number[], latencyMsMax: number, succeeded = 0): AttemptCounts {
  const latencyBuckets = LATENCY_BOUNDS_MS.map(() => 0).concat(0)
  buckets.forEach((n, bucket) => (latencyBuckets[bucket] = n))
  const attempts = buckets.reduce((sum, n) => sum + n, 0)
  return { attempts, succeeded, latencyMsSum: attempts * 10, latencyMsMax, latencyBuckets }
}

test('a quantile is the bound of the bucket that holds it, never more than the slowest attempt', () => {
  const cases: [string, AttemptCounts, number, number | null][] = [
    ['no attempt', counts([], 0), 0.5, null],
    ['one fast attempt: its own time, under the first bound', counts([1], 40), 0.5, 40],
    ['the median among 10 fast and 10 slow is the first bucket\'s bound', counts([10, 0, 0, 10], 900), 0.5, 100],
    ['one more slow one moves it', counts([10, 0, 0, 11], 900), 0.5, 900],
    ['p95 of 19 fast and 1 slow is still fast', counts([19, 0, 0, 0, 1], 2_000), 0.95, 100],
    ['p95 of 18 fast and 2 slow is the slow bucket\'s bound', counts([18, 0, 0, 0, 0, 2], 4_000), 0.95, 4_000],
    ['beyond the last bound: the slowest attempt', counts([0, 0, 0, 0, 0, 0, 0, 3], 15_012), 0.5, 15_012],
    ['p100 is the slowest', counts([5, 5], 180), 1, 180],
  ]
  for (const [name, given, q, expected] of cases) assert.equal(latencyQuantile(given, q), expected, name)
})

test('hours add up, and the rate and summary read their sum', () => {
  const total = addCounts([counts([3], 90, 3), counts([0, 1], 200, 0), counts([], 0)])
  assert.deepEqual([total.attempts, total.succeeded, total.latencyMsSum, total.latencyMsMax], [4, 3, 40, 200])
  assert.deepEqual(total.latencyBuckets, [3, 1, 0, 0, 0, 0, 0, 0])
  assert.equal(successRate(total), 0.75)
  assert.deepEqual(latencySummary(total), { meanMs: 10, p50Ms: 100, p95Ms: 200, maxMs: 200 })
  assert.equal(successRate(addCounts([])), null)
  assert.equal(latencySummary(addCounts([])), null)
})
