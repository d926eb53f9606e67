/**
 * SMS through Twilio Messaging, through the whole service: the dispatcher
 * sends each attempt's text to the Twilio fake (test/fakes/twilioMessaging.ts),
 * whose signed status callbacks and people's texts reach the service over
 * HTTP; the carriers' keywords; texts in the conversation; SMS as a fallback
 * step after a call and after a WhatsApp message.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { after, before, describe, test } from 'node:test'
import { createChannels } from '../../src/channels/index.ts'
import { type FakeTwilio, startFakeTwilio, twilioSignature } from '../fakes/twilio.ts'
import { type FakeWhatsAppCloud, startFakeWhatsAppCloud } from '../fakes/whatsappCloud.ts'
import { eventsOfTask } from '../support/events.ts'
import { bearer, freePort, json, OPERATOR_TOKEN, seedOrganization, startService, tablesHolding, taskOf, type TestService } from '../support/service.ts'

const ACCOUNT_SID = `AC${'0123456789abcdef'.repeat(2)}`
const MESSAGING_SERVICE_SID = `MG${'fedcba9876543210'.repeat(2)}`
const SMS_FROM = '+14155550199'
const SERVICE_NUMBER = '+14155550177'
const SECRETS: Record<string, string> = {
  TWILIO_AUTH_TOKEN: 'twilio-auth-token-for-sms-tests',
  WHATSAPP_ACCESS_TOKEN: 'whatsapp-access-token-for-sms-tests',
  WHATSAPP_APP_SECRET: 'whatsapp-app-secret-for-sms-tests',
}
const PHONE_NUMBER_ID = '106540352242933'
const ALWAYS_OPEN = { timezone: 'contact', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '00:00', end: '24:00' }] }
const HOUR = 3_600_000

let service: TestService
let twilio: FakeTwilio
let whatsapp: FakeWhatsAppCloud
let org: Awaited<ReturnType<typeof seedOrganization>>
let baseUrl: string
let now = Date.parse('2026-06-01T09:00:00.000Z')
let routingKeys = 0
let phones = 0

before(async () => {
  twilio = await startFakeTwilio({ accounts: { [ACCOUNT_SID]: SECRETS.TWILIO_AUTH_TOKEN! }, messagingServices: { [MESSAGING_SERVICE_SID]: [SERVICE_NUMBER] } })
  whatsapp = await startFakeWhatsAppCloud({
    accessToken: SECRETS.WHATSAPP_ACCESS_TOKEN!,
    appSecret: SECRETS.WHATSAPP_APP_SECRET!,
    phoneNumberIds: [PHONE_NUMBER_ID],
    templates: { appointment_reminder: { languages: ['en'], bodyParameters: 1 } },
  })
  const port = await freePort()
  baseUrl = `http://127.0.0.1:${port}`
  const channels = createChannels({ publicBaseUrl: baseUrl, twilioApiBaseUrl: twilio.url, whatsappApiBaseUrl: whatsapp.url }, (name) => SECRETS[name])
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

async function campaign(channel: 'voice' | 'whatsapp' | 'sms', settings: Record<string, unknown>) {
  const response = await service.app.inject({
    method: 'POST',
    url: `/admin/v1/organizations/${org.orgId}/campaigns`,
    headers: bearer(OPERATOR_TOKEN),
    // The clock stands still here: at its provider's pace, a second start in one instant could wait for its sender.
    payload: { routing_key: `sms-${++routingKeys}`, channel, schedule: ALWAYS_OPEN, pacing: { per_second: 1_000_000 }, ...settings },
  })
  assert.equal(response.statusCode, 201, response.body)
  return json(response).data as { id: string; routing_key: string }
}

const smsCampaign = (config: Record<string, unknown> = {}, settings: Record<string, unknown> = {}) =>
  campaign('sms', {
    provider: 'twilio',
    provider_config: {
      account_sid: ACCOUNT_SID,
      from: SMS_FROM,
      text: { en: 'Hi {{first_name}}, your interview for {{context.role}} is {{context.slot}}. Reply YES to confirm.', '*': 'Interview {{context.slot}}' },
      reply_window_s: 3600,
      ...config,
    },
    context: { role: 'Barista' },
    ...settings,
  })

async function trigger(routingKey: string, body: Record<string, unknown> = {}) {
  const phone = `+4420794${String(++phones).padStart(5, '0')}`
  const response = await service.app.inject({
    method: 'POST',
    url: '/api/v2/triggers',
    headers: { ...bearer(org.key), 'content-type': 'application/json' },
    payload: { campaign: routingKey, ids: [{ source: 'ats', type: 'candidate', value: `c-${phones}` }], contact: { phone, first_name: 'Ada', language: 'en-GB' }, context: { slot: 'Monday 10:00' }, ...body },
  })
  assert.equal(response.statusCode, 201, response.body)
  return { ...(json(response).data as { id: string; task_id: string }), phone }
}

const task = (id: string) => taskOf(service.app, org.key, id)
async function suppressionOf(phone: string): Promise<string | undefined> {
  const rows = await service.db.query<{ reason: string }>('SELECT reason FROM suppressions WHERE org_id = $1 AND phone = $2', [org.orgId, phone])
  return rows[0]?.reason
}
const run = () => service.app.workers!.dispatcher.runOnce()
const textsTo = (phone: string) => twilio.messages.sent().filter((message) => message.to === phone)
const personTexts = (from: string, body: string, to = SMS_FROM, extra: { messagingServiceSid?: string; media?: string[]; signature?: string } = {}) =>
  twilio.messages.receive({ accountSid: ACCOUNT_SID, from, to, body, webhookUrl: `${baseUrl}/providers/twilio/messages/inbound`, ...extra })

describe('an SMS campaign', () => {
  test("sends the text in the contact's language with the task's values, and settles by its status callbacks", async () => {
    const { routing_key } = await smsCampaign()
    const created = await trigger(routing_key)
    await run()
    const [text] = textsTo(created.phone)
    assert.ok(text, 'the text reached Twilio')
    assert.equal(text.body, 'Hi Ada, your interview for Barista is Monday 10:00. Reply YES to confirm.')
    assert.equal(text.from, SMS_FROM)
    const interactionId = (await task(created.task_id)).interactions[0].id
    assert.equal(twilio.messages.statusCallbackOf(text.sid), `${baseUrl}/providers/twilio/messages/${interactionId}/status`)

    // Statuses on the way are kept, forward only; a delivered text waits for a reply until its reply window ends.
    assert.equal((await twilio.messages.advance(text.sid, 'sent'))!.status, 204)
    assert.equal((await twilio.messages.advance(text.sid, 'delivered'))!.status, 204)
    assert.equal((await twilio.messages.advance(text.sid, 'sent'))!.status, 204)
    const [row] = await service.db.query<{ provider_status: string }>('SELECT provider_status FROM interactions WHERE id = $1', [interactionId])
    assert.equal(row!.provider_status, 'delivered')
    now += HOUR
    await run()
    const settled = await task(created.task_id)
    assert.equal(settled.interactions[0].outcome, 'delivered')
  })

  test('an undelivered text to a landline (30006) fails the task at once; a forged callback is refused', async () => {
    const { routing_key } = await smsCampaign({}, { attempts: { max: 3 } })
    const created = await trigger(routing_key)
    await run()
    const [text] = textsTo(created.phone)
    assert.equal((await twilio.messages.advance(text!.sid, 'undelivered', { errorCode: 30006, signature: 'Zm9yZ2Vk' }))!.status, 403)
    assert.equal((await task(created.task_id)).status, 'in_progress')
    assert.equal((await twilio.messages.advance(text!.sid, 'undelivered', { errorCode: 30006 }))!.status, 204)
    const failed = await task(created.task_id)
    assert.equal(failed.status, 'completed')
    assert.equal(failed.outcome, 'failed')
    assert.equal(failed.interactions[0].outcome, 'undelivered')
  })

  test("a reply lands on the conversation: an event with the client's ids, the transcript, and the task reached", async () => {
    const { routing_key } = await smsCampaign({ from: undefined, messaging_service_sid: MESSAGING_SERVICE_SID })
    const created = await trigger(routing_key)
    await run()
    const [text] = textsTo(created.phone)
    assert.equal(text!.messaging_service_sid, MESSAGING_SERVICE_SID)
    const answer = await personTexts(created.phone, 'Monday works, see you then', SERVICE_NUMBER, { messagingServiceSid: MESSAGING_SERVICE_SID })
    assert.equal(answer.status, 200)
    assert.equal(answer.body, '<?xml version="1.0" encoding="UTF-8"?>\n<Response/>')
    const done = await task(created.task_id)
    assert.equal(done.outcome, 'reached')
    assert.equal(done.interactions[0].outcome, 'replied')
    const events = await eventsOfTask(service.db, created.task_id)
    assert.deepEqual(events.map((event) => event.type), ['interaction.message_received', 'interaction.finalized', 'task.completed'])
    const received = events[0]
    assert.equal(received.data.channel, 'sms')
    assert.equal(received.data.message.text, 'Monday works, see you then')
    // The window a conversation's texts may go in: 24 hours from the person's latest message.
    assert.equal(received.data.window_closes_at, new Date(Date.parse(received.data.message.received_at) + 86_400_000).toISOString())
    assert.deepEqual(received.data.ids, [{ source: 'ats', type: 'candidate', value: `c-${phones}` }])
    // Twilio's request made again (its retry after a timeout) changes nothing.
    const again = await fetch(answer.url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': twilioSignature(SECRETS.TWILIO_AUTH_TOKEN!, answer.url, answer.params) },
      body: new URLSearchParams(answer.params).toString(),
    })
    assert.equal(again.status, 200)
    assert.equal((await eventsOfTask(service.db, created.task_id)).length, 3)
    const context = json(await service.app.inject({ method: 'GET', url: `/api/v2/interactions/${done.interactions[0].id}`, headers: bearer(org.key) })).data
    assert.deepEqual(context.result.transcript.map((turn: { text: string }) => turn.text), ['Monday works, see you then'])
    // A picture by MMS afterwards: on the task, as Twilio's MediaUrl.
    const picture = 'https://api.twilio.com/2010-04-01/Accounts/AC0/Messages/MM0/Media/ME0'
    assert.equal((await personTexts(created.phone, '', SERVICE_NUMBER, { messagingServiceSid: MESSAGING_SERVICE_SID, media: [picture] })).status, 200)
    const mms = (await eventsOfTask(service.db, created.task_id)).find((event) => event.type === 'interaction.message_received' && event.data.message.media.length > 0)
    assert.deepEqual(mms.data.message.media, [{ type: 'image', ref: picture, mime_type: 'image/jpeg' }])
    assert.equal(mms.data.message.text, null)
  })

  test("docs/messaging.md's campaign, as it is written there, sends its text and answers HELP with its help text", async () => {
    const page = readFileSync(new URL('../../docs/messaging.md', import.meta.url), 'utf8')
    const section = page.slice(page.indexOf('## SMS through Twilio'))
    const documented = JSON.parse(/-d '([\s\S]*?)'/.exec(section)![1]!)
    const response = await service.app.inject({ method: 'POST', url: `/admin/v1/organizations/${org.orgId}/campaigns`, headers: bearer(OPERATOR_TOKEN), payload: { ...documented, schedule: ALWAYS_OPEN } })
    assert.equal(response.statusCode, 201, response.body)
    const created = await trigger(documented.routing_key)
    await run()
    assert.equal(textsTo(created.phone)[0]!.body, 'Hi Ada, your interview is Monday 10:00. Reply C to confirm, STOP to opt out.')
    assert.match((await personTexts(created.phone, 'HELP')).body, /<Message>Acme Recruiting interview reminders\. Reply STOP to opt out\./)
    // YES from a number that never opted out is the person's answer.
    assert.equal((await personTexts(created.phone, 'Yes')).status, 200)
    const done = await task(created.task_id)
    assert.equal(done.outcome, 'reached')
    assert.deepEqual(done.interactions[0].result.transcript.map((turn: { text: string }) => turn.text), ['Yes'])
  })

  test('a text to a number no campaign sends from, or not signed with the account\'s token, is refused', async () => {
    const created = await trigger((await smsCampaign()).routing_key)
    await run()
    assert.equal((await personTexts(created.phone, 'hello', '+14155550000')).status, 403)
    assert.equal((await personTexts(created.phone, 'hello', SMS_FROM, { signature: 'Zm9yZ2Vk' })).status, 403)
    const params = { AccountSid: ACCOUNT_SID, MessageSid: `SM${'ef'.repeat(16)}`, From: created.phone, To: SMS_FROM, Body: 'hello', NumMedia: '0' }
    const url = `${baseUrl}/providers/twilio/messages/inbound`
    const otherToken = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': twilioSignature('another-accounts-token', url, params) },
      body: new URLSearchParams(params).toString(),
    })
    assert.equal(otherToken.status, 403)
    assert.equal((await task(created.task_id)).status, 'in_progress')
  })
})

describe("the carriers' keywords", () => {
  test('STOP suppresses the number: the task ends opted_out and a later task of the organization sends nothing; START lifts it', async () => {
    const { routing_key } = await smsCampaign()
    const created = await trigger(routing_key)
    await run()
    assert.equal((await personTexts(created.phone, ' Stop ')).status, 200)
    const stopped = await task(created.task_id)
    assert.equal(stopped.outcome, 'opted_out')
    assert.equal(await suppressionOf(created.phone), 'keyword')

    const again = await trigger(routing_key, { contact: { phone: created.phone } })
    await run()
    assert.equal((await task(again.task_id)).outcome, 'opted_out')
    assert.equal(textsTo(created.phone).length, 1, 'nothing more was sent')

    const start = await personTexts(created.phone, 'START')
    assert.equal(start.status, 200)
    assert.equal(await suppressionOf(created.phone), undefined)
    // Twilio's retry of the START (after a timeout) is not taken for a reply the second time.
    const eventsBefore = (await eventsOfTask(service.db, again.task_id)).length
    const retried = await fetch(start.url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': twilioSignature(SECRETS.TWILIO_AUTH_TOKEN!, start.url, start.params) },
      body: new URLSearchParams(start.params).toString(),
    })
    assert.equal(retried.status, 200)
    assert.equal((await eventsOfTask(service.db, again.task_id)).length, eventsBefore)
    const [inbound] = await service.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM interactions WHERE direction = 'inbound' AND to_phone = $1`, [created.phone])
    assert.equal(inbound!.n, 0)
    const third = await trigger(routing_key, { contact: { phone: created.phone } })
    await run()
    assert.equal((await task(third.task_id)).status, 'in_progress')
    assert.equal(textsTo(created.phone).length, 2)
  })

  test("START lifts only the carriers' keyword STOP: not an opt-out in other words, nor one the client added after", async () => {
    const { routing_key } = await smsCampaign()
    const inOtherWords = await trigger(routing_key)
    await run()
    assert.equal((await personTexts(inOtherWords.phone, 'Arrête !')).status, 200)
    assert.equal(await suppressionOf(inOtherWords.phone), 'reply')
    assert.equal((await personTexts(inOtherWords.phone, 'START')).status, 200)
    assert.equal(await suppressionOf(inOtherWords.phone), 'reply', 'Twilio did not block the sender, so a START asks nothing of us')

    const adopted = await trigger(routing_key)
    await run()
    assert.equal((await personTexts(adopted.phone, 'STOP')).status, 200)
    const suppressor = json(
      await service.app.inject({ method: 'POST', url: `/admin/v1/organizations/${org.orgId}/api-keys`, headers: bearer(OPERATOR_TOKEN), payload: { name: 'dnc', scopes: ['suppressions:manage'] } }),
    ).data.key
    const added = await service.app.inject({ method: 'POST', url: '/api/v2/suppressions', headers: bearer(suppressor), payload: { phone: adopted.phone } })
    assert.ok(added.statusCode < 300, added.body)
    assert.equal(json(added).data.reason, 'manual')
    assert.equal((await personTexts(adopted.phone, 'START')).status, 200)
    assert.equal(await suppressionOf(adopted.phone), 'manual')
  })

  test("HELP is answered with the campaign's help text and changes nothing else; without one, Twilio answers it", async () => {
    const { routing_key } = await smsCampaign({ help_text: 'Acme Recruiting: interview reminders. Reply STOP to stop. Help: +1 415 555 0100' })
    const created = await trigger(routing_key)
    await run()
    const help = await personTexts(created.phone, 'help')
    assert.equal(help.status, 200)
    assert.match(help.contentType ?? '', /text\/xml/)
    assert.equal(help.body, '<?xml version="1.0" encoding="UTF-8"?>\n<Response><Message>Acme Recruiting: interview reminders. Reply STOP to stop. Help: +1 415 555 0100</Message></Response>')
    assert.equal((await task(created.task_id)).status, 'in_progress')
    assert.deepEqual(await eventsOfTask(service.db, created.task_id), [])

    const plain = await trigger((await smsCampaign()).routing_key)
    await run()
    assert.equal((await personTexts(plain.phone, 'INFO')).body, '<?xml version="1.0" encoding="UTF-8"?>\n<Response/>')
  })

  test('a number that texted STOP to Twilio before: the send is refused with 21610, the task ends opted_out and the number is suppressed', async () => {
    const { routing_key } = await smsCampaign()
    const phone = `+4420794${String(++phones).padStart(5, '0')}`
    // To Twilio alone: the service refuses the request (not signed for it), as it would a text to another of the account's numbers.
    assert.equal((await personTexts(phone, 'UNSUBSCRIBE', SMS_FROM, { signature: 'Zm9yZ2Vk' })).status, 403)
    assert.equal(await suppressionOf(phone), undefined)
    const created = await trigger(routing_key, { contact: { phone } })
    await run()
    const refused = await task(created.task_id)
    assert.equal(refused.outcome, 'opted_out')
    assert.equal(refused.interactions[0].outcome, 'failed')
    assert.equal(await suppressionOf(phone), 'provider')
  })
})

describe('a conversation kept open on purpose (results.conversation_s)', () => {
  test("stays one interaction through the person's texts until the client's result, which completes the task", async () => {
    const { routing_key } = await smsCampaign({}, { results: { conversation_s: 7200 } })
    const created = await trigger(routing_key)
    await run()
    const firstAt = now
    assert.equal((await personTexts(created.phone, 'Is there parking?')).status, 200)
    const interactionOf = async () => (await task(created.task_id)).interactions[0].id
    const agentKey = json(
      await service.app.inject({ method: 'POST', url: `/admin/v1/organizations/${org.orgId}/api-keys`, headers: bearer(OPERATOR_TOKEN), payload: { name: 'desk-agent', scopes: ['messages:send'] } }),
    ).data.key
    now += 60_000
    const answered = await service.app.inject({ method: 'POST', url: `/api/v2/interactions/${await interactionOf()}/messages`, headers: bearer(agentKey), payload: { text: 'Yes, behind the building.' } })
    assert.equal(answered.statusCode, 201, answered.body)
    now += 540_000
    assert.equal((await personTexts(created.phone, 'And can I bring my CV on paper?')).status, 200)
    const open = await task(created.task_id)
    assert.equal(open.status, 'in_progress')
    assert.equal(open.interactions.length, 1)
    assert.equal(open.interactions[0].status, 'ended')
    const interactionId = open.interactions[0].id
    const context = json(await service.app.inject({ method: 'GET', url: `/api/v2/interactions/${interactionId}`, headers: bearer(org.key) })).data
    assert.equal(context.result_due_by, new Date(firstAt + 7_200_000).toISOString(), 'open for conversation_s from the first reply; SMS has no window')

    const appKey = json(
      await service.app.inject({ method: 'POST', url: `/admin/v1/organizations/${org.orgId}/api-keys`, headers: bearer(OPERATOR_TOKEN), payload: { name: 'desk', scopes: ['conversations:write'] } }),
    ).data.key
    const posted = await service.app.inject({ method: 'POST', url: `/api/v2/interactions/${interactionId}/result`, headers: bearer(appKey), payload: { disposition: 'confirmed', summary: 'Parking on site; paper CV fine.' } })
    assert.equal(posted.statusCode, 200, posted.body)
    const done = await task(created.task_id)
    assert.equal(done.outcome, 'reached')
    const events = await eventsOfTask(service.db, created.task_id)
    assert.deepEqual(events.map((event) => event.type), ['interaction.message_received', 'interaction.message_received', 'interaction.finalized', 'task.completed'])
    // Both sides, in the order they were written.
    assert.deepEqual(
      events[2].data.result.transcript.map((turn: { role: string; text: string }) => [turn.role, turn.text]),
      [['contact', 'Is there parking?'], ['agent', 'Yes, behind the building.'], ['contact', 'And can I bring my CV on paper?']],
    )
    assert.equal(events[3].data.result.disposition, 'confirmed')

    // What both sides wrote is personal data: erasing the person leaves it in no table.
    const eraser = json(
      await service.app.inject({ method: 'POST', url: `/admin/v1/organizations/${org.orgId}/api-keys`, headers: bearer(OPERATOR_TOKEN), payload: { name: 'dpo', scopes: ['contacts:erase'] } }),
    ).data.key
    assert.equal((await service.app.inject({ method: 'POST', url: '/api/v2/contacts/erase', headers: bearer(eraser), payload: { phone: created.phone } })).statusCode, 200)
    for (const said of ['Is there parking?', 'behind the building', 'CV on paper']) assert.deepEqual(await tablesHolding(service.db, said), [], said)
  })

  test('without a result it is reported when its length has passed, and the task completes reached', async () => {
    const { id, routing_key } = await smsCampaign()
    // docs/messaging.md's PATCH, as it is written there, then a shorter length.
    const page = readFileSync(new URL('../../docs/messaging.md', import.meta.url), 'utf8')
    const documented = JSON.parse(/-d '([\s\S]*?)'/.exec(page.slice(page.indexOf('## A conversation kept open')))![1]!)
    const patch = (payload: unknown) => service.app.inject({ method: 'PATCH', url: `/admin/v1/organizations/${org.orgId}/campaigns/${id}`, headers: bearer(OPERATOR_TOKEN), payload: payload as Record<string, unknown> })
    const patched = await patch(documented)
    assert.equal(patched.statusCode, 200, patched.body)
    assert.deepEqual(json(patched).data.results, { wait_s: 0, conversation_s: 172800 })
    assert.equal((await patch({ results: { conversation_s: 3600 } })).statusCode, 200)
    const created = await trigger(routing_key)
    await run()
    assert.equal((await personTexts(created.phone, 'Who is this?')).status, 200)
    now += 3_599_000
    await run()
    assert.equal((await task(created.task_id)).status, 'in_progress')
    now += 1_000
    await run()
    const done = await task(created.task_id)
    assert.equal(done.outcome, 'reached')
    assert.equal(done.interactions[0].status, 'finalized')
  })

  test('a voice campaign cannot keep a conversation open: 422 at the field', async () => {
    const response = await service.app.inject({
      method: 'POST',
      url: `/admin/v1/organizations/${org.orgId}/campaigns`,
      headers: bearer(OPERATOR_TOKEN),
      payload: { routing_key: `sms-${++routingKeys}`, channel: 'voice', results: { conversation_s: 3600 } },
    })
    assert.equal(response.statusCode, 422)
    assert.deepEqual(json(response).detail.map((entry: { loc: unknown }) => entry.loc), [['body', 'results', 'conversation_s']])
  })
})

describe('texts in the conversation', () => {
  test('the client texts the person through the API within 24 hours of their latest text, text only; its statuses come back on the interaction', async () => {
    const created = await trigger((await smsCampaign()).routing_key)
    await run()
    const interactionId = (await task(created.task_id)).interactions[0].id
    const issued = await service.app.inject({ method: 'POST', url: `/admin/v1/organizations/${org.orgId}/api-keys`, headers: bearer(OPERATOR_TOKEN), payload: { name: 'agent', scopes: ['messages:send'] } })
    const key = json(issued).data.key
    const send = (payload: Record<string, unknown>) => service.app.inject({ method: 'POST', url: `/api/v2/interactions/${interactionId}/messages`, headers: bearer(key), payload })
    // Before the person has written, nothing is sent: a text in the conversation answers them.
    const unasked = await send({ text: 'Hello?' })
    assert.equal(unasked.statusCode, 409, unasked.body)
    assert.match(json(unasked).error.message, /has not opened/)
    assert.equal(textsTo(created.phone).length, 1)
    assert.equal((await personTexts(created.phone, 'Could we move it?')).status, 200)

    const sent = await send({ text: 'Would Tuesday suit you better?' })
    assert.equal(sent.statusCode, 201, sent.body)
    const text = textsTo(created.phone).at(-1)!
    assert.equal(text.body, 'Would Tuesday suit you better?')
    assert.equal(twilio.messages.statusCallbackOf(text.sid), `${baseUrl}/providers/twilio/messages/status`)
    assert.equal((await twilio.messages.advance(text.sid, 'delivered'))!.status, 204)
    const context = json(await service.app.inject({ method: 'GET', url: `/api/v2/interactions/${interactionId}`, headers: bearer(org.key) })).data
    assert.deepEqual(context.messages.map((each: { id: string; status: string }) => [each.id, each.status]), [[json(sent).data.id, 'delivered']])

    const buttons = await send({ buttons: { body: 'Pick', options: [{ id: 'a', title: 'A' }] } })
    assert.equal(buttons.statusCode, 422, buttons.body)
    assert.deepEqual(json(buttons).detail.map((entry: { loc: unknown }) => entry.loc), [['body', 'buttons']])
    assert.equal(textsTo(created.phone).length, 2)

    // A day after the person's text, the window has closed.
    now += 86_400_000
    const late = await send({ text: 'Still there?' })
    assert.equal(late.statusCode, 409, late.body)
    assert.match(json(late).error.message, /closed at/)
    assert.equal(textsTo(created.phone).length, 2)
  })
})

describe('SMS as a fallback step', () => {
  test('a call not answered is followed by a text in the same task, and the reply to it reaches the task', async () => {
    // The fake's call callbacks carry the wall clock's Timestamp.
    now = Date.now()
    const sms = await smsCampaign()
    const voice = await campaign('voice', {
      provider: 'twilio',
      provider_config: { account_sid: ACCOUNT_SID, from: '+14155550100', answer_url: 'https://agent.example.com/twiml' },
      attempts: { max: 1 },
      fallback: { campaign_id: sms.id, when: ['no_reply'] },
    })
    const created = await trigger(voice.routing_key)
    await run()
    const call = (await task(created.task_id)).interactions[0]
    const [row] = await service.db.query<{ provider_ref: string }>('SELECT provider_ref FROM interactions WHERE id = $1', [call.id])
    assert.equal(await twilio.finishCall(row!.provider_ref, { status: 'no-answer' }), 204)
    const moved = await task(created.task_id)
    assert.equal(moved.campaign, sms.routing_key)
    // The text is due when the call ended, by the fake's wall clock.
    now = Date.now()
    await run()
    assert.equal(textsTo(created.phone).length, 1)
    assert.equal((await personTexts(created.phone, 'Sorry, missed your call: Monday is fine')).status, 200)
    const done = await task(created.task_id)
    assert.equal(done.outcome, 'reached')
    assert.deepEqual(done.steps.map((step: { channel: string; outcome: string }) => [step.channel, step.outcome]), [['voice', 'no_reply'], ['sms', 'reached']])
  })

  test('a WhatsApp message that fails is followed by a text', async () => {
    const sms = await smsCampaign()
    const messages = await campaign('whatsapp', {
      provider: 'whatsapp_cloud',
      provider_config: { phone_number_id: PHONE_NUMBER_ID, template: { name: 'appointment_reminder', body_parameters: ['slot'] } },
      fallback: { campaign_id: sms.id, when: ['undelivered'] },
    })
    const created = await trigger(messages.routing_key)
    whatsapp.failNext({ httpStatus: 400, code: 131049, message: 'This message was not delivered to maintain healthy ecosystem engagement.' })
    await run()
    const moved = await task(created.task_id)
    assert.equal(moved.campaign, sms.routing_key)
    await run()
    assert.equal(textsTo(created.phone).length, 1)
  })
})
