/** POST /api/v2/tasks/cancel: stopping outreach to a person by the client's own ids, with an injected clock. */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { bearer, json, OPERATOR_TOKEN, seedOrganization, startService, taskOf, type TestService } from './support/service.ts'
import { eventsOfTask } from './support/events.ts'

const ALWAYS_OPEN = { timezone: 'contact', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '00:00', end: '24:00' }] }
const HOUR = 3_600_000

let service: TestService
let acme: Awaited<ReturnType<typeof seedOrganization>>
let globex: Awaited<ReturnType<typeof seedOrganization>>
let now = Date.parse('2026-06-01T10:00:00Z')
let routingKeys = 0

before(async () => {
  service = await startService({ now: () => now })
  acme = await seedOrganization(service.app)
  globex = await seedOrganization(service.app)
})
after(() => service.close())

async function campaign(orgId: string, routingKey = `cancel-${++routingKeys}`): Promise<string> {
  const response = await service.app.inject({
    method: 'POST',
    url: `/admin/v1/organizations/${orgId}/campaigns`,
    headers: bearer(OPERATOR_TOKEN),
    payload: {
      routing_key: routingKey,
      channel: 'voice',
      schedule: ALWAYS_OPEN,
      provider_config: { outcomes: ['no_answer'], duration_ms: 60_000 },
      attempts: { max: 3, retry_delays_s: { no_answer: 7200 } },
    },
  })
  assert.equal(response.statusCode, 201, response.body)
  return routingKey
}

async function trigger(key: string, routingKey: string, value: string): Promise<{ id: string; task_id: string }> {
  const response = await service.app.inject({
    method: 'POST',
    url: '/api/v2/triggers',
    headers: { ...bearer(key), 'content-type': 'application/json' },
    payload: { campaign: routingKey, ids: [{ source: 'ATS', type: 'Candidate', value }], contact: { phone: '+442079460958' } },
  })
  assert.equal(response.statusCode, 201, response.body)
  return json(response).data
}

function cancel(key: string, body: unknown) {
  return service.app.inject({ method: 'POST', url: '/api/v2/tasks/cancel', headers: { ...bearer(key), 'content-type': 'application/json' }, payload: body as object })
}

async function at(instant: number) {
  now = instant
  await service.app.workers!.dispatcher.runOnce()
}

async function eventsOf(taskId: string): Promise<any[]> {
  return eventsOfTask(service.db, taskId)
}

