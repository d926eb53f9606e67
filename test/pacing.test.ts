/**
 * Pacing per sender: the slot arithmetic (table tests), and the dispatcher
 * keeping a WhatsApp number's pace across two worker instances on one
 * database, with an injected clock and the WhatsApp Cloud fake.
 */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { PACE_AHEAD_MS, type SenderSlots, takeSlot } from '../src/domain/pacing.ts'

const T0 = Date.parse('2026-06-01T10:00:00Z')
const NEVER = { nextSlotAt: 0, heldUntil: 0 }

describe('a sender\'s slots', () => {
  test('a start takes max(now, next slot) and moves it on by one interval; further than a little ahead, or into the next second, it waits', () => {
    const cases: [string, SenderSlots, number, number, ReturnType<typeof takeSlot>][] = [
      ['an idle sender starts at once', NEVER, 80, T0, { start: true, slots: { nextSlotAt: T0 + 12.5, heldUntil: 0 } }],
      ['a slot a little ahead is taken now', { nextSlotAt: T0 + 100, heldUntil: 0 }, 80, T0, { start: true, slots: { nextSlotAt: T0 + 112.5, heldUntil: 0 } }],
      ['up to PACE_AHEAD_MS ahead', { nextSlotAt: T0 + PACE_AHEAD_MS, heldUntil: 0 }, 80, T0, { start: true, slots: { nextSlotAt: T0 + PACE_AHEAD_MS + 12.5, heldUntil: 0 } }],
      ['beyond it, it waits for its slot', { nextSlotAt: T0 + 255, heldUntil: 0 }, 80, T0, { start: false, until: T0 + 255, slots: { nextSlotAt: T0 + 255, heldUntil: T0 + 255 } }],
      ['never into the next second', { nextSlotAt: T0 + 1000, heldUntil: 0 }, 80, T0 + 900, { start: false, until: T0 + 1000, slots: { nextSlotAt: T0 + 1000, heldUntil: T0 + 1000 } }],
      ['a slot in the past is now', { nextSlotAt: T0 - 5000, heldUntil: 0 }, 1, T0, { start: true, slots: { nextSlotAt: T0 + 1000, heldUntil: 0 } }],
      ['one a second: the next waits a second', { nextSlotAt: T0 + 1000, heldUntil: 0 }, 1, T0, { start: false, until: T0 + 1000, slots: { nextSlotAt: T0 + 1000, heldUntil: T0 + 1000 } }],
      ['one told to wait comes back after the last one told', { nextSlotAt: T0 + 255, heldUntil: T0 + 2000 }, 80, T0, { start: false, until: T0 + 2012.5, slots: { nextSlotAt: T0 + 255, heldUntil: T0 + 2012.5 } }],
      ['those told before and gone are forgotten', { nextSlotAt: T0 + 255, heldUntil: T0 - 60_000 }, 80, T0, { start: false, until: T0 + 255, slots: { nextSlotAt: T0 + 255, heldUntil: T0 + 255 } }],
      ['a free slot is taken even while others wait', { nextSlotAt: T0, heldUntil: T0 + 5000 }, 80, T0, { start: true, slots: { nextSlotAt: T0 + 12.5, heldUntil: T0 + 5000 } }],
      ['a next slot no start could have set (a clock that went back) counts as now', { nextSlotAt: T0 + 60_000, heldUntil: 0 }, 80, T0, { start: true, slots: { nextSlotAt: T0 + 12.5, heldUntil: 0 } }],
    ]
    for (const [name, slots, perSecond, now, expected] of cases) assert.deepEqual(takeSlot(slots, perSecond, now), expected, name)
  })

  test('whatever the clock, no second of it sees more starts than the pace', () => {
    for (const perSecond of [0.5, 1, 3, 80, 1000]) {
      let slots: SenderSlots = NEVER
      const perWindow = new Map<number, number>()
      // A dispatcher looking every 7 ms for 20 s, starting all it may each time.
      for (let now = T0 + 3; now < T0 + 20_000; now += 7) {
        for (;;) {
          const decision = takeSlot(slots, perSecond, now)
          if (!decision.start) break
          slots = decision.slots
          const window = Math.floor(now / 1000)
          perWindow.set(window, (perWindow.get(window) ?? 0) + 1)
        }
      }
      const most = Math.max(...perWindow.values())
      assert.ok(most <= Math.max(1, perSecond), `${perSecond}/s: ${most} in one second`)
      const total = [...perWindow.values()].reduce((a, b) => a + b, 0)
      // A look in one second cannot take the slots at its very end: a few a second are lost at most.
      assert.ok(total >= Math.floor(perSecond * 20 * 0.99) - 1, `${perSecond}/s: only ${total} in 20 s`)
    }
  })
})
