/**
 * The Vapi voice channel: its provider_config, end reasons, server message
 * signatures and results, the adapter against a local fake of Vapi's REST
 * API, and the whole service with the fake's signed server messages coming
 * to /providers/vapi/webhook over HTTP.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { after, before, beforeEach, describe, test } from 'node:test'
import type { OutboundAttempt } from '../../src/channels/channel.ts'
import { outcomeOfEndedReason } from '../../src/channels/vapi/endedReason.ts'
import { readVapiConfig, VapiChannel, verifyVapiSignature } from '../../src/channels/vapi/vapiChannel.ts'
import { checkProviderConfig } from '../../src/channels/providerConfig.ts'
import { resultOf } from '../../src/channels/vapi/serverMessages.ts'
import type { JsonObject } from '../../src/domain/types.ts'
import { createHmac } from 'node:crypto'
import { type FakeVapi, startFakeVapi } from '../fakes/vapi.ts'
import { eventsOfTask } from '../support/events.ts'
import { bearer, json, OPERATOR_TOKEN, seedOrganization, startCalledBackService, taskOf, type TestService } from '../support/service.ts'

const API_KEY = 'vapi-private-key-for-tests'
const WEBHOOK_SECRET = 'vapi-hmac-secret-for-tests'
const ASSISTANT_ID = '5b0a4a08-133c-4146-9315-0984f8c6be80'
const PHONE_NUMBER_ID = '0a9d2a1c-8d3e-4e8f-9b1d-2f1e7c3a4b5c'
const SECRETS: Record<string, string> = { VAPI_API_KEY: API_KEY, VAPI_WEBHOOK_SECRET: WEBHOOK_SECRET }
const TO = '+442079460958'
const ALWAYS_OPEN = { timezone: 'contact', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '00:00', end: '24:00' }] }

let now = Date.parse('2026-11-27T10:00:00Z')
let fake: FakeVapi

before(async () => {
  fake = await startFakeVapi({ apiKey: API_KEY, webhookSecret: WEBHOOK_SECRET, assistantIds: [ASSISTANT_ID], phoneNumberIds: [PHONE_NUMBER_ID], now: () => now })
})
after(() => fake.close())
beforeEach(() => {
  fake.requests.length = 0
})

function config(overrides: JsonObject = {}): JsonObject {
  return { assistant_id: ASSISTANT_ID, phone_number_id: PHONE_NUMBER_ID, ...overrides }
}

describe('end reasons', () => {
  const TABLE: [string, string][] = [
    ['customer-did-not-answer', 'no_answer'],
    ['call.in-progress.error-providerfault-outbound-sip-408-request-timeout', 'no_answer'],
    ['call.in-progress.error-providerfault-outbound-sip-480-temporarily-unavailable', 'no_answer'],
    ['customer-busy', 'busy'],
    ['call.in-progress.error-providerfault-outbound-sip-486-busy-here', 'busy'],
    ['call.in-progress.error-sip-outbound-call-failed-to-connect-sip-603-decline', 'busy'],
    ['voicemail', 'voicemail'],
    ['customer-ended-call', 'completed'],
    ['customer-ended-call-after-warm-transfer-attempt', 'completed'],
    ['assistant-ended-call', 'completed'],
    ['assistant-ended-call-with-hangup-task', 'completed'],
    ['assistant-said-end-call-phrase', 'completed'],
    ['assistant-forwarded-call', 'completed'],
    ['silence-timed-out', 'completed'],
    ['exceeded-max-duration', 'completed'],
    ['call.in-progress.twilio-completed-call', 'completed'],
    ['call.in-progress.sip-completed-call', 'completed'],
    ['vonage-completed', 'completed'],
    ['call.ending.hook-transfer-failed', 'completed'],
    ['call.forwarding.operator-busy', 'completed'],
    ['call.in-progress.error-warm-transfer-max-duration', 'completed'],
    ['twilio-reported-customer-misdialed', 'failed'],
    ['assistant-not-found', 'failed'],
    ['call.start.error-get-assistant', 'failed'],
    ['call.start.error-subscription-concurrency-limit-reached', 'failed'],
    ['call.start.error-vapi-number-international', 'failed'],
    ['twilio-failed-to-connect-call', 'failed'],
    ['call.in-progress.error-sip-outbound-call-failed-to-connect', 'failed'],
    ['call.in-progress.error-vapifault-openai-llm-failed', 'failed'],
    ['pipeline-error-openai-llm-failed', 'failed'],
    ['worker-shutdown', 'failed'],
    ['manually-canceled', 'failed'],
    ['a-reason-vapi-adds-next-year', 'failed'],
  ]
  for (const [reason, outcome] of TABLE) {
    test(`${reason} → ${outcome}`, () => assert.equal(outcomeOfEndedReason(reason), outcome))
  }
  test('no end reason → failed', () => assert.equal(outcomeOfEndedReason(undefined), 'failed'))
})

describe('provider_config', () => {
  const channel = new VapiChannel({ secret: () => undefined })
  test('the two ids suffice; defaults are filled in', () => {
    assert.deepEqual(checkProviderConfig(channel.configSchema, config(), ['body', 'provider_config']).errors, [])
    assert.deepEqual(readVapiConfig(config()), {
      assistantId: ASSISTANT_ID,
      phoneNumberId: PHONE_NUMBER_ID,
      apiKeyEnv: 'VAPI_API_KEY',
      webhookSecretEnv: 'VAPI_WEBHOOK_SECRET',
      maxDurationS: 600,
      dispositionField: undefined,
      callbackAtField: undefined,
      optOutField: undefined,
      unknownCallerMessage: undefined,
    })
  })
  test('each wrong field is one 422 entry at its place', () => {
    const { errors } = checkProviderConfig(
      channel.configSchema,
      { assistant_id: 7, api_key_env: 'DATABASE_URL', webhook_secret_env: 'VAPI_lower', max_duration_s: 5, disposition_field: '', extra: true },
      ['body', 'provider_config'],
    )
    assert.deepEqual(
      errors.map((error) => [error.loc.join('.'), error.type]),
      [
        ['body.provider_config.assistant_id', 'string_type'],
        ['body.provider_config.phone_number_id', 'missing'],
        ['body.provider_config.api_key_env', 'value_error'],
        ['body.provider_config.webhook_secret_env', 'value_error'],
        ['body.provider_config.max_duration_s', 'greater_than_equal'],
        ['body.provider_config.disposition_field', 'string_too_short'],
        ['body.provider_config.extra', 'extra_forbidden'],
      ],
    )
    assert.match(errors[2]!.msg, /starting with VAPI_/)
    assert.equal(checkProviderConfig(channel.configSchema, 'no', ['p']).errors[0]?.type, 'model_attributes_type')
  })
})

describe('server message signatures', () => {
  const body = Buffer.from('{"message":{"type":"status-update"}}')
  const sign = (timestamp: string, secret = WEBHOOK_SECRET) => createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')
  test('hex HMAC-SHA256 of {timestamp}.{body}, the timestamp in ms or s, a sha256= prefix allowed', () => {
    assert.equal(verifyVapiSignature(WEBHOOK_SECRET, body, sign(String(now)), String(now), now), true)
    const seconds = String(Math.floor(now / 1000))
    assert.equal(verifyVapiSignature(WEBHOOK_SECRET, body, `sha256=${sign(seconds)}`, seconds, now), true)
  })
  test('another secret, another body, no signature or timestamp, or a timestamp over five minutes away, is refused', () => {
    const stamp = String(now)
    assert.equal(verifyVapiSignature(WEBHOOK_SECRET, body, sign(stamp, 'other'), stamp, now), false)
    assert.equal(verifyVapiSignature(WEBHOOK_SECRET, Buffer.from('{}'), sign(stamp), stamp, now), false)
    assert.equal(verifyVapiSignature(WEBHOOK_SECRET, body, undefined, stamp, now), false)
    assert.equal(verifyVapiSignature(WEBHOOK_SECRET, body, sign(stamp), undefined, now), false)
    const stale = String(now - 5 * 60 * 1000 - 1)
    assert.equal(verifyVapiSignature(WEBHOOK_SECRET, body, sign(stale), stale, now), false)
    assert.equal(verifyVapiSignature('', body, sign(stamp, ''), stamp, now), false)
  })
})

describe('results', () => {
  test('summary, structured data, the configured fields, turns and the recording become the result', () => {
    const settings = readVapiConfig(config({ disposition_field: 'outcome', callback_at_field: 'call_back', opt_out_field: 'stop' }))
    const result = resultOf(
      {
        analysis: { summary: 'Wants a call on Monday.', structuredData: { outcome: 'callback', call_back: '2026-11-30T09:00:00+01:00', stop: false } },
        artifact: {
          messages: [
            { role: 'system', message: 'prompt', time: now },
            { role: 'bot', message: 'Hello Ana', time: now + 1000 },
            { role: 'user', message: 'Call me Monday', time: now + 2000 },
            { role: 'tool_calls', toolCalls: [] },
          ],
          recordingUrl: 'https://storage.vapi.ai/rec.wav',
        },
      },
      settings,
    )
    assert.deepEqual(result, {
      disposition: 'callback',
      summary: 'Wants a call on Monday.',
      data: { outcome: 'callback', call_back: '2026-11-30T09:00:00+01:00', stop: false },
      transcript: [
        { role: 'agent', text: 'Hello Ana', at: new Date(now + 1000).toISOString() },
        { role: 'contact', text: 'Call me Monday', at: new Date(now + 2000).toISOString() },
      ],
      recording_url: 'https://storage.vapi.ai/rec.wav',
      callback_at: '2026-11-30T08:00:00.000Z',
      opt_out: false,
    })
  })
  test('without messages the transcript text is read; what is not valid is left out', () => {
    const settings = readVapiConfig(config({ disposition_field: 'outcome' }))
    const result = resultOf({ analysis: { structuredData: { outcome: 'not a code!' } }, artifact: { transcript: 'AI: Hi\nUser: Yes\n', recordingUrl: 'http://insecure' } }, settings)
    assert.deepEqual(result, { data: { outcome: 'not a code!' }, transcript: [{ role: 'agent', text: 'Hi' }, { role: 'contact', text: 'Yes' }] })
    assert.equal(resultOf({}, settings), undefined)
  })
})

describe('adapter', () => {
  let channel: VapiChannel
  before(() => {
    channel = new VapiChannel({ apiBaseUrl: fake.url, secret: (name) => SECRETS[name], timeoutMs: 2_000, now: () => now })
  })
  test("an assistant-request from an unknown caller is answered with the campaign's unknown_caller_message as Vapi's error, which it speaks before ending the call; a caller with a task gets the assistant", () => {
    const handoff = { interactionId: 'int_01J0ABCDEF', taskId: null, firstName: undefined, language: undefined, ids: [], context: {} }
    const withMessage = config({ unknown_caller_message: 'Thank you for calling. Please call back in office hours.' })
    assert.deepEqual(channel.serverMessages.inbound!.answer(handoff, withMessage), { body: { error: 'Thank you for calling. Please call back in office hours.' } })
    const known = channel.serverMessages.inbound!.answer({ ...handoff, taskId: 'tsk_1' }, withMessage)
    assert.equal((known.body as { assistantId: string }).assistantId, ASSISTANT_ID)
    assert.deepEqual(known.leftOut, [])
    assert.equal((channel.serverMessages.inbound!.answer(handoff, config()).body as { assistantId: string }).assistantId, ASSISTANT_ID)
  })

  const attempt = (overrides: Partial<OutboundAttempt> = {}): OutboundAttempt => ({
    interactionId: 'int_01J0ABCDEF',
    taskId: 'task_1',
    attempt: 1,
    to: TO,
    testMode: false,
    context: { job: { title: 'Nurse', site: null }, shifts: ['night'] },
    language: 'en-GB',
    firstName: 'Ana',
    lastName: undefined,
    ids: [{ source: 'ats', type: 'candidate_id', value: 'C-17' }],
    config: config({ max_duration_s: 900 }),
    ...overrides,
  })

  test("creates the call with Vapi's wire format", async () => {
    const result = await channel.start(attempt())
    assert.equal(result.kind, 'started')
    const [request] = fake.requests
    assert.equal(request!.method, 'POST')
    assert.equal(request!.path, '/call')
    assert.equal(request!.headers.authorization, `Bearer ${API_KEY}`)
    assert.deepEqual(request!.body, {
      assistantId: ASSISTANT_ID,
      phoneNumberId: PHONE_NUMBER_ID,
      customer: { number: TO },
      assistantOverrides: {
        variableValues: {
          interaction_id: 'int_01J0ABCDEF',
          task_id: 'task_1',
          attempt: 1,
          first_name: 'Ana',
          language: 'en-GB',
          candidate_id: 'C-17',
          job_title: 'Nurse',
          shifts: '["night"]',
        },
        metadata: { interaction_id: 'int_01J0ABCDEF', task_id: 'task_1', attempt: 1 },
        maxDurationSeconds: 900,
      },
    })
    assert.equal(result.kind === 'started' && fake.call(result.providerRef)?.status, 'queued')
    assert.equal(channel.settleAfterMs(config({ max_duration_s: 900 })), (900 + 15 * 60) * 1000)
  })

  test('no API key is refused for good', async () => {
    const result = await channel.start(attempt({ config: config({ api_key_env: 'VAPI_MISSING' }) }))
    assert.deepEqual(result, { kind: 'refused', permanent: true, reason: 'no Vapi API key: environment variable VAPI_MISSING is not set' })
    assert.equal(fake.requests.length, 0)
  })

  const REFUSALS: [status: number, message: string | string[], permanent: boolean][] = [
    [400, ['customer.number must be a valid phone number in the E.164 format.'], true],
    [401, 'Invalid Key.', true],
    [404, 'Not Found', true],
    [400, 'Over Concurrency Limit.', false],
  ]
  for (const [status, message, permanent] of REFUSALS) {
    test(`HTTP ${status} "${message}" is refused ${permanent ? 'for good' : 'for now'}, without the number`, async () => {
      fake.failNext({ status, message: Array.isArray(message) ? [...message, `got ${TO}`] : message })
      const result = await channel.start(attempt())
      assert.equal(result.kind, 'refused')
      assert.equal(result.kind === 'refused' && result.permanent, permanent)
      assert.match(result.kind === 'refused' ? result.reason : '', new RegExp(`^Vapi refused the call \\(HTTP ${status}: `))
      assert.doesNotMatch(result.kind === 'refused' ? result.reason : '', /\+44/)
    })
  }

  test('an unknown assistant (400) is refused for good', async () => {
    const result = await channel.start(attempt({ config: config({ assistant_id: 'missing' }) }))
    assert.equal(result.kind === 'refused' && result.permanent, true)
  })

  for (const [status, retryAfter, expected] of [[429, '30', 30_000], [500, undefined, undefined], [503, '2', 2_000]] as const) {
    test(`HTTP ${status} defers the start${retryAfter === undefined ? ' a few seconds' : ` by its Retry-After`}`, async () => {
      fake.failNext({ status, retryAfter })
      const result = await channel.start(attempt())
      assert.equal(result.kind, 'deferred')
      const delay = result.kind === 'deferred' ? result.retryAfterMs : -1
      if (expected === undefined) assert.ok(delay >= 2_000 && delay < 5_000, String(delay))
      else assert.equal(delay, expected)
    })
  }

  test('no answer throws: whether the call was made is unknown', async () => {
    fake.dropNext()
    await assert.rejects(channel.start(attempt()), /Vapi POST \/call: connection failed/)
  })

  test('settle reads the ended call; a live one or an unknown one is failed; a 5xx throws', async () => {
    const started = await channel.start(attempt())
    const providerRef = started.kind === 'started' ? started.providerRef : ''
    const progress = { providerRef, providerStatus: null, attempt: 1, config: config(), startedAt: 0, to: '+15555550100' }
    assert.deepEqual(await channel.settle(progress), { outcome: 'failed' })
    await fake.endCall(providerRef, { endedReason: 'customer-busy' }, { send: false })
    assert.deepEqual(await channel.settle(progress), { outcome: 'busy', durationS: 0 })
    assert.deepEqual(await channel.settle({ ...progress, providerRef: 'unknown' }), { outcome: 'failed' })
    assert.deepEqual(await channel.settle({ ...progress, providerRef: null }), { outcome: 'failed' })
    fake.failNext({ status: 502 })
    await assert.rejects(channel.settle(progress), /HTTP 502/)
  })
})

describe('through the service', () => {
  let service: TestService
  let org: Awaited<ReturnType<typeof seedOrganization>>
  let baseUrl: string
  let routingKeys = 0

  before(async () => {
    ;({ service, baseUrl, org } = await startCalledBackService({ now: () => now, apiBaseUrls: { vapiApiBaseUrl: fake.url }, secrets: SECRETS }))
    fake.setServerUrl(`${baseUrl}/providers/vapi/webhook`)
  })
  after(() => service.close())

  async function campaign(providerConfig: JsonObject = {}, settings: Record<string, unknown> = {}): Promise<string> {
    const response = await service.app.inject({
      method: 'POST',
      url: `/admin/v1/organizations/${org.orgId}/campaigns`,
      headers: bearer(OPERATOR_TOKEN),
      payload: {
        routing_key: `vapi-${++routingKeys}`,
        channel: 'voice',
        schedule: ALWAYS_OPEN,
        provider: 'vapi',
        provider_config: config({ disposition_field: 'disposition', callback_at_field: 'callback_at', opt_out_field: 'opt_out', ...providerConfig }),
        context: { job: { title: 'Nurse' } },
        ...settings,
      },
    })
    assert.equal(response.statusCode, 201, response.body)
    return json(response).data.routing_key
  }

  async function trigger(routingKey: string, phone = '+44 20 7946 0958', context: JsonObject = { slot: 'Monday' }) {
    const response = await service.app.inject({
      method: 'POST',
      url: '/api/v2/triggers',
      headers: { ...bearer(org.key), 'content-type': 'application/json' },
      payload: { campaign: routingKey, ids: [{ source: 'ats', type: 'candidate', value: 'c-1' }], contact: { phone, first_name: 'Ana' }, context },
    })
    assert.equal(response.statusCode, 201, response.body)
    return json(response).data as { id: string; task_id: string }
  }

  const task = (id: string) => taskOf(service.app, org.key, id)

  /** A triggered task, dispatched: its interaction id and Vapi's call id. */
  async function startedCall(routingKey: string, phone: string) {
    const created = await trigger(routingKey, phone)
    await service.app.workers!.dispatcher.runOnce()
    const interactionId = (await task(created.task_id)).interactions[0].id as string
    return { ...created, interactionId, callId: fake.callIdFor(interactionId)! }
  }

  const END = {
    endedReason: 'customer-ended-call',
    durationS: 95,
    messages: [
      { role: 'bot', message: 'Hi Ana, about the Nurse role.' },
      { role: 'user', message: 'Call me back on Monday.' },
    ],
    recordingUrl: 'https://storage.vapi.ai/019a-mono.wav',
    summary: 'Ana wants a call on Monday.',
    structuredData: { disposition: 'callback', callback_at: '2026-11-30T09:00:00Z', interested: true },
  }

  test('a campaign with a wrong provider_config is refused with a 422 per field', async () => {
    const response = await service.app.inject({
      method: 'POST',
      url: `/admin/v1/organizations/${org.orgId}/campaigns`,
      headers: bearer(OPERATOR_TOKEN),
      payload: { routing_key: 'vapi-bad', channel: 'voice', schedule: ALWAYS_OPEN, provider: 'vapi', provider_config: { assistant_id: ASSISTANT_ID, api_key_env: 'OPERATOR_TOKEN' } },
    })
    assert.equal(response.statusCode, 422)
    assert.deepEqual(
      json(response).detail.map((entry: { loc: string[] }) => entry.loc.join('.')),
      ['body.provider_config.phone_number_id', 'body.provider_config.api_key_env'],
    )
  })

  test("a trigger reaches Vapi with the task's variables; the signed end-of-call-report finalizes it with its result, on the events with the client's ids", async () => {
    const routingKey = await campaign()
    const { task_id: taskId, interactionId, callId } = await startedCall(routingKey, '+44 20 7946 0958')
    const [request] = fake.requests.filter((candidate) => candidate.method === 'POST')
    assert.equal(request!.body.customer.number, TO)
    assert.deepEqual(request!.body.assistantOverrides.variableValues, {
      interaction_id: interactionId,
      task_id: taskId,
      attempt: 1,
      first_name: 'Ana',
      candidate: 'c-1',
      job_title: 'Nurse',
      slot: 'Monday',
    })
    assert.equal(request!.body.assistantOverrides.metadata.interaction_id, interactionId)

    assert.equal(await fake.updateStatus(callId, 'in-progress'), 204)
    const running = await task(taskId)
    assert.equal(running.status, 'in_progress')
    assert.equal(running.interactions[0].provider_ref, callId)
    // Every value of the task reached the assistant: the handoff names none left out.
    assert.equal(running.interactions[0].handoff.mode, 'variables')
    assert.deepEqual(running.interactions[0].handoff.left_out, [])
    assert.equal(await fake.endCall(callId, END), 204)

    const done = await task(taskId)
    assert.equal(done.interactions[0].outcome, 'completed')
    assert.equal(done.interactions[0].duration_s, 95)
    const finalized = (await eventsOfTask(service.db, taskId)).find((event) => event.type === 'interaction.finalized')
    assert.deepEqual(finalized.data.ids, [{ source: 'ats', type: 'candidate', value: 'c-1' }])
    const { received_at: _received, ...result } = finalized.data.result
    assert.deepEqual(result, {
      disposition: 'callback',
      summary: 'Ana wants a call on Monday.',
      data: { disposition: 'callback', callback_at: '2026-11-30T09:00:00Z', interested: true },
      transcript: [
        { role: 'agent', text: 'Hi Ana, about the Nurse role.', at: new Date(now - 95_000).toISOString() },
        { role: 'contact', text: 'Call me back on Monday.', at: new Date(now - 94_000).toISOString() },
      ],
      transcript_url: null,
      recording_url: 'https://storage.vapi.ai/019a-mono.wav',
      callback_at: '2026-11-30T09:00:00.000Z',
      opt_out: false,
    })
    // The callback time asked for decides the next attempt.
    assert.equal(done.status, 'pending')
    assert.equal(done.next_attempt_at, '2026-11-30T09:00:00.000Z')

    // Vapi's retry of the same report (its backoffPlan) changes nothing.
    const events = await eventsOfTask(service.db, taskId)
    assert.equal(await fake.endCall(callId, END), 204)
    assert.deepEqual(await eventsOfTask(service.db, taskId), events)
    assert.deepEqual(await task(taskId), done)
  })

  test('an opt-out the assistant extracted completes the task opted_out', async () => {
    const routingKey = await campaign()
    const { task_id: taskId, callId } = await startedCall(routingKey, '+44 20 7946 0101')
    assert.equal(await fake.endCall(callId, { ...END, structuredData: { disposition: 'stop', opt_out: true } }), 204)
    const done = await task(taskId)
    assert.equal(done.outcome, 'opted_out')
  })

  test('a bad signature, a stale timestamp or an unknown call is refused with 403 and changes nothing', async () => {
    const routingKey = await campaign()
    const { task_id: taskId, interactionId, callId } = await startedCall(routingKey, '+44 20 7946 0102')
    await fake.updateStatus(callId, 'ringing')
    const before = await task(taskId)
    const call = fake.call(callId)!
    const report = JSON.stringify({ message: { type: 'end-of-call-report', endedReason: 'customer-ended-call', artifact: {}, analysis: {}, call } })
    assert.equal(await fake.post(report, { secret: 'not-the-secret' }), 403)
    assert.equal(await fake.post(report, { signature: null }), 403)
    assert.equal(await fake.post(report, { timestampMs: now - 6 * 60 * 1000 }), 403)
    // Another call that names this interaction: not the one it started.
    assert.equal(await fake.post(JSON.stringify({ message: { type: 'end-of-call-report', endedReason: 'customer-ended-call', call: { ...call, id: 'another-call' } } })), 403)
    assert.equal(await fake.post(JSON.stringify({ message: { type: 'end-of-call-report', endedReason: 'customer-ended-call', call: { id: 'unknown' } } })), 403)
    assert.equal(await fake.post('not json'), 403)
    assert.deepEqual(await task(taskId), before)
    assert.equal(before.interactions[0].status, 'active')
    assert.equal(before.interactions[0].id, interactionId)
  })

  test("a start whose answer is lost is confirmed by the call's first server message, never dialled twice; its values are never logged", async () => {
    const routingKey = await campaign()
    const created = await trigger(routingKey, '+44 20 7946 0104', { referrer: null, job: { title: 'Secret title' } })
    fake.dropNext()
    await service.app.workers!.dispatcher.runOnce()
    const uncertain = await task(created.task_id)
    const interactionId = uncertain.interactions[0].id
    assert.equal(uncertain.interactions[0].status, 'starting')
    const callId = fake.callIdFor(interactionId)!
    assert.equal(await fake.updateStatus(callId, 'ringing'), 204)
    const confirmed = await task(created.task_id)
    assert.equal(confirmed.interactions[0].status, 'active')
    assert.equal(confirmed.interactions[0].provider_ref, callId)
    await service.app.workers!.dispatcher.runOnce()
    assert.equal(fake.requests.filter((request) => request.method === 'POST' && request.body.assistantOverrides.metadata.interaction_id === interactionId).length, 1)

    assert.ok(!service.logs.some((text) => text.includes('Secret title') || text.includes('7946 0104') || text.includes('79460104')))
  })

  test('a body over 2 MiB is refused with 413', async () => {
    assert.equal(await fake.post(JSON.stringify({ message: { type: 'transcript', padding: 'x'.repeat(2 * 1024 * 1024) } })), 413)
  })

  test('a lost end-of-call-report is settled by Get Call at the settle time, with its result', async () => {
    const routingKey = await campaign({ max_duration_s: 300 })
    const { task_id: taskId, callId } = await startedCall(routingKey, '+44 20 7946 0103')
    assert.equal(await fake.endCall(callId, { ...END, durationS: 20, structuredData: { disposition: 'interested' } }, { send: false }), null)
    const settleAfter = (300 + 15 * 60) * 1000
    now += settleAfter - 1000
    try {
      await service.app.workers!.dispatcher.runOnce()
      assert.equal((await task(taskId)).interactions[0].status, 'active')
      now += 1000
      await service.app.workers!.dispatcher.runOnce()
      const settled = await task(taskId)
      assert.equal(settled.interactions[0].outcome, 'completed')
      assert.equal(settled.interactions[0].duration_s, 20)
      assert.equal(settled.outcome, 'reached')
      const finalized = (await eventsOfTask(service.db, taskId)).find((event) => event.type === 'interaction.finalized')
      assert.equal(finalized.data.result.disposition, 'interested')
      assert.equal(finalized.data.result.summary, 'Ana wants a call on Monday.')
      assert.deepEqual(finalized.data.result.transcript.map((turn: { role: string }) => turn.role), ['agent', 'contact'])
      const gets = fake.requests.filter((request) => request.method === 'GET' && request.path === `/call/${callId}`)
      assert.equal(gets.length, 1)
      assert.equal(gets[0]!.headers.authorization, `Bearer ${API_KEY}`)
    } finally {
      now -= settleAfter
    }
  })

  test("Vapi's 429 at start delays the attempt by its Retry-After without using it", async () => {
    const routingKey = await campaign()
    const created = await trigger(routingKey, '+44 20 7946 0777')
    fake.failNext({ status: 429, retryAfter: '20' })
    await service.app.workers!.dispatcher.runOnce()
    const deferred = await task(created.task_id)
    assert.equal(deferred.status, 'pending')
    assert.equal(deferred.attempts, 0)
    assert.deepEqual(deferred.interactions, [])
    assert.equal(deferred.next_attempt_at, new Date(now + 20_000).toISOString())
    now += 20_000
    try {
      await service.app.workers!.dispatcher.runOnce()
      const started = await task(created.task_id)
      assert.equal(started.status, 'in_progress')
      assert.equal(started.attempts, 1)
      assert.equal(fake.requests.filter((request) => request.method === 'POST' && request.body.customer.number === '+442079460777').length, 2)
    } finally {
      now -= 20_000
    }
  })
  describe('a person calls back the campaign number (assistant-request)', () => {
    test("Vapi is answered with the campaign's assistant and the task's variables with direction inbound; the end-of-call-report completes the task reached", async () => {
      const routingKey = await campaign()
      const phone = '+44 20 7946 0111'
      const { task_id: taskId, callId: outboundCallId } = await startedCall(routingKey, phone)
      assert.equal(await fake.endCall(outboundCallId, { endedReason: 'customer-did-not-answer' }), 204)
      assert.equal((await task(taskId)).status, 'pending')

      const { callId, status, answer } = await fake.receiveCall({ phoneNumberId: PHONE_NUMBER_ID, from: '+442079460111' })
      assert.equal(status, 200)
      assert.equal(answer.assistantId, ASSISTANT_ID)
      const { variableValues, metadata } = answer.assistantOverrides
      const interactionId = metadata.interaction_id as string
      assert.deepEqual(metadata, { interaction_id: interactionId, task_id: taskId, direction: 'inbound' })
      assert.deepEqual(variableValues, { interaction_id: interactionId, task_id: taskId, direction: 'inbound', first_name: 'Ana', candidate: 'c-1', job_title: 'Nurse', slot: 'Monday' })
      // docs/callbacks.md shows this answer: the same, but for its ids and the trigger's slot.
      const documented = JSON.parse(/```json\n([\s\S]*?)```/.exec(readFileSync(new URL('../../docs/callbacks.md', import.meta.url), 'utf8'))![1]!)
      const ids = (text: string) => text.replaceAll(interactionId, 'int_...').replaceAll(taskId, 'tsk_...')
      const { slot: _slot, ...shown } = variableValues
      assert.deepEqual(documented, JSON.parse(ids(JSON.stringify({ ...answer, assistantOverrides: { ...answer.assistantOverrides, variableValues: shown } }))))
      const held = await task(taskId)
      assert.equal(held.waiting.for, 'callback')
      const inbound = held.interactions.find((interaction: { id: string }) => interaction.id === interactionId)
      assert.equal(inbound.direction, 'inbound')
      // Recorded as an outbound start's handoff is: nothing of the task was left out.
      assert.equal(inbound.handoff.mode, 'variables')
      assert.deepEqual(inbound.handoff.left_out, [])

      assert.equal(await fake.endCall(callId, { ...END, structuredData: { disposition: 'interested' } }), 204)
      const done = await task(taskId)
      assert.equal(done.status, 'completed')
      assert.equal(done.outcome, 'reached')
      assert.equal(done.attempts, 1, 'the call back spent no attempt')
      const finalized = (await eventsOfTask(service.db, taskId)).filter((event) => event.type === 'interaction.finalized').at(-1)
      assert.equal(finalized.data.interaction_id, interactionId)
      assert.equal(finalized.data.direction, 'inbound')
      assert.deepEqual(finalized.data.ids, [{ source: 'ats', type: 'candidate', value: 'c-1' }])
      assert.equal(finalized.data.result.summary, END.summary)
    })

    test('a call back whose result asks for a callback time makes the task due then, as an outbound conversation does', async () => {
      const routingKey = await campaign()
      const { task_id: taskId, callId: outboundCallId } = await startedCall(routingKey, '+44 20 7946 0112')
      await fake.endCall(outboundCallId, { endedReason: 'customer-did-not-answer' })
      const { callId } = await fake.receiveCall({ phoneNumberId: PHONE_NUMBER_ID, from: '+442079460112' })
      assert.equal(await fake.endCall(callId, END), 204)
      const due = await task(taskId)
      assert.equal(due.status, 'pending')
      assert.equal(due.waiting, undefined)
      assert.equal(due.next_attempt_at, END.structuredData.callback_at.replace('Z', '.000Z'))
    })

    test('an unknown caller gets the assistant without a task; an unsigned or wrongly signed request is refused 403 and records nothing', async () => {
      await campaign()
      const unknown = await fake.receiveCall({ phoneNumberId: PHONE_NUMBER_ID, from: '+442079460999' })
      assert.equal(unknown.status, 200)
      assert.equal(unknown.answer.assistantOverrides.variableValues.task_id, undefined)
      assert.equal(unknown.answer.assistantOverrides.variableValues.direction, 'inbound')
      const count = async () => Number((await service.db.query<{ n: string }>('SELECT count(*) AS n FROM interactions'))[0]!.n)
      const before = await count()
      for (const signature of [null, 'ab'.repeat(32)]) {
        const refused = await fake.receiveCall({ phoneNumberId: PHONE_NUMBER_ID, from: '+442079460111', signature })
        assert.equal(refused.status, 403)
      }
      // A number of no campaign's.
      assert.equal((await fake.receiveCall({ phoneNumberId: 'f0f0f0f0-0000-4000-8000-000000000000', from: '+442079460111' })).status, 403)
      assert.equal(await count(), before)
    })

    test("a call to a phone number the organization names as its callback number lands on the caller's task", async () => {
      const routingKey = await campaign()
      const line = 'c4115b4c-0000-4000-8000-00000000ca11'
      const campaignId = json(await service.app.inject({ method: 'GET', url: `/admin/v1/organizations/${org.orgId}/campaigns`, headers: bearer(OPERATOR_TOKEN) })).data.find(
        (candidate: { routing_key: string }) => candidate.routing_key === routingKey,
      ).id
      const named = await service.app.inject({
        method: 'PUT',
        url: `/admin/v1/organizations/${org.orgId}/callback-numbers`,
        headers: bearer(OPERATOR_TOKEN),
        payload: { callback_numbers: [{ number: line, campaign_id: campaignId }] },
      })
      assert.equal(named.statusCode, 200, named.body)
      const { task_id: taskId, callId: outboundCallId } = await startedCall(routingKey, '+44 20 7946 0113')
      await fake.endCall(outboundCallId, { endedReason: 'customer-did-not-answer' })
      const { callId, status, answer } = await fake.receiveCall({ phoneNumberId: line, from: '+442079460113' })
      assert.equal(status, 200)
      assert.equal(answer.assistantId, ASSISTANT_ID)
      assert.equal(answer.assistantOverrides.metadata.task_id, taskId)
      assert.equal(await fake.endCall(callId, END), 204)
    })
  })
})
