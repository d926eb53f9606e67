/**
 * Voicemail as a policy through the whole service, on the Twilio fake: a
 * campaign whose provider_config.voicemail is leave_message places its calls
 * with asynchronous answering-machine detection; the signed AMD callback
 * saying a machine's greeting ended has the service update the live call
 * with TwiML that leaves the message; the call's completion finalizes the
 * interaction voicemail_left and the task follows attempts.voicemail_left.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { createChannels } from '../src/channels/index.ts'
import { type FakeTwilio, startFakeTwilio } from './fakes/twilio.ts'
import { eventsOfTask } from './support/events.ts'
import { bearer, freePort, json, OPERATOR_TOKEN, seedOrganization, startService, taskOf, type TestService } from './support/service.ts'

const ACCOUNT_SID = `AC${'0123456789abcdef'.repeat(2)}`
const TOKEN = 'twilio-auth-token-for-voicemail-tests'
const ALWAYS_OPEN = { timezone: 'contact', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '00:00', end: '24:00' }] }
const MESSAGE = {
  text: {
    en: 'Hello {{first_name}}, this is North Clinic about your visit at {{context.appointment_time}}. Please call us back.',
    de: 'Hallo {{first_name}}, hier ist die Praxis Nord wegen Ihres Termins um {{context.appointment_time}}.',
  },
}

let service: TestService
let twilio: FakeTwilio
let org: Awaited<ReturnType<typeof seedOrganization>>
let baseUrl: string
let now = Date.now()
let routingKeys = 0
/** The campaigns of two tests, read back at the end. */
const named: { plain?: string; retrying?: string } = {}

before(async () => {
  twilio = await startFakeTwilio({ accounts: { [ACCOUNT_SID]: TOKEN } })
  const port = await freePort()
  baseUrl = `http://127.0.0.1:${port}`
  const channels = createChannels({ publicBaseUrl: baseUrl, twilioApiBaseUrl: twilio.url, whatsappApiBaseUrl: 'http://127.0.0.1:9' }, (name) => (name === 'TWILIO_AUTH_TOKEN' ? TOKEN : undefined))
  service = await startService({ now: () => now, channels })
  await service.app.listen({ port, host: '127.0.0.1' })
  org = await seedOrganization(service.app)
})
after(async () => {
  await service.close()
  await twilio.close()
})

async function campaign(settings: { voicemail?: object; attempts?: object }): Promise<string> {
  const response = await service.app.inject({
    method: 'POST',
    url: `/admin/v1/organizations/${org.orgId}/campaigns`,
    headers: bearer(OPERATOR_TOKEN),
    payload: {
      routing_key: `voicemail-${++routingKeys}`,
      channel: 'voice',
      schedule: ALWAYS_OPEN,
      provider: 'twilio',
      provider_config: {
        account_sid: ACCOUNT_SID,
        from: '+14155550100',
        answer_url: 'https://agent.example.com/twiml',
        ...(settings.voicemail === undefined ? {} : { voicemail: settings.voicemail }),
      },
      ...(settings.attempts === undefined ? {} : { attempts: settings.attempts }),
      // The clock stands still here: at its provider's pace, a second start in one instant could wait for its sender (test/pacing.test.ts).
      pacing: { per_second: 1_000_000 },
    },
  })
  assert.equal(response.statusCode, 201, response.body)
  return json(response).data.routing_key
}

/** Triggers a task on the campaign and has the dispatcher place its call: the task, its interaction and the call's SID. */
async function placedCall(routingKey: string, contact: object = { phone: '+44 20 7946 0958', first_name: 'Ada', language: 'en-GB' }) {
  const response = await service.app.inject({
    method: 'POST',
    url: '/api/v2/triggers',
    headers: { ...bearer(org.key), 'content-type': 'application/json' },
    payload: { campaign: routingKey, ids: [{ source: 'ats', type: 'candidate', value: 'c-1' }], contact, context: { appointment_time: '10:30 & <soon>' } },
  })
  assert.equal(response.statusCode, 201, response.body)
  const taskId = json(response).data.task_id as string
  await service.app.workers!.dispatcher.runOnce()
  const interactionId = (await taskOf(service.app, org.key, taskId)).interactions[0].id as string
  const [row] = await service.db.query<{ provider_ref: string }>('SELECT provider_ref FROM interactions WHERE id = $1', [interactionId])
  return { taskId, interactionId, callSid: row!.provider_ref }
}

const createCallOf = (interactionId: string) =>
  twilio.requests.find((request) => request.method === 'POST' && String(request.form.get('StatusCallback')).includes(interactionId))!
const updatesOf = (callSid: string) => twilio.requests.filter((request) => request.method === 'POST' && request.path.endsWith(`/Calls/${callSid}.json`))

