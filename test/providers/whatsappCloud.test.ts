/**
 * The WhatsApp Cloud API adapter against a local fake of the Graph API: the
 * template message it sends, how it reads Meta's refusals, what it does when
 * the outcome is unknown, and the webhook helpers on the fake's signed
 * notifications and verification handshake.
 */
import assert from 'node:assert/strict'
import { type IncomingHttpHeaders, type Server, createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, beforeEach, describe, test } from 'node:test'
import type { InteractionProgress, OutboundAttempt } from '../../src/channels/channel.ts'
import { checkProviderConfig } from '../../src/channels/providerConfig.ts'
import {
  WhatsAppCloudChannel,
  notificationsFromWebhook,
  readWhatsAppCloudConfig,
  templateLanguageOf,
  verifyWebhookSubscription,
  verifyWhatsAppSignature,
} from '../../src/channels/whatsappCloud/whatsappCloudChannel.ts'
import type { JsonObject } from '../../src/domain/types.ts'
import { type FakeWhatsAppCloud, startFakeWhatsAppCloud } from '../fakes/whatsappCloud.ts'

const TOKEN = 'EAAGtestTOKEN0123456789abcdef'
const APP_SECRET = 'app-secret-0123456789abcdef'
const VERIFY_TOKEN = 'verify-me-please'
const PHONE_NUMBER_ID = '106540352242922'
const ENV: Record<string, string> = { WHATSAPP_ACCESS_TOKEN: TOKEN, WHATSAPP_OTHER_TOKEN: TOKEN }

let fake: FakeWhatsAppCloud
let channel: WhatsAppCloudChannel
let receiver: Receiver

before(async () => {
  fake = await startFakeWhatsAppCloud({
    accessToken: TOKEN,
    appSecret: APP_SECRET,
    phoneNumberIds: [PHONE_NUMBER_ID],
    templates: {
      appointment_reminder: { languages: ['en', 'en_US', 'de', 'pt_BR'], bodyParameters: 2 },
      hello_world: { languages: ['en', 'en_US'], bodyParameters: 0 },
      four_values: { languages: ['en'], bodyParameters: 4 },
    },
  })
  channel = new WhatsAppCloudChannel({ apiBaseUrl: fake.url, secret: (name) => ENV[name] })
  receiver = await startReceiver()
  fake.setWebhookUrl(receiver.url)
})

after(async () => {
  await fake.close()
  await receiver.close()
})

const REMINDER: JsonObject = {
  phone_number_id: PHONE_NUMBER_ID,
  template: { name: 'appointment_reminder', body_parameters: ['first_name', 'slot'] },
}

function attempt(overrides: Partial<OutboundAttempt> = {}): OutboundAttempt {
  return {
    interactionId: 'int_1',
    taskId: 'task_1',
    attempt: 1,
    to: '+4915123456789',
    testMode: false,
    context: { first_name: 'Ada', slot: 'Tuesday 10:00' },
    language: undefined,
    firstName: undefined,
    lastName: undefined,
    ids: [],
    config: REMINDER,
    ...overrides,
  }
}

/** Starts `attempt` and returns the request the fake received for it. */
async function startAndCapture(input: OutboundAttempt) {
  const before = fake.requests.length
  const result = await channel.start(input)
  assert.equal(fake.requests.length, before + 1, 'one request per start')
  return { result, request: fake.requests.at(-1)! }
}

