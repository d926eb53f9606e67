/**
 * Calls back through the whole service, on the Twilio fake: a person calls a
 * campaign's number (its voice webhook, signed as Twilio signs), the call
 * lands on their task and is handed to the conversation with the task's
 * context and direction=inbound; its end steers the task as an outbound
 * conversation's does, and the client hears of it with its ids.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { after, before, describe, test } from 'node:test'
import { callbackNumberOf, stepAfterCallBack } from '../src/domain/callbacks.ts'
import { type FakeTwilio, startFakeTwilio, twilioSignature } from './fakes/twilio.ts'
import { eventsOfTask, eventsOfTasklessInteractions } from './support/events.ts'
import { acceptedTrigger, bearer, createCampaign, json, OPERATOR_TOKEN, seedOrganization, startCalledBackService, taskOf, type TestService } from './support/service.ts'

const ACCOUNT_SID = `AC${'0123456789abcdef'.repeat(2)}`
const TOKEN = 'twilio-auth-token-for-callback-tests'
const OTHER_ACCOUNT_SID = `AC${'fedcba9876543210'.repeat(2)}`
const CAMPAIGN_NUMBER = '+14155550100'
const ALWAYS_OPEN = { timezone: 'contact', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '00:00', end: '24:00' }] }
const DAY_MS = 24 * 60 * 60 * 1000

let service: TestService
let twilio: FakeTwilio
let org: Awaited<ReturnType<typeof startCalledBackService>>['org']
let baseUrl: string
let now = Date.parse('2026-06-01T10:00:00Z')
let people = 0
let routingKey: string

before(async () => {
  twilio = await startFakeTwilio({ accounts: { [ACCOUNT_SID]: TOKEN, [OTHER_ACCOUNT_SID]: 'another-accounts-token' } })
  ;({ service, baseUrl, org } = await startCalledBackService({ now: () => now, apiBaseUrls: { twilioApiBaseUrl: twilio.url }, secrets: { TWILIO_AUTH_TOKEN: TOKEN } }))
  routingKey = (
    await createCampaign(service.app, org.orgId, {
      routing_key: 'interviews',
      channel: 'voice',
      schedule: ALWAYS_OPEN,
      context: { company: 'Acme' },
      provider: 'twilio',
      provider_config: { account_sid: ACCOUNT_SID, from: CAMPAIGN_NUMBER, answer_url: 'https://agent.example.com/twiml' },
      attempts: { max: 3, retry_delays_s: { no_answer: 3600, busy: 3600, failed: 3600, voicemail: 3600 } },
      pacing: { per_second: 1_000_000 },
    })
  ).routing_key
})
after(async () => {
  await service.close()
  await twilio.close()
})

/** A new person's number, in Ofcom's drama range. */
const nextPhone = () => `+44207946${String(++people).padStart(4, '0')}`

/** A task whose first call went unanswered: pending, its retry an hour away. */
async function taskAfterMissedCall(phone: string, value: string) {
  const trigger = await acceptedTrigger(service.app, org.key, {
    campaign: routingKey,
    ids: [{ source: 'ats', type: 'candidate', value }],
    contact: { phone, first_name: 'Ada', language: 'en-GB' },
    context: { role: 'nurse' },
  })
  await service.app.workers!.dispatcher.runOnce()
  const task = await taskOf(service.app, org.key, trigger.task_id)
  const [row] = await service.db.query<{ provider_ref: string }>('SELECT provider_ref FROM interactions WHERE id = $1', [task.interactions[0].id])
  assert.equal(await twilio.finishCall(row!.provider_ref, { status: 'no-answer' }), 204)
  const missed = await taskOf(service.app, org.key, trigger.task_id)
  assert.equal(missed.status, 'pending')
  return { taskId: trigger.task_id, triggerId: trigger.id }
}

const voiceUrl = () => `${baseUrl}/providers/twilio/voice/inbound`
const statusUrl = () => `${baseUrl}/providers/twilio/voice/inbound/status`
const callsCreated = () => twilio.requests.filter((request) => request.method === 'POST' && request.path.endsWith('/Calls.json')).length
const interactionCount = async () => Number((await service.db.query<{ n: string }>('SELECT count(*) AS n FROM interactions'))[0]!.n)

