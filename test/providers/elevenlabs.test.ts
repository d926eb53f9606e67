/**
 * The ElevenLabs Agents voice channel: its provider_config, the outbound call
 * and its refusals against a local fake of ElevenLabs' API, the end reasons'
 * table, webhook signatures; then through the whole service: a trigger's
 * variables reach the agent, the signed post-call webhook finalizes the
 * interaction with its result, a bad signature or a repeated webhook changes
 * nothing, a lost one is settled by the GET, and throttling defers a start.
 */
import assert from 'node:assert/strict'
import { createHmac } from 'node:crypto'
import { after, before, beforeEach, describe, test } from 'node:test'
import type { OutboundAttempt } from '../../src/channels/channel.ts'
import { checkProviderConfig } from '../../src/channels/providerConfig.ts'
import { readElevenLabsConfig } from '../../src/channels/elevenlabs/config.ts'
import { conversationOutcome, conversationResult, initiationFailureOutcome, verifyElevenLabsSignature } from '../../src/channels/elevenlabs/conversation.ts'
import { ElevenLabsChannel } from '../../src/channels/elevenlabs/elevenlabsChannel.ts'
import type { JsonObject } from '../../src/domain/types.ts'
import { type FakeElevenLabs, startFakeElevenLabs } from '../fakes/elevenlabs.ts'
import { eventsOfTask } from '../support/events.ts'
import { assertShown, documentedAnswers } from '../support/callbackDocs.ts'
import { bearer, json, OPERATOR_TOKEN, scrapeMetrics, seedOrganization, startCalledBackService, type TestService } from '../support/service.ts'
import { sampleValue } from '../support/prometheus.ts'

const SECRETS: Record<string, string> = {
  ELEVENLABS_API_KEY: 'sk_elevenlabs-api-key-for-tests',
  ELEVENLABS_WEBHOOK_SECRET: 'wsec_elevenlabs-webhook-secret-for-tests',
  ELEVENLABS_INITIATION_SECRET: 'elevenlabs-initiation-secret-for-tests',
  ELEVENLABS_EMPTY: '',
}
const AGENT = 'agent_01jz5xq4fzeq8ta2y6kpm0n8ab'
const TWILIO_NUMBER = 'phnum_01jz5xr0twilio0000000000'
const SIP_NUMBER = 'phnum_01jz5xr0siptrunk00000000'
const TO = '+442079460958'
const ALWAYS_OPEN = { timezone: 'contact', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '00:00', end: '24:00' }] }

let now = Date.UTC(2026, 10, 27, 12, 0, 0)
let fake: FakeElevenLabs

function config(overrides: JsonObject = {}): JsonObject {
  return { agent_id: AGENT, agent_phone_number_id: TWILIO_NUMBER, ...overrides }
}

function attempt(overrides: Partial<OutboundAttempt> = {}): OutboundAttempt {
  return {
    interactionId: 'int_01J0ABCDEF',
    taskId: 'task_01J0ABCDEF',
    attempt: 1,
    to: TO,
    testMode: false,
    context: {},
    language: undefined,
    firstName: undefined,
    lastName: undefined,
    ids: [],
    config: config(),
    ...overrides,
  }
}

before(async () => {
  fake = await startFakeElevenLabs({
    apiKey: SECRETS.ELEVENLABS_API_KEY!,
    webhookSecret: SECRETS.ELEVENLABS_WEBHOOK_SECRET!,
    agents: [AGENT],
    phoneNumbers: { [TWILIO_NUMBER]: 'twilio', [SIP_NUMBER]: 'sip_trunk' },
    now: () => now,
  })
})
after(() => fake.close())