describe('start: the template message on the wire', () => {
  test('POST /v21.0/{phone-number-id}/messages with the Bearer token and the template filled from the context', async () => {
    const { result, request } = await startAndCapture(attempt({ language: 'en-US' }))
    assert.equal(request.method, 'POST')
    assert.equal(request.path, `/v21.0/${PHONE_NUMBER_ID}/messages`)
    assert.equal(request.headers.authorization, `Bearer ${TOKEN}`)
    assert.equal(request.headers['content-type'], 'application/json')
    assert.deepEqual(request.body, {
      messaging_product: 'whatsapp',
      recipient_type: 'individual',
      to: '4915123456789',
      type: 'template',
      template: {
        name: 'appointment_reminder',
        language: { code: 'en_US' },
        components: [
          {
            type: 'body',
            parameters: [
              { type: 'text', text: 'Ada' },
              { type: 'text', text: 'Tuesday 10:00' },
            ],
          },
        ],
      },
    })
    const sent = fake.sent.at(-1)!
    assert.match(sent.wamid, /^wamid\.[A-Za-z0-9+/=]+$/)
    assert.deepEqual(result, { kind: 'started', providerRef: sent.wamid })
  })

  test('the configured language wins over the contact language; neither gives en', async () => {
    const configured = { ...REMINDER, template: { ...(REMINDER.template as JsonObject), language: 'de' } }
    const { request: withConfig } = await startAndCapture(attempt({ config: configured, language: 'pt-BR' }))
    assert.deepEqual((withConfig.body as any).template.language, { code: 'de' })
    const { request: withContact } = await startAndCapture(attempt({ language: 'pt-BR' }))
    assert.deepEqual((withContact.body as any).template.language, { code: 'pt_BR' })
    const { result, request: withNeither } = await startAndCapture(attempt({ language: undefined }))
    assert.deepEqual((withNeither.body as any).template.language, { code: 'en' })
    assert.equal(result.kind, 'started')
  })

  test("a contact's BCP 47 tag becomes Meta's code: regional only where Meta has the region", () => {
    const cases: [string | undefined, string][] = [
      [undefined, 'en'],
      ['en', 'en'],
      ['en-US', 'en_US'],
      ['en-GB', 'en_GB'],
      ['en-IN', 'en'],
      ['de-AT', 'de'],
      ['pt-BR', 'pt_BR'],
      ['zh-Hant-TW', 'zh_TW'],
      ['sr-Latn', 'sr'],
      ['fil', 'fil'],
    ]
    for (const [tag, code] of cases) assert.equal(templateLanguageOf(tag), code, String(tag))
  })

  test('no body parameters: no components', async () => {
    const config = { phone_number_id: PHONE_NUMBER_ID, template: { name: 'hello_world', language: 'en_US' } }
    const { result, request } = await startAndCapture(attempt({ config }))
    assert.deepEqual((request.body as any).template, { name: 'hello_world', language: { code: 'en_US' } })
    assert.equal(result.kind, 'started')
  })

  test('numbers and booleans as plain text, other JSON as JSON text, lines flattened as Meta requires', async () => {
    const config = { phone_number_id: PHONE_NUMBER_ID, template: { name: 'four_values', body_parameters: ['count', 'ok', 'detail', 'address'] } }
    const context = { count: 3.5, ok: true, detail: { items: [1, 'x'] }, address: 'Main St 1\r\n\tBerlin      10115' }
    const { result, request } = await startAndCapture(attempt({ config, context }))
    assert.equal(result.kind, 'started')
    const texts = (request.body as any).template.components[0].parameters.map((parameter: { text: string }) => parameter.text)
    assert.deepEqual(texts, ['3.5', 'true', '{"items":[1,"x"]}', 'Main St 1 Berlin    10115'])
  })
})