function callBack(from: string, options: { signature?: string | null; accountSid?: string } = {}) {
  return twilio.receiveCall({ accountSid: options.accountSid ?? ACCOUNT_SID, from, to: CAMPAIGN_NUMBER, voiceUrl: voiceUrl(), statusCallback: statusUrl(), signature: options.signature })
}

/**
 * A new task's first attempt, being placed: Twilio takes its Create Call and
 * answers it only after 300 ms, time for the person's own call to come in.
 * The dispatcher's round (to await), and the attempt's interaction, starting.
 */
async function attemptBeingPlaced(phone: string, value: string) {
  const trigger = await acceptedTrigger(service.app, org.key, { campaign: routingKey, ids: [{ source: 'ats', type: 'candidate', value }], contact: { phone } })
  twilio.delayNext(300)
  const round = service.app.workers!.dispatcher.runOnce()
  let starting: { id: string }[] = []
  while (starting.length === 0) {
    await new Promise((resolve) => setTimeout(resolve, 5))
    starting = await service.db.query<{ id: string }>(`SELECT id FROM interactions WHERE task_id = $1 AND direction = 'outbound' AND status = 'starting'`, [trigger.task_id])
  }
  return { trigger, round, starting: starting[0]! }
}

/** The query of the <Redirect> the TwiML answers with. */
function redirectQuery(twiml: string): URLSearchParams {
  const match = /<Redirect method="POST">([^<]+)<\/Redirect>/.exec(twiml)
  assert.ok(match, twiml)
  return new URL(match[1]!.replaceAll('&amp;', '&')).searchParams
}

