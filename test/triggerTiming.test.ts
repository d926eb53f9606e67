/**
 * A trigger's own timing, not_before and expires_at: the rules as a table,
 * then their effect on the task, with an injected clock.
 */
import assert from 'node:assert/strict'
import { after, before, beforeEach, describe, test } from 'node:test'
import { parseInstant, timingProblems } from '../src/domain/triggerTiming.ts'
import { bearer, createCampaign, json, postTrigger, seedOrganization, startService, taskOf, type TestService } from './support/service.ts'
import { eventsOfTask } from './support/events.ts'

describe('parseInstant', () => {
  const cases: [string, string | undefined][] = [
    ['2026-12-01T09:00:00+01:00', '2026-12-01T08:00:00.000Z'],
    ['2026-12-01T08:00:00Z', '2026-12-01T08:00:00.000Z'],
    ['2026-12-01t08:00:00z', '2026-12-01T08:00:00.000Z'],
    ['2026-12-01T08:00:00.123456-05:30', '2026-12-01T13:30:00.123Z'],
    ['2026-12-01T09:00:00', undefined], // no offset: whose 09:00?
    ['2026-12-01 09:00:00Z', undefined],
    ['2026-12-01T09:00Z', undefined], // no seconds
    ['2026-02-30T09:00:00Z', undefined], // no such day
    ['2024-02-29T09:00:00Z', '2024-02-29T09:00:00.000Z'], // a leap year's
    ['2100-02-29T09:00:00Z', undefined], // not a leap year: a century
    ['2000-02-29T23:30:00-01:00', '2000-03-01T00:30:00.000Z'], // a leap century's, its offset carrying it into March
    ['2026-04-31T09:00:00Z', undefined],
    ['2026-13-01T09:00:00Z', undefined],
    ['2026-00-10T09:00:00Z', undefined],
    ['2026-12-00T09:00:00Z', undefined],
    ['0099-06-01T12:00:00.9999Z', '0099-06-01T12:00:00.999Z'], // a two-digit year is no 1999, a fraction cut
    ['2026-12-01T24:00:00Z', undefined],
    ['2026-12-31T23:59:60Z', undefined], // a leap second names no instant we can store
    ['2026-12-01T09:00:00+0100', undefined],
    ['0001-01-01T00:00:00Z', '0001-01-01T00:00:00.000Z'],
    ['0001-01-01T00:30:00+01:00', undefined], // in year 0, which the database cannot read as written
    ['9999-12-31T23:59:59-00:01', undefined], // in year 10000
    ['tomorrow', undefined],
    ['', undefined],
  ]
  for (const [text, expected] of cases) {
    test(`${JSON.stringify(text)} → ${expected ?? 'refused'}`, () => {
      const at = parseInstant(text)
      assert.equal(at === undefined ? undefined : new Date(at).toISOString(), expected)
    })
  }
})

describe('timingProblems', () => {
  const now = Date.parse('2026-06-01T10:00:00Z')
  const DAY = 86_400_000
  const cases: [string, { notBefore?: number; expiresAt?: number }, string[]][] = [
    ['nothing sent', {}, []],
    ['not_before in the past: due at once', { notBefore: now - DAY }, []],
    ['not_before 365 days ahead', { notBefore: now + 365 * DAY }, []],
    ['not_before beyond 365 days', { notBefore: now + 366 * DAY }, ['not_before']],
    ['expires_at ahead', { expiresAt: now + 1 }, []],
    ['expires_at now', { expiresAt: now }, ['expires_at']],
    ['expires_at after not_before', { notBefore: now + DAY, expiresAt: now + 2 * DAY }, []],
    ['expires_at at not_before', { notBefore: now + DAY, expiresAt: now + DAY }, ['expires_at']],
    ['expires_at before not_before', { notBefore: now + 2 * DAY, expiresAt: now + DAY }, ['expires_at']],
    ['both refused', { notBefore: now + 400 * DAY, expiresAt: now - 1 }, ['not_before', 'expires_at']],
  ]
  for (const [name, timing, fields] of cases) {
    test(name, () =>
      assert.deepEqual(
        timingProblems(timing, now).map((problem) => problem.field),
        fields,
      ),
    )
  }
})

const NINE_TO_FIVE = { timezone: 'contact', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '09:00', end: '17:00' }] }

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
  // 10:00 in New York (EDT).
  now = Date.parse('2026-06-01T14:00:00Z')
})

async function campaign(settings: Record<string, unknown>): Promise<string> {
  return (await createCampaign(service.app, org.orgId, { routing_key: `timing-${++routingKeys}`, channel: 'voice', schedule: NINE_TO_FIVE, ...settings })).routing_key
}

function post(routingKey: string, body: Record<string, unknown>) {
  return postTrigger(service.app, org.key, {
    campaign: routingKey,
    contact: { phone: '+1 212 555 0100' },
    ids: [{ source: 'crm', type: 'lead', value: `l-${Math.random()}` }],
    ...body,
  })
}

async function trigger(routingKey: string, body: Record<string, unknown>): Promise<{ id: string; task_id: string }> {
  const response = await post(routingKey, body)
  assert.equal(response.statusCode, 201, response.body)
  return json(response).data
}

const task = (id: string) => taskOf(service.app, org.key, id)

async function at(instant: string | number) {
  now = typeof instant === 'string' ? Date.parse(instant) : instant
  await service.app.workers!.dispatcher.runOnce()
}