describe('start: refusals', () => {
  const CASES: [httpStatus: number, code: number, message: string, permanent: boolean][] = [
    [401, 190, 'Error validating access token: Session has expired', true],
    [400, 100, '(#100) Invalid parameter', true],
    [404, 132001, '(#132001) Template name does not exist in the translation', true],
    [400, 132000, '(#132000) Number of parameters does not match the expected number of params', true],
    [400, 131026, '(#131026) Message undeliverable', true],
    [400, 131051, '(#131051) Unsupported message type', true],
    [403, 10, '(#10) Application does not have permission for this action', true],
    [403, 200, '(#200) Permissions error', true],
    [400, 4, '(#4) Application request limit reached', false],
    [400, 80007, '(#80007) Rate limit issues', false],
    [400, 131048, '(#131048) Spam rate limit hit', false],
    [400, 131000, '(#131000) Something went wrong', false],
    [400, 424242, 'A code no table lists yet', false],
  ]
  for (const [httpStatus, code, message, permanent] of CASES) {
    test(`HTTP ${httpStatus} code ${code} → refused, ${permanent ? 'permanent' : 'may retry'}`, async () => {
      fake.failNext({ httpStatus, code, message })
      const result = await channel.start(attempt())
      assert.equal(result.kind, 'refused')
      assert.equal(result.kind === 'refused' && result.permanent, permanent)
      assert.ok(result.kind === 'refused' && result.reason.includes(`code ${code}`) && result.reason.includes(message))
      // Only 131026 says the number is not on WhatsApp: a campaign's fallback step for it goes on at once.
      assert.equal(result.kind === 'refused' && result.notOnChannel === true, code === 131026)
    })
  }

  for (const [code, message] of [
    [130429, '(#130429) Rate limit hit'],
    [131056, '(#131056) (Business Account, Consumer Account) pair rate limit hit'],
  ] as const) {
    test(`HTTP 400 code ${code} → deferred a few seconds, with jitter: throttling, no attempt spent`, async () => {
      fake.failNext({ httpStatus: 400, code, message })
      const result = await channel.start(attempt())
      assert.equal(result.kind, 'deferred')
      assert.ok(result.kind === 'deferred' && result.retryAfterMs >= 2_000 && result.retryAfterMs < 5_000, JSON.stringify(result))
      assert.ok(result.kind === 'deferred' && result.reason.includes(`code ${code}`) && result.reason.includes(message))
    })
  }

  test("the fake's own refusals: unknown template, wrong parameter count, unknown number, wrong token", async () => {
    const unknownTemplate = await channel.start(attempt({ config: { phone_number_id: PHONE_NUMBER_ID, template: { name: 'nope' } } }))
    assert.equal(unknownTemplate.kind === 'refused' && unknownTemplate.permanent, true)
    assert.match((unknownTemplate as { reason: string }).reason, /HTTP 404, code 132001.*template name \(nope\) does not exist in en/)

    const tooFew = await channel.start(attempt({ config: { phone_number_id: PHONE_NUMBER_ID, template: { name: 'appointment_reminder', body_parameters: ['first_name'] } } }))
    assert.match((tooFew as { reason: string }).reason, /code 132000.*localizable_params \(1\).*expected number of params \(2\)/)
    assert.equal(tooFew.kind === 'refused' && tooFew.permanent, true)

    const unknownNumber = await channel.start(attempt({ config: { ...REMINDER, phone_number_id: '999' } }))
    assert.match((unknownNumber as { reason: string }).reason, /HTTP 400, code 100, subcode 33: Unsupported post request/)
    assert.equal(unknownNumber.kind === 'refused' && unknownNumber.permanent, true)

    const wrongToken = new WhatsAppCloudChannel({ apiBaseUrl: fake.url, secret: () => 'EAAGwrongTOKEN' })
    const unauthorized = await wrongToken.start(attempt())
    assert.equal(unauthorized.kind === 'refused' && unauthorized.permanent, true)
    assert.match((unauthorized as { reason: string }).reason, /HTTP 401, code 190/)
    assert.ok(!(unauthorized as { reason: string }).reason.includes('EAAGwrongTOKEN'))
  })

  test('a token Meta echoes back is redacted from the reason', async () => {
    fake.failNext({ httpStatus: 401, code: 190, message: `Malformed access token ${TOKEN}` })
    const result = await channel.start(attempt())
    assert.equal(result.kind, 'refused')
    assert.ok(result.kind === 'refused' && !result.reason.includes(TOKEN) && result.reason.includes('[redacted]'))
  })

  test('a missing access token env var: refused permanent, naming the variable, before any request', async () => {
    const before = fake.requests.length
    const result = await channel.start(attempt({ config: { ...REMINDER, access_token_env: 'WHATSAPP_UNSET_TOKEN' } }))
    assert.equal(fake.requests.length, before)
    assert.equal(result.kind === 'refused' && result.permanent, true)
    assert.match((result as { reason: string }).reason, /WHATSAPP_UNSET_TOKEN/)
    assert.ok(!(result as { reason: string }).reason.includes(TOKEN))
  })

  test('the token comes from the env var the config names', async () => {
    const { request } = await startAndCapture(attempt({ config: { ...REMINDER, access_token_env: 'WHATSAPP_OTHER_TOKEN' } }))
    assert.equal(request.headers.authorization, `Bearer ${TOKEN}`)
  })

  test('a body parameter whose context key is missing, null or blank: refused permanent, before any request', async () => {
    const before = fake.requests.length
    for (const context of [{ first_name: 'Ada' }, { first_name: 'Ada', slot: null }, { first_name: 'Ada', slot: ' \n ' }]) {
      const result = await channel.start(attempt({ context }))
      assert.equal(result.kind === 'refused' && result.permanent, true)
      assert.match((result as { reason: string }).reason, /\{\{2\}\}.*"slot"/)
    }
    assert.equal(fake.requests.length, before)
  })
})

