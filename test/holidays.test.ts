import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { type HolidayRule, shippedProfiles } from '../src/domain/callingLaw.ts'
import { holidayDates, holidayDatesBetween } from '../src/domain/holidays.ts'

const dates = (rules: HolidayRule[], year: number) => holidayDates(rules, year).map(({ date }) => date)

describe('holidayDates', () => {
  describe('Western Easter Sunday', () => {
    const easter: [number, string][] = [
      [2024, '2024-03-31'],
      [2025, '2025-04-20'],
      [2026, '2026-04-05'],
      [2027, '2027-03-28'],
      [2028, '2028-04-16'],
      [2029, '2029-04-01'],
      [2030, '2030-04-21'],
      [2038, '2038-04-25'],
      // The bounds of the computus: the earliest possible date, the latest.
      [1818, '1818-03-22'],
      [2285, '2285-03-22'],
      [1943, '1943-04-25'],
      [2000, '2000-04-23'],
    ]
    for (const [year, expected] of easter) {
      test(String(year), () => assert.deepEqual(holidayDates([{ name: 'Easter', easter_offset: 0 }], year), [{ date: expected, name: 'Easter' }]))
    }
  })

  describe("France's public holidays", () => {
    // As the shipped profile holds them (Code du travail, art. L3133-1): Easter Monday, Ascension (Easter + 39) and Whit Monday (Easter + 50) move with Easter.
    const rule = shippedProfiles().profiles.flatMap((profile) => profile.rules).find((each) => each.id === 'fr.public_holidays')
    const france: HolidayRule[] = rule?.kind === 'forbidden_dates' ? rule.holidays : []
    const years: [number, string[]][] = [
      [2026, ['2026-01-01', '2026-04-06', '2026-05-01', '2026-05-08', '2026-05-14', '2026-05-25', '2026-07-14', '2026-08-15', '2026-11-01', '2026-11-11', '2026-12-25']],
      [2027, ['2027-01-01', '2027-03-29', '2027-05-01', '2027-05-06', '2027-05-08', '2027-05-17', '2027-07-14', '2027-08-15', '2027-11-01', '2027-11-11', '2027-12-25']],
    ]
    for (const [year, expected] of years) test(String(year), () => assert.deepEqual(dates(france, year), expected))

    test('each date keeps its name, sorted by date whatever the order of the rules', () => {
      const found = holidayDates([...france].reverse(), 2027)
      assert.deepEqual(found.slice(3, 5), [
        { date: '2027-05-06', name: 'Ascension' },
        { date: '2027-05-08', name: 'Victoire 1945' },
      ])
    })
  })

  describe('the nth weekday of a month', () => {
    const cases: [HolidayRule, number, string[], string][] = [
      [{ name: 'Thanksgiving', month: 11, weekday: 'thu', nth: 4 }, 2026, ['2026-11-26'], 'US Thanksgiving, the 4th Thursday of November'],
      [{ name: 'Thanksgiving', month: 11, weekday: 'thu', nth: 4 }, 2027, ['2027-11-25'], 'US Thanksgiving'],
      [{ name: 'Memorial Day', month: 5, weekday: 'mon', nth: -1 }, 2026, ['2026-05-25'], 'Memorial Day, the last Monday of May (31 May is a Sunday)'],
      [{ name: 'Memorial Day', month: 5, weekday: 'mon', nth: -1 }, 2027, ['2027-05-31'], 'Memorial Day on the last day of the month'],
      [{ name: 'Labor Day', month: 9, weekday: 'mon', nth: 1 }, 2026, ['2026-09-07'], 'the 1st Monday of September'],
      [{ name: 'Labour Day', month: 9, weekday: 'mon', nth: 1 }, 2025, ['2025-09-01'], 'a 1st weekday on the 1st'],
      [{ name: 'Fifth Friday', month: 5, weekday: 'fri', nth: 5 }, 2026, ['2026-05-29'], 'a 5th Friday that May 2026 has'],
      [{ name: 'Fifth Monday', month: 2, weekday: 'mon', nth: 5 }, 2026, [], 'a 5th Monday that February 2026 lacks'],
      [{ name: 'Fifth Sunday', month: 2, weekday: 'sun', nth: 5 }, 2026, [], 'February 2026 has four Sundays'],
      [{ name: 'Fifth Tuesday', month: 2, weekday: 'tue', nth: 5 }, 2028, ['2028-02-29'], 'a leap February with a 5th Tuesday'],
    ]
    for (const [rule, year, expected, what] of cases) test(`${year}: ${what}`, () => assert.deepEqual(dates([rule], year), expected))
  })

  test('a fixed date that a year lacks yields no date', () => {
    const leapDay: HolidayRule[] = [{ name: 'Leap day', month: 2, day: 29 }]
    assert.deepEqual(dates(leapDay, 2027), [])
    assert.deepEqual(dates(leapDay, 2028), ['2028-02-29'])
  })

  test('an Easter offset may cross into another month', () => {
    assert.deepEqual(dates([{ name: 'Good Friday', easter_offset: -2 }], 2029), ['2029-03-30'])
    assert.deepEqual(dates([{ name: 'Corpus Christi', easter_offset: 60 }], 2038), ['2038-06-24'])
  })

  test('no rules, no dates', () => assert.deepEqual(holidayDates([], 2026), []))
})

describe('holidayDatesBetween', () => {
  const rules: HolidayRule[] = [
    { name: 'Christmas', month: 12, day: 25 },
    { name: 'Thanksgiving', month: 11, weekday: 'thu', nth: 4 },
  ]

  test('the union over the years, sorted', () => {
    assert.deepEqual(holidayDatesBetween(rules, 2026, 2028), [
      { date: '2026-11-26', name: 'Thanksgiving' },
      { date: '2026-12-25', name: 'Christmas' },
      { date: '2027-11-25', name: 'Thanksgiving' },
      { date: '2027-12-25', name: 'Christmas' },
      { date: '2028-11-23', name: 'Thanksgiving' },
      { date: '2028-12-25', name: 'Christmas' },
    ])
  })

  test('one year is that year alone', () => assert.deepEqual(holidayDatesBetween(rules, 2027, 2027), holidayDates(rules, 2027)))
})
