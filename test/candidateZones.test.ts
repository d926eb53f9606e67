/**
 * Every valid number is accepted, and called only at hours inside the
 * campaign's window in every zone its holder may be in: the contact's
 * candidate zones end to end, with an injected clock, on the database of
 * this run.
 */
import assert from 'node:assert/strict'
import { after, before, beforeEach, describe, test } from 'node:test'
import countriesAndTimezones from 'countries-and-timezones'
import { parsePhoneNumberWithError } from 'libphonenumber-js/max'
import { IANAZone } from 'luxon'
import { createCampaign, json, postTrigger, seedOrganization, startService, taskOf, type TestService } from './support/service.ts'

let service: TestService
let org: Awaited<ReturnType<typeof seedOrganization>>
let now = 0
let routingKeys = 0

before(async () => {
  service = await startService({ now: () => now })
  org = await seedOrganization(service.app)
})
after(() => service.close())
beforeEach(() => {
  now = Date.parse('2026-06-01T10:00:00Z')
})

/** A campaign made as the README's quick start makes one: every setting its default, unless given. */
async function campaign(settings: Record<string, unknown> = {}): Promise<string> {
  const routingKey = `zones-${++routingKeys}`
  await createCampaign(service.app, org.orgId, { routing_key: routingKey, channel: 'voice', ...settings })
  return routingKey
}

const post = (body: Record<string, unknown>) => postTrigger(service.app, org.key, body)

async function trigger(routingKey: string, contact: Record<string, unknown>): Promise<string> {
  const response = await post({ campaign: routingKey, contact })
  assert.equal(response.statusCode, 201, `${JSON.stringify(contact)}: ${response.body}`)
  return json(response).data.task_id
}

const task = (id: string) => taskOf(service.app, org.key, id)

/** Moves the clock and lets the dispatcher do everything that is due. */
async function at(instant: string | number) {
  now = typeof instant === 'string' ? Date.parse(instant) : instant
  await service.app.workers!.dispatcher.runOnce()
}

/** Local wall-clock time "HH:MM" of an instant in a zone. */
function localTime(instant: string, zone: string): string {
  const ms = Date.parse(instant)
  const local = new Date(ms + IANAZone.create(zone).offset(ms) * 60_000)
  return local.toISOString().slice(11, 16)
}

const insideDefaultHours = (instant: string, zone: string) => {
  const time = localTime(instant, zone)
  return time >= '09:00' && time < '20:00'
}

