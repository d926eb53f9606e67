/** Learned retry timing's rules (domain/learnedTiming.ts): hours of the week, the open hours, and the Thompson draw. */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { shippedProfiles } from '../src/domain/callingLaw.ts'
import type { Schedule } from '../src/domain/campaignSettings.ts'
import { lawWindows } from '../src/domain/contactability.ts'
import { jurisdictionsOfNumber } from '../src/domain/jurisdictions.ts'
import {
  chooseLearnedHour,
  drawBeta,
  HOURS_OF_WEEK,
  type HourTally,
  hourOfWeek,
  LEARNED_HORIZON_H,
  learnedAttemptTime,
  learnedReason,
  openHours,
  posterior,
  seededRandom,
} from '../src/domain/learnedTiming.ts'

const at = (iso: string) => Date.parse(iso)

describe('the local hour of the week', () => {
  const cases: [instant: string, zone: string, hour: number][] = [
    ['2026-06-01T00:00:00Z', 'UTC', 0], // a Monday
    ['2026-06-07T23:59:59Z', 'UTC', 167], // the Sunday after
    ['2026-06-01T07:30:00Z', 'Europe/Berlin', 9], // 09:30 CEST
    ['2026-06-01T03:29:00Z', 'Asia/Kolkata', 8], // 08:59 IST, half an hour off UTC
    ['2026-06-01T03:30:00Z', 'Asia/Kolkata', 9],
    ['2026-06-01T02:00:00Z', 'America/New_York', 6 * 24 + 22], // Sunday 22:00 EDT
    // The US clocks go forward on 2026-03-08: 01:59 EST is followed by 03:00 EDT.
    ['2026-03-08T06:59:00Z', 'America/New_York', 6 * 24 + 1],
    ['2026-03-08T07:00:00Z', 'America/New_York', 6 * 24 + 3],
    // And back on 2026-11-01: 01:00-01:59 is lived twice, both in hour 1 of Sunday.
    ['2026-11-01T05:30:00Z', 'America/New_York', 6 * 24 + 1],
    ['2026-11-01T06:30:00Z', 'America/New_York', 6 * 24 + 1],
  ]
  for (const [instant, zone, hour] of cases) {
    test(`${instant} in ${zone} is hour ${hour}`, () => assert.equal(hourOfWeek(at(instant), zone), hour))
  }
})

describe('the open hours an attempt may go to', () => {
  const weekdayMornings: Schedule = { timezone: 'contact', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri'], start: '09:00', end: '12:00' }] }

  test('one per local hour, the first open instant of each: from within a window, then the next days', () => {
    // Friday 2026-06-05 11:20 in Berlin, until Tuesday 10:00.
    const hours = openHours([{ schedule: weekdayMornings, zones: ['Europe/Berlin'] }], 'Europe/Berlin', at('2026-06-05T09:20:00Z'), at('2026-06-09T08:00:00Z'))
    assert.deepEqual(
      hours.map((instant) => new Date(instant).toISOString()),
      ['2026-06-05T09:20:00.000Z', '2026-06-08T07:00:00.000Z', '2026-06-08T08:00:00.000Z', '2026-06-08T09:00:00.000Z', '2026-06-09T07:00:00.000Z'],
    )
  })

  test('across the clocks going forward, the hours are the local ones', () => {
    const evenings: Schedule = { timezone: 'contact', windows: [{ days: ['sun'], start: '00:00', end: '05:00' }] }
    const hours = openHours([{ schedule: evenings, zones: ['America/New_York'] }], 'America/New_York', at('2026-03-08T05:00:00Z'), at('2026-03-09T05:00:00Z'))
    // 00:00 and 01:00 EST, then 03:00 and 04:00 EDT: 02:00 never happens.
    assert.deepEqual(
      hours.map((instant) => new Date(instant).toISOString()),
      ['2026-03-08T05:00:00.000Z', '2026-03-08T06:00:00.000Z', '2026-03-08T07:00:00.000Z', '2026-03-08T08:00:00.000Z'],
    )
  })

  test('a number of two zones: only hours open in both', () => {
    const nineToFive: Schedule = { timezone: 'contact', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '09:00', end: '17:00' }] }
    // New York and Chicago: 09:00-17:00 in both is 10:00-17:00 New York time.
    const hours = openHours([{ schedule: nineToFive, zones: ['America/New_York', 'America/Chicago'] }], 'America/New_York', at('2026-06-01T12:00:00Z'), at('2026-06-02T04:00:00Z'))
    assert.deepEqual(
      hours.map((instant) => hourOfWeek(instant, 'America/New_York') % 24),
      [10, 11, 12, 13, 14, 15, 16],
    )
  })
})