describe('provider_config', () => {
  const channel = new ElevenLabsChannel({ secret: (name) => SECRETS[name] })
  const check = (input: unknown, prefix: (string | number)[]) => checkProviderConfig(channel.configSchema, input, prefix).errors

  test('the agent and its number are enough; every field has its defaults', () => {
    assert.deepEqual(check(config(), ['body', 'provider_config']), [])
    assert.deepEqual(readElevenLabsConfig(config()), {
      agentId: AGENT,
      agentPhoneNumberId: TWILIO_NUMBER,
      telephony: 'twilio',
      apiKeyEnv: 'ELEVENLABS_API_KEY',
      webhookSecretEnv: 'ELEVENLABS_WEBHOOK_SECRET',
      initiationSecretEnv: 'ELEVENLABS_INITIATION_SECRET',
      ringTimeoutS: 60,
      dispositionField: undefined,
      callbackAtField: undefined,
      optOutField: undefined,
    })
  })

  test('each field that is wrong has its own 422 entry, credentials only by the name of an ELEVENLABS_ variable', () => {
    const errors = check(
      {
        agent_phone_number_id: 'phnum 1',
        telephony: 'vonage',
        api_key_env: 'DATABASE_URL',
        webhook_secret_env: 7,
        ring_timeout_s: 'thirty',
        disposition_field: 'a field',
        opt_out_field: null,
        api_key: 'sk_inline',
      },
      ['body', 'provider_config'],
    )
    assert.deepEqual(
      errors.map((error) => [error.loc.join('.'), error.type]),
      [
        ['body.provider_config.agent_id', 'missing'],
        ['body.provider_config.agent_phone_number_id', 'value_error'],
        ['body.provider_config.telephony', 'literal_error'],
        ['body.provider_config.api_key_env', 'value_error'],
        ['body.provider_config.webhook_secret_env', 'string_type'],
        ['body.provider_config.ring_timeout_s', 'int_parsing'],
        ['body.provider_config.disposition_field', 'value_error'],
        ['body.provider_config.api_key', 'extra_forbidden'],
      ],
    )
    assert.deepEqual(
      errors.filter((error) => error.type === 'value_error').map((error) => error.msg),
      [
        'Value error, agent_phone_number_id must be an ElevenLabs phone number id (letters, digits, _ and -)',
        'Value error, api_key_env must be the name of an environment variable starting with ELEVENLABS_ (uppercase letters, digits, underscores)',
        'Value error, disposition_field must be the identifier of a data collection item of the agent (letters, digits, _ . -)',
      ],
    )
    assert.deepEqual(errors.find((error) => error.type === 'literal_error')?.msg, "Input should be 'twilio' or 'sip_trunk'")
    assert.deepEqual(check([], ['p']).map((error) => error.type), ['model_attributes_type'])
    assert.deepEqual(check(config({ ring_timeout_s: 4 }), ['p']).map((error) => error.type), ['greater_than_equal'])
    assert.deepEqual(check(config({ ring_timeout_s: [30] }), ['p']).map((error) => error.type), ['int_type'])
  })

  test('an integer sent as text is accepted, as everywhere in the API, and kept and read as the integer', () => {
    const sent = config({ ring_timeout_s: '30' })
    const checked = checkProviderConfig(channel.configSchema, sent, ['body', 'provider_config'])
    assert.deepEqual(checked.errors, [])
    assert.equal(checked.value?.ring_timeout_s, 30)
    assert.equal(readElevenLabsConfig(sent).ringTimeoutS, 30)
    assert.equal(channel.settleAfterMs(sent), channel.settleAfterMs(config({ ring_timeout_s: 30 })))
  })
})

