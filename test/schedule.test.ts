import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { DEFAULT_SCHEDULE, WEEKDAYS, type Schedule } from '../src/domain/campaignSettings.ts'
import { nextOpening, openPeriods, scheduleProblems } from '../src/domain/schedule.ts'

/** The next opening as an ISO instant, so a failure shows times rather than milliseconds. */
function opening(schedule: Schedule, zone: string, from: string): string | null {
  const found = nextOpening(schedule, [zone], Date.parse(from))
  return found === null ? null : new Date(found).toISOString()
}

function everyDay(start: string, end: string): Schedule {
  return { timezone: 'contact', windows: [{ days: [...WEEKDAYS], start, end }] }
}

describe('nextOpening', () => {
  test('the default schedule opens at 09:00 local on the same day', () => {
    // 2026-06-01 08:00 EDT
    assert.equal(opening(DEFAULT_SCHEDULE, 'America/New_York', '2026-06-01T12:00:00.000Z'), '2026-06-01T13:00:00.000Z')
  })

  test('inside a window it returns `from` itself, to the millisecond', () => {
    assert.equal(opening(DEFAULT_SCHEDULE, 'America/New_York', '2026-06-01T15:30:00.123Z'), '2026-06-01T15:30:00.123Z')
    assert.equal(opening(DEFAULT_SCHEDULE, 'America/New_York', '2026-06-01T13:00:00.000Z'), '2026-06-01T13:00:00.000Z')
    assert.equal(opening(DEFAULT_SCHEDULE, 'America/New_York', '2026-06-01T23:59:59.999Z'), '2026-06-01T23:59:59.999Z')
  })

  test('at or after the end of the day’s window it opens the next morning', () => {
    // 20:00 EDT is the exclusive end.
    assert.equal(opening(DEFAULT_SCHEDULE, 'America/New_York', '2026-06-02T00:00:00.000Z'), '2026-06-02T13:00:00.000Z')
    assert.equal(opening(DEFAULT_SCHEDULE, 'America/New_York', '2026-06-02T03:30:00.000Z'), '2026-06-02T13:00:00.000Z')
  })

  test('a weekend-only window skips to Saturday, and from Sunday evening to the next Saturday', () => {
    const weekends: Schedule = { timezone: 'contact', windows: [{ days: ['sat', 'sun'], start: '10:00', end: '16:00' }] }
    // Wednesday 2026-06-03 → Saturday 2026-06-06 10:00 CEST
    assert.equal(opening(weekends, 'Europe/Berlin', '2026-06-03T10:00:00.000Z'), '2026-06-06T08:00:00.000Z')
    assert.equal(opening(weekends, 'Europe/Berlin', '2026-06-07T13:59:59.999Z'), '2026-06-07T13:59:59.999Z')
    assert.equal(opening(weekends, 'Europe/Berlin', '2026-06-07T14:00:00.000Z'), '2026-06-13T08:00:00.000Z')
  })

  test('an end of 24:00 runs to local midnight', () => {
    const lateEvening = everyDay('22:00', '24:00')
    assert.equal(opening(lateEvening, 'UTC', '2026-06-01T23:59:59.999Z'), '2026-06-01T23:59:59.999Z')
    assert.equal(opening(lateEvening, 'UTC', '2026-06-02T00:00:00.000Z'), '2026-06-02T22:00:00.000Z')
  })

  test('windows that abut across midnight act as one overnight window', () => {
    const overnight: Schedule = {
      timezone: 'contact',
      windows: [
        { days: ['fri'], start: '20:00', end: '24:00' },
        { days: ['sat'], start: '00:00', end: '06:00' },
      ],
    }
    // Friday 2026-06-05 23:59 CEST, then Saturday 00:00 and 05:59 CEST
    assert.equal(opening(overnight, 'Europe/Berlin', '2026-06-05T21:59:00.000Z'), '2026-06-05T21:59:00.000Z')
    assert.equal(opening(overnight, 'Europe/Berlin', '2026-06-05T22:00:00.000Z'), '2026-06-05T22:00:00.000Z')
    assert.equal(opening(overnight, 'Europe/Berlin', '2026-06-06T03:59:59.999Z'), '2026-06-06T03:59:59.999Z')
    // Saturday 06:00 CEST closes until the next Friday 20:00 CEST
    assert.equal(opening(overnight, 'Europe/Berlin', '2026-06-06T04:00:00.000Z'), '2026-06-12T18:00:00.000Z')
  })

  test('overlapping windows on one day open as their union', () => {
    const split: Schedule = {
      timezone: 'contact',
      windows: [
        { days: ['mon'], start: '09:00', end: '12:00' },
        { days: ['mon'], start: '11:00', end: '14:00' },
        { days: ['mon'], start: '16:00', end: '18:00' },
      ],
    }
    // Monday 2026-06-01, UTC
    assert.equal(opening(split, 'UTC', '2026-06-01T13:59:00.000Z'), '2026-06-01T13:59:00.000Z')
    assert.equal(opening(split, 'UTC', '2026-06-01T14:00:00.000Z'), '2026-06-01T16:00:00.000Z')
  })

  describe('America/New_York spring forward, 2026-03-08 02:00 EST → 03:00 EDT (07:00Z)', () => {
    test('09:00 opens at 09:00 EDT on the change day, from before and after the change', () => {
      assert.equal(opening(DEFAULT_SCHEDULE, 'America/New_York', '2026-03-08T05:00:00.000Z'), '2026-03-08T13:00:00.000Z')
      assert.equal(opening(DEFAULT_SCHEDULE, 'America/New_York', '2026-03-08T07:00:00.000Z'), '2026-03-08T13:00:00.000Z')
      // 20:00 EST the evening before, 20:00 EDT on the day
      assert.equal(opening(DEFAULT_SCHEDULE, 'America/New_York', '2026-03-08T00:59:59.999Z'), '2026-03-08T00:59:59.999Z')
      assert.equal(opening(DEFAULT_SCHEDULE, 'America/New_York', '2026-03-08T23:59:00.000Z'), '2026-03-08T23:59:00.000Z')
      assert.equal(opening(DEFAULT_SCHEDULE, 'America/New_York', '2026-03-09T00:00:00.000Z'), '2026-03-09T13:00:00.000Z')
    })

    test('a window starting at 02:30, inside the gap, opens when the clocks jump', () => {
      const nightShift = everyDay('02:30', '05:00')
      assert.equal(opening(nightShift, 'America/New_York', '2026-03-07T06:00:00.000Z'), '2026-03-07T07:30:00.000Z')
      assert.equal(opening(nightShift, 'America/New_York', '2026-03-08T06:00:00.000Z'), '2026-03-08T07:00:00.000Z')
      // 05:00 EDT closes it; the next day it opens at 02:30 EDT.
      assert.equal(opening(nightShift, 'America/New_York', '2026-03-08T08:59:59.999Z'), '2026-03-08T08:59:59.999Z')
      assert.equal(opening(nightShift, 'America/New_York', '2026-03-08T09:00:00.000Z'), '2026-03-09T06:30:00.000Z')
    })

    test('a window across the change lasts as the wall clock says (00:00 EST to 06:00 EDT is 5 h)', () => {
      const earlyHours = everyDay('00:00', '06:00')
      assert.equal(opening(earlyHours, 'America/New_York', '2026-03-08T06:59:59.999Z'), '2026-03-08T06:59:59.999Z')
      assert.equal(opening(earlyHours, 'America/New_York', '2026-03-08T07:00:00.000Z'), '2026-03-08T07:00:00.000Z')
      assert.equal(opening(earlyHours, 'America/New_York', '2026-03-08T10:00:00.000Z'), '2026-03-09T04:00:00.000Z')
    })

    test('a window wholly inside the gap does not open that day', () => {
      const skipped = everyDay('02:10', '02:50')
      assert.equal(opening(skipped, 'America/New_York', '2026-03-08T05:00:00.000Z'), '2026-03-09T06:10:00.000Z')
    })
  })

  describe('America/New_York fall back, 2026-11-01 02:00 EDT → 01:00 EST (06:00Z)', () => {
    test('09:00–20:00 on the 25-hour day is 09:00 EST to 20:00 EST', () => {
      assert.equal(opening(DEFAULT_SCHEDULE, 'America/New_York', '2026-11-01T04:00:00.000Z'), '2026-11-01T14:00:00.000Z')
      assert.equal(opening(DEFAULT_SCHEDULE, 'America/New_York', '2026-11-02T00:59:59.999Z'), '2026-11-02T00:59:59.999Z')
      assert.equal(opening(DEFAULT_SCHEDULE, 'America/New_York', '2026-11-02T01:00:00.000Z'), '2026-11-02T14:00:00.000Z')
      // The evening before, 20:00 EDT still ends it.
      assert.equal(opening(DEFAULT_SCHEDULE, 'America/New_York', '2026-11-01T00:00:00.000Z'), '2026-11-01T14:00:00.000Z')
    })

    test('a window starting at 01:30, which happens twice, opens the first time', () => {
      const lateNight = everyDay('01:30', '03:00')
      assert.equal(opening(lateNight, 'America/New_York', '2026-11-01T04:00:00.000Z'), '2026-11-01T05:30:00.000Z')
    })

    test('from inside the repeated hour, a window opened in its first pass is still open', () => {
      const lateNight = everyDay('01:30', '03:00')
      // 01:10 EST, the second 01:10 of the night: the window opened at 01:30 EDT.
      assert.equal(opening(lateNight, 'America/New_York', '2026-11-01T06:10:00.000Z'), '2026-11-01T06:10:00.000Z')
      assert.equal(nextOpening(lateNight, ['America/New_York'], Date.parse('2026-11-01T06:10:00.000Z')), Date.parse('2026-11-01T06:10:00.000Z'))
      // 03:00 EST ends it.
      assert.equal(opening(lateNight, 'America/New_York', '2026-11-01T08:00:00.000Z'), '2026-11-02T06:30:00.000Z')
    })

    test('a window ending at 01:30 ends the first time and does not reopen in the repeated hour', () => {
      const afterMidnight = everyDay('00:00', '01:30')
      assert.equal(opening(afterMidnight, 'America/New_York', '2026-11-01T05:29:59.999Z'), '2026-11-01T05:29:59.999Z')
      // 01:45 EDT, then 01:10 EST: closed until 00:00 EST on 2026-11-02.
      assert.equal(opening(afterMidnight, 'America/New_York', '2026-11-01T05:45:00.000Z'), '2026-11-02T05:00:00.000Z')
      assert.equal(opening(afterMidnight, 'America/New_York', '2026-11-01T06:10:00.000Z'), '2026-11-02T05:00:00.000Z')
    })
  })

  describe('Europe/London', () => {
    test('spring forward 2026-03-29 01:00 GMT → 02:00 BST', () => {
      assert.equal(opening(DEFAULT_SCHEDULE, 'Europe/London', '2026-03-28T06:00:00.000Z'), '2026-03-28T09:00:00.000Z')
      assert.equal(opening(DEFAULT_SCHEDULE, 'Europe/London', '2026-03-29T06:00:00.000Z'), '2026-03-29T08:00:00.000Z')
      assert.equal(opening(DEFAULT_SCHEDULE, 'Europe/London', '2026-03-29T18:59:59.999Z'), '2026-03-29T18:59:59.999Z')
      assert.equal(opening(DEFAULT_SCHEDULE, 'Europe/London', '2026-03-29T19:00:00.000Z'), '2026-03-30T08:00:00.000Z')
    })

    test('fall back 2026-10-25 02:00 BST → 01:00 GMT', () => {
      // 20:30 BST on the Saturday → 09:00 GMT on the Sunday
      assert.equal(opening(DEFAULT_SCHEDULE, 'Europe/London', '2026-10-24T19:30:00.000Z'), '2026-10-25T09:00:00.000Z')
      const lateNight = everyDay('01:30', '02:30')
      // 01:30 BST opens it; the second 01:15 (GMT) is inside it; 02:30 GMT ends it.
      assert.equal(opening(lateNight, 'Europe/London', '2026-10-24T23:00:00.000Z'), '2026-10-25T00:30:00.000Z')
      assert.equal(opening(lateNight, 'Europe/London', '2026-10-25T01:15:00.000Z'), '2026-10-25T01:15:00.000Z')
      assert.equal(opening(lateNight, 'Europe/London', '2026-10-25T02:30:00.000Z'), '2026-10-26T01:30:00.000Z')
    })
  })

  test('Asia/Kathmandu (+05:45) opens at 09:00 NPT', () => {
    assert.equal(opening(DEFAULT_SCHEDULE, 'Asia/Kathmandu', '2026-06-01T03:00:00.000Z'), '2026-06-01T03:15:00.000Z')
    assert.equal(opening(DEFAULT_SCHEDULE, 'Asia/Kathmandu', '2026-06-01T14:14:59.999Z'), '2026-06-01T14:14:59.999Z')
    assert.equal(opening(DEFAULT_SCHEDULE, 'Asia/Kathmandu', '2026-06-01T14:15:00.000Z'), '2026-06-02T03:15:00.000Z')
  })

  describe('blackout dates', () => {
    test('a run of blacked-out days is skipped as a whole', () => {
      const holidays: Schedule = { ...DEFAULT_SCHEDULE, blackout_dates: ['2026-06-02', '2026-06-03', '2026-06-04'] }
      // Monday 20:30 EDT → Friday 09:00 EDT
      assert.equal(opening(holidays, 'America/New_York', '2026-06-02T00:30:00.000Z'), '2026-06-05T13:00:00.000Z')
      assert.equal(opening(holidays, 'America/New_York', '2026-06-03T15:00:00.000Z'), '2026-06-05T13:00:00.000Z')
    })

    test('a blackout date is the contact’s local date, not the UTC date', () => {
      // 2026-05-31T23:30Z is 08:30 on 2026-06-01 in Tokyo.
      const localFirst: Schedule = { ...DEFAULT_SCHEDULE, blackout_dates: ['2026-06-01'] }
      assert.equal(opening(localFirst, 'Asia/Tokyo', '2026-05-31T23:30:00.000Z'), '2026-06-02T00:00:00.000Z')
      const utcDate: Schedule = { ...DEFAULT_SCHEDULE, blackout_dates: ['2026-05-31'] }
      assert.equal(opening(utcDate, 'Asia/Tokyo', '2026-05-31T23:30:00.000Z'), '2026-06-01T00:00:00.000Z')
      // 2026-06-02T02:00Z is still 2026-06-01 19:00 in Los Angeles.
      const utcNextDay: Schedule = { ...DEFAULT_SCHEDULE, blackout_dates: ['2026-06-02'] }
      assert.equal(opening(utcNextDay, 'America/Los_Angeles', '2026-06-02T02:00:00.000Z'), '2026-06-02T02:00:00.000Z')
    })
  })

  describe('starts_at and ends_at', () => {
    test('nothing opens before starts_at; a starts_at inside a window opens at it', () => {
      const later: Schedule = { ...DEFAULT_SCHEDULE, starts_at: '2026-07-01T00:00:00Z' }
      assert.equal(opening(later, 'America/New_York', '2026-06-01T15:00:00.000Z'), '2026-07-01T13:00:00.000Z')
      const midMorning: Schedule = { ...DEFAULT_SCHEDULE, starts_at: '2026-07-01T11:00:00-04:00' }
      assert.equal(opening(midMorning, 'America/New_York', '2026-06-01T15:00:00.000Z'), '2026-07-01T15:00:00.000Z')
    })

    test('nothing opens at or after ends_at', () => {
      const until: Schedule = { ...DEFAULT_SCHEDULE, ends_at: '2026-07-01T13:00:00Z' }
      assert.equal(opening(until, 'America/New_York', '2026-06-30T00:30:00.000Z'), '2026-06-30T13:00:00.000Z')
      assert.equal(opening(until, 'America/New_York', '2026-07-01T00:30:00.000Z'), null)
      assert.equal(opening(until, 'America/New_York', '2026-07-01T13:00:00.000Z'), null)
      assert.equal(opening(until, 'America/New_York', '2026-06-30T23:59:59.999Z'), '2026-06-30T23:59:59.999Z')
    })
  })

  describe('never opens', () => {
    test('no windows, or only windows with no days', () => {
      assert.equal(opening({ timezone: 'contact', windows: [] }, 'UTC', '2026-06-01T00:00:00.000Z'), null)
      const noDays: Schedule = { timezone: 'contact', windows: [{ days: [], start: '09:00', end: '10:00' }] }
      assert.equal(opening(noDays, 'UTC', '2026-06-01T00:00:00.000Z'), null)
    })

    test('every remaining open day blacked out for longer than the two-year horizon', () => {
      // Every Monday from 2026-06-01 for 120 weeks.
      const mondays = Array.from({ length: 120 }, (_, week) =>
        new Date(Date.UTC(2026, 5, 1 + 7 * week)).toISOString().slice(0, 10),
      )
      const mondaysOnly: Schedule = {
        timezone: 'contact',
        windows: [{ days: ['mon'], start: '09:00', end: '10:00' }],
        blackout_dates: mondays,
      }
      assert.equal(opening(mondaysOnly, 'UTC', '2026-06-01T00:00:00.000Z'), null)
    })

    test('from at or after ends_at', () => {
      const ended: Schedule = { ...DEFAULT_SCHEDULE, ends_at: '2026-01-01T00:00:00Z' }
      assert.equal(opening(ended, 'UTC', '2026-06-01T12:00:00.000Z'), null)
    })
  })

  test('a campaign-wide zone is used and the contact’s zone ignored', () => {
    const berlinHours: Schedule = { ...DEFAULT_SCHEDULE, timezone: 'Europe/Berlin' }
    // 2026-06-01T05:00Z is 07:00 in Berlin and 22:00 the day before in Los Angeles.
    assert.equal(opening(berlinHours, 'America/Los_Angeles', '2026-06-01T05:00:00.000Z'), '2026-06-01T07:00:00.000Z')
    assert.equal(opening(berlinHours, 'Asia/Tokyo', '2026-06-01T05:00:00.000Z'), '2026-06-01T07:00:00.000Z')
  })

  test('an unknown zone is refused', () => {
    assert.throws(() => nextOpening(DEFAULT_SCHEDULE, ['Mars/Olympus_Mons'], 0), RangeError)
    assert.throws(() => nextOpening({ ...DEFAULT_SCHEDULE, timezone: 'Nowhere' }, ['UTC'], 0), RangeError)
  })
})