describe('start: unknown outcomes throw', () => {
  test('HTTP 500 with a Graph error throws', async () => {
    fake.failNext({ httpStatus: 500, code: 131000, message: '(#131000) Something went wrong' })
    await assert.rejects(channel.start(attempt()), /HTTP 500, so whether the message was sent is unknown.*131000/)
  })

  test('HTTP 503 throws', async () => {
    fake.failNext({ httpStatus: 503, code: 2, message: 'Service temporarily unavailable' })
    await assert.rejects(channel.start(attempt()), /HTTP 503/)
  })

  test('a dropped connection throws (the fake did send the message)', async () => {
    const sentBefore = fake.sent.length
    fake.dropNext()
    await assert.rejects(channel.start(attempt()), /got no answer, so whether the message was sent is unknown/)
    assert.equal(fake.sent.length, sentBefore + 1)
  })

  test('a timeout throws', async () => {
    const impatient = new WhatsAppCloudChannel({ apiBaseUrl: fake.url, secret: (name) => ENV[name], timeoutMs: 50 })
    fake.delayNext(2_000)
    const started = Date.now()
    await assert.rejects(impatient.start(attempt()), /got no answer, so whether the message was sent is unknown: no answer within 50 ms/)
    assert.ok(Date.now() - started < 1_000)
  })

  test('a refused connection throws', async () => {
    const closed = createServer()
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
    const { port } = closed.address() as AddressInfo
    await new Promise((resolve) => closed.close(resolve))
    const nowhere = new WhatsAppCloudChannel({ apiBaseUrl: `http://127.0.0.1:${port}`, secret: (name) => ENV[name] })
    await assert.rejects(nowhere.start(attempt()), /got no answer.*ECONNREFUSED/)
  })
})

describe('provider_config', () => {
  const check = (config: unknown) => checkProviderConfig(channel.configSchema, config, ['body', 'provider_config']).errors
  const loc = (...path: (string | number)[]) => ['body', 'provider_config', ...path]
  const valueError = (path: (string | number)[], input: unknown, message: string) => ({
    type: 'value_error',
    loc: loc(...path),
    msg: `Value error, ${message}`,
    input,
    ctx: { error: {} },
  })

  test('valid configs', () => {
    assert.deepEqual(check(REMINDER), [])
    assert.deepEqual(check({ phone_number_id: '1', template: { name: 'hello_world' } }), [])
    assert.deepEqual(
      check({
        phone_number_id: PHONE_NUMBER_ID,
        template: { name: 'appointment_reminder', language: 'pt_BR', body_parameters: ['a', 'b'] },
        access_token_env: 'WHATSAPP_ACME_TOKEN',
        app_secret_env: 'WHATSAPP_ACME_SECRET',
        reply_window_s: 3600,
      }),
      [],
    )
    assert.deepEqual(check({ phone_number_id: '1', template: { name: 'x', language: null, body_parameters: null }, reply_window_s: null }), [])
  })

  test('not an object', () => {
    for (const input of [[], 'x', 3, true]) {
      assert.deepEqual(check(input), [
        { type: 'model_attributes_type', loc: loc(), msg: 'Input should be a valid dictionary or object to extract fields from', input },
      ])
    }
    // null is answered as an absent value; a campaign never passes one (a provider_config sent as null is as though not sent: {}).
    assert.deepEqual(check(null), [{ type: 'missing', loc: loc(), msg: 'Field required', input: null }])
  })

  test('missing fields name the containing object as input', () => {
    assert.deepEqual(check({}), [
      { type: 'missing', loc: loc('phone_number_id'), msg: 'Field required', input: {} },
      { type: 'missing', loc: loc('template'), msg: 'Field required', input: {} },
    ])
    const template = { language: 'en' }
    assert.deepEqual(check({ phone_number_id: '1', template }), [{ type: 'missing', loc: loc('template', 'name'), msg: 'Field required', input: template }])
  })

  test('types, then meanings, then extra keys last', () => {
    assert.deepEqual(
      check({
        unknown: 1,
        phone_number_id: 106540352242922,
        template: { name: 'Hello World', language: 'en-US', body_parameters: ['a', 7, ''], header: 'x' },
        access_token_env: 'not-a-name',
        app_secret_env: false,
        reply_window_s: 'sixty',
      }),
      [
        { type: 'string_type', loc: loc('phone_number_id'), msg: 'Input should be a valid string', input: 106540352242922 },
        valueError(['template', 'name'], 'Hello World', 'name must be an approved template name: lowercase letters, digits and underscores, at most 512'),
        valueError(['template', 'language'], 'en-US', 'language must be a WhatsApp template language code such as en, en_US or pt_BR'),
        { type: 'string_type', loc: loc('template', 'body_parameters', 1), msg: 'Input should be a valid string', input: 7 },
        valueError(['template', 'body_parameters', 2], '', 'a body parameter must name a context key'),
        { type: 'extra_forbidden', loc: loc('template', 'header'), msg: 'Extra inputs are not permitted', input: 'x' },
        valueError(['access_token_env'], 'not-a-name', 'access_token_env must name an environment variable WHATSAPP_<NAME> (capital letters, digits, underscores)'),
        { type: 'string_type', loc: loc('app_secret_env'), msg: 'Input should be a valid string', input: false },
        { type: 'int_parsing', loc: loc('reply_window_s'), msg: 'Input should be a valid integer, unable to parse string as an integer', input: 'sixty' },
        { type: 'extra_forbidden', loc: loc('unknown'), msg: 'Extra inputs are not permitted', input: 1 },
      ],
    )
  })

  test('phone_number_id digits, template and body_parameters shapes', () => {
    assert.deepEqual(check({ phone_number_id: '+1 555', template: 'hello_world' }), [
      valueError(['phone_number_id'], '+1 555', 'phone_number_id must be the digits of a WhatsApp Business phone number ID'),
      { type: 'model_attributes_type', loc: loc('template'), msg: 'Input should be a valid dictionary or object to extract fields from', input: 'hello_world' },
    ])
    assert.deepEqual(check({ phone_number_id: '1', template: { name: 'x', body_parameters: 'first_name' } }), [
      { type: 'list_type', loc: loc('template', 'body_parameters'), msg: 'Input should be a valid list', input: 'first_name' },
    ])
  })

  test('reply_window_s bounds', () => {
    const windowErrors = (reply_window_s: unknown) => check({ ...REMINDER, reply_window_s })
    assert.deepEqual(windowErrors(60), [])
    assert.deepEqual(windowErrors(604800), [])
    assert.deepEqual(windowErrors(59), [
      { type: 'greater_than_equal', loc: loc('reply_window_s'), msg: 'Input should be greater than or equal to 60', input: 59, ctx: { ge: 60 } },
    ])
    assert.deepEqual(windowErrors(604801), [
      { type: 'less_than_equal', loc: loc('reply_window_s'), msg: 'Input should be less than or equal to 604800', input: 604801, ctx: { le: 604800 } },
    ])
    assert.deepEqual(windowErrors(60.5), [
      { type: 'int_from_float', loc: loc('reply_window_s'), msg: 'Input should be a valid integer, got a number with a fractional part', input: 60.5 },
    ])
    assert.deepEqual(windowErrors([60]), [{ type: 'int_type', loc: loc('reply_window_s'), msg: 'Input should be a valid integer', input: [60] }])
    // pydantic's lax integer reads true as 1, which is then below the bound.
    assert.deepEqual(windowErrors(true), [
      { type: 'greater_than_equal', loc: loc('reply_window_s'), msg: 'Input should be greater than or equal to 60', input: true, ctx: { ge: 60 } },
    ])
  })

  test('an integer sent as text is accepted, as everywhere in the API, and kept and read as the integer', () => {
    const sent = { ...REMINDER, reply_window_s: '3600' }
    const checked = checkProviderConfig(channel.configSchema, sent, ['body', 'provider_config'])
    assert.deepEqual(checked.errors, [])
    assert.equal(checked.value?.reply_window_s, 3600)
    assert.equal(readWhatsAppCloudConfig(sent).replyWindowS, 3600)
    assert.equal(channel.settleAfterMs(sent), 3_600_000)
  })

  test('settleAfterMs is the reply window', () => {
    assert.equal(channel.settleAfterMs(REMINDER), 86_400_000)
    assert.equal(channel.settleAfterMs({ ...REMINDER, reply_window_s: 3600 }), 3_600_000)
  })
})