describe('start', () => {
  let channel: ElevenLabsChannel
  before(() => {
    channel = new ElevenLabsChannel({ apiBaseUrl: fake.url, secret: (name) => SECRETS[name], timeoutMs: 2_000, now: () => now })
  })
  beforeEach(() => {
    fake.requests.length = 0
  })

  test('places the call through the Twilio integration with the attempt’s variables, flattened; names ElevenLabs reserves are left out, and said by name', async () => {
    const result = await channel.start(
      attempt({
        firstName: 'Ada',
        language: 'en-GB',
        ids: [{ source: 'ats', type: 'candidate_id', value: 'C-17' }],
        context: { job: { title: 'Nurse', shift: { start: '07:00' } }, urgent: true, slots: ['mon', 'tue'], note: null, system__time: 'spoofed' },
      }),
    )
    assert.equal(result.kind, 'started')
    const [request] = fake.requests
    assert.equal(request!.path, '/v1/convai/twilio/outbound-call')
    assert.equal(request!.headers['xi-api-key'], SECRETS.ELEVENLABS_API_KEY)
    assert.equal(request!.headers['content-type'], 'application/json')
    assert.deepEqual(request!.body, {
      agent_id: AGENT,
      agent_phone_number_id: TWILIO_NUMBER,
      to_number: TO,
      conversation_initiation_client_data: {
        dynamic_variables: {
          interaction_id: 'int_01J0ABCDEF',
          task_id: 'task_01J0ABCDEF',
          attempt: 1,
          first_name: 'Ada',
          language: 'en-GB',
          candidate_id: 'C-17',
          job_title: 'Nurse',
          job_shift_start: '07:00',
          urgent: true,
          slots: '["mon","tue"]',
        },
      },
      telephony_call_config: { ringing_timeout_secs: 60 },
    })
    assert.equal(result.kind === 'started' && result.providerRef, fake.conversationFor('int_01J0ABCDEF'))
    assert.deepEqual(result.kind === 'started' && result.leftOut, [
      { key: 'note', reason: 'null' },
      { key: 'system__time', reason: 'ElevenLabs reserves names starting with system__' },
    ])
  })

  test('a SIP trunk number is called through the SIP trunk integration, with the ring timeout set', async () => {
    const result = await channel.start(attempt({ config: config({ agent_phone_number_id: SIP_NUMBER, telephony: 'sip_trunk', ring_timeout_s: 25 }) }))
    assert.equal(result.kind, 'started')
    assert.equal(fake.requests[0]!.path, '/v1/convai/sip-trunk/outbound-call')
    assert.deepEqual(fake.requests[0]!.body.telephony_call_config, { ringing_timeout_secs: 25 })
    assert.deepEqual(result.kind === 'started' && result.leftOut, [])
  })

  test('429 (too many concurrent requests) and 5xx defer the start, by Retry-After when sent', async () => {
    fake.failNext({ status: 429, detail: { status: 'too_many_concurrent_requests', message: 'Too many concurrent requests' }, retryAfter: '12' })
    assert.deepEqual(await channel.start(attempt()), {
      kind: 'deferred',
      retryAfterMs: 12_000,
      reason: 'ElevenLabs cannot take the call now (HTTP 429): too_many_concurrent_requests: Too many concurrent requests',
    })
    fake.failNext({ status: 503, detail: { status: 'system_busy', message: 'The system is busy' } })
    const busy = await channel.start(attempt())
    assert.equal(busy.kind, 'deferred')
    assert.ok(busy.kind === 'deferred' && busy.retryAfterMs >= 2_000 && busy.retryAfterMs < 5_000)
  })

  const REFUSALS: [what: string, config: JsonObject, to: string, reason: string][] = [
    ['a wrong API key', config(), TO, 'ElevenLabs refused the call (HTTP 401): invalid_api_key: Invalid API key'],
    ['an unknown agent', config({ agent_id: 'agent_unknown' }), TO, 'ElevenLabs refused the call (HTTP 404): agent_not_found: Agent not found'],
    ['a Twilio number called as a SIP trunk', config({ telephony: 'sip_trunk' }), TO, 'ElevenLabs refused the call (HTTP 404): phone_number_not_found: No sip_trunk phone number with this id'],
    ['a number it cannot call, without the number in the reason', config(), '+0123', 'ElevenLabs refused the call (HTTP 422): body.to_number: Invalid phone number [To]'],
  ]
  for (const [what, settings, to, reason] of REFUSALS) {
    test(`${what} is refused for good`, async () => {
      if (what.startsWith('a wrong')) SECRETS.ELEVENLABS_OTHER_KEY = 'sk_not-the-key'
      const result = await channel.start(attempt({ to, config: what.startsWith('a wrong') ? { ...settings, api_key_env: 'ELEVENLABS_OTHER_KEY' } : settings }))
      assert.deepEqual(result, { kind: 'refused', permanent: true, reason })
    })
  }

  test('a 200 that placed no call is refused for now; an unset or empty key refuses without asking', async () => {
    fake.failNext({ status: 200, body: { success: false, message: `Could not reach ${TO}`, conversation_id: null, callSid: null } })
    assert.deepEqual(await channel.start(attempt()), { kind: 'refused', permanent: false, reason: 'ElevenLabs did not place the call (HTTP 200): Could not reach [To]' })
    fake.requests.length = 0
    for (const name of ['ELEVENLABS_UNSET', 'ELEVENLABS_EMPTY']) {
      const result = await channel.start(attempt({ config: config({ api_key_env: name }) }))
      assert.deepEqual(result, { kind: 'refused', permanent: true, reason: `no ElevenLabs API key: environment variable ${name} is not set` })
    }
    assert.equal(fake.requests.length, 0)
  })

  test('an answer that never comes throws: the start is uncertain', async () => {
    fake.dropNext()
    await assert.rejects(channel.start(attempt()), /ElevenLabs POST \/v1\/convai\/twilio: connection failed/)
  })

  test('settle reads the conversation: over with its result, not over yet throws, unknown is failed', async () => {
    const started = await channel.start(attempt({ interactionId: 'int_settle' }))
    assert.equal(started.kind, 'started')
    const id = started.kind === 'started' ? started.providerRef : ''
    const progress = { providerRef: id, providerStatus: null, attempt: 1, config: config({ disposition_field: 'disposition' }), startedAt: 0, to: '+15555550100' }
    await assert.rejects(channel.settle(progress), /not over yet \(status initiated\)/)
    await fake.endCall(id, { turns: ['Hello Ada', 'Hi'], summary: 'Said hi.', data: { disposition: 'interested' }, durationS: 31 }, { deliver: false })
    const settled = await channel.settle(progress)
    assert.equal(settled.outcome, 'completed')
    assert.equal(settled.durationS, 31)
    assert.equal(settled.result?.disposition, 'interested')
    assert.equal(settled.result?.summary, 'Said hi.')
    assert.deepEqual(settled.result?.transcript?.map((turn) => [turn.role, turn.text]), [['agent', 'Hello Ada'], ['contact', 'Hi']])
    assert.deepEqual(await channel.settle({ ...progress, providerRef: 'conv_unknown' }), { outcome: 'failed' })
    assert.deepEqual(await channel.settle({ ...progress, providerRef: null }), { outcome: 'failed' })
    fake.failNext({ status: 503, detail: { status: 'system_busy', message: 'busy' } })
    await assert.rejects(channel.settle(progress), /HTTP 503/)
  })
})

