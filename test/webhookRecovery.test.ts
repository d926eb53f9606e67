/**
 * Recovery of an endpoint's failed deliveries (POST .../webhook-endpoints/{id}/recover):
 * the rules on the window asked for and the cursor as tables, then outages of
 * a real local receiver on an injected clock: deliveries given up when the
 * endpoint is disabled, and given up after the retry schedule, and waiting
 * for a retry (brought forward); each event sent again once, in the order
 * recorded, with its own id.
 */
import assert from 'node:assert/strict'
import { after, afterEach, before, beforeEach, describe, test } from 'node:test'
import { newId } from '../src/domain/ids.ts'
import {
  MAX_RECOVERED_PER_CALL,
  readRecoveryCursor,
  recoveryCursor,
  recoveryStart,
  recoveryWindowProblems,
} from '../src/domain/webhookRecovery.ts'
import { insertEvents } from '../src/store/events.ts'
import { type Receiver, startReceiver } from './support/receiver.ts'
import { bearer, json, OPERATOR_TOKEN, startService, type TestService } from './support/service.ts'

const MINUTE = 60_000
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR
/** The deliverer's retries after a first attempt fails (workers/deliverer.ts), each waited out with its jitter. */
const RETRY_DELAYS_S = [5, 300, 1_800, 7_200, 18_000, 36_000, 50_400, 72_000, 86_400]

describe('recoveryWindowProblems', () => {
  const now = Date.parse('2026-06-01T10:00:00Z')
  const cases: [string, { since: number; until?: number }, number | null, string[]][] = [
    ['a day ago', { since: now - DAY }, null, []],
    ['now', { since: now }, null, []],
    ['in the future', { since: now + 1 }, null, ['since: since must not be in the future']],
    ['the oldest history kept by default (365 days)', { since: now - 365 * DAY }, null, []],
    ['before it', { since: now - 365 * DAY - 1 }, null, ['since: since must be within the history kept: the last 365 days, from 2025-06-01T10:00:00.000Z']],
    ['within a retention of 30 days', { since: now - 30 * DAY }, 30, []],
    ['before it', { since: now - 31 * DAY }, 30, ['since: since must be within the history kept: the last 30 days, from 2026-05-02T10:00:00.000Z']],
    ['until after since', { since: now - DAY, until: now - HOUR }, null, []],
    ['until now', { since: now - DAY, until: now }, null, []],
    ['until at since', { since: now - DAY, until: now - DAY }, null, ['until: until must be after since']],
    ['until in the future', { since: now - DAY, until: now + 1 }, null, ['until: until must not be in the future']],
    ['both wrong', { since: now + HOUR, until: now + 2 * HOUR }, null, ['since: since must not be in the future', 'until: until must not be in the future']],
  ]
  for (const [what, asked, retentionDays, expected] of cases) {
    test(`${what}${retentionDays === null ? '' : ` (${retentionDays} days kept)`} → ${expected.length === 0 ? 'accepted' : expected.join('; ')}`, () => {
      assert.deepEqual(
        recoveryWindowProblems(asked, now, retentionDays).map((problem) => `${problem.field}: ${problem.message}`),
        expected,
      )
    })
  }
})

describe('the recovery cursor', () => {
  test('reads back the position it was written from', () => {
    for (const position of [
      { completedAt: 0, deliveryId: 1 },
      { completedAt: Date.parse('2026-11-27T13:00:00.123Z'), deliveryId: 9_007_199_254_740 },
    ]) {
      assert.deepEqual(readRecoveryCursor(recoveryCursor(position)), position)
    }
  })

  const written = (text: string) => Buffer.from(text).toString('base64url')
  const refused = ['', 'x', written('1.'), written('1.-2'), written('1.2.3'), written('1e3.2'), written(`1.${'9'.repeat(16)}`)]
  for (const cursor of refused) test(`${JSON.stringify(cursor)} is no cursor`, () => assert.equal(readRecoveryCursor(cursor), undefined))

  test('a call starts at since, or after its cursor when that is not before since', () => {
    const cases: [number, { completedAt: number; deliveryId: number } | undefined, { completedAt: number; deliveryId: number }][] = [
      [100, undefined, { completedAt: 100, deliveryId: 0 }],
      [100, { completedAt: 150, deliveryId: 7 }, { completedAt: 150, deliveryId: 7 }],
      [100, { completedAt: 100, deliveryId: 7 }, { completedAt: 100, deliveryId: 7 }],
      [100, { completedAt: 50, deliveryId: 7 }, { completedAt: 100, deliveryId: 0 }],
    ]
    for (const [since, cursor, expected] of cases) assert.deepEqual(recoveryStart(since, cursor), expected)
  })
})

