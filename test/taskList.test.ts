/** GET /api/v2/tasks: an organization's tasks newest first, paged, filtered, and found by a phone number, with an injected clock. */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { acceptedTrigger, bearer, createCampaign, json, OPERATOR_TOKEN, seedOrganization, startService, type TestService } from './support/service.ts'

const ALWAYS_OPEN = { timezone: 'contact', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '00:00', end: '24:00' }] }
const MINUTE = 60_000
const LONDON = '+442079460958'
const MADRID = '+34912345678'

let service: TestService
let org: Awaited<ReturnType<typeof seedOrganization>>
let now = Date.parse('2026-06-01T10:00:00Z')
/** The tasks made by `before`, oldest first, each with what set it apart. */
const made: { id: string; campaign: string; phone: string; testMode: boolean; createdAt: number }[] = []

async function list(query: string, key = org.key): Promise<string[]> {
  const response = await service.app.inject({ method: 'GET', url: `/api/v2/tasks${query}`, headers: bearer(key) })
  assert.equal(response.statusCode, 200, response.body)
  return json(response).data.map((task: any) => task.id)
}

async function refused(query: string): Promise<{ loc: unknown[]; msg: string }[]> {
  const response = await service.app.inject({ method: 'GET', url: `/api/v2/tasks${query}`, headers: bearer(org.key) })
  assert.equal(response.statusCode, 422, response.body)
  return json(response).detail.map(({ loc, msg }: any) => ({ loc, msg }))
}

const newestFirst = (wanted: (task: (typeof made)[number]) => boolean) =>
  made
    .filter(wanted)
    .map((task) => task.id)
    .reverse()

before(async () => {
  service = await startService({ now: () => now })
  org = await seedOrganization(service.app, { routingKey: 'screening', schedule: ALWAYS_OPEN })
  await createCampaign(service.app, org.orgId, { routing_key: 'reminders', channel: 'voice', schedule: ALWAYS_OPEN })
  // Six tasks a minute apart: two campaigns, two numbers, one test.
  const plan = [
    { campaign: 'screening', phone: LONDON, testMode: false },
    { campaign: 'reminders', phone: MADRID, testMode: false },
    { campaign: 'screening', phone: MADRID, testMode: false },
    { campaign: 'screening', phone: LONDON, testMode: true },
    { campaign: 'reminders', phone: LONDON, testMode: false },
    { campaign: 'screening', phone: MADRID, testMode: false },
  ]
  for (const [n, task] of plan.entries()) {
    now += MINUTE
    const accepted = await acceptedTrigger(service.app, org.key, {
      campaign: task.campaign,
      ids: [{ source: 'ats', type: 'candidate', value: `C-${n}` }],
      contact: { first_name: `Person ${n}`, phone: task.phone },
      ...(task.testMode ? { test_mode: true } : {}),
    })
    made.push({ id: accepted.task_id, ...task, createdAt: now })
  }
})
after(() => service.close())