describe('webhook signature', () => {
  beforeEach(() => receiver.reset())

  test("the fake's notification verifies, as raw bytes or text, and only as sent", async () => {
    const wamid = await sentWamid()
    assert.equal(await fake.sendReply({ from: '4915123456789', text: 'Grüße / bis dann', replyTo: wamid }), 200)
    const { rawBody, headers } = receiver.last()
    const header = headers['x-hub-signature-256'] as string
    assert.match(header, /^sha256=[0-9a-f]{64}$/)
    assert.equal(verifyWhatsAppSignature(APP_SECRET, rawBody, header), true)
    assert.equal(verifyWhatsAppSignature(APP_SECRET, rawBody.toString('utf8'), header), true)
    assert.equal(verifyWhatsAppSignature(APP_SECRET, rawBody, header.toUpperCase().replace('SHA256=', 'sha256=')), true)

    // Meta escapes non-ASCII and '/', so the parsed and re-serialized body is other bytes.
    const reserialized = JSON.stringify(JSON.parse(rawBody.toString('utf8')))
    assert.notEqual(reserialized, rawBody.toString('utf8'))
    assert.equal(verifyWhatsAppSignature(APP_SECRET, reserialized, header), false)

    const tampered = Buffer.from(rawBody.toString('utf8').replace('bis dann', 'bis bald'))
    assert.equal(verifyWhatsAppSignature(APP_SECRET, tampered, header), false)
    assert.equal(verifyWhatsAppSignature('another-secret', rawBody, header), false)
    assert.equal(verifyWhatsAppSignature('', rawBody, header), false)
    for (const malformed of [undefined, '', header.slice('sha256='.length), `sha1=${header.slice(7, 47)}`, `${header}00`, `sha256=${'z'.repeat(64)}`]) {
      assert.equal(verifyWhatsAppSignature(APP_SECRET, rawBody, malformed), false, String(malformed))
    }
  })
})

