/**
 * What `cli listen` tells the service of its forwards (POST
 * /api/v2/events/{id}/listen-forwards, with the key it reads events with):
 * each try listed on the event and on its task's events, its last ten kept;
 * refused for another organization's event, a body out of bounds, a key
 * that may not read; not an operator's route. And listen reports each try it
 * makes, with the local receiver's answer, over HTTP to the service.
 */
import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import { after, before, test } from 'node:test'
import { LocalForwarder } from '../src/webhooks/localForwarder.ts'
import { newWebhookSecret } from '../src/webhooks/signing.ts'
import { startReceiver } from './support/receiver.ts'
import { acceptedTrigger, bearer, json, OPERATOR_TOKEN, seedOrganization, startService, type TestService } from './support/service.ts'

const ALWAYS_OPEN = { timezone: 'contact', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '00:00', end: '24:00' }] }

let service: TestService
let baseUrl: string
let now = Date.now()

before(async () => {
  service = await startService({ now: () => now })
  await service.app.listen({ port: 0, host: '127.0.0.1' })
  baseUrl = `http://127.0.0.1:${(service.app.server.address() as AddressInfo).port}`
})
after(() => service.close())

/** A trigger taken through a simulated call to its end: its interaction.finalized and task.completed are recorded. */
async function completedTask(key: string, routingKey: string): Promise<string> {
  const created = await acceptedTrigger(service.app, key, { campaign: routingKey, contact: { phone: '+442079460958' }, test_mode: true })
  await service.app.workers!.dispatcher.runOnce()
  now += 60_000
  await service.app.workers!.dispatcher.runOnce()
  return created.task_id
}

const taskEvents = async (key: string, taskId: string) => json(await service.app.inject({ method: 'GET', url: `/api/v2/tasks/${taskId}/events`, headers: bearer(key) })).data

const report = (key: string, eventId: string, payload: object) =>
  service.app.inject({ method: 'POST', url: `/api/v2/events/${eventId}/listen-forwards`, headers: bearer(key), payload })

test('listen reports each try to the service: a refused one and the one taken are listed on the event, with their answers', async () => {
  const org = await seedOrganization(service.app, { schedule: ALWAYS_OPEN })
  const receiver = await startReceiver()
  const listen = new LocalForwarder({
    baseUrl,
    apiKey: org.key,
    forwardTo: receiver.url,
    secret: newWebhookSecret(),
    types: ['task.completed'],
    print: () => {},
    sleep: async () => {},
  })
  try {
    await listen.start()
    const taskId = await completedTask(org.key, org.routingKey)
    receiver.answer({ status: 503 })
    await listen.forwardNew()
    const [finalized, completed] = await taskEvents(org.key, taskId)
    assert.deepEqual(finalized.listen_forwards, [], 'not of a type listen was asked to forward')
    assert.deepEqual(
      completed.listen_forwards.map((forward: any) => [forward.status_code, forward.error]),
      [
        [503, null],
        [200, null],
      ],
    )
    for (const forward of completed.listen_forwards) {
      assert.ok(Number.isInteger(forward.latency_ms) && forward.latency_ms >= 0)
      assert.ok(Math.abs(Date.parse(forward.at) - Date.now()) < 60_000, forward.at)
    }
    const one = json(await service.app.inject({ method: 'GET', url: `/api/v2/events/${completed.id}`, headers: bearer(org.key) })).data
    assert.deepEqual(one.listen_forwards, completed.listen_forwards)
    assert.deepEqual(completed.deliveries, [], 'no endpoint: the service delivered nothing itself')
  } finally {
    await listen.close()
    await receiver.close()
  }
})

test("an event keeps listen's ten last tries; another organization's event, a bad report and a key that may not read are refused", async () => {
  const org = await seedOrganization(service.app, { schedule: ALWAYS_OPEN })
  const taskId = await completedTask(org.key, org.routingKey)
  const [event] = await taskEvents(org.key, taskId)
  for (let n = 0; n < 12; n++) {
    const at = new Date(Date.UTC(2026, 11, 6, 9, 0, n, 250)).toISOString()
    const answered = await report(org.key, event.id, n % 3 === 0 ? { at, latency_ms: n, error: 'connect ECONNREFUSED' } : { at, status_code: 200, latency_ms: n })
    assert.equal(answered.statusCode, 204, answered.body)
  }
  const [listed] = await taskEvents(org.key, taskId)
  assert.deepEqual(
    listed.listen_forwards.map((forward: any) => forward.latency_ms),
    [2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
    'the newest ten, oldest first',
  )
  assert.deepEqual(listed.listen_forwards[1], { at: '2026-12-06T09:00:03.250Z', status_code: null, latency_ms: 3, error: 'connect ECONNREFUSED' })

  const valid = { at: new Date().toISOString(), status_code: 200, latency_ms: 4 }
  const other = await seedOrganization(service.app)
  assert.equal((await report(other.key, event.id, valid)).statusCode, 404)
  assert.equal((await report(org.key, 'evt_nothing', valid)).statusCode, 404)
  for (const bad of [{ ...valid, status_code: 99 }, { ...valid, latency_ms: -1 }, { ...valid, at: 'yesterday' }, { ...valid, error: 'e'.repeat(501) }]) {
    assert.equal((await report(org.key, event.id, bad)).statusCode, 422, JSON.stringify(bad))
  }
  const admin = bearer(OPERATOR_TOKEN)
  const writer = json(
    await service.app.inject({ method: 'POST', url: `/admin/v1/organizations/${org.orgId}/api-keys`, headers: admin, payload: { name: 'writer', scopes: ['triggers:write'] } }),
  ).data.key
  assert.equal((await report(writer, event.id, valid)).statusCode, 403)
  const asOperator = await service.app.inject({ method: 'POST', url: `/admin/v1/organizations/${org.orgId}/events/${event.id}/listen-forwards`, headers: admin, payload: valid })
  assert.equal(asOperator.statusCode, 404, 'listen runs with the organization key: the operator reports nothing')
  const [unchanged] = await taskEvents(org.key, taskId)
  assert.equal(unchanged.listen_forwards.length, 10)
})