describe('every valid number, posted without contact.timezone to a campaign with the default schedule', () => {
  /**
   * [number, the zones its holder may be in]: for a mobile, every zone of its
   * country as tzdb lists them (undefined here: read from
   * countries-and-timezones, every name); for a number tied to an area, the
   * zones libphonenumber's data gives its prefix.
   */
  const NUMBERS: [string, string[] | undefined][] = [
    ['+1 212 736 3100', ['America/New_York']],
    ['+1 415 555 2671', ['America/Los_Angeles']],
    ['+1 208 244 5000', ['America/Los_Angeles', 'America/Boise']],
    ['+1 605 555 0100', ['America/Denver', 'America/North_Dakota/Center']],
    ['+1 907 201 0123', ['America/Adak', 'America/Anchorage']],
    ['+1 808 956 1234', ['Pacific/Honolulu']],
    ['+1 647 555 0123', ['America/Toronto']],
    ['+1 306 555 0100', ['America/Regina']],
    ['+1 403 555 0100', ['America/Edmonton']],
    ['+1 506 234 5678', ['America/Halifax']],
    ['+1 709 555 0100', ['America/Puerto_Rico', 'America/St_Johns']],
    ['+52 200 123 4909', ['America/Tijuana', 'America/Mexico_City']],
    ['+52 664 123 4567', ['America/Tijuana']],
    ['+52 998 123 4567', ['America/Cancun']],
    ['+55 11 96123 4567', ['America/Sao_Paulo']],
    ['+55 68 91234 5678', ['America/Rio_Branco']],
    ['+54 9 11 2345 6789', undefined],
    ['+56 9 6123 4567', undefined],
    ['+593 99 123 4567', undefined],
    ['+7 912 345 67 89', undefined],
    ['+7 495 123 45 67', ['Europe/Moscow']],
    ['+7 771 000 9998', undefined],
    ['+62 812 345 678', undefined],
    ['+61 412 345 976', undefined],
    ['+61 8 9123 4567', ['Australia/Perth', 'Australia/Adelaide']],
    ['+64 21 123 4567', undefined],
    ['+34 612 34 58 11', undefined],
    ['+34 922 12 34 56', ['Atlantic/Canary']],
    ['+351 912 345 678', undefined],
    ['+243 81 234 5678', undefined],
    ['+976 8812 3456', undefined],
    ['+686 72001234', undefined],
    ['+691 350 1234', undefined],
    ['+86 131 2345 6789', undefined],
    ['+380 50 123 4567', undefined],
    ['+299 22 12 34', undefined],
    ['+689 87 12 34 56', undefined],
    ['+44 7911 123456', undefined],
    ['+49 1512 3456789', undefined],
    ['+33 6 12 34 56 78', undefined],
    ['+91 81234 56789', undefined],
    ['+977 984 1234567', undefined],
    ['+81 90 1234 5678', undefined],
    ['+27 71 123 4567', undefined],
    ['+234 802 123 4567', undefined],
    ['+63 905 123 4567', undefined],
  ]

  /** Every zone tzdb gives the number's country, old names included. */
  function everyZoneOfCountry(written: string): string[] {
    const country = parsePhoneNumberWithError(written).country!
    return countriesAndTimezones.getCountry(country, { deprecated: true })!.timezones.filter((zone) => IANAZone.isValidZone(zone))
  }

  test('gets 201, and a first attempt inside 09:00–20:00 in every zone the number may be in', async () => {
    const countries = new Set(NUMBERS.map(([written]) => parsePhoneNumberWithError(written).country))
    assert.ok(NUMBERS.length >= 40 && countries.size >= 25, `${NUMBERS.length} numbers from ${countries.size} countries`)
    const routingKey = await campaign()
    // 02:00 UTC: night in Europe and Africa, evening in the Americas, morning in Asia and the Pacific.
    now = Date.parse('2026-06-01T02:00:00Z')
    const tasks = new Map<string, string>()
    for (const [written] of NUMBERS) tasks.set(written, await trigger(routingKey, { phone: written }))
    await at(now)
    // Each waiting task is started at its next attempt time: move the clock to the earliest, until every one has started.
    for (;;) {
      const waiting = (await Promise.all([...tasks.values()].map(task))).filter((found) => found.interactions.length === 0)
      if (waiting.length === 0) break
      const next = Math.min(...waiting.map((found) => Date.parse(found.next_attempt_at)))
      assert.ok(next > now && next < Date.parse('2026-06-03T00:00:00Z'), `${waiting[0].contact.phone} waits until ${waiting[0].next_attempt_at}`)
      await at(next)
    }
    for (const [written, areaZones] of NUMBERS) {
      const found = await task(tasks.get(written)!)
      const startedAt = found.interactions[0].started_at
      const mayBeIn = areaZones ?? everyZoneOfCountry(written)
      for (const zone of mayBeIn) {
        assert.ok(insideDefaultHours(startedAt, zone), `${written} called at ${startedAt}, ${localTime(startedAt, zone)} in ${zone}`)
      }
      for (const zone of found.candidate_timezones) assert.ok(insideDefaultHours(startedAt, zone), `${written} in ${zone}`)
      assert.equal(found.timezone_source, areaZones === undefined ? 'country' : 'phone', written)
      if (areaZones !== undefined) assert.deepEqual([...found.candidate_timezones].sort(), [...areaZones].sort(), written)
    }
  })
})