describe('webhook subscription handshake', () => {
  test("Meta's GET with the right token gets its challenge back; a wrong token gets 403", async () => {
    const right = await fake.verifySubscription(receiver.url, VERIFY_TOKEN)
    assert.deepEqual({ status: right.status, body: right.body }, { status: 200, body: right.challenge })
    assert.match(right.challenge, /^[0-9]+$/)
    const wrong = await fake.verifySubscription(receiver.url, 'guess')
    assert.equal(wrong.status, 403)
    assert.notEqual(wrong.body, wrong.challenge)
  })

  test('mode, token and challenge are all needed; no configured token refuses everything', () => {
    const query = { 'hub.mode': 'subscribe', 'hub.verify_token': VERIFY_TOKEN, 'hub.challenge': '1158201444' }
    assert.equal(verifyWebhookSubscription(query, VERIFY_TOKEN), '1158201444')
    assert.equal(verifyWebhookSubscription({ ...query, 'hub.mode': 'unsubscribe' }, VERIFY_TOKEN), undefined)
    assert.equal(verifyWebhookSubscription({ ...query, 'hub.mode': undefined }, VERIFY_TOKEN), undefined)
    assert.equal(verifyWebhookSubscription({ ...query, 'hub.verify_token': `${VERIFY_TOKEN}x` }, VERIFY_TOKEN), undefined)
    assert.equal(verifyWebhookSubscription({ ...query, 'hub.verify_token': undefined }, VERIFY_TOKEN), undefined)
    assert.equal(verifyWebhookSubscription({ ...query, 'hub.challenge': undefined }, VERIFY_TOKEN), undefined)
    assert.equal(verifyWebhookSubscription({ ...query, 'hub.challenge': '' }, VERIFY_TOKEN), undefined)
    assert.equal(verifyWebhookSubscription(query, undefined), undefined)
    assert.equal(verifyWebhookSubscription({ ...query, 'hub.verify_token': '' }, ''), undefined)
  })
})

