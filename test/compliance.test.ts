/**
 * Consent and calling law through the whole service, with an injected clock
 * and the providers' fakes (Twilio, WhatsApp Cloud): consents recorded,
 * listed and revoked; a Florida number first called at 08:00 local by a
 * campaign open from 07:00 and never after 20:00; a fourth attempt in 24
 * hours deferred; a marketing call without written consent completed
 * not_permitted with no request to the provider; a STOP reply revoking the
 * consents it covers; the dry run agreeing with the dispatcher on 1,000
 * generated cases; an erased person leaving no consent evidence behind.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { createChannels } from '../src/channels/index.ts'
import { type FakeTwilio, startFakeTwilio } from './fakes/twilio.ts'
import { type FakeWhatsAppCloud, startFakeWhatsAppCloud } from './fakes/whatsappCloud.ts'
import { eventsOfTask } from './support/events.ts'
import { bearer, freePort, json, OPERATOR_TOKEN, startService, tablesHolding, taskOf, type TestService } from './support/service.ts'

const ACCOUNT_SID = 'AC00000000000000000000000000000047'
const SECRETS: Record<string, string> = { TWILIO_AUTH_TOKEN: 'twilio-token-for-compliance-tests', WHATSAPP_ACCESS_TOKEN: 'wa-token-compliance', WHATSAPP_APP_SECRET: 'wa-secret-compliance' }
const PHONE_NUMBER_ID = '106540352240047'
const EVERY_DAY = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun']
const ALWAYS_OPEN = { timezone: 'contact', windows: [{ days: EVERY_DAY, start: '00:00', end: '24:00' }] }
const HOUR = 3_600_000
const admin = bearer(OPERATOR_TOKEN)

let service: TestService
let twilio: FakeTwilio
let whatsapp: FakeWhatsAppCloud
let orgId: string
let key: string
let now = Date.parse('2026-01-05T15:00:00Z')
let routingKeys = 0
let numbers = 0

before(async () => {
  twilio = await startFakeTwilio({ accounts: { [ACCOUNT_SID]: SECRETS.TWILIO_AUTH_TOKEN! } })
  whatsapp = await startFakeWhatsAppCloud({
    accessToken: SECRETS.WHATSAPP_ACCESS_TOKEN!,
    appSecret: SECRETS.WHATSAPP_APP_SECRET!,
    phoneNumberIds: [PHONE_NUMBER_ID],
    templates: { offer: { languages: ['en'], bodyParameters: 0 } },
  })
  const port = await freePort()
  const baseUrl = `http://127.0.0.1:${port}`
  const channels = createChannels({ publicBaseUrl: baseUrl, twilioApiBaseUrl: twilio.url, whatsappApiBaseUrl: whatsapp.url }, (name) => SECRETS[name])
  service = await startService({ now: () => now, channels })
  await service.app.listen({ port, host: '127.0.0.1' })
  whatsapp.setWebhookUrl(`${baseUrl}/providers/whatsapp/webhook`)
  orgId = json(await service.app.inject({ method: 'POST', url: '/admin/v1/organizations', headers: admin, payload: { name: 'Sunshine Insurance' } })).data.id
  key = json(
    await service.app.inject({
      method: 'POST',
      url: `/admin/v1/organizations/${orgId}/api-keys`,
      headers: admin,
      payload: { name: 'crm', scopes: ['triggers:write', 'triggers:read', 'consents:manage', 'contacts:erase'] },
    }),
  ).data.key
})
after(async () => {
  await service.close()
  await twilio.close()
  await whatsapp.close()
})

/** A Miami number of its own for each test, so that none counts another's calls. */
const floridaNumber = () => `+1305777${String(1000 + ++numbers).padStart(4, '0')}`

async function campaign(settings: Record<string, unknown>) {
  const response = await service.app.inject({
    method: 'POST',
    url: `/admin/v1/organizations/${orgId}/campaigns`,
    headers: admin,
    payload: { routing_key: `offers-${++routingKeys}`, channel: 'voice', schedule: ALWAYS_OPEN, ...settings },
  })
  assert.equal(response.statusCode, 201, response.body)
  return json(response).data as { id: string; routing_key: string; compliance: unknown }
}

