/**
 * The readers of what providers send (src/domain/boundedReaders.ts): each
 * reads what the database and a Date can hold, and anything else as absent.
 */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import {
  durationSeconds,
  instantAfter,
  instantOfMs,
  instantOfSeconds,
  instantOfText,
  LATEST_INSTANT_MS,
  MAX_DURATION_S,
  MAX_ID_LENGTH,
  storableId,
  storableString,
  storableText,
} from '../src/domain/boundedReaders.ts'

const AT = Date.parse('2026-12-02T10:00:00Z')

function table<T>(name: string, read: (value: unknown) => T, rows: [unknown, T][]) {
  describe(name, () => {
    for (const [value, expected] of rows) {
      test(`${JSON.stringify(value)?.slice(0, 60) ?? String(value)} → ${JSON.stringify(expected)}`, () => assert.deepEqual(read(value), expected))
    }
  })
}

table('storableId', storableId, [
  ['CA0123456789abcdef0123456789abcdef', 'CA0123456789abcdef0123456789abcdef'],
  ['wamid.HBgLMTY1MDM4Nzk0MzkVAgARGBJDQjZCMzlEQUE4OTJBMTE4RTUA', 'wamid.HBgLMTY1MDM4Nzk0MzkVAgARGBJDQjZCMzlEQUE4OTJBMTE4RTUA'],
  ['x'.repeat(MAX_ID_LENGTH), 'x'.repeat(MAX_ID_LENGTH)],
  ['x'.repeat(MAX_ID_LENGTH + 1), undefined],
  ['', undefined],
  ['\u0000', undefined],
  ['call\u0000id', undefined],
  ['\ud800', undefined],
  ['caf\u00e9', 'caf\u00e9'],
  [42, undefined],
  [null, undefined],
  [{}, undefined],
  [['a'], undefined],
])

describe('storableText', () => {
  test('keeps text up to its bound, empty included', () => {
    assert.equal(storableText('', 3), '')
    assert.equal(storableText('abc', 3), 'abc')
    assert.equal(storableText('abcd', 3), undefined)
  })
  test('refuses a NUL and a lone surrogate, which PostgreSQL cannot store', () => {
    assert.equal(storableText('a\u0000', 10), undefined)
    assert.equal(storableText('a\udc00b', 10), undefined)
    assert.equal(storableText('\ud83d\ude00', 10), '\ud83d\ude00')
  })
})

table('storableString', (value) => storableString(value as string), [
  ['Yes, Monday works', 'Yes, Monday works'],
  ['Yes\u0000, Monday\u0000', 'Yes, Monday'],
  ['\ud800!', '\ufffd!'],
  ['\u0000', ''],
])

table('instantOfMs', instantOfMs, [
  [AT, AT],
  [AT + 0.4, AT],
  [AT + 0.5, AT + 1],
  [LATEST_INSTANT_MS, LATEST_INSTANT_MS],
  [LATEST_INSTANT_MS + 1, undefined],
  [8.64e15, undefined],
  [8.64e15 + 1, undefined],
  [1e20, undefined],
  [-1e20, undefined],
  [1e308, undefined],
  [0, undefined],
  [-1, undefined],
  [Number.NaN, undefined],
  [Number.POSITIVE_INFINITY, undefined],
  [String(AT), undefined],
  [null, undefined],
])

table('instantOfSeconds', instantOfSeconds, [
  [AT / 1000, AT],
  [1, 1000],
  [9e15, undefined],
  [1e12, undefined],
  [Math.floor(LATEST_INSTANT_MS / 1000), Math.floor(LATEST_INSTANT_MS / 1000) * 1000],
  [0, undefined],
  [-5, undefined],
  ['1733133600', undefined],
])

table('instantOfText', instantOfText, [
  ['2026-12-02T10:00:00Z', AT],
  ['2026-12-02T11:00:00+01:00', AT],
  ['Wed, 02 Dec 2026 10:00:00 +0000', AT],
  ['9999-12-31T23:59:59.999Z', LATEST_INSTANT_MS],
  ['+010000-01-01T00:00:00Z', undefined],
  ['+275760-09-13T00:00:00.001Z', undefined],
  ['-271821-04-19T00:00:00.000Z', undefined],
  ['-100000-01-01T00:00:00Z', undefined],
  ['0000-01-01T00:00:00Z', undefined],
  ['1969-12-31T23:59:59Z', undefined],
  ['soon', undefined],
  ['', undefined],
  [AT, undefined],
])

describe('instantAfter', () => {
  test('adds an offset in seconds, rounded to the millisecond', () => {
    assert.equal(instantAfter(AT, 1.5), AT + 1500)
    assert.equal(instantAfter(AT, 0.0004), AT)
    assert.equal(instantAfter(AT, 0), AT)
  })
  test('is unknown when the start, the offset or the sum is', () => {
    assert.equal(instantAfter(undefined, 1), undefined)
    assert.equal(instantAfter(AT, '1'), undefined)
    assert.equal(instantAfter(AT, 1e20), undefined)
    assert.equal(instantAfter(AT, -1e20), undefined)
    assert.equal(instantAfter(AT, Number.NaN), undefined)
  })
})

describe('durationSeconds', () => {
  const rows: [unknown, number, number | undefined][] = [
    [17, 1000, 17],
    [60_000, 1, 60],
    [1_499, 1, 1],
    [1_500, 1, 2],
    [0, 1000, 0],
    [MAX_DURATION_S, 1000, MAX_DURATION_S],
    [MAX_DURATION_S + 1, 1000, undefined],
    [1e20, 1, undefined],
    [-1, 1000, undefined],
    [Number.NaN, 1000, undefined],
    ['17', 1000, undefined],
    [null, 1000, undefined],
  ]
  for (const [value, unitMs, expected] of rows) test(`${String(value)} × ${unitMs} ms → ${expected}`, () => assert.equal(durationSeconds(value, unitMs), expected))
})