describe('notificationsFromWebhook', () => {
  beforeEach(() => receiver.reset())

  /** The notifications in what the fake last POSTed. */
  const received = () => notificationsFromWebhook(JSON.parse(receiver.last().rawBody.toString('utf8')))
  const AT = Date.UTC(2025, 0, 15, 9, 30, 0, 750)
  const AT_S = Date.UTC(2025, 0, 15, 9, 30, 0)

  test('sent, delivered and read are progress with that word', async () => {
    const wamid = await sentWamid()
    for (const status of ['sent', 'delivered', 'read'] as const) {
      assert.equal(await fake.sendStatus(wamid, status, { at: AT }), 200)
      assert.deepEqual(received(), [{ kind: 'report', phoneNumberId: PHONE_NUMBER_ID, report: { kind: 'progress', providerRef: wamid, status, at: AT_S } }])
    }
  })

  test('failed is final: undelivered when WhatsApp would not hand it to the person, failed otherwise', async () => {
    const wamid = await sentWamid()
    const cases: [code: number | undefined, outcome: string, optedOut?: boolean][] = [
      [undefined, 'failed'],
      [131000, 'failed'],
      [131053, 'failed'],
      [130429, 'failed'],
      [131026, 'undelivered'],
      [131047, 'undelivered'],
      [131049, 'undelivered'],
      // The person stopped marketing messages: an opt-out.
      [131050, 'undelivered', true],
    ]
    for (const [errorCode, outcome, optedOut] of cases) {
      await fake.sendStatus(wamid, 'failed', { at: AT, errorCode })
      // 131026 also says the number is not on WhatsApp (a fallback step's not_on_whatsapp).
      const report = { kind: 'final', providerRef: wamid, outcome, at: AT_S, ...(errorCode === 131026 ? { notOnChannel: true } : {}), ...(optedOut ? { optedOut } : {}) }
      assert.deepEqual(received(), [{ kind: 'report', phoneNumberId: PHONE_NUMBER_ID, report }], String(errorCode))
    }
  })

  test('a reply, with and without the context of the message it answers', async () => {
    const wamid = await sentWamid()
    await fake.sendReply({ from: '4915123456789', text: 'Yes, see you', replyTo: wamid, at: AT })
    const [swiped] = received()
    assert.ok(swiped?.kind === 'inbound')
    assert.match(swiped.messageId, /^wamid\./)
    assert.deepEqual(swiped, {
      kind: 'inbound',
      phoneNumberId: PHONE_NUMBER_ID,
      from: '+4915123456789',
      messageId: swiped.messageId,
      replyTo: wamid,
      text: 'Yes, see you',
      media: [],
      at: AT_S,
    })

    await fake.sendReply({ from: '4915123456789', text: 'ok' })
    const [plain] = received()
    assert.ok(plain?.kind === 'inbound')
    assert.equal(plain.replyTo, undefined)
    assert.equal(plain.from, '+4915123456789')
  })

  test('a file is read as its media id, type and MIME type, its caption as the text', () => {
    const metadata = (id: string) => ({ display_phone_number: '15550001111', phone_number_id: id })
    const body = {
      object: 'whatsapp_business_account',
      entry: [{ id: '1', changes: [{ field: 'messages', value: { metadata: metadata('222'), messages: [
        { from: '4915100000005', id: 'wamid.G', timestamp: '1700000006', type: 'image', image: { id: '1200000000000001', mime_type: 'image/jpeg', sha256: 'abc=', caption: 'My CV' } },
        { from: '4915100000005', id: 'wamid.H', timestamp: '1700000007', type: 'document', document: { id: '1200000000000002', mime_type: 'application/pdf', sha256: 'def=', filename: 'cv.pdf' } },
        { from: '4915100000005', id: 'wamid.I', timestamp: '1700000008', type: 'image', image: { mime_type: 'image/jpeg' } },
      ] } }] }],
    }
    assert.deepEqual(notificationsFromWebhook(body).map((n) => (n.kind === 'inbound' ? [n.messageId, n.text, n.media] : undefined)), [
      ['wamid.G', 'My CV', [{ type: 'image', ref: '1200000000000001', mime_type: 'image/jpeg' }]],
      ['wamid.H', undefined, [{ type: 'document', ref: '1200000000000002', mime_type: 'application/pdf' }]],
      ['wamid.I', undefined, []],
    ])
  })

  test('several entries and changes, read in order; other fields and system messages skipped', () => {
    const metadata = (id: string) => ({ display_phone_number: '15550001111', phone_number_id: id })
    const body = {
      object: 'whatsapp_business_account',
      entry: [
        {
          id: 'WABA1',
          changes: [
            {
              field: 'messages',
              value: {
                messaging_product: 'whatsapp',
                metadata: metadata('111'),
                statuses: [
                  { id: 'wamid.A', status: 'delivered', timestamp: '1700000000', recipient_id: '4915100000001' },
                  { id: 'wamid.B', status: 'read', timestamp: '1700000001', recipient_id: '4915100000002' },
                ],
              },
            },
            { field: 'message_template_status_update', value: { event: 'APPROVED', message_template_name: 'x' } },
          ],
        },
        {
          id: 'WABA2',
          changes: [
            {
              field: 'messages',
              value: {
                messaging_product: 'whatsapp',
                metadata: metadata('222'),
                contacts: [{ profile: { name: 'Ada' }, wa_id: '4915100000003' }],
                messages: [
                  { from: '4915100000003', id: 'wamid.C', timestamp: '1700000002', type: 'button', button: { text: 'Yes', payload: 'yes' }, context: { from: '15550001111', id: 'wamid.A' } },
                  { from: '4915100000004', id: 'wamid.D', timestamp: '1700000003', type: 'reaction', reaction: { message_id: 'wamid.B', emoji: '👍' } },
                  { from: '4915100000005', id: 'wamid.E', timestamp: '1700000004', type: 'system', system: { body: 'changed number', type: 'user_changed_number' } },
                ],
              },
            },
            {
              field: 'messages',
              value: { metadata: metadata('222'), statuses: [{ id: 'wamid.F', status: 'failed', timestamp: 1700000005, errors: [{ code: 131026 }] }] },
            },
          ],
        },
      ],
    }
    assert.deepEqual(notificationsFromWebhook(body), [
      { kind: 'report', phoneNumberId: '111', report: { kind: 'progress', providerRef: 'wamid.A', status: 'delivered', at: 1_700_000_000_000 } },
      { kind: 'report', phoneNumberId: '111', report: { kind: 'progress', providerRef: 'wamid.B', status: 'read', at: 1_700_000_001_000 } },
      { kind: 'inbound', phoneNumberId: '222', from: '+4915100000003', messageId: 'wamid.C', replyTo: 'wamid.A', text: 'Yes', media: [], at: 1_700_000_002_000 },
      { kind: 'inbound', phoneNumberId: '222', from: '+4915100000004', messageId: 'wamid.D', replyTo: 'wamid.B', text: undefined, media: [], at: 1_700_000_003_000 },
      { kind: 'report', phoneNumberId: '222', report: { kind: 'final', providerRef: 'wamid.F', outcome: 'undelivered', at: 1_700_000_005_000, notOnChannel: true } },
    ])
  })

  test('junk gives nothing and never throws; the readable parts of an odd payload are kept', () => {
    const junk: unknown[] = [
      undefined,
      null,
      'x',
      42,
      [],
      {},
      { object: 'page', entry: [] },
      { object: 'whatsapp_business_account' },
      { object: 'whatsapp_business_account', entry: 'x' },
      { object: 'whatsapp_business_account', entry: [null, 1, { changes: null }, { changes: [null, { field: 'messages' }, { field: 'messages', value: [] }] }] },
      { object: 'whatsapp_business_account', entry: [{ changes: [{ field: 'messages', value: { statuses: [{ id: 'wamid.A', status: 'read', timestamp: '1700000000' }] } }] }] },
    ]
    for (const body of junk) assert.deepEqual(notificationsFromWebhook(body), [], JSON.stringify(body))

    const odd = {
      object: 'whatsapp_business_account',
      entry: [
        {
          changes: [
            {
              field: 'messages',
              value: {
                metadata: { phone_number_id: '111' },
                statuses: [
                  null,
                  { id: 'wamid.A', status: 'read' },
                  { id: 'wamid.B', status: 'deleted', timestamp: '1700000000' },
                  { status: 'read', timestamp: '1700000000' },
                  { id: 'wamid.C', status: 'read', timestamp: 'yesterday' },
                  { id: 'wamid.D', status: 'failed', timestamp: '1700000000', errors: 'x' },
                ],
                messages: [{ from: '+49', id: 'wamid.E', timestamp: '1700000000' }, { from: '4915100000001', timestamp: '1700000000' }, 'x'],
                unknown_list: [1, 2, 3],
              },
            },
          ],
        },
      ],
    }
    assert.deepEqual(notificationsFromWebhook(odd), [
      { kind: 'report', phoneNumberId: '111', report: { kind: 'final', providerRef: 'wamid.D', outcome: 'failed', at: 1_700_000_000_000 } },
    ])
  })
})