let service: TestService
let receiver: Receiver
let now = Date.parse('2026-11-02T08:00:00Z')
let orgs = 0

before(async () => {
  service = await startService({ now: () => now, allowPrivateWebhookUrls: true })
})
after(() => service.close())
beforeEach(async () => {
  receiver = await startReceiver()
})
afterEach(() => receiver.close())

const deliver = () => service.app.workers!.deliverer.runOnce()

/** An organization whose key has `scopes`, with an endpoint at the receiver that takes one webhook at a time, so that it receives them in the order they are sent. */
async function setUp(scopes = ['triggers:read', 'webhooks:manage']): Promise<{ orgId: string; key: string; endpointId: string }> {
  const admin = bearer(OPERATOR_TOKEN)
  const org = json(await service.app.inject({ method: 'POST', url: '/admin/v1/organizations', headers: admin, payload: { name: `Recovery ${++orgs}` } })).data
  const issued = await service.app.inject({ method: 'POST', url: `/admin/v1/organizations/${org.id}/api-keys`, headers: admin, payload: { name: 'ats', scopes } })
  const key = json(issued).data.key
  const endpoint = await service.app.inject({
    method: 'POST',
    url: `/admin/v1/organizations/${org.id}/webhook-endpoints`,
    headers: admin,
    payload: { url: receiver.url, max_in_flight: 1 },
  })
  assert.equal(endpoint.statusCode, 201, endpoint.body)
  return { orgId: org.id, key, endpointId: json(endpoint).data.id }
}

/** A task.completed event of the organization, written through the outbox now with its deliveries; its id. */
async function event(orgId: string): Promise<string> {
  const id = newId('event', now)
  const data = { task_id: newId('task', now), outcome: 'reached' }
  await service.db.transaction((tx) => insertEvents(tx, [{ orgId, event: { id, type: 'task.completed', timestamp: new Date(now).toISOString(), data } }]))
  return id
}

function recover(key: string, endpointId: string, body: object) {
  return service.app.inject({ method: 'POST', url: `/api/v2/webhook-endpoints/${endpointId}/recover`, headers: bearer(key), payload: body })
}

async function recovered(key: string, endpointId: string, body: object): Promise<{ queued: number; brought_forward: number; since: string; until: string; next: string | null }> {
  const response = await recover(key, endpointId, body)
  assert.equal(response.statusCode, 202, response.body)
  return json(response).data
}

const webhookIds = (from: number) => receiver.received.slice(from).map((request) => request.headers['webhook-id'])

async function deliveryStatuses(key: string, eventId: string): Promise<string[]> {
  return json(await service.app.inject({ method: 'GET', url: `/api/v2/events/${eventId}`, headers: bearer(key) })).data.deliveries.map((delivery: any) => delivery.status)
}