describe('end reasons', () => {
  const FAILURES: [failure_reason: string, body: JsonObject, outcome: string][] = [
    ['busy', {}, 'busy'],
    ['no-answer', {}, 'no_answer'],
    ['unknown', { CallStatus: 'busy' }, 'busy'],
    ['unknown', { CallStatus: 'no-answer' }, 'no_answer'],
    ['unknown', { CallStatus: 'failed', SipResponseCode: '404' }, 'failed'],
    ['unknown', { CallStatus: 'canceled' }, 'failed'],
    ['unknown', { sip_status_code: 486, sip_status: 'Busy here' }, 'busy'],
    ['unknown', { sip_status_code: 603 }, 'busy'],
    ['unknown', { sip_status_code: 480 }, 'no_answer'],
    ['unknown', { sip_status_code: 408 }, 'no_answer'],
    ['unknown', { sip_status_code: 404 }, 'failed'],
    ['unknown', { sip_status_code: 503, twirp_code: 'unavailable' }, 'failed'],
    ['something new', {}, 'failed'],
  ]
  for (const [reason, body, outcome] of FAILURES) {
    test(`call_initiation_failure ${reason} ${JSON.stringify(body)} is ${outcome}`, () => {
      assert.equal(initiationFailureOutcome({ failure_reason: reason, metadata: { type: 'twilio', body } }), outcome)
    })
  }

  const voicemailTurn = { role: 'agent', message: null, tool_results: [{ type: 'system', tool_name: 'voicemail_detection', result: { result_type: 'voicemail_detection_success' } }] }
  const CONVERSATIONS: [status: string, transcript: unknown[], outcome: string | undefined][] = [
    ['done', [{ role: 'agent', message: 'Hello' }], 'completed'],
    ['done', [], 'completed'],
    ['done', [{ role: 'agent', message: 'Hello' }, voicemailTurn], 'voicemail'],
    ['failed', [], 'failed'],
    ['initiated', [], undefined],
    ['in-progress', [], undefined],
    ['processing', [{ role: 'agent', message: 'Hello' }], undefined],
  ]
  for (const [status, transcript, outcome] of CONVERSATIONS) {
    test(`a conversation ${status} with ${transcript.length} turns is ${outcome ?? 'not over'}`, () => {
      assert.equal(conversationOutcome({ status, transcript }), outcome)
    })
  }
})

describe('result', () => {
  const settings = readElevenLabsConfig(config({ disposition_field: 'outcome', callback_at_field: 'call_back', opt_out_field: 'stop' }))
  const item = (value: unknown) => ({ data_collection_id: 'x', value, rationale: 'r' })

  test('the items the campaign names become the disposition, the callback time (in UTC) and the opt-out; all items are the data', () => {
    const result = conversationResult(
      {
        analysis: {
          transcript_summary: 'Call back Monday.',
          data_collection_results: { outcome: item('callback'), call_back: item('2026-12-07T09:30:00+01:00'), stop: item(false), empty: item(null) },
        },
        transcript: [{ role: 'user', message: 'Monday please', time_in_call_secs: 4 }, { role: 'agent', message: '' }, { role: 'tool', message: 'x' }],
        metadata: { start_time_unix_secs: 1_800_000_000 },
      },
      settings,
    )
    assert.deepEqual(result, {
      disposition: 'callback',
      summary: 'Call back Monday.',
      data: { outcome: 'callback', call_back: '2026-12-07T09:30:00+01:00', stop: false },
      transcript: [{ role: 'contact', text: 'Monday please', at: new Date(1_800_000_004_000).toISOString() }],
      callback_at: '2026-12-07T08:30:00.000Z',
    })
  })

  test('what is not valid is left out, not the whole result; nothing at all is no result', () => {
    const result = conversationResult(
      { analysis: { data_collection_results: { outcome: item('not a code!'), call_back: item('Monday'), stop: item('yes') } }, transcript: [] },
      settings,
    )
    assert.deepEqual(result, { data: { outcome: 'not a code!', call_back: 'Monday', stop: 'yes' } })
    assert.equal(conversationResult({ analysis: null, transcript: [] }, settings), undefined)
    assert.deepEqual(conversationResult({ analysis: { data_collection_results: { stop: item(true) } } }, settings)?.opt_out, true)
  })
})