describe('a person calls back a campaign number', () => {
  test('the call lands on their open task: handed over with the ids and direction=inbound, the task held; its end completes the task reached and the retry never dials', async () => {
    const phone = nextPhone()
    const { taskId } = await taskAfterMissedCall(phone, 'c-open')
    const { callSid, answer } = await callBack(phone)
    assert.equal(answer.status, 200, answer.body)
    assert.match(answer.contentType ?? '', /^text\/xml/)
    const query = redirectQuery(answer.body)
    assert.equal(query.get('task_id'), taskId)
    assert.equal(query.get('direction'), 'inbound')
    assert.equal(query.get('attempt'), null)
    const interactionId = query.get('interaction_id')!
    // docs/callbacks.md shows this TwiML, but for its ids.
    const documented = /```xml\n\s*([\s\S]*?)```/.exec(readFileSync(new URL('../docs/callbacks.md', import.meta.url), 'utf8'))![1]!.replace(/\n\s+/g, '\n').trim()
    assert.equal(answer.body.replaceAll(interactionId, 'int_...').replaceAll(taskId, 'tsk_...'), documented)

    const held = await taskOf(service.app, org.key, taskId)
    assert.equal(held.status, 'pending')
    assert.equal(held.waiting.for, 'callback')
    assert.equal(held.attempts, 1, 'a call back is no attempt')
    const inbound = held.interactions.find((interaction: { id: string }) => interaction.id === interactionId)
    assert.equal(inbound.direction, 'inbound')
    assert.equal(inbound.status, 'active')

    // The conversation reads whom it serves and why.
    const read = await service.app.inject({ method: 'GET', url: `/api/v2/interactions/${interactionId}`, headers: bearer(org.key) })
    assert.equal(read.statusCode, 200, read.body)
    const context = json(read).data
    assert.deepEqual(context.ids, [{ source: 'ats', type: 'candidate', value: 'c-open' }])
    assert.equal(context.contact.first_name, 'Ada')
    assert.deepEqual(context.context, { company: 'Acme', role: 'nurse' })

    assert.equal(await twilio.finishCall(callSid, { status: 'completed', duration: 95 }), 204)
    const done = await taskOf(service.app, org.key, taskId)
    assert.equal(done.status, 'completed')
    assert.equal(done.outcome, 'reached')
    const events = await eventsOfTask(service.db, taskId)
    const finalized = events.filter((event) => event.type === 'interaction.finalized').at(-1)
    assert.equal(finalized.data.interaction_id, interactionId)
    assert.equal(finalized.data.direction, 'inbound')
    assert.equal(finalized.data.outcome, 'completed')
    assert.deepEqual(finalized.data.ids, [{ source: 'ats', type: 'candidate', value: 'c-open' }])
    assert.equal(events.at(-1).type, 'task.completed')
    assert.equal(events.at(-1).data.outcome, 'reached')

    // The hour of the retry passes: nothing dials the person again.
    const before = callsCreated()
    now += 2 * 3600 * 1000
    await service.app.workers!.dispatcher.runOnce()
    assert.equal(callsCreated(), before)
  })

  test('Twilio asking again about the same call is answered for the interaction recorded first', async () => {
    const phone = nextPhone()
    await taskAfterMissedCall(phone, 'c-repeat')
    const { callSid, answer } = await callBack(phone)
    const first = redirectQuery(answer.body).get('interaction_id')
    const params = { AccountSid: ACCOUNT_SID, CallSid: callSid, From: phone, To: CAMPAIGN_NUMBER, CallStatus: 'ringing', Direction: 'inbound', ApiVersion: '2010-04-01' }
    const count = await interactionCount()
    const again = await fetch(voiceUrl(), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': twilioSignature(TOKEN, voiceUrl(), params) },
      body: new URLSearchParams(params).toString(),
    })
    assert.equal(again.status, 200)
    assert.equal(redirectQuery(await again.text()).get('interaction_id'), first)
    assert.equal(await interactionCount(), count)
    await twilio.finishCall(callSid, { status: 'completed', duration: 10 })
  })

  test('a caller with no task gets the campaign conversation without one, recorded as an inbound interaction of the campaign', async () => {
    const { callSid, answer } = await callBack(nextPhone())
    assert.equal(answer.status, 200, answer.body)
    const query = redirectQuery(answer.body)
    assert.equal(query.get('task_id'), null)
    assert.equal(query.get('direction'), 'inbound')
    assert.equal(await twilio.finishCall(callSid, { status: 'completed', duration: 30 }), 204)
    const [event] = await eventsOfTasklessInteractions(service.db)
    assert.equal(event.data.interaction_id, query.get('interaction_id'))
    assert.equal(event.data.direction, 'inbound')
    assert.equal(event.data.task_id, null)
  })

  test("a campaign with an unknown_caller_message says it to a caller with no task and hangs up; a known caller is handed over", async () => {
    const number = '+14155550101'
    const message = 'Thank you for calling Acme Recruiting & Co. Please write to jobs@example.com.'
    const clinic = await createCampaign(service.app, org.orgId, {
      routing_key: 'front-desk',
      channel: 'voice',
      schedule: ALWAYS_OPEN,
      provider: 'twilio',
      provider_config: { account_sid: ACCOUNT_SID, from: number, answer_url: 'https://agent.example.com/twiml', unknown_caller_message: message },
      pacing: { per_second: 1_000_000 },
    })
    const unknown = await twilio.receiveCall({ accountSid: ACCOUNT_SID, from: nextPhone(), to: number, voiceUrl: voiceUrl(), statusCallback: statusUrl() })
    assert.equal(unknown.answer.body, '<?xml version="1.0" encoding="UTF-8"?>\n<Response><Say>Thank you for calling Acme Recruiting &amp; Co. Please write to jobs@example.com.</Say><Hangup/></Response>')
    assert.equal(await twilio.finishCall(unknown.callSid, { status: 'completed', duration: 6 }), 204)
    const [event] = await eventsOfTasklessInteractions(service.db)
    assert.equal(event.data.campaign, clinic.routing_key)
    assert.equal(event.data.direction, 'inbound')

    const phone = nextPhone()
    const { taskId } = await taskAfterMissedCall(phone, 'c-front-desk')
    const known = await twilio.receiveCall({ accountSid: ACCOUNT_SID, from: phone, to: number, voiceUrl: voiceUrl(), statusCallback: statusUrl() })
    assert.equal(redirectQuery(known.answer.body).get('task_id'), taskId)
    await twilio.finishCall(known.callSid, { status: 'completed', duration: 6 })

    const tooLong = await service.app.inject({
      method: 'PATCH',
      url: `/admin/v1/organizations/${org.orgId}/campaigns/${clinic.id}`,
      headers: bearer(OPERATOR_TOKEN),
      payload: { provider_config: { account_sid: ACCOUNT_SID, from: number, answer_url: 'https://agent.example.com/twiml', unknown_caller_message: 'x'.repeat(1001) } },
    })
    assert.equal(tooLong.statusCode, 422, tooLong.body)
    assert.deepEqual(json(tooLong).detail[0].loc, ['body', 'provider_config', 'unknown_caller_message'])
  })

  test("an organization's callback number, which no campaign calls from, lands a caller on their task through the task's campaign; a caller with none gets the default of the campaign it names", async () => {
    const line = '+14155550199'
    const message = 'Thank you for calling Acme. Please write to jobs@example.com.'
    const hotline = await createCampaign(service.app, org.orgId, {
      routing_key: 'hotline',
      channel: 'voice',
      schedule: ALWAYS_OPEN,
      provider: 'twilio',
      provider_config: { account_sid: ACCOUNT_SID, from: '+14155550102', answer_url: 'https://hotline.example.com/twiml', unknown_caller_message: message },
      pacing: { per_second: 1_000_000 },
    })
    const admin = bearer(OPERATOR_TOKEN)
    const put = (orgId: string, callbackNumbers: unknown) =>
      service.app.inject({ method: 'PUT', url: `/admin/v1/organizations/${orgId}/callback-numbers`, headers: admin, payload: { callback_numbers: callbackNumbers } })

    const refused = await put(org.orgId, [
      { number: 'the front desk', campaign_id: hotline.id },
      { number: line, campaign_id: 'cmp_01m8xw6d5bfy6bns34c8g4v2sg' },
      { number: '+1 415 555 0198', campaign_id: hotline.id },
      { number: '+14155550198', campaign_id: hotline.id },
    ])
    assert.equal(refused.statusCode, 422, refused.body)
    assert.deepEqual(
      json(refused).detail.map((entry: { loc: unknown[] }) => entry.loc),
      [
        ['body', 'callback_numbers', 0, 'number'],
        ['body', 'callback_numbers', 1, 'campaign_id'],
        ['body', 'callback_numbers', 3, 'number'],
      ],
    )
    // docs/callbacks.md's request, but for its ids.
    const documented = /callback-numbers" \\\n[\s\S]*?-d '([^']+)'/.exec(readFileSync(new URL('../docs/callbacks.md', import.meta.url), 'utf8'))![1]!
    assert.deepEqual(JSON.parse(documented), { callback_numbers: [{ number: line, campaign_id: 'cmp_...' }] })
    const set = await put(org.orgId, [{ number: '+1 415 555 0199', campaign_id: hotline.id }])
    assert.equal(set.statusCode, 200, set.body)
    const listed = json(await service.app.inject({ method: 'GET', url: `/admin/v1/organizations/${org.orgId}/callback-numbers`, headers: admin })).data
    assert.deepEqual(listed, json(set).data)
    assert.deepEqual(
      listed.map(({ created_at: _, ...entry }: { created_at: string }) => entry),
      [{ number: line, provider: 'twilio', campaign_id: hotline.id }],
    )

    // Another organization cannot name it.
    const other = await seedOrganization(service.app)
    const theirs = await createCampaign(service.app, other.orgId, {
      routing_key: 'theirs',
      channel: 'voice',
      provider: 'twilio',
      provider_config: { account_sid: ACCOUNT_SID, from: '+14155550103', answer_url: 'https://theirs.example.com/twiml' },
    })
    const taken = await put(other.orgId, [{ number: line, campaign_id: theirs.id }])
    assert.equal(taken.statusCode, 422, taken.body)
    assert.deepEqual(json(taken).detail[0].loc, ['body', 'callback_numbers', 0, 'number'])
    assert.match(json(taken).detail[0].msg, /another organization/)

    // A person whose task is the interviews campaign's calls the line: handed over as that campaign hands over.
    const phone = nextPhone()
    const { taskId } = await taskAfterMissedCall(phone, 'c-line')
    const known = await twilio.receiveCall({ accountSid: ACCOUNT_SID, from: phone, to: line, voiceUrl: voiceUrl(), statusCallback: statusUrl() })
    assert.equal(known.answer.status, 200, known.answer.body)
    const query = redirectQuery(known.answer.body)
    assert.equal(query.get('task_id'), taskId)
    assert.match(known.answer.body, /https:\/\/agent\.example\.com\/twiml/)
    assert.equal(await twilio.finishCall(known.callSid, { status: 'completed', duration: 40 }), 204)
    assert.equal((await taskOf(service.app, org.key, taskId)).outcome, 'reached')

    const unknown = await twilio.receiveCall({ accountSid: ACCOUNT_SID, from: nextPhone(), to: line, voiceUrl: voiceUrl(), statusCallback: statusUrl() })
    assert.match(unknown.answer.body, /<Say>Thank you for calling Acme\. Please write to jobs@example\.com\.<\/Say><Hangup\/>/)
    await twilio.finishCall(unknown.callSid, { status: 'completed', duration: 5 })

    const cleared = await put(org.orgId, [])
    assert.equal(cleared.statusCode, 200, cleared.body)
    assert.deepEqual(json(cleared).data, [])
  })

  test('a call back to a task completed within the window lands on it without reopening it; past the window, the caller is unknown', async () => {
    const phone = nextPhone()
    const { taskId } = await taskAfterMissedCall(phone, 'c-window')
    const cancelled = await service.app.inject({ method: 'POST', url: `/api/v2/tasks/${taskId}/cancel`, headers: bearer(org.key) })
    assert.equal(cancelled.statusCode, 200, cancelled.body)

    now += 3 * DAY_MS
    const within = await callBack(phone)
    assert.equal(redirectQuery(within.answer.body).get('task_id'), taskId)
    await twilio.finishCall(within.callSid, { status: 'completed', duration: 20 })
    const task = await taskOf(service.app, org.key, taskId)
    assert.equal(task.outcome, 'cancelled')
    const finalized = (await eventsOfTask(service.db, taskId)).filter((event) => event.type === 'interaction.finalized').at(-1)
    assert.equal(finalized.data.direction, 'inbound')

    const tooLong = await service.app.inject({ method: 'PATCH', url: `/admin/v1/organizations/${org.orgId}`, headers: bearer(OPERATOR_TOKEN), payload: { callback_window_days: 366 } })
    assert.equal(tooLong.statusCode, 422, tooLong.body)
    assert.deepEqual(json(tooLong).detail[0].loc, ['body', 'callback_window_days'])
    const window = await service.app.inject({ method: 'PATCH', url: `/admin/v1/organizations/${org.orgId}`, headers: bearer(OPERATOR_TOKEN), payload: { callback_window_days: 2 } })
    assert.equal(window.statusCode, 200, window.body)
    assert.equal(json(window).data.callback_window_days, 2)
    const past = await callBack(phone)
    assert.equal(redirectQuery(past.answer.body).get('task_id'), null)
    await twilio.finishCall(past.callSid, { status: 'completed', duration: 5 })
    const restored = await service.app.inject({ method: 'PATCH', url: `/admin/v1/organizations/${org.orgId}`, headers: bearer(OPERATOR_TOKEN), payload: { callback_window_days: 14 } })
    assert.equal(restored.statusCode, 200)
  })

  test('a caller who hangs up before the handoff spends no attempt: the task is due again when it was before the call', async () => {
    const phone = nextPhone()
    const { taskId } = await taskAfterMissedCall(phone, 'c-hangup')
    const due = (await taskOf(service.app, org.key, taskId)).next_attempt_at
    const { callSid } = await callBack(phone)
    assert.equal(await twilio.finishCall(callSid, { status: 'canceled' }), 204)
    const task = await taskOf(service.app, org.key, taskId)
    assert.equal(task.status, 'pending')
    assert.equal(task.waiting, undefined)
    assert.equal(task.attempts, 1)
    assert.equal(task.next_attempt_at, due)
  })

  test('a call back while an outbound attempt to the person is being placed wins: the attempt is given back and its end steers nothing; one conversation', async () => {
    const phone = nextPhone()
    const { trigger, round, starting } = await attemptBeingPlaced(phone, 'c-race')
    const { callSid, answer } = await callBack(phone)
    assert.equal(redirectQuery(answer.body).get('task_id'), trigger.task_id)
    await round
    const held = await taskOf(service.app, org.key, trigger.task_id)
    assert.equal(held.status, 'pending')
    assert.equal(held.waiting.for, 'callback')
    assert.equal(held.attempts, 0, 'the outbound attempt is given back')

    // The person is on the line with the call back: the outbound call finds them busy, which moves the task no further.
    const [outbound] = await service.db.query<{ provider_ref: string }>('SELECT provider_ref FROM interactions WHERE id = $1', [starting.id])
    assert.equal(await twilio.finishCall(outbound!.provider_ref, { status: 'busy' }), 204)
    const still = await taskOf(service.app, org.key, trigger.task_id)
    assert.equal(still.status, 'pending')
    assert.equal(still.waiting.for, 'callback')
    assert.equal(still.attempts, 0)

    assert.equal(await twilio.finishCall(callSid, { status: 'completed', duration: 60 }), 204)
    const done = await taskOf(service.app, org.key, trigger.task_id)
    assert.equal(done.outcome, 'reached')
    assert.equal(done.attempts, 0)
    assert.deepEqual(
      done.interactions.map((interaction: { direction: string; outcome: string }) => [interaction.direction, interaction.outcome]),
      [['outbound', 'busy'], ['inbound', 'completed']],
    )
  })

  test('an attempt given back to a call back that reached no one is made again, numbered as it was', async () => {
    const phone = nextPhone()
    const { trigger, round } = await attemptBeingPlaced(phone, 'c-race-2')
    const first = await callBack(phone)
    await round
    // The call back ends before the attempt it beat (still ringing a busy line): the attempt is made again at once.
    assert.equal(await twilio.finishCall(first.callSid, { status: 'canceled' }), 204)
    const released = await taskOf(service.app, org.key, trigger.task_id)
    assert.equal(released.status, 'pending')
    assert.equal(released.attempts, 0)
    assert.equal(Date.parse(released.next_attempt_at), now, 'due again at once, as a withdrawn start is')
    await service.app.workers!.dispatcher.runOnce()
    assert.equal((await taskOf(service.app, org.key, trigger.task_id)).attempts, 1)

    // The person calls again while both outbound calls are live: only the attempt that counts is given back.
    const second = await callBack(phone)
    assert.equal((await taskOf(service.app, org.key, trigger.task_id)).attempts, 0)
    assert.equal(await twilio.finishCall(second.callSid, { status: 'canceled' }), 204)
    await service.app.workers!.dispatcher.runOnce()
    const again = await taskOf(service.app, org.key, trigger.task_id)
    assert.equal(again.attempts, 1)
    assert.deepEqual(
      again.interactions.map((interaction: { direction: string; attempt: number | null }) => `${interaction.direction} ${interaction.attempt}`).sort(),
      ['inbound null', 'inbound null', 'outbound 1', 'outbound null', 'outbound null'],
    )
    // The attempts given back end busy: the task, its third attempt running, is not moved by them.
    for (const row of await service.db.query<{ provider_ref: string }>(`SELECT provider_ref FROM interactions WHERE task_id = $1 AND direction = 'outbound' AND attempt IS NULL`, [trigger.task_id])) {
      assert.equal(await twilio.finishCall(row.provider_ref, { status: 'busy' }), 204)
    }
    const running = await taskOf(service.app, org.key, trigger.task_id)
    assert.equal(running.status, 'in_progress')
    assert.equal(running.attempts, 1)
  })

  test('a forged, unsigned or other account’s request is refused 403 and records nothing', async () => {
    const phone = nextPhone()
    await taskAfterMissedCall(phone, 'c-forged')
    const count = await interactionCount()
    for (const options of [{ signature: null }, { signature: twilioSignature('not-the-token', voiceUrl(), { To: CAMPAIGN_NUMBER }) }, { accountSid: OTHER_ACCOUNT_SID }]) {
      const { answer } = await callBack(phone, options)
      assert.equal(answer.status, 403, JSON.stringify(options))
    }
    // A number no campaign calls from.
    const stranger = await twilio.receiveCall({ accountSid: ACCOUNT_SID, from: phone, to: '+14155550199', voiceUrl: voiceUrl() })
    assert.equal(stranger.answer.status, 403)
    assert.equal(await interactionCount(), count)
    // A status callback about a call the service never answered.
    const params = { AccountSid: ACCOUNT_SID, CallSid: `CA${'ab'.repeat(16)}`, CallStatus: 'completed' }
    const status = await fetch(statusUrl(), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': twilioSignature(TOKEN, statusUrl(), params) },
      body: new URLSearchParams(params).toString(),
    })
    assert.equal(status.status, 403)
  })
})