describe('recovery after an outage', () => {
  test('an hour down, its deliveries given up by a disable: each failed event is sent again once, in order, with its id; a second call queues none', async () => {
    const { orgId, key, endpointId } = await setUp()
    const delivered = await event(orgId)
    await deliver()
    assert.deepEqual(webhookIds(0), [delivered])

    // The receiver answers 500 for an hour: an event every 10 minutes, each attempt failing and retried.
    const outageStart = now + MINUTE
    receiver.answerAll({ status: 500 })
    const failed: string[] = []
    for (now = outageStart; now < outageStart + HOUR; now += 10 * MINUTE) {
      failed.push(await event(orgId))
      await deliver()
    }
    // Its owner disables the endpoint meanwhile, which gives up what is pending (deliveries that never got a final answer).
    const disabled = await service.app.inject({ method: 'PATCH', url: `/api/v2/webhook-endpoints/${endpointId}`, headers: bearer(key), payload: { enabled: false } })
    assert.equal(disabled.statusCode, 200, disabled.body)
    for (const id of failed) assert.deepEqual(await deliveryStatuses(key, id), ['failed'])
    const refused = await recover(key, endpointId, { since: new Date(outageStart).toISOString() })
    assert.equal(refused.statusCode, 409, refused.body)
    assert.equal(json(refused).error.code, 'conflict')

    // Back up and enabled again; one of the events is redelivered by hand first, and succeeds.
    now += 5 * MINUTE
    receiver.answerAll({ status: 200 })
    const enabled = await service.app.inject({ method: 'PATCH', url: `/api/v2/webhook-endpoints/${endpointId}`, headers: bearer(key), payload: { enabled: true } })
    assert.equal(enabled.statusCode, 200, enabled.body)
    const [redeliveredByHand] = failed.splice(2, 1)
    assert.equal((await service.app.inject({ method: 'POST', url: `/api/v2/events/${redeliveredByHand}/redeliver`, headers: bearer(key) })).statusCode, 202)
    await deliver()
    assert.deepEqual(await deliveryStatuses(key, redeliveredByHand!), ['failed', 'succeeded'])

    now += MINUTE
    const before = receiver.received.length
    const recovery = await recovered(key, endpointId, { since: new Date(outageStart).toISOString() })
    assert.deepEqual(recovery, { queued: failed.length, brought_forward: 0, since: new Date(outageStart).toISOString(), until: new Date(now).toISOString(), next: null })
    await deliver()
    assert.deepEqual(webhookIds(before), failed, 'each failed event once more, in the order recorded, with its id')
    for (const id of failed) assert.deepEqual(await deliveryStatuses(key, id), ['failed', 'succeeded'])

    assert.equal((await recovered(key, endpointId, { since: new Date(outageStart).toISOString() })).queued, 0, 'nothing is left to recover')
    await deliver()
    assert.equal(receiver.received.length, before + failed.length)

    const log = json(await service.app.inject({ method: 'GET', url: `/admin/v1/audit-log?organization_id=${orgId}`, headers: bearer(OPERATOR_TOKEN) })).data
    const recoveries = log.filter((entry: any) => entry.action === 'webhook_endpoint.recovered')
    assert.equal(recoveries.length, 1, 'a call that queued nothing changed nothing')
    assert.deepEqual(recoveries[0].target, endpointId)
    assert.deepEqual(recoveries[0].details, { since: recovery.since, until: recovery.until, queued: failed.length, brought_forward: 0 })
  })

  test('deliveries given up after the retry schedule, one event twice: each sent again once, in order; one queued already is not queued again', async () => {
    const { orgId, key, endpointId } = await setUp()
    const outageStart = now
    receiver.answerAll({ status: 500 })
    const failed: string[] = []
    for (let n = 0; n < 4; n++) {
      failed.push(await event(orgId))
      now += 10 * MINUTE
    }
    await deliver()
    const waitOutRetries = async () => {
      for (const delayS of RETRY_DELAYS_S) {
        now += delayS * 1100
        await deliver()
      }
    }
    await waitOutRetries()
    for (const id of failed) assert.deepEqual(await deliveryStatuses(key, id), ['failed'])
    // Sent again by hand while the receiver is still down, the second event fails a second time.
    assert.equal((await service.app.inject({ method: 'POST', url: `/api/v2/events/${failed[1]}/redeliver`, headers: bearer(key) })).statusCode, 202)
    await deliver()
    await waitOutRetries()
    assert.deepEqual(await deliveryStatuses(key, failed[1]!), ['failed', 'failed'])

    receiver.answerAll({ status: 200 })
    now += HOUR
    // The last event is redelivered by hand, but not yet sent when the recovery comes: it is not queued twice.
    assert.equal((await service.app.inject({ method: 'POST', url: `/api/v2/events/${failed[3]}/redeliver`, headers: bearer(key) })).statusCode, 202)
    now += 1_000
    const before = receiver.received.length
    assert.equal((await recovered(key, endpointId, { since: new Date(outageStart).toISOString() })).queued, 3)
    await deliver()
    assert.deepEqual(webhookIds(before), [failed[3], ...failed.slice(0, 3)], 'the redelivery first, as it fell due first; then the others, in order')
    assert.deepEqual(await deliveryStatuses(key, failed[1]!), ['failed', 'failed', 'succeeded'])
    assert.equal((await recovered(key, endpointId, { since: new Date(outageStart).toISOString() })).queued, 0)
  })

  test('deliveries waiting for a retry hours away are brought forward and sent once; one whose last failure was before since waits on', async () => {
    const { orgId, key, endpointId } = await setUp()
    receiver.answerAll({ status: 500 })
    const before = await event(orgId)
    await deliver()
    // The outage as the client tells it starts later: this event's three attempts failed before; its fourth is half an hour away.
    for (const delayS of RETRY_DELAYS_S.slice(0, 2)) {
      now += delayS * 1100
      await deliver()
    }
    now += MINUTE
    const outageStart = now
    const waiting = [await event(orgId), await event(orgId)]
    await deliver()
    // Their second attempts fail too: the next is five minutes away, after the receiver is back.
    now += RETRY_DELAYS_S[0]! * 1100
    await deliver()
    for (const id of waiting) assert.deepEqual(await deliveryStatuses(key, id), ['pending'])

    now += MINUTE
    receiver.answerAll({ status: 200 })
    const sent = receiver.received.length
    const recovery = await recovered(key, endpointId, { since: new Date(outageStart).toISOString() })
    assert.deepEqual([recovery.queued, recovery.brought_forward, recovery.next], [2, 2, null])
    await deliver()
    assert.deepEqual(webhookIds(sent), waiting, 'sent now, in the order recorded, with their ids')
    for (const id of waiting) {
      const [delivery] = json(await service.app.inject({ method: 'GET', url: `/api/v2/events/${id}`, headers: bearer(key) })).data.deliveries
      assert.deepEqual(await deliveryStatuses(key, id), ['succeeded'], 'no second delivery: the one waiting was sent')
      assert.equal(delivery.attempts.length, 3, 'its attempts go on counting')
    }
    assert.deepEqual(await deliveryStatuses(key, before), ['pending'], 'outside the window, it waits for its retry')
    assert.equal((await recovered(key, endpointId, { since: new Date(outageStart).toISOString() })).queued, 0, 'nothing is left to recover')

    // When the retry the waiting deliveries were due for comes, nothing is sent twice; the one left waiting goes at its own.
    const afterRecovery = receiver.received.length
    now += RETRY_DELAYS_S[1]! * 1100
    await deliver()
    assert.deepEqual(webhookIds(afterRecovery), [])
    now += RETRY_DELAYS_S[2]! * 1100
    await deliver()
    assert.deepEqual(webhookIds(afterRecovery), [before])
  })

  const most = MAX_RECOVERED_PER_CALL.toLocaleString('en')
  test(`a call looks at ${most} failed deliveries at most, and the next goes on from its cursor, through deliveries given up at one instant`, async () => {
    const { orgId, key, endpointId } = await setUp()
    const since = new Date(now).toISOString()
    const count = MAX_RECOVERED_PER_CALL + 25
    const written = Array.from({ length: count }, (_, n) => ({
      orgId,
      event: { id: newId('event', now + n), type: 'task.completed' as const, timestamp: new Date(now).toISOString(), data: { n } },
    }))
    await service.db.transaction((tx) => insertEvents(tx, written))
    now += MINUTE
    await service.app.inject({ method: 'PATCH', url: `/api/v2/webhook-endpoints/${endpointId}`, headers: bearer(key), payload: { enabled: false } })
    await service.app.inject({ method: 'PATCH', url: `/api/v2/webhook-endpoints/${endpointId}`, headers: bearer(key), payload: { enabled: true } })
    now += MINUTE

    const first = await recovered(key, endpointId, { since })
    assert.equal(first.queued, MAX_RECOVERED_PER_CALL)
    assert.ok(first.next !== null)
    const rest = await recovered(key, endpointId, { since, until: first.until, after: first.next })
    assert.deepEqual([rest.queued, rest.next, rest.until], [25, null, first.until])
    assert.equal((await recovered(key, endpointId, { since, until: first.until })).queued, 0)
    const [made] = await service.db.query<{ deliveries: number; events: number }>(
      `SELECT count(*)::int AS deliveries, count(DISTINCT event_id)::int AS events FROM deliveries WHERE endpoint_id = $1 AND status = 'pending'`,
      [endpointId],
    )
    assert.deepEqual(made, { deliveries: count, events: count })
  })
})