describe('voicemail: leave_message', () => {
  test('the AMD verdict after the beep leaves the message, once; the completion is voicemail_left and the task stops unreachable', async () => {
    const routingKey = await campaign({ voicemail: { policy: 'leave_message', message: MESSAGE } })
    const { taskId, interactionId, callSid } = await placedCall(routingKey)
    const create = createCallOf(interactionId)
    assert.equal(create.form.get('MachineDetection'), 'DetectMessageEnd')
    assert.equal(create.form.get('AsyncAmd'), 'true')
    assert.equal(create.form.get('AsyncAmdStatusCallback'), `${baseUrl}/providers/twilio/calls/${interactionId}/amd`)
    assert.equal(create.form.get('AsyncAmdStatusCallbackMethod'), 'POST')

    // Answered: the conversation has the call at once, while detection goes on.
    const answer = await twilio.answerCall(callSid)
    assert.equal(answer.params.AnsweredBy, undefined)
    assert.match(answer.body, /<Redirect/)

    assert.equal(await twilio.detectMachine(callSid, 'machine_end_beep'), 204)
    assert.deepEqual(twilio.twimlOf(callSid), [
      '<?xml version="1.0" encoding="UTF-8"?>\n<Response><Say language="en-GB">Hello Ada, this is North Clinic about your visit at 10:30 &amp; &lt;soon&gt;. Please call us back.</Say><Hangup/></Response>',
    ])
    const [update] = updatesOf(callSid)
    assert.equal(update!.headers.authorization, `Basic ${Buffer.from(`${ACCOUNT_SID}:${TOKEN}`).toString('base64')}`)
    const running = await taskOf(service.app, org.key, taskId)
    assert.equal(running.interactions[0].handoff.mode, 'voicemail')

    // Twilio may deliver a callback twice: no second message.
    assert.equal(await twilio.detectMachine(callSid, 'machine_end_beep'), 204)
    assert.equal(twilio.twimlOf(callSid).length, 1)
    assert.equal(updatesOf(callSid).length, 1)

    assert.equal(await twilio.finishCall(callSid, { status: 'completed', duration: 31 }), 204)
    const done = await taskOf(service.app, org.key, taskId)
    assert.equal(done.status, 'completed')
    assert.equal(done.outcome, 'unreachable')
    assert.equal(done.interactions[0].outcome, 'voicemail_left')
    assert.equal(done.interactions[0].duration_s, 31)
    const events = await eventsOfTask(service.db, taskId)
    assert.deepEqual(
      events.map((event) => [event.type, event.data.outcome]),
      [
        ['interaction.finalized', 'voicemail_left'],
        ['task.completed', 'unreachable'],
      ],
    )
  })

  test('its last callback lost, the call is settled by asking Twilio: still voicemail_left', async () => {
    const routingKey = await campaign({ voicemail: { policy: 'leave_message', message: MESSAGE } })
    const { taskId, callSid } = await placedCall(routingKey)
    await twilio.answerCall(callSid)
    await twilio.detectMachine(callSid, 'machine_end_beep')
    assert.equal(await twilio.finishCall(callSid, { status: 'completed', duration: 30, lost: true }), null)
    const settleAfter = (30 + 4 * 3600 + 15 * 60) * 1000
    now += settleAfter
    try {
      await service.app.workers!.dispatcher.runOnce()
      const done = await taskOf(service.app, org.key, taskId)
      assert.equal(done.interactions[0].outcome, 'voicemail_left')
      assert.equal(done.outcome, 'unreachable')
    } finally {
      now -= settleAfter
    }
  })

  test('texts by language: the contact’s language picks the text and the voice', async () => {
    const routingKey = await campaign({ voicemail: { policy: 'leave_message', message: MESSAGE } })
    const { callSid } = await placedCall(routingKey, { phone: '+49 30 901820', first_name: 'Jörg', language: 'de-AT' })
    await twilio.answerCall(callSid)
    assert.equal(await twilio.detectMachine(callSid, 'machine_end_silence'), 204)
    assert.deepEqual(twilio.twimlOf(callSid), [
      '<?xml version="1.0" encoding="UTF-8"?>\n<Response><Say language="de-AT">Hallo Jörg, hier ist die Praxis Nord wegen Ihres Termins um 10:30 &amp; &lt;soon&gt;.</Say><Hangup/></Response>',
    ])
  })

  test('an audio URL is played', async () => {
    const routingKey = await campaign({ voicemail: { policy: 'leave_message', message: { audio_url: 'https://cdn.example.com/reminder.mp3' } } })
    const { callSid } = await placedCall(routingKey)
    await twilio.answerCall(callSid)
    assert.equal(await twilio.detectMachine(callSid, 'machine_end_other'), 204)
    assert.deepEqual(twilio.twimlOf(callSid), ['<?xml version="1.0" encoding="UTF-8"?>\n<Response><Play>https://cdn.example.com/reminder.mp3</Play><Hangup/></Response>'])
  })

  test('retry: a message left is tried again after its own delay', async () => {
    const routingKey = await campaign({ voicemail: { policy: 'leave_message', message: MESSAGE }, attempts: { voicemail_left: { then: 'retry', delay_s: 93_600 } } })
    named.retrying = routingKey
    const { taskId, callSid } = await placedCall(routingKey)
    await twilio.answerCall(callSid)
    await twilio.detectMachine(callSid, 'machine_end_beep')
    await twilio.finishCall(callSid, { status: 'completed', duration: 25 })
    const state = await taskOf(service.app, org.key, taskId)
    assert.equal(state.status, 'pending')
    assert.equal(state.interactions[0].outcome, 'voicemail_left')
    const due = Date.parse(state.next_attempt_at)
    assert.ok(due >= now + 93_600_000 - 1_000 && due <= now + 93_600_000 + 60_000, state.next_attempt_at)
  })

  test('a person answering goes on as today: no message, the call completes reached', async () => {
    const routingKey = await campaign({ voicemail: { policy: 'leave_message', message: MESSAGE } })
    const { taskId, callSid } = await placedCall(routingKey)
    await twilio.answerCall(callSid)
    assert.equal(await twilio.detectMachine(callSid, 'human'), 204)
    assert.deepEqual(twilio.twimlOf(callSid), [])
    await twilio.finishCall(callSid, { status: 'completed', duration: 120 })
    const done = await taskOf(service.app, org.key, taskId)
    assert.equal(done.outcome, 'reached')
    assert.equal(done.interactions[0].outcome, 'completed')
    assert.equal(done.interactions[0].handoff.mode, 'redirect')
  })

  test('an AMD callback with a bad signature is refused and changes nothing', async () => {
    const routingKey = await campaign({ voicemail: { policy: 'leave_message', message: MESSAGE } })
    const { taskId, callSid } = await placedCall(routingKey)
    await twilio.answerCall(callSid)
    assert.equal(await twilio.detectMachine(callSid, 'machine_end_beep', { signature: 'AAAAAAAAAAAAAAAAAAAAAAAAAAA=' }), 403)
    assert.deepEqual(twilio.twimlOf(callSid), [])
    assert.equal(updatesOf(callSid).length, 0)
    const state = await taskOf(service.app, org.key, taskId)
    assert.equal(state.interactions[0].handoff.mode, 'redirect')
    assert.equal(state.status, 'in_progress')
  })

  test('a call over before the verdict came: Twilio refuses the update (21220) and the call stays a machine’s', async () => {
    const routingKey = await campaign({ voicemail: { policy: 'leave_message', message: MESSAGE } })
    const { taskId, interactionId, callSid } = await placedCall(routingKey)
    await twilio.answerCall(callSid)
    twilio.failNext({ status: 400, code: 21220, message: 'Call is not in-progress. Cannot redirect.' })
    assert.equal(await twilio.detectMachine(callSid, 'machine_end_beep'), 204)
    const [row] = await service.db.query<{ mode: string }>("SELECT handoff->>'mode' AS mode FROM interactions WHERE id = $1", [interactionId])
    assert.equal(row!.mode, 'redirect')
    await twilio.finishCall(callSid, { status: 'completed', duration: 8 })
    const done = await taskOf(service.app, org.key, taskId)
    assert.equal(done.interactions[0].outcome, 'completed')
  })
})