describe('stepAfterCallBack', () => {
  const NOW = Date.parse('2026-06-01T10:00:00Z')
  const LATER = NOW + 3600_000
  const cases = [
    { name: 'reached: completes reached', step: { kind: 'complete', outcome: 'reached' }, reached: true, expected: { kind: 'complete', outcome: 'reached' } },
    { name: 'an opt-out completes opted_out', step: { kind: 'complete', outcome: 'opted_out' }, reached: true, expected: { kind: 'complete', outcome: 'opted_out' } },
    { name: 'a callback time asked for: due then', step: { kind: 'retry', dueAt: LATER, callback: true }, reached: true, expected: { kind: 'release', dueAt: LATER } },
    { name: 'no conversation: due where it was, not at the ladder', step: { kind: 'retry', dueAt: LATER, callback: false }, reached: false, expected: { kind: 'release', dueAt: null } },
    { name: 'no conversation with attempts spent: no unreachable', step: { kind: 'complete', outcome: 'unreachable' }, reached: false, expected: { kind: 'release', dueAt: null } },
    { name: 'no conversation: no fallback', step: { kind: 'fall_back', campaignId: 'cmp_1', condition: 'undelivered', dueAt: LATER }, reached: false, expected: { kind: 'release', dueAt: null } },
  ] as const
  for (const { name, step, reached, expected } of cases) {
    test(name, () => assert.deepEqual(stepAfterCallBack(step, reached), expected))
  }
})