describe('open at an instant', () => {
  const isOpen = (at: string) => nextOpening(DEFAULT_SCHEDULE, ['Asia/Kathmandu'], Date.parse(at)) === Date.parse(at)
  test('when the next opening is that instant itself', () => {
    assert.equal(isOpen('2026-06-01T03:15:00.000Z'), true)
    assert.equal(isOpen('2026-06-01T03:14:59.999Z'), false)
    assert.equal(isOpen('2026-06-01T14:15:00.000Z'), false)
  })
})

/** The open periods as ISO instants, so a failure shows times. */
function periods(schedule: Schedule, zones: string[], from: string, count: number): [string, string | null][] {
  return openPeriods(schedule, zones, Date.parse(from), count).map(({ opensAt, closesAt }) => [
    new Date(opensAt).toISOString(),
    closesAt === null ? null : new Date(closesAt).toISOString(),
  ])
}

describe('openPeriods', () => {
  const cases: { name: string; schedule: Schedule; zones: string[]; from: string; count: number; expected: [string, string | null][] }[] = [
    {
      name: 'the default schedule in New York: 09:00-20:00 EDT each day, the first from the morning',
      schedule: DEFAULT_SCHEDULE,
      zones: ['America/New_York'],
      from: '2026-06-01T12:00:00.000Z',
      count: 3,
      expected: [
        ['2026-06-01T13:00:00.000Z', '2026-06-02T00:00:00.000Z'],
        ['2026-06-02T13:00:00.000Z', '2026-06-03T00:00:00.000Z'],
        ['2026-06-03T13:00:00.000Z', '2026-06-04T00:00:00.000Z'],
      ],
    },
    {
      name: 'a period under way counts from `from`',
      schedule: DEFAULT_SCHEDULE,
      zones: ['America/New_York'],
      from: '2026-06-01T15:30:00.000Z',
      count: 1,
      expected: [['2026-06-01T15:30:00.000Z', '2026-06-02T00:00:00.000Z']],
    },
    {
      name: 'windows abutting across midnight make one overnight period',
      schedule: { timezone: 'contact', windows: [{ days: [...WEEKDAYS], start: '20:00', end: '24:00' }, { days: [...WEEKDAYS], start: '00:00', end: '08:00' }] },
      zones: ['Europe/Berlin'],
      from: '2026-06-01T12:00:00.000Z',
      count: 2,
      expected: [
        ['2026-06-01T18:00:00.000Z', '2026-06-02T06:00:00.000Z'],
        ['2026-06-02T18:00:00.000Z', '2026-06-03T06:00:00.000Z'],
      ],
    },
    {
      name: 'two zones: only the hours open in both (Madrid and the Canaries, an hour apart)',
      schedule: DEFAULT_SCHEDULE,
      zones: ['Atlantic/Canary', 'Europe/Madrid'],
      from: '2026-06-01T00:00:00.000Z',
      count: 1,
      // 09:00 Canary (WEST) is 08:00Z, 20:00 Madrid (CEST) is 18:00Z.
      expected: [['2026-06-01T08:00:00.000Z', '2026-06-01T18:00:00.000Z']],
    },
    {
      name: 'a blackout date is skipped, and ends_at closes the last period early',
      schedule: { ...DEFAULT_SCHEDULE, timezone: 'Europe/London', blackout_dates: ['2026-12-25'], ends_at: '2026-12-26T12:00:00Z' },
      zones: [],
      from: '2026-12-24T10:00:00.000Z',
      count: 5,
      expected: [
        ['2026-12-24T10:00:00.000Z', '2026-12-24T20:00:00.000Z'],
        ['2026-12-26T09:00:00.000Z', '2026-12-26T12:00:00.000Z'],
      ],
    },
    {
      name: 'across the spring change the window keeps its wall-clock hours',
      schedule: everyDay('09:00', '20:00'),
      zones: ['Europe/Berlin'],
      from: '2026-03-28T00:00:00.000Z',
      count: 2,
      expected: [
        ['2026-03-28T08:00:00.000Z', '2026-03-28T19:00:00.000Z'],
        ['2026-03-29T07:00:00.000Z', '2026-03-29T18:00:00.000Z'],
      ],
    },
    {
      name: 'a schedule open at every hour is one period that never closes within the search',
      schedule: everyDay('00:00', '24:00'),
      zones: ['UTC'],
      from: '2026-06-01T12:00:00.000Z',
      count: 5,
      expected: [['2026-06-01T12:00:00.000Z', null]],
    },
    {
      name: 'zones whose windows never meet have no period',
      schedule: everyDay('09:00', '10:00'),
      zones: ['Pacific/Kiritimati', 'Pacific/Pago_Pago'],
      from: '2026-06-01T00:00:00.000Z',
      count: 5,
      expected: [],
    },
  ]
  for (const { name, schedule, zones, from, count, expected } of cases) {
    test(name, () => assert.deepEqual(periods(schedule, zones, from, count), expected))
  }
})

