/**
 * Conversations through the whole service: an app reads its context by the
 * interaction; Twilio's request for an answered call is answered with the
 * TwiML that hands the call over (redirect or stream); a result reported
 * during the campaign's wait, before the call's last status, or after it, is
 * reported on the events with the client's ids; a callback time and an
 * opt-out decide the task's next step; every 422 of the result route.
 * Twilio is a local fake speaking its wire format; the clock is injected.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { createChannels } from '../src/channels/index.ts'
import { RESULT_LIMITS } from '../src/domain/conversationResult.ts'
import { type FakeTwilio, startFakeTwilio } from './fakes/twilio.ts'
import { type Receiver, startReceiver } from './support/receiver.ts'
import { acceptedTrigger, bearer, createCampaign, freePort, json, OPERATOR_TOKEN, seedOrganization, startService, taskOf, type TestService } from './support/service.ts'

const ACCOUNT_SID = `AC${'0123456789abcdef'.repeat(2)}`
const AUTH_TOKEN = 'twilio-auth-token-for-conversations'
const ALWAYS_OPEN = { timezone: 'contact', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '00:00', end: '24:00' }] }
const SCOPES = ['triggers:write', 'triggers:read', 'conversations:read', 'conversations:write', 'suppressions:manage', 'webhooks:manage']
const ADA = { first_name: 'Ada', last_name: 'Lovelace', phone: '+44 20 7946 0958', language: 'en-GB' }
const IDS = [{ source: 'ATS', type: 'Candidate', value: 'C-77' }]
const RESULT = {
  disposition: 'interested',
  summary: 'Still interested in the Analyst role; free Tuesday afternoons.',
  data: { interested: true, available_from: '2026-12-07', notice_weeks: 4 },
  transcript: [
    { role: 'agent', text: 'Hello Ada, are you still interested in the Analyst role?', at: '2026-06-01T10:00:03Z' },
    { role: 'contact', text: 'Yes, very much.', at: '2026-06-01T10:00:06+00:00' },
  ],
  recording_url: 'https://recordings.example.com/r/123',
}

let service: TestService
let twilio: FakeTwilio
let receiver: Receiver
let org: Awaited<ReturnType<typeof seedOrganization>>
/** Monday 2026-06-01, 11:00 in London. */
let now = Date.parse('2026-06-01T10:00:00Z')
let routingKeys = 0

before(async () => {
  twilio = await startFakeTwilio({ accounts: { [ACCOUNT_SID]: AUTH_TOKEN } })
  receiver = await startReceiver()
  const port = await freePort()
  const baseUrl = `http://127.0.0.1:${port}`
  const channels = createChannels({ publicBaseUrl: baseUrl, twilioApiBaseUrl: twilio.url, whatsappApiBaseUrl: 'http://127.0.0.1:9' }, (name) =>
    name === 'TWILIO_AUTH_TOKEN' ? AUTH_TOKEN : undefined,
  )
  service = await startService({ now: () => now, channels, allowPrivateWebhookUrls: true })
  await service.app.listen({ port, host: '127.0.0.1' })
  org = await seedOrganization(service.app, { scopes: SCOPES })
  const endpoint = await service.app.inject({ method: 'POST', url: '/api/v2/webhook-endpoints', headers: bearer(org.key), payload: { url: receiver.url } })
  assert.equal(endpoint.statusCode, 201, endpoint.body)
})
after(async () => {
  await service.close()
  await twilio.close()
  await receiver.close()
})

const workers = () => service.app.workers!

async function campaign(settings: Record<string, unknown>): Promise<string> {
  const created = await createCampaign(service.app, org.orgId, { routing_key: `conversations-${++routingKeys}`, channel: 'voice', schedule: ALWAYS_OPEN, ...settings })
  return created.routing_key
}