describe('the posterior of an hour', () => {
  const cases: [campaign: HourTally, organization: HourTally, alpha: number, beta: number][] = [
    // Nothing known: Beta(1, 1), every rate alike.
    [{ attempts: 0, reached: 0 }, { attempts: 0, reached: 0 }, 1, 1],
    // The organization's rate (Laplace: 41 of 102) weighted as 12 attempts.
    [{ attempts: 0, reached: 0 }, { attempts: 100, reached: 40 }, (41 / 102) * 12, (61 / 102) * 12],
    // An organization with 3 attempts weighs as 5.
    [{ attempts: 0, reached: 0 }, { attempts: 3, reached: 3 }, (4 / 5) * 5, (1 / 5) * 5],
    // The campaign's own attempts add to it.
    [{ attempts: 50, reached: 20 }, { attempts: 0, reached: 0 }, 21, 31],
  ]
  for (const [campaign, organization, alpha, beta] of cases) {
    test(`campaign ${campaign.reached}/${campaign.attempts}, organization ${organization.reached}/${organization.attempts}`, () => {
      const [a, b] = posterior(campaign, organization)
      assert.ok(Math.abs(a - alpha) < 1e-9 && Math.abs(b - beta) < 1e-9, `${a}, ${b}`)
    })
  }
})

test('Beta draws have the mean and spread of Beta(alpha, beta), shapes below 1 too', () => {
  for (const [alpha, beta] of [
    [2, 8],
    [0.5, 0.5],
    [41, 61],
  ] as const) {
    const random = seededRandom(`beta ${alpha} ${beta}`)
    const draws = Array.from({ length: 20_000 }, () => drawBeta(alpha, beta, random))
    const mean = draws.reduce((sum, x) => sum + x, 0) / draws.length
    const variance = draws.reduce((sum, x) => sum + (x - mean) ** 2, 0) / draws.length
    const expectedMean = alpha / (alpha + beta)
    const expectedVariance = (alpha * beta) / ((alpha + beta) ** 2 * (alpha + beta + 1))
    assert.ok(Math.abs(mean - expectedMean) < 0.01, `mean ${mean} for ${expectedMean}`)
    assert.ok(Math.abs(variance / expectedVariance - 1) < 0.05, `variance ${variance} for ${expectedVariance}`)
    assert.ok(draws.every((x) => x >= 0 && x <= 1))
  }
})

test('a seed gives the same draws every time, and another seed others', () => {
  const draws = (seed: string) => Array.from({ length: 5 }, seededRandom(seed))
  assert.deepEqual(draws('task_1:2'), draws('task_1:2'))
  assert.notDeepEqual(draws('task_1:2'), draws('task_1:3'))
  assert.ok(draws('x').every((x) => x >= 0 && x < 1))
})