describe('listing tasks', () => {
  test('newest first, a page at a time: the next page starts after the last task of this one, and a short page is the last', async () => {
    assert.deepEqual(await list(''), newestFirst(() => true))
    const pages: string[][] = []
    let query = '?limit=4'
    for (;;) {
      const page = await list(query)
      pages.push(page)
      if (page.length < 4) break
      query = `?limit=4&before=${page.at(-1)}`
    }
    assert.deepEqual(pages, [newestFirst(() => true).slice(0, 4), newestFirst(() => true).slice(4)])
  })

  test('tasks accepted at the same instant (one batch) are paged in id order, none skipped or repeated', async () => {
    const other = await seedOrganization(service.app, { schedule: ALWAYS_OPEN })
    const response = await service.app.inject({
      method: 'POST',
      url: '/api/v2/triggers/batch',
      headers: { ...bearer(other.key), 'content-type': 'application/json' },
      payload: JSON.stringify({ triggers: Array.from({ length: 5 }, (_, n) => ({ campaign: 'screening', contact: { phone: LONDON, first_name: `B${n}` } })) }),
    })
    assert.equal(response.statusCode, 200, response.body)
    const taskIds: string[] = json(response).data.map((result: any) => result.data.task_id)
    const pages: string[][] = []
    for (let query = '?limit=2'; ; ) {
      const page = await list(query, other.key)
      pages.push(page)
      if (page.length < 2) break
      query = `?limit=2&before=${page.at(-1)}`
    }
    assert.deepEqual(pages.flat(), [...taskIds].sort().reverse())
    assert.deepEqual(pages.map((page) => page.length), [2, 2, 1])
  })

  test('every filter given holds: status, outcome, campaign, test mode and a creation time range', async () => {
    const cancelled = made[2]!.id
    const cancel = await service.app.inject({ method: 'POST', url: `/api/v2/tasks/${cancelled}/cancel`, headers: bearer(org.key) })
    assert.equal(cancel.statusCode, 200, cancel.body)
    assert.deepEqual(await list('?status=completed'), [cancelled])
    assert.deepEqual(await list('?outcome=cancelled'), [cancelled])
    assert.deepEqual(await list('?outcome=reached'), [])
    assert.deepEqual(await list('?status=pending&campaign=reminders'), newestFirst((task) => task.campaign === 'reminders'))
    assert.deepEqual(await list('?test_mode=true'), newestFirst((task) => task.testMode))
    assert.deepEqual(await list('?test_mode=false&campaign=screening&status=pending'), newestFirst((task) => !task.testMode && task.campaign === 'screening' && task.id !== cancelled))
    const from = new Date(made[1]!.createdAt).toISOString()
    const until = new Date(made[4]!.createdAt).toISOString()
    const between = newestFirst((task) => task.createdAt >= made[1]!.createdAt && task.createdAt < made[4]!.createdAt)
    assert.deepEqual(await list(`?created_from=${from}&created_before=${until}`), between)
    // An offset's + left unencoded arrives as a space, and is read as the + it was.
    const inMadrid = (at: number) => new Date(at + 2 * 60 * MINUTE).toISOString().replace('.000Z', '+02:00')
    assert.deepEqual(await list(`?created_from=${inMadrid(made[1]!.createdAt)}&created_before=${encodeURIComponent(inMadrid(made[4]!.createdAt))}`), between)
    assert.deepEqual(await list(`?created_from=${from}&created_before=${until}&limit=2&before=${between[1]}`), between.slice(2))
  })

  test('by the number a task reaches (the tester\'s, in test mode), its + encoded or not; by one of the client\'s ids', async () => {
    assert.deepEqual(await list(`?phone=${encodeURIComponent(LONDON)}`), newestFirst((task) => task.phone === LONDON))
    assert.deepEqual(await list(`?phone=+34 912 34 56 78`), newestFirst((task) => task.phone === MADRID))
    assert.deepEqual(await list(`?phone=%2B34912345678&campaign=reminders`), newestFirst((task) => task.phone === MADRID && task.campaign === 'reminders'))
    assert.deepEqual(await list('?phone=%2B14155550100'), [])
    assert.deepEqual(await list('?source=ATS&type=Candidate&value=C-3'), [made[3]!.id])
    assert.deepEqual(await list('?source=ats&type=candidate&value=C-3&test_mode=false'), [])
  })

  test("another organization's tasks are never listed, nor usable as a page's start", async () => {
    const other = await seedOrganization(service.app)
    assert.deepEqual(await list('', other.key), [])
    assert.deepEqual(await list(`?phone=${encodeURIComponent(LONDON)}`, other.key), [])
    const response = await service.app.inject({ method: 'GET', url: `/api/v2/tasks?before=${made[0]!.id}`, headers: bearer(other.key) })
    assert.equal(response.statusCode, 422)
    assert.deepEqual(json(response).detail[0].loc, ['query', 'before'])
  })

  test('a query it cannot read is refused with every problem at once', async () => {
    assert.deepEqual(await refused('?source=ats&phone=020%207946%200958&status=done&created_from=yesterday&limit=500'), [
      {
        loc: ['query', 'phone'],
        msg: 'Value error, phone must include a country calling code (for example +44 20 7946 0958) and be a valid number (in a query string, write its + as %2B)',
      },
      { loc: ['query', 'status'], msg: "Input should be 'pending', 'in_progress' or 'completed'" },
      {
        loc: ['query', 'created_from'],
        msg: 'Value error, created_from must be an RFC 3339 date-time with an offset, such as 2026-12-01T09:00:00+01:00 or 2026-12-01T08:00:00Z',
      },
      { loc: ['query', 'limit'], msg: 'Input should be less than or equal to 100' },
      // As pydantic's model validators, a relation between fields is checked after each field.
      { loc: ['query', 'source'], msg: 'Value error, source, type and value name one of your ids together: give all three, or none' },
    ])
    assert.deepEqual(await refused('?before=tsk_nope'), [{ loc: ['query', 'before'], msg: 'Value error, before must be the id of one of your tasks, as listed on the previous page' }])
  })
})