// The clock stands still here: at its provider's pace, a second start in one instant could wait for its sender (test/pacing.test.ts).
const twilioCampaign = (config: Record<string, unknown> = {}, settings: Record<string, unknown> = {}) =>
  campaign({ provider: 'twilio', provider_config: { account_sid: ACCOUNT_SID, from: '+14155550100', answer_url: 'https://voice.example.com/app?flow=screening', ...config }, pacing: { per_second: 1_000_000 }, ...settings })

const trigger = (routingKey: string, body: Record<string, unknown> = {}) =>
  acceptedTrigger(service.app, org.key, { campaign: routingKey, ids: IDS, contact: ADA, context: { job_title: 'Analyst' }, ...body })

const task = (id: string) => taskOf(service.app, org.key, id)

const context = (interactionId: string, key = org.key) => service.app.inject({ method: 'GET', url: `/api/v2/interactions/${interactionId}`, headers: bearer(key) })

const postResult = (interactionId: string, payload: unknown, key = org.key) =>
  service.app.inject({
    method: 'POST',
    url: `/api/v2/interactions/${interactionId}/result`,
    headers: { ...bearer(key), 'content-type': 'application/json' },
    payload: payload as object,
  })

/** The trigger's call started on Twilio: its interaction id and call SID. */
async function startedCall(routingKey: string, body: Record<string, unknown> = {}) {
  const created = await trigger(routingKey, body)
  await workers().dispatcher.runOnce()
  const interactionId = (await task(created.task_id)).interactions[0].id as string
  const callSid = json(await context(interactionId)).data.provider_ref as string
  assert.match(callSid, /^CA[0-9a-f]{32}$/)
  return { ...created, interactionId, callSid }
}

/** The webhooks received so far about a task, as their events. */
async function webhooksOf(taskId: string): Promise<any[]> {
  await workers().deliverer.runOnce()
  return receiver.received.map((request) => JSON.parse(request.body)).filter((event) => event.data.task_id === taskId)
}

/** A key of another organization, with every scope. */
async function otherOrganizationKey(): Promise<string> {
  const other = await seedOrganization(service.app, { routingKey: 'elsewhere', scopes: SCOPES })
  return other.key
}

const CLIENT_IDS = [{ source: 'ats', type: 'candidate', value: 'C-77' }]

