/**
 * What a receiver answered, kept with each attempt (migration 050): its
 * headers and the opening of its body, bounded as webhooks/httpPoster.ts
 * reads them (twenty headers of at most 256 characters, 1 KiB of body, a
 * character the bound cuts left out, NUL shown as the replacement
 * character), for the attempt after which the delivery is retried
 * (delivery_attempts) and for the one that settles it (the delivery's row);
 * none for an attempt that got no answer; gone when the person the events
 * are about is erased (an answer may echo what an event said). Read through
 * the events API, from a real HTTP server that answers as each test says.
 */
import assert from 'node:assert/strict'
import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, test } from 'node:test'
import { newId } from '../src/domain/ids.ts'
import { insertEvents } from '../src/store/events.ts'
import { acceptedTrigger, bearer, freePort, json, OPERATOR_TOKEN, seedOrganization, startService, type TestService } from './support/service.ts'

const admin = bearer(OPERATOR_TOKEN)

let service: TestService
let now = Date.now()
/** How the server answers the next requests, in order. */
const answers: ((response: ServerResponse) => void)[] = []
let serverUrl: string
const server = createServer((request, response) => {
  request.resume()
  request.on('end', () => (answers.shift() ?? ((res: ServerResponse) => res.writeHead(200).end()))(response))
})

before(async () => {
  service = await startService({ now: () => now, allowPrivateWebhookUrls: true })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  serverUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`
})
after(async () => {
  await service.close()
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
})

/** An organization with an endpoint at `url`, and the key to read its events with. */
async function organization(url: string): Promise<{ orgId: string; key: string }> {
  const org = json(await service.app.inject({ method: 'POST', url: '/admin/v1/organizations', headers: admin, payload: { name: 'Answers' } })).data
  const key = json(
    await service.app.inject({ method: 'POST', url: `/admin/v1/organizations/${org.id}/api-keys`, headers: admin, payload: { name: 'ats', scopes: ['triggers:read', 'webhooks:manage'] } }),
  ).data.key as string
  const created = await service.app.inject({ method: 'POST', url: '/api/v2/webhook-endpoints', headers: bearer(key), payload: { url, events: ['task.completed'] } })
  assert.equal(created.statusCode, 201, created.body)
  return { orgId: org.id as string, key }
}

/** A task.completed event of the organization, with its delivery, written as the outbox writes it. */
async function completion(orgId: string): Promise<string> {
  const event = { id: newId('event', now), type: 'task.completed' as const, timestamp: new Date(now).toISOString(), data: { task_id: newId('task', now), outcome: 'reached' } }
  await service.db.transaction((tx) => insertEvents(tx, [{ orgId, event }]))
  return event.id
}

async function attemptsOf(key: string, eventId: string): Promise<any[]> {
  const response = await service.app.inject({ method: 'GET', url: `/api/v2/events/${eventId}`, headers: bearer(key) })
  assert.equal(response.statusCode, 200, response.body)
  return json(response).data.deliveries[0].attempts
}

test("a retried attempt's answer and the settling one's are both kept: headers, the body's first KiB, and whether there was more", async () => {
  const { orgId, key } = await organization(serverUrl)
  const eventId = await completion(orgId)
  // 'é' is two bytes, the second of them the 1,025th: the bound cuts it, and it is left out rather than shown half.
  const long = `{"error":"warming up","padding":"${'x'.repeat(1024 - 34)}é and more"}`
  answers.push(
    (response) => response.writeHead(503, { 'content-type': 'application/json', 'x-receiver': 'flaky', 'x-long': 'v'.repeat(300) }).end(long),
    (response) => response.writeHead(200, { 'content-type': 'text/plain' }).end('ok\u0000done'),
  )
  await service.app.workers!.deliverer.runOnce()
  now += 10 * 60_000
  await service.app.workers!.deliverer.runOnce()
  const [refused, taken] = await attemptsOf(key, eventId)
  assert.equal(refused.status_code, 503)
  assert.equal(refused.response.headers['x-receiver'], 'flaky')
  assert.equal(refused.response.headers['content-type'], 'application/json')
  assert.equal(refused.response.headers['x-long'], 'v'.repeat(256), 'a header value is cut at 256 characters')
  assert.equal(refused.response.body, long.slice(0, 1023), "1 KiB of body, but the character it cuts")
  assert.equal(refused.response.body_truncated, true)
  assert.equal(taken.status_code, 200)
  assert.deepEqual(
    { type: taken.response.headers['content-type'], body: taken.response.body, truncated: taken.response.body_truncated },
    { type: 'text/plain', body: 'ok\uFFFDdone', truncated: false },
    'NUL, which PostgreSQL cannot keep, is shown as the replacement character',
  )
})

test('an answer of many headers keeps the first twenty; an attempt that got no answer keeps none', async () => {
  const { orgId, key } = await organization(serverUrl)
  const eventId = await completion(orgId)
  const many = Object.fromEntries(Array.from({ length: 30 }, (_, n) => [`x-header-${String(n).padStart(2, '0')}`, String(n)]))
  answers.push((response) => response.writeHead(500, many).end())
  await service.app.workers!.deliverer.runOnce()
  const [answered] = await attemptsOf(key, eventId)
  assert.equal(Object.keys(answered.response.headers).length, 20)
  assert.equal(answered.response.headers['x-header-00'], '0')
  assert.equal(answered.response.body, '')

  const nobody = await organization(`http://127.0.0.1:${await freePort()}/hooks`)
  const unanswered = await completion(nobody.orgId)
  await service.app.workers!.deliverer.runOnce()
  const [refused] = await attemptsOf(nobody.key, unanswered)
  assert.equal(refused.status_code, null)
  assert.match(refused.error, /network/)
  assert.equal(refused.response, null)
})

