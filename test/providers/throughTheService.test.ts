/**
 * The real provider adapters through the whole service: the dispatcher
 * starts calls and messages on local fakes of Twilio and the WhatsApp Cloud
 * API, and the fakes' signed callbacks reach the service over HTTP.
 */
import assert from 'node:assert/strict'
import { createHash, createHmac } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { after, before, describe, test } from 'node:test'
import { createChannels } from '../../src/channels/index.ts'
import { newId } from '../../src/domain/ids.ts'
import { withdrawAttempts } from '../../src/store/tasks.ts'
import { type FakeTwilio, startFakeTwilio } from '../fakes/twilio.ts'
import { type FakeWhatsAppCloud, startFakeWhatsAppCloud } from '../fakes/whatsappCloud.ts'
import { sampleValue } from '../support/prometheus.ts'
import { bearer, freePort, json, OPERATOR_TOKEN, scrapeMetrics, seedOrganization, startService, tablesHolding, taskOf, type TestService } from '../support/service.ts'
import { eventsOfTask, eventsOfTasklessInteractions } from '../support/events.ts'

const ACCOUNT_SID = `AC${'0123456789abcdef'.repeat(2)}`
const SECRETS: Record<string, string> = {
  TWILIO_AUTH_TOKEN: 'twilio-auth-token-for-tests',
  WHATSAPP_ACCESS_TOKEN: 'whatsapp-access-token-for-tests',
  WHATSAPP_APP_SECRET: 'whatsapp-app-secret-for-tests',
  WHATSAPP_VERIFY_TOKEN: 'whatsapp-verify-token-for-tests',
}
const PHONE_NUMBER_ID = '106540352242922'
const ALWAYS_OPEN = { timezone: 'contact', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '00:00', end: '24:00' }] }

let service: TestService
let twilio: FakeTwilio
let whatsapp: FakeWhatsAppCloud
let org: Awaited<ReturnType<typeof seedOrganization>>
let baseUrl: string
let now = Date.now()
let routingKeys = 0

before(async () => {
  twilio = await startFakeTwilio({ accounts: { [ACCOUNT_SID]: SECRETS.TWILIO_AUTH_TOKEN! } })
  whatsapp = await startFakeWhatsAppCloud({
    accessToken: SECRETS.WHATSAPP_ACCESS_TOKEN!,
    appSecret: SECRETS.WHATSAPP_APP_SECRET!,
    phoneNumberIds: [PHONE_NUMBER_ID],
    templates: { interview_invite: { languages: ['en', 'de'], bodyParameters: 2 } },
  })
  const port = await freePort()
  baseUrl = `http://127.0.0.1:${port}`
  const channels = createChannels(
    { publicBaseUrl: baseUrl, twilioApiBaseUrl: twilio.url, whatsappApiBaseUrl: whatsapp.url },
    (name) => SECRETS[name],
  )
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

async function campaign(channel: 'voice' | 'whatsapp', settings: Record<string, unknown>): Promise<string> {
  const response = await service.app.inject({
    method: 'POST',
    url: `/admin/v1/organizations/${org.orgId}/campaigns`,
    headers: bearer(OPERATOR_TOKEN),
    // The clock stands still here: at its provider's pace, a second start in one instant could wait for its sender (test/pacing.test.ts).
    payload: { routing_key: `providers-${++routingKeys}`, channel, schedule: ALWAYS_OPEN, pacing: { per_second: 1_000_000 }, ...settings },
  })
  assert.equal(response.statusCode, 201, response.body)
  return json(response).data.routing_key
}

const twilioCampaign = (attempts: object = {}) =>
  campaign('voice', {
    provider: 'twilio',
    provider_config: { account_sid: ACCOUNT_SID, from: '+14155550100', answer_url: 'https://agent.example.com/twiml' },
    attempts,
  })

const whatsappCampaign = (settings: Record<string, unknown> = {}) =>
  campaign('whatsapp', {
    provider: 'whatsapp_cloud',
    provider_config: { phone_number_id: PHONE_NUMBER_ID, template: { name: 'interview_invite', body_parameters: ['role', 'slot'] } },
    context: { role: 'Barista' },
    ...settings,
  })

async function trigger(routingKey: string, body: Record<string, unknown> = {}) {
  const response = await service.app.inject({
    method: 'POST',
    url: '/api/v2/triggers',
    headers: { ...bearer(org.key), 'content-type': 'application/json' },
    payload: { campaign: routingKey, ids: [{ source: 'ats', type: 'candidate', value: 'c-1' }], contact: { phone: '+44 20 7946 0958' }, ...body },
  })
  assert.equal(response.statusCode, 201, response.body)
  return json(response).data as { id: string; task_id: string }
}

const task = (id: string) => taskOf(service.app, org.key, id)

async function providerRefOf(interactionId: string): Promise<string | null> {
  const [row] = await service.db.query<{ provider_ref: string | null }>('SELECT provider_ref FROM interactions WHERE id = $1', [interactionId])
  return row!.provider_ref
}

async function eventsOf(taskId: string): Promise<any[]> {
  return eventsOfTask(service.db, taskId)
}

/** A WhatsApp notification carrying one inbound message from our number. */
const notification = (message: object) =>
  JSON.stringify({
    object: 'whatsapp_business_account',
    entry: [{ id: '1', changes: [{ field: 'messages', value: { messaging_product: 'whatsapp', metadata: { display_phone_number: '1', phone_number_id: PHONE_NUMBER_ID }, messages: [message] } }] }],
  })

const postSigned = (body: string) =>
  fetch(`${baseUrl}/providers/whatsapp/webhook`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-hub-signature-256': `sha256=${createHmac('sha256', SECRETS.WHATSAPP_APP_SECRET!).update(body).digest('hex')}`,
    },
    body,
  })

/** A WhatsApp conversation sent to `phone`, and a key for the agent that answers in it (scope messages:send). */
async function conversationWithAgent(phone: string): Promise<{ interactionId: string; agentKey: string }> {
  const created = await trigger(await whatsappCampaign(), { context: { slot: 'Monday' }, contact: { phone } })
  await service.app.workers!.dispatcher.runOnce()
  const interactionId = (await task(created.task_id)).interactions[0].id
  const issued = await service.app.inject({
    method: 'POST',
    url: `/admin/v1/organizations/${org.orgId}/api-keys`,
    headers: bearer(OPERATOR_TOKEN),
    payload: { name: 'agent', scopes: ['messages:send'] },
  })
  return { interactionId, agentKey: json(issued).data.key }
}

