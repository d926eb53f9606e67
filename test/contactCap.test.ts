import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { capIsOn, type ContactCap, capStep } from '../src/domain/contactCap.ts'

const at = (text: string) => Date.parse(text)
const step = (startedAt: string[], cap: ContactCap, zones: string[], now: string) => {
  const found = capStep(startedAt.map(at), cap, zones, at(now))
  return found.kind === 'allowed' ? 'allowed' : new Date(found.until).toISOString()
}

describe('capStep', () => {
  const cases: { name: string; startedAt: string[]; cap: ContactCap; zones: string[]; now: string; expected: string }[] = [
    { name: 'no attempts yet', startedAt: [], cap: { per_24h: 1, per_local_day: 1 }, zones: ['UTC'], now: '2026-06-01T12:00:00.000Z', expected: 'allowed' },
    {
      name: 'under the rolling figure',
      startedAt: ['2026-06-01T09:00:00.000Z'],
      cap: { per_24h: 2, per_local_day: null },
      zones: ['UTC'],
      now: '2026-06-01T12:00:00.000Z',
      expected: 'allowed',
    },
    {
      name: 'at the rolling figure: held until the oldest that keeps it there is a day old',
      startedAt: ['2026-06-01T11:00:00.000Z', '2026-06-01T09:00:00.000Z'],
      cap: { per_24h: 2, per_local_day: null },
      zones: ['UTC'],
      now: '2026-06-01T12:00:00.000Z',
      expected: '2026-06-02T09:00:00.000Z',
    },
    {
      name: 'over the rolling figure (lowered since): held until enough have aged out',
      startedAt: ['2026-06-01T08:00:00.000Z', '2026-06-01T09:00:00.000Z', '2026-06-01T10:00:00.000Z'],
      cap: { per_24h: 1, per_local_day: null },
      zones: ['UTC'],
      now: '2026-06-01T12:00:00.000Z',
      expected: '2026-06-02T10:00:00.000Z',
    },
    {
      name: 'an attempt exactly a day old no longer counts',
      startedAt: ['2026-05-31T12:00:00.000Z'],
      cap: { per_24h: 1, per_local_day: null },
      zones: ['UTC'],
      now: '2026-06-01T12:00:00.000Z',
      expected: 'allowed',
    },
    {
      name: 'the local day: held until local midnight (New York, EDT)',
      startedAt: ['2026-06-01T14:00:00.000Z'],
      cap: { per_24h: null, per_local_day: 1 },
      zones: ['America/New_York'],
      now: '2026-06-01T20:00:00.000Z',
      expected: '2026-06-02T04:00:00.000Z',
    },
    {
      name: 'an attempt of the local day before does not count',
      startedAt: ['2026-06-02T03:00:00.000Z'],
      cap: { per_24h: null, per_local_day: 1 },
      zones: ['America/New_York'],
      now: '2026-06-02T05:00:00.000Z',
      expected: 'allowed',
    },
    {
      name: 'several candidate zones: the day must have room in every one',
      startedAt: ['2026-06-01T06:30:00.000Z'],
      cap: { per_24h: null, per_local_day: 1 },
      zones: ['America/New_York', 'America/Los_Angeles'],
      now: '2026-06-01T20:00:00.000Z',
      // 02:30 EDT and 23:30 PDT the day before: only New York's day is full; its next midnight.
      expected: '2026-06-02T04:00:00.000Z',
    },
    {
      name: 'both rules: the later of the two',
      startedAt: ['2026-06-01T15:00:00.000Z', '2026-06-01T16:00:00.000Z'],
      cap: { per_24h: 2, per_local_day: 2 },
      zones: ['Europe/Berlin'],
      now: '2026-06-01T17:00:00.000Z',
      // Berlin's day ends at 22:00Z; the rolling day lets one more from 15:00Z the next day.
      expected: '2026-06-02T15:00:00.000Z',
    },
    {
      name: 'a rolling day that ends on a full local day waits for that day to end too',
      startedAt: ['2026-06-01T10:00:00.000Z', '2026-06-02T01:00:00.000Z', '2026-06-02T02:00:00.000Z'],
      cap: { per_24h: 3, per_local_day: 2 },
      zones: ['UTC'],
      now: '2026-06-02T03:00:00.000Z',
      expected: '2026-06-03T00:00:00.000Z',
    },
    {
      name: 'a local day made longer by DST ends at its real midnight (Berlin, last Sunday of October)',
      startedAt: ['2026-10-25T08:00:00.000Z'],
      cap: { per_24h: null, per_local_day: 1 },
      zones: ['Europe/Berlin'],
      now: '2026-10-25T12:00:00.000Z',
      // The 25 October 2026 has 25 hours in Berlin: midnight after it is 23:00Z (CET).
      expected: '2026-10-25T23:00:00.000Z',
    },
    {
      name: 'an attempt recorded ahead of this clock counts as now',
      startedAt: ['2026-06-01T12:00:05.000Z'],
      cap: { per_24h: 1, per_local_day: null },
      zones: ['UTC'],
      now: '2026-06-01T12:00:00.000Z',
      expected: '2026-06-02T12:00:00.000Z',
    },
  ]
  for (const { name, startedAt, cap, zones, now, expected } of cases) test(name, () => assert.equal(step(startedAt, cap, zones, now), expected))
})

describe('capIsOn', () => {
  test('a cap with neither figure, or none at all, is off', () => {
    assert.equal(capIsOn(null), false)
    assert.equal(capIsOn({ per_24h: null, per_local_day: null }), false)
    assert.equal(capIsOn({ per_24h: 3, per_local_day: null }), true)
    assert.equal(capIsOn({ per_24h: null, per_local_day: 1 }), true)
  })
})
