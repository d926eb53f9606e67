/**
 * The Twilio SMS channel against the Twilio fake's Programmable Messaging:
 * the Create/Fetch Message wire format, how refusals and failures map,
 * provider_config validation, status callbacks and the carriers' keywords.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import type { OutboundAttempt } from '../../src/channels/channel.ts'
import { checkProviderConfig } from '../../src/channels/providerConfig.ts'
import { TwilioMessagingChannel } from '../../src/channels/twilio/messagingChannel.ts'
import { TwilioMessagingConfigSchema } from '../../src/channels/twilio/messagingConfig.ts'
import { inboundText, reportFromMessageStatus } from '../../src/channels/twilio/messagingWebhooks.ts'
import { smsKeyword } from '../../src/domain/optOut.ts'
import type { JsonObject } from '../../src/domain/types.ts'
import { type FakeTwilio, startFakeTwilio } from '../fakes/twilio.ts'

const ACCOUNT = `AC${randomBytes(16).toString('hex')}`
const TOKEN = `token-${randomBytes(16).toString('hex')}`
const FROM = '+14155552671'
const TO = '+442079460958'
const SID = `SM${'ab'.repeat(16)}`

const config = (overrides: JsonObject = {}): JsonObject => ({ account_sid: ACCOUNT, from: FROM, text: 'Hi {{first_name}}: {{context.slot}}', ...overrides })

function attempt(overrides: Partial<OutboundAttempt> = {}): OutboundAttempt {
  return {
    interactionId: 'int_01J0ABCDEF',
    taskId: 'task_1',
    attempt: 1,
    to: TO,
    testMode: false,
    context: { slot: 'Monday 10:00' },
    language: undefined,
    firstName: 'Ada',
    lastName: undefined,
    ids: [],
    config: config(),
    ...overrides,
  }
}

let fake: FakeTwilio
let channel: TwilioMessagingChannel

before(async () => {
  fake = await startFakeTwilio({ accounts: { [ACCOUNT]: TOKEN } })
  channel = new TwilioMessagingChannel({ apiBaseUrl: fake.url, publicBaseUrl: 'https://cts.example.com/', secret: (name) => ({ TWILIO_AUTH_TOKEN: TOKEN })[name], now: () => 0 })
})
after(() => fake.close())

describe('Create a Message', () => {
  test('sends the filled-in text from the number, with a StatusCallback naming the interaction', async () => {
    const started = await channel.start(attempt())
    assert.equal(started.kind, 'started')
    const sent = fake.messages.message(started.kind === 'started' ? started.providerRef : '')!
    assert.equal(sent.body, 'Hi Ada: Monday 10:00')
    assert.equal(sent.to, TO)
    assert.equal(sent.from, FROM)
    assert.equal(fake.messages.statusCallbackOf(sent.sid), 'https://cts.example.com/providers/twilio/messages/int_01J0ABCDEF/status')
    const request = fake.requests.at(-1)!
    assert.equal(request.headers.authorization, `Basic ${Buffer.from(`${ACCOUNT}:${TOKEN}`).toString('base64')}`)
  })

  test('how refusals map: throttling defers, 21610 is an opt-out, the rest permanent; a 5xx or no answer is unknown', async () => {
    const cases: [{ status: number; code: number; message: string; retryAfter?: string }, unknown][] = [
      [{ status: 429, code: 20429, message: 'Too Many Requests', retryAfter: '7' }, { kind: 'deferred', retryAfterMs: 7000 }],
      [{ status: 400, code: 21611, message: 'This From number has exceeded the maximum number of queued messages' }, { kind: 'deferred' }],
      [{ status: 400, code: 21610, message: 'Attempt to send to unsubscribed recipient' }, { kind: 'refused', permanent: true, optedOut: true }],
      [{ status: 400, code: 21614, message: `'To' number ${TO} is not a valid mobile number` }, { kind: 'refused', permanent: true, optedOut: undefined }],
    ]
    for (const [error, expected] of cases) {
      fake.failNext(error)
      const result = await channel.start(attempt())
      for (const [key, value] of Object.entries(expected as object)) assert.deepEqual((result as Record<string, unknown>)[key], value, `${error.code} ${key}`)
      if (result.kind !== 'started') assert.ok(!result.reason.includes(TO), 'the number stays out of the reason')
    }
    fake.failNext({ status: 503, code: 20500, message: 'Service unavailable' })
    await assert.rejects(channel.start(attempt()), /may or may not have been sent/)
  })

  test('a text too long once filled in, or empty, is refused before Twilio is asked; texts by language pick the contact\'s', async () => {
    const before = fake.requests.length
    const long = await channel.start(attempt({ context: { slot: 'x'.repeat(1600) } }))
    assert.equal(long.kind, 'refused')
    const empty = await channel.start(attempt({ config: config({ text: '{{context.missing}}' }) }))
    assert.equal(empty.kind, 'refused')
    assert.equal(fake.requests.length, before)
    const german = await channel.start(attempt({ language: 'de-AT', config: config({ text: { de: 'Hallo {{first_name}}', '*': 'Hello {{first_name}}' } }) }))
    assert.equal(fake.messages.message(german.kind === 'started' ? german.providerRef : '')!.body, 'Hallo Ada')
  })

  test('a Messaging Service sends in place of a number, unpaced unless the campaign says; a number at one a second', async () => {
    assert.deepEqual(channel.senderPace(config()), { sender: `twilio_sms:${FROM}`, perSecond: 1 })
    assert.equal(channel.senderPace(config({ from: undefined, messaging_service_sid: `MG${'0'.repeat(32)}` })), undefined)
  })
})

describe('settling a text without its last callback', () => {
  test('asks Twilio how far it got: delivered, sent without a receipt, undelivered to a landline (permanent)', async () => {
    const started = await channel.start(attempt())
    const sid = started.kind === 'started' ? started.providerRef : ''
    const progress = { providerRef: sid, providerStatus: 'queued', attempt: 1, config: config(), startedAt: 0, to: '+15555550100' }
    await fake.messages.advance(sid, 'sent', { lost: true })
    assert.deepEqual(await channel.settle(progress), { outcome: 'sent' })
    await fake.messages.advance(sid, 'delivered', { lost: true })
    assert.deepEqual(await channel.settle(progress), { outcome: 'delivered' })
    const other = await channel.start(attempt())
    const otherSid = other.kind === 'started' ? other.providerRef : ''
    await fake.messages.advance(otherSid, 'undelivered', { errorCode: 30006, lost: true })
    assert.deepEqual(await channel.settle({ ...progress, providerRef: otherSid }), { outcome: 'undelivered', permanent: true, optedOut: undefined })
    assert.deepEqual(await channel.settle({ ...progress, providerRef: null }), { outcome: 'failed' })
    // A Messaging Service's send the person had stopped fails with 21610 after it was taken: an opt-out, the number suppressed.
    const stopped = await channel.start(attempt())
    const stoppedSid = stopped.kind === 'started' ? stopped.providerRef : ''
    await fake.messages.advance(stoppedSid, 'failed', { errorCode: 21610, lost: true })
    assert.deepEqual(await channel.settle({ ...progress, providerRef: stoppedSid }), { outcome: 'failed', permanent: undefined, optedOut: true })
  })
})

describe('provider_config', () => {
  test('422 per field: a sender, exactly one; the text required, bounded; the token variable TWILIO_* only', () => {
    const locs = (value: unknown) => checkProviderConfig(TwilioMessagingConfigSchema, value, ['body', 'provider_config']).errors.map((error) => error.loc.join('.'))
    assert.deepEqual(locs(config()), [])
    assert.deepEqual(locs({ account_sid: ACCOUNT, text: 'Hi' }), ['body.provider_config.from'])
    assert.deepEqual(locs(config({ messaging_service_sid: `MG${'0'.repeat(32)}` })), ['body.provider_config.messaging_service_sid'])
    assert.deepEqual(locs(config({ text: 'x'.repeat(1601) })), ['body.provider_config.text'])
    assert.deepEqual(locs(config({ text: { 'not a tag!': 'Hi' } })), ['body.provider_config.text.not a tag!.[key]'])
    assert.deepEqual(locs(config({ auth_token_env: 'DATABASE_URL', from: '555' })), ['body.provider_config.from', 'body.provider_config.auth_token_env'])
  })
})

describe("Twilio's requests", () => {
  test('status callbacks: statuses on the way are progress; undelivered and failed end it, with what their codes say', () => {
    const report = (MessageStatus: string, ErrorCode?: string) => reportFromMessageStatus({ MessageSid: SID, MessageStatus, ...(ErrorCode ? { ErrorCode } : {}) }, 1000)
    assert.deepEqual(report('delivered'), { kind: 'progress', providerRef: SID, status: 'delivered', at: 1000 })
    assert.deepEqual(report('undelivered', '30003'), { kind: 'final', providerRef: SID, outcome: 'undelivered', at: 1000, permanent: undefined, optedOut: undefined })
    assert.deepEqual(report('undelivered', '30005'), { kind: 'final', providerRef: SID, outcome: 'undelivered', at: 1000, permanent: true, optedOut: undefined })
    assert.deepEqual(report('failed', '21610'), { kind: 'final', providerRef: SID, outcome: 'failed', at: 1000, permanent: undefined, optedOut: true })
    assert.equal(report('receiving'), undefined)
    assert.equal(reportFromMessageStatus({ MessageStatus: 'sent' }, 0), undefined)
  })

  test("an inbound text: its SID, sender, number, text (none for media alone), and Advanced Opt-Out's verdict", () => {
    assert.deepEqual(inboundText({ MessageSid: SID, From: TO, To: FROM, Body: 'Yes', NumMedia: '0', AccountSid: ACCOUNT }), {
      messageSid: SID, accountSid: ACCOUNT, from: TO, to: FROM, messagingServiceSid: undefined, text: 'Yes', media: [], optOutType: undefined,
    })
    const mms = inboundText({ MessageSid: `MM${'cd'.repeat(16)}`, From: TO, To: FROM, Body: '', NumMedia: '2', MediaUrl0: 'https://api.twilio.com/m/0', MediaContentType0: 'image/png', MediaUrl1: 'https://api.twilio.com/m/1', MediaContentType1: 'application/pdf', OptOutType: 'stop' })!
    assert.equal(mms.text, undefined)
    assert.equal(mms.optOutType, 'STOP')
    assert.deepEqual(mms.media, [{ type: 'image', ref: 'https://api.twilio.com/m/0', mime_type: 'image/png' }, { type: 'document', ref: 'https://api.twilio.com/m/1', mime_type: 'application/pdf' }])
    assert.equal(inboundText({ MessageSid: 'CA123', From: TO, To: FROM, Body: 'x' }), undefined)
  })

  test("the carriers' keywords: a whole message, any case; words around one make it a message", () => {
    const table: [string | undefined, string | undefined][] = [
      ['STOP', 'stop'], [' stopall ', 'stop'], ['Unsubscribe', 'stop'], ['cancel', 'stop'], ['END', 'stop'], ['quit', 'stop'], ['OPTOUT', 'stop'], ['revoke', 'stop'],
      ['START', 'start'], ['unstop', 'start'], ['Yes', 'start'],
      ['HELP', 'help'], ['info', 'help'],
      ['please stop', undefined], ['stop by at 5', undefined], ['yes please', undefined], [undefined, undefined],
    ]
    for (const [text, keyword] of table) assert.equal(smsKeyword(text), keyword, String(text))
  })
})