describe('webhook signature', () => {
  const secret = 'wsec_test'
  const body = Buffer.from('{"type":"post_call_transcription","data":{"conversation_id":"conv_1"}}')
  const t = Math.floor(now / 1000)
  const sign = (timestamp: number, payload: Buffer = body, key = secret) =>
    `t=${timestamp},v0=${createHmac('sha256', key).update(`${timestamp}.${payload.toString('utf8')}`).digest('hex')}`

  const CASES: [what: string, header: string | undefined, at: number, valid: boolean][] = [
    ['signed now', sign(t), now, true],
    ['signed 29 minutes ago', sign(t - 29 * 60), now, true],
    ['signed 31 minutes ago', sign(t - 31 * 60), now, false],
    ['signed with another secret', sign(t, body, 'wsec_other'), now, false],
    ['signed over another body', sign(t, Buffer.from('{}')), now, false],
    ['with its timestamp changed', sign(t).replace(`t=${t}`, `t=${t + 1}`), now, false],
    ['with spaces and another scheme beside', `t=${t}, v1=abc, ${sign(t).split(',')[1]}`, now, true],
    ['without a timestamp', sign(t).split(',')[1], now, false],
    ['absent', undefined, now, false],
  ]
  for (const [what, header, at, valid] of CASES) {
    test(`a signature ${what} is ${valid ? 'accepted' : 'refused'}`, () => {
      assert.equal(verifyElevenLabsSignature(secret, body, header, at), valid)
    })
  }
  test('an empty secret verifies nothing', () => {
    assert.equal(verifyElevenLabsSignature('', body, sign(t, body, ''), now), false)
  })
})

