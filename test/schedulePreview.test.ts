/** POST /admin/v1/schedule-preview: what a schedule means for one contact, before it is saved. */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { bearer, json, OPERATOR_TOKEN, startService, type TestService } from './support/service.ts'

let service: TestService
before(async () => {
  service = await startService({ now: () => Date.parse('2026-06-01T12:00:00Z') })
})
after(() => service.close())

const preview = (body: object, token = OPERATOR_TOKEN) =>
  service.app.inject({ method: 'POST', url: '/admin/v1/schedule-preview', headers: bearer(token), payload: body })

const WEEKDAYS_9_TO_5 = { timezone: 'contact', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri'], start: '09:00', end: '17:00' }] }

describe('schedule preview', () => {
  test("a Spanish mobile is read in both of Spain's zones: the hours open in both, from now", async () => {
    const response = await preview({ schedule: WEEKDAYS_9_TO_5, phone: '+34 612 34 56 78', count: 2 })
    assert.equal(response.statusCode, 200, response.body)
    assert.deepEqual(json(response).data, {
      zones: ['Atlantic/Canary', 'Europe/Madrid'],
      zone_source: 'country',
      openings: [
        // 2026-06-01 is a Monday: 09:00 WEST (08:00Z) to 17:00 CEST (15:00Z).
        { opens_at: '2026-06-01T12:00:00.000Z', closes_at: '2026-06-01T15:00:00.000Z' },
        { opens_at: '2026-06-02T08:00:00.000Z', closes_at: '2026-06-02T15:00:00.000Z' },
      ],
    })
  })

  test('a zone sent, a campaign-wide zone, and a start of the reader’s choosing', async () => {
    const sent = json(await preview({ schedule: WEEKDAYS_9_TO_5, timezone: 'America/New_York', from: '2026-06-05T17:30:00-04:00', count: 1 })).data
    assert.deepEqual(sent, { zones: ['America/New_York'], zone_source: 'sent', openings: [{ opens_at: '2026-06-08T13:00:00.000Z', closes_at: '2026-06-08T21:00:00.000Z' }] })
    const own = json(await preview({ schedule: { ...WEEKDAYS_9_TO_5, timezone: 'Asia/Tokyo' }, phone: '+44 20 7946 0958', count: 1 })).data
    assert.deepEqual(own.zones, ['Asia/Tokyo'])
    assert.equal(own.zone_source, 'schedule')
    assert.equal(own.openings[0].opens_at, '2026-06-02T00:00:00.000Z')
  })

  test('every problem of the schedule and the contact at once, where each is; the operator only', async () => {
    const refused = await preview({ schedule: { timezone: 'Mars/Olympus', windows: [{ days: ['mon'], start: '18:00', end: '09:00' }] }, phone: '12345', count: 99 })
    assert.equal(refused.statusCode, 422)
    assert.deepEqual(
      json(refused).detail.map((entry: { loc: unknown[] }) => entry.loc.join('.')),
      ['body.schedule.timezone', 'body.schedule.windows.0.end', 'body.phone', 'body.count'],
    )
    const nothingTells = await preview({ schedule: WEEKDAYS_9_TO_5 })
    assert.equal(nothingTells.statusCode, 422)
    assert.match(json(nothingTells).detail[0].msg, /send the contact's phone or timezone/)
    const noCountry = await preview({ schedule: WEEKDAYS_9_TO_5, phone: '+800 1234 5678' })
    assert.equal(noCountry.statusCode, 422)
    assert.match(json(noCountry).detail[0].msg, /fallback_timezone/)
    const org = json(await service.app.inject({ method: 'POST', url: '/admin/v1/organizations', headers: bearer(OPERATOR_TOKEN), payload: { name: 'A' } })).data
    const key = json(
      await service.app.inject({ method: 'POST', url: `/admin/v1/organizations/${org.id}/api-keys`, headers: bearer(OPERATOR_TOKEN), payload: { name: 'k' } }),
    ).data.key
    assert.equal((await preview({ schedule: WEEKDAYS_9_TO_5, phone: '+34 612 34 56 78' }, key)).statusCode, 403)
  })
})
