/**
 * Opt-out: suppressed numbers are never dialled, whoever triggers them; a
 * WhatsApp STOP or a provider's opt-out suppresses the number; the task
 * still closes by the client's own ids.
 */
import assert from 'node:assert/strict'
import { createHmac } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { createChannels } from '../src/channels/index.ts'
import { asksToStop } from '../src/domain/optOut.ts'
import { type Receiver, startReceiver } from './support/receiver.ts'
import { bearer, json, OPERATOR_TOKEN, startService, type TestService } from './support/service.ts'

const ALWAYS_OPEN = { timezone: 'contact', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '00:00', end: '24:00' }] }
const APP_SECRET = 'opt-out-test-app-secret'
const PHONE_NUMBER_ID = '5550001112'
const admin = bearer(OPERATOR_TOKEN)

let service: TestService
let receiver: Receiver
let orgId: string
let key: string
let now = Date.now()

before(async () => {
  const channels = createChannels(
    { publicBaseUrl: 'http://service.test', twilioApiBaseUrl: 'http://127.0.0.1:9', whatsappApiBaseUrl: 'http://127.0.0.1:9' },
    // The Graph API is unreachable here: each message's start stays uncertain, its conversation open.
    (name) => ({ WHATSAPP_APP_SECRET: APP_SECRET, WHATSAPP_ACCESS_TOKEN: 'opt-out-test-token' })[name],
  )
  service = await startService({ now: () => now, channels, allowPrivateWebhookUrls: true })
  receiver = await startReceiver()
  orgId = json(await service.app.inject({ method: 'POST', url: '/admin/v1/organizations', headers: admin, payload: { name: 'Clinic' } })).data.id
  key = json(
    await service.app.inject({
      method: 'POST',
      url: `/admin/v1/organizations/${orgId}/api-keys`,
      headers: admin,
      payload: { name: 'scheduler', scopes: ['triggers:write', 'triggers:read', 'suppressions:manage'] },
    }),
  ).data.key
  for (const campaign of [
    { routing_key: 'reminder', channel: 'voice', schedule: ALWAYS_OPEN },
    {
      routing_key: 'reminder',
      channel: 'whatsapp',
      schedule: ALWAYS_OPEN,
      provider: 'whatsapp_cloud',
      provider_config: { phone_number_id: PHONE_NUMBER_ID, template: { name: 'reminder' } },
      // The clock stands still here: at its provider's pace, a second start in one instant could wait for its sender (test/pacing.test.ts).
      pacing: { per_second: 1_000_000 },
    },
  ]) {
    const created = await service.app.inject({ method: 'POST', url: `/admin/v1/organizations/${orgId}/campaigns`, headers: admin, payload: campaign })
    assert.equal(created.statusCode, 201, created.body)
  }
  await service.app.inject({ method: 'POST', url: `/admin/v1/organizations/${orgId}/webhook-endpoints`, headers: admin, payload: { url: receiver.url, events: ['task.completed'] } })
})
after(async () => {
  await service.close()
  await receiver.close()
})

async function trigger(phone: string, channel = 'voice') {
  const response = await service.app.inject({
    method: 'POST',
    url: '/api/v2/triggers',
    headers: { ...bearer(key), 'content-type': 'application/json' },
    payload: { campaign: 'reminder', channel, ids: [{ source: 'EHR', type: 'Patient', value: `P-${phone}` }], contact: { phone } },
  })
  assert.equal(response.statusCode, 201, response.body)
  return json(response).data as { id: string; task_id: string }
}

const task = async (id: string) => json(await service.app.inject({ method: 'GET', url: `/api/v2/tasks/${id}`, headers: bearer(key) })).data

const suppression = (phone: string) =>
  service.app.inject({ method: 'GET', url: `/api/v2/suppressions/${encodeURIComponent(phone)}`, headers: bearer(key) })

function whatsappMessage(message: object) {
  const body = JSON.stringify({
    object: 'whatsapp_business_account',
    entry: [{ id: '1', changes: [{ field: 'messages', value: { messaging_product: 'whatsapp', metadata: { display_phone_number: '1', phone_number_id: PHONE_NUMBER_ID }, ...message } }] }],
  })
  return service.app.inject({
    method: 'POST',
    url: '/providers/whatsapp/webhook',
    headers: { 'content-type': 'application/json', 'x-hub-signature-256': `sha256=${createHmac('sha256', APP_SECRET).update(body).digest('hex')}` },
    payload: body,
  })
}