describe('scheduling over several zones', () => {
  test('a Spanish mobile (Madrid and the Canaries) is called from 10:00 to 19:59 Madrid time, across the end of summer time', async () => {
    const routingKey = await campaign()
    // Saturday 24 October 2026, 20:30 in Madrid (CEST), 19:30 in the Canaries: too late in Madrid.
    // Clocks go back in both at 01:00Z on Sunday the 25th.
    now = Date.parse('2026-10-24T18:30:00Z')
    const id = await trigger(routingKey, { phone: '+34 612 34 58 11' })
    await at(now)
    const waiting = await task(id)
    assert.deepEqual(waiting.candidate_timezones, ['Atlantic/Canary', 'Europe/Madrid'])
    assert.equal(waiting.timezone_source, 'country')
    assert.equal(waiting.timezone, null)
    // 09:00 in the Canaries (WET) would be 10:00 in Madrid (CET): the first instant open in both.
    assert.equal(waiting.next_attempt_at, '2026-10-25T09:00:00.000Z')
    await at('2026-10-25T08:59:59.999Z')
    assert.equal((await task(id)).interactions.length, 0)
    await at('2026-10-25T09:00:00.000Z')
    assert.equal(localTime((await task(id)).interactions[0].started_at, 'Europe/Madrid'), '10:00')
  })

  test('a Spanish mobile triggered at 19:59 Madrid time is called at once; at 20:00, the next morning', async () => {
    const routingKey = await campaign()
    now = Date.parse('2026-06-01T17:59:00Z') // 19:59 CEST
    const early = await trigger(routingKey, { phone: '+34 612 34 58 12' })
    await at(now)
    assert.equal((await task(early)).interactions.length, 1)
    now = Date.parse('2026-06-01T18:00:00Z') // 20:00 CEST
    const late = await trigger(routingKey, { phone: '+34 612 34 58 13' })
    await at(now)
    assert.equal((await task(late)).next_attempt_at, '2026-06-02T08:00:00.000Z') // 10:00 CEST
  })

  test('a retry waits for an hour open in every zone: after its delay, the next such opening', async () => {
    const routingKey = await campaign({
      provider_config: { outcomes: ['no_answer', 'completed'], duration_ms: 0 },
      attempts: { retry_delays_s: { no_answer: 36_000 } },
    })
    now = Date.parse('2026-10-24T08:00:00Z') // 10:00 CEST, 09:00 in the Canaries
    const id = await trigger(routingKey, { phone: '+34 612 34 58 14' })
    await at(now)
    await at(now + 1)
    const retrying = await task(id)
    assert.equal(retrying.interactions[0].outcome, 'no_answer')
    // Ten hours later is 20:00 in Madrid: closed there. After the clocks go back, 10:00 CET is 09:00Z.
    assert.equal(retrying.next_attempt_at, '2026-10-25T09:00:00.000Z')
  })

  test('a Russian mobile with the default hours gets its one common hour, 09:00 in Kaliningrad to 20:00 in Anadyr', async () => {
    const routingKey = await campaign()
    const id = await trigger(routingKey, { phone: '+7 912 345 67 89' })
    await at(now)
    const waiting = await task(id)
    assert.equal(waiting.candidate_timezones.length, 11)
    assert.equal(waiting.candidate_timezones[0], 'Europe/Kaliningrad')
    assert.equal(waiting.candidate_timezones.at(-1), 'Asia/Anadyr')
    assert.equal(waiting.next_attempt_at, '2026-06-02T07:00:00.000Z')
    await at('2026-06-02T07:00:00.000Z')
    const startedAt = (await task(id)).interactions[0].started_at
    assert.equal(localTime(startedAt, 'Europe/Kaliningrad'), '09:00')
    assert.equal(localTime(startedAt, 'Asia/Kamchatka'), '19:00')
    // At 08:00Z it is 20:00 in Anadyr: closed until the next day's hour.
    now = Date.parse('2026-06-02T08:00:00Z')
    const late = await trigger(routingKey, { phone: '+7 912 345 67 90' })
    await at(now)
    assert.equal((await task(late)).next_attempt_at, '2026-06-03T07:00:00.000Z')
  })

  test('a US number whose area spans two zones: from 09:00 in the western one to 20:00 in the eastern one, across the end of DST', async () => {
    const routingKey = await campaign()
    // Saturday 31 October 2026, 08:00 PDT (09:00 MDT): not yet 09:00 in Los Angeles.
    now = Date.parse('2026-10-31T15:00:00Z')
    const morning = await trigger(routingKey, { phone: '+1 208 244 5000' })
    await at(now)
    const waiting = await task(morning)
    assert.deepEqual(waiting.candidate_timezones, ['America/Los_Angeles', 'America/Boise'])
    assert.equal(waiting.timezone_source, 'phone')
    assert.equal(waiting.next_attempt_at, '2026-10-31T16:00:00.000Z') // 09:00 PDT
    // 20:00 MDT (19:00 PDT) closes the window; the clocks go back overnight, so the next one opens at 09:00 PST, 17:00Z.
    now = Date.parse('2026-11-01T02:00:00Z')
    const evening = await trigger(routingKey, { phone: '+1 208 244 5001' })
    await at(now)
    assert.equal((await task(evening)).next_attempt_at, '2026-11-01T17:00:00.000Z')
    now = Date.parse('2026-11-01T01:59:00Z') // 19:59 MDT
    const lastMinute = await trigger(routingKey, { phone: '+1 208 244 5002' })
    await at(now)
    assert.equal((await task(lastMinute)).interactions.length, 1)
  })

  test('a task that cannot start in every zone before it expires completes as expired then', async () => {
    const routingKey = await campaign({ attempts: { expire_after_s: 3600 } })
    now = Date.parse('2026-06-01T18:30:00Z') // 20:30 in Madrid, 19:30 in the Canaries
    const id = await trigger(routingKey, { phone: '+34 612 34 58 15' })
    await at(now)
    const waiting = await task(id)
    assert.equal(waiting.next_attempt_at, waiting.expires_at)
    await at(waiting.expires_at)
    const expired = await task(id)
    assert.equal(expired.status, 'completed')
    assert.equal(expired.outcome, 'expired')
    assert.equal(expired.interactions.length, 0)
  })

  test('max_concurrent holds across zones: a task at the limit waits, then starts in an hour open everywhere', async () => {
    const routingKey = await campaign({ max_concurrent: 1, provider_config: { outcomes: ['completed'], duration_ms: 60_000 } })
    now = Date.parse('2026-06-02T07:00:00Z') // the Russian hour
    const first = await trigger(routingKey, { phone: '+7 912 345 67 91' })
    const second = await trigger(routingKey, { phone: '+7 912 345 67 92' })
    await at(now)
    const [a, b] = [await task(first), await task(second)]
    assert.equal(a.interactions.length + b.interactions.length, 1)
    await at(now + 60_000)
    await at(now + 61_000)
    assert.equal((await task(first)).interactions.length + (await task(second)).interactions.length, 2)
  })
})

