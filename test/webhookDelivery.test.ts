/**
 * Webhook delivery in batches: connections kept alive, each endpoint's
 * max_in_flight held (with two deliverers on one database too), results
 * recorded many at a time yet each delivery with its exact attempt log, and
 * what a deliverer that died had claimed sent by another, once. Events are
 * written through the outbox as the task lifecycle writes them; the receivers
 * are real local HTTP servers.
 */
import assert from 'node:assert/strict'
import { after, afterEach, before, beforeEach, describe, test } from 'node:test'
import { newId } from '../src/domain/ids.ts'
import { claimDeliveries, deliveriesOf as storedDeliveriesOf, recordAttempts } from '../src/store/deliveries.ts'
import { insertEvents } from '../src/store/events.ts'
import { type Receiver, startReceiver } from './support/receiver.ts'
import { bearer, databaseBeforeMigration, json, OPERATOR_TOKEN, startService, type TestService } from './support/service.ts'

const admin = bearer(OPERATOR_TOKEN)

let service: TestService
let receiver: Receiver
let now = Date.now()
let orgs = 0

before(async () => {
  service = await startService({ now: () => now, allowPrivateWebhookUrls: true })
})
after(() => service.close())
beforeEach(async () => {
  receiver = await startReceiver()
  now = Date.now()
})
afterEach(() => receiver.close())

const deliverer = () => service.app.workers!.deliverer

/** An organization with a key that manages webhooks (and may do what `more` adds). */
async function organization(more: string[] = []): Promise<{ orgId: string; key: string }> {
  const org = json(await service.app.inject({ method: 'POST', url: '/admin/v1/organizations', headers: admin, payload: { name: `Delivery ${++orgs}` } })).data
  const key = json(
    await service.app.inject({
      method: 'POST',
      url: `/admin/v1/organizations/${org.id}/api-keys`,
      headers: admin,
      payload: { name: 'ats', scopes: ['triggers:read', 'webhooks:manage', ...more] },
    }),
  ).data.key as string
  return { orgId: org.id as string, key }
}

async function endpoint(key: string, body: object): Promise<any> {
  const response = await service.app.inject({ method: 'POST', url: '/api/v2/webhook-endpoints', headers: bearer(key), payload: body })
  assert.equal(response.statusCode, 201, response.body)
  return json(response).data
}

/** `count` task.completed events of the organization, each with its deliveries, written in one transaction. */
async function events(orgId: string, count: number): Promise<string[]> {
  const written = Array.from({ length: count }, (_, index) => ({
    orgId,
    event: {
      id: newId('event', now),
      type: 'task.completed' as const,
      timestamp: new Date(now).toISOString(),
      data: { task_id: newId('task', now), outcome: 'reached', ids: [{ source: 'ats', type: 'candidate', value: `C-${index}` }] },
    },
  }))
  await service.db.transaction((tx) => insertEvents(tx, written))
  return written.map(({ event }) => event.id)
}

async function deliveriesOf(key: string, eventId: string): Promise<any[]> {
  const response = await service.app.inject({ method: 'GET', url: `/api/v2/events/${eventId}`, headers: bearer(key) })
  assert.equal(response.statusCode, 200, response.body)
  return json(response).data.deliveries
}