describe('cancel by the client’s ids', () => {
  test("stops a task between retries and one whose call is running; another organization's task with the same id is untouched", async () => {
    const acmeCampaign = await campaign(acme.orgId)
    const globexCampaign = await campaign(globex.orgId)
    const start = now
    const retrying = await trigger(acme.key, acmeCampaign, 'withdrawn-1')
    await at(start)
    await at(start + 60_000)
    assert.equal((await taskOf(service.app, acme.key, retrying.task_id)).next_attempt_at, new Date(start + 60_000 + 2 * HOUR).toISOString(), 'waits for its retry')
    const calling = await trigger(acme.key, acmeCampaign, 'withdrawn-1')
    const theirs = await trigger(globex.key, globexCampaign, 'withdrawn-1')
    const someoneElse = await trigger(acme.key, acmeCampaign, 'still-keen')
    await at(start + 120_000)
    assert.equal((await taskOf(service.app, acme.key, calling.task_id)).status, 'in_progress')

    const response = await cancel(acme.key, { ids: [{ source: ' ats ', type: 'CANDIDATE', value: 'withdrawn-1' }] })
    assert.equal(response.statusCode, 200, response.body)
    const cancelled = json(response).data
    assert.deepEqual(cancelled.map((task: any) => task.id).sort(), [retrying.task_id, calling.task_id].sort())
    for (const task of cancelled) {
      assert.equal(task.outcome, 'cancelled')
      assert.equal(task.campaign, acmeCampaign)
      assert.deepEqual(task.ids, [{ source: 'ats', type: 'candidate', value: 'withdrawn-1' }])
    }

    // The running call ends and is reported; nothing starts again, whenever the clock says.
    await at(start + 180_000)
    await at(start + 10 * HOUR)
    const afterCall = await taskOf(service.app, acme.key, calling.task_id)
    assert.equal(afterCall.outcome, 'cancelled')
    assert.deepEqual(
      afterCall.interactions.map((interaction: any) => interaction.outcome),
      ['no_answer'],
    )
    assert.equal((await taskOf(service.app, acme.key, retrying.task_id)).interactions.length, 1)
    const events = await eventsOf(retrying.task_id)
    const completed = events.filter((event) => event.type === 'task.completed')
    assert.equal(completed.length, 1)
    assert.equal(completed[0].data.outcome, 'cancelled')
    assert.deepEqual(completed[0].data.ids, [{ source: 'ats', type: 'candidate', value: 'withdrawn-1' }])

    // Theirs and the other candidate's go on.
    const other = await taskOf(service.app, globex.key, theirs.task_id)
    assert.notEqual(other.outcome, 'cancelled')
    assert.ok(other.interactions.length >= 1)
    assert.notEqual((await taskOf(service.app, acme.key, someoneElse.task_id)).outcome, 'cancelled')

    // Again: nothing is left to cancel.
    assert.deepEqual(json(await cancel(acme.key, { ids: [{ source: 'ats', type: 'candidate', value: 'withdrawn-1' }] })).data, [])
  })

  test("only one campaign's tasks when it is named; an unknown routing key is a 422", async () => {
    const first = await campaign(acme.orgId)
    const second = await campaign(acme.orgId)
    const inFirst = await trigger(acme.key, first, 'two-campaigns')
    const inSecond = await trigger(acme.key, second, 'two-campaigns')
    const response = await cancel(acme.key, { ids: [{ source: 'ats', type: 'candidate', value: 'two-campaigns' }], campaign: second })
    assert.deepEqual(
      json(response).data.map((task: any) => task.id),
      [inSecond.task_id],
    )
    assert.equal((await taskOf(service.app, acme.key, inFirst.task_id)).status, 'pending')
    const unknown = await cancel(acme.key, { ids: [{ source: 'ats', type: 'candidate', value: 'two-campaigns' }], campaign: 'no-such' })
    assert.equal(unknown.statusCode, 422)
    assert.deepEqual(json(unknown).detail[0].loc, ['body', 'campaign'])
  })

  test('several ids at once; a bad body is a 422; a key without triggers:write is 403', async () => {
    const routingKey = await campaign(acme.orgId)
    const a = await trigger(acme.key, routingKey, 'many-a')
    const b = await trigger(acme.key, routingKey, 'many-b')
    const both = await cancel(acme.key, {
      ids: [
        { source: 'ats', type: 'candidate', value: 'many-a' },
        { source: 'ats', type: 'candidate', value: 'many-b' },
      ],
    })
    assert.deepEqual(json(both).data.map((task: any) => task.id).sort(), [a.task_id, b.task_id].sort())
    for (const [body, loc] of [
      [{ ids: [] }, ['body', 'ids']],
      [{}, ['body', 'ids']],
      [{ ids: [{ source: 'ats', type: 'candidate' }] }, ['body', 'ids', 0, 'value']],
    ] as const) {
      const response = await cancel(acme.key, body)
      assert.equal(response.statusCode, 422)
      assert.deepEqual(json(response).detail[0].loc, loc)
    }
    const reader = json(
      await service.app.inject({
        method: 'POST',
        url: `/admin/v1/organizations/${acme.orgId}/api-keys`,
        headers: bearer(OPERATOR_TOKEN),
        payload: { name: 'reader', scopes: ['triggers:read'] },
      }),
    ).data
    assert.equal((await cancel(reader.key, { ids: [{ source: 'ats', type: 'candidate', value: 'x' }] })).statusCode, 403)
  })
})
