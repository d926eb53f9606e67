/** What the reach counts count (domain/reachCounts.ts): outbound attempts by the person's local date and hour, attempt number and outcome. */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { OutboxEvent } from '../src/domain/events.ts'
import { newId, timeOfId } from '../src/domain/ids.ts'
import { countReach, reachDelayBucket } from '../src/domain/reachCounts.ts'

const triggeredAt = Date.parse('2026-06-01T08:00:00Z')
const triggerId = newId('trigger', triggeredAt)

function finalized(data: Record<string, unknown>): OutboxEvent {
  return {
    id: newId('event'),
    type: 'interaction.finalized',
    timestamp: '2026-06-01T17:00:00.000Z',
    data: {
      interaction_id: newId('interaction'),
      task_id: newId('task'),
      trigger_id: triggerId,
      campaign: 'screening',
      channel: 'voice',
      direction: 'outbound',
      attempt: 1,
      outcome: 'no_answer',
      test_mode: false,
      started_at: '2026-06-01T16:02:11.000Z',
      timezone: 'Europe/Berlin',
      started_at_local: '2026-06-01T18:02:11.000+02:00',
      duration_s: 30,
      ...data,
    },
  }
}

test('an id tells the millisecond it was made in', () => {
  assert.equal(timeOfId(triggerId), triggeredAt)
  assert.equal(timeOfId(newId('event', 0)), 0)
  assert.equal(timeOfId(newId('task', 281_474_976_710_655)), 281_474_976_710_655)
})

describe('the bucket of time from trigger to reach', () => {
  const cases: [seconds: number, bucket: number][] = [
    [0, 1],
    [300, 1],
    [301, 2],
    [3_600, 2],
    [14_400, 3],
    [86_400, 4],
    [86_401, 5],
    [604_800, 6],
    [604_801, 7],
  ]
  for (const [seconds, bucket] of cases) test(`${seconds} s is bucket ${bucket}`, () => assert.equal(reachDelayBucket(seconds), bucket))
})

test('attempts are counted by the local date and hour of their start, attempt number and outcome; those that reached, by their delay too', () => {
  const counts = countReach([
    finalized({}),
    finalized({ duration_s: 10 }),
    finalized({ attempt: 2, outcome: 'completed', duration_s: 120 }),
    // 23:30 in New York is the 2nd of June in UTC, the 1st locally.
    finalized({ started_at: '2026-06-02T03:30:00.000Z', timezone: 'America/New_York', started_at_local: '2026-06-01T23:30:00.000-04:00' }),
  ])
  assert.deepEqual(
    counts.map(({ localDate, hour, attempt, outcome, delayBucket, count, seconds, delayS }) => ({ localDate, hour, attempt, outcome, delayBucket, count, seconds, delayS })),
    [
      { localDate: '2026-06-01', hour: 18, attempt: 1, outcome: 'no_answer', delayBucket: 0, count: 2, seconds: 40, delayS: 0 },
      // Started 8 h 2 min 11 s after the trigger: within a day.
      { localDate: '2026-06-01', hour: 18, attempt: 2, outcome: 'completed', delayBucket: 4, count: 1, seconds: 120, delayS: 28_931 },
      { localDate: '2026-06-01', hour: 23, attempt: 1, outcome: 'no_answer', delayBucket: 0, count: 1, seconds: 30, delayS: 0 },
    ],
  )
  assert.ok(counts.every((count) => count.campaign === 'screening' && count.channel === 'voice' && !count.testMode))
})

test('nothing else is counted: inbound messages, attempts given back (no number), events without a local start, other events', () => {
  const counts = countReach([
    finalized({ direction: 'inbound', attempt: null }),
    finalized({ attempt: null }),
    finalized({ timezone: null, started_at_local: null }),
    { ...finalized({}), type: 'task.completed' },
    finalized({ channel: 'fax' }),
  ])
  assert.deepEqual(counts, [])
})