/** A marketing campaign that calls through Twilio. */
const twilioMarketing = (settings: Record<string, unknown> = {}) =>
  campaign({
    provider: 'twilio',
    provider_config: { account_sid: ACCOUNT_SID, from: '+14155550100', answer_url: 'https://agent.example.com/twiml' },
    pacing: { per_second: 1_000_000 },
    compliance: { purpose: 'marketing' },
    ...settings,
  })

async function trigger(routingKey: string, phone: string, channel = 'voice') {
  const response = await service.app.inject({
    method: 'POST',
    url: '/api/v2/triggers',
    headers: { ...bearer(key), 'content-type': 'application/json' },
    payload: { campaign: routingKey, channel, ids: [{ source: 'crm', type: 'lead', value: `lead-${phone}-${routingKey}` }], contact: { phone } },
  })
  assert.equal(response.statusCode, 201, response.body)
  return json(response).data as { id: string; task_id: string }
}

async function consent(payload: Record<string, unknown>) {
  const response = await service.app.inject({ method: 'POST', url: '/api/v2/consents', headers: bearer(key), payload: { source: 'web_form', captured_at: '2025-12-01T12:00:00Z', ...payload } })
  assert.equal(response.statusCode, 201, response.body)
  return json(response).data
}

const task = (id: string) => taskOf(service.app, key, id)

/** The task once its last interaction's outcome is committed (the settlement's commit follows the dispatcher's round). */
async function completedTask(id: string) {
  for (let round = 0; round < 100; round++) {
    const current = await task(id)
    if (current.status === 'completed') return current
    await service.app.workers!.dispatcher.runOnce()
    await new Promise((resolve) => setImmediate(resolve))
  }
  throw new Error(`task ${id} did not complete`)
}
const callsTo = (phone: string) => twilio.requests.filter((request) => request.method === 'POST' && request.form?.get('To') === phone)

async function at(instant: string | number) {
  now = typeof instant === 'string' ? Date.parse(instant) : instant
  await service.app.workers!.dispatcher.runOnce()
}