describe('every combination of filters', () => {
  test('lists what the filters select of every task, in every state, whichever index it is read from, a page at a time', async () => {
    const org = await seedOrganization(service.app, { routingKey: 'calls', schedule: ALWAYS_OPEN })
    // Calls that complete at once; calls that go on (their tasks stay in progress); tasks not due for a week (pending).
    await service.app.inject({ method: 'PATCH', url: `/admin/v1/organizations/${org.orgId}/campaigns/${org.campaign.id}`, headers: bearer(OPERATOR_TOKEN), payload: { provider_config: { duration_ms: 0 } } })
    await createCampaign(service.app, org.orgId, { routing_key: 'long', channel: 'voice', schedule: ALWAYS_OPEN, provider_config: { duration_ms: 3_600_000 } })
    await createCampaign(service.app, org.orgId, { routing_key: 'later', channel: 'voice', schedule: ALWAYS_OPEN })
    let n = 0
    const trigger = async (campaign: string, testMode: boolean) => {
      now += MINUTE
      const notBefore = campaign === 'later' ? { not_before: new Date(now + 7 * 24 * 60 * MINUTE).toISOString() } : {}
      return acceptedTrigger(service.app, org.key, { campaign, contact: { phone: LONDON, first_name: `Combo ${n++}` }, test_mode: testMode, ...notBefore })
    }
    const cancelledIds: string[] = []
    for (const campaign of ['calls', 'long', 'later']) {
      for (const testMode of [false, true, false]) await trigger(campaign, testMode)
      cancelledIds.push((await trigger(campaign, false)).task_id)
    }
    for (const id of cancelledIds) assert.equal((await service.app.inject({ method: 'POST', url: `/api/v2/tasks/${id}/cancel`, headers: bearer(org.key) })).statusCode, 200)
    await service.app.workers!.dispatcher.runOnce()
    now += 1_000
    await service.app.workers!.dispatcher.runOnce()

    const all: { id: string; status: string; outcome: string | null; campaign: string; test_mode: boolean }[] = json(
      await service.app.inject({ method: 'GET', url: '/api/v2/tasks?limit=100', headers: bearer(org.key) }),
    ).data
    assert.equal(all.length, 12)
    assert.deepEqual(new Set(all.map((task) => `${task.status}/${task.outcome}`)), new Set(['completed/reached', 'completed/cancelled', 'in_progress/null', 'pending/null']))
    const cases = []
    for (const status of [undefined, 'pending', 'in_progress', 'completed'])
      for (const outcome of [undefined, 'reached', 'cancelled'])
        for (const campaign of [undefined, 'calls', 'long', 'later'])
          for (const testMode of [undefined, true, false]) cases.push({ status, outcome, campaign, test_mode: testMode })
    for (const wanted of cases) {
      const query = Object.entries(wanted)
        .filter(([, value]) => value !== undefined)
        .map(([name, value]) => `${name}=${value}`)
        .join('&')
      const expected = all
        .filter((task) => Object.entries(wanted).every(([name, value]) => value === undefined || (task as Record<string, unknown>)[name] === value))
        .map((task) => task.id)
      assert.deepEqual(await list(`?${query}`, org.key), expected, query)
      // Two at a time, each page starting after the last.
      const paged: string[] = []
      for (let page = await list(`?${query}&limit=2`, org.key); ; page = await list(`?${query}&limit=2&before=${paged.at(-1)}`, org.key)) {
        paged.push(...page)
        if (page.length < 2) break
      }
      assert.deepEqual(paged, expected, `${query}, paged`)
    }
  })
})