/** A JSON value's keys and kinds, nested, without its values: what a documented sample must match. */
function shapeOf(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(shapeOf)
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, shapeOf(inner)]).sort(([a], [b]) => String(a).localeCompare(String(b))))
  return value === null ? 'null' : typeof value
}

/** What /metrics has counted so far of tasks completed, interactions finalized and provider errors, by their labels. */
async function counted() {
  const families = await scrapeMetrics(service.app)
  return {
    tasks: (channel: string, outcome: string) => sampleValue(families, 'conversation_trigger_tasks_completed_total', 'conversation_trigger_tasks_completed_total', { channel, outcome }) ?? 0,
    interactions: (provider: string, outcome: string) =>
      sampleValue(families, 'conversation_trigger_interactions_finalized_total', 'conversation_trigger_interactions_finalized_total', { provider, outcome }) ?? 0,
    providerErrors: (provider: string, kind: string) => sampleValue(families, 'conversation_trigger_provider_errors_total', 'conversation_trigger_provider_errors_total', { provider, kind }) ?? 0,
  }
}

const callsTo = (interactionId: string) =>
  twilio.requests.filter((request) => request.method === 'POST' && String(request.form.get('StatusCallback')).includes(interactionId))

/** The task's attempts count and its interaction rows, as stored. */
async function storedAttempts(taskId: string) {
  const [row] = await service.db.query<{ attempts: number; interaction_ids: string[] }>('SELECT attempts, interaction_ids FROM tasks WHERE id = $1', [taskId])
  const interactions = await service.db.query<{ id: string; attempt: number }>('SELECT id, attempt FROM interactions WHERE task_id = $1 ORDER BY attempt', [taskId])
  return { attempts: row!.attempts, interactionIds: row!.interaction_ids, interactions }
}

