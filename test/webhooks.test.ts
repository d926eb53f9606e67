/**
 * Webhooks end to end: endpoints registered by the operator or the client,
 * events delivered signed (verified with the standardwebhooks package),
 * retried on the schedule, Retry-After and 410 honoured, one endpoint never
 * holding up another, the event log, redelivery and metrics.
 */
import assert from 'node:assert/strict'
import { createHmac } from 'node:crypto'
import { after, afterEach, before, beforeEach, describe, test } from 'node:test'
import { Webhook } from 'standardwebhooks'
import { createChannels } from '../src/channels/index.ts'
import { LATENCY_BOUNDS_MS } from '../src/domain/endpointHealth.ts'
import { redeliver } from '../src/store/deliveries.ts'
import { queueDepths } from '../src/store/queues.ts'
import { parsePrometheusText, sampleValue } from './support/prometheus.ts'
import { type Receiver, startReceiver } from './support/receiver.ts'
import { bearer, json, onPostgres, OPERATOR_TOKEN, seedOrganization, startService, type TestService } from './support/service.ts'

const ALWAYS_OPEN = { timezone: 'contact', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '00:00', end: '24:00' }] }
const APP_SECRET = 'webhook-test-whatsapp-app-secret'
const PHONE_NUMBER_ID = '1098765432'

let service: TestService
let receiver: Receiver
let now = Date.now()
let orgs = 0

before(async () => {
  const channels = createChannels(
    { publicBaseUrl: 'http://service.test', twilioApiBaseUrl: 'http://127.0.0.1:9', whatsappApiBaseUrl: 'http://127.0.0.1:9' },
    (name) => (name === 'WHATSAPP_APP_SECRET' ? APP_SECRET : undefined),
  )
  service = await startService({ now: () => now, channels, allowPrivateWebhookUrls: true })
})
after(() => service.close())
// A receiver of its own for each test: what an earlier test left pending goes elsewhere.
beforeEach(async () => {
  receiver = await startReceiver()
  // Receivers check a signature's timestamp against their own clock. (What an
  // earlier test left due later then stays due later.)
  now = Date.now()
})
afterEach(() => receiver.close())

const admin = bearer(OPERATOR_TOKEN)

/** An organization with a key that may manage webhooks, an endpoint to the receiver, and an always-open simulator campaign. */
async function setUp(endpoint: { url?: string; events?: string[] } = {}) {
  const org = json(await service.app.inject({ method: 'POST', url: '/admin/v1/organizations', headers: admin, payload: { name: `Org ${++orgs}` } })).data
  const key = json(
    await service.app.inject({
      method: 'POST',
      url: `/admin/v1/organizations/${org.id}/api-keys`,
      headers: admin,
      payload: { name: 'ats', scopes: ['triggers:write', 'triggers:read', 'webhooks:manage'] },
    }),
  ).data.key as string
  await service.app.inject({
    method: 'POST',
    url: `/admin/v1/organizations/${org.id}/campaigns`,
    headers: admin,
    payload: { routing_key: 'screening', channel: 'voice', schedule: ALWAYS_OPEN, provider_config: { duration_ms: 200 } },
  })
  const created = await service.app.inject({
    method: 'POST',
    url: '/api/v2/webhook-endpoints',
    headers: bearer(key),
    payload: { url: endpoint.url ?? receiver.url, ...(endpoint.events ? { events: endpoint.events } : {}) },
  })
  assert.equal(created.statusCode, 201, created.body)
  return { orgId: org.id as string, key, endpoint: json(created).data as { id: string; secret: string } }
}

async function trigger(key: string, ids: object[] = [{ source: 'ats', type: 'candidate', value: 'c-1' }]) {
  const response = await service.app.inject({
    method: 'POST',
    url: '/api/v2/triggers',
    headers: { ...bearer(key), 'content-type': 'application/json' },
    payload: { campaign: 'screening', ids, contact: { phone: '+442079460958' }, test_mode: true },
  })
  assert.equal(response.statusCode, 201, response.body)
  return json(response).data as { id: string; task_id: string }
}

/** Runs a simulated call to its end: both events are written. */
async function callToTheEnd() {
  await service.app.workers!.dispatcher.runOnce()
  now += 200
  await service.app.workers!.dispatcher.runOnce()
}

const deliver = () => service.app.workers!.deliverer.runOnce()

const payloads = () => receiver.received.map((request) => JSON.parse(request.body))

