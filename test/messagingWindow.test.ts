import assert from 'node:assert/strict'
import { test } from 'node:test'
import { CUSTOMER_SERVICE_WINDOW_MS, windowClosesAt, windowOpen } from '../src/domain/messagingWindow.ts'

const at = Date.parse('2026-12-03T09:00:00Z')
const DAY = 86_400_000

test('the window is 24 hours', () => {
  assert.equal(CUSTOMER_SERVICE_WINDOW_MS, DAY)
})

test('a message keeps the window open 24 hours from it, never closing it earlier than before', () => {
  const cases: [string, Parameters<typeof windowClosesAt>, number | null][] = [
    ['a first message opens it', ['whatsapp', at, null], at + DAY],
    ['a later message extends it', ['whatsapp', at + 5 * 3_600_000, at + DAY], at + DAY + 5 * 3_600_000],
    ['an older message delivered late leaves it as it was', ['whatsapp', at - 3_600_000, at + DAY], at + DAY],
    ['one after it closed opens it again', ['whatsapp', at + 2 * DAY, at + DAY], at + 3 * DAY],
    ['a text keeps the same window: the service’s rule for texts in a conversation', ['sms', at, null], at + DAY],
    ['a call has no such window', ['voice', at, null], null],
  ]
  for (const [name, args, expected] of cases) assert.equal(windowClosesAt(...args), expected, name)
})

test('open until the instant it closes, never before a message opened it', () => {
  const cases: [string, number | null, number, boolean][] = [
    ['never opened', null, at, false],
    ['a millisecond before it closes', at + DAY, at + DAY - 1, true],
    ['at the instant it closes', at + DAY, at + DAY, false],
    ['after', at + DAY, at + 2 * DAY, false],
  ]
  for (const [name, closesAt, now, expected] of cases) assert.equal(windowOpen(closesAt, now), expected, name)
})