describe('the hour chosen', () => {
  const zone = 'UTC'
  // Monday 2026-06-01, every hour from 09:00 to 20:00.
  const day = Array.from({ length: 12 }, (_, i) => at('2026-06-01T09:00:00Z') + i * 3_600_000)
  const flat = (attempts: number, reached: number): HourTally[] => Array.from({ length: HOURS_OF_WEEK }, () => ({ attempts, reached }))
  const choose = (campaign: HourTally[], seed: string, tried: number[] = []) =>
    chooseLearnedHour({ candidates: day, zone, campaign, organization: flat(0, 0), triedHoursOfDay: new Set(tried), random: seededRandom(seed) })
  const chosenHours = (campaign: HourTally[], tried: number[] = []) =>
    Array.from({ length: 400 }, (_, i) => new Date(choose(campaign, `task_${i}:2`, tried)!.at).getUTCHours())

  test('the hour with a far better record wins nearly always', () => {
    const campaign = flat(1000, 50)
    campaign[18] = { attempts: 1000, reached: 400 } // Monday 18:00
    const hours = chosenHours(campaign)
    assert.ok(hours.filter((hour) => hour === 18).length >= 396, `${hours.filter((hour) => hour === 18).length} of 400`)
  })

  test('an hour never tried is still tried, now and then, beside one known to be fair', () => {
    const campaign = flat(1000, 200)
    campaign[13] = { attempts: 0, reached: 0 } // Monday 13:00: nothing known
    const share = chosenHours(campaign).filter((hour) => hour === 13).length / 400
    assert.ok(share > 0.3 && share < 0.95, `13:00 chosen ${share * 400} times of 400`)
  })

  test('hours of the day already tried for the person are passed over while another is open', () => {
    const campaign = flat(1000, 50)
    campaign[18] = { attempts: 1000, reached: 400 }
    assert.ok(chosenHours(campaign, [18]).every((hour) => hour !== 18))
    // With every hour tried, the best comes back.
    assert.equal(new Date(choose(campaign, 'task_1:4', day.map((instant) => new Date(instant).getUTCHours()))!.at).getUTCHours(), 18)
  })

  test('the same seed chooses the same hour; the choice is always one of the candidates', () => {
    const campaign = flat(10, 3)
    for (let i = 0; i < 50; i++) {
      const chosen = choose(campaign, `task_${i}:2`)!
      assert.deepEqual(choose(campaign, `task_${i}:2`), chosen)
      assert.ok(day.includes(chosen.at))
    }
    assert.equal(chooseLearnedHour({ candidates: [], zone, campaign, organization: campaign, triedHoursOfDay: new Set(), random: Math.random }), null)
  })
})

test('learned attempt time: within the schedule, the horizon and the expiry', () => {
  const schedule: Schedule = { timezone: 'contact', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri'], start: '10:00', end: '12:00' }] }
  const campaign = Array.from({ length: HOURS_OF_WEEK }, () => ({ attempts: 100, reached: 10 }))
  const earliest = at('2026-06-01T06:00:00Z') // Monday 08:00 in Berlin
  for (let i = 0; i < 100; i++) {
    const choice = learnedAttemptTime({
      windows: [{ schedule, zones: ['Europe/Berlin'] }],
      zone: 'Europe/Berlin',
      earliest,
      until: at('2026-06-30T00:00:00Z'),
      campaign,
      organization: campaign,
      triedHoursOfDay: new Set(),
      seed: `task_${i}:2`,
    })!
    const hour = hourOfWeek(choice.at, 'Europe/Berlin')
    assert.ok(hour % 24 >= 10 && hour % 24 < 12 && hour < 5 * 24, `hour ${hour}`)
    assert.ok(choice.at >= earliest && choice.at < earliest + LEARNED_HORIZON_H * 3_600_000)
  }
  // An expiry before any opening: nothing to choose.
  assert.equal(
    learnedAttemptTime({ windows: [{ schedule, zones: ['Europe/Berlin'] }], zone: 'Europe/Berlin', earliest, until: at('2026-06-01T07:00:00Z'), campaign, organization: campaign, triedHoursOfDay: new Set(), seed: 's' }),
    null,
  )
})

describe("learned timing inside the law's windows", () => {
  const PROFILES = shippedProfiles().profiles
  const always: Schedule = { timezone: 'contact', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '00:00', end: '24:00' }] }
  const zone = 'America/New_York'
  // The campaign reaches people best at 21:00-23:59 local, which Florida's law (8 a.m.-8 p.m.) forbids for marketing.
  const nightOwls = Array.from({ length: HOURS_OF_WEEK }, (_, hour) => (hour % 24 >= 21 ? { attempts: 1_000, reached: 900 } : { attempts: 1_000, reached: 50 }))

  test('a marketing retry to a Florida number goes only to 08:00-19:59, whatever the campaign has learned', () => {
    const earliest = at('2026-06-01T12:00:00Z')
    const nature = { profiles: PROFILES, jurisdictions: jurisdictionsOfNumber('+13055550123'), purpose: 'marketing' as const, channel: 'voice' as const, artificialVoice: false }
    const windows = [{ schedule: always, zones: [zone] }, ...lawWindows(nature, [zone], earliest)]
    for (let i = 0; i < 200; i++) {
      const choice = learnedAttemptTime({ windows, zone, earliest, until: earliest + 7 * 86_400_000, campaign: nightOwls, organization: nightOwls, triedHoursOfDay: new Set(), seed: `t${i}:2` })!
      const hour = hourOfWeek(choice.at, zone) % 24
      assert.ok(hour >= 8 && hour < 20, `chose ${new Date(choice.at).toISOString()}, ${hour}:00 local`)
    }
  })

  test('an informational retry is bound by no calling hours: it goes where the campaign reaches people', () => {
    const earliest = at('2026-06-01T12:00:00Z')
    const nature = { profiles: PROFILES, jurisdictions: jurisdictionsOfNumber('+13055550123'), purpose: 'informational' as const, channel: 'voice' as const, artificialVoice: false }
    const windows = [{ schedule: always, zones: [zone] }, ...lawWindows(nature, [zone], earliest)]
    const late = Array.from({ length: 50 }, (_, i) =>
      hourOfWeek(learnedAttemptTime({ windows, zone, earliest, until: earliest + 7 * 86_400_000, campaign: nightOwls, organization: nightOwls, triedHoursOfDay: new Set(), seed: `t${i}:2` })!.at, zone) % 24,
    ).filter((hour) => hour >= 21)
    assert.ok(late.length >= 45, `${late.length} of 50 at 21:00 or later`)
  })
})