describe('voicemail: hang_up', () => {
  test('without the setting, and with hang_up, the call is created as ever and a machine ends it voicemail', async () => {
    named.plain = await campaign({})
    const without = await placedCall(named.plain)
    const withHangUp = await placedCall(await campaign({ voicemail: { policy: 'hang_up' } }))
    const forms = [without, withHangUp].map(({ interactionId }) =>
      [...createCallOf(interactionId).form].map(([name, value]) => [name, value.replace(interactionId, '{id}')]),
    )
    assert.deepEqual(forms[0], forms[1])
    assert.equal(createCallOf(without.interactionId).form.get('MachineDetection'), 'Enable')
    assert.equal(createCallOf(without.interactionId).form.has('AsyncAmd'), false)

    await twilio.answerCall(withHangUp.callSid, { answeredBy: 'machine_start' })
    await twilio.finishCall(withHangUp.callSid, { status: 'completed', answeredBy: 'machine_end_beep', duration: 20 })
    const state = await taskOf(service.app, org.key, withHangUp.taskId)
    assert.equal(state.interactions[0].outcome, 'voicemail')
    assert.equal(state.status, 'pending')
    assert.equal(twilio.twimlOf(withHangUp.callSid).length, 0)
  })

  test('the campaign reads as before: no voicemail_left in its attempts unless sent', async () => {
    const response = await service.app.inject({ method: 'GET', url: `/admin/v1/organizations/${org.orgId}/campaigns`, headers: bearer(OPERATOR_TOKEN) })
    const campaigns = json(response).data as { routing_key: string; attempts: Record<string, unknown> }[]
    assert.equal(campaigns.find((each) => each.routing_key === named.plain)!.attempts.voicemail_left, undefined)
    assert.deepEqual(campaigns.find((each) => each.routing_key === named.retrying)!.attempts.voicemail_left, { then: 'retry', delay_s: 93_600 })
    // The voicemail policy is read back with the rest of the provider's settings, as it was sent.
    const provider = (campaigns.find((each) => each.routing_key === named.retrying) as unknown as { provider_config: object }).provider_config
    assert.deepEqual(provider, { account_sid: ACCOUNT_SID, from: '+14155550100', answer_url: 'https://agent.example.com/twiml', voicemail: { policy: 'leave_message', message: MESSAGE } })
  })
})