describe('not_before', () => {
  test("two days ahead, in the contact's evening: nothing starts before it, and the first attempt is at the next opening after it", async () => {
    const routingKey = await campaign({})
    // 19:00 in New York on 3 June, outside the 09:00–17:00 window.
    const created = await trigger(routingKey, { not_before: '2026-06-03T19:00:00-04:00' })
    const waiting = await task(created.task_id)
    assert.equal(waiting.next_attempt_at, '2026-06-03T23:00:00.000Z')
    await at(now)
    // The window is open on 2 June at 10:00, before not_before: nothing yet.
    await at('2026-06-02T14:00:00Z')
    assert.equal((await task(created.task_id)).interactions.length, 0)
    await at('2026-06-03T23:00:00Z')
    const postponed = await task(created.task_id)
    assert.equal(postponed.interactions.length, 0)
    assert.equal(postponed.next_attempt_at, '2026-06-04T13:00:00.000Z', '09:00 in New York the next morning')
    await at('2026-06-04T12:59:59.999Z')
    assert.equal((await task(created.task_id)).interactions.length, 0)
    await at('2026-06-04T13:00:00Z')
    const started = await task(created.task_id)
    assert.equal(started.interactions.length, 1)
    assert.equal(started.interactions[0].started_at, '2026-06-04T13:00:00.000Z')
  })

  test('in the past: due at once; and the trigger shows both times as sent', async () => {
    const routingKey = await campaign({})
    const created = await trigger(routingKey, { not_before: '2026-05-01T00:00:00Z', expires_at: '2026-06-02T10:00:00+02:00' })
    await at(now)
    assert.equal((await task(created.task_id)).interactions.length, 1)
    const recorded = json(await service.app.inject({ method: 'GET', url: `/api/v2/triggers/${created.id}`, headers: bearer(org.key) })).data
    assert.equal(recorded.not_before, '2026-05-01T00:00:00.000Z')
    assert.equal(recorded.expires_at, '2026-06-02T08:00:00.000Z')
    const plain = await trigger(routingKey, {})
    const none = json(await service.app.inject({ method: 'GET', url: `/api/v2/triggers/${plain.id}`, headers: bearer(org.key) })).data
    assert.equal(none.not_before, null)
    assert.equal(none.expires_at, null)
  })

  test("the campaign's expiry counts from it", async () => {
    const routingKey = await campaign({ attempts: { expire_after_s: 86_400 } })
    const created = await trigger(routingKey, { not_before: '2026-06-10T13:00:00Z' })
    assert.equal((await task(created.task_id)).expires_at, '2026-06-11T13:00:00.000Z')
  })
})

describe('expires_at', () => {
  test('passes before any window opens: the task completes as expired, with its task.completed event', async () => {
    const routingKey = await campaign({})
    // 18:00 in New York: the window opens at 09:00 tomorrow, after expires_at.
    now = Date.parse('2026-06-01T22:00:00Z')
    const created = await trigger(routingKey, { expires_at: '2026-06-02T08:00:00-04:00' })
    const waiting = await task(created.task_id)
    assert.equal(waiting.expires_at, '2026-06-02T12:00:00.000Z')
    await at(now)
    assert.equal((await task(created.task_id)).next_attempt_at, '2026-06-02T12:00:00.000Z', 'waits for its expiry, to expire on time')
    await at('2026-06-02T12:00:00Z')
    const expired = await task(created.task_id)
    assert.equal(expired.status, 'completed')
    assert.equal(expired.outcome, 'expired')
    assert.equal(expired.completed_at, '2026-06-02T12:00:00.000Z')
    assert.equal(expired.interactions.length, 0)
    const events = await eventsOfTask(service.db, created.task_id)
    assert.deepEqual(
      events.map((event) => [event.type, event.data.outcome]),
      [['task.completed', 'expired']],
    )
  })

  test("is capped by the campaign's expiry, whichever is first", async () => {
    const routingKey = await campaign({ attempts: { expire_after_s: 3600 } })
    const created = await trigger(routingKey, { expires_at: '2026-06-30T00:00:00Z' })
    assert.equal((await task(created.task_id)).expires_at, '2026-06-01T15:00:00.000Z')
  })
})

describe('refused times', () => {
  test('an unparsable time, a time without an offset, expires_at not after not_before or in the past: 422 at the field, every problem at once', async () => {
    const routingKey = await campaign({})
    const cases: [Record<string, unknown>, (string | number)[][]][] = [
      [{ not_before: 'next tuesday' }, [['body', 'not_before']]],
      [{ not_before: '2026-06-02T09:00:00' }, [['body', 'not_before']]],
      [{ expires_at: '2026-06-01T13:59:59Z' }, [['body', 'expires_at']]],
      [{ not_before: '2026-06-03T00:00:00Z', expires_at: '2026-06-02T00:00:00Z' }, [['body', 'expires_at']]],
      [{ not_before: '2026-06-03T00:00:00Z', expires_at: '2026-06-03T02:00:00+02:00' }, [['body', 'expires_at']]],
      [{ not_before: '2028-01-01T00:00:00Z' }, [['body', 'not_before']]],
      // Past and allowed as a not_before, but of no year the database can store: refused, not left to fail a group commit.
      [{ not_before: '0001-01-01T00:30:00+01:00' }, [['body', 'not_before']]],
      [{ expires_at: '9999-12-31T23:59:59-23:59' }, [['body', 'expires_at']]],
      [{ not_before: 20260603, expires_at: 'soon', contact: { phone: '12' } }, [['body', 'contact', 'phone'], ['body', 'not_before'], ['body', 'expires_at']]],
    ]
    for (const [body, locs] of cases) {
      const response = await post(routingKey, body)
      assert.equal(response.statusCode, 422, JSON.stringify(body))
      assert.deepEqual(
        json(response).detail.map((entry: any) => entry.loc),
        locs,
        JSON.stringify(body),
      )
    }
  })
})
