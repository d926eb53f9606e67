/** domain/isoInstants.ts against Date's own ISO strings: every instant written alike, every text recognized as Date reads it back. */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { isIsoInstant, isoOfMs } from '../src/domain/isoInstants.ts'

const FIRST = Date.parse('0001-01-01T00:00:00.000Z')
const LAST = Date.parse('9999-12-31T23:59:59.999Z')

test('isoOfMs writes what toISOString writes, from year 0001 to 9999', () => {
  // A seeded walk over the whole range, and the edges of days, years and leap days.
  let seed = 7
  const random = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31)
  const instants = [FIRST, LAST, 0, -1, 951_782_400_000, 951_868_799_999, 4_107_542_400_000, Date.parse('2026-03-29T01:00:00.000Z')]
  for (let index = 0; index < 100_000; index++) instants.push(Math.floor(FIRST + random() * (LAST - FIRST)))
  for (const ms of instants) assert.equal(isoOfMs(ms), new Date(ms).toISOString(), String(ms))
})

test('isoOfMs writes nothing outside years 0001-9999 or for a fraction', () => {
  for (const ms of [FIRST - 1, LAST + 1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) assert.equal(isoOfMs(ms), undefined, String(ms))
})

test('isIsoInstant holds exactly for the texts toISOString writes of a real instant', () => {
  const table: [string, boolean][] = [
    ['2026-12-03T12:34:56.789Z', true],
    ['2024-02-29T00:00:00.000Z', true],
    ['0001-01-01T00:00:00.000Z', true],
    ['9999-12-31T23:59:59.999Z', true],
    ['2026-02-29T00:00:00.000Z', false],
    ['2026-02-30T00:00:00.000Z', false],
    ['1900-02-29T00:00:00.000Z', false],
    ['2026-13-01T00:00:00.000Z', false],
    ['2026-00-01T00:00:00.000Z', false],
    ['2026-04-31T00:00:00.000Z', false],
    ['2026-12-03T24:00:00.000Z', false],
    ['2026-12-03T23:60:00.000Z', false],
    ['2026-12-03T23:59:60.000Z', false],
    ['0000-01-01T00:00:00.000Z', false],
    ['2026-12-03T12:34:56.789z', false],
    ['2026-12-03t12:34:56.789Z', false],
    ['2026-12-03T12:34:56Z', false],
    ['2026-12-03T12:34:56.78Z', false],
    ['2026-12-03T12:34:56.789+00:00', false],
    ['+02026-12-03T12:34:56.789Z', false],
    ['2026-1a-03T12:34:56.789Z', false],
    ['2026-12-03 12:34:56.789Z', false],
    ['', false],
  ]
  for (const [text, expected] of table) {
    assert.equal(isIsoInstant(text), expected, text)
    if (expected) assert.equal(new Date(Date.parse(text)).toISOString(), text)
  }
})