describe('twilio voice', () => {
  test('a call is created with a status callback, and its signed completion reaches the task', async () => {
    const routingKey = await twilioCampaign()
    const created = await trigger(routingKey)
    await service.app.workers!.dispatcher.runOnce()
    const running = await task(created.task_id)
    assert.equal(running.status, 'in_progress')
    const interactionId = running.interactions[0].id
    const [request] = callsTo(interactionId)
    assert.equal(request!.path, `/2010-04-01/Accounts/${ACCOUNT_SID}/Calls.json`)
    assert.equal(request!.form.get('To'), '+442079460958')
    assert.equal(request!.form.get('StatusCallback'), `${baseUrl}/providers/twilio/calls/${interactionId}/status`)
    const callSid = await providerRefOf(interactionId)
    assert.match(callSid!, /^CA[0-9a-f]{32}$/)

    assert.equal(await twilio.progressCall(callSid!, 'ringing'), 204)
    assert.equal((await task(created.task_id)).status, 'in_progress')
    assert.equal(await twilio.finishCall(callSid!, { status: 'completed', answeredBy: 'human', duration: 42 }), 204)
    const done = await task(created.task_id)
    assert.equal(done.outcome, 'reached')
    assert.equal(done.interactions[0].outcome, 'completed')
    assert.equal(done.interactions[0].duration_s, 42)
    // The task view names the call as Twilio does, to be found in Twilio's own console.
    assert.equal(done.interactions[0].provider, 'twilio')
    assert.equal(done.interactions[0].provider_ref, callSid)
    const finalized = (await eventsOf(created.task_id)).find((event) => event.type === 'interaction.finalized')
    assert.equal(finalized.data.duration_s, 42)
    assert.equal((await eventsOf(created.task_id)).length, 2)
  })

  test('voicemail is retried after its delay', async () => {
    const routingKey = await twilioCampaign({ retry_delays_s: { voicemail: 600 } })
    const created = await trigger(routingKey)
    await service.app.workers!.dispatcher.runOnce()
    const interactionId = (await task(created.task_id)).interactions[0].id
    await twilio.finishCall((await providerRefOf(interactionId))!, { status: 'completed', answeredBy: 'machine_end_beep', duration: 20 })
    const state = await task(created.task_id)
    assert.equal(state.status, 'pending')
    assert.equal(state.interactions[0].outcome, 'voicemail')
    assert.ok(Date.parse(state.next_attempt_at) >= now + 600_000 - 1000)
  })

  test('a callback with a bad signature is refused and changes nothing', async () => {
    const routingKey = await twilioCampaign()
    const created = await trigger(routingKey)
    await service.app.workers!.dispatcher.runOnce()
    const interactionId = (await task(created.task_id)).interactions[0].id
    const callSid = await providerRefOf(interactionId)
    const form = new URLSearchParams({ AccountSid: ACCOUNT_SID, CallSid: callSid!, CallStatus: 'completed', CallDuration: '5' })
    for (const signature of [undefined, 'AAAAAAAAAAAAAAAAAAAAAAAAAAA=']) {
      const response = await fetch(`${baseUrl}/providers/twilio/calls/${interactionId}/status`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...(signature ? { 'x-twilio-signature': signature } : {}) },
        body: form,
      })
      assert.equal(response.status, 403)
    }
    const state = await task(created.task_id)
    assert.equal(state.status, 'in_progress')
    assert.equal(state.interactions[0].status, 'active')
  })

  test("Twilio's throttling at start (429, error 20429) defers the attempt by its Retry-After, spending none; it is made again after", async () => {
    const routingKey = await twilioCampaign()
    const created = await trigger(routingKey, { contact: { phone: '+44 20 7946 0777' } })
    twilio.failNext({ status: 429, code: 20429, message: 'Too Many Requests', retryAfter: '30' })
    const before = await counted()
    await service.app.workers!.dispatcher.runOnce()
    const deferred = await task(created.task_id)
    assert.equal(deferred.status, 'pending')
    assert.equal(deferred.next_attempt_at, new Date(now + 30_000).toISOString())
    // Its story says why it waits.
    assert.deepEqual(deferred.waiting, { for: 'provider', until: deferred.next_attempt_at })
    assert.deepEqual(await storedAttempts(created.task_id), { attempts: 0, interactionIds: [], interactions: [] })
    assert.equal((await counted()).providerErrors('twilio', 'deferred') - before.providerErrors('twilio', 'deferred'), 1)

    const dialled = () => twilio.requests.filter((request) => request.method === 'POST' && request.form.get('To') === '+442079460777').length
    assert.equal(dialled(), 1)
    now += 29_000
    try {
      await service.app.workers!.dispatcher.runOnce()
      assert.equal(dialled(), 1)
      now += 1_000
      await service.app.workers!.dispatcher.runOnce()
      assert.equal(dialled(), 2)
      const started = await task(created.task_id)
      assert.equal(started.status, 'in_progress')
      assert.equal(started.waiting, undefined)
      const stored = await storedAttempts(created.task_id)
      assert.equal(stored.attempts, 1)
      assert.deepEqual(stored.interactions.map((row) => row.attempt), [1])
      assert.deepEqual(stored.interactionIds, [stored.interactions[0]!.id])
      assert.match((await providerRefOf(stored.interactions[0]!.id))!, /^CA[0-9a-f]{32}$/)
      // Confirmed by the provider: a withdrawal (a deferral's answer come late) leaves it be.
      assert.deepEqual(await withdrawAttempts(service.db, [{ interactionId: stored.interactions[0]!.id, dueAt: now }], now), new Set())
      assert.deepEqual(await storedAttempts(created.task_id), stored)
    } finally {
      now -= 30_000
    }
  })

  test('a number Twilio refuses fails the task at once (permanent)', async () => {
    const routingKey = await twilioCampaign()
    const created = await trigger(routingKey)
    twilio.failNext({ status: 400, code: 21211, message: "The 'To' number is not a valid phone number." })
    const before = await counted()
    await service.app.workers!.dispatcher.runOnce()
    const state = await task(created.task_id)
    assert.equal(state.status, 'completed')
    assert.equal(state.outcome, 'failed')
    assert.equal(state.interactions[0].outcome, 'failed')
    const after = await counted()
    assert.equal(after.providerErrors('twilio', 'refused') - before.providerErrors('twilio', 'refused'), 1)
    assert.equal(after.interactions('twilio', 'failed') - before.interactions('twilio', 'failed'), 1)
    assert.equal(after.tasks('voice', 'failed') - before.tasks('voice', 'failed'), 1)
  })

  test("a start whose answer is lost waits for Twilio's word: its callback settles the attempt, never a second dial", async () => {
    const routingKey = await twilioCampaign()
    const created = await trigger(routingKey)
    twilio.dropNext()
    await service.app.workers!.dispatcher.runOnce()
    const uncertain = await task(created.task_id)
    const interactionId = uncertain.interactions[0].id
    assert.equal(uncertain.status, 'in_progress')
    assert.equal(uncertain.interactions[0].status, 'starting')
    const [call] = callsTo(interactionId)
    const callSid = twilio.callSidFor(call!.form.get('StatusCallback')!)!
    assert.equal(await twilio.finishCall(callSid, { status: 'completed', answeredBy: 'human', duration: 12 }), 204)
    const done = await task(created.task_id)
    assert.equal(done.outcome, 'reached')
    assert.equal(done.interactions[0].duration_s, 12)
    assert.equal(await providerRefOf(interactionId), callSid)
    await service.app.workers!.dispatcher.runOnce()
    assert.equal(callsTo(interactionId).length, 1)
  })

  test('a start whose answer is lost and never reported is settled as failed when the call would be over, and retried later', async () => {
    const routingKey = await twilioCampaign({ retry_delays_s: { failed: 1800 } })
    const created = await trigger(routingKey)
    twilio.dropNext()
    await service.app.workers!.dispatcher.runOnce()
    const interactionId = (await task(created.task_id)).interactions[0].id
    const settleAfter = (30 + 4 * 3600 + 15 * 60) * 1000
    now += settleAfter - 1000
    try {
      await service.app.workers!.dispatcher.runOnce()
      assert.equal((await task(created.task_id)).interactions[0].status, 'starting')
      now += 1000
      await service.app.workers!.dispatcher.runOnce()
      const settled = await task(created.task_id)
      assert.equal(settled.interactions[0].outcome, 'failed')
      assert.equal(settled.interactions[0].duration_s, 0)
      assert.equal(settled.status, 'pending')
      assert.equal(settled.next_attempt_at, new Date(now + 1_800_000).toISOString())
      assert.equal(callsTo(interactionId).length, 1)
    } finally {
      now -= settleAfter
    }
  })
})

