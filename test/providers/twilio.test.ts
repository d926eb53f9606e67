/**
 * The Twilio voice channel against a local fake of Twilio's REST API and
 * status callbacks: the Create/Fetch Call wire format, how refusals and
 * failures map, provider_config validation, callback signatures and reports.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, beforeEach, describe, test } from 'node:test'
import type { OutboundAttempt } from '../../src/channels/channel.ts'
import { checkProviderConfig } from '../../src/channels/providerConfig.ts'
import { readTwilioConfig } from '../../src/channels/twilio/config.ts'
import { reportFromStatusCallback, TwilioChannel, verifyTwilioSignature } from '../../src/channels/twilio/twilioChannel.ts'
import type { JsonObject } from '../../src/domain/types.ts'
import { type AnsweredBy, type FakeTwilio, type FinalCallStatus, startFakeTwilio } from '../fakes/twilio.ts'

const ACCOUNT = `AC${randomBytes(16).toString('hex')}`
const TOKEN = `token-${randomBytes(16).toString('hex')}`
const OTHER_ACCOUNT = `AC${randomBytes(16).toString('hex')}`
const OTHER_TOKEN = `other-${randomBytes(16).toString('hex')}`
const FROM = '+14155552671'
const TO = '+442079460958'
const ANSWER_URL = 'https://voice.example.com/twiml/outreach'
const CALL_SID = /^CA[0-9a-f]{32}$/

const env: Record<string, string> = { TWILIO_AUTH_TOKEN: TOKEN, TWILIO_OTHER_TOKEN: OTHER_TOKEN }
const secret = (name: string) => env[name]

function config(overrides: JsonObject = {}): JsonObject {
  return { account_sid: ACCOUNT, from: FROM, answer_url: ANSWER_URL, ...overrides }
}

function attempt(overrides: Partial<OutboundAttempt> = {}): OutboundAttempt {
  return {
    interactionId: 'int_01J0ABCDEF',
    taskId: 'task_1',
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

interface Callback {
  path: string
  headers: IncomingHttpHeaders
  params: Record<string, string>
}

/** Stands in for this service's callback route: records what Twilio posts and answers `status`. */
async function startReceiver(status: number) {
  const received: Callback[] = []
  const server = createServer(async (req, res) => {
    let body = ''
    for await (const chunk of req) body += chunk
    received.push({ path: req.url ?? '', headers: req.headers, params: Object.fromEntries(new URLSearchParams(body)) })
    res.writeHead(status).end()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

let fake: FakeTwilio
let receiver: Awaited<ReturnType<typeof startReceiver>>
let channel: TwilioChannel

before(async () => {
  fake = await startFakeTwilio({ accounts: { [ACCOUNT]: TOKEN, [OTHER_ACCOUNT]: OTHER_TOKEN } })
  receiver = await startReceiver(204)
  channel = new TwilioChannel({ apiBaseUrl: fake.url, publicBaseUrl: `${receiver.url}/`, secret, timeoutMs: 2_000 })
})

after(async () => {
  await fake.close()
  await receiver.close()
})

beforeEach(() => {
  fake.requests.length = 0
  receiver.received.length = 0
})

async function startedCall(overrides: Partial<OutboundAttempt> = {}): Promise<string> {
  const result = await channel.start(attempt(overrides))
  assert.equal(result.kind, 'started')
  return result.providerRef
}

describe('start', () => {
  test('creates the call with Twilio’s wire format', async () => {
    const result = await channel.start(attempt())

    assert.equal(result.kind, 'started')
    assert.match(result.providerRef, CALL_SID)
    assert.equal(fake.requests.length, 1)
    const [request] = fake.requests
    assert.ok(request)
    assert.equal(request.method, 'POST')
    assert.equal(request.path, `/2010-04-01/Accounts/${ACCOUNT}/Calls.json`)
    assert.equal(request.headers.authorization, `Basic ${Buffer.from(`${ACCOUNT}:${TOKEN}`).toString('base64')}`)
    assert.equal(request.headers['content-type'], 'application/x-www-form-urlencoded')
    assert.deepEqual(
      [...request.form],
      [
        ['To', TO],
        ['From', FROM],
        // The service answers the call itself, to hand it to the conversation with its context.
        ['Url', `${receiver.url}/providers/twilio/calls/int_01J0ABCDEF/answer`],
        ['Method', 'POST'],
        ['StatusCallback', `${receiver.url}/providers/twilio/calls/int_01J0ABCDEF/status`],
        ['StatusCallbackMethod', 'POST'],
        ['StatusCallbackEvent', 'initiated'],
        ['StatusCallbackEvent', 'ringing'],
        ['StatusCallbackEvent', 'answered'],
        ['StatusCallbackEvent', 'completed'],
        ['Timeout', '30'],
        ['TimeLimit', '14400'],
        ['MachineDetection', 'Enable'],
      ],
    )
    const call = fake.call(result.providerRef)
    assert.equal(call?.status, 'queued')
    assert.equal(call?.to, TO)
    assert.equal(call?.from, FROM)
  })

  test('follows the config: ring timeout, no machine detection, another account’s token', async () => {
    await startedCall({
      config: config({ account_sid: OTHER_ACCOUNT, auth_token_env: 'TWILIO_OTHER_TOKEN', machine_detection: false, ring_timeout_s: 45 }),
    })

    const [request] = fake.requests
    assert.ok(request)
    assert.equal(request.path, `/2010-04-01/Accounts/${OTHER_ACCOUNT}/Calls.json`)
    assert.equal(request.headers.authorization, `Basic ${Buffer.from(`${OTHER_ACCOUNT}:${OTHER_TOKEN}`).toString('base64')}`)
    assert.equal(request.form.get('Timeout'), '45')
    assert.equal(request.form.has('MachineDetection'), false)
  })

  test('an invalid To is refused for good, without the number in the reason', async () => {
    const result = await channel.start(attempt({ to: '+0123' }))

    assert.equal(result.kind, 'refused')
    assert.equal(result.permanent, true)
    assert.match(result.reason, /HTTP 400, error 21211/)
    assert.doesNotMatch(result.reason, /\+0123/)
  })

  test('wrong credentials (Twilio 20003) are refused for good, and the token is not told', async () => {
    env.TWILIO_WRONG_TOKEN = 'not-the-token'
    const result = await channel.start(attempt({ config: config({ auth_token_env: 'TWILIO_WRONG_TOKEN' }) }))

    assert.deepEqual(result, { kind: 'refused', permanent: true, reason: 'Twilio refused the call (HTTP 401, error 20003): Authenticate' })
  })

  const REFUSALS: [status: number, code: number, permanent: boolean][] = [
    [400, 21211, true],
    [400, 21214, true],
    [400, 21215, true],
    [400, 21210, true],
    [400, 21212, true],
    [400, 21216, true],
    [401, 20003, true],
    [404, 20404, true],
    [400, 31005, false],
  ]
  for (const [status, code, permanent] of REFUSALS) {
    test(`HTTP ${status} with error ${code} is refused ${permanent ? 'for good' : 'for now'}`, async () => {
      fake.failNext({ status, code, message: `Twilio says no (${code}) to ${TO}` })
      const result = await channel.start(attempt())

      assert.deepEqual(result, {
        kind: 'refused',
        permanent,
        reason: `Twilio refused the call (HTTP ${status}, error ${code}): Twilio says no (${code}) to [To]`,
      })
    })
  }

  const THROTTLED: [status: number, code: number][] = [
    [429, 20429],
    [400, 20429],
    [429, 20001],
  ]
  for (const [status, code] of THROTTLED) {
    test(`HTTP ${status} with error ${code} is Twilio's throttling: the start is deferred a few seconds, with jitter`, async () => {
      fake.failNext({ status, code, message: `Too Many Requests for ${TO}` })
      const result = await channel.start(attempt())

      assert.equal(result.kind, 'deferred')
      assert.ok(result.kind === 'deferred' && result.retryAfterMs >= 2_000 && result.retryAfterMs < 5_000, JSON.stringify(result))
      assert.equal(result.kind === 'deferred' && result.reason, `Twilio is throttling calls (HTTP ${status}, error ${code}): Too Many Requests for [To]`)
    })
  }

  test('a deferral honours Retry-After, in seconds or as a date', async () => {
    fake.failNext({ status: 429, code: 20429, message: 'Too Many Requests', retryAfter: '17' })
    assert.equal(((await channel.start(attempt())) as { retryAfterMs: number }).retryAfterMs, 17_000)
    const clocked = new TwilioChannel({ apiBaseUrl: fake.url, publicBaseUrl: receiver.url, secret, now: () => Date.parse('2026-06-01T10:00:00Z') })
    fake.failNext({ status: 429, code: 20429, message: 'Too Many Requests', retryAfter: 'Mon, 01 Jun 2026 10:00:42 GMT' })
    assert.equal(((await clocked.start(attempt())) as { retryAfterMs: number }).retryAfterMs, 42_000)
  })

  for (const status of [500, 503]) {
    test(`HTTP ${status} throws: the call may have been placed`, async () => {
      fake.failNext({ status, code: 20500, message: 'Internal Server Error' })
      await assert.rejects(channel.start(attempt()), /HTTP \d{3} to Create Call; the call may or may not have been placed/)
    })
  }

  test('a dropped connection throws', async () => {
    fake.dropNext()
    await assert.rejects(channel.start(attempt()), (error: Error) => {
      assert.match(error.message, /connection failed/)
      assert.ok(!error.message.includes(TOKEN))
      return true
    })
  })

  test('no answer within timeoutMs throws, though Twilio may have placed the call', async () => {
    const impatient = new TwilioChannel({ apiBaseUrl: fake.url, publicBaseUrl: receiver.url, secret, timeoutMs: 100 })
    fake.delayNext(1_000)
    await assert.rejects(impatient.start(attempt()), /no answer within 100 ms/)

    // The fake, like Twilio, went ahead: exactly why a timeout is not a refusal.
    const [request] = fake.requests
    assert.equal(request?.form.get('To'), TO)
  })

  test('a missing auth token is refused for good, naming the variable and not another token', async () => {
    const result = await channel.start(attempt({ config: config({ auth_token_env: 'TWILIO_UNSET_TOKEN' }) }))

    assert.deepEqual(result, {
      kind: 'refused',
      permanent: true,
      reason: 'no Twilio auth token: environment variable TWILIO_UNSET_TOKEN is not set',
    })
    assert.ok(!result.reason.includes(TOKEN) && !result.reason.includes(OTHER_TOKEN))
    assert.equal(fake.requests.length, 0)
  })

  test('an empty auth token counts as missing', async () => {
    env.TWILIO_EMPTY_TOKEN = ''
    const result = await channel.start(attempt({ config: config({ auth_token_env: 'TWILIO_EMPTY_TOKEN' }) }))

    assert.equal(result.kind, 'refused')
    assert.equal(result.permanent, true)
    assert.equal(fake.requests.length, 0)
  })
})

describe('provider_config', () => {
  const prefix = ['body', 'provider_config']
  const check = (input: unknown) => checkProviderConfig(channel.configSchema, input, prefix).errors
  const valueError = (key: string, input: unknown, message: string) => ({
    type: 'value_error',
    loc: [...prefix, key],
    msg: `Value error, ${message}`,
    input,
    ctx: { error: {} },
  })

  test('accepts the required keys alone, every key, and null for optional ones', () => {
    assert.deepEqual(check(config()), [])
    assert.deepEqual(
      check(
        config({ account_sid: `AC${'ABCDEF0123456789'.repeat(2)}`, auth_token_env: 'TWILIO_TOKEN_2', machine_detection: false, ring_timeout_s: 600 }),
      ),
      [],
    )
    assert.deepEqual(check(config({ ring_timeout_s: 5, machine_detection: null, auth_token_env: null })), [])
  })

  test('not an object', () => {
    assert.deepEqual(check(['x']), [
      { type: 'model_attributes_type', loc: prefix, msg: 'Input should be a valid dictionary or object to extract fields from', input: ['x'] },
    ])
  })

  test('missing keys, with the whole config as input; the handoff names what it needs', () => {
    const input = { machine_detection: true }
    assert.deepEqual(
      check(input),
      ['account_sid', 'from', 'answer_url'].map((key) => ({ type: 'missing', loc: [...prefix, key], msg: 'Field required', input })),
    )
    const streaming = { ...config(), answer_url: undefined, handoff: 'stream' }
    assert.deepEqual(check(streaming), [{ type: 'missing', loc: [...prefix, 'stream_url'], msg: 'Field required', input: streaming }])
    // A handoff refused on its own needs nothing more; an answer_url refused on its own is not reported again as absent.
    assert.deepEqual(
      check({ ...config(), answer_url: undefined, handoff: 'sip' }).map((error) => error.type),
      ['literal_error'],
    )
    assert.deepEqual(check(config({ answer_url: 'http://x.example' })).length, 1)
  })

  test('wrong types', () => {
    assert.deepEqual(check({ account_sid: 5, from: null, answer_url: ['x'], auth_token_env: 1, machine_detection: 'maybe', ring_timeout_s: '30 s' }), [
      { type: 'string_type', loc: [...prefix, 'account_sid'], msg: 'Input should be a valid string', input: 5 },
      { type: 'string_type', loc: [...prefix, 'from'], msg: 'Input should be a valid string', input: null },
      { type: 'string_type', loc: [...prefix, 'answer_url'], msg: 'Input should be a valid string', input: ['x'] },
      { type: 'string_type', loc: [...prefix, 'auth_token_env'], msg: 'Input should be a valid string', input: 1 },
      { type: 'bool_parsing', loc: [...prefix, 'machine_detection'], msg: 'Input should be a valid boolean, unable to interpret input', input: 'maybe' },
      { type: 'int_parsing', loc: [...prefix, 'ring_timeout_s'], msg: 'Input should be a valid integer, unable to parse string as an integer', input: '30 s' },
    ])
  })

  test('read as the API reads any body: "30" is 30, "false" is false, a null field is not sent; the campaign keeps the normalized value', () => {
    const sent = config({ ring_timeout_s: '30', machine_detection: 'false', auth_token_env: null })
    const checked = checkProviderConfig(channel.configSchema, sent, prefix)
    assert.deepEqual(checked.errors, [])
    assert.deepEqual(checked.value, config({ ring_timeout_s: 30, machine_detection: false }))
    const read = readTwilioConfig(sent)
    assert.deepEqual([read.ringTimeoutS, read.machineDetection, read.authTokenEnv], [30, false, 'TWILIO_AUTH_TOKEN'])
  })

  test('ring timeout bounds', () => {
    const loc = [...prefix, 'ring_timeout_s']
    assert.deepEqual(check(config({ ring_timeout_s: 4 })), [
      { type: 'greater_than_equal', loc, msg: 'Input should be greater than or equal to 5', input: 4, ctx: { ge: 5 } },
    ])
    assert.deepEqual(check(config({ ring_timeout_s: 601 })), [
      { type: 'less_than_equal', loc, msg: 'Input should be less than or equal to 600', input: 601, ctx: { le: 600 } },
    ])
    assert.deepEqual(check(config({ ring_timeout_s: 30.5 })), [
      { type: 'int_from_float', loc, msg: 'Input should be a valid integer, got a number with a fractional part', input: 30.5 },
    ])
  })

  for (const sid of ['AC123', `SK${'0'.repeat(32)}`, `AC${'g'.repeat(32)}`, `${ACCOUNT} `]) {
    test(`bad account_sid ${JSON.stringify(sid)}`, () => {
      assert.deepEqual(check(config({ account_sid: sid })), [
        valueError('account_sid', sid, 'account_sid must be "AC" followed by 32 hexadecimal digits'),
      ])
    })
  }

  for (const from of ['14155552671', '+1 415 555 2671', '+1415555', '+99912345678', 'client:alice']) {
    test(`bad from ${JSON.stringify(from)}`, () => {
      assert.deepEqual(check(config({ from })), [valueError('from', from, 'from must be a valid phone number in E.164 form, such as +14155552671')])
    })
  }

  for (const url of ['http://voice.example.com/twiml', 'voice.example.com/twiml', 'https://voice.example.com/a\nb', 'https://']) {
    test(`bad answer_url ${JSON.stringify(url)}`, () => {
      assert.deepEqual(check(config({ answer_url: url })), [valueError('answer_url', url, 'answer_url must be an https URL')])
    })
  }

  test('an answer_url longer than 2048 characters', () => {
    const url = `https://voice.example.com/${'a'.repeat(2030)}`
    assert.deepEqual(check(config({ answer_url: url })), [
      {
        type: 'string_too_long',
        loc: [...prefix, 'answer_url'],
        msg: 'String should have at most 2048 characters',
        input: url,
        ctx: { max_length: 2048 },
      },
    ])
  })

  for (const name of ['DATABASE_URL', 'twilio_token', 'TWILIO_', 'TWILIO-TOKEN']) {
    test(`auth_token_env ${JSON.stringify(name)} is not a TWILIO_* variable name`, () => {
      assert.deepEqual(check(config({ auth_token_env: name })), [
        valueError(
          'auth_token_env',
          name,
          'auth_token_env must be the name of an environment variable starting with TWILIO_ (uppercase letters, digits, underscores)',
        ),
      ])
    })
  }

  test('extra keys (a token among them) come after the field errors', () => {
    assert.deepEqual(check({ ...config({ from: 'x' }), auth_token: 'secret', region: 'ie1' }), [
      valueError('from', 'x', 'from must be a valid phone number in E.164 form, such as +14155552671'),
      { type: 'extra_forbidden', loc: [...prefix, 'auth_token'], msg: 'Extra inputs are not permitted', input: 'secret' },
      { type: 'extra_forbidden', loc: [...prefix, 'region'], msg: 'Extra inputs are not permitted', input: 'ie1' },
    ])
  })
})

describe('provider_config: voicemail', () => {
  const prefix = ['body', 'provider_config']
  const loc = (...path: string[]) => [...prefix, 'voicemail', ...path]
  const check = (voicemail: unknown, overrides: JsonObject = {}) => checkProviderConfig(channel.configSchema, config({ voicemail, ...overrides }), prefix).errors
  const valueError = (at: (string | number)[], input: unknown, message: string) => ({ type: 'value_error', loc: at, msg: `Value error, ${message}`, input, ctx: { error: {} } })

  test('accepted: hang_up alone, a text, texts by language, an audio URL, null', () => {
    assert.deepEqual(check({ policy: 'hang_up' }), [])
    assert.deepEqual(check({ policy: 'leave_message', message: { text: 'Hi {{first_name}}' } }), [])
    assert.deepEqual(check({ policy: 'leave_message', message: { text: { en: 'Hi', 'de-AT': 'Servus', '*': 'Hello' } } }), [])
    assert.deepEqual(check({ policy: 'leave_message', message: { audio_url: 'https://cdn.example.com/m.mp3' } }), [])
    assert.deepEqual(check(null), [])
  })

  test('leave_message needs a message, with a text or an audio_url, not both', () => {
    const input = { policy: 'leave_message' }
    assert.deepEqual(check(input), [{ type: 'missing', loc: loc('message'), msg: 'Field required', input }])
    assert.deepEqual(check({ policy: 'leave_message', message: {} }), [valueError(loc('message'), {}, 'leave_message needs a text to speak or an audio_url to play')])
    const both = { text: 'Hi', audio_url: 'https://cdn.example.com/m.mp3' }
    assert.deepEqual(check({ policy: 'leave_message', message: both }), [valueError(loc('message'), both, 'give the message as text or as audio_url, not both')])
  })

  test('field by field: policy, text bounds, languages, https only, extra keys', () => {
    const long = 'x'.repeat(1_001)
    assert.deepEqual(check({ policy: 'voicemail', message: { text: long, extra: 1 }, retry: true }), [
      { type: 'literal_error', loc: loc('policy'), msg: "Input should be 'hang_up' or 'leave_message'", input: 'voicemail', ctx: { expected: "'hang_up' or 'leave_message'" } },
      { type: 'string_too_long', loc: loc('message', 'text'), msg: 'String should have at most 1000 characters', input: long, ctx: { max_length: 1000 } },
      { type: 'extra_forbidden', loc: loc('message', 'extra'), msg: 'Extra inputs are not permitted', input: 1 },
      { type: 'extra_forbidden', loc: loc('retry'), msg: 'Extra inputs are not permitted', input: true },
    ])
    assert.deepEqual(check({ policy: 'leave_message', message: { text: { klingon_x: 'Hi', en: '  ', de: 5 } } }), [
      valueError(
        loc('message', 'text', 'klingon_x', '[key]'),
        'klingon_x',
        'each key of text must be a BCP 47 language tag, such as en or de-AT, or * for any other language',
      ),
      valueError(loc('message', 'text', 'en'), '  ', 'a message text must not be blank'),
      { type: 'string_type', loc: loc('message', 'text', 'de'), msg: 'Input should be a valid string', input: 5 },
    ])
    // A text, or texts by language: anything else is refused as each.
    assert.deepEqual(check({ policy: 'leave_message', message: { text: 5 } }), [
      { type: 'string_type', loc: loc('message', 'text', 'str'), msg: 'Input should be a valid string', input: 5 },
      { type: 'dict_type', loc: loc('message', 'text', 'dict[str,str]'), msg: 'Input should be a valid dictionary', input: 5 },
    ])
    assert.deepEqual(check({ policy: 'leave_message', message: { text: {} } }).map((error) => [error.loc.join('.'), error.type]), [
      ['body.provider_config.voicemail.message.text', 'too_short'],
    ])
    assert.deepEqual(check({ policy: 'leave_message', message: { audio_url: 'http://cdn.example.com/m.mp3' } }), [
      valueError(loc('message', 'audio_url'), 'http://cdn.example.com/m.mp3', 'audio_url must be an https URL'),
    ])
    assert.deepEqual(check('leave_message'), [
      { type: 'model_attributes_type', loc: loc(), msg: 'Input should be a valid dictionary or object to extract fields from', input: 'leave_message' },
    ])
  })

  test('leave_message with machine_detection off is refused: detection tells the greeting’s end', () => {
    assert.deepEqual(check({ policy: 'leave_message', message: { text: 'Hi' } }, { machine_detection: false }), [
      valueError(loc('policy'), 'leave_message', 'leave_message needs answering-machine detection: remove machine_detection: false'),
    ])
  })
})

describe('start: leave_message', () => {
  test('asks for asynchronous detection to the greeting’s end, with the AMD callback URL, instead of synchronous detection', async () => {
    await startedCall({ config: config({ voicemail: { policy: 'leave_message', message: { text: 'Hi' } } }) })
    const [request] = fake.requests
    assert.deepEqual(
      [...request!.form].slice(-5),
      [
        ['TimeLimit', '14400'],
        ['MachineDetection', 'DetectMessageEnd'],
        ['AsyncAmd', 'true'],
        ['AsyncAmdStatusCallback', `${receiver.url}/providers/twilio/calls/int_01J0ABCDEF/amd`],
        ['AsyncAmdStatusCallbackMethod', 'POST'],
      ],
    )
  })

  test('hang_up is today’s call, parameter for parameter', async () => {
    await startedCall({ config: config({ voicemail: { policy: 'hang_up' } }) })
    await startedCall()
    const [withPolicy, without] = fake.requests
    assert.deepEqual([...withPolicy!.form], [...without!.form])
  })
})

describe('status callbacks', () => {
  test('the Twilio helper libraries’ signature example verifies', () => {
    const params = { CallSid: 'CA1234567890ABCDE', Caller: '+14158675309', Digits: '1234', From: '+14158675309', To: '+18005551212' }
    const url = 'https://mycompany.com/myapp.php?foo=1&bar=2'
    assert.equal(verifyTwilioSignature('12345', url, params, 'RSOYDt4T1cUTdK1PDd93/VVr8B8='), true)
    assert.equal(verifyTwilioSignature('12345', url, { ...params, Digits: '1235' }, 'RSOYDt4T1cUTdK1PDd93/VVr8B8='), false)
  })

  test('a callback from Twilio verifies with the StatusCallback URL, and nothing else does', async () => {
    const callSid = await startedCall()
    assert.equal(await fake.progressCall(callSid, 'ringing'), 204)

    const [callback] = receiver.received
    assert.ok(callback)
    assert.equal(callback.path, '/providers/twilio/calls/int_01J0ABCDEF/status')
    assert.equal(callback.headers['content-type'], 'application/x-www-form-urlencoded')
    const signature = callback.headers['x-twilio-signature'] as string | undefined
    const url = channel.statusCallbackUrl('int_01J0ABCDEF')
    const { params } = callback
    assert.equal(params.CallSid, callSid)
    assert.equal(params.AccountSid, ACCOUNT)
    assert.equal(params.CallStatus, 'ringing')
    assert.equal(params.CallbackSource, 'call-progress-events')
    assert.equal(params.SequenceNumber, '0')

    assert.equal(channel.authTokenFor(config()), TOKEN)
    assert.equal(verifyTwilioSignature(TOKEN, url, params, signature), true)
    assert.equal(verifyTwilioSignature(TOKEN, url, { ...params, CallStatus: 'completed' }, signature), false, 'tampered param')
    assert.equal(verifyTwilioSignature(TOKEN, url, { ...params, AnsweredBy: 'human' }, signature), false, 'added param')
    assert.equal(verifyTwilioSignature(TOKEN, url.replace('127.0.0.1', 'localhost'), params, signature), false, 'another URL')
    assert.equal(verifyTwilioSignature(TOKEN, `${url}?x=1`, params, signature), false, 'another query')
    assert.equal(verifyTwilioSignature(OTHER_TOKEN, url, params, signature), false, 'wrong token')
    assert.equal(verifyTwilioSignature('', url, params, signature), false, 'empty token')
    assert.equal(verifyTwilioSignature(TOKEN, url, params, undefined), false, 'no header')
    assert.equal(verifyTwilioSignature(TOKEN, url, params, 'not base64 at all!'), false, 'garbage header')
    assert.equal(verifyTwilioSignature(TOKEN, url, params, ''), false, 'empty header')
  })

  test('a call’s callbacks report its progress, then its outcome and duration', async () => {
    const callSid = await startedCall()
    await fake.progressCall(callSid, 'ringing')
    await fake.progressCall(callSid, 'in-progress')
    assert.equal(await fake.finishCall(callSid, { status: 'completed', answeredBy: 'machine_start', duration: 42 }), 204)

    const now = Date.now()
    const reports = receiver.received.map((callback) => reportFromStatusCallback(callback.params, now))
    const url = channel.statusCallbackUrl('int_01J0ABCDEF')
    for (const { params, headers } of receiver.received) {
      assert.equal(verifyTwilioSignature(TOKEN, url, params, headers['x-twilio-signature'] as string), true)
    }
    const at = (index: number) => Date.parse(receiver.received[index]?.params.Timestamp ?? '')
    assert.deepEqual(reports, [
      { kind: 'progress', providerRef: callSid, status: 'ringing', at: at(0) },
      { kind: 'progress', providerRef: callSid, status: 'in-progress', at: at(1) },
      { kind: 'final', providerRef: callSid, outcome: 'voicemail', at: at(2), durationS: 42 },
    ])
    assert.ok(Math.abs(at(2) - now) < 5_000)
    assert.deepEqual(
      receiver.received.map((callback) => callback.params.SequenceNumber),
      ['0', '1', '2'],
    )
    assert.equal(receiver.received[2]?.params.AnsweredBy, 'machine_start')
  })

  test('without machine detection, a completed callback carries no AnsweredBy', async () => {
    const callSid = await startedCall({ config: config({ machine_detection: false }) })
    await fake.finishCall(callSid, { status: 'completed', duration: 7 })

    const [callback] = receiver.received
    assert.equal(callback?.params.AnsweredBy, undefined)
    assert.deepEqual(reportFromStatusCallback(callback?.params ?? {}, 0), {
      kind: 'final',
      providerRef: callSid,
      outcome: 'completed',
      at: Date.parse(callback?.params.Timestamp ?? ''),
      durationS: 7,
    })
  })

  test('the service’s answer to the callback is what the fake returns', async () => {
    const refusing = await startReceiver(403)
    const strict = new TwilioChannel({ apiBaseUrl: fake.url, publicBaseUrl: refusing.url, secret })
    try {
      const result = await strict.start(attempt())
      assert.equal(result.kind, 'started')
      assert.equal(await fake.finishCall(result.providerRef, { status: 'busy' }), 403)
    } finally {
      await refusing.close()
    }
  })

  const SID = `CA${'a'.repeat(32)}`
  const TIMESTAMP = 'Tue, 14 May 2024 10:30:00 +0000'
  const AT = Date.UTC(2024, 4, 14, 10, 30)

  const PROGRESS = ['queued', 'initiated', 'ringing', 'in-progress']
  for (const status of PROGRESS) {
    test(`CallStatus ${status} is progress`, () => {
      assert.deepEqual(reportFromStatusCallback({ CallSid: SID, CallStatus: status, Timestamp: TIMESTAMP }, 0), {
        kind: 'progress',
        providerRef: SID,
        status,
        at: AT,
      })
    })
  }

  const FINAL: [status: string, answeredBy: AnsweredBy | undefined, outcome: string][] = [
    ['completed', undefined, 'completed'],
    ['completed', 'human', 'completed'],
    ['completed', 'unknown', 'completed'],
    ['completed', 'machine_start', 'voicemail'],
    ['completed', 'machine_end_beep', 'voicemail'],
    ['completed', 'machine_end_silence', 'voicemail'],
    ['completed', 'machine_end_other', 'voicemail'],
    ['completed', 'fax', 'failed'],
    ['busy', undefined, 'busy'],
    ['no-answer', undefined, 'no_answer'],
    ['failed', undefined, 'failed'],
    ['canceled', undefined, 'failed'],
  ]
  for (const [status, answeredBy, outcome] of FINAL) {
    test(`CallStatus ${status}${answeredBy ? ` answered by ${answeredBy}` : ''} is final: ${outcome}`, () => {
      const params: Record<string, string> = { CallSid: SID, CallStatus: status, CallDuration: '17', Timestamp: TIMESTAMP }
      if (answeredBy !== undefined) params.AnsweredBy = answeredBy
      assert.deepEqual(reportFromStatusCallback(params, 0), { kind: 'final', providerRef: SID, outcome, at: AT, durationS: 17 })
    })
  }

  test('an unreadable Timestamp or CallDuration falls back to now and no duration', () => {
    const unreadable: Record<string, string>[] = [{}, { Timestamp: 'yesterday', CallDuration: '' }, { CallDuration: '-3' }, { CallDuration: '1.5' }]
    for (const extra of unreadable) {
      assert.deepEqual(reportFromStatusCallback({ CallSid: SID, CallStatus: 'busy', ...extra }, 1234), {
        kind: 'final',
        providerRef: SID,
        outcome: 'busy',
        at: 1234,
      })
    }
  })

  test('no CallSid, no CallStatus or an undocumented status reports nothing', () => {
    assert.equal(reportFromStatusCallback({ CallStatus: 'completed' }, 0), undefined)
    assert.equal(reportFromStatusCallback({ CallSid: '', CallStatus: 'completed' }, 0), undefined)
    assert.equal(reportFromStatusCallback({ CallSid: SID }, 0), undefined)
    assert.equal(reportFromStatusCallback({ CallSid: SID, CallStatus: 'answered' }, 0), undefined)
  })
})

describe('settle', () => {
  const progress = (providerRef: string | null, overrides: JsonObject = {}) => ({
    providerRef,
    providerStatus: 'ringing',
    attempt: 1,
    config: config(overrides),
    startedAt: 0,
    to: '+15555550100',
  })

  const ENDINGS: [result: { status: FinalCallStatus; answeredBy?: AnsweredBy; duration?: number }, outcome: string][] = [
    [{ status: 'completed', answeredBy: 'human', duration: 30 }, 'completed'],
    [{ status: 'completed', answeredBy: 'machine_end_beep', duration: 20 }, 'voicemail'],
    [{ status: 'busy' }, 'busy'],
    [{ status: 'no-answer' }, 'no_answer'],
    [{ status: 'canceled' }, 'failed'],
  ]
  for (const [result, outcome] of ENDINGS) {
    const ended = `${result.status}${result.answeredBy ? ` (${result.answeredBy})` : ''}`
    test(`a call that ended ${ended} settles as ${outcome}, read with Fetch a Call`, async () => {
      const callSid = await startedCall()
      await fake.finishCall(callSid, result)
      fake.requests.length = 0

      assert.deepEqual(await channel.settle(progress(callSid)), { outcome })
      const [request] = fake.requests
      assert.equal(request?.method, 'GET')
      assert.equal(request?.path, `/2010-04-01/Accounts/${ACCOUNT}/Calls/${callSid}.json`)
      assert.equal(request?.headers.authorization, `Basic ${Buffer.from(`${ACCOUNT}:${TOKEN}`).toString('base64')}`)
    })
  }

  test('a call whose message was left (its provider status says so) settles voicemail_left; without it, voicemail', async () => {
    const leaveMessage = { voicemail: { policy: 'leave_message', message: { text: 'Hi' } } }
    const callSid = await startedCall({ config: config(leaveMessage) })
    await fake.answerCall(callSid)
    assert.equal(await fake.detectMachine(callSid, 'machine_end_beep'), 204)
    await fake.finishCall(callSid, { status: 'completed', duration: 20 })
    assert.equal(fake.call(callSid)?.answered_by, 'machine_end_beep')

    assert.deepEqual(await channel.settle({ ...progress(callSid, leaveMessage), providerStatus: 'message_left' }), { outcome: 'voicemail_left' })
    assert.deepEqual(await channel.settle({ ...progress(callSid, leaveMessage), providerStatus: 'in-progress' }), { outcome: 'voicemail' })
  })

  test('a call still ringing or in progress at settle time has failed', async () => {
    const ringing = await startedCall()
    await fake.progressCall(ringing, 'ringing')
    const talking = await startedCall()
    await fake.progressCall(talking, 'in-progress')
    const queued = await startedCall()

    assert.deepEqual(await channel.settle(progress(ringing)), { outcome: 'failed' })
    assert.deepEqual(await channel.settle(progress(talking)), { outcome: 'failed' })
    assert.deepEqual(await channel.settle(progress(queued)), { outcome: 'failed' })
  })

  test('an uncertain start (no call SID) has failed, without asking Twilio', async () => {
    assert.deepEqual(await channel.settle(progress(null)), { outcome: 'failed' })
    assert.equal(fake.requests.length, 0)
  })

  test('a call Twilio does not know is failed', async () => {
    assert.deepEqual(await channel.settle(progress(`CA${'0'.repeat(32)}`)), { outcome: 'failed' })
    const callSid = await startedCall()
    assert.deepEqual(await channel.settle(progress(callSid, { auth_token_env: 'TWILIO_UNSET_TOKEN' })), { outcome: 'failed' })
  })

  test('no answer, a 5xx or a 429 says nothing of the call: settle throws, to be asked again later', async () => {
    const callSid = await startedCall()
    await fake.finishCall(callSid, { status: 'completed', duration: 3 })
    fake.failNext({ status: 500, code: 20500, message: 'Internal Server Error' })
    await assert.rejects(channel.settle(progress(callSid)))
    fake.failNext({ status: 429, code: 20429, message: 'Too Many Requests' })
    await assert.rejects(channel.settle(progress(callSid)))
    fake.dropNext()
    await assert.rejects(channel.settle(progress(callSid)))
    assert.deepEqual(await channel.settle(progress(callSid)), { outcome: 'completed' })

    const gone = await startFakeTwilio({ accounts: { [ACCOUNT]: TOKEN } })
    await gone.close()
    const cutOff = new TwilioChannel({ apiBaseUrl: gone.url, publicBaseUrl: receiver.url, secret, timeoutMs: 500 })
    await assert.rejects(cutOff.settle(progress(`CA${'1'.repeat(32)}`)))
  })

  test('settles after the ring timeout, the 4 hour call limit and a 15 minute margin', () => {
    assert.equal(channel.settleAfterMs(config()), (30 + 4 * 3600 + 15 * 60) * 1000)
    assert.equal(channel.settleAfterMs(config({ ring_timeout_s: 120 })), (120 + 4 * 3600 + 15 * 60) * 1000)
  })
})