describe('consents through the API', () => {
  test('recorded, read, listed by number, revoked; refused per field; audited by id', async () => {
    const phone = floridaNumber()
    const recorded = await consent({ phone: `+1 (305) 777-${phone.slice(-4)}`, channel: 'voice', purpose: 'marketing', kind: 'express_written', evidence: 'form 88 at https://example.com/f/88', expires_at: '2027-12-01T00:00:00Z' })
    assert.match(recorded.id, /^cns_/)
    assert.equal(recorded.phone, phone)
    assert.equal(recorded.status, 'active')
    assert.equal(recorded.evidence, 'form 88 at https://example.com/f/88')

    const fetched = await service.app.inject({ method: 'GET', url: `/api/v2/consents/${recorded.id}`, headers: bearer(key) })
    assert.deepEqual(json(fetched).data, recorded)
    const listed = json(await service.app.inject({ method: 'GET', url: `/api/v2/consents?phone=${encodeURIComponent(phone)}`, headers: bearer(key) })).data
    assert.deepEqual(listed.map((each: { id: string }) => each.id), [recorded.id])

    const revoked = json(await service.app.inject({ method: 'POST', url: `/api/v2/consents/${recorded.id}/revoke`, headers: bearer(key) })).data
    assert.equal(revoked.status, 'revoked')
    assert.equal(revoked.revoked_by, 'api')
    const again = json(await service.app.inject({ method: 'POST', url: `/api/v2/consents/${recorded.id}/revoke`, headers: bearer(key) })).data
    assert.equal(again.revoked_at, revoked.revoked_at, 'a second revocation keeps the first')

    const refused = await service.app.inject({
      method: 'POST',
      url: '/api/v2/consents',
      headers: bearer(key),
      payload: { phone: '0305 777', channel: 'voice', purpose: 'sales', kind: 'whatsapp_opt_in', source: 'web_form', captured_at: 'yesterday' },
    })
    assert.equal(refused.statusCode, 422)
    // whatsapp_opt_in is a consent of the whatsapp channel: refused with the rest.
    assert.deepEqual(json(refused).detail.map((d: { loc: string[] }) => d.loc.join('.')).sort(), ['body.captured_at', 'body.kind', 'body.phone', 'body.purpose'])
    const mismatched = await service.app.inject({ method: 'POST', url: '/api/v2/consents', headers: bearer(key), payload: { phone, channel: 'voice', purpose: 'marketing', kind: 'whatsapp_opt_in', source: 'web_form', captured_at: '2026-01-01T00:00:00Z' } })
    assert.deepEqual(json(mismatched).detail.map((d: { loc: string[] }) => d.loc.join('.')), ['body.kind'])
    const future = await service.app.inject({ method: 'POST', url: '/api/v2/consents', headers: bearer(key), payload: { phone, channel: 'voice', purpose: 'marketing', kind: 'express', source: 'web_form', captured_at: '2026-02-01T00:00:00Z' } })
    assert.deepEqual(json(future).detail.map((d: { loc: string[] }) => d.loc.join('.')), ['body.captured_at'])
    const lapsed = await service.app.inject({ method: 'POST', url: '/api/v2/consents', headers: bearer(key), payload: { phone, channel: 'voice', purpose: 'marketing', kind: 'express', source: 'web_form', captured_at: '2026-01-01T00:00:00Z', expires_at: '2025-12-31T00:00:00Z' } })
    assert.equal(lapsed.statusCode, 422)
    assert.deepEqual(json(lapsed).detail.map((d: { loc: string[]; msg: string }) => `${d.loc.join('.')}: ${d.msg}`), ['body.expires_at: Value error, expires_at must be after captured_at'])

    const log = json(await service.app.inject({ method: 'GET', url: `/admin/v1/audit-log?org_id=${orgId}`, headers: admin })).data
    const entries = log.filter((entry: { target: string }) => entry.target === recorded.id).map((entry: { action: string }) => entry.action)
    assert.deepEqual(entries.sort(), ['consent.recorded', 'consent.revoked'])
  })

  test('thousands in one request, all or none; a 422 names each entry refused', async () => {
    const consents = Array.from({ length: 2_000 }, (_, n) => ({
      phone: `+4420794${String(10000 + n).padStart(5, '0')}`,
      channel: 'whatsapp',
      purpose: 'marketing',
      kind: 'whatsapp_opt_in',
      source: 'import',
      captured_at: '2025-11-01T00:00:00Z',
    }))
    const bad = await service.app.inject({ method: 'POST', url: '/api/v2/consents/batch', headers: bearer(key), payload: { consents: [...consents.slice(0, 3), { ...consents[3], kind: 'maybe' }] } })
    assert.equal(bad.statusCode, 422)
    assert.deepEqual(json(bad).detail.map((d: { loc: (string | number)[] }) => d.loc.join('.')), ['body.consents.3.kind'])
    const rows = async () => (await service.db.query<{ n: number }>("SELECT count(*)::int AS n FROM consents WHERE source = 'import'"))[0]!.n
    assert.equal(await rows(), 0, 'nothing of a refused batch is recorded')

    const recorded = await service.app.inject({ method: 'POST', url: '/api/v2/consents/batch', headers: bearer(key), payload: { consents } })
    assert.equal(recorded.statusCode, 201, recorded.body.slice(0, 300))
    assert.equal(json(recorded).data.recorded, 2_000)
    assert.equal(await rows(), 2_000)
  })

  test('a trigger may carry a consent, recorded with it for its number; refused in test mode, without a contact, or of the other channel', async () => {
    const phone = floridaNumber()
    const offers = await campaign({ compliance: { purpose: 'marketing' }, provider_config: { outcomes: ['completed'], duration_ms: 0 } })
    now = Date.parse('2026-01-05T15:00:00Z')
    const sent = (payload: Record<string, unknown>) =>
      service.app.inject({ method: 'POST', url: '/api/v2/triggers', headers: { ...bearer(key), 'content-type': 'application/json' }, payload: { campaign: offers.routing_key, contact: { phone }, ...payload } })
    const accepted = await sent({ consent: { kind: 'express_written', source: 'web_form', captured_at: '2026-01-05T14:59:00Z', evidence: 'signup #7' } })
    assert.equal(accepted.statusCode, 201, accepted.body)
    const [recorded] = json(await service.app.inject({ method: 'GET', url: `/api/v2/consents?phone=${encodeURIComponent(phone)}`, headers: bearer(key) })).data
    assert.deepEqual(
      { channel: recorded.channel, purpose: recorded.purpose, kind: recorded.kind, trigger_id: recorded.trigger_id, evidence: recorded.evidence },
      { channel: 'voice', purpose: 'marketing', kind: 'express_written', trigger_id: json(accepted).data.id, evidence: 'signup #7' },
    )
    await at(now)
    assert.equal((await task(json(accepted).data.task_id)).attempts, 1, 'called on the consent it carried')

    const loc = async (payload: Record<string, unknown>) => json(await sent(payload)).detail?.map((d: { loc: string[] }) => d.loc.join('.'))
    const consentSent = { kind: 'express', source: 'call', captured_at: '2026-01-05T14:00:00Z' }
    assert.deepEqual(await loc({ test_mode: true, consent: consentSent }), ['body.consent'])
    assert.deepEqual(await loc({ consent: { ...consentSent, kind: 'whatsapp_opt_in' } }), ['body.consent.kind'])
    assert.deepEqual(await loc({ consent: { ...consentSent, captured_at: '2026-01-06T00:00:00Z' } }), ['body.consent.captured_at'])
    assert.deepEqual(await loc({ consent: { ...consentSent, expires_at: '2026-01-05T13:00:00Z' } }), ['body.consent.expires_at'])
    assert.deepEqual(await loc({ consent: { ...consentSent, kind: 'maybe' } }), ['body.consent.kind'])
  })

  test('a key without consents:manage is refused', async () => {
    const other = json(await service.app.inject({ method: 'POST', url: `/admin/v1/organizations/${orgId}/api-keys`, headers: admin, payload: { name: 'ats' } })).data.key
    assert.equal((await service.app.inject({ method: 'GET', url: '/api/v2/consents?phone=%2B13057770000', headers: bearer(other) })).statusCode, 403)
  })
})