describe('context', () => {
  test('an app reads its context by the interaction; another organization gets 404, a key without the scope 403', async () => {
    const routingKey = await campaign({ provider_config: { outcomes: ['completed'], duration_ms: 60_000 }, context: { company: 'Acme' } })
    const created = await trigger(routingKey)
    await workers().dispatcher.runOnce()
    const interactionId = (await task(created.task_id)).interactions[0].id

    const response = await context(interactionId)
    assert.equal(response.statusCode, 200, response.body)
    const data = json(response).data
    assert.deepEqual(
      { ...data, started_at: undefined, provider_ref: undefined },
      {
        id: interactionId,
        task_id: created.task_id,
        trigger_id: created.id,
        attempt: 1,
        campaign: routingKey,
        channel: 'voice',
        direction: 'outbound',
        provider: 'simulator',
        provider_ref: undefined,
        status: 'active',
        outcome: null,
        test_mode: false,
        started_at: undefined,
        ended_at: null,
        duration_s: null,
        result_due_by: null,
        window_closes_at: null,
        messages: [],
        ids: CLIENT_IDS,
        contact: { first_name: 'Ada', last_name: 'Lovelace', language: 'en-GB', phone: '+442079460958' },
        context: { company: 'Acme', job_title: 'Analyst' },
        timezones: ['Europe/London'],
        handoff: null,
        result: null,
      },
    )
    // Merged with the campaign's, the context is the task's own (migration 040); without one, its trigger's.
    const plain = await trigger(await campaign({ provider_config: { outcomes: ['completed'], duration_ms: 60_000 } }))
    const kept = await service.db.query<{ id: string; kept: boolean }>('SELECT id, context IS NOT NULL AS kept FROM tasks WHERE id = ANY($1::text[])', [
      [created.task_id, plain.task_id],
    ])
    assert.deepEqual(Object.fromEntries(kept.map((row) => [row.id, row.kept])), { [created.task_id]: true, [plain.task_id]: false })
    // Read with conversations:read alone, or with triggers:read alone.
    const issue = async (scopes: string[]) =>
      json(await service.app.inject({ method: 'POST', url: `/admin/v1/organizations/${org.orgId}/api-keys`, headers: bearer(OPERATOR_TOKEN), payload: { name: 'app', scopes } })).data.key
    assert.equal((await context(interactionId, await issue(['conversations:read']))).statusCode, 200)
    assert.equal((await context(interactionId, await issue(['triggers:read']))).statusCode, 200)
    const writeOnly = await context(interactionId, await issue(['triggers:write', 'conversations:write']))
    assert.equal(writeOnly.statusCode, 403)
    assert.match(json(writeOnly).error.message, /conversations:read \(or triggers:read\)/)

    const elsewhere = await context(interactionId, await otherOrganizationKey())
    assert.equal(elsewhere.statusCode, 404)
    assert.equal(json(elsewhere).error.code, 'not_found')
    assert.equal((await context('int_01jd3y5v8m6m1r9cz8xk4j2h7q')).statusCode, 404)
    assert.equal((await context('not-an-id')).statusCode, 404)
  })

  test('in test mode the contact is the tester, reached at their number', async () => {
    const routingKey = await campaign({ provider_config: { outcomes: ['completed'], duration_ms: 60_000 } })
    const created = await trigger(routingKey, { test_mode: true, contact: { first_name: 'Tess', phone: '+44 20 7946 0001' } })
    await workers().dispatcher.runOnce()
    const data = json(await context((await task(created.task_id)).interactions[0].id)).data
    assert.equal(data.test_mode, true)
    assert.deepEqual(data.contact, { first_name: 'Tess', phone: '+442079460001' })
  })
})