describe('the route', () => {
  test('refuses a bad window naming its field, an unknown endpoint, a key without webhooks:manage; the operator recovers any organization\'s', async () => {
    const { orgId, key, endpointId } = await setUp()
    const refusals: [object, string[][]][] = [
      [{}, [['missing', 'body,since']]],
      [{ since: 'yesterday' }, [['value_error', 'body,since']]],
      [{ since: '2026-11-01T08:00:00' }, [['value_error', 'body,since']]],
      [{ since: new Date(now + MINUTE).toISOString() }, [['value_error', 'body,since']]],
      [{ since: new Date(now - 366 * DAY).toISOString() }, [['value_error', 'body,since']]],
      [{ since: new Date(now - HOUR).toISOString(), until: new Date(now - 2 * HOUR).toISOString() }, [['value_error', 'body,until']]],
      [{ since: new Date(now - HOUR).toISOString(), after: 'not-a-cursor' }, [['value_error', 'body,after']]],
    ]
    for (const [body, expected] of refusals) {
      const response = await recover(key, endpointId, body)
      assert.equal(response.statusCode, 422, JSON.stringify(body))
      assert.deepEqual(json(response).detail.map((entry: any) => [entry.type, entry.loc.join(',')]), expected, JSON.stringify(body))
    }
    const since = new Date(now - HOUR).toISOString()
    assert.equal((await recover(key, 'whe_01jd3y5v8m6m1r9cz8xk4j2h7q', { since })).statusCode, 404)

    const reader = await setUp(['triggers:read'])
    const forbidden = await recover(reader.key, reader.endpointId, { since })
    assert.equal(forbidden.statusCode, 403, forbidden.body)

    const byOperator = await service.app.inject({
      method: 'POST',
      url: `/admin/v1/organizations/${orgId}/webhook-endpoints/${endpointId}/recover`,
      headers: bearer(OPERATOR_TOKEN),
      payload: { since },
    })
    assert.equal(byOperator.statusCode, 202, byOperator.body)
    assert.equal(json(byOperator).data.queued, 0)

    const client = json(await service.app.inject({ method: 'GET', url: '/openapi.json' }))
    assert.equal(client.paths['/api/v2/webhook-endpoints/{id}/recover'].post.operationId, 'recoverWebhookEndpoint')
    const operator = json(await service.app.inject({ method: 'GET', url: '/admin/openapi.json' }))
    assert.equal(operator.paths['/admin/v1/organizations/{org_id}/webhook-endpoints/{id}/recover'].post.operationId, 'adminRecoverWebhookEndpoint')
  })
})