async function until(condition: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

describe('max_in_flight', () => {
  test('is 4 unless set, 1 to 50 on create and update, returned when read, and documented', async () => {
    const { key } = await organization()
    assert.equal((await endpoint(key, { url: receiver.url })).max_in_flight, 4)
    const set = await endpoint(key, { url: receiver.url, max_in_flight: 10 })
    assert.equal(set.max_in_flight, 10)
    const read = json(await service.app.inject({ method: 'GET', url: `/api/v2/webhook-endpoints/${set.id}`, headers: bearer(key) })).data
    assert.equal(read.max_in_flight, 10)
    const changed = await service.app.inject({ method: 'PATCH', url: `/api/v2/webhook-endpoints/${set.id}`, headers: bearer(key), payload: { max_in_flight: 50 } })
    assert.equal(json(changed).data.max_in_flight, 50)
    const listed = json(await service.app.inject({ method: 'GET', url: '/api/v2/webhook-endpoints', headers: bearer(key) })).data
    assert.deepEqual(listed.map((item: any) => item.max_in_flight).sort((a: number, b: number) => a - b), [4, 50])

    const refusals: [unknown, string][] = [
      [0, 'greater_than_equal'],
      [51, 'less_than_equal'],
      [2.5, 'int_from_float'],
      ['many', 'int_parsing'],
    ]
    for (const [value, type] of refusals) {
      for (const [method, url] of [
        ['POST', '/api/v2/webhook-endpoints'],
        ['PATCH', `/api/v2/webhook-endpoints/${set.id}`],
      ] as const) {
        const response = await service.app.inject({ method, url, headers: bearer(key), payload: { url: receiver.url, max_in_flight: value } })
        assert.equal(response.statusCode, 422, `${method} ${value}`)
        assert.deepEqual(
          json(response).detail.map((entry: any) => [entry.type, entry.loc]),
          [[type, ['body', 'max_in_flight']]],
        )
      }
    }
    const unchanged = json(await service.app.inject({ method: 'GET', url: `/api/v2/webhook-endpoints/${set.id}`, headers: bearer(key) })).data
    assert.equal(unchanged.max_in_flight, 50)

    const openapi = json(await service.app.inject({ method: 'GET', url: '/openapi.json' }))
    assert.equal(openapi.paths['/api/v2/webhook-endpoints'].post.requestBody.content['application/json'].schema.$ref, '#/components/schemas/WebhookEndpointCreateRequest')
    const body = openapi.components.schemas.WebhookEndpointCreateRequest
    assert.deepEqual([body.properties.max_in_flight.minimum, body.properties.max_in_flight.maximum], [1, 50])
  })

  test('an endpoint never has more webhooks in flight than its max_in_flight, with two deliverers on one database', async () => {
    const other = await startReceiver()
    const peer = await service.peer()
    try {
      const { orgId, key } = await organization()
      await endpoint(key, { url: receiver.url, max_in_flight: 2 })
      await endpoint(key, { url: other.url, max_in_flight: 3 })
      for (const target of [receiver, other]) target.answerAll({ status: 200, delayMs: 5 })
      const deliverers = [deliverer(), peer.workers!.deliverer]
      for (const each of deliverers) each.start()
      try {
        // Written in waves while the endpoints are still busy with the last, each wave offered to the other deliverer first.
        for (let wave = 0; wave < 4; wave++) {
          await events(orgId, 15)
          deliverers.reverse()
          for (const each of deliverers) each.wake()
          await new Promise((resolve) => setTimeout(resolve, 20))
        }
        await until(() => receiver.received.length >= 60 && other.received.length >= 60, 20_000, 'every webhook')
      } finally {
        for (const each of deliverers) await each.stop()
      }
      assert.deepEqual([receiver.received.length, other.received.length], [60, 60])
      assert.deepEqual([receiver.peakInFlight, other.peakInFlight], [2, 3])
      const [row] = await service.db.query<{ deliveries: number; attempts: number; succeeded: number }>(
        `SELECT count(*)::int AS deliveries, sum(attempts)::int AS attempts, count(*) FILTER (WHERE status = 'succeeded')::int AS succeeded
         FROM deliveries WHERE event_id IN (SELECT id FROM events WHERE org_id = $1)`,
        [orgId],
      )
      assert.deepEqual(row, { deliveries: 120, attempts: 120, succeeded: 120 })
    } finally {
      await other.close()
    }
  })
})

describe('batches', () => {
  test('connections are kept alive: the receiver sees fewer connections than webhooks', async () => {
    const { orgId, key } = await organization()
    await endpoint(key, { url: receiver.url })
    await events(orgId, 40)
    await deliverer().runOnce()
    assert.equal(receiver.received.length, 40)
    assert.ok(receiver.connections <= 4, `${receiver.connections} connections`)
  })

  test('results recorded in batches give each delivery its exact attempt log', async () => {
    const { orgId, key } = await organization()
    await endpoint(key, { url: receiver.url })
    const ids = await events(orgId, 30)
    // Every third fails first (500, then 503 asking for 10 s), the others succeed at once.
    const first = ids.map((_, index) => (index % 3 === 0 ? 500 : index % 3 === 1 ? 503 : 200))
    receiver.answer(...first.map((status) => (status === 503 ? { status, headers: { 'retry-after': '10' } } : { status })))
    await deliverer().runOnce()
    const answered = new Map(receiver.received.map((request, index) => [request.headers['webhook-id'] as string, first[index]!]))
    assert.equal(answered.size, 30)
    now += 11_000
    await deliverer().runOnce()
    assert.equal(receiver.received.length, 50)
    for (const id of ids) {
      const [delivery] = await deliveriesOf(key, id)
      const codes = delivery.attempts.map((attempt: any) => [attempt.attempt, attempt.status_code])
      assert.deepEqual(codes, answered.get(id) === 200 ? [[1, 200]] : [[1, answered.get(id)], [2, 200]], id)
      assert.equal(delivery.status, 'succeeded')
    }
    // The attempts that settled them are on their rows: delivery_attempts holds the 20 after which one was due again.
    const [logged] = await service.db.query<{ attempts: number }>(
      'SELECT count(*)::int AS attempts FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id JOIN events e ON e.id = d.event_id WHERE e.org_id = $1',
      [orgId],
    )
    assert.equal(logged!.attempts, 20)
  })

  test('an endpoint changed while a deliverer holds it: a new URL is taken up, and once deleted it gets nothing more', async () => {
    const moved = await startReceiver()
    try {
      const { orgId, key } = await organization()
      const created = await endpoint(key, { url: receiver.url, max_in_flight: 1 })
      for (const target of [receiver, moved]) target.answerAll({ status: 200, delayMs: 20 })
      await events(orgId, 200)
      deliverer().start()
      try {
        await receiver.waitFor(3)
        const patched = await service.app.inject({ method: 'PATCH', url: `/api/v2/webhook-endpoints/${created.id}`, headers: bearer(key), payload: { url: moved.url } })
        assert.equal(patched.statusCode, 200)
        await moved.waitFor(1, 2000)
        const before = receiver.received.length
        await moved.waitFor(5, 2000)
        assert.equal(receiver.received.length, before, 'nothing more to the old URL once the new one has had one')
        assert.equal((await service.app.inject({ method: 'DELETE', url: `/api/v2/webhook-endpoints/${created.id}`, headers: bearer(key) })).statusCode, 204)
        // Taken up at the deliverer's next round, within the half second of its poll.
        await new Promise((resolve) => setTimeout(resolve, 1000))
        const after = moved.received.length
        await new Promise((resolve) => setTimeout(resolve, 500))
        assert.equal(moved.received.length, after)
      } finally {
        await deliverer().stop()
      }
      const [row] = await service.db.query<{ pending: number }>(`SELECT count(*)::int AS pending FROM deliveries WHERE endpoint_id = $1 AND status = 'pending'`, [created.id])
      assert.equal(row!.pending, 0)
    } finally {
      await moved.close()
    }
  })

  test('a stopping deliverer hands back what it had queued, due at once', async () => {
    const { orgId, key } = await organization()
    const created = await endpoint(key, { url: receiver.url, max_in_flight: 1 })
    await events(orgId, 5)
    receiver.answer('hang')
    deliverer().start()
    await receiver.waitFor(1)
    const stopped = deliverer().stop()
    receiver.release()
    await stopped
    assert.equal(receiver.received.length, 1)
    const rows = await service.db.query<{ status: string; locked_by: string | null; attempts: number }>(
      'SELECT status, locked_by, attempts FROM deliveries WHERE endpoint_id = $1 ORDER BY id',
      [created.id],
    )
    assert.deepEqual(
      rows.map((row) => [row.status, row.locked_by, row.attempts]),
      [['succeeded', null, 1], ...Array.from({ length: 4 }, () => ['pending', null, 0])],
    )
    await deliverer().runOnce()
    assert.equal(receiver.received.length, 5)
  })

  test('what a deliverer that died had claimed is sent by another once its leases run out, and logged once', async () => {
    const { orgId, key } = await organization()
    await endpoint(key, { url: receiver.url })
    const ids = await events(orgId, 3)
    // Claimed as a deliverer does, by one that then died without a word.
    const dead = { worker: 'worker_dead', claim: 'worker_dead.1' }
    const claimed = await claimDeliveries(service.db, { ...dead, now, lockedUntil: now + 60_000, full: [], refills: [], room: 200, quota: 128 })
    assert.equal(claimed.deliveries.length, 3)
    await deliverer().runOnce()
    assert.equal(receiver.received.length, 0, 'its claims still run')
    now += 60_000
    await deliverer().runOnce()
    assert.deepEqual(receiver.received.map((request) => request.headers['webhook-id']).sort(), [...ids].sort())
    // The dead claim can no longer record over the one that took it over.
    const late = await recordAttempts(
      service.db,
      claimed.deliveries.map((delivery) => ({
        delivery,
        attempt: { at: now, statusCode: 500, latencyMs: 1, error: null },
        next: { status: 'pending' as const, retryAt: now + 5_000 },
      })),
    )
    assert.equal(late.size, 0)
    for (const id of ids) {
      const [delivery] = await deliveriesOf(key, id)
      assert.equal(delivery.status, 'succeeded')
      assert.deepEqual(delivery.attempts.map((attempt: any) => attempt.status_code), [200])
    }
    await deliverer().runOnce()
    assert.equal(receiver.received.length, 3)
  })
})

describe('hand-off', () => {
  const ALWAYS_OPEN = { timezone: 'contact', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '00:00', end: '24:00' }] }

  /** An organization whose calls, on the simulator, end as they start, with an endpoint to the receiver. */
  async function callingOrganization(endpointBody: object = {}): Promise<{ orgId: string; key: string; endpointId: string }> {
    const { orgId, key } = await organization(['triggers:write'])
    await service.app.inject({
      method: 'POST',
      url: `/admin/v1/organizations/${orgId}/campaigns`,
      headers: admin,
      payload: { routing_key: 'screening', channel: 'voice', schedule: ALWAYS_OPEN, provider_config: { duration_ms: 0 } },
    })
    const created = await endpoint(key, { url: receiver.url, ...endpointBody })
    return { orgId, key, endpointId: created.id }
  }

  /** A trigger, then a dispatcher round: its call starts and ends, and its two events are written with their deliveries. */
  async function called(key: string, value: string): Promise<void> {
    const response = await service.app.inject({
      method: 'POST',
      url: '/api/v2/triggers',
      headers: bearer(key),
      payload: { campaign: 'screening', ids: [{ source: 'crm', type: 'lead', value }], contact: { phone: '+442079460958' }, test_mode: true },
    })
    assert.equal(response.statusCode, 201, response.body)
    await service.app.workers!.dispatcher.runOnce()
  }

  async function deliveryRows(endpointId: string) {
    return service.db.query<{ status: string; attempts: number; locked_by: string | null }>(
      'SELECT status, attempts, locked_by FROM deliveries WHERE endpoint_id = $1 ORDER BY id',
      [endpointId],
    )
  }

  test('the deliveries a settlement writes to an endpoint where its deliverer has a claim running are claimed as written and sent with no claim round', async () => {
    const { key, endpointId } = await callingOrganization({ max_in_flight: 1 })
    await called(key, 'first')
    // Written due: no deliverer held the endpoint. One round claims them, and the first send hangs.
    assert.deepEqual((await deliveryRows(endpointId)).map((row) => row.locked_by), [null, null])
    receiver.answer('hang')
    const round = deliverer().runOnce()
    await receiver.waitFor(1)
    const [running] = await deliveryRows(endpointId)
    const worker = running!.locked_by!.split('.')[0]
    await called(key, 'second')
    const handed = (await deliveryRows(endpointId)).slice(2)
    assert.equal(handed.length, 2)
    // No round runs now (the deliverer's loop is not started): only the settlement can have claimed them, for this deliverer.
    for (const row of handed) assert.ok(row.locked_by?.startsWith(`${worker}.`) && row.locked_by !== running!.locked_by, `claimed by ${row.locked_by}`)
    receiver.release()
    await round
    assert.equal(receiver.received.length, 4)
    assert.equal(receiver.peakInFlight, 1)
    assert.deepEqual(
      (await deliveryRows(endpointId)).map((row) => [row.status, row.attempts, row.locked_by]),
      Array.from({ length: 4 }, () => ['succeeded', 1, null]),
    )
  })

  test('a hand-off claims only where the claims it names still run for its own worker: not where another worker holds the endpoint', async () => {
    const { orgId, key } = await organization()
    const created = await endpoint(key, { url: receiver.url })
    await events(orgId, 2)
    const other = { worker: 'worker_other', claim: 'worker_other.1' }
    const held = await claimDeliveries(service.db, { ...other, now, lockedUntil: now + 60_000, full: [], refills: [], room: 200, quota: 128 })
    assert.equal(held.deliveries.length, 2)
    const claimed = held.deliveries.map((delivery) => delivery.id)
    const handOff = (worker: string) => ({ worker, claim: `${worker}.2`, now, lockedUntil: now + 60_000, endpoints: [{ id: created.id as string, claimed }] })
    const event = () => ({
      orgId,
      event: { id: newId('event', now), type: 'task.completed' as const, timestamp: new Date(now).toISOString(), data: { outcome: 'reached' } },
    })
    const elsewhere = await service.db.transaction((tx) => insertEvents(tx, [event()], handOff('worker_me')))
    assert.deepEqual([elsewhere.claimed.length, elsewhere.due], [0, 1])
    const holder = await service.db.transaction((tx) => insertEvents(tx, [event()], handOff(other.worker)))
    assert.deepEqual([holder.claimed.map((delivery) => delivery.claim), holder.due], [['worker_other.2'], 0])
    // Once they are recorded, those claims no longer run: nothing is claimed for their worker either.
    await recordAttempts(
      service.db,
      held.deliveries.map((delivery) => ({ delivery, attempt: { at: now, statusCode: 200, latencyMs: 1, error: null }, next: { status: 'succeeded' as const } })),
    )
    const recorded = await service.db.transaction((tx) => insertEvents(tx, [event()], handOff(other.worker)))
    assert.deepEqual([recorded.claimed.length, recorded.due], [0, 1])
    const rows = await service.db.query<{ locked_by: string | null }>('SELECT locked_by FROM deliveries WHERE endpoint_id = $1 ORDER BY id', [created.id])
    assert.deepEqual(
      rows.map((row) => row.locked_by),
      [null, null, null, 'worker_other.2', null],
    )
  })
})