describe('a Florida number, on a marketing campaign open 07:00–22:00', () => {
  test('is first called at 08:00 local, and a retry that would fall after 20:00 waits for the next morning', async () => {
    const phone = floridaNumber()
    await consent({ phone, channel: 'voice', purpose: 'marketing', kind: 'express_written' })
    // Each call ends unanswered at once (the simulator's outcomes, attempt by attempt), retried 6 hours on.
    const offers = await campaign({
      compliance: { purpose: 'marketing' },
      schedule: { timezone: 'contact', windows: [{ days: EVERY_DAY, start: '07:00', end: '22:00' }] },
      provider_config: { outcomes: ['no_answer', 'no_answer', 'completed'], duration_ms: 0 },
      attempts: { max: 3, retry_delays_s: { no_answer: 6 * 3600 } },
    })
    // Monday 2026-01-05, 06:30 in Miami (EST, UTC-5).
    now = Date.parse('2026-01-05T11:30:00Z')
    const created = await trigger(offers.routing_key, phone)
    await at('2026-01-05T12:00:00Z')
    const held = await task(created.task_id)
    assert.equal(held.attempts, 0, 'the campaign opens at 07:00; the law at 08:00')
    assert.deepEqual(held.waiting, { for: 'law', until: '2026-01-05T13:00:00.000Z' })
    assert.equal(held.decision.decision, 'deferred')
    assert.deepEqual(held.decision.reasons.map((reason: { rule: string }) => reason.rule).sort(), ['us-federal.telephone_solicitation_hours', 'us-fl.hours'])
    await at('2026-01-05T12:59:59.999Z')
    assert.equal((await task(created.task_id)).attempts, 0)

    await at('2026-01-05T13:00:00Z')
    const first = await task(created.task_id)
    assert.equal(first.interactions[0].started_at, '2026-01-05T13:00:00.000Z')
    assert.equal(first.decision, null, 'the deferral is over: the interaction keeps the decision that allowed it')
    const allowed = first.interactions[0].decision
    assert.equal(allowed.decision, 'allowed')
    assert.deepEqual(allowed.profiles, ['us-federal@2026-12-04', 'us-fl@2026-12-04'])
    assert.ok(allowed.reasons.some((reason: { code: string; consent_id?: string }) => reason.code === 'consent_on_file' && reason.consent_id?.startsWith('cns_')))
    assert.ok(allowed.reasons.some((reason: { code: string; rule: string }) => reason.code === 'within_legal_hours' && reason.rule === 'us-fl.hours'))

    // Unanswered at 08:00: the retry 6 hours on (14:00) is called; the next one, at 20:00, waits until 08:00.
    await at('2026-01-05T19:00:00Z')
    assert.equal((await task(created.task_id)).attempts, 2)
    await at('2026-01-06T01:00:00Z')
    const evening = await task(created.task_id)
    assert.equal(evening.attempts, 2, 'not at 20:00 in Miami')
    assert.deepEqual(evening.waiting, { for: 'law', until: '2026-01-06T13:00:00.000Z' })
    await at('2026-01-06T13:00:00Z')
    const calledAt = (await task(created.task_id)).interactions.map((interaction: { started_at: string }) => interaction.started_at)
    assert.deepEqual(calledAt, ['2026-01-05T13:00:00.000Z', '2026-01-05T19:00:00.000Z', '2026-01-06T13:00:00.000Z'])
    // Answered the third time: task.completed carries why that call was placed.
    const done = await completedTask(created.task_id)
    const [completed] = (await eventsOfTask(service.db, created.task_id)).filter((event) => event.type === 'task.completed')
    assert.equal(completed.data.outcome, 'reached')
    assert.equal(completed.data.decision.decision, 'allowed')
    assert.deepEqual(completed.data.decision, done.interactions[2].decision)
  })

  test('a fourth attempt within 24 hours on the same subject is deferred, across campaigns; another subject is not', async () => {
    const phone = floridaNumber()
    await consent({ phone, channel: 'voice', purpose: 'marketing', kind: 'express_written' })
    const sameSubject = { compliance: { purpose: 'marketing', subject: 'renewals', consent: { voice: [] } }, provider_config: { outcomes: ['completed'], duration_ms: 0 } }
    const campaigns = [await campaign(sameSubject), await campaign(sameSubject), await campaign(sameSubject), await campaign(sameSubject)]
    const otherSubject = await campaign({ ...sameSubject, compliance: { purpose: 'marketing', subject: 'claims' } })
    now = Date.parse('2026-01-05T15:00:00Z')
    const created = []
    for (const [index, each] of campaigns.entries()) {
      created.push(await trigger(each.routing_key, phone))
      await at(now + (index + 1) * 60_000)
    }
    const attempts = await Promise.all(created.map(async ({ task_id }) => (await task(task_id)).attempts))
    assert.deepEqual(attempts, [1, 1, 1, 0])
    const fourth = await task(created[3]!.task_id)
    // The first started at 15:01Z: the fourth may start a day after it.
    assert.deepEqual(fourth.waiting, { for: 'law', until: '2026-01-06T15:01:00.000Z' })
    assert.deepEqual(fourth.decision.reasons.map((reason: { code: string; rule: string }) => `${reason.code}:${reason.rule}`), ['legal_cap_reached:us-fl.cap'])
    const other = await trigger(otherSubject.routing_key, phone)
    await at(now + 60_000)
    assert.equal((await task(other.task_id)).attempts, 1, 'a campaign of another subject counts on its own')
    await at('2026-01-06T15:01:00Z')
    assert.equal((await task(created[3]!.task_id)).attempts, 1)
  })
})

