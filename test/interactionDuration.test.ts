import assert from 'node:assert/strict'
import { test } from 'node:test'
import { interactionDurationS } from '../src/domain/interactionDuration.ts'

test("an interaction's duration: the provider's, else from its start to its end, else none yet", () => {
  const startedAt = '2026-06-01T10:00:00.000Z'
  const cases: [string, string | null, number | null, number | null][] = [
    ['reported by the provider', '2026-06-01T10:01:00.000Z', 42, 42],
    ['reported as 0 (a call that never rang)', '2026-06-01T10:01:00.000Z', 0, 0],
    ['not reported: start to end, rounded', '2026-06-01T10:00:12.600Z', null, 13],
    ['not reported, under half a second', '2026-06-01T10:00:00.200Z', null, 0],
    ['not ended yet', null, null, null],
  ]
  for (const [name, endedAt, durationS, expected] of cases) assert.equal(interactionDurationS({ startedAt, endedAt, durationS }), expected, name)
})