/** An organization with one endpoint, as rows written before the migrations tested below. */
const AN_ENDPOINT = `
  INSERT INTO organizations (id, name, created_at) VALUES ('org_1', 'Acme', now());
  INSERT INTO webhook_endpoints (id, org_id, url, events, enabled, secret, created_at, updated_at)
  VALUES ('whe_1', 'org_1', 'https://hooks.example.com/in', '{task.completed}', true, 'whsec_x', now(), now());
`

test('012: endpoints registered before keep the cap every endpoint had, 4', async () => {
  const database = await databaseBeforeMigration(12)
  try {
    const { db } = database
    await db.exec(AN_ENDPOINT)
    await database.upgrade()
    const rows = await db.query('SELECT id, max_in_flight FROM webhook_endpoints')
    assert.deepEqual(rows, [{ id: 'whe_1', max_in_flight: 4 }])
  } finally {
    await database.drop()
  }
})

test('017: a delivery settled before keeps the attempts it logged, each listed once', async () => {
  const database = await databaseBeforeMigration(17)
  try {
    const { db } = database
    await db.exec(AN_ENDPOINT)
    await db.exec(`
      INSERT INTO events (id, org_id, type, payload, created_at) VALUES ('evt_1', 'org_1', 'task.completed', '{}', now());
      INSERT INTO deliveries (event_id, endpoint_id, org_id, status, attempts, due_at, created_at, completed_at)
      VALUES ('evt_1', 'whe_1', 'org_1', 'succeeded', 2, '2026-01-01T00:00:05Z', '2026-01-01T00:00:00Z', '2026-01-01T00:00:05Z');
      INSERT INTO delivery_attempts (delivery_id, attempt, attempted_at, status_code, latency_ms, error)
      SELECT id, 1, timestamptz '2026-01-01T00:00:00Z', 500, 12, NULL FROM deliveries UNION ALL
      SELECT id, 2, timestamptz '2026-01-01T00:00:05Z', 200, 8, NULL FROM deliveries;
    `)
    await database.upgrade()
    const [delivery] = await storedDeliveriesOf(db, 'evt_1')
    assert.deepEqual(
      delivery!.attempts.map(({ attempt, statusCode, latencyMs }) => [attempt, statusCode, latencyMs]),
      [
        [1, 500, 12],
        [2, 200, 8],
      ],
    )
  } finally {
    await database.drop()
  }
})