describe('a marketing call without written consent', () => {
  test('completes not_permitted with its reason, carried by task.completed, and Twilio hears nothing', async () => {
    const phone = floridaNumber()
    await consent({ phone, channel: 'voice', purpose: 'marketing', kind: 'express' })
    const offers = await twilioMarketing()
    now = Date.parse('2026-01-05T15:00:00Z')
    const created = await trigger(offers.routing_key, phone)
    await at(now)
    const blocked = await task(created.task_id)
    assert.equal(blocked.status, 'completed')
    assert.equal(blocked.outcome, 'not_permitted')
    assert.equal(blocked.attempts, 0)
    assert.deepEqual(blocked.interactions, [])
    assert.equal(blocked.decision.decision, 'blocked')
    assert.deepEqual(blocked.decision.reasons.map((reason: { code: string; rule: string }) => `${reason.code}:${reason.rule}`), ['consent_missing:campaign.consent'])
    assert.equal(callsTo(phone).length, 0)
    const [completed] = (await eventsOfTask(service.db, created.task_id)).filter((event) => event.type === 'task.completed')
    assert.equal(completed.data.outcome, 'not_permitted')
    assert.deepEqual(completed.data.decision, blocked.decision)
  })
})

describe('a STOP reply', () => {
  test('revokes the consents it covers: once the suppression is lifted, the next marketing message is blocked', async () => {
    const phone = `+4420794${String(60000 + ++numbers).padStart(5, '0')}`
    const optIn = await consent({ phone, channel: 'whatsapp', purpose: 'marketing', kind: 'whatsapp_opt_in' })
    const offers = await campaign({
      channel: 'whatsapp',
      provider: 'whatsapp_cloud',
      provider_config: { phone_number_id: PHONE_NUMBER_ID, template: { name: 'offer' }, reply_window_s: 3600 },
      pacing: { per_second: 1_000_000 },
      compliance: { purpose: 'marketing' },
    })
    now = Date.parse('2026-01-05T15:00:00Z')
    const first = await trigger(offers.routing_key, phone, 'whatsapp')
    await at(now)
    assert.equal((await task(first.task_id)).attempts, 1)
    assert.equal(await whatsapp.sendReply({ from: phone.slice(1), text: 'STOP', at: now + 60_000 }), 200)
    const revoked = json(await service.app.inject({ method: 'GET', url: `/api/v2/consents/${optIn.id}`, headers: bearer(key) })).data
    assert.equal(revoked.status, 'revoked')
    assert.equal(revoked.revoked_by, 'reply')

    // The person later asks to hear about their account again: the operator lifts the opt-out, and the consent stays revoked.
    const lifted = await service.app.inject({ method: 'DELETE', url: `/admin/v1/organizations/${orgId}/suppressions/${encodeURIComponent(phone)}`, headers: admin })
    assert.equal(lifted.statusCode, 204)
    const sent = whatsapp.requests.length
    const next = await trigger(offers.routing_key, phone, 'whatsapp')
    await at(now + HOUR)
    const blocked = await task(next.task_id)
    assert.equal(blocked.outcome, 'not_permitted')
    // The campaign's own requirement, and the UK's for marketing messages (PECR reg. 22): both named.
    assert.deepEqual(
      blocked.decision.reasons.map((reason: { code: string; rule: string; consent_id?: string }) => `${reason.code}:${reason.rule}:${reason.consent_id}`),
      [`consent_revoked:campaign.consent:${optIn.id}`, `consent_revoked:gb.electronic_mail_consent:${optIn.id}`],
    )
    assert.equal(whatsapp.requests.length, sent, 'no message sent')
  })
})

