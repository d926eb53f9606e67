/**
 * The operator's overrides of the calling-law profiles, through the admin
 * API: the profiles in force read back, a rule replaced (its profile
 * versioned anew, the dry run and the dispatcher applying it), a shipped rule
 * disabled, a rule added, the override removed; each change audited, each
 * body refused per field.
 */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { bearer, createCampaign, json, OPERATOR_TOKEN, seedOrganization, startService, taskOf, type TestService } from './support/service.ts'

const admin = bearer(OPERATOR_TOKEN)
const EVERY_DAY = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun']
const ALWAYS_OPEN = { timezone: 'contact', windows: [{ days: EVERY_DAY, start: '00:00', end: '24:00' }] }
const SOURCE = { citation: 'Operator counsel memo 2026-12', url: 'https://counsel.example.com/memo' }
const MIAMI = '+13057779001'

let service: TestService
// Monday 2026-01-05, 08:30 in Miami.
let now = Date.parse('2026-01-05T13:30:00Z')
let org: Awaited<ReturnType<typeof seedOrganization>>

before(async () => {
  service = await startService({ now: () => now })
  org = await seedOrganization(service.app, { scopes: ['triggers:write', 'triggers:read', 'consents:manage'] })
  await createCampaign(service.app, org.orgId, { routing_key: 'offers', channel: 'voice', schedule: ALWAYS_OPEN, provider_config: { outcomes: ['completed'], duration_ms: 0 }, compliance: { purpose: 'marketing', consent: { voice: [] } } })
})
after(() => service.close())

const dryRun = async () =>
  json(await service.app.inject({ method: 'POST', url: '/api/v2/contactability', headers: bearer(org.key), payload: { phone: MIAMI, channel: 'voice', campaign: 'offers' } })).data
const put = (ruleId: string, body: Record<string, unknown>) => service.app.inject({ method: 'PUT', url: `/admin/v1/calling-law/rules/${ruleId}`, headers: admin, payload: body })

test('a rule replaced applies at once, its profile versioned anew; disabled, it applies no more; its override removed, the shipped rule is back', async () => {
  const shipped = json(await service.app.inject({ method: 'GET', url: '/admin/v1/calling-law', headers: admin })).data
  assert.match(shipped.disclaimer, /counsel/)
  assert.deepEqual(shipped.overrides, [])
  assert.equal(shipped.profiles.find((profile: { id: string }) => profile.id === 'us-fl').version, '2026-12-04')
  assert.equal((await dryRun()).decision, 'allowed', "08:30 is inside Florida's 08:00-20:00")

  const replaced = await put('us-fl.hours', {
    rule: { id: 'us-fl.hours', kind: 'hours', purposes: ['marketing'], channels: ['voice', 'whatsapp'], windows: [{ days: EVERY_DAY, start: '09:00', end: '20:00' }], source: SOURCE, effective_from: '2021-07-01' },
    reason: 'counsel reads the hours as from 9',
  })
  assert.equal(replaced.statusCode, 200, replaced.body)
  const deferred = await dryRun()
  assert.equal(deferred.decision, 'deferred')
  assert.equal(deferred.not_before, '2026-01-05T14:00:00.000Z')
  assert.ok(deferred.profiles.includes('us-fl@2026-12-04+20260105T133000Z'), deferred.profiles.join())
  assert.deepEqual(deferred.reasons.map((reason: { rule: string; source: string }) => [reason.rule, reason.source]), [['us-fl.hours', SOURCE.citation]])

  // The dispatcher applies it too.
  const created = json(await service.app.inject({ method: 'POST', url: '/api/v2/triggers', headers: bearer(org.key), payload: { campaign: 'offers', contact: { phone: MIAMI } } })).data
  await service.app.workers!.dispatcher.runOnce()
  assert.deepEqual((await taskOf(service.app, org.key, created.task_id)).waiting, { for: 'law', until: '2026-01-05T14:00:00.000Z' })

  const disabled = await service.app.inject({ method: 'POST', url: '/admin/v1/calling-law/rules/us-fl.hours/disable', headers: admin, payload: { reason: 'test' } })
  assert.equal(disabled.statusCode, 200, disabled.body)
  assert.equal(json(disabled).data.rule, null)
  assert.equal((await dryRun()).decision, 'allowed', "the TCPA's 08:00 still holds, and it is 08:30")

  const removed = await service.app.inject({ method: 'DELETE', url: '/admin/v1/calling-law/rules/us-fl.hours/override', headers: admin })
  assert.equal(removed.statusCode, 204)
  const back = await dryRun()
  assert.equal(back.decision, 'allowed')
  assert.ok(back.profiles.includes('us-fl@2026-12-04'))
  assert.equal((await service.app.inject({ method: 'DELETE', url: '/admin/v1/calling-law/rules/us-fl.hours/override', headers: admin })).statusCode, 404)

  const log = json(await service.app.inject({ method: 'GET', url: '/admin/v1/audit-log', headers: admin })).data
  assert.deepEqual(
    log.filter((entry: { action: string }) => entry.action === 'calling_law.rule_changed').map((entry: { details: { override: string } }) => entry.details.override),
    ['removed', 'disabled', 'replaced'],
  )
})

