/**
 * WhatsApp then voice in one task (issue 36, item 4), through the whole
 * service on local fakes of the WhatsApp Cloud API and Twilio, on an
 * injected clock: a task whose message gets no reply in time places a call
 * in the voice campaign's window, a number not on WhatsApp (131026) is
 * called at once, an answered message does not fall back, a task falls back
 * once whatever comes late, and task.completed lists the steps that ran.
 */
import assert from 'node:assert/strict'
import { createHmac } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { createChannels } from '../src/channels/index.ts'
import { type FakeTwilio, startFakeTwilio } from './fakes/twilio.ts'
import { type FakeWhatsAppCloud, startFakeWhatsAppCloud } from './fakes/whatsappCloud.ts'
import { eventsOfTask } from './support/events.ts'
import { bearer, freePort, json, OPERATOR_TOKEN, seedOrganization, startService, taskOf, type TestService } from './support/service.ts'

const ACCOUNT_SID = `AC${'fedcba9876543210'.repeat(2)}`
const SECRETS: Record<string, string> = {
  TWILIO_AUTH_TOKEN: 'twilio-auth-token-for-fallback-tests',
  WHATSAPP_ACCESS_TOKEN: 'whatsapp-access-token-for-fallback-tests',
  WHATSAPP_APP_SECRET: 'whatsapp-app-secret-for-fallback-tests',
}
const PHONE_NUMBER_ID = '106540352249999'
const EVERY_DAY = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun']
/** Messages 09:00-20:00, calls 14:00-18:00 on weekdays, both in the contact's zone (London: UTC+1 in June). */
const MESSAGE_HOURS = { timezone: 'contact', windows: [{ days: EVERY_DAY, start: '09:00', end: '20:00' }] }
const CALL_HOURS = { timezone: 'contact', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri'], start: '14:00', end: '18:00' }] }
// Monday 2026-06-01, 10:00 in London.
const MONDAY_10_LONDON = Date.parse('2026-06-01T09:00:00.000Z')
const MINUTE = 60_000

let service: TestService
let twilio: FakeTwilio
let whatsapp: FakeWhatsAppCloud
let org: Awaited<ReturnType<typeof seedOrganization>>
let baseUrl: string
let now = MONDAY_10_LONDON
let routingKeys = 0
let phones = 0

before(async () => {
  twilio = await startFakeTwilio({ accounts: { [ACCOUNT_SID]: SECRETS.TWILIO_AUTH_TOKEN! } })
  whatsapp = await startFakeWhatsAppCloud({
    accessToken: SECRETS.WHATSAPP_ACCESS_TOKEN!,
    appSecret: SECRETS.WHATSAPP_APP_SECRET!,
    phoneNumberIds: [PHONE_NUMBER_ID],
    templates: { appointment_reminder: { languages: ['en'], bodyParameters: 1 } },
  })
  const port = await freePort()
  baseUrl = `http://127.0.0.1:${port}`
  const channels = createChannels({ publicBaseUrl: baseUrl, twilioApiBaseUrl: twilio.url, whatsappApiBaseUrl: whatsapp.url }, (name) => SECRETS[name])
  service = await startService({ now: () => now, channels })
  await service.app.listen({ port, host: '127.0.0.1' })
  whatsapp.setWebhookUrl(`${baseUrl}/providers/whatsapp/webhook`)
  org = await seedOrganization(service.app)
})
after(async () => {
  await service.close()
  await twilio.close()
  await whatsapp.close()
})

async function postCampaign(payload: Record<string, unknown>) {
  return service.app.inject({ method: 'POST', url: `/admin/v1/organizations/${org.orgId}/campaigns`, headers: bearer(OPERATOR_TOKEN), payload })
}

async function patchCampaign(id: string, payload: Record<string, unknown>) {
  return service.app.inject({ method: 'PATCH', url: `/admin/v1/organizations/${org.orgId}/campaigns/${id}`, headers: bearer(OPERATOR_TOKEN), payload })
}

async function voiceCampaign(settings: Record<string, unknown> = {}) {
  const response = await postCampaign({
    routing_key: `fallback-${++routingKeys}`,
    channel: 'voice',
    schedule: CALL_HOURS,
    provider: 'twilio',
    provider_config: { account_sid: ACCOUNT_SID, from: '+14155550100', answer_url: 'https://agent.example.com/twiml' },
    attempts: { max: 2 },
    // The clock stands still here: at its provider's pace, a second start in one instant could wait for its sender (test/pacing.test.ts).
    pacing: { per_second: 1_000_000 },
    ...settings,
  })
  assert.equal(response.statusCode, 201, response.body)
  return json(response).data as { id: string; routing_key: string }
}

/** A WhatsApp campaign that falls back to a new voice campaign; its routing key and the voice campaign's. */
async function messageThenCall(fallback: Record<string, unknown>, settings: Record<string, unknown> = {}, voiceSettings: Record<string, unknown> = {}) {
  const voice = await voiceCampaign(voiceSettings)
  const response = await postCampaign({
    routing_key: `fallback-${++routingKeys}`,
    channel: 'whatsapp',
    schedule: MESSAGE_HOURS,
    provider: 'whatsapp_cloud',
    provider_config: { phone_number_id: PHONE_NUMBER_ID, template: { name: 'appointment_reminder', body_parameters: ['slot'] }, reply_window_s: 3600 },
    context: { slot: 'Tuesday 10:00' },
    fallback: { campaign_id: voice.id, ...fallback },
    ...settings,
  })
  assert.equal(response.statusCode, 201, response.body)
  return { whatsapp: json(response).data as { id: string; routing_key: string; fallback: unknown }, voice }
}

async function trigger(routingKey: string) {
  const phone = `+44 20 7946 ${String(++phones).padStart(4, '0')}`
  const response = await service.app.inject({
    method: 'POST',
    url: '/api/v2/triggers',
    headers: { ...bearer(org.key), 'content-type': 'application/json' },
    payload: { campaign: routingKey, ids: [{ source: 'clinic', type: 'appointment', value: `a-${phones}` }], contact: { phone } },
  })
  assert.equal(response.statusCode, 201, response.body)
  return { ...(json(response).data as { id: string; task_id: string }), wa: `44207946${String(phones).padStart(4, '0')}` }
}

const task = (id: string) => taskOf(service.app, org.key, id)
const run = () => service.app.workers!.dispatcher.runOnce()

async function providerRefOf(interactionId: string): Promise<string> {
  const [row] = await service.db.query<{ provider_ref: string }>('SELECT provider_ref FROM interactions WHERE id = $1', [interactionId])
  return row!.provider_ref
}

const callsOf = (interactionId: string) => twilio.requests.filter((request) => request.method === 'POST' && String(request.form.get('StatusCallback')).includes(interactionId))

/** Runs the workers at `at` (the injected clock moves there and stays). */
async function runAt(at: number) {
  now = at
  await run()
}

describe('a campaign names its fallback step', () => {
  test('stored and shown as sent; a PATCH with null removes it', async () => {
    const { whatsapp: campaign, voice } = await messageThenCall({ when: ['no_reply'], no_reply_minutes: 90 })
    assert.deepEqual(campaign.fallback, { campaign_id: voice.id, when: ['no_reply'], no_reply_minutes: 90 })
    const removed = await patchCampaign(campaign.id, { fallback: null })
    assert.equal(removed.statusCode, 200, removed.body)
    assert.equal(json(removed).data.fallback, null)
  })

  test('422 per field: an unknown campaign, the same channel, a chain, a condition the channel cannot meet, a wait without no_reply', async () => {
    const voice = await voiceCampaign()
    const otherVoice = await voiceCampaign()
    const unknown = await postCampaign({ routing_key: `fallback-${++routingKeys}`, channel: 'whatsapp', provider: 'whatsapp_cloud', provider_config: { phone_number_id: PHONE_NUMBER_ID, template: { name: 'appointment_reminder' } }, fallback: { campaign_id: 'campaign_01J00000000000000000000000', when: ['undelivered'] } })
    assert.equal(unknown.statusCode, 422)
    assert.deepEqual(json(unknown).detail.map((d: any) => d.loc), [['body', 'fallback', 'campaign_id']])

    const sameChannel = await patchCampaign(voice.id, { fallback: { campaign_id: otherVoice.id, when: ['no_reply'] } })
    assert.equal(sameChannel.statusCode, 422)
    assert.deepEqual(json(sameChannel).detail.map((d: any) => d.loc), [['body', 'fallback', 'campaign_id']])

    const notOnWhatsAppForVoice = await patchCampaign(voice.id, { fallback: { campaign_id: voice.id, when: ['not_on_whatsapp'] } })
    assert.equal(notOnWhatsAppForVoice.statusCode, 422)
    assert.deepEqual(json(notOnWhatsAppForVoice).detail.map((d: any) => d.loc), [['body', 'fallback', 'campaign_id'], ['body', 'fallback', 'when', 0]])

    const { whatsapp: first, voice: target } = await messageThenCall({ when: ['undelivered'] })
    // The voice campaign is a fallback step already: it may not take one of its own, back or anywhere.
    const chain = await patchCampaign(target.id, { fallback: { campaign_id: first.id, when: ['no_reply'] } })
    assert.equal(chain.statusCode, 422)
    assert.deepEqual(json(chain).detail.map((d: any) => d.loc), [['body', 'fallback', 'campaign_id'], ['body', 'fallback']])

    const wait = await patchCampaign(first.id, { fallback: { campaign_id: target.id, when: ['undelivered'], no_reply_minutes: 30 } })
    assert.equal(wait.statusCode, 422)
    assert.deepEqual(json(wait).detail.map((d: any) => d.loc), [['body', 'fallback', 'no_reply_minutes']])

    const empty = await patchCampaign(first.id, { fallback: { campaign_id: target.id, when: [] } })
    assert.equal(empty.statusCode, 422)
    assert.deepEqual(json(empty).detail.map((d: any) => d.loc.join('.')), ['body.fallback.when'])
  })
})

describe('WhatsApp then voice', () => {
  test('no reply within 3 open hours: the call is placed in the voice campaign\'s window, and task.completed lists both steps', async () => {
    now = MONDAY_10_LONDON
    const { whatsapp: messages, voice } = await messageThenCall({ when: ['undelivered', 'not_on_whatsapp', 'no_reply'], no_reply_minutes: 180 })
    const created = await trigger(messages.routing_key)
    await run()
    const sending = await task(created.task_id)
    assert.equal(sending.status, 'in_progress')
    const wamid = await providerRefOf(sending.interactions[0].id)
    assert.equal(await whatsapp.sendStatus(wamid, 'delivered', { at: now + MINUTE }), 200)
    assert.equal(await whatsapp.sendStatus(wamid, 'read', { at: now + 2 * MINUTE }), 200)

    // The reply window (an hour) is not what the message waits for: three open hours are, until 13:00 in London.
    await runAt(MONDAY_10_LONDON + 61 * MINUTE)
    assert.equal((await task(created.task_id)).status, 'in_progress')
    // At 13:00 it is over unanswered, and the task waits for the calls' window at 14:00, under the voice campaign.
    await runAt(Date.parse('2026-06-01T12:00:00.000Z'))
    const waiting = await task(created.task_id)
    assert.equal(waiting.interactions[0].outcome, 'read')
    assert.equal(waiting.status, 'pending')
    assert.equal(waiting.campaign, voice.routing_key)
    assert.equal(waiting.channel, 'voice')
    assert.equal(waiting.next_attempt_at, '2026-06-01T13:00:00.000Z')
    assert.deepEqual(waiting.steps, [{ campaign_id: messages.id, campaign: messages.routing_key, channel: 'whatsapp', outcome: 'no_reply', attempts: 1 }])

    // Before 14:00 nothing is called; at 14:00 the call is placed.
    await runAt(Date.parse('2026-06-01T12:59:00.000Z'))
    assert.equal((await task(created.task_id)).interactions.length, 1)
    await runAt(Date.parse('2026-06-01T13:00:00.000Z'))
    const calling = await task(created.task_id)
    assert.equal(calling.status, 'in_progress')
    assert.equal(calling.interactions.length, 2)
    const call = calling.interactions[1]
    assert.equal(call.provider, 'twilio')
    assert.equal(callsOf(call.id).length, 1)
    assert.equal(callsOf(call.id)[0]!.form.get('To'), `+${created.wa}`)

    // A late status of the message changes nothing: the task has moved on.
    assert.equal(await whatsapp.sendStatus(wamid, 'failed', { at: now, errorCode: 131026 }), 200)
    assert.equal((await task(created.task_id)).status, 'in_progress')

    const callSid = await providerRefOf(call.id)
    assert.equal(await twilio.finishCall(callSid, { status: 'completed', answeredBy: 'human', duration: 30 }), 204)
    const done = await task(created.task_id)
    assert.equal(done.outcome, 'reached')
    const completed = (await eventsOfTask(service.db, created.task_id)).find((event) => event.type === 'task.completed')
    assert.equal(completed.data.campaign, voice.routing_key)
    assert.equal(completed.data.attempts, 2)
    assert.deepEqual(completed.data.steps, [
      { campaign_id: messages.id, campaign: messages.routing_key, channel: 'whatsapp', outcome: 'no_reply', attempts: 1 },
      { campaign_id: voice.id, campaign: voice.routing_key, channel: 'voice', outcome: 'reached', attempts: 1 },
    ])
    assert.deepEqual(completed.data.ids, [{ source: 'clinic', type: 'appointment', value: `a-${phones}` }])
    assert.deepEqual(done.steps, completed.data.steps)
  })

  test('a number not on WhatsApp (131026) is called at once, inside the voice window', async () => {
    now = Date.parse('2026-06-01T14:30:00.000Z')
    const { whatsapp: messages, voice } = await messageThenCall({ when: ['not_on_whatsapp'] })
    const created = await trigger(messages.routing_key)
    whatsapp.failNext({ httpStatus: 400, code: 131026, message: 'Message undeliverable', details: 'Message Undeliverable.' })
    await run()
    const moved = await task(created.task_id)
    assert.equal(moved.interactions[0].outcome, 'failed')
    assert.equal(moved.campaign, voice.routing_key)
    assert.equal(moved.next_attempt_at, new Date(now).toISOString())
    assert.deepEqual(moved.steps.map((step: any) => step.outcome), ['not_on_whatsapp'])
    await run()
    const calling = await task(created.task_id)
    assert.equal(calling.status, 'in_progress')
    assert.equal(calling.interactions.length, 2)
    assert.equal(callsOf(calling.interactions[1].id).length, 1)
  })

  test('a failed status with 131026 after the send also falls back; without the condition named the task fails', async () => {
    now = Date.parse('2026-06-01T14:30:00.000Z')
    const { whatsapp: messages, voice } = await messageThenCall({ when: ['not_on_whatsapp'] })
    const created = await trigger(messages.routing_key)
    await run()
    const wamid = await providerRefOf((await task(created.task_id)).interactions[0].id)
    assert.equal(await whatsapp.sendStatus(wamid, 'failed', { at: now, errorCode: 131026 }), 200)
    const moved = await task(created.task_id)
    assert.equal(moved.interactions[0].outcome, 'undelivered')
    assert.equal(moved.campaign, voice.routing_key)

    const { whatsapp: onlyReplies } = await messageThenCall({ when: ['no_reply'] })
    const other = await trigger(onlyReplies.routing_key)
    whatsapp.failNext({ httpStatus: 400, code: 131026, message: 'Message undeliverable' })
    await run()
    const failed = await task(other.task_id)
    assert.equal(failed.outcome, 'failed')
    assert.equal(failed.steps, undefined)
  })

  test('an answered message does not fall back, though the answer comes after the reply window, within the open minutes', async () => {
    now = MONDAY_10_LONDON
    const { whatsapp: messages } = await messageThenCall({ when: ['undelivered', 'not_on_whatsapp', 'no_reply'], no_reply_minutes: 180 })
    const created = await trigger(messages.routing_key)
    await run()
    const wamid = await providerRefOf((await task(created.task_id)).interactions[0].id)
    // Two hours on: past the campaign's reply window of an hour, within the three open hours.
    await runAt(MONDAY_10_LONDON + 120 * MINUTE)
    assert.equal(await whatsapp.sendReply({ from: created.wa, text: 'I will be there', replyTo: wamid, at: now }), 200)
    const done = await task(created.task_id)
    assert.equal(done.outcome, 'reached')
    assert.equal(done.campaign, messages.routing_key)
    await runAt(MONDAY_10_LONDON + 5 * 3_600_000)
    assert.equal((await task(created.task_id)).interactions.length, 1)
    const completed = (await eventsOfTask(service.db, created.task_id)).find((event) => event.type === 'task.completed')
    assert.equal('steps' in completed.data, false)
  })

  test('a task falls back once: the same ending settled twice moves it once', async () => {
    now = Date.parse('2026-06-01T14:30:00.000Z')
    // One call: the WhatsApp step's attempt does not count against it.
    const { whatsapp: messages } = await messageThenCall({ when: ['undelivered'] }, {}, { attempts: { max: 1 } })
    const created = await trigger(messages.routing_key)
    await run()
    const interactionId = (await task(created.task_id)).interactions[0].id
    const wamid = await providerRefOf(interactionId)
    // Two deliveries of one failed status, at once: two settlements race for it.
    const answers = await Promise.all([whatsapp.sendStatus(wamid, 'failed', { at: now, errorCode: 131000 }), whatsapp.sendStatus(wamid, 'failed', { at: now, errorCode: 131000 })])
    assert.deepEqual(answers, [200, 200])
    const moved = await task(created.task_id)
    assert.equal(moved.steps.length, 1)
    await run()
    const calling = await task(created.task_id)
    assert.equal(calling.interactions.length, 2)
    // The call goes unanswered: the voice campaign's own attempts (max 1) run out; no step follows.
    await twilio.finishCall(await providerRefOf(calling.interactions[1].id), { status: 'no-answer' })
    const done = await task(created.task_id)
    assert.equal(done.outcome, 'unreachable')
    assert.equal(done.attempts, 2)
    assert.deepEqual(done.steps.map((step: any) => [step.channel, step.outcome, step.attempts]), [['whatsapp', 'undelivered', 1], ['voice', 'unreachable', 1]])
  })

  test('two processes settling the same failed status at once, and a late status after: the task falls back once', async () => {
    now = Date.parse('2026-06-01T14:30:00.000Z')
    const { whatsapp: messages, voice } = await messageThenCall({ when: ['undelivered'] })
    const created = await trigger(messages.routing_key)
    await run()
    const wamid = await providerRefOf((await task(created.task_id)).interactions[0].id)
    const failed = (code: number) =>
      JSON.stringify({
        object: 'whatsapp_business_account',
        entry: [{ id: '1', changes: [{ field: 'messages', value: {
          messaging_product: 'whatsapp',
          metadata: { display_phone_number: '15550001111', phone_number_id: PHONE_NUMBER_ID },
          statuses: [{ id: wamid, status: 'failed', timestamp: String(Math.floor(now / 1000)), recipient_id: created.wa, errors: [{ code, title: 'Message failed to send' }] }],
        } }] }],
      })
    const signed = (body: string) => ({
      method: 'POST' as const,
      url: '/providers/whatsapp/webhook',
      headers: { 'content-type': 'application/json', 'x-hub-signature-256': `sha256=${createHmac('sha256', SECRETS.WHATSAPP_APP_SECRET!).update(body).digest('hex')}` },
      payload: body,
    })
    const peer = await service.peer()
    const answers = await Promise.all([service.app.inject(signed(failed(131000))), peer.inject(signed(failed(131000)))])
    assert.deepEqual(answers.map((answer) => answer.statusCode), [200, 200])
    const moved = await task(created.task_id)
    assert.equal(moved.campaign, voice.routing_key)
    assert.equal(moved.steps.length, 1)
    const [row] = await service.db.query<{ steps: unknown[] }>('SELECT steps FROM tasks WHERE id = $1', [created.task_id])
    assert.equal(row!.steps.length, 1)
    // Meta sends a status again, later, with another code: the interaction is over, the task stays where it went.
    const late = await peer.inject(signed(failed(131026)))
    assert.equal(late.statusCode, 200)
    const after = await task(created.task_id)
    assert.deepEqual(after.steps, moved.steps)
    assert.equal(after.next_attempt_at, moved.next_attempt_at)
    const events = await eventsOfTask(service.db, created.task_id)
    assert.equal(events.filter((event) => event.type === 'interaction.finalized').length, 1)
  })
})