describe('why the hour was chosen', () => {
  test('the reach rate and the attempts it rests on, in the local time of the attempt', () => {
    // Tuesday 2 June 2026, 18:00 in New York.
    const choice = { at: at('2026-06-02T22:00:00Z'), hourOfWeek: 24 + 18, tally: { attempts: 1_200, reached: 492 }, drawn: 0.4 }
    assert.deepEqual(learnedReason(choice, 2, 'America/New_York'), {
      code: 'learned_hour',
      rule: 'campaign.attempts.timing',
      source: 'attempt 2 at 18:00 local (Tue): reach rate 41 % over 1,200 attempts in that hour of the week',
    })
  })

  test('an hour never tried is said to be explored', () => {
    const choice = { at: at('2026-06-02T22:30:00Z'), hourOfWeek: 24 + 18, tally: { attempts: 0, reached: 0 }, drawn: 0.7 }
    assert.equal(learnedReason(choice, 3, 'America/New_York').source, 'attempt 3 at 18:30 local (Tue): no attempts yet in that hour of the week: explored')
  })
})

test("a day's wait costs: of one hour on three days, equally known, the first wins most often", () => {
  const zone = 'Europe/Berlin'
  const even = Array.from({ length: HOURS_OF_WEEK }, () => ({ attempts: 200, reached: 60 }))
  // 18:00 on Monday, Tuesday and Wednesday.
  const days = [at('2026-06-01T16:00:00Z'), at('2026-06-02T16:00:00Z'), at('2026-06-03T16:00:00Z')]
  const wins = [0, 0, 0]
  for (let i = 0; i < 300; i++) {
    const choice = chooseLearnedHour({ candidates: days, zone, campaign: even, organization: even, triedHoursOfDay: new Set(), random: seededRandom(`w${i}`) })!
    wins[days.indexOf(choice.at)]!++
  }
  assert.ok(wins[0]! > 200 && wins[0]! > wins[1]! && wins[1]! > wins[2]!, `wins by day: ${wins.join(', ')}`)
  // A much better hour a day later still wins.
  const better = even.map((tally, hour) => (hour === 24 + 18 ? { attempts: 200, reached: 120 } : tally))
  const later = chooseLearnedHour({ candidates: days, zone, campaign: better, organization: better, triedHoursOfDay: new Set(), random: seededRandom('w') })!
  assert.equal(later.at, days[1])
})