describe('delivery', () => {
  test('both events reach the receiver with the ids as sent (source/type lowercased), signed as Standard Webhooks', async () => {
    const { key, endpoint } = await setUp()
    const created = await trigger(key, [
      { source: 'ATS', type: 'Candidate_ID', value: 'AbC-001' },
      { source: 'Greenhouse', type: 'Application', value: 'APP-77x' },
      { source: 'crm', type: 'LEAD', value: 'Lead:Ünïcode' },
    ])
    await callToTheEnd()
    await deliver()
    assert.equal(receiver.received.length, 2)
    const verifier = new Webhook(endpoint.secret)
    const events = receiver.received.map((request) => verifier.verify(request.body, request.headers as Record<string, string>) as any)
    assert.deepEqual(
      events.map((event) => event.type),
      ['interaction.finalized', 'task.completed'],
    )
    const ids = [
      { source: 'ats', type: 'candidate_id', value: 'AbC-001' },
      { source: 'greenhouse', type: 'application', value: 'APP-77x' },
      { source: 'crm', type: 'lead', value: 'Lead:Ünïcode' },
    ]
    for (const event of events) {
      assert.deepEqual(event.data.ids, ids)
      assert.equal(event.data.task_id, created.task_id)
    }
    for (const request of receiver.received) {
      assert.equal(request.headers['content-type'], 'application/json')
      assert.equal(request.headers['webhook-id'], JSON.parse(request.body).id)
      assert.match(String(request.headers['user-agent']), /^ConversationTriggerService-Webhooks\//)
    }
    // A tampered body does not verify.
    const [first] = receiver.received
    assert.throws(() => verifier.verify(first!.body.replace('AbC-001', 'AbC-002'), first!.headers as Record<string, string>))
  })

  test('an inbound message that answers no task is delivered as interaction.message_received, then interaction.finalized, without ids', async () => {
    const { orgId } = await setUp()
    const created = await service.app.inject({
      method: 'POST',
      url: `/admin/v1/organizations/${orgId}/campaigns`,
      headers: admin,
      payload: {
        routing_key: 'whatsapp',
        channel: 'whatsapp',
        provider: 'whatsapp_cloud',
        provider_config: { phone_number_id: PHONE_NUMBER_ID, template: { name: 'hello' } },
        // The clock stands still here: at its provider's pace, a second start in one instant could wait for its sender (test/pacing.test.ts).
        pacing: { per_second: 1_000_000 },
      },
    })
    assert.equal(created.statusCode, 201, created.body)
    const body = JSON.stringify({
      object: 'whatsapp_business_account',
      entry: [{ id: '1', changes: [{ field: 'messages', value: { messaging_product: 'whatsapp', metadata: { display_phone_number: '1', phone_number_id: PHONE_NUMBER_ID }, messages: [{ from: '4915123456789', id: 'wamid.inbound-1', timestamp: String(Math.floor(now / 1000)), type: 'text', text: { body: 'Hello?' } }] } }] }],
    })
    const posted = await service.app.inject({
      method: 'POST',
      url: '/providers/whatsapp/webhook',
      headers: { 'content-type': 'application/json', 'x-hub-signature-256': `sha256=${createHmac('sha256', APP_SECRET).update(body).digest('hex')}` },
      payload: body,
    })
    assert.equal(posted.statusCode, 200)
    await deliver()
    const [received, event] = payloads()
    assert.equal(received.type, 'interaction.message_received')
    assert.deepEqual(received.data.message, { id: 'wamid.inbound-1', text: 'Hello?', media: [], received_at: new Date(Math.floor(now / 1000) * 1000).toISOString() })
    assert.equal(received.data.interaction_id, event.data.interaction_id)
    assert.equal('ids' in received.data, false)
    assert.equal(event.type, 'interaction.finalized')
    assert.equal(event.data.task_id, null)
    assert.equal(event.data.direction, 'inbound')
    assert.equal('ids' in event.data, false)
  })

  test('a failing receiver is retried on the schedule, with the same webhook-id, until it answers', async () => {
    const { key } = await setUp({ events: ['task.completed'] })
    await trigger(key)
    receiver.answer({ status: 500 }, { status: 502 })
    await callToTheEnd()
    await deliver()
    assert.equal(receiver.received.length, 1)
    now += 4_000 // before the first retry (5 s, less 10 % at most)
    await deliver()
    assert.equal(receiver.received.length, 1)
    now += 2_000
    await deliver()
    assert.equal(receiver.received.length, 2)
    now += 240_000 // the second retry comes after about 5 minutes
    await deliver()
    assert.equal(receiver.received.length, 2)
    now += 100_000
    await deliver()
    assert.equal(receiver.received.length, 3)
    const ids = new Set(receiver.received.map((request) => request.headers['webhook-id']))
    assert.equal(ids.size, 1)
    now += 3 * 3_600_000
    await deliver()
    assert.equal(receiver.received.length, 3, 'delivered: no more attempts')
  })

  test('each failed attempt is one warn line with the event, endpoint, attempt, status or error and the next attempt; no URL query, secret or body', async () => {
    const { key, endpoint } = await setUp({ url: `${receiver.url}?token=query-secret-in-url`, events: ['task.completed'] })
    const down = json(
      await service.app.inject({
        method: 'POST',
        url: '/api/v2/webhook-endpoints',
        headers: bearer(key),
        payload: { url: 'http://127.0.0.1:9/down?token=query-secret-in-url', events: ['task.completed'] },
      }),
    ).data as { id: string; secret: string }
    await trigger(key, [{ source: 'ats', type: 'candidate', value: 'body-marker-7' }])
    receiver.answer({ status: 500 })
    await callToTheEnd()
    const failures = () =>
      service.logs
        .map((line) => JSON.parse(line))
        .filter((line) => typeof line.msg === 'string' && line.msg.startsWith('webhook delivery failed'))
        .sort((a, b) => (a.endpoint === endpoint.id ? -1 : 1) - (b.endpoint === endpoint.id ? -1 : 1))
    service.logs.length = 0
    await deliver()
    const [event] = payloads()
    const first = failures()
    assert.deepEqual(
      first.map(({ level, event, endpoint, attempt, status, msg }) => ({ level, event, endpoint, attempt, status, msg })),
      [
        { level: 40, event: event.id, endpoint: endpoint.id, attempt: 1, status: 500, msg: 'webhook delivery failed; it will be retried' },
        { level: 40, event: event.id, endpoint: down.id, attempt: 1, status: undefined, msg: 'webhook delivery failed; it will be retried' },
      ],
    )
    assert.match(first[1].error, /^network: .*ECONNREFUSED/)
    for (const line of first) {
      const retryInMs = Date.parse(line.next_attempt_at) - now
      assert.ok(retryInMs >= 4_500 && retryInMs <= 5_500, `next attempt in ${retryInMs} ms`)
    }

    // The second attempt reaches the receiver; the other endpoint fails again: one more line, for it alone.
    now += 6_000
    await deliver()
    const second = failures()
    assert.deepEqual(second.slice(2).map((line) => [line.endpoint, line.attempt]), [[down.id, 2]])
    const text = service.logs.join('\n')
    for (const secret of ['query-secret-in-url', endpoint.secret, down.secret, 'body-marker-7', '/down']) {
      assert.ok(!text.includes(secret), `a log line contains ${secret}`)
    }
  })

  test('a delivery is given up after its tenth attempt', async () => {
    const { key } = await setUp({ events: ['task.completed'] })
    await trigger(key)
    receiver.answer(...Array.from({ length: 12 }, () => ({ status: 500 })))
    await callToTheEnd()
    await deliver()
    for (const delayS of [5, 300, 1_800, 7_200, 18_000, 36_000, 50_400, 72_000, 86_400]) {
      now += delayS * 1100
      await deliver()
    }
    assert.equal(receiver.received.length, 10)
    now += 7 * 86_400_000
    await deliver()
    assert.equal(receiver.received.length, 10)
    const [event] = payloads()
    const detail = json(await service.app.inject({ method: 'GET', url: `/api/v2/events/${event.id}`, headers: bearer(key) })).data
    assert.equal(detail.deliveries[0].status, 'failed')
    assert.deepEqual(
      detail.deliveries[0].attempts.map((attempt: any) => [attempt.attempt, attempt.status_code]),
      Array.from({ length: 10 }, (_, index) => [index + 1, 500]),
    )
    assert.equal(detail.deliveries[0].next_attempt_at, null)
  })

  test('Retry-After on 429 and 503 is honoured', async () => {
    const { key } = await setUp({ events: ['task.completed'] })
    await trigger(key)
    // Later than the schedule (5 s, then 5 min): waited for as asked.
    receiver.answer({ status: 503, headers: { 'retry-after': '120' } }, { status: 429, headers: { 'retry-after': '600' } }, { status: 429, headers: { 'retry-after': '0' } })
    await callToTheEnd()
    await deliver()
    now += 119_000
    await deliver()
    assert.equal(receiver.received.length, 1)
    now += 1_000
    await deliver()
    assert.equal(receiver.received.length, 2)
    now += 599_000
    await deliver()
    assert.equal(receiver.received.length, 2)
    now += 1_000
    await deliver()
    assert.equal(receiver.received.length, 3)
    // "At once" does not spend the attempts: the schedule (30 min for the fourth) still applies.
    await deliver()
    now += 60_000
    await deliver()
    assert.equal(receiver.received.length, 3)
    now += 1_980_000 // 30 min and its 10 % of jitter, since the third attempt
    await deliver()
    assert.equal(receiver.received.length, 4)
  })

  test('410 Gone disables the endpoint: what was pending for it is given up, nothing more is sent until it is enabled again', async () => {
    const { key, endpoint } = await setUp({ events: ['task.completed'] })
    // Each answer is set before the call ends: a deliverer that holds the endpoint sends as soon as it ends.
    await trigger(key)
    receiver.answer({ status: 500 })
    await callToTheEnd()
    await deliver()
    const [pending] = payloads()
    await trigger(key)
    receiver.answer({ status: 410 })
    await callToTheEnd()
    await deliver()
    const given = json(await service.app.inject({ method: 'GET', url: `/api/v2/events/${pending.id}`, headers: bearer(key) })).data
    assert.equal(given.deliveries[0].status, 'failed')
    assert.deepEqual(given.deliveries[0].attempts.map((attempt: any) => attempt.status_code), [500])
    const state = json(await service.app.inject({ method: 'GET', url: `/api/v2/webhook-endpoints/${endpoint.id}`, headers: bearer(key) })).data
    assert.equal(state.enabled, false)
    assert.match(state.disabled_reason, /410/)
    await trigger(key)
    await callToTheEnd()
    now += 3_600_000
    await deliver()
    assert.equal(receiver.received.length, 2)
    const metrics = await service.app.inject({ method: 'GET', url: '/metrics', headers: admin })
    assert.match(metrics.body, /^conversation_trigger_webhook_endpoints_disabled [1-9]/m)
    const enabled = await service.app.inject({ method: 'PATCH', url: `/api/v2/webhook-endpoints/${endpoint.id}`, headers: bearer(key), payload: { enabled: true } })
    assert.equal(json(enabled).data.disabled_reason, null)
  })

  test('a receiver that hangs does not hold up another endpoint; an event arrives within 1 s', async () => {
    const slow = await startReceiver()
    try {
      const { key, orgId } = await setUp({ url: slow.url, events: ['task.completed'] })
      const second = await service.app.inject({ method: 'POST', url: `/admin/v1/organizations/${orgId}/webhook-endpoints`, headers: admin, payload: { url: receiver.url, events: ['task.completed'] } })
      assert.equal(second.statusCode, 201)
      slow.answer(...Array.from({ length: 10 }, () => 'hang' as const))
      for (let i = 0; i < 10; i++) await trigger(key)
      await callToTheEnd()
      const written = Date.now()
      service.app.workers!.deliverer.start()
      try {
        await receiver.waitFor(10, 1000)
        const slowest = Math.max(...receiver.received.map((request) => request.at)) - written
        assert.ok(slowest < 1000, `delivered after ${slowest} ms`)
        assert.equal(slow.received.length, 4, 'the hanging receiver has no more than 4 sends in flight')
      } finally {
        slow.release()
        await service.app.workers!.deliverer.stop()
      }
    } finally {
      await slow.close()
    }
  })
})

describe('endpoints', () => {
  test('private and plain-http URLs are refused unless allowed', async () => {
    const strict = await startService()
    try {
      const { orgId } = await seedOrganization(strict.app)
      for (const url of ['http://example.com/hooks', 'https://127.0.0.1/hooks', 'https://10.1.2.3/hooks', 'https://localhost/x', 'https://[::1]/x', 'https://169.254.169.254/latest']) {
        const response = await strict.app.inject({ method: 'POST', url: `/admin/v1/organizations/${orgId}/webhook-endpoints`, headers: admin, payload: { url } })
        assert.equal(response.statusCode, 422, url)
        assert.deepEqual(json(response).detail[0].loc, ['body', 'url'])
      }
      const ok = await strict.app.inject({ method: 'POST', url: `/admin/v1/organizations/${orgId}/webhook-endpoints`, headers: admin, payload: { url: 'https://hooks.example.com/in' } })
      assert.equal(ok.statusCode, 201)
      const moved = await strict.app.inject({
        method: 'PATCH',
        url: `/admin/v1/organizations/${orgId}/webhook-endpoints/${json(ok).data.id}`,
        headers: admin,
        payload: { url: 'https://192.168.1.10/hooks' },
      })
      assert.equal(moved.statusCode, 422)
      const none = await strict.app.inject({ method: 'POST', url: `/admin/v1/organizations/${orgId}/webhook-endpoints`, headers: admin, payload: { url: 'https://hooks.example.com/in', events: [] } })
      assert.equal(none.statusCode, 422)
      assert.deepEqual(json(none).detail[0].loc, ['body', 'events'])
    } finally {
      await strict.close()
    }
  })

  test('the secret is shown once; a key without webhooks:manage is 403; another organization sees nothing', async () => {
    const { key, endpoint, orgId } = await setUp()
    assert.match(endpoint.secret, /^whsec_[A-Za-z0-9+/]{43}=$/)
    const listed = json(await service.app.inject({ method: 'GET', url: '/api/v2/webhook-endpoints', headers: bearer(key) })).data
    assert.equal(listed.length, 1)
    assert.equal('secret' in listed[0], false)
    const plain = await seedOrganization(service.app)
    assert.equal((await service.app.inject({ method: 'GET', url: '/api/v2/webhook-endpoints', headers: bearer(plain.key) })).statusCode, 403)
    const other = await setUp()
    const theirs = await service.app.inject({ method: 'GET', url: `/api/v2/webhook-endpoints/${endpoint.id}`, headers: bearer(other.key) })
    assert.equal(theirs.statusCode, 404)
    const viaAdmin = await service.app.inject({ method: 'GET', url: `/admin/v1/organizations/${orgId}/webhook-endpoints`, headers: admin })
    assert.equal(json(viaAdmin).data[0].id, endpoint.id)
    const unknownOrg = await service.app.inject({ method: 'GET', url: '/admin/v1/organizations/org_01jd3y5v8m6m1r9cz8xk4j2h7q/webhook-endpoints', headers: admin })
    assert.equal(unknownOrg.statusCode, 404)
  })

  test('a rotated secret: both the new and the previous one sign for 24 hours, then only the new one', async () => {
    const { key, endpoint } = await setUp({ events: ['task.completed'] })
    const rotated = json(await service.app.inject({ method: 'POST', url: `/api/v2/webhook-endpoints/${endpoint.id}/rotate-secret`, headers: bearer(key) })).data
    assert.notEqual(rotated.secret, endpoint.secret)
    await trigger(key)
    await callToTheEnd()
    await deliver()
    const [request] = receiver.received
    assert.equal(String(request!.headers['webhook-signature']).split(' ').length, 2)
    for (const secret of [endpoint.secret, rotated.secret]) new Webhook(secret).verify(request!.body, request!.headers as Record<string, string>)

    now += 24 * 3_600_000
    await trigger(key)
    await callToTheEnd()
    await deliver()
    const later = receiver.received.at(-1)!
    assert.equal(String(later.headers['webhook-signature']).split(' ').length, 1)
    assert.equal(JSON.parse(later.body).type, 'task.completed')
    // A second rotation may come once the previous secret has stopped signing, not before.
    const again = await service.app.inject({ method: 'POST', url: `/api/v2/webhook-endpoints/${endpoint.id}/rotate-secret`, headers: bearer(key) })
    assert.equal(again.statusCode, 200)
    const tooSoon = await service.app.inject({ method: 'POST', url: `/api/v2/webhook-endpoints/${endpoint.id}/rotate-secret`, headers: bearer(key) })
    assert.equal(tooSoon.statusCode, 409)
  })

  test('a deleted endpoint gets nothing more, and what was pending for it is given up', async () => {
    const { key, endpoint } = await setUp({ events: ['task.completed'] })
    await trigger(key)
    await callToTheEnd()
    assert.equal((await service.app.inject({ method: 'DELETE', url: `/api/v2/webhook-endpoints/${endpoint.id}`, headers: bearer(key) })).statusCode, 204)
    await deliver()
    assert.equal(receiver.received.length, 0)
    assert.equal((await service.app.inject({ method: 'DELETE', url: `/api/v2/webhook-endpoints/${endpoint.id}`, headers: bearer(key) })).statusCode, 404)
  })
})

describe('the event log', () => {
  test('lists events by type and cursor, shows each delivery attempt, and redelivers with the same webhook-id', async () => {
    const { key } = await setUp()
    for (let i = 0; i < 3; i++) await trigger(key)
    receiver.answer({ status: 500 })
    await callToTheEnd()
    await deliver()

    const page = async (query: string) => json(await service.app.inject({ method: 'GET', url: `/api/v2/events?${query}`, headers: bearer(key) })).data
    const all = await page('')
    assert.equal(all.length, 6)
    const completed = await page('type=task.completed')
    assert.equal(completed.length, 3)
    const first = await page('type=task.completed&limit=2')
    const rest = await page(`type=task.completed&after=${first[1].id}`)
    assert.deepEqual([...first, ...rest].map((event: any) => event.id), completed.map((event: any) => event.id))
    const bad = await service.app.inject({ method: 'GET', url: '/api/v2/events?limit=0&type=task.started', headers: bearer(key) })
    assert.equal(bad.statusCode, 422)
    // The newest, newest first: where a reader of what comes next starts.
    const newest = await page('newest=true&limit=2')
    assert.deepEqual(newest.map((event: any) => event.id), all.slice(-2).reverse().map((event: any) => event.id))
    assert.deepEqual(await page(`after=${newest[0].id}`), [])
    const both = await service.app.inject({ method: 'GET', url: `/api/v2/events?newest=true&after=${newest[0].id}`, headers: bearer(key) })
    assert.equal(both.statusCode, 422)
    assert.deepEqual(json(both).detail[0].loc, ['query', 'newest'])

    const failed = receiver.received.find((request) => receiver.received.indexOf(request) === 0)!
    const eventId = JSON.parse(failed.body).id
    const detail = json(await service.app.inject({ method: 'GET', url: `/api/v2/events/${eventId}`, headers: bearer(key) })).data
    assert.equal(detail.deliveries.length, 1)
    assert.equal(detail.deliveries[0].status, 'pending')
    assert.equal(detail.deliveries[0].attempts[0].status_code, 500)
    assert.ok(detail.deliveries[0].next_attempt_at)

    const before = receiver.received.length
    const redelivered = await service.app.inject({ method: 'POST', url: `/api/v2/events/${eventId}/redeliver`, headers: bearer(key) })
    assert.equal(redelivered.statusCode, 202)
    await deliver()
    const again = receiver.received.slice(before).find((request) => request.headers['webhook-id'] === eventId)
    assert.ok(again, 'redelivered with the same webhook-id')

    // Once its delivery has succeeded, the event is sent again by a new one, which its page lists: asked for
    // twice at once, it is made once.
    const twice = await Promise.all(
      [1, 2].map(() => service.app.inject({ method: 'POST', url: `/api/v2/events/${eventId}/redeliver`, headers: bearer(key) })),
    )
    assert.deepEqual(twice.map((response) => response.statusCode), [202, 202])
    await deliver()
    const redone = json(await service.app.inject({ method: 'GET', url: `/api/v2/events/${eventId}`, headers: bearer(key) })).data
    assert.deepEqual(
      redone.deliveries.map((delivery: any) => [delivery.status, delivery.attempts.map((attempt: any) => attempt.status_code)]),
      [
        ['succeeded', [500, 200]],
        ['succeeded', [200]],
      ],
    )

    const other = await setUp()
    assert.equal((await service.app.inject({ method: 'GET', url: `/api/v2/events/${eventId}`, headers: bearer(other.key) })).statusCode, 404)
  })

  test('/metrics, in Prometheus\'s text format, counts requests, triggers, group commits and webhook attempts, and reads the queues; for the operator only', async () => {
    const { key } = await setUp({ events: ['task.completed'] })
    await trigger(key)
    receiver.answer({ status: 500 })
    await callToTheEnd()
    await deliver()
    const response = await service.app.inject({ method: 'GET', url: '/metrics', headers: admin })
    assert.equal(response.statusCode, 200)
    assert.match(response.headers['content-type'] as string, /^text\/plain; version=0\.0\.4/)
    const families = parsePrometheusText(response.body)
    const types = Object.fromEntries([...families].map(([name, family]) => [name, family.type]))
    for (const [name, type] of Object.entries({
      conversation_trigger_http_request_duration_seconds: 'histogram',
      conversation_trigger_triggers_total: 'counter',
      conversation_trigger_group_commit_items: 'histogram',
      conversation_trigger_rate_limited_requests_total: 'counter',
      conversation_trigger_task_dispatch_lag_seconds: 'histogram',
      conversation_trigger_provider_errors_total: 'counter',
      conversation_trigger_webhook_delivery_attempt_duration_seconds: 'histogram',
      conversation_trigger_tasks_pending: 'gauge',
      conversation_trigger_tasks_due: 'gauge',
      conversation_trigger_tasks_oldest_due_age_seconds: 'gauge',
      conversation_trigger_interactions_running: 'gauge',
      conversation_trigger_webhook_deliveries_pending: 'gauge',
      conversation_trigger_webhook_deliveries_retrying: 'gauge',
      conversation_trigger_webhook_delivery_lag_seconds: 'gauge',
      conversation_trigger_webhook_endpoints_disabled: 'gauge',
      process_cpu_seconds_total: 'counter',
      nodejs_eventloop_lag_seconds: 'gauge',
    })) {
      assert.equal(types[name], type, name)
    }
    // A server's pool of connections; PGlite is one session.
    assert.equal(types.conversation_trigger_db_pool_connections, onPostgres ? 'gauge' : undefined)
    const value = (family: string, name: string, labels?: Record<string, string>) => sampleValue(families, family, name, labels) ?? 0
    assert.ok(value('conversation_trigger_http_request_duration_seconds', 'conversation_trigger_http_request_duration_seconds_count', { route: '/api/v2/triggers', status_code: '201' }) >= 1)
    assert.ok(value('conversation_trigger_triggers_total', 'conversation_trigger_triggers_total', { result: 'accepted', reason: 'recorded' }) >= 1)
    assert.ok(value('conversation_trigger_group_commit_items', 'conversation_trigger_group_commit_items_count', { committer: 'triggers' }) >= 1)
    assert.ok(value('conversation_trigger_group_commit_items', 'conversation_trigger_group_commit_items_count', { committer: 'interaction_endings' }) >= 1)
    assert.ok(value('conversation_trigger_task_dispatch_lag_seconds', 'conversation_trigger_task_dispatch_lag_seconds_count', { channel: 'voice' }) >= 1)
    assert.ok(value('conversation_trigger_webhook_delivery_attempt_duration_seconds', 'conversation_trigger_webhook_delivery_attempt_duration_seconds_count') >= 1)
    // The queues as the database holds them (a 500 leaves a delivery pending and retrying).
    const queues = await queueDepths(service.db, now)
    assert.ok(queues.deliveries.retrying >= 1)
    assert.equal(value('conversation_trigger_webhook_deliveries_retrying', 'conversation_trigger_webhook_deliveries_retrying'), queues.deliveries.retrying)
    assert.equal(value('conversation_trigger_webhook_deliveries_pending', 'conversation_trigger_webhook_deliveries_pending'), queues.deliveries.pending)
    assert.equal(value('conversation_trigger_tasks_pending', 'conversation_trigger_tasks_pending'), queues.tasks.pending)
    // The route pattern, never a path with an id in it.
    assert.ok(families.get('conversation_trigger_http_request_duration_seconds')!.samples.every((sample) => !/tsk_|evt_|whe_/.test(sample.labels.route ?? '')))
    // A refused trigger is counted by its reason.
    const refused = await service.app.inject({ method: 'POST', url: '/api/v2/triggers', headers: { ...bearer(key), 'content-type': 'application/json' }, payload: { campaign: 'screening' } })
    assert.equal(refused.statusCode, 422)
    const after = parsePrometheusText((await service.app.inject({ method: 'GET', url: '/metrics', headers: admin })).body)
    assert.ok((sampleValue(after, 'conversation_trigger_triggers_total', 'conversation_trigger_triggers_total', { result: 'refused', reason: 'invalid' }) ?? 0) >= 1)
    assert.equal((await service.app.inject({ method: 'GET', url: '/metrics', headers: bearer(key) })).statusCode, 403)
  })
})

describe("an endpoint's health", () => {
  const health = async (key: string, endpointId: string) => {
    const response = await service.app.inject({ method: 'GET', url: `/api/v2/webhook-endpoints/${endpointId}/health`, headers: bearer(key) })
    assert.equal(response.statusCode, 200, response.body)
    return json(response).data
  }

  test('counts the attempts of the last 24 hours, how many succeeded and how long they took, and lists the last failures with their answers', async () => {
    const { key, endpoint } = await setUp({ events: ['task.completed'] })
    const empty = await health(key, endpoint.id)
    assert.deepEqual({ ...empty, since: undefined }, { since: undefined, attempts: 0, succeeded: 0, success_rate: null, latency_ms: null, last_failures: [] })
    await trigger(key)
    receiver.answer({ status: 500 }, { status: 200, delayMs: 300 })
    await callToTheEnd()
    await deliver()
    now += 6_000
    await deliver()
    const [event] = payloads()
    const measured = await health(key, endpoint.id)
    assert.equal(Date.parse(measured.since) % 3_600_000, 0, 'from the start of an hour')
    assert.ok(now - Date.parse(measured.since) >= 24 * 3_600_000 && now - Date.parse(measured.since) < 25 * 3_600_000)
    assert.deepEqual([measured.attempts, measured.succeeded, measured.success_rate], [2, 1, 0.5])
    // One attempt answered at once, one after 300 ms: the slowest is p95; the median, a bucket's bound or the slowest.
    const { p50, p95, max } = measured.latency_ms
    assert.ok(max >= 300, JSON.stringify(measured.latency_ms))
    assert.equal(p95, max)
    assert.ok(p50 <= p95 && [...LATENCY_BOUNDS_MS, max].includes(p50), JSON.stringify(measured.latency_ms))
    assert.deepEqual(
      measured.last_failures.map((failure: any) => [failure.event_id, failure.event_type, failure.attempt, failure.status_code, failure.final]),
      [[event.id, 'task.completed', 1, 500, false]],
    )
    // A day later the attempts have left the window; the failures stay listed.
    now += 25 * 3_600_000
    const later = await health(key, endpoint.id)
    assert.deepEqual([later.attempts, later.success_rate, later.latency_ms, later.last_failures.length], [0, null, null, 1])
  })

  test("a delivery's last attempt is listed as final when it gives up, and the endpoint says why the service disabled it", async () => {
    const { key, endpoint } = await setUp({ events: ['task.completed'] })
    await trigger(key)
    receiver.answer({ status: 410 })
    await callToTheEnd()
    await deliver()
    const measured = await health(key, endpoint.id)
    assert.deepEqual([measured.attempts, measured.succeeded], [1, 0])
    assert.deepEqual(
      measured.last_failures.map((failure: any) => [failure.attempt, failure.status_code, failure.final]),
      [[1, 410, true]],
    )
    const state = json(await service.app.inject({ method: 'GET', url: `/api/v2/webhook-endpoints/${endpoint.id}`, headers: bearer(key) })).data
    assert.match(state.disabled_reason, /410/)
  })

  test('a test event is sent signed to the endpoint whatever it subscribes to, logged, left out of the events list, and sent again to it alone', async () => {
    const { orgId, key, endpoint } = await setUp({ events: ['interaction.finalized'] })
    const other = await service.app.inject({ method: 'POST', url: '/api/v2/webhook-endpoints', headers: bearer(key), payload: { url: `${receiver.url}/other` } })
    assert.equal(other.statusCode, 201, other.body)
    const sent = await service.app.inject({ method: 'POST', url: `/api/v2/webhook-endpoints/${endpoint.id}/test`, headers: bearer(key) })
    assert.equal(sent.statusCode, 202, sent.body)
    const event = json(sent).data
    assert.equal(event.type, 'webhook.test')
    assert.equal(event.data.endpoint_id, endpoint.id)
    await deliver()
    assert.equal(receiver.received.length, 1)
    const [request] = receiver.received
    assert.equal((request!.headers as any)['webhook-id'], event.id)
    assert.deepEqual(new Webhook(endpoint.secret).verify(request!.body, request!.headers as Record<string, string>), event)
    assert.deepEqual(json(await service.app.inject({ method: 'GET', url: '/api/v2/events', headers: bearer(key) })).data, [])
    const logged = json(await service.app.inject({ method: 'GET', url: `/api/v2/events/${event.id}`, headers: bearer(key) })).data
    assert.deepEqual(
      logged.deliveries.map((delivery: any) => [delivery.endpoint_id, delivery.status]),
      [[endpoint.id, 'succeeded']],
    )
    assert.equal((await health(key, endpoint.id)).succeeded, 1)
    const again = await service.app.inject({ method: 'POST', url: `/api/v2/events/${event.id}/redeliver`, headers: bearer(key) })
    assert.deepEqual(json(again).data.endpoints, [endpoint.id])
    await deliver()
    assert.deepEqual(receiver.received.map((r) => r.headers['webhook-id']), [event.id, event.id])
    // A disabled endpoint is not tested; another organization's is not found.
    await service.app.inject({ method: 'PATCH', url: `/api/v2/webhook-endpoints/${endpoint.id}`, headers: bearer(key), payload: { enabled: false } })
    const refused = await service.app.inject({ method: 'POST', url: `/api/v2/webhook-endpoints/${endpoint.id}/test`, headers: bearer(key) })
    assert.equal(refused.statusCode, 409)
    // A redelivery that read the endpoint as enabled before it was disabled makes no delivery for it.
    assert.equal(await redeliver(service.db, orgId, event.id, endpoint.id, now), false)
    assert.deepEqual(
      json(await service.app.inject({ method: 'GET', url: `/api/v2/events/${event.id}`, headers: bearer(key) })).data.deliveries.map((d: any) => d.status),
      ['succeeded', 'succeeded'],
    )
    const stranger = await setUp()
    for (const [method, url] of [['POST', `/api/v2/webhook-endpoints/${endpoint.id}/test`], ['GET', `/api/v2/webhook-endpoints/${endpoint.id}/health`]] as const) {
      assert.equal((await service.app.inject({ method, url, headers: bearer(stranger.key) })).statusCode, 404)
    }
  })

  test('a key without webhooks:manage may neither read the health nor send a test; the operator may, for any organization', async () => {
    const { orgId, endpoint } = await setUp()
    const reader = json(
      await service.app.inject({ method: 'POST', url: `/admin/v1/organizations/${orgId}/api-keys`, headers: admin, payload: { name: 'reader', scopes: ['triggers:read'] } }),
    ).data.key as string
    for (const [method, suffix] of [['GET', 'health'], ['POST', 'test']] as const) {
      const url = `/api/v2/webhook-endpoints/${endpoint.id}/${suffix}`
      assert.equal((await service.app.inject({ method, url, headers: bearer(reader) })).statusCode, 403, url)
    }
    const tested = await service.app.inject({ method: 'POST', url: `/admin/v1/organizations/${orgId}/webhook-endpoints/${endpoint.id}/test`, headers: admin })
    assert.equal(tested.statusCode, 202, tested.body)
    await deliver()
    assert.deepEqual(payloads().map((event) => event.type), ['webhook.test'])
    const read = await service.app.inject({ method: 'GET', url: `/admin/v1/organizations/${orgId}/webhook-endpoints/${endpoint.id}/health`, headers: admin })
    assert.equal(read.statusCode, 200, read.body)
    assert.deepEqual([json(read).data.attempts, json(read).data.succeeded], [1, 1])
  })
})