describe('scheduleProblems', () => {
  test('finds none in the default schedule or a complete valid one', () => {
    assert.deepEqual(scheduleProblems(DEFAULT_SCHEDULE), [])
    assert.deepEqual(
      scheduleProblems({
        timezone: 'Asia/Kathmandu',
        fallback_timezone: 'Europe/London',
        windows: [
          { days: ['fri'], start: '20:00', end: '24:00' },
          { days: ['sat'], start: '00:00', end: '06:00' },
        ],
        blackout_dates: ['2028-02-29'],
        starts_at: '2026-06-01T00:00:00+05:45',
        ends_at: '2026-12-31T23:59:59.999Z',
      }),
      [],
    )
  })

  test('reports bad times, days and window order where they are', () => {
    const problems = scheduleProblems({
      timezone: 'contact',
      windows: [
        { days: ['mon'], start: '9:00', end: '24:01' },
        { days: [], start: '24:00', end: '10:00' },
        { days: ['mon', 'funday' as 'mon'], start: '18:00', end: '09:00' },
        { days: ['tue'], start: '10:00', end: '10:00' },
      ],
    })
    assert.deepEqual(problems, [
      { path: ['windows', 0, 'start'], message: 'start must be a time from 00:00 to 23:59' },
      { path: ['windows', 0, 'end'], message: 'end must be a time from 00:00 to 24:00' },
      { path: ['windows', 1, 'start'], message: 'start must be a time from 00:00 to 23:59' },
      { path: ['windows', 1, 'days'], message: 'days must name at least one day' },
      { path: ['windows', 2, 'days', 1], message: 'day must be one of mon, tue, wed, thu, fri, sat, sun' },
      { path: ['windows', 2, 'end'], message: 'end must be after start' },
      { path: ['windows', 3, 'end'], message: 'end must be after start' },
    ])
  })

  test('reports an empty window list', () => {
    assert.deepEqual(scheduleProblems({ timezone: 'contact', windows: [] }), [
      { path: ['windows'], message: 'windows must have at least one window' },
    ])
  })

  test('reports zones that are not IANA zones', () => {
    assert.deepEqual(scheduleProblems({ ...DEFAULT_SCHEDULE, timezone: 'UTC+3', fallback_timezone: 'Europe/Berln' }), [
      { path: ['timezone'], message: 'timezone must be "contact" or an IANA time zone such as Europe/Berlin' },
      { path: ['fallback_timezone'], message: 'fallback_timezone must be an IANA time zone such as Europe/Berlin' },
    ])
  })

  test('reports dates that are not calendar dates', () => {
    assert.deepEqual(scheduleProblems({ ...DEFAULT_SCHEDULE, blackout_dates: ['2026-12-25', '2026-02-29', '2026-1-5'] }), [
      { path: ['blackout_dates', 1], message: 'blackout date must be a calendar date (YYYY-MM-DD)' },
      { path: ['blackout_dates', 2], message: 'blackout date must be a calendar date (YYYY-MM-DD)' },
    ])
  })

  test('reports instants without an offset and an end that is not after the start', () => {
    assert.deepEqual(scheduleProblems({ ...DEFAULT_SCHEDULE, starts_at: '2026-06-01T09:00:00', ends_at: 'soon' }), [
      { path: ['starts_at'], message: 'starts_at must be an ISO 8601 instant with an offset or Z' },
      { path: ['ends_at'], message: 'ends_at must be an ISO 8601 instant with an offset or Z' },
    ])
    assert.deepEqual(scheduleProblems({ ...DEFAULT_SCHEDULE, starts_at: '2026-02-30T09:00:00Z', ends_at: '2026-06-01T24:00:00Z' }), [
      { path: ['starts_at'], message: 'starts_at must be an ISO 8601 instant with an offset or Z' },
      { path: ['ends_at'], message: 'ends_at must be an ISO 8601 instant with an offset or Z' },
    ])
    assert.deepEqual(
      scheduleProblems({ ...DEFAULT_SCHEDULE, starts_at: '2026-06-01T12:00:00+02:00', ends_at: '2026-06-01T10:00:00Z' }),
      [{ path: ['ends_at'], message: 'ends_at must be after starts_at' }],
    )
  })
})