describe('what decides the candidate zones', () => {
  test('contact.timezone sent: that zone alone', async () => {
    const routingKey = await campaign()
    const found = await task(await trigger(routingKey, { phone: '+34 612 34 58 16', timezone: 'Atlantic/Canary' }))
    assert.deepEqual([found.candidate_timezones, found.timezone_source, found.timezone], [['Atlantic/Canary'], 'sent', 'Atlantic/Canary'])
  })

  test('the zone on file for the person the ids name wins over the number', async () => {
    const routingKey = await campaign()
    const ids = [{ source: 'ats', type: 'candidate', value: `zones-${Math.random()}` }]
    assert.equal((await post({ campaign: routingKey, ids, contact: { phone: '+7 912 345 67 93', timezone: 'Asia/Omsk' } })).statusCode, 201)
    const again = await post({ campaign: routingKey, ids, contact: { phone: '+7 912 345 67 93' } })
    assert.equal(again.statusCode, 201, again.body)
    const found = await task(json(again).data.task_id)
    assert.deepEqual([found.candidate_timezones, found.timezone_source], [['Asia/Omsk'], 'on_file'])
  })

  test('a number of no country takes the campaign fallback, and without one is refused at contact.phone', async () => {
    const withFallback = await campaign({ schedule: { timezone: 'contact', fallback_timezone: 'Europe/Paris', windows: [{ days: ['mon'], start: '09:00', end: '20:00' }] } })
    const found = await task(await trigger(withFallback, { phone: '+800 1234 5678' }))
    assert.deepEqual([found.candidate_timezones, found.timezone_source], [['Europe/Paris'], 'fallback'])
    // A mobile of a country never takes the fallback: its country tells its zones.
    const spanish = await task(await trigger(withFallback, { phone: '+34 612 34 58 17' }))
    assert.equal(spanish.timezone_source, 'country')

    const response = await post({ campaign: await campaign(), contact: { phone: '+800 1234 5678' } })
    assert.equal(response.statusCode, 422)
    const [entry] = json(response).detail
    assert.deepEqual(entry.loc, ['body', 'contact', 'phone'])
    assert.match(entry.msg, /^Value error, the contact's time zone cannot be told from this phone number \(a number of no country, such as \+800, is placed in the campaign's fallback_timezone, and this campaign has none\); send contact.timezone/)
  })

  test('zones whose windows are never open at once within 14 days are refused, saying which, and contact.timezone fixes it', async () => {
    // 09:00–17:00 in Kaliningrad (07–15Z) and in Anadyr (21–05Z) never meet.
    const routingKey = await campaign({ schedule: { timezone: 'contact', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri'], start: '09:00', end: '17:00' }] } })
    const response = await post({ campaign: routingKey, contact: { phone: '+7 912 345 67 94' } })
    assert.equal(response.statusCode, 422, response.body)
    const [entry] = json(response).detail
    assert.deepEqual(entry.loc, ['body', 'contact', 'phone'])
    assert.equal(entry.input, '+79123456794')
    assert.match(entry.msg, /may be in any of 11 time zones \(Europe\/Kaliningrad, .*Asia\/Anadyr\).*within the next 14 days; send contact\.timezone, the IANA zone the contact is in$/)
    assert.equal((await post({ campaign: routingKey, contact: { phone: '+7 912 345 67 94', timezone: 'Asia/Omsk' } })).statusCode, 201)
  })

  test('a campaign in a zone of its own accepts every number, and shows the contact’s zones all the same', async () => {
    const routingKey = await campaign({ schedule: { timezone: 'Europe/Berlin', windows: [{ days: ['mon'], start: '09:00', end: '10:00' }] } })
    const russian = await task(await trigger(routingKey, { phone: '+7 912 345 67 95' }))
    assert.equal(russian.candidate_timezones.length, 11)
    const freephone = await task(await trigger(routingKey, { phone: '+800 1234 5678' }))
    assert.deepEqual([freephone.candidate_timezones, freephone.timezone_source, freephone.timezone], [[], null, null])
  })
})