describe('settle', () => {
  const progress = (providerRef: string | null, providerStatus: string | null): InteractionProgress => ({ providerRef, providerStatus, attempt: 1, config: REMINDER, startedAt: 0, to: '+15555550100' })
  const CASES: [providerRef: string | null, providerStatus: string | null, outcome: string][] = [
    ['wamid.A', 'read', 'read'],
    ['wamid.A', 'delivered', 'delivered'],
    ['wamid.A', 'sent', 'undelivered'],
    ['wamid.A', null, 'undelivered'],
    [null, null, 'failed'],
    [null, 'sent', 'failed'],
  ]
  for (const [providerRef, providerStatus, outcome] of CASES) {
    test(`${providerRef ?? 'no ref'}, ${providerStatus ?? 'no status'} → ${outcome}`, async () => {
      assert.deepEqual(await channel.settle(progress(providerRef, providerStatus)), { outcome })
    })
  }
})

/** A message the fake has accepted, for notifications about it. */
async function sentWamid(): Promise<string> {
  const result = await channel.start(attempt())
  assert.equal(result.kind, 'started')
  return (result as { providerRef: string }).providerRef
}

interface Captured {
  method: string
  url: string
  headers: IncomingHttpHeaders
  rawBody: Buffer
}

interface Receiver {
  url: string
  last(): Captured
  reset(): void
  close(): Promise<void>
}

/** Stands in for the service's webhook route: keeps each request's raw bytes, answers the handshake with the helper. */
async function startReceiver(): Promise<Receiver> {
  let captured: Captured[] = []
  const server: Server = createServer(async (request, response) => {
    const chunks: Buffer[] = []
    for await (const chunk of request) chunks.push(chunk as Buffer)
    captured.push({ method: request.method ?? '', url: request.url ?? '', headers: request.headers, rawBody: Buffer.concat(chunks) })
    if (request.method === 'GET') {
      const query = Object.fromEntries(new URL(request.url ?? '/', 'http://receiver').searchParams)
      const challenge = verifyWebhookSubscription(query, VERIFY_TOKEN)
      response.writeHead(challenge === undefined ? 403 : 200, { 'content-type': 'text/plain' }).end(challenge ?? 'forbidden')
      return
    }
    response.writeHead(200).end()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/providers/whatsapp/webhook`,
    last: () => {
      const request = captured.at(-1)
      assert.ok(request !== undefined, 'the receiver got nothing')
      return request
    },
    reset: () => void (captured = []),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}