describe('through the service', () => {
  let service: TestService
  let org: Awaited<ReturnType<typeof seedOrganization>>
  let baseUrl: string
  let routingKeys = 0

  before(async () => {
    ;({ service, baseUrl, org } = await startCalledBackService({ now: () => now, apiBaseUrls: { elevenlabsApiBaseUrl: fake.url }, secrets: SECRETS }))
    fake.setWebhookUrl(`${baseUrl}/providers/elevenlabs/webhook`)
  })
  after(() => service.close())

  async function campaign(settings: Record<string, unknown> = {}, providerConfig: JsonObject = {}): Promise<string> {
    const response = await service.app.inject({
      method: 'POST',
      url: `/admin/v1/organizations/${org.orgId}/campaigns`,
      headers: bearer(OPERATOR_TOKEN),
      payload: {
        routing_key: `elevenlabs-${++routingKeys}`,
        channel: 'voice',
        schedule: ALWAYS_OPEN,
        provider: 'elevenlabs',
        provider_config: config({ disposition_field: 'disposition', callback_at_field: 'callback_at', opt_out_field: 'opt_out', ...providerConfig }),
        ...settings,
      },
    })
    assert.equal(response.statusCode, 201, response.body)
    return json(response).data.routing_key
  }

  async function trigger(routingKey: string, body: Record<string, unknown> = {}) {
    const response = await service.app.inject({
      method: 'POST',
      url: '/api/v2/triggers',
      headers: { ...bearer(org.key), 'content-type': 'application/json' },
      payload: {
        campaign: routingKey,
        ids: [{ source: 'ats', type: 'candidate_id', value: 'C-17' }],
        contact: { phone: '+44 20 7946 0958', first_name: 'Ada' },
        context: { job: { title: 'Nurse' } },
        ...body,
      },
    })
    assert.equal(response.statusCode, 201, response.body)
    return json(response).data as { id: string; task_id: string }
  }

  const task = async (id: string) => json(await service.app.inject({ method: 'GET', url: `/api/v2/tasks/${id}`, headers: bearer(org.key) })).data
  const events = (taskId: string) => eventsOfTask(service.db, taskId)

  /** A started call: the dispatcher's round, the task's interaction and its conversation at the fake. */
  async function startedCall(routingKey: string, body: Record<string, unknown> = {}) {
    const created = await trigger(routingKey, body)
    await service.app.workers!.dispatcher.runOnce()
    const interactionId = (await task(created.task_id)).interactions[0].id as string
    return { created, interactionId, conversationId: fake.conversationFor(interactionId)! }
  }

  test('a campaign’s provider_config is checked field by field', async () => {
    const response = await service.app.inject({
      method: 'POST',
      url: `/admin/v1/organizations/${org.orgId}/campaigns`,
      headers: bearer(OPERATOR_TOKEN),
      payload: { routing_key: 'elevenlabs-invalid', channel: 'voice', provider: 'elevenlabs', provider_config: { agent_id: AGENT, api_key_env: 'OPERATOR_TOKEN' } },
    })
    assert.equal(response.statusCode, 422)
    assert.deepEqual(
      json(response).detail.map((error: { loc: string[] }) => error.loc.join('.')),
      ['body.provider_config.agent_phone_number_id', 'body.provider_config.api_key_env'],
    )
    const whatsapp = await service.app.inject({
      method: 'POST',
      url: `/admin/v1/organizations/${org.orgId}/campaigns`,
      headers: bearer(OPERATOR_TOKEN),
      payload: { routing_key: 'elevenlabs-whatsapp', channel: 'whatsapp', provider: 'elevenlabs', provider_config: config() },
    })
    assert.equal(whatsapp.statusCode, 422)
  })

  test('a trigger reaches the agent with its variables; the signed post-call webhook finalizes the interaction with its transcript, summary, data and the client’s ids', async () => {
    const routingKey = await campaign()
    const { created, interactionId, conversationId } = await startedCall(routingKey)
    const [request] = fake.requests.filter((sent) => sent.body?.conversation_initiation_client_data?.dynamic_variables.interaction_id === interactionId)
    assert.deepEqual(request!.body.conversation_initiation_client_data.dynamic_variables, {
      interaction_id: interactionId,
      task_id: created.task_id,
      attempt: 1,
      first_name: 'Ada',
      candidate_id: 'C-17',
      job_title: 'Nurse',
    })
    const running = await task(created.task_id)
    assert.equal(running.status, 'in_progress')
    assert.equal(running.interactions[0].provider, 'elevenlabs')
    assert.equal(running.interactions[0].provider_ref, conversationId)

    const startSecs = fake.conversation(conversationId)!.metadata.start_time_unix_secs
    const status = await fake.endCall(conversationId, {
      turns: ['Hello Ada, this is the clinic about the Nurse role.', 'Hi, yes, I am interested.'],
      summary: 'Ada is interested in the Nurse role.',
      data: { disposition: 'interested', available_from: '2026-12-07', opt_out: false },
      durationS: 48,
    })
    assert.equal(status, 200)
    const done = await task(created.task_id)
    assert.equal(done.status, 'completed')
    assert.equal(done.outcome, 'reached')
    assert.equal(done.interactions[0].outcome, 'completed')
    assert.equal(done.interactions[0].duration_s, 48)
    const [finalized, completed] = await events(created.task_id)
    assert.equal(finalized.type, 'interaction.finalized')
    assert.deepEqual(finalized.data.ids, [{ source: 'ats', type: 'candidate_id', value: 'C-17' }])
    const result = finalized.data.result
    assert.equal(result.disposition, 'interested')
    assert.equal(result.summary, 'Ada is interested in the Nurse role.')
    assert.deepEqual(result.data, { disposition: 'interested', available_from: '2026-12-07', opt_out: false })
    assert.deepEqual(result.transcript, [
      { role: 'agent', text: 'Hello Ada, this is the clinic about the Nurse role.', at: new Date(startSecs * 1000).toISOString() },
      { role: 'contact', text: 'Hi, yes, I am interested.', at: new Date(startSecs * 1000 + 3000).toISOString() },
    ])
    assert.equal(result.recording_url, null)
    assert.equal(result.opt_out, false)
    assert.equal(completed.type, 'task.completed')
    assert.deepEqual(completed.data.result, result)
    assert.deepEqual(completed.data.ids, finalized.data.ids)

    // ElevenLabs' retry of the same webhook changes nothing.
    assert.equal(await fake.resend(), 200)
    assert.equal((await events(created.task_id)).length, 2)
    assert.deepEqual(await task(created.task_id), done)
  })

  test('a webhook with a bad signature, an old one or none is refused with 403 and changes nothing', async () => {
    const routingKey = await campaign()
    const { created, conversationId } = await startedCall(routingKey, { contact: { phone: '+44 20 7946 0100' } })
    const before = await task(created.task_id)
    const t = Math.floor(now / 1000)
    for (const webhook of [{ signature: null }, { signature: `t=${t},v0=${'0'.repeat(64)}` }, { timestamp: t - 31 * 60 }]) {
      assert.equal(await fake.endCall(conversationId, { turns: ['Hello'] }, { deliver: false }), null)
      fake.conversation(conversationId)!.status = 'in-progress'
      const body = JSON.stringify({ type: 'post_call_transcription', event_timestamp: t, data: fake.conversation(conversationId) })
      assert.equal(await fake.resend(body, webhook), 403)
    }
    assert.deepEqual(await task(created.task_id), before)
    assert.equal((await events(created.task_id)).length, 0)
    // Signed for another agent of the workspace: not this campaign's conversation.
    const other = JSON.stringify({ type: 'post_call_transcription', event_timestamp: t, data: { ...fake.conversation(conversationId), status: 'done', agent_id: 'agent_other' } })
    assert.equal(await fake.resend(other), 403)
    assert.deepEqual(await task(created.task_id), before)
  })

  test('a webhook about no conversation of this service, or an event not read, is answered 200 and ignored', async () => {
    assert.equal(await fake.resend(JSON.stringify({ type: 'post_call_transcription', event_timestamp: 1, data: { conversation_id: 'conv_dashboard', status: 'done' } })), 200)
    assert.equal(await fake.resend(JSON.stringify({ type: 'post_call_audio', event_timestamp: 1, data: { conversation_id: 'conv_dashboard', full_audio: 'AAAA' } })), 200)
    assert.equal(await fake.resend('not json'), 200)
  })

  test('a body larger than 4 MiB is refused with 413', async () => {
    const response = await fetch(`${baseUrl}/providers/elevenlabs/webhook`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'post_call_transcription', data: { padding: 'x'.repeat(4 * 1024 * 1024) } }),
    })
    assert.equal(response.status, 413)
  })

  test('a call that was busy is retried after its delay; a lost report is settled by the GET at the settle time, with its result', async () => {
    const routingKey = await campaign({ attempts: { max: 2, retry_delays_s: { busy: 600 } } })
    const first = await startedCall(routingKey, { contact: { phone: '+44 20 7946 0200' } })
    assert.equal(await fake.failCall(first.conversationId, 'busy'), 200)
    const busy = await task(first.created.task_id)
    assert.equal(busy.status, 'pending')
    assert.equal(busy.interactions[0].outcome, 'busy')
    assert.equal(busy.next_attempt_at, new Date(now + 600_000).toISOString())

    const settleAfter = (60 + 3600 + 15 * 60) * 1000
    now += 600_000
    try {
      await service.app.workers!.dispatcher.runOnce()
      const second = (await task(first.created.task_id)).interactions.find((interaction: { attempt: number }) => interaction.attempt === 2)
      const conversationId = fake.conversationFor(second.id)!
      assert.equal(await fake.endCall(conversationId, { turns: ['Hello Ada', 'Call me tomorrow'], data: { disposition: 'callback' }, summary: 'Wants a call tomorrow.' }, { deliver: false }), null)
      now += settleAfter - 1000
      await service.app.workers!.dispatcher.runOnce()
      assert.equal((await task(first.created.task_id)).status, 'in_progress')
      now += 1000
      await service.app.workers!.dispatcher.runOnce()
      const settled = await task(first.created.task_id)
      assert.equal(settled.status, 'completed')
      assert.equal(settled.outcome, 'reached')
      const finalized = (await events(first.created.task_id)).filter((event) => event.type === 'interaction.finalized')
      assert.deepEqual(finalized.map((event) => event.data.outcome), ['busy', 'completed'])
      assert.equal(finalized[1].data.result.disposition, 'callback')
      assert.equal(finalized[1].data.result.summary, 'Wants a call tomorrow.')
      assert.equal(finalized[1].data.result.transcript.length, 2)
    } finally {
      now -= 600_000 + settleAfter
    }
  })

  test('a start whose answer was lost is found by the interaction id the agent was given: its webhook settles it, never a second call', async () => {
    const routingKey = await campaign()
    const created = await trigger(routingKey, { contact: { phone: '+44 20 7946 0300' } })
    fake.dropNext()
    await service.app.workers!.dispatcher.runOnce()
    const uncertain = await task(created.task_id)
    const interactionId = uncertain.interactions[0].id
    assert.equal(uncertain.interactions[0].status, 'starting')
    const conversationId = fake.conversationFor(interactionId)!
    assert.equal(await fake.endCall(conversationId, { turns: ['Hello Ada', 'Yes'], data: { disposition: 'interested' } }), 200)
    const done = await task(created.task_id)
    assert.equal(done.outcome, 'reached')
    assert.equal(done.interactions[0].provider_ref, conversationId)
    await service.app.workers!.dispatcher.runOnce()
    assert.equal(fake.conversationFor(interactionId), conversationId)
    assert.equal(fake.requests.filter((sent) => sent.body?.conversation_initiation_client_data?.dynamic_variables.interaction_id === interactionId).length, 1)
  })

  test('the agent’s opt-out completes the task opted out; its voicemail is retried', async () => {
    const routingKey = await campaign({ attempts: { max: 3, retry_delays_s: { voicemail: 900 } } })
    const first = await startedCall(routingKey, { contact: { phone: '+44 20 7946 0400' } })
    assert.equal(await fake.endCall(first.conversationId, { turns: ['Hello, please leave a message'], voicemail: true }), 200)
    const retried = await task(first.created.task_id)
    assert.equal(retried.status, 'pending')
    assert.equal(retried.interactions[0].outcome, 'voicemail')

    const second = await startedCall(routingKey, { contact: { phone: '+44 20 7946 0401' } })
    assert.equal(await fake.endCall(second.conversationId, { turns: ['Hello Ada', 'Please never call me again'], data: { disposition: 'not_interested', opt_out: true } }), 200)
    const stopped = await task(second.created.task_id)
    assert.equal(stopped.outcome, 'opted_out')
  })

  test("ElevenLabs' 429 at start delays the attempt by its Retry-After without using it; it is made again after", async () => {
    const routingKey = await campaign()
    const created = await trigger(routingKey, { contact: { phone: '+44 20 7946 0777' } })
    fake.failNext({ status: 429, detail: { status: 'too_many_concurrent_requests', message: 'Too many concurrent requests' }, retryAfter: '30' })
    const families = await scrapeMetrics(service.app)
    const deferredBefore = sampleValue(families, 'conversation_trigger_provider_errors_total', 'conversation_trigger_provider_errors_total', { provider: 'elevenlabs', kind: 'deferred' }) ?? 0
    await service.app.workers!.dispatcher.runOnce()
    const deferred = await task(created.task_id)
    assert.equal(deferred.status, 'pending')
    assert.equal(deferred.attempts, 0)
    assert.deepEqual(deferred.interactions, [])
    assert.equal(deferred.next_attempt_at, new Date(now + 30_000).toISOString())
    const deferredAfter = sampleValue(await scrapeMetrics(service.app), 'conversation_trigger_provider_errors_total', 'conversation_trigger_provider_errors_total', { provider: 'elevenlabs', kind: 'deferred' })
    assert.equal(deferredAfter, deferredBefore + 1)
    now += 30_000
    try {
      await service.app.workers!.dispatcher.runOnce()
      const started = await task(created.task_id)
      assert.equal(started.status, 'in_progress')
      assert.deepEqual(started.interactions.map((interaction: { attempt: number }) => interaction.attempt), [1])
      assert.ok(fake.conversationFor(started.interactions[0].id))
    } finally {
      now -= 30_000
    }
  })

  test('logs carry neither the transcript nor the person’s number', () => {
    const logs = service.logs.join('\n')
    // The numbers' digits as written (+44 20 7946 ...) or as stored (+4420 7946...): "7946" alone is in some log times.
    assert.doesNotMatch(logs, /interested in the Nurse role|Please never call me again|20 ?7946/)
  })
  test("a person calls back the agent's number: the initiation webhook answers the task's variables with direction inbound; the post-call webhook completes the task reached", async () => {
    fake.setInitiationWebhook(`${baseUrl}/providers/elevenlabs/conversation-initiation`, { authorization: `Bearer ${SECRETS.ELEVENLABS_INITIATION_SECRET}` })
    const routingKey = await campaign()
    const { created, conversationId: outbound } = await startedCall(routingKey, { contact: { phone: '+44 20 7946 0411', first_name: 'Ada' } })
    assert.equal(await fake.failCall(outbound, 'no-answer'), 200)
    assert.equal((await task(created.task_id)).status, 'pending')

    const count = async () => Number((await service.db.query<{ n: string }>('SELECT count(*) AS n FROM interactions'))[0]!.n)
    const before = await count()
    // The post-call webhook's HMAC secret is not this webhook's.
    for (const headers of [{}, { authorization: 'Bearer not-the-secret' }, { authorization: `Bearer ${SECRETS.ELEVENLABS_WEBHOOK_SECRET}` }] as Record<string, string>[]) {
      assert.equal((await fake.receiveCall({ agentId: AGENT, callerId: '+442079460411', calledNumber: '+14155550100', headers })).status, 403)
    }
    assert.equal(await count(), before)
    const { status, answer, conversationId } = await fake.receiveCall({ agentId: AGENT, callerId: '+442079460411', calledNumber: '+14155550100' })
    assert.equal(status, 200)
    const interactionId = answer.dynamic_variables.interaction_id as string
    assert.deepEqual(answer, {
      type: 'conversation_initiation_client_data',
      dynamic_variables: { task_id: created.task_id, attempt: '', interaction_id: interactionId, direction: 'inbound', first_name: 'Ada', candidate_id: 'C-17', job_title: 'Nurse' },
    })
    assert.equal((await task(created.task_id)).waiting.for, 'callback')
    assertShown(documentedAnswers()[2], answer)

    assert.equal(await fake.endCall(conversationId!, { turns: ['Hi Ada.', 'Yes, I am interested.'], summary: 'Ada is interested.', data: { disposition: 'interested' }, durationS: 40 }), 200)
    const done = await task(created.task_id)
    assert.equal(done.status, 'completed')
    assert.equal(done.outcome, 'reached')
    const inbound = done.interactions.find((interaction: { id: string }) => interaction.id === interactionId)
    assert.equal(inbound.direction, 'inbound')
    assert.equal(inbound.provider_ref, conversationId)
    const finalized = (await events(created.task_id)).filter((event) => event.type === 'interaction.finalized').at(-1)
    assert.equal(finalized.data.interaction_id, interactionId)
    assert.equal(finalized.data.direction, 'inbound')
    assert.deepEqual(finalized.data.ids, [{ source: 'ats', type: 'candidate_id', value: 'C-17' }])
  })
})