test("erasing the person the events are about erases what the receiver answered to them, retried attempts' and settling ones'", async () => {
  // A receiver of its own, whose answers echo the person: refused once, then taken.
  const said = '{"refused": "Ada, +442079460958"}'
  let requests = 0
  const echoing = createServer((request, response) => {
    request.resume()
    request.on('end', () => response.writeHead(++requests === 1 ? 500 : 200, { 'content-type': 'application/json' }).end(said))
  })
  await new Promise<void>((resolve) => echoing.listen(0, '127.0.0.1', resolve))
  try {
    const org = await seedOrganization(service.app, {
      scopes: ['triggers:write', 'triggers:read', 'webhooks:manage', 'contacts:erase'],
      schedule: { timezone: 'contact', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '00:00', end: '24:00' }] },
    })
    const url = `http://127.0.0.1:${(echoing.address() as AddressInfo).port}/hooks`
    const created = await service.app.inject({ method: 'POST', url: '/api/v2/webhook-endpoints', headers: bearer(org.key), payload: { url, events: ['task.completed'] } })
    assert.equal(created.statusCode, 201, created.body)
    const trigger = await acceptedTrigger(service.app, org.key, {
      campaign: org.routingKey,
      ids: [{ source: 'ats', type: 'candidate', value: 'C-echo' }],
      contact: { phone: '+442079460958', first_name: 'Ada' },
      test_mode: true,
    })
    const answersToCompletion = async () => {
      const events = json(await service.app.inject({ method: 'GET', url: `/api/v2/tasks/${trigger.task_id}/events`, headers: bearer(org.key) })).data
      const completed = events.find((event: { type: string }) => event.type === 'task.completed')
      return (completed?.deliveries[0]?.attempts ?? []).map((attempt: { status_code: number; response: { body: string } | null }) => [attempt.status_code, attempt.response?.body ?? null])
    }
    for (let round = 0; round < 5 && (await answersToCompletion()).length < 2; round++) {
      await service.app.workers!.dispatcher.runOnce()
      now += 60_000
      await service.app.workers!.dispatcher.runOnce()
      await service.app.workers!.deliverer.runOnce()
    }
    assert.deepEqual(await answersToCompletion(), [[500, said], [200, said]])

    const erased = await service.app.inject({ method: 'POST', url: '/api/v2/contacts/erase', headers: bearer(org.key), payload: { phone: '+442079460958' } })
    assert.equal(erased.statusCode, 200, erased.body)
    assert.deepEqual(await answersToCompletion(), [[500, null], [200, null]])
  } finally {
    echoing.closeAllConnections()
    await new Promise((resolve) => echoing.close(resolve))
  }
})