describe('the suppression list', () => {
  test('numbers are added in any written form, listed, looked up and lifted; the scope is required', async () => {
    const added = await service.app.inject({ method: 'POST', url: '/api/v2/suppressions', headers: bearer(key), payload: { phone: '+44 (0)20 7946 0001' } })
    assert.equal(added.statusCode, 201)
    assert.deepEqual({ ...json(added).data, created_at: undefined }, { phone: '+442079460001', reason: 'manual', created_at: undefined })
    assert.equal((await service.app.inject({ method: 'POST', url: '/api/v2/suppressions', headers: bearer(key), payload: { phone: '+442079460001' } })).statusCode, 201)
    assert.equal((await suppression('+442079460001')).statusCode, 200)
    const listed = json(await service.app.inject({ method: 'GET', url: '/api/v2/suppressions', headers: bearer(key) })).data
    assert.ok(listed.some((entry: any) => entry.phone === '+442079460001'))
    const viaAdmin = await service.app.inject({ method: 'GET', url: `/admin/v1/organizations/${orgId}/suppressions/%2B442079460001`, headers: admin })
    assert.equal(viaAdmin.statusCode, 200)
    assert.equal((await service.app.inject({ method: 'DELETE', url: '/api/v2/suppressions/%2B442079460001', headers: bearer(key) })).statusCode, 204)
    assert.equal((await suppression('+442079460001')).statusCode, 404)

    const invalid = await service.app.inject({ method: 'POST', url: '/api/v2/suppressions', headers: bearer(key), payload: { phone: '020 7946 0001' } })
    assert.equal(invalid.statusCode, 422)
    assert.deepEqual(json(invalid).detail[0].loc, ['body', 'phone'])
    const withoutScope = json(await service.app.inject({ method: 'POST', url: `/admin/v1/organizations/${orgId}/api-keys`, headers: admin, payload: { name: 'x' } })).data.key
    assert.equal((await service.app.inject({ method: 'GET', url: '/api/v2/suppressions', headers: bearer(withoutScope) })).statusCode, 403)
  })

  test('a trigger for a suppressed number is accepted, never dials, and completes opted_out with its ids in the webhook', async () => {
    await service.app.inject({ method: 'POST', url: '/api/v2/suppressions', headers: bearer(key), payload: { phone: '+442079460002' } })
    const created = await trigger('+44 20 7946 0002')
    await service.app.workers!.dispatcher.runOnce()
    const state = await task(created.task_id)
    assert.equal(state.status, 'completed')
    assert.equal(state.outcome, 'opted_out')
    assert.equal(state.interactions.length, 0)
    await service.app.workers!.deliverer.runOnce()
    const event = receiver.received.map((request) => JSON.parse(request.body)).find((candidate) => candidate.data.task_id === created.task_id)
    assert.equal(event.data.outcome, 'opted_out')
    assert.deepEqual(event.data.ids, [{ source: 'ehr', type: 'patient', value: 'P-+44 20 7946 0002' }])
  })
})

describe('opting out by reply or by the provider', () => {
  test('a WhatsApp STOP closes the conversation as opted_out and suppresses the number for every channel', async () => {
    const created = await trigger('+49 30 901821', 'whatsapp')
    await service.app.workers!.dispatcher.runOnce()
    const running = await task(created.task_id)
    assert.equal(running.status, 'in_progress')
    const stop = await whatsappMessage({ messages: [{ from: '4930901821', id: 'wamid.stop-1', timestamp: String(Math.floor(now / 1000)), type: 'text', text: { body: '  Stop! ' } }] })
    assert.equal(stop.statusCode, 200)
    const done = await task(created.task_id)
    assert.equal(done.outcome, 'opted_out')
    assert.equal(json(await suppression('+4930901821')).data.reason, 'reply')
    // The person opted out: the organization cannot lift it, only the operator.
    assert.equal((await service.app.inject({ method: 'DELETE', url: '/api/v2/suppressions/%2B4930901821', headers: bearer(key) })).statusCode, 409)
    const later = await trigger('+49 30 901821', 'voice')
    await service.app.workers!.dispatcher.runOnce()
    assert.equal((await task(later.task_id)).outcome, 'opted_out')
  })

  test('a message that merely contains the word is not an opt-out', async () => {
    const created = await trigger('+49 30 901822', 'whatsapp')
    await service.app.workers!.dispatcher.runOnce()
    await whatsappMessage({ messages: [{ from: '4930901822', id: 'wamid.nostop-1', timestamp: String(Math.floor(now / 1000)), type: 'text', text: { body: "Please don't stop, see you Monday" } }] })
    assert.equal((await task(created.task_id)).outcome, 'reached')
    assert.equal((await suppression('+4930901822')).statusCode, 404)
  })

  test("WhatsApp's own opt-out (error 131050) suppresses the number", async () => {
    const created = await trigger('+49 30 901823', 'whatsapp')
    await service.app.workers!.dispatcher.runOnce()
    // The start was never confirmed (no Graph API here); a status for it would name its wamid, so record one.
    const [interaction] = (await task(created.task_id)).interactions
    await service.db.query(`UPDATE interactions SET status = 'active', provider_ref = 'wamid.optout-1' WHERE id = $1`, [interaction.id])
    const failed = await whatsappMessage({
      statuses: [{ id: 'wamid.optout-1', status: 'failed', timestamp: String(Math.floor(now / 1000)), recipient_id: '4930901823', errors: [{ code: 131050, title: 'User has stopped marketing messages' }] }],
    })
    assert.equal(failed.statusCode, 200)
    assert.equal((await task(created.task_id)).outcome, 'opted_out')
    assert.equal(json(await suppression('+4930901823')).data.reason, 'provider')
  })
})

test('the words that opt out, and those that do not', () => {
  for (const text of ['STOP', 'stop.', ' Stop! ', 'UNSUBSCRIBE', 'Baja', 'darme de baja', 'Stopp', 'arrêt', 'Désabonner', 'afmelden', 'Sair', 'basta!!', 'opt out', '🛑 stop 🛑', 'Stop please', 'please stop', 'STOP STOP', 'ＳＴＯＰ', 'stop\u200b']) {
    assert.equal(asksToStop(text), true, text)
  }
  for (const text of [undefined, '', 'stop by at 5', "don't stop", 'cancel', 'Cancelar', 'yes', 'ok', 'stopped']) {
    assert.equal(asksToStop(text), false, String(text))
  }
})