test("a holiday rule replaced is applied with its new dates, not the shipped ones", async () => {
  const ascension = { phone: '+33142229001', channel: 'voice', campaign: 'offers', at: '2026-05-14T10:00:00Z' }
  const ask = async () => json(await service.app.inject({ method: 'POST', url: '/api/v2/contactability', headers: bearer(org.key), payload: ascension })).data
  assert.deepEqual((await ask()).reasons.map((reason: { code: string }) => reason.code), ['legal_holiday'])
  const replaced = await put('fr.public_holidays', {
    rule: { id: 'fr.public_holidays', kind: 'forbidden_dates', purposes: ['marketing'], channels: ['voice'], holidays: [{ name: 'Noël', month: 12, day: 25 }], source: SOURCE, effective_from: '2023-03-01' },
    reason: 'a test of the cache',
  })
  assert.equal(replaced.statusCode, 200, replaced.body)
  assert.equal((await ask()).decision, 'allowed')
  assert.equal((await service.app.inject({ method: 'DELETE', url: '/admin/v1/calling-law/rules/fr.public_holidays/override', headers: admin })).statusCode, 204)
  assert.equal((await ask()).decision, 'deferred')
})

test('a rule added to a profile binds; refused per field, for an unknown profile, or with another id than the path', async () => {
  const added = await put('us-fl.sunday_rest', {
    rule: { id: 'us-fl.sunday_rest', kind: 'forbidden_dates', purposes: ['marketing'], channels: ['voice'], holidays: [{ name: 'New Year', month: 1, day: 5 }], source: SOURCE, effective_from: '2026-01-01' },
    reason: 'a local rule of the operator',
  })
  assert.equal(added.statusCode, 200, added.body)
  const decision = await dryRun()
  assert.equal(decision.decision, 'deferred')
  assert.deepEqual(decision.reasons.map((reason: { code: string; rule: string }) => `${reason.code}:${reason.rule}`), ['legal_holiday:us-fl.sunday_rest'])
  assert.equal((await service.app.inject({ method: 'DELETE', url: '/admin/v1/calling-law/rules/us-fl.sunday_rest/override', headers: admin })).statusCode, 204)

  const bad = await put('us-fl.hours', {
    rule: { id: 'us-fl.hours', kind: 'hours', purposes: ['sales'], channels: ['voice'], windows: [{ days: ['mon'], start: '21:00', end: '08:00' }], source: SOURCE, effective_from: '2021-07-01' },
    reason: 'x',
  })
  assert.equal(bad.statusCode, 422)
  const locs = json(bad).detail.map((d: { loc: (string | number)[] }) => d.loc.join('.'))
  assert.ok(locs.some((loc: string) => loc.startsWith('body.rule')), locs.join())
  const unknownKind = await put('us-fl.hours', { rule: { id: 'us-fl.hours', kind: 'sometimes' }, reason: 'x' })
  assert.deepEqual(json(unknownKind).detail.map((d: { type: string; loc: string[] }) => [d.type, d.loc.join('.')]), [['union_tag_invalid', 'body.rule']])
  assert.equal((await put('xx.hours', { rule: { id: 'xx.hours', kind: 'consent', purposes: ['marketing'], channels: ['voice'], consent_kinds: ['express'], source: SOURCE, effective_from: '2021-07-01' }, reason: 'x' })).statusCode, 404)
  assert.equal((await put('us-fl.hours', { rule: { id: 'us-fl.other', kind: 'consent', purposes: ['marketing'], channels: ['voice'], consent_kinds: ['express'], source: SOURCE, effective_from: '2021-07-01' }, reason: 'x' })).statusCode, 400)
  assert.equal((await service.app.inject({ method: 'POST', url: '/admin/v1/calling-law/rules/us-fl.nothing/disable', headers: admin, payload: { reason: 'x' } })).statusCode, 404)
  assert.equal((await service.app.inject({ method: 'GET', url: '/admin/v1/calling-law', headers: bearer(org.key) })).statusCode, 403)
})
