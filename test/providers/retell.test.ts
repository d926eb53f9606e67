/**
 * The Retell voice channel: its provider_config, how starts, refusals and
 * end reasons map, webhook signatures and results, against a local fake of
 * Retell's API and webhooks; then through the whole service, where the
 * dispatcher creates calls on the fake and its signed webhooks reach the
 * service over HTTP.
 */
import assert from 'node:assert/strict'
import { createHmac } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import type { OutboundAttempt } from '../../src/channels/channel.ts'
import { checkProviderConfig } from '../../src/channels/providerConfig.ts'
import { callOutcome, callResult, END_REASONS, endedForGood, type RetellCall } from '../../src/channels/retell/calls.ts'
import { readRetellConfig } from '../../src/channels/retell/config.ts'
import { RetellChannel, verifyRetellSignature } from '../../src/channels/retell/retellChannel.ts'
import type { JsonObject } from '../../src/domain/types.ts'
import { type FakeRetell, startFakeRetell } from '../fakes/retell.ts'
import { eventsOfTask } from '../support/events.ts'
import { assertShown, documentedAnswers } from '../support/callbackDocs.ts'
import { bearer, json, OPERATOR_TOKEN, seedOrganization, startCalledBackService, taskOf, type TestService } from '../support/service.ts'

const API_KEY = 'key_0123456789abcdef0123456789ab'
const FROM = '+14155550100'
const AGENT = 'oBeDLoLOeuAbiuaMFXRtDOLriTJ5tSxD'
const NUMBER_AGENT = 'agent_bound_to_the_number'
const SECRETS: Record<string, string> = { RETELL_API_KEY: API_KEY, RETELL_WRONG_KEY: 'key_not_this_one' }
const ALWAYS_OPEN = { timezone: 'contact', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '00:00', end: '24:00' }] }
/** The longest a call can ring and last, and the time for its analysis and webhooks (RetellChannel.settleAfterMs). */
const SETTLE_AFTER_MS = (2 * 3600 + 90) * 1000 + 15 * 60 * 1000

let now = Date.now()
let fake: FakeRetell

before(async () => {
  fake = await startFakeRetell({ apiKey: API_KEY, numbers: { [FROM]: NUMBER_AGENT }, now: () => now })
})
after(() => fake.close())

const config = (overrides: JsonObject = {}): JsonObject => ({ from_number: FROM, agent_id: AGENT, ...overrides })