describe('callbackNumberOf', () => {
  const TABLE: [name: string, provider: Parameters<typeof callbackNumberOf>[0], number: string, kept: string | RegExp][] = [
    ['a Twilio number, normalized', 'twilio', '+1 (415) 555-0199', '+14155550199'],
    ['a Retell number, normalized', 'retell', '+44 20 7946 0958', '+442079460958'],
    ['a national number, refused', 'twilio', '(415) 555-0199', /international form/],
    ['a Vapi phone number id, trimmed', 'vapi', ' c4115b4c-0000-4000-8000-00000000ca11 ', 'c4115b4c-0000-4000-8000-00000000ca11'],
    ['an ElevenLabs agent id', 'elevenlabs', 'agent_7101k5k3d6zmf0xbyb5g5jyh3b1z', 'agent_7101k5k3d6zmf0xbyb5g5jyh3b1z'],
    ['an id with a space, refused', 'vapi', 'front desk', /printable ASCII/],
    ['an id too long, refused', 'elevenlabs', 'a'.repeat(257), /1 to 256/],
    ['a platform that takes no calls', 'whatsapp_cloud', '+14155550199', /takes no calls/],
    ['the simulator', 'simulator', '+14155550199', /takes no calls/],
  ]
  for (const [name, provider, number, kept] of TABLE) {
    test(name, () => {
      const read = callbackNumberOf(provider, number)
      if (typeof kept === 'string') assert.deepEqual(read, { number: kept })
      else assert.match('problem' in read ? read.problem : '', kept)
    })
  }
})