describe("Twilio's answered call", () => {
  test('redirect: a signed request is answered with TwiML that redirects to the app, the ids in its query', async () => {
    const call = await startedCall(await twilioCampaign())
    const answer = await twilio.answerCall(call.callSid)
    assert.equal(answer.status, 200, answer.body)
    assert.match(answer.contentType!, /^text\/xml/)
    const redirect = /^<\?xml version="1\.0" encoding="UTF-8"\?>\n<Response><Redirect method="POST">([^<]+)<\/Redirect><\/Response>$/.exec(answer.body)
    assert.ok(redirect, answer.body)
    const url = new URL(redirect[1]!.replaceAll('&amp;', '&'))
    assert.equal(`${url.origin}${url.pathname}`, 'https://voice.example.com/app')
    assert.deepEqual(Object.fromEntries(url.searchParams), { flow: 'screening', interaction_id: call.interactionId, task_id: call.task_id, attempt: '1' })

    // The app reads the rest by the id it was handed.
    const data = json(await context(url.searchParams.get('interaction_id')!)).data
    assert.equal(data.status, 'active')
    assert.equal(data.contact.first_name, 'Ada')
    assert.deepEqual(data.context, { job_title: 'Analyst' })
    assert.deepEqual({ ...data.handoff, at: undefined }, { mode: 'redirect', at: undefined, left_out: [] })
    assert.equal(data.handoff.at, new Date(now).toISOString())
  })

  test('stream: the context goes as stream parameters; what cannot go is left out, said in the TwiML and on the interaction', async () => {
    const routingKey = await twilioCampaign({ handoff: 'stream', stream_url: 'wss://agent.example.com/media' })
    const call = await startedCall(routingKey, {
      context: {
        job_title: 'Analyst & "Data" <Lead>',
        salary: 52000,
        remote: true,
        long_note: 'x'.repeat(600),
        address: { city: 'Leeds' },
        interaction_id: 'spoofed',
      },
    })
    const answer = await twilio.answerCall(call.callSid)
    assert.equal(answer.status, 200, answer.body)
    assert.match(answer.body, /^<\?xml version="1\.0" encoding="UTF-8"\?>\n<Response><!-- [^]*? --><Connect><Stream url="wss:\/\/agent\.example\.com\/media">/)
    const unescape = (text: string) => text.replaceAll('&quot;', '"').replaceAll('&lt;', '<').replaceAll('&gt;', '>').replaceAll('&apos;', "'").replaceAll('&amp;', '&')
    const parameters = Object.fromEntries([...answer.body.matchAll(/<Parameter name="([^"]*)" value="([^"]*)"\/>/g)].map((match) => [unescape(match[1]!), unescape(match[2]!)]))
    assert.deepEqual(parameters, {
      interaction_id: call.interactionId,
      task_id: call.task_id,
      attempt: '1',
      language: 'en-GB',
      first_name: 'Ada',
      job_title: 'Analyst & "Data" <Lead>',
      salary: '52000',
      remote: 'true',
    })
    const comment = /<!-- ([^]*?) -->/.exec(answer.body)![1]!
    for (const key of ['"long_note"', '"address"', '"interaction_id"']) assert.ok(comment.includes(key), `${key} is named in ${comment}`)
    const { handoff } = json(await context(call.interactionId)).data
    assert.equal(handoff.mode, 'stream')
    const reasons = Object.fromEntries(handoff.left_out.map((each: { key: string; reason: string }) => [each.key, each.reason]))
    assert.deepEqual(Object.keys(reasons).sort(), ['address', 'interaction_id', 'long_note'])
    assert.match(reasons.long_note, /500 characters/)
    assert.match(reasons.address, /not a single string, number or boolean/)
    assert.match(reasons.interaction_id, /the service's own/)
  })

  test('a request without or with a bad signature is refused (403) and changes nothing', async () => {
    const call = await startedCall(await twilioCampaign())
    for (const signature of [null, 'AAAAAAAAAAAAAAAAAAAAAAAAAAA=']) {
      const answer = await twilio.answerCall(call.callSid, { signature })
      assert.equal(answer.status, 403)
      assert.doesNotMatch(answer.body, /Redirect/)
    }
    const data = json(await context(call.interactionId)).data
    assert.equal(data.handoff, null)
    assert.equal(data.status, 'active')
  })

  test('the provider_config of a handoff: the URL each mode needs, wss without a query for a stream', async () => {
    const refused = async (config: Record<string, unknown>) => {
      const response = await service.app.inject({
        method: 'POST',
        url: `/admin/v1/organizations/${org.orgId}/campaigns`,
        headers: bearer(OPERATOR_TOKEN),
        payload: { routing_key: `bad-${++routingKeys}`, channel: 'voice', provider: 'twilio', provider_config: { account_sid: ACCOUNT_SID, from: '+14155550100', ...config } },
      })
      assert.equal(response.statusCode, 422, response.body)
      return json(response).detail.map((entry: { type: string; loc: string[] }) => [entry.type, entry.loc.slice(2).join('.')])
    }
    assert.deepEqual(await refused({}), [['missing', 'answer_url']])
    assert.deepEqual(await refused({ handoff: 'stream' }), [['missing', 'stream_url']])
    assert.deepEqual(await refused({ handoff: 'stream', stream_url: 'https://agent.example.com/media' }), [['value_error', 'stream_url']])
    assert.deepEqual(await refused({ handoff: 'stream', stream_url: 'wss://agent.example.com/media?token=x' }), [['value_error', 'stream_url']])
    assert.deepEqual(await refused({ handoff: 'dial', answer_url: 'https://voice.example.com/app' }), [['literal_error', 'handoff']])
  })
})

describe('results', () => {
  test('posted during the wait, it ends the wait and is on interaction.finalized and task.completed with the client ids', async () => {
    const call = await startedCall(await twilioCampaign({}, { results: { wait_s: 120 } }))
    await twilio.answerCall(call.callSid)
    assert.equal(await twilio.finishCall(call.callSid, { status: 'completed', answeredBy: 'human', duration: 42 }), 204)

    // Over, but not reported: it waits for its result.
    const waiting = json(await context(call.interactionId)).data
    assert.equal(waiting.status, 'ended')
    assert.equal(waiting.outcome, 'completed')
    assert.equal(waiting.result_due_by, new Date(now + 120_000).toISOString())
    assert.equal((await task(call.task_id)).status, 'in_progress')
    assert.deepEqual(await webhooksOf(call.task_id), [])

    const posted = await postResult(call.interactionId, RESULT)
    assert.equal(posted.statusCode, 200, posted.body)
    const recorded = json(posted).data
    assert.equal(recorded.status, 'finalized')
    const expected = {
      ...RESULT,
      transcript: [
        { role: 'agent', text: 'Hello Ada, are you still interested in the Analyst role?', at: '2026-06-01T10:00:03.000Z' },
        { role: 'contact', text: 'Yes, very much.', at: '2026-06-01T10:00:06.000Z' },
      ],
      transcript_url: null,
      callback_at: null,
      opt_out: false,
      received_at: new Date(now).toISOString(),
    }
    assert.deepEqual(recorded.result, expected)

    const [finalized, completed] = await webhooksOf(call.task_id)
    assert.equal(finalized.type, 'interaction.finalized')
    assert.deepEqual(finalized.data.ids, CLIENT_IDS)
    assert.equal(finalized.data.duration_s, 42)
    assert.deepEqual(finalized.data.result, expected)
    assert.equal(completed.type, 'task.completed')
    assert.equal(completed.data.outcome, 'reached')
    assert.deepEqual(completed.data.ids, CLIENT_IDS)
    assert.deepEqual(completed.data.result, expected)
    // The task's page shows it on its interaction; a list of tasks leaves it out.
    assert.deepEqual((await task(call.task_id)).interactions[0].result, expected)
    const listed = json(await service.app.inject({ method: 'GET', url: `/api/v2/tasks?campaign=${finalized.data.campaign}`, headers: bearer(org.key) })).data
    assert.equal('result' in listed[0].interactions[0], false)
  })

  test('with no result by the end of the wait, the interaction is reported without one', async () => {
    const call = await startedCall(await twilioCampaign({}, { results: { wait_s: 60 } }))
    await twilio.finishCall(call.callSid, { status: 'completed', duration: 30 })
    now += 59_000
    try {
      await workers().dispatcher.runOnce()
      assert.equal(json(await context(call.interactionId)).data.status, 'ended')
      now += 1_000
      await workers().dispatcher.runOnce()
      const [finalized, completed] = await webhooksOf(call.task_id)
      assert.equal(finalized.data.result, null)
      assert.equal(completed.data.outcome, 'reached')
      assert.equal(completed.data.result, null)
    } finally {
      now -= 60_000
    }
  })

  test("a result posted before the call's last status is kept, replaced by a newer one, and reported with the end at once", async () => {
    const call = await startedCall(await twilioCampaign({}, { results: { wait_s: 120 } }))
    assert.equal(json(await postResult(call.interactionId, { disposition: 'draft', summary: 'first' })).data.status, 'active')
    assert.equal(json(await postResult(call.interactionId, RESULT)).data.result.disposition, 'interested')
    await twilio.finishCall(call.callSid, { status: 'completed', duration: 12 })
    const [finalized, completed] = await webhooksOf(call.task_id)
    assert.equal(finalized.data.result.disposition, 'interested')
    assert.equal(finalized.data.result.summary, RESULT.summary)
    assert.equal(completed.data.result.disposition, 'interested')
  })

  test('without a wait, a later result is not lost: interaction.result_added carries it with the ids; another is 409, the same again 200', async () => {
    const call = await startedCall(await twilioCampaign())
    await twilio.finishCall(call.callSid, { status: 'completed', duration: 20 })
    const [finalized, completed] = await webhooksOf(call.task_id)
    assert.equal(finalized.data.result, null)
    assert.equal(completed.data.result, null)

    const posted = await postResult(call.interactionId, RESULT)
    assert.equal(posted.statusCode, 200, posted.body)
    const added = (await webhooksOf(call.task_id)).find((event) => event.type === 'interaction.result_added')
    assert.ok(added, 'interaction.result_added was sent')
    assert.deepEqual(
      { ...added.data, result: undefined },
      {
        interaction_id: call.interactionId,
        task_id: call.task_id,
        trigger_id: call.id,
        campaign: finalized.data.campaign,
        channel: 'voice',
        direction: 'outbound',
        attempt: 1,
        outcome: 'completed',
        test_mode: false,
        ids: CLIENT_IDS,
        result: undefined,
      },
    )
    assert.equal(added.data.result.summary, RESULT.summary)
    assert.ok(added.id > completed.id, 'the result is newer than what was sent before')

    const again = await postResult(call.interactionId, RESULT)
    assert.equal(again.statusCode, 200, 'the same result again: a retry')
    const other = await postResult(call.interactionId, { ...RESULT, disposition: 'not_interested' })
    assert.equal(other.statusCode, 409)
    assert.equal(json(other).error.code, 'conflict')
    assert.equal((await webhooksOf(call.task_id)).filter((event) => event.type === 'interaction.result_added').length, 1)
  })

  test("callback_at in the contact's evening three days on: the next attempt is due at the next opening after it, and it happens", async () => {
    // The default window, 09:00-20:00 in the contact's zone (London); the simulated call ends at once and waits for its result.
    const routingKey = await campaign({ schedule: undefined, provider_config: { outcomes: ['completed'], duration_ms: 0 }, results: { wait_s: 300 } })
    const created = await trigger(routingKey)
    await workers().dispatcher.runOnce()
    const [first] = (await task(created.task_id)).interactions
    assert.equal(first.status, 'ended')

    // Thursday 21:00 in London, after the window: Friday 09:00 (08:00Z) is the next opening.
    const posted = await postResult(first.id, { summary: 'Asked to be called on Thursday evening.', callback_at: '2026-06-04T21:00:00+01:00' })
    assert.equal(posted.statusCode, 200, posted.body)
    assert.equal(json(posted).data.result.callback_at, '2026-06-04T20:00:00.000Z')
    const waiting = await task(created.task_id)
    assert.equal(waiting.status, 'pending')
    assert.equal(waiting.attempts, 1)
    assert.equal(waiting.next_attempt_at, '2026-06-05T08:00:00.000Z')
    const events = await webhooksOf(created.task_id)
    assert.deepEqual(events.map((event) => event.type), ['interaction.finalized'], 'the task goes on: no task.completed')
    assert.equal(events[0].data.result.callback_at, '2026-06-04T20:00:00.000Z')

    const monday = now
    try {
      now = Date.parse('2026-06-05T07:59:59Z')
      await workers().dispatcher.runOnce()
      assert.equal((await task(created.task_id)).interactions.length, 1)
      now = Date.parse('2026-06-05T08:00:00Z')
      await workers().dispatcher.runOnce()
      const called = await task(created.task_id)
      assert.equal(called.attempts, 2)
      assert.equal(called.interactions[1].attempt, 2)
      assert.equal(called.interactions[1].started_at, '2026-06-05T08:00:00.000Z')
    } finally {
      now = monday
    }
  })

  test('opt_out suppresses the number and completes the task opted_out, with the result', async () => {
    const routingKey = await campaign({ provider_config: { outcomes: ['completed'], duration_ms: 0 }, results: { wait_s: 300 } })
    const created = await trigger(routingKey, { contact: { ...ADA, phone: '+44 20 7946 0111' } })
    await workers().dispatcher.runOnce()
    const interactionId = (await task(created.task_id)).interactions[0].id
    const posted = await postResult(interactionId, { disposition: 'do_not_call', opt_out: true })
    assert.equal(posted.statusCode, 200, posted.body)
    const done = await task(created.task_id)
    assert.equal(done.outcome, 'opted_out')
    const suppression = await service.app.inject({ method: 'GET', url: '/api/v2/suppressions/%2B442079460111', headers: bearer(org.key) })
    assert.equal(suppression.statusCode, 200, suppression.body)
    assert.equal(json(suppression).data.reason, 'conversation')
    const completed = (await webhooksOf(created.task_id)).find((event) => event.type === 'task.completed')
    assert.equal(completed.data.outcome, 'opted_out')
    assert.equal(completed.data.result.opt_out, true)
    // The person is not called again by another trigger.
    const again = await trigger(routingKey, { contact: { ...ADA, phone: '+44 20 7946 0111' } })
    await workers().dispatcher.runOnce()
    assert.equal((await task(again.task_id)).outcome, 'opted_out')
  })

  test("another organization's interaction is 404; a key without conversations:write 403", async () => {
    const routingKey = await campaign({ provider_config: { outcomes: ['completed'], duration_ms: 60_000 } })
    const created = await trigger(routingKey)
    await workers().dispatcher.runOnce()
    const interactionId = (await task(created.task_id)).interactions[0].id
    const elsewhere = await postResult(interactionId, RESULT, await otherOrganizationKey())
    assert.equal(elsewhere.statusCode, 404)
    assert.equal((await postResult('int_01jd3y5v8m6m1r9cz8xk4j2h7q', RESULT)).statusCode, 404)
    const readOnly = json(
      await service.app.inject({ method: 'POST', url: `/admin/v1/organizations/${org.orgId}/api-keys`, headers: bearer(OPERATOR_TOKEN), payload: { name: 'ro', scopes: ['conversations:read'] } }),
    ).data.key
    assert.equal((await postResult(interactionId, RESULT, readOnly)).statusCode, 403)
    assert.equal(json(await context(interactionId)).data.result, null, 'nothing was recorded')
  })

  describe('every 422, at its field', () => {
    let interactionId: string
    before(async () => {
      const routingKey = await campaign({ provider_config: { outcomes: ['completed'], duration_ms: 60_000 } })
      const created = await trigger(routingKey)
      await workers().dispatcher.runOnce()
      interactionId = (await task(created.task_id)).interactions[0].id
    })

    const turn = (overrides: Record<string, unknown> = {}) => ({ role: 'agent', text: 'Hello', ...overrides })
    const cases: { name: string; body: unknown; expected: [string, (string | number)[]][] }[] = [
      { name: 'no body', body: undefined, expected: [['missing', ['body']]] },
      { name: 'not an object', body: ['interested'], expected: [['model_attributes_type', ['body']]] },
      { name: 'an empty result', body: {}, expected: [['value_error', ['body']]] },
      { name: 'an unknown field (and nothing else)', body: { dispositon: 'x' }, expected: [['extra_forbidden', ['body', 'dispositon']], ['value_error', ['body']]] },
      { name: 'an empty disposition', body: { disposition: '' }, expected: [['string_too_short', ['body', 'disposition']], ['value_error', ['body']]] },
      { name: 'a disposition with a space', body: { disposition: 'not interested' }, expected: [['string_pattern_mismatch', ['body', 'disposition']], ['value_error', ['body']]] },
      { name: 'a disposition too long', body: { disposition: 'x'.repeat(65) }, expected: [['string_too_long', ['body', 'disposition']], ['value_error', ['body']]] },
      { name: 'a summary too long', body: { summary: 'x'.repeat(RESULT_LIMITS.summaryLength + 1) }, expected: [['string_too_long', ['body', 'summary']], ['value_error', ['body']]] },
      { name: 'data not an object', body: { data: 'yes' }, expected: [['dict_type', ['body', 'data']], ['value_error', ['body']]] },
      {
        name: 'data with 51 keys',
        body: { data: Object.fromEntries(Array.from({ length: 51 }, (_, index) => [`k${index}`, index])) },
        expected: [['too_long', ['body', 'data']], ['value_error', ['body']]],
      },
      {
        name: 'data over 64 KiB',
        body: { data: Object.fromEntries(Array.from({ length: 8 }, (_, index) => [`k${index}`, 'x'.repeat(9_000)])) },
        expected: [['value_error', ['body', 'data']]],
      },
      { name: 'a transcript not a list', body: { transcript: 'Hello' }, expected: [['list_type', ['body', 'transcript']], ['value_error', ['body']]] },
      {
        name: 'a turn of an unknown role, with no text, a time without offset and an unknown key',
        body: { transcript: [turn(), { role: 'bot', text: '', at: '2026-06-01 10:00', voice: 'x' }] },
        expected: [
          ['literal_error', ['body', 'transcript', 1, 'role']],
          ['string_too_short', ['body', 'transcript', 1, 'text']],
          ['value_error', ['body', 'transcript', 1, 'at']],
          ['extra_forbidden', ['body', 'transcript', 1, 'voice']],
        ],
      },
      { name: 'a turn without text', body: { transcript: [{ role: 'contact' }] }, expected: [['missing', ['body', 'transcript', 0, 'text']]] },
      {
        name: 'a transcript of too many turns',
        body: { transcript: Array.from({ length: RESULT_LIMITS.transcriptTurns + 1 }, () => turn()) },
        expected: [['too_long', ['body', 'transcript']], ['value_error', ['body']]],
      },
      {
        name: 'a transcript over 256 KiB',
        body: { transcript: Array.from({ length: 30 }, () => turn({ text: 'x'.repeat(9_000) })) },
        expected: [['value_error', ['body', 'transcript']]],
      },
      { name: 'a transcript URL that is not https', body: { transcript_url: 'http://transcripts.example.com/1' }, expected: [['value_error', ['body', 'transcript_url']], ['value_error', ['body']]] },
      { name: 'a recording URL that is not a URL', body: { recording_url: 'recording 1' }, expected: [['value_error', ['body', 'recording_url']], ['value_error', ['body']]] },
      { name: 'a callback time without an offset', body: { callback_at: '2026-06-04T21:00:00' }, expected: [['value_error', ['body', 'callback_at']], ['value_error', ['body']]] },
      { name: 'an opt-out that is not a boolean', body: { opt_out: 'maybe' }, expected: [['bool_parsing', ['body', 'opt_out']], ['value_error', ['body']]] },
    ]
    for (const { name, body, expected } of cases) {
      test(name, async () => {
        const response = await postResult(interactionId, body)
        assert.equal(response.statusCode, 422, response.body)
        assert.deepEqual(
          json(response).detail.map((entry: { type: string; loc: (string | number)[] }) => [entry.type, entry.loc]),
          expected,
        )
      })
    }

    test('every problem of one body at once, and the message of an empty result', async () => {
      const response = await postResult(interactionId, { disposition: 'a b', transcript_url: 'ftp://x', callback_at: 'tomorrow', opt_out: 'maybe' })
      assert.deepEqual(
        json(response).detail.map((entry: { loc: (string | number)[] }) => entry.loc.join('.')),
        ['body.disposition', 'body.transcript_url', 'body.callback_at', 'body.opt_out', 'body'],
      )
      const empty = json(await postResult(interactionId, {})).detail[0]
      assert.match(empty.msg, /a result carries at least one of disposition, summary, data, transcript, transcript_url, recording_url, callback_at, opt_out/)
      assert.equal(json(await context(interactionId)).data.result, null, 'nothing was recorded')
    })
  })
})