describe('voicemail: the setting is validated', () => {
  test('422 per field', async () => {
    const response = await service.app.inject({
      method: 'POST',
      url: `/admin/v1/organizations/${org.orgId}/campaigns`,
      headers: bearer(OPERATOR_TOKEN),
      payload: {
        routing_key: 'voicemail-invalid',
        channel: 'voice',
        provider: 'twilio',
        provider_config: {
          account_sid: ACCOUNT_SID,
          from: '+14155550100',
          answer_url: 'https://agent.example.com/twiml',
          voicemail: { policy: 'leave_message', message: { audio_url: 'http://cdn.example.com/m.mp3' } },
        },
        attempts: { voicemail_left: { then: 'later' } },
      },
    })
    assert.equal(response.statusCode, 422, response.body)
    const locs = (json(response).detail as { loc: string[] }[]).map((entry) => entry.loc.join('.'))
    assert.ok(locs.includes('body.attempts.voicemail_left.then'), locs.join(' '))
  })

  test('422 for a voicemail rule that would never apply: a delay after stop, a rule on a WhatsApp campaign', async () => {
    const create = (payload: Record<string, unknown>) =>
      service.app.inject({ method: 'POST', url: `/admin/v1/organizations/${org.orgId}/campaigns`, headers: bearer(OPERATOR_TOKEN), payload })
    const details = async (payload: Record<string, unknown>) => {
      const response = await create(payload)
      assert.equal(response.statusCode, 422, response.body)
      return (json(response).detail as { loc: string[]; msg: string }[]).map((entry) => [entry.loc.join('.'), entry.msg])
    }
    assert.deepEqual(await details({ routing_key: 'voicemail-stop-delay', channel: 'voice', attempts: { voicemail_left: { then: 'stop', delay_s: 3600 } } }), [
      ['body.attempts.voicemail_left.delay_s', 'Value error, delay_s applies only when then is retry'],
    ])
    assert.deepEqual(await details({ routing_key: 'voicemail-on-whatsapp', channel: 'whatsapp', attempts: { voicemail_left: { then: 'retry' } } }), [
      ['body.attempts.voicemail_left', 'Value error, voicemail_left applies to voice campaigns only'],
    ])
    // With retry, a delay is what it is for.
    const created = await create({ routing_key: 'voicemail-retry-delay', channel: 'voice', attempts: { voicemail_left: { then: 'retry', delay_s: 3600 } } })
    assert.equal(created.statusCode, 201, created.body)
  })

  test('422 for the voicemail message once the rest is valid', async () => {
    const response = await service.app.inject({
      method: 'POST',
      url: `/admin/v1/organizations/${org.orgId}/campaigns`,
      headers: bearer(OPERATOR_TOKEN),
      payload: {
        routing_key: 'voicemail-invalid',
        channel: 'voice',
        provider: 'twilio',
        provider_config: {
          account_sid: ACCOUNT_SID,
          from: '+14155550100',
          answer_url: 'https://agent.example.com/twiml',
          voicemail: { policy: 'leave_message', message: { audio_url: 'http://cdn.example.com/m.mp3' } },
        },
      },
    })
    assert.equal(response.statusCode, 422, response.body)
    assert.deepEqual(
      (json(response).detail as { loc: string[]; msg: string }[]).map((entry) => [entry.loc.join('.'), entry.msg]),
      [['body.provider_config.voicemail.message.audio_url', 'Value error, audio_url must be an https URL']],
    )
  })
})