function attempt(overrides: Partial<OutboundAttempt> = {}): OutboundAttempt {
  return {
    interactionId: 'int_01J0ABCDEF',
    taskId: 'task_1',
    attempt: 2,
    to: '+442079460958',
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

describe('the adapter', () => {
  let channel: RetellChannel
  before(() => {
    channel = new RetellChannel({ apiBaseUrl: fake.url, secret: (name) => SECRETS[name], timeoutMs: 2_000, now: () => now })
  })

  test("creates the call in Retell's wire format: the agent, the variables as strings, the interaction in the metadata", async () => {
    fake.requests.length = 0
    const result = await channel.start(
      attempt({
        firstName: 'Ana',
        language: 'pt-BR',
        ids: [{ source: 'ats', type: 'candidate_id', value: 'C-17' }],
        context: { job: { title: 'Nurse', hours: 38.5 }, remote: false, shifts: ['night', 'day'], manager: null },
      }),
    )
    assert.equal(result.kind, 'started')
    const [request] = fake.requests
    assert.equal(request!.method, 'POST')
    assert.equal(request!.path, '/v2/create-phone-call')
    assert.equal(request!.headers.authorization, `Bearer ${API_KEY}`)
    assert.equal(request!.headers['content-type'], 'application/json')
    assert.deepEqual(request!.body, {
      from_number: FROM,
      to_number: '+442079460958',
      override_agent_id: AGENT,
      retell_llm_dynamic_variables: {
        interaction_id: 'int_01J0ABCDEF',
        task_id: 'task_1',
        attempt: '2',
        first_name: 'Ana',
        language: 'pt-BR',
        candidate_id: 'C-17',
        job_title: 'Nurse',
        job_hours: '38.5',
        remote: 'false',
        shifts: '["night","day"]',
      },
      metadata: { interaction_id: 'int_01J0ABCDEF', task_id: 'task_1', attempt: 2 },
    })
    assert.equal(result.kind === 'started' && result.providerRef, fake.callIdFor('int_01J0ABCDEF'))
    // Recorded as the interaction's handoff by the dispatcher.
    assert.deepEqual(result.kind === 'started' && result.leftOut, [{ key: 'manager', reason: 'null' }])
    assert.equal(fake.call(result.kind === 'started' ? result.providerRef : '')?.agent_id, AGENT)
  })

  test("without an agent_id, the number's own agent takes the call; an agent_version is sent as Retell's override", async () => {
    fake.requests.length = 0
    const plain = await channel.start(attempt({ config: { from_number: FROM } }))
    assert.equal(fake.call(plain.kind === 'started' ? plain.providerRef : '')?.agent_id, NUMBER_AGENT)
    assert.equal('override_agent_id' in fake.requests[0]!.body, false)
    await channel.start(attempt({ config: config({ agent_version: 3 }) }))
    assert.equal(fake.requests[1]!.body.override_agent_version, 3)
  })

  test('no API key in the environment is refused for good, naming the variable and not calling Retell', async () => {
    fake.requests.length = 0
    const result = await channel.start(attempt({ config: config({ api_key_env: 'RETELL_UNSET' }) }))
    assert.deepEqual(result, { kind: 'refused', permanent: true, reason: 'no Retell API key: environment variable RETELL_UNSET is not set' })
    assert.equal(fake.requests.length, 0)
  })

  test('a wrong API key is refused for good, with Retell’s message', async () => {
    const result = await channel.start(attempt({ config: config({ api_key_env: 'RETELL_WRONG_KEY' }) }))
    assert.deepEqual(result, { kind: 'refused', permanent: true, reason: 'Retell refused the call (HTTP 401): API key is missing or invalid.' })
  })

  const REFUSALS: [status: number, message: string][] = [
    [400, 'Invalid request format, please check API reference.'],
    [402, 'Trial has ended, please add payment method.'],
    [404, 'Not Found'],
    [422, 'Cannot find requested asset under given api key.'],
  ]
  for (const [status, message] of REFUSALS) {
    test(`HTTP ${status} is refused for good, without the number in the reason`, async () => {
      fake.failNext({ status, message: `${message} (+442079460958)` })
      const result = await channel.start(attempt())
      assert.deepEqual(result, { kind: 'refused', permanent: true, reason: `Retell refused the call (HTTP ${status}): ${message} ([to_number])` })
    })
  }

  test("Retell's 429 defers the start by its Retry-After", async () => {
    fake.failNext({ status: 429, message: 'Account rate limited, please throttle your requests.', retryAfter: '30' })
    assert.deepEqual(await channel.start(attempt()), {
      kind: 'deferred',
      retryAfterMs: 30_000,
      reason: 'Retell turned the call away for now (HTTP 429): Account rate limited, please throttle your requests.',
    })
  })

  for (const status of [500, 503]) {
    test(`HTTP ${status} defers the start a few seconds, with jitter`, async () => {
      fake.failNext({ status, message: 'An unexpected server error occurred.' })
      const result = await channel.start(attempt())
      assert.equal(result.kind, 'deferred')
      assert.ok(result.kind === 'deferred' && result.retryAfterMs >= 2_000 && result.retryAfterMs < 5_000)
    })
  }

  test('a start whose answer is lost throws: Retell may have the call', async () => {
    fake.dropNext()
    await assert.rejects(channel.start(attempt()), /Retell POST \/v2\/create-phone-call: connection failed/)
  })

  test('settles by Get Call: the outcome, the duration and the result from the transcript and the analysis', async () => {
    const started = await channel.start(attempt({ interactionId: 'int_01J0SETTLE' }))
    const callId = started.kind === 'started' ? started.providerRef : ''
    const progress = { providerRef: callId, providerStatus: null, attempt: 1, config: config(), startedAt: 0, to: '+15555550100' }
    await assert.doesNotReject(channel.settle(progress))
    // Still registered after its longest time: gone wrong.
    assert.deepEqual(await channel.settle(progress), { outcome: 'failed' })

    const start = now
    Object.assign(fake.call(callId)!, {
      call_status: 'ended',
      disconnection_reason: 'user_hangup',
      start_timestamp: start,
      end_timestamp: start + 61_400,
      duration_ms: 61_400,
      transcript_object: [
        { role: 'agent', content: 'Hi Ana, this is Sam.', words: [{ word: 'Hi', start: 0.5, end: 0.7 }] },
        { role: 'user', content: 'Hello!', words: [{ word: 'Hello!', start: 2, end: 2.4 }] },
      ],
      recording_url: 'https://dxc03zgurdly9.cloudfront.net/r.wav',
      call_analysis: { call_summary: 'Ana is interested.', custom_analysis_data: { outcome_code: 'interested', salary: 42000 } },
    })
    assert.deepEqual(await channel.settle({ ...progress, config: config({ disposition_field: 'outcome_code' }) }), {
      outcome: 'completed',
      durationS: 61,
      result: {
        disposition: 'interested',
        summary: 'Ana is interested.',
        data: { outcome_code: 'interested', salary: 42000 },
        transcript: [
          { role: 'agent', text: 'Hi Ana, this is Sam.', at: new Date(start + 500).toISOString() },
          { role: 'contact', text: 'Hello!', at: new Date(start + 2000).toISOString() },
        ],
        recording_url: 'https://dxc03zgurdly9.cloudfront.net/r.wav',
      },
    })
    assert.equal(fake.requests.at(-1)!.path, `/v2/get-call/${callId}`)
    assert.equal(fake.requests.at(-1)!.headers.authorization, `Bearer ${API_KEY}`)

    fake.failNext({ status: 500, message: 'An unexpected server error occurred.' })
    await assert.rejects(channel.settle(progress), /HTTP 500/)
    assert.deepEqual(await channel.settle({ ...progress, providerRef: 'not-a-call' }), { outcome: 'failed' })
    assert.deepEqual(await channel.settle({ ...progress, providerRef: null }), { outcome: 'failed' })
  })
})

describe('end reasons', () => {
  // docs/providers/voice-platforms.md, section 4, from Retell's disconnection_reason enum and its debugging pages.
  // 'for good': the number cannot be called at all, so the task fails without spending its attempts.
  const TABLE: [reason: string, status: string, outcome: string, forGood?: 'for good'][] = [
    ['user_hangup', 'ended', 'completed'],
    ['agent_hangup', 'ended', 'completed'],
    ['call_transfer', 'ended', 'completed'],
    ['transfer_bridged', 'ended', 'completed'],
    ['transfer_cancelled', 'ended', 'completed'],
    ['call_take_over', 'ended', 'completed'],
    ['inactivity', 'ended', 'completed'],
    ['max_duration_reached', 'ended', 'completed'],
    ['voicemail_reached', 'ended', 'voicemail'],
    ['ivr_reached', 'ended', 'voicemail'],
    ['dial_no_answer', 'not_connected', 'no_answer'],
    ['dial_busy', 'not_connected', 'busy'],
    ['user_declined', 'not_connected', 'busy'],
    ['dial_failed', 'not_connected', 'failed'],
    ['invalid_destination', 'not_connected', 'failed', 'for good'],
    ['telephony_provider_permission_denied', 'not_connected', 'failed'],
    ['sip_routing_error', 'not_connected', 'failed'],
    ['no_valid_payment', 'error', 'failed'],
    ['scam_detected', 'error', 'failed'],
    ['marked_as_spam', 'not_connected', 'failed'],
    ['telephony_provider_unavailable', 'not_connected', 'failed'],
    ['concurrency_limit_reached', 'error', 'failed'],
    ['no_concurrency_fallback', 'error', 'failed'],
    ['registered_call_timeout', 'error', 'failed'],
    ['error_llm_websocket_open', 'error', 'failed'],
    ['error_llm_websocket_lost_connection', 'ended', 'failed'],
    ['error_no_audio_received', 'ended', 'failed'],
    ['error_asr', 'ended', 'failed'],
    ['error_retell', 'error', 'failed'],
    ['error_unknown', 'error', 'failed'],
    ['error_user_not_joined', 'error', 'failed'],
    ['manual_stopped', 'ended', 'failed'],
    ['a_reason_retell_adds_later', 'ended', 'failed'],
  ]
  for (const [reason, status, outcome, forGood] of TABLE) {
    test(`${reason} (${status}) is ${outcome}${forGood === undefined ? '' : `, ${forGood}`}`, () => {
      const call = { call_id: 'c', call_status: status, disconnection_reason: reason }
      assert.equal(callOutcome(call), outcome)
      assert.equal(endedForGood(call), forGood !== undefined)
    })
  }

  test('every reason the table maps is in this table', () => {
    for (const reason of Object.keys(END_REASONS)) assert.ok(TABLE.some(([listed]) => listed === reason), reason)
  })

  test('a running call has no outcome; the analysis tells a voicemail the agent spoke to', () => {
    assert.equal(callOutcome({ call_id: 'c', call_status: 'registered' }), undefined)
    assert.equal(callOutcome({ call_id: 'c', call_status: 'ongoing' }), undefined)
    assert.equal(callOutcome({ call_id: 'c', call_status: 'ended', disconnection_reason: 'agent_hangup', call_analysis: { in_voicemail: true } }), 'voicemail')
    assert.equal(callOutcome({ call_id: 'c', call_status: 'ended', disconnection_reason: 'agent_hangup', call_analysis: { in_voicemail: false } }), 'completed')
  })
})

describe('results', () => {
  const fields = readRetellConfig({ from_number: FROM })

  test('the disposition, a callback time and an opt-out come from the fields the campaign names', () => {
    const call: RetellCall = {
      call_id: 'c',
      call_analysis: { call_summary: 'Call back tomorrow.', custom_analysis_data: { disposition: 'callback', callback_at: '2026-12-01T09:00:00+01:00', opt_out: false, stage: 2 } },
    }
    assert.deepEqual(callResult(call, fields), {
      disposition: 'callback',
      summary: 'Call back tomorrow.',
      data: { disposition: 'callback', callback_at: '2026-12-01T09:00:00+01:00', opt_out: false, stage: 2 },
      callback_at: '2026-12-01T08:00:00.000Z',
      opt_out: false,
    })
    const named = readRetellConfig({ from_number: FROM, disposition_field: 'result', callback_at_field: 'when', opt_out_field: 'stop' })
    const other = callResult({ call_id: 'c', call_analysis: { custom_analysis_data: { result: 'not_interested', when: 'tomorrow', stop: true } } }, named)
    // "tomorrow" is no instant: left out, the rest kept.
    assert.deepEqual(other, { disposition: 'not_interested', data: { result: 'not_interested', when: 'tomorrow', stop: true }, opt_out: true })
  })

  test("without transcript_object, the transcript is read from the text's Agent: and User: lines", () => {
    const call: RetellCall = { call_id: 'c', transcript: 'Agent: Hi, is this Ana?\nUser: Yes.\nIt is.\nAgent: Great.\n' }
    assert.deepEqual(callResult(call, fields)?.transcript, [
      { role: 'agent', text: 'Hi, is this Ana?' },
      { role: 'contact', text: 'Yes.\nIt is.' },
      { role: 'agent', text: 'Great.' },
    ])
  })

  test('a disposition outside the pattern and a recording that is not https are left out; nothing at all is no result', () => {
    const call: RetellCall = { call_id: 'c', recording_url: 'http://insecure.example/r.wav', call_analysis: { custom_analysis_data: { disposition: 'Not a code!' } } }
    assert.deepEqual(callResult(call, fields), { data: { disposition: 'Not a code!' } })
    assert.equal(callResult({ call_id: 'c' }, fields), undefined)
  })
})

describe('signatures', () => {
  const body = Buffer.from('{"event":"call_ended","call":{"call_id":"c"}}')
  const sign = (key: string, at: number, signed: Buffer = body) => `v=${at},d=${createHmac('sha256', key).update(Buffer.concat([signed, Buffer.from(String(at))])).digest('hex')}`

  test("Retell's signature verifies within five minutes, over the exact body, with the key", () => {
    assert.equal(verifyRetellSignature(API_KEY, body, sign(API_KEY, now), now), true)
    assert.equal(verifyRetellSignature(API_KEY, body, sign(API_KEY, now - 300_000), now), true)
    assert.equal(verifyRetellSignature(API_KEY, body, sign(API_KEY, now - 300_001), now), false)
    assert.equal(verifyRetellSignature(API_KEY, body, sign(API_KEY, now + 300_001), now), false)
    assert.equal(verifyRetellSignature(API_KEY, body, sign('another key', now), now), false)
    assert.equal(verifyRetellSignature(API_KEY, body, sign(API_KEY, now, Buffer.from('{"event":"call_ended","call":{"call_id":"d"}}')), now), false)
    assert.equal(verifyRetellSignature(API_KEY, body, undefined, now), false)
    assert.equal(verifyRetellSignature(API_KEY, body, `v=${now},d=abc`, now), false)
    assert.equal(verifyRetellSignature('', body, sign('', now), now), false)
  })
})

describe('provider_config', () => {
  const channel = new RetellChannel({ secret: () => undefined })
  const check = (value: unknown) => checkProviderConfig(channel.configSchema, value, ['body', 'provider_config']).errors

  test('a from_number is all it needs; every field checked, one entry each', () => {
    assert.deepEqual(check({ from_number: FROM }), [])
    assert.deepEqual(
      check({ from_number: FROM, agent_id: AGENT, agent_version: 0, api_key_env: 'RETELL_OTHER_KEY', disposition_field: 'd', callback_at_field: 'c', opt_out_field: 'o' }),
      [],
    )
    const errors = check({ from_number: '0415 555 0100', agent_id: 'not an id', agent_version: -1, api_key_env: 'DATABASE_URL', disposition_field: ' ', callback_at_field: 5, extra: true })
    assert.deepEqual(
      errors.map((error) => [error.loc.join('.'), error.type]),
      [
        ['body.provider_config.from_number', 'value_error'],
        ['body.provider_config.agent_id', 'value_error'],
        ['body.provider_config.agent_version', 'greater_than_equal'],
        ['body.provider_config.api_key_env', 'value_error'],
        ['body.provider_config.disposition_field', 'value_error'],
        ['body.provider_config.callback_at_field', 'string_type'],
        ['body.provider_config.extra', 'extra_forbidden'],
      ],
    )
    assert.deepEqual(check({}).map((error) => [error.loc.join('.'), error.type]), [['body.provider_config.from_number', 'missing']])
    assert.deepEqual(check([]).map((error) => error.type), ['model_attributes_type'])
  })

  test('read as the API reads any body: "3" for a version is 3, a null field is not sent; the campaign keeps the normalized value', () => {
    const checked = checkProviderConfig(channel.configSchema, { from_number: FROM, agent_version: '3', agent_id: null }, ['body', 'provider_config'])
    assert.deepEqual(checked, { value: { from_number: FROM, agent_version: 3 }, errors: [] })
    assert.deepEqual(readRetellConfig({ from_number: FROM, agent_version: '3' }), {
      fromNumber: FROM,
      agentId: undefined,
      agentVersion: 3,
      apiKeyEnv: 'RETELL_API_KEY',
      dispositionField: 'disposition',
      callbackAtField: 'callback_at',
      optOutField: 'opt_out',
    })
    assert.throws(() => readRetellConfig({ from_number: 'nope' }), /from_number/)
  })
})

describe('through the service', () => {
  let service: TestService
  let org: Awaited<ReturnType<typeof seedOrganization>>
  let baseUrl: string
  let routingKeys = 0

  before(async () => {
    ;({ service, baseUrl, org } = await startCalledBackService({ now: () => now, apiBaseUrls: { retellApiBaseUrl: fake.url }, secrets: SECRETS }))
    fake.setWebhookUrl(`${baseUrl}/providers/retell/webhook`)
  })
  after(() => service.close())

  async function campaign(settings: Record<string, unknown> = {}): Promise<string> {
    const response = await service.app.inject({
      method: 'POST',
      url: `/admin/v1/organizations/${org.orgId}/campaigns`,
      headers: bearer(OPERATOR_TOKEN),
      payload: { routing_key: `retell-${++routingKeys}`, channel: 'voice', schedule: ALWAYS_OPEN, provider: 'retell', provider_config: config(), ...settings },
    })
    assert.equal(response.statusCode, 201, response.body)
    return json(response).data.routing_key
  }

  async function trigger(routingKey: string, body: Record<string, unknown> = {}) {
    const response = await service.app.inject({
      method: 'POST',
      url: '/api/v2/triggers',
      headers: { ...bearer(org.key), 'content-type': 'application/json' },
      payload: { campaign: routingKey, ids: [{ source: 'ats', type: 'candidate_id', value: 'C-17' }], contact: { phone: '+44 20 7946 0958', first_name: 'Ana' }, ...body },
    })
    assert.equal(response.statusCode, 201, response.body)
    return json(response).data as { id: string; task_id: string }
  }

  const task = (id: string) => taskOf(service.app, org.key, id)
  const events = (taskId: string) => eventsOfTask(service.db, taskId)

  /** Triggers on a campaign, dispatches, and names the call Retell created. */
  async function calling(settings: Record<string, unknown> = {}, body: Record<string, unknown> = {}) {
    const created = await trigger(await campaign(settings), body)
    await service.app.workers!.dispatcher.runOnce()
    const interactionId = (await task(created.task_id)).interactions[0].id as string
    const callId = fake.callIdFor(interactionId)!
    assert.ok(callId)
    return { ...created, interactionId, callId }
  }

  const TRANSCRIPT = [
    { role: 'agent' as const, content: 'Hi Ana, this is Sam about the nurse role.', start: 0.4 },
    { role: 'user' as const, content: 'Hi, yes, call me tomorrow morning please.', start: 3.1 },
  ]
  const ANALYSIS = {
    call_summary: 'Ana asked to be called back tomorrow morning.',
    call_successful: true,
    in_voicemail: false,
    user_sentiment: 'Positive' as const,
    custom_analysis_data: { disposition: 'callback', callback_at: new Date(now + 86_400_000).toISOString(), interested: true },
  }

  test("a trigger reaches Retell with the task's variables; the signed end and analysis finalize it with the transcript, summary, data and the client's ids", async () => {
    const { task_id: taskId, interactionId, callId } = await calling({ results: { wait_s: 120 }, context: { job: { title: 'Nurse' } } })
    const [request] = fake.requests.filter((request) => request.body?.metadata?.interaction_id === interactionId)
    assert.deepEqual(request!.body.retell_llm_dynamic_variables, {
      interaction_id: interactionId,
      task_id: taskId,
      attempt: '1',
      first_name: 'Ana',
      candidate_id: 'C-17',
      job_title: 'Nurse',
    })
    assert.equal(request!.body.to_number, '+442079460958')

    assert.equal(await fake.startCall(callId), 204)
    assert.equal((await task(taskId)).interactions[0].status, 'active')
    assert.equal(await fake.endCall(callId, { reason: 'user_hangup', durationMs: 42_300, transcript: TRANSCRIPT }), 204)
    const ended = await task(taskId)
    assert.equal(ended.interactions[0].status, 'ended', 'waits for its analysis')
    assert.equal((await events(taskId)).length, 0)

    assert.equal(await fake.analyzeCall(callId, ANALYSIS), 204)
    const done = await task(taskId)
    assert.equal(done.interactions[0].status, 'finalized')
    assert.equal(done.interactions[0].outcome, 'completed')
    assert.equal(done.interactions[0].duration_s, 42)
    assert.equal(done.interactions[0].provider, 'retell')
    assert.equal(done.interactions[0].provider_ref, callId)
    const [finalized, ...rest] = await events(taskId)
    assert.equal(finalized.type, 'interaction.finalized')
    assert.deepEqual(finalized.data.ids, [{ source: 'ats', type: 'candidate_id', value: 'C-17' }])
    const { received_at: _, ...result } = finalized.data.result
    const start = fake.call(callId)!.start_timestamp!
    assert.deepEqual(result, {
      disposition: 'callback',
      summary: 'Ana asked to be called back tomorrow morning.',
      data: ANALYSIS.custom_analysis_data,
      transcript: [
        { role: 'agent', text: TRANSCRIPT[0]!.content, at: new Date(start + 400).toISOString() },
        { role: 'contact', text: TRANSCRIPT[1]!.content, at: new Date(start + 3100).toISOString() },
      ],
      transcript_url: null,
      recording_url: `https://dxc03zgurdly9.cloudfront.net/${callId}/recording.wav`,
      callback_at: ANALYSIS.custom_analysis_data.callback_at,
      opt_out: false,
    })
    // A callback asked for: the task's next attempt is due then, not completed.
    assert.equal(done.status, 'pending')
    assert.equal(done.next_attempt_at, ANALYSIS.custom_analysis_data.callback_at)
    assert.equal(rest.length, 0)
    const read = await service.app.inject({ method: 'GET', url: `/api/v2/interactions/${interactionId}`, headers: bearer(org.key) })
    assert.equal(json(read).data.result.summary, ANALYSIS.call_summary)
  })

  test('a repeated report changes nothing: the end and the analysis delivered again, the start after the end', async () => {
    const { task_id: taskId, callId } = await calling({ results: { wait_s: 120 } }, { contact: { phone: '+44 20 7946 0101' } })
    assert.equal(await fake.startCall(callId), 204)
    assert.equal(await fake.endCall(callId, { reason: 'agent_hangup', durationMs: 30_000, transcript: TRANSCRIPT }), 204)
    assert.equal(await fake.send('call_ended', callId), 204)
    assert.equal((await task(taskId)).interactions[0].status, 'ended')
    assert.equal(await fake.analyzeCall(callId, { call_summary: 'Not interested.', custom_analysis_data: { disposition: 'not_interested' } }), 204)
    const first = await task(taskId)
    const firstEvents = await events(taskId)
    assert.deepEqual(firstEvents.map((event) => event.type), ['interaction.finalized', 'task.completed'])
    assert.equal(firstEvents[1].data.result.disposition, 'not_interested')
    for (const event of ['call_analyzed', 'call_ended', 'call_started'] as const) assert.equal(await fake.send(event, callId), 204)
    assert.deepEqual(await task(taskId), first)
    assert.deepEqual(await events(taskId), firstEvents)
  })

  test('a bad signature is refused with 403 and changes nothing', async () => {
    const { task_id: taskId, interactionId, callId } = await calling({}, { contact: { phone: '+44 20 7946 0102' } })
    const before = await task(taskId)
    const stale = `v=${now - 600_000},d=${'0'.repeat(64)}`
    Object.assign(fake.call(callId)!, { call_status: 'ended', disconnection_reason: 'user_hangup', duration_ms: 5000 })
    assert.equal(await fake.send('call_ended', callId, { signature: null }), 403)
    assert.equal(await fake.send('call_ended', callId, { signature: stale }), 403)
    assert.equal(await fake.send('call_ended', callId, { signature: `v=${now},d=${'a'.repeat(64)}` }), 403)
    // Signed, then altered: the signature no longer holds.
    assert.equal(await fake.send('call_ended', callId, { mutate: (body) => body.replace('"user_hangup"', '"dial_busy"') }), 403)
    // A call of no interaction of ours, and a body that is no webhook.
    const stranger = JSON.stringify({ event: 'call_ended', call: { call_id: 'someone-elses', metadata: { interaction_id: interactionId } } })
    const post = (body: string) => fetch(`${baseUrl}/providers/retell/webhook`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
    assert.equal((await post(stranger)).status, 403)
    assert.equal((await post('not json')).status, 403)
    assert.deepEqual(await task(taskId), before)
    assert.equal(before.interactions[0].status, 'active')
  })

  test("a stored provider_config its schema refuses (one kept before a rule was) refuses the call's webhooks with 403, logged with its campaign, never a 500", async () => {
    const { task_id: taskId, interactionId, callId } = await calling({}, { contact: { phone: '+44 20 7946 0109' } })
    const before = await task(taskId)
    // A version past 2^53 - 1, which the schema's integer now refuses.
    await service.db.query(`UPDATE interactions SET provider_config = provider_config || '{"agent_version": 1e300}' WHERE id = $1`, [interactionId])
    Object.assign(fake.call(callId)!, { call_status: 'ended', disconnection_reason: 'user_hangup', duration_ms: 5000 })
    assert.equal(await fake.send('call_ended', callId), 403)
    assert.deepEqual(await task(taskId), before)
    const [row] = await service.db.query<{ campaign_id: string }>('SELECT campaign_id FROM interactions WHERE id = $1', [interactionId])
    assert.ok(service.logs.some((line) => line.includes("a campaign's stored provider_config cannot be read") && line.includes(row!.campaign_id)))
  })

  test('a body over 1 MiB is refused with 413', async () => {
    const response = await fetch(`${baseUrl}/providers/retell/webhook`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ event: 'call_ended', call: { call_id: 'x', transcript: 'a'.repeat(1024 * 1024) } }),
    })
    assert.equal(response.status, 413)
  })

  test('a lost report is settled by Get Call when the call would be over, with its transcript and analysis', async () => {
    const { task_id: taskId, callId } = await calling({}, { contact: { phone: '+44 20 7946 0103' } })
    const start = now
    Object.assign(fake.call(callId)!, {
      call_status: 'ended',
      disconnection_reason: 'user_hangup',
      start_timestamp: start,
      end_timestamp: start + 20_000,
      duration_ms: 20_000,
      transcript: 'Agent: Hi Ana.\nUser: Not now, thanks.\n',
      call_analysis: { call_summary: 'Declined.', custom_analysis_data: { disposition: 'declined', opt_out: true } },
    })
    now += SETTLE_AFTER_MS - 1000
    try {
      await service.app.workers!.dispatcher.runOnce()
      assert.equal((await task(taskId)).interactions[0].status, 'active')
      now += 1000
      await service.app.workers!.dispatcher.runOnce()
      const settled = await task(taskId)
      assert.equal(settled.interactions[0].outcome, 'completed')
      assert.equal(settled.interactions[0].duration_s, 20)
      // The agent's opt-out: the task completes opted out.
      assert.equal(settled.outcome, 'opted_out')
      const [finalized] = await events(taskId)
      assert.equal(finalized.data.result.disposition, 'declined')
      assert.deepEqual(finalized.data.result.transcript, [
        { role: 'agent', text: 'Hi Ana.' },
        { role: 'contact', text: 'Not now, thanks.' },
      ])
      assert.equal(fake.requests.at(-1)!.path, `/v2/get-call/${callId}`)
    } finally {
      now -= SETTLE_AFTER_MS
    }
  })

  test("Retell's 429 at start delays the attempt by its Retry-After without using it; it is made after", async () => {
    const created = await trigger(await campaign(), { contact: { phone: '+44 20 7946 0104' } })
    fake.failNext({ status: 429, message: 'Account rate limited, please throttle your requests.', retryAfter: '20' })
    await service.app.workers!.dispatcher.runOnce()
    const deferred = await task(created.task_id)
    assert.equal(deferred.status, 'pending')
    assert.equal(deferred.attempts, 0)
    assert.deepEqual(deferred.interactions, [])
    assert.equal(deferred.next_attempt_at, new Date(now + 20_000).toISOString())
    const dialled = () => fake.requests.filter((request) => request.body?.to_number === '+442079460104').length
    now += 20_000
    try {
      await service.app.workers!.dispatcher.runOnce()
      assert.equal(dialled(), 2)
      const started = await task(created.task_id)
      assert.equal(started.status, 'in_progress')
      assert.equal(started.attempts, 1)
      assert.equal(started.interactions.length, 1)
      assert.equal(started.interactions[0].attempt, 1)
    } finally {
      now -= 20_000
    }
  })

  test("a start whose answer was lost is recognized by the interaction in the call's metadata: its webhook confirms and ends it, never a second dial", async () => {
    const created = await trigger(await campaign(), { contact: { phone: '+44 20 7946 0105' } })
    fake.dropNext()
    await service.app.workers!.dispatcher.runOnce()
    const uncertain = await task(created.task_id)
    assert.equal(uncertain.interactions[0].status, 'starting')
    const callId = fake.callIdFor(uncertain.interactions[0].id)!
    assert.equal(await fake.endCall(callId, { reason: 'dial_no_answer' }), 204)
    const state = await task(created.task_id)
    assert.equal(state.interactions[0].outcome, 'no_answer')
    assert.equal(state.interactions[0].provider_ref, callId)
    assert.equal(state.status, 'pending')
    await service.app.workers!.dispatcher.runOnce()
    assert.equal(fake.requests.filter((request) => request.body?.to_number === '+442079460105').length, 1)
  })

  test('a number Retell cannot call at all (invalid_destination) fails its task at once, its other attempts not spent', async () => {
    const { task_id: taskId, callId } = await calling({}, { contact: { phone: '+44 20 7946 0108' } })
    assert.equal(await fake.endCall(callId, { reason: 'invalid_destination' }), 204)
    const done = await task(taskId)
    assert.equal(done.interactions[0].outcome, 'failed')
    assert.equal(done.status, 'completed')
    assert.equal(done.outcome, 'failed')
    assert.equal(done.attempts, 1)
  })

  test('without a wait for results, the end is reported at once, and the analysis that follows changes nothing', async () => {
    const { task_id: taskId, callId } = await calling({}, { contact: { phone: '+44 20 7946 0106' } })
    assert.equal(await fake.endCall(callId, { reason: 'voicemail_reached', durationMs: 15_000 }), 204)
    const ended = await task(taskId)
    assert.equal(ended.interactions[0].outcome, 'voicemail')
    assert.equal(ended.status, 'pending')
    const before = await events(taskId)
    assert.equal(await fake.analyzeCall(callId, { call_summary: 'Voicemail.', in_voicemail: true }), 204)
    assert.deepEqual(await events(taskId), before)
  })

  test("an analysis whose call's end never came is its end and its result at once", async () => {
    const { task_id: taskId, callId } = await calling({}, { contact: { phone: '+44 20 7946 0107' } })
    Object.assign(fake.call(callId)!, { call_status: 'ended', disconnection_reason: 'user_hangup', start_timestamp: now, end_timestamp: now + 9_000, duration_ms: 9_000 })
    assert.equal(await fake.analyzeCall(callId, { call_summary: 'Interested.', custom_analysis_data: { disposition: 'interested' } }), 204)
    const done = await task(taskId)
    assert.equal(done.outcome, 'reached')
    assert.equal(done.interactions[0].duration_s, 9)
    const [finalized] = await events(taskId)
    assert.equal(finalized.data.result.disposition, 'interested')
  })

  test('a campaign with a provider_config Retell cannot use is refused with 422, field by field', async () => {
    const response = await service.app.inject({
      method: 'POST',
      url: `/admin/v1/organizations/${org.orgId}/campaigns`,
      headers: bearer(OPERATOR_TOKEN),
      payload: { routing_key: 'retell-bad', channel: 'voice', provider: 'retell', provider_config: { from_number: 'x', api_key_env: 'OPERATOR_TOKEN' } },
    })
    assert.equal(response.statusCode, 422)
    assert.deepEqual(
      json(response).detail.map((entry: { loc: string[] }) => entry.loc.join('.')),
      ['body.provider_config.from_number', 'body.provider_config.api_key_env'],
    )
    const whatsapp = await service.app.inject({
      method: 'POST',
      url: `/admin/v1/organizations/${org.orgId}/campaigns`,
      headers: bearer(OPERATOR_TOKEN),
      payload: { routing_key: 'retell-whatsapp', channel: 'whatsapp', provider: 'retell', provider_config: { from_number: FROM } },
    })
    assert.equal(whatsapp.statusCode, 422)
  })
  test("a person calls back the campaign's number: Retell's inbound webhook gets the agent and the task's variables with direction inbound; the call, named by its metadata, completes the task reached", async () => {
    fake.setInboundWebhookUrl(`${baseUrl}/providers/retell/inbound`)
    const { task_id: taskId, callId: outbound } = await calling({ results: { wait_s: 120 } }, { contact: { phone: '+44 20 7946 0311', first_name: 'Ana' } })
    assert.equal(await fake.endCall(outbound, { reason: 'dial_no_answer' }), 204)
    assert.equal((await task(taskId)).status, 'pending')

    const count = async () => Number((await service.db.query<{ n: string }>('SELECT count(*) AS n FROM interactions'))[0]!.n)
    for (const signature of [null, 'v=1,d=' + 'ab'.repeat(32)]) assert.equal((await fake.receiveCall({ from: '+442079460311', to: FROM, signature })).status, 403)
    const before = await count()
    const { status, answer, callId } = await fake.receiveCall({ from: '+442079460311', to: FROM })
    assert.equal(status, 200)
    const { override_agent_id: agent, dynamic_variables: variables, metadata } = answer.call_inbound
    assert.equal(agent, AGENT)
    const interactionId = metadata.interaction_id as string
    assert.deepEqual(metadata, { interaction_id: interactionId, task_id: taskId, direction: 'inbound' })
    assert.deepEqual(variables, { interaction_id: interactionId, task_id: taskId, direction: 'inbound', first_name: 'Ana', candidate_id: 'C-17' })
    assertShown(documentedAnswers()[1], answer)
    // Retell repeats a webhook it had no answer to within 10 s: the same call, the same interaction.
    assert.equal((await fake.receiveCall({ from: '+442079460311', to: FROM })).answer.call_inbound.metadata.interaction_id, interactionId)
    assert.equal(await count(), before + 1)
    assert.equal((await task(taskId)).waiting.for, 'callback')

    assert.equal(await fake.startCall(callId!), 204)
    const started = (await task(taskId)).interactions.find((interaction: { id: string }) => interaction.id === interactionId)
    assert.equal(started.status, 'active')
    assert.equal(started.direction, 'inbound')
    assert.equal(started.provider_ref, callId)
    assert.equal(await fake.endCall(callId!, { reason: 'user_hangup', durationMs: 30_000, transcript: TRANSCRIPT }), 204)
    assert.equal(await fake.analyzeCall(callId!, { call_summary: 'Ana confirmed.', custom_analysis_data: { disposition: 'interested' } }), 204)
    const done = await task(taskId)
    assert.equal(done.status, 'completed')
    assert.equal(done.outcome, 'reached')
    const finalized = (await events(taskId)).filter((event) => event.type === 'interaction.finalized').at(-1)
    assert.equal(finalized.data.interaction_id, interactionId)
    assert.equal(finalized.data.direction, 'inbound')
    assert.deepEqual(finalized.data.ids, [{ source: 'ats', type: 'candidate_id', value: 'C-17' }])
    assert.equal(finalized.data.result.summary, 'Ana confirmed.')
  })
})