describe('whatsapp cloud', () => {
  test('a template is sent with parameters from the context; a swipe-reply reaches the task', async () => {
    const routingKey = await whatsappCampaign()
    const created = await trigger(routingKey, { context: { slot: 'Monday 10:00' }, contact: { phone: '+44 20 7946 0958', language: 'de-AT' } })
    await service.app.workers!.dispatcher.runOnce()
    const running = await task(created.task_id)
    const interactionId = running.interactions[0].id
    const wamid = (await providerRefOf(interactionId))!
    const sent = whatsapp.sent.find((message) => message.wamid === wamid)!
    assert.deepEqual(
      { to: sent.to, template: sent.template, language: sent.language, parameters: sent.parameters },
      { to: '442079460958', template: 'interview_invite', language: 'de', parameters: ['Barista', 'Monday 10:00'] },
    )
    assert.equal(await whatsapp.sendStatus(wamid, 'delivered'), 200)
    assert.equal(await whatsapp.sendStatus(wamid, 'read'), 200)
    // Out of order: an older status does not move it back.
    assert.equal(await whatsapp.sendStatus(wamid, 'delivered'), 200)
    const [row] = await service.db.query<{ provider_status: string }>('SELECT provider_status FROM interactions WHERE id = $1', [interactionId])
    assert.equal(row!.provider_status, 'read')

    assert.equal(await whatsapp.sendReply({ from: '442079460958', text: 'Yes!', replyTo: wamid }), 200)
    const done = await task(created.task_id)
    assert.equal(done.outcome, 'reached')
    assert.equal(done.interactions[0].outcome, 'replied')
  })

  for (const code of [130429, 131056]) {
    test(`throttling at send (code ${code}) defers the message a few seconds, spending no attempt; it is sent after`, async () => {
      const routingKey = await whatsappCampaign()
      const phone = `+44 20 7946 ${code === 130429 ? '0429' : '1056'}`
      const created = await trigger(routingKey, { context: { slot: 'Thursday' }, contact: { phone } })
      whatsapp.failNext({ httpStatus: 400, code, message: `(#${code}) Rate limit hit` })
      await service.app.workers!.dispatcher.runOnce()
      const deferred = await task(created.task_id)
      assert.equal(deferred.status, 'pending')
      // No Retry-After from Meta: a few seconds, with jitter.
      const delay = Date.parse(deferred.next_attempt_at) - now
      assert.ok(delay >= 2_000 && delay < 5_000, String(delay))
      assert.deepEqual(deferred.waiting, { for: 'provider', until: deferred.next_attempt_at })
      assert.deepEqual(await storedAttempts(created.task_id), { attempts: 0, interactionIds: [], interactions: [] })

      now += delay
      try {
        await service.app.workers!.dispatcher.runOnce()
        const stored = await storedAttempts(created.task_id)
        assert.equal(stored.attempts, 1)
        assert.deepEqual(stored.interactions.map((row) => row.attempt), [1])
        const wamid = (await providerRefOf(stored.interactions[0]!.id))!
        assert.equal(whatsapp.sent.filter((message) => message.wamid === wamid).length, 1)
        assert.equal((await task(created.task_id)).status, 'in_progress')
      } finally {
        now -= delay
      }
    })
  }

  test('a plain reply from the person answers their running conversation', async () => {
    const routingKey = await whatsappCampaign()
    const created = await trigger(routingKey, { context: { slot: 'Tuesday' }, contact: { phone: '+49 30 901820' } })
    await service.app.workers!.dispatcher.runOnce()
    assert.equal(await whatsapp.sendReply({ from: '4930901820', text: 'ok' }), 200)
    assert.equal((await task(created.task_id)).outcome, 'reached')
  })

  test('a message that answers no task is an inbound interaction without a task', async () => {
    assert.equal(await whatsapp.sendReply({ from: '33142685300', text: 'Who is this?' }), 200)
    const [event, received] = await eventsOfTasklessInteractions(service.db)
    assert.equal(event.type, 'interaction.finalized')
    assert.equal(event.data.task_id, null)
    assert.equal(event.data.trigger_id, null)
    assert.equal(event.data.outcome, 'replied')
    assert.equal('ids' in event.data, false)
    // Its message came first, with the window it opened.
    assert.equal(received.type, 'interaction.message_received')
    assert.equal(received.data.interaction_id, event.data.interaction_id)
    assert.equal(received.data.message.text, 'Who is this?')
    assert.equal('ids' in received.data, false)
    assert.equal(Date.parse(received.data.window_closes_at) - Date.parse(received.data.message.received_at), 86_400_000)
  })

  test('without a reply, the conversation is settled when the reply window ends', async () => {
    const routingKey = await whatsappCampaign()
    const created = await trigger(routingKey, { context: { slot: 'Friday' }, contact: { phone: '+33 1 42 68 53 00' } })
    await service.app.workers!.dispatcher.runOnce()
    const interactionId = (await task(created.task_id)).interactions[0].id
    await whatsapp.sendStatus((await providerRefOf(interactionId))!, 'delivered')
    now += 86_400_000
    try {
      await service.app.workers!.dispatcher.runOnce()
      const state = await task(created.task_id)
      assert.equal(state.interactions[0].outcome, 'delivered')
      assert.equal(state.status, 'pending')
    } finally {
      now -= 86_400_000
    }
  })

  test('a reply delivered twice counts once', async () => {
    const routingKey = await whatsappCampaign()
    const created = await trigger(routingKey, { context: { slot: 'Monday' }, contact: { phone: '+44 20 7946 0100' } })
    await service.app.workers!.dispatcher.runOnce()
    const wamid = (await providerRefOf((await task(created.task_id)).interactions[0].id))!
    const body = notification({ from: '442079460100', id: `wamid.reply-${wamid}`, timestamp: String(Math.floor(now / 1000)), type: 'text', text: { body: 'yes' }, context: { from: '1', id: wamid } })
    const before = await counted()
    assert.equal((await postSigned(body)).status, 200)
    assert.equal((await postSigned(body)).status, 200)
    const done = await task(created.task_id)
    assert.equal(done.outcome, 'reached')
    assert.equal(done.interactions.length, 1)
    assert.deepEqual((await eventsOf(created.task_id)).map((event) => event.type), ['interaction.message_received', 'interaction.finalized', 'task.completed'])
    const after = await counted()
    assert.equal(after.interactions('whatsapp_cloud', 'replied') - before.interactions('whatsapp_cloud', 'replied'), 1)
    assert.equal(after.tasks('whatsapp', 'reached') - before.tasks('whatsapp', 'reached'), 1)
  })

  test('a reply after the conversation was settled still reaches the task, as an inbound interaction', async () => {
    const routingKey = await whatsappCampaign()
    const created = await trigger(routingKey, { context: { slot: 'Monday' }, contact: { phone: '+44 20 7946 0200' } })
    await service.app.workers!.dispatcher.runOnce()
    now += 86_400_000
    try {
      await service.app.workers!.dispatcher.runOnce()
      assert.equal((await task(created.task_id)).status, 'pending')
      const before = await counted()
      assert.equal(await whatsapp.sendReply({ from: '442079460200', text: 'sorry, only saw it now' }), 200)
      const done = await task(created.task_id)
      assert.equal(done.outcome, 'reached')
      // The inbound interaction and the task it completed, counted as they commit.
      const after = await counted()
      assert.equal(after.interactions('whatsapp_cloud', 'replied') - before.interactions('whatsapp_cloud', 'replied'), 1)
      assert.equal(after.tasks('whatsapp', 'reached') - before.tasks('whatsapp', 'reached'), 1)
      assert.deepEqual(
        done.interactions.map((interaction: any) => [interaction.direction, interaction.outcome]),
        [
          ['outbound', 'undelivered'],
          ['inbound', 'replied'],
        ],
      )
      const inbound = (await eventsOf(created.task_id)).find((event) => event.data.direction === 'inbound')
      assert.deepEqual(inbound.data.ids, [{ source: 'ats', type: 'candidate', value: 'c-1' }])
    } finally {
      now -= 86_400_000
    }
  })

  test("the person's replies are the transcript of the conversation's result: on the interaction and its webhook, a chosen button's title too", async () => {
    const routingKey = await whatsappCampaign()
    const created = await trigger(routingKey, { context: { slot: 'Monday' }, contact: { phone: '+44 20 7946 0300' } })
    await service.app.workers!.dispatcher.runOnce()
    const interactionId = (await task(created.task_id)).interactions[0].id
    const wamid = (await providerRefOf(interactionId))!
    const at = Math.floor(now / 1000) * 1000
    assert.equal(await whatsapp.sendReply({ from: '442079460300', text: 'Yes, Monday works <b>fine</b>', replyTo: wamid, at }), 200)
    const transcript = [{ role: 'contact', text: 'Yes, Monday works <b>fine</b>', at: new Date(at).toISOString() }]
    const finalized = (await eventsOf(created.task_id)).find((event) => event.type === 'interaction.finalized')
    assert.deepEqual(finalized.data.result.transcript, transcript)
    assert.equal(finalized.data.result.summary, null)
    assert.deepEqual(finalized.data.ids, [{ source: 'ats', type: 'candidate', value: 'c-1' }])
    const read = await service.app.inject({ method: 'GET', url: `/api/v2/interactions/${interactionId}`, headers: bearer(org.key) })
    assert.deepEqual(json(read).data.result.transcript, transcript)
    // A later message answers no running conversation: an inbound interaction of the task, its own transcript.
    assert.equal(await whatsapp.sendReply({ from: '442079460300', text: 'See you then', choice: 'button_reply', at: at + 60_000 }), 200)
    const inbound = (await eventsOf(created.task_id)).filter((event) => event.data.direction === 'inbound')
    assert.deepEqual(
      inbound.map((event) => event.type),
      ['interaction.message_received', 'interaction.finalized'],
    )
    assert.equal(inbound[0].data.message.text, 'See you then')
    assert.deepEqual(inbound[1].data.result.transcript, [{ role: 'contact', text: 'See you then', at: new Date(at + 60_000).toISOString() }])
  })

  test("with a wait for results, the person's messages gather until the app's result, which ends the wait and keeps them as the transcript", async () => {
    const routingKey = await whatsappCampaign({ results: { wait_s: 300 } })
    const created = await trigger(routingKey, { context: { slot: 'Friday' }, contact: { phone: '+44 20 7946 0301' } })
    await service.app.workers!.dispatcher.runOnce()
    const interactionId = (await task(created.task_id)).interactions[0].id
    const at = Math.floor(now / 1000) * 1000
    assert.equal(await whatsapp.sendReply({ from: '442079460301', text: 'Friday?', at }), 200)
    assert.equal(await whatsapp.sendReply({ from: '442079460301', text: 'Morning only', choice: 'list_reply', at: at + 1000 }), 200)
    const waiting = await task(created.task_id)
    assert.equal(waiting.interactions.length, 1, 'both messages answer the conversation that waits for its result')
    assert.equal(waiting.interactions[0].status, 'ended')
    // Each message reported as it lands, in order, with the ids and the window it keeps open (24 hours from the latest).
    const received = await eventsOf(created.task_id)
    assert.deepEqual(
      received.map((event) => [event.type, event.data.message.text, event.data.message.received_at, event.data.window_closes_at]),
      [
        ['interaction.message_received', 'Friday?', new Date(at).toISOString(), new Date(at + 86_400_000).toISOString()],
        ['interaction.message_received', 'Morning only', new Date(at + 1000).toISOString(), new Date(at + 1000 + 86_400_000).toISOString()],
      ],
    )
    for (const event of received) {
      assert.equal(event.data.interaction_id, interactionId)
      assert.equal(event.data.task_id, created.task_id)
      assert.equal(event.data.trigger_id, created.id)
      assert.deepEqual(event.data.ids, [{ source: 'ats', type: 'candidate', value: 'c-1' }])
      assert.match(event.data.message.id, /^wamid\./)
    }
    // docs/messaging.md shows the event as it is: every field, nested ones too, and no other.
    const [documented] = [...readFileSync(new URL('../../docs/messaging.md', import.meta.url), 'utf8').matchAll(/```json\n([\s\S]*?)```/g)].map((match) => JSON.parse(match[1]!))
    assert.deepEqual(shapeOf(received[0]), shapeOf(documented))
    // An older message delivered late does not close the window earlier.
    assert.equal(await whatsapp.sendReply({ from: '442079460301', text: 'Or Monday', at: at - 5000 }), 200)
    const context = json(await service.app.inject({ method: 'GET', url: `/api/v2/interactions/${interactionId}`, headers: bearer(org.key) })).data
    assert.equal(context.window_closes_at, new Date(at + 1000 + 86_400_000).toISOString())
    assert.equal((await eventsOf(created.task_id)).at(-1).data.window_closes_at, context.window_closes_at)

    const appKey = json(
      await service.app.inject({ method: 'POST', url: `/admin/v1/organizations/${org.orgId}/api-keys`, headers: bearer(OPERATOR_TOKEN), payload: { name: 'bot', scopes: ['conversations:write'] } }),
    ).data.key
    const posted = await service.app.inject({
      method: 'POST',
      url: `/api/v2/interactions/${interactionId}/result`,
      headers: bearer(appKey),
      payload: { disposition: 'confirmed', data: { slot: 'Friday morning' } },
    })
    assert.equal(posted.statusCode, 200, posted.body)
    const [finalized, completed] = (await eventsOf(created.task_id)).slice(3)
    assert.equal(finalized.data.outcome, 'replied')
    assert.equal(finalized.data.result.disposition, 'confirmed')
    assert.deepEqual(
      finalized.data.result.transcript.map((turn: { text: string }) => turn.text),
      ['Friday?', 'Morning only', 'Or Monday'],
    )
    assert.equal(completed.data.outcome, 'reached')
    assert.deepEqual(completed.data.result, finalized.data.result)
  })

  test('a conversation kept open (results.conversation_s) ends when the window the person keeps open closes, before its length has passed', async () => {
    const routingKey = await whatsappCampaign({ results: { conversation_s: 3 * 86_400 } })
    const created = await trigger(routingKey, { context: { slot: 'Friday' }, contact: { phone: '+44 20 7946 0302' } })
    await service.app.workers!.dispatcher.runOnce()
    const interactionId = (await task(created.task_id)).interactions[0].id
    const at = Math.floor(now / 1000) * 1000
    const dueBy = async () => json(await service.app.inject({ method: 'GET', url: `/api/v2/interactions/${interactionId}`, headers: bearer(org.key) })).data.result_due_by
    assert.equal(await whatsapp.sendReply({ from: '442079460302', text: 'Friday?', at }), 200)
    assert.equal(await dueBy(), new Date(at + 86_400_000).toISOString())
    assert.equal(await whatsapp.sendReply({ from: '442079460302', text: 'After 10 please', at: at + 3_600_000 }), 200)
    assert.equal(await dueBy(), new Date(at + 3_600_000 + 86_400_000).toISOString(), 'each message keeps it open to its window')
    // A file without a caption lands too, as its media id, and keeps the window open as text does.
    assert.equal(await whatsapp.sendReply({ from: '442079460302', text: '', media: { type: 'image', mimeType: 'image/jpeg' }, at: at + 3_600_000 }), 200)
    const image = (await eventsOf(created.task_id)).at(-1)
    assert.equal(image.type, 'interaction.message_received')
    assert.equal(image.data.message.text, null)
    assert.deepEqual(image.data.message.media.map((file: { type: string; mime_type: string }) => [file.type, file.mime_type]), [['image', 'image/jpeg']])
    assert.match(image.data.message.media[0].ref, /^[0-9]+$/)
    const saved = now
    try {
      now = at + 3_600_000 + 86_400_000
      await service.app.workers!.dispatcher.runOnce()
      const done = await task(created.task_id)
      assert.equal(done.outcome, 'reached')
      assert.equal(done.interactions.length, 1)
      const finalized = (await eventsOf(created.task_id)).find((event) => event.type === 'interaction.finalized')
      assert.deepEqual(finalized.data.result.transcript.map((turn: { text: string }) => turn.text), ['Friday?', 'After 10 please', '[image]'])
    } finally {
      now = saved
    }
  })

  test('within the window the client sends the person messages, once per Idempotency-Key, and their statuses come back; once it has closed, 409 and nothing is sent', async () => {
    const { interactionId, agentKey } = await conversationWithAgent('+44 20 7946 0400')
    const send = (payload: object, headers: Record<string, string> = {}, key = agentKey) =>
      service.app.inject({ method: 'POST', url: `/api/v2/interactions/${interactionId}/messages`, headers: { ...bearer(key), ...headers }, payload })

    // Before the person has written, no window is open.
    const early = await send({ text: 'Hello?' })
    assert.equal(early.statusCode, 409, early.body)
    assert.match(json(early).error.message, /has not opened/)
    assert.equal(whatsapp.sessionSent.length, 0)

    const at = Math.floor(now / 1000) * 1000
    assert.equal(await whatsapp.sendReply({ from: '442079460400', text: 'Which Monday?', at }), 200)
    const first = await send({ text: 'Monday 7 December, 10:00.' }, { 'idempotency-key': 'reply-1' })
    assert.equal(first.statusCode, 201, first.body)
    const message = json(first).data
    const wire = whatsapp.sessionSent.at(-1)!
    assert.deepEqual({ to: wire.to, type: wire.type, body: wire.body }, { to: '442079460400', type: 'text', body: { body: 'Monday 7 December, 10:00.', preview_url: false } })
    assert.deepEqual(
      { status: message.status, provider_message_id: message.provider_message_id, content: message.content, interaction_id: message.interaction_id },
      { status: 'accepted', provider_message_id: wire.wamid, content: { text: 'Monday 7 December, 10:00.' }, interaction_id: interactionId },
    )
    // The same request again answers the first message, and sends nothing; the key with another message is refused.
    const again = await send({ text: 'Monday 7 December, 10:00.' }, { 'idempotency-key': 'reply-1' })
    assert.equal(again.statusCode, 201)
    assert.equal(again.headers['idempotent-replayed'], 'true')
    assert.equal(json(again).data.id, message.id)
    assert.equal((await send({ text: 'Something else' }, { 'idempotency-key': 'reply-1' })).statusCode, 409)
    assert.equal(whatsapp.sessionSent.length, 1)

    const buttons = await send({ buttons: { body: 'Does it suit you?', options: [{ id: 'yes', title: 'Yes' }, { id: 'no', title: 'Another day' }] } })
    assert.equal(buttons.statusCode, 201, buttons.body)
    assert.deepEqual(whatsapp.sessionSent.at(-1)!.body, {
      type: 'button',
      body: { text: 'Does it suit you?' },
      action: { buttons: [{ type: 'reply', reply: { id: 'yes', title: 'Yes' } }, { type: 'reply', reply: { id: 'no', title: 'Another day' } }] },
    })
    // docs/messaging.md's request, as it is written there.
    const whole = readFileSync(new URL('../../docs/messaging.md', import.meta.url), 'utf8')
    const page = whole.slice(whole.indexOf('## Answering within the window'))
    const documented = await send(JSON.parse(/-d '([\s\S]*?)'/.exec(page)![1]!), { 'idempotency-key': /Idempotency-Key: ([^']+)'/.exec(page)![1]! })
    assert.equal(documented.statusCode, 201, documented.body)
    assert.equal(whatsapp.sessionSent.at(-1)!.type, 'interactive')
    // WhatsApp's bounds, each at its field; nothing sent.
    const tooMany = await send({ buttons: { body: 'Pick', options: ['a', 'b', 'c', 'd'].map((id) => ({ id, title: id })) } })
    assert.equal(tooMany.statusCode, 422)
    const twice = await send({ buttons: { body: 'Pick', options: [{ id: 'a', title: 'A' }, { id: 'a', title: 'B' }] } })
    assert.equal(twice.statusCode, 422)
    assert.deepEqual(json(twice).detail.map((entry: { loc: unknown }) => entry.loc), [['body', 'buttons', 'options', 1, 'id']])
    assert.equal(whatsapp.sessionSent.length, 3)
    assert.equal((await send({ text: 'x' }, {}, org.key)).statusCode, 403)

    // Its statuses come back on the interaction, forward only.
    assert.equal(await whatsapp.sendStatus(wire.wamid, 'delivered'), 200)
    assert.equal(await whatsapp.sendStatus(wire.wamid, 'read'), 200)
    assert.equal(await whatsapp.sendStatus(wire.wamid, 'delivered'), 200)
    const context = json(await service.app.inject({ method: 'GET', url: `/api/v2/interactions/${interactionId}`, headers: bearer(org.key) })).data
    assert.deepEqual(
      context.messages.map((each: { id: string; status: string }) => [each.id, each.status]),
      [
        [message.id, 'read'],
        [json(buttons).data.id, 'accepted'],
        [json(documented).data.id, 'accepted'],
      ],
    )

    // A day after the person's message the window has closed.
    now += 86_400_000
    try {
      const late = await send({ text: 'Are you still there?' })
      assert.equal(late.statusCode, 409, late.body)
      assert.match(json(late).error.message, /closed at .*only an approved template/)
      assert.equal(whatsapp.sessionSent.length, 3)
    } finally {
      now -= 86_400_000
    }

    // What was sent to the person is erased with them, and nothing more can be sent.
    const eraser = json(
      await service.app.inject({ method: 'POST', url: `/admin/v1/organizations/${org.orgId}/api-keys`, headers: bearer(OPERATOR_TOKEN), payload: { name: 'dpo', scopes: ['contacts:erase'] } }),
    ).data.key
    assert.equal((await service.app.inject({ method: 'POST', url: '/api/v2/contacts/erase', headers: bearer(eraser), payload: { phone: '+44 20 7946 0400' } })).statusCode, 200)
    assert.deepEqual(await tablesHolding(service.db, 'Monday 7 December'), [])
    assert.deepEqual(await tablesHolding(service.db, 'Does it suit you?'), [])
    const afterErasure = await send({ text: 'Hello again' })
    assert.equal(afterErasure.statusCode, 409)
    assert.match(json(afterErasure).error.message, /erased/)
  })

  test('a message left sending by a process that stopped is unknown to a replay of its key a minute on, and is never sent again', async () => {
    const { interactionId, agentKey } = await conversationWithAgent('+44 20 7946 0501')
    assert.equal(await whatsapp.sendReply({ from: '442079460501', text: 'Hi?', at: Math.floor(now / 1000) * 1000 }), 200)
    const content = { text: 'At 9:00' }
    const requestHash = createHash('sha256').update(interactionId).update('\n').update(JSON.stringify(content)).digest()
    await service.db.query(
      `INSERT INTO session_messages (id, org_id, interaction_id, provider, content, status, idempotency_key, request_hash, created_at, status_at)
       VALUES ($1, $2, $3, 'whatsapp_cloud', $4, 'sending', 'stuck-1', $5, $6, $6)`,
      [newId('sessionMessage', now), org.orgId, interactionId, JSON.stringify(content), requestHash, new Date(now - 120_000)],
    )
    const sent = whatsapp.sessionSent.length
    const replay = await service.app.inject({ method: 'POST', url: `/api/v2/interactions/${interactionId}/messages`, headers: { ...bearer(agentKey), 'idempotency-key': 'stuck-1' }, payload: content })
    assert.equal(replay.statusCode, 502, replay.body)
    assert.match(json(replay).error.message, /stopped before the provider answered.*status unknown/)
    assert.equal(whatsapp.sessionSent.length, sent)
  })

  test("a session message WhatsApp refuses is not kept; one it throttles is 429 with Retry-After; one it never answers is kept unknown, never sent again", async () => {
    const { interactionId, agentKey } = await conversationWithAgent('+44 20 7946 0500')
    const send = (text: string, key?: string) =>
      service.app.inject({
        method: 'POST',
        url: `/api/v2/interactions/${interactionId}/messages`,
        headers: { ...bearer(agentKey), ...(key === undefined ? {} : { 'idempotency-key': key }) },
        payload: { text },
      })
    const messages = async () => json(await service.app.inject({ method: 'GET', url: `/api/v2/interactions/${interactionId}`, headers: bearer(org.key) })).data.messages
    assert.equal(await whatsapp.sendReply({ from: '442079460500', text: 'Tuesday when?', at: Math.floor(now / 1000) * 1000 }), 200)

    whatsapp.failNext({ httpStatus: 400, code: 131026, message: 'Message undeliverable' })
    const refused = await send('At 9:00', 'try-1')
    assert.equal(refused.statusCode, 502, refused.body)
    assert.match(json(refused).error.message, /refused the message, which was not sent/)
    assert.deepEqual(await messages(), [])
    // WhatsApp's window closed before the service's (a message of the person's it never delivered): 409, as the service's own would be.
    whatsapp.failNext({ httpStatus: 400, code: 131047, message: 'Re-engagement message' })
    const outside = await send('At 9:00', 'try-1b')
    assert.equal(outside.statusCode, 409, outside.body)
    assert.match(json(outside).error.message, /window is closed/)
    assert.deepEqual(await messages(), [])
    // Nothing was sent under the key: it may be used again.
    assert.equal((await send('At 9:00', 'try-1')).statusCode, 201)

    whatsapp.failNext({ httpStatus: 400, code: 130429, message: '(#130429) Rate limit hit' })
    const throttled = await send('At 9:30')
    assert.equal(throttled.statusCode, 429, throttled.body)
    assert.ok(Number(throttled.headers['retry-after']) >= 1)

    whatsapp.dropNext()
    const lost = await send('At 10:00', 'try-2')
    assert.equal(lost.statusCode, 502, lost.body)
    assert.match(json(lost).error.message, /status unknown/)
    const kept = (await messages()).map((message: { status: string; content: { text: string } }) => [message.content.text, message.status])
    assert.deepEqual(kept, [
      ['At 9:00', 'accepted'],
      ['At 10:00', 'unknown'],
    ])
    // A status that comes before WhatsApp's answer to the send is asked for again (Meta redelivers until a 200), then applied.
    const sentSoFar = whatsapp.sessionSent.length
    whatsapp.delayNext(500)
    const early = send('At 11:00')
    while (whatsapp.sessionSent.length === sentSoFar) await new Promise((resolve) => setImmediate(resolve))
    const earlyWamid = whatsapp.sessionSent.at(-1)!.wamid
    assert.equal(await whatsapp.sendStatus(earlyWamid, 'sent'), 503)
    assert.equal((await early).statusCode, 201)
    assert.equal(await whatsapp.sendStatus(earlyWamid, 'sent'), 200)
    assert.equal((await messages()).find((message: { provider_message_id: string }) => message.provider_message_id === earlyWamid).status, 'sent')
    // With nothing waiting for WhatsApp, a status of no message of ours is taken and ignored.
    assert.equal(await whatsapp.sendStatus('wamid.unknown', 'sent', { recipientId: '442079460500', phoneNumberId: PHONE_NUMBER_ID }), 200)

    // The same request again answers as the first did, and sends nothing more: the message may have reached the person.
    const sentBefore = whatsapp.sessionSent.length
    const again = await send('At 10:00', 'try-2')
    assert.equal(again.statusCode, 502)
    assert.match(json(again).error.message, /status unknown/)
    assert.equal(whatsapp.sessionSent.length, sentBefore)
  })

  test("the window is the person's on the task, whichever of its interactions their latest message landed on; a suppressed number gets nothing", async () => {
    const { interactionId, agentKey } = await conversationWithAgent('+44 20 7946 0600')
    const send = (text: string) =>
      service.app.inject({ method: 'POST', url: `/api/v2/interactions/${interactionId}/messages`, headers: bearer(agentKey), payload: { text } })
    const at = Math.floor(now / 1000) * 1000
    assert.equal(await whatsapp.sendReply({ from: '442079460600', text: 'Yes', at }), 200)
    // The first reply ended the conversation; the next one is an inbound interaction of the task, and keeps the window open.
    assert.equal(await whatsapp.sendReply({ from: '442079460600', text: 'One more thing', at: at + 20 * 3_600_000 }), 200)
    now += 30 * 3_600_000
    try {
      const answered = await send('Tell me')
      assert.equal(answered.statusCode, 201, answered.body)
      const manager = json(
        await service.app.inject({ method: 'POST', url: `/admin/v1/organizations/${org.orgId}/api-keys`, headers: bearer(OPERATOR_TOKEN), payload: { name: 'dnc', scopes: ['suppressions:manage'] } }),
      ).data.key
      const suppressed = await service.app.inject({ method: 'POST', url: '/api/v2/suppressions', headers: bearer(manager), payload: { phone: '+44 20 7946 0600' } })
      assert.ok(suppressed.statusCode < 300, suppressed.body)
      const refused = await send('Still there?')
      assert.equal(refused.statusCode, 409)
      assert.match(json(refused).error.message, /suppression list/)
      assert.equal(whatsapp.sessionSent.filter((message) => message.to === '442079460600').length, 1)
    } finally {
      now -= 30 * 3_600_000
    }
  })

  test('a message that answers no task is erased with its number, and swept by retention: what the person wrote leaves every table', async () => {
    const at = Math.floor(now / 1000) * 1000
    assert.equal(await whatsapp.sendReply({ from: '33142685399', text: 'Who is this? Yusuf-Q-4471', at }), 200)
    assert.equal(await whatsapp.sendReply({ from: '33142685398', text: 'Wrong number, Yusuf-R-5582', at }), 200)
    for (const needle of ['Yusuf-Q-4471', 'Yusuf-R-5582']) assert.deepEqual(await tablesHolding(service.db, needle), ['events', 'interactions'], needle)

    const eraser = json(
      await service.app.inject({ method: 'POST', url: `/admin/v1/organizations/${org.orgId}/api-keys`, headers: bearer(OPERATOR_TOKEN), payload: { name: 'dpo', scopes: ['contacts:erase'] } }),
    ).data.key
    const erased = await service.app.inject({ method: 'POST', url: '/api/v2/contacts/erase', headers: bearer(eraser), payload: { phone: '+33 1 42 68 53 99' } })
    assert.equal(erased.statusCode, 200, erased.body)
    assert.deepEqual(await tablesHolding(service.db, 'Yusuf-Q-4471'), [])
    assert.deepEqual(await tablesHolding(service.db, '+33142685399'), [])

    const retention = (days: number | null) =>
      service.app.inject({ method: 'PATCH', url: `/admin/v1/organizations/${org.orgId}`, headers: bearer(OPERATOR_TOKEN), payload: { retention_days: days } })
    assert.equal((await retention(1)).statusCode, 200)
    // Past every event of this file's tests (some run a day ahead): the sweep reads them in commit order.
    now += 3 * 86_400_000
    try {
      // A sweep runs for a tenth of a second of wall time: on a loaded machine, one run may not reach this message.
      for (let run = 0; run < 5 && (await tablesHolding(service.db, 'Yusuf-R-5582')).length > 0; run++) await service.app.workers!.dispatcher.runOnce()
      assert.deepEqual(await tablesHolding(service.db, 'Yusuf-R-5582'), [])
      assert.deepEqual(await tablesHolding(service.db, '+33142685398'), [])
    } finally {
      now -= 3 * 86_400_000
      assert.equal((await retention(null)).statusCode, 200)
    }
  })

  test('a notification with a bad signature is refused and changes nothing', async () => {
    const routingKey = await whatsappCampaign()
    const created = await trigger(routingKey, { context: { slot: 'Friday' } })
    await service.app.workers!.dispatcher.runOnce()
    const wamid = (await providerRefOf((await task(created.task_id)).interactions[0].id))!
    const body = notification({ from: '442079460958', id: 'wamid.x', timestamp: '1700000000', type: 'text', text: { body: 'hi' }, context: { from: '1', id: wamid } })
    for (const signature of [undefined, `sha256=${'0'.repeat(64)}`]) {
      const response = await fetch(`${baseUrl}/providers/whatsapp/webhook`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(signature ? { 'x-hub-signature-256': signature } : {}) },
        body,
      })
      assert.equal(response.status, 403)
    }
    assert.equal((await task(created.task_id)).status, 'in_progress')
  })

  test("the subscription handshake answers Meta's challenge only with the verify token", async () => {
    const url = `${baseUrl}/providers/whatsapp/webhook`
    const good = await whatsapp.verifySubscription(url, SECRETS.WHATSAPP_VERIFY_TOKEN!)
    assert.equal(good.status, 200)
    assert.equal(good.body, good.challenge)
    assert.equal((await whatsapp.verifySubscription(url, 'wrong')).status, 403)
  })
})