describe('the dry run', () => {
  test('agrees with the dispatcher on 1,000 generated cases', async () => {
    // A seeded generator: the same cases every run.
    let seed = 47
    const random = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31)
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!
    const campaigns = [
      await campaign({ compliance: { purpose: 'marketing' }, provider_config: { outcomes: ['completed'], duration_ms: 0 } }),
      await campaign({ compliance: { purpose: 'marketing', consent: { voice: ['express'] } }, provider_config: { outcomes: ['completed'], duration_ms: 0 } }),
      await campaign({ compliance: { purpose: 'informational', artificial_voice: true }, provider_config: { outcomes: ['completed'], duration_ms: 0 } }),
      await campaign({ compliance: { purpose: 'informational' }, schedule: { timezone: 'contact', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri'], start: '09:00', end: '17:00' }] }, provider_config: { outcomes: ['completed'], duration_ms: 0 } }),
      await campaign({ compliance: { purpose: 'healthcare' }, provider_config: { outcomes: ['completed'], duration_ms: 0 } }),
    ]
    // Miami, Oklahoma City, Austin, Seattle, Baltimore, Toronto, Paris, Berlin, London, a US toll-free number.
    const prefixes = ['+1305778', '+1405222', '+1512222', '+1206222', '+1410222', '+1416222', '+3314222', '+4930222', '+4420794', '+1800222']
    const kinds = ['express', 'express_written'] as const
    let cases = 0
    const disagreements: string[] = []
    const decided = new Map<string, number>()
    for (let round = 0; round < 20; round++) {
      now = Date.parse('2026-01-05T00:00:00Z') + Math.floor(random() * 400 * 24) * HOUR + Math.floor(random() * 60) * 60_000
      const round_cases = []
      for (let n = 0; n < 50; n++) {
        const prefix = pick(prefixes)
        // London's are 10 digits after +44: one more.
        const phone = `${prefix}${prefix === '+4420794' ? '6' : ''}${String(1000 + round * 50 + n).padStart(4, '0')}`
        const chosen = pick(campaigns)
        if (random() < 0.5) await consent({ phone, channel: 'voice', purpose: pick(['marketing', 'informational', 'healthcare']), kind: pick(kinds), captured_at: new Date(now - 30 * 24 * HOUR).toISOString() })
        const created = await trigger(chosen.routing_key, phone)
        const dry = json(await service.app.inject({ method: 'POST', url: '/api/v2/contactability', headers: bearer(key), payload: { phone, channel: 'voice', campaign: chosen.routing_key } })).data
        round_cases.push({ phone, created, dry })
      }
      await at(now)
      for (const { phone, created, dry } of round_cases) {
        cases++
        decided.set(dry.decision, (decided.get(dry.decision) ?? 0) + 1)
        const done = await task(created.task_id)
        const dispatched =
          done.outcome === 'not_permitted' ? 'blocked' : done.attempts > 0 ? 'allowed' : done.status === 'pending' ? 'deferred' : `${done.status}/${done.outcome}`
        const agrees =
          dispatched === dry.decision &&
          // A deferral the law holds is due exactly when the dry run says; one the campaign's window holds, at its opening.
          (done.waiting?.for !== 'law' || done.next_attempt_at === dry.not_before) &&
          (dry.decision !== 'blocked' || JSON.stringify(done.decision.reasons) === JSON.stringify(dry.reasons))
        if (!agrees) disagreements.push(`${phone} at ${new Date(now).toISOString()}: dry run ${JSON.stringify(dry)}, dispatcher ${dispatched} ${JSON.stringify(done.decision)} ${done.next_attempt_at}`)
      }
    }
    assert.equal(cases, 1_000)
    assert.deepEqual(disagreements.slice(0, 5), [])
    // The cases cover every kind of decision, each many times.
    for (const kind of ['allowed', 'deferred', 'blocked']) assert.ok((decided.get(kind) ?? 0) >= 100, `${kind}: ${decided.get(kind)} of 1,000`)
  })
})

describe('erasure', () => {
  test('an erased person leaves no consent evidence, nor their number, in any table', async () => {
    const phone = floridaNumber()
    const evidence = 'signed enrolment form EV-2026-0047 for Ada Byron'
    const recorded = await consent({ phone, channel: 'voice', purpose: 'marketing', kind: 'express_written', evidence })
    const offers = await campaign({ compliance: { purpose: 'marketing' }, provider_config: { outcomes: ['completed'], duration_ms: 0 } })
    now = Date.parse('2026-01-05T15:00:00Z')
    await trigger(offers.routing_key, phone)
    await at(now)
    assert.deepEqual(await tablesHolding(service.db, evidence), ['consents'])

    const erased = await service.app.inject({ method: 'POST', url: '/api/v2/contacts/erase', headers: bearer(key), payload: { phone } })
    assert.equal(erased.statusCode, 200, erased.body)
    assert.equal(json(erased).data.consents, 1)
    assert.deepEqual(await tablesHolding(service.db, evidence), [])
    assert.deepEqual(await tablesHolding(service.db, 'EV-2026-0047'), [])
    assert.ok(!(await tablesHolding(service.db, phone)).includes('consents'))
    const kept = json(await service.app.inject({ method: 'GET', url: `/api/v2/consents/${recorded.id}`, headers: bearer(key) })).data
    assert.equal(kept.phone, null)
    assert.equal(kept.evidence, null)
    assert.equal(kept.status, 'revoked')
    assert.equal(kept.revoked_by, 'erasure')
    // Still found by the number, as the revocation it became: a new trigger to it is not called on the old consent.
    const listed = json(await service.app.inject({ method: 'GET', url: `/api/v2/consents?phone=${encodeURIComponent(phone)}`, headers: bearer(key) })).data
    assert.deepEqual(listed.map((each: { id: string }) => each.id), [recorded.id])
  })
})
