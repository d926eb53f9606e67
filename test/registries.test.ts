/**
 * Do-not-call registries: a file's lines read as numbers (table), a load
 * through the command line and the service, a number on a loaded registry
 * blocked for a marketing campaign and called for an informational one, a
 * written consent overriding it, a reload replacing the list atomically, and
 * a deletion leaving no number behind.
 */
import assert from 'node:assert/strict'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { COMMAND_LINE } from '../src/domain/audit.ts'
import { registryLine } from '../src/domain/registryFile.ts'
import { CallingLaw } from '../src/services/callingLaw.ts'
import { loadRegistry, type RegistryOperations, removeRegistry } from '../src/services/registries.ts'
import { beginGenerationLoad, copyGenerationNumbers, endGenerationLoad, registryDigest } from '../src/store/registries.ts'
import { runCli } from './support/cli.ts'
import { bearer, createCampaign, json, OPERATOR_TOKEN, PHONE_HASH_KEY, seedOrganization, startService, taskOf, type TestService } from './support/service.ts'

const ALWAYS_OPEN = { timezone: 'contact', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '00:00', end: '24:00' }] }
const SIMULATED = { outcomes: ['completed'], duration_ms: 0 }
const admin = bearer(OPERATOR_TOKEN)

describe('a registry file, a line at a time', () => {
  const table: [string, 'nanp' | undefined, ReturnType<typeof registryLine>][] = [
    ['+1 305 777 1234', undefined, { kind: 'number', e164: '+13057771234' }],
    ['+44 (0)20 7946 0958', undefined, { kind: 'number', e164: '+442079460958' }],
    ['+442079460958', undefined, { kind: 'number', e164: '+442079460958' }],
    ['3057771234', undefined, { kind: 'refused' }],
    ['3057771234', 'nanp', { kind: 'number', e164: '+13057771234' }],
    ['305,7771234', 'nanp', { kind: 'number', e164: '+13057771234' }],
    ['1-305-777-1234', 'nanp', { kind: 'number', e164: '+13057771234' }],
    ['(305) 777-1234\r', 'nanp', { kind: 'number', e164: '+13057771234' }],
    ['0305771234', 'nanp', { kind: 'refused' }],
    ['3051771234', 'nanp', { kind: 'refused' }],
    ['305777123', 'nanp', { kind: 'refused' }],
    ['+0123456789', undefined, { kind: 'refused' }],
    ['+1234567', undefined, { kind: 'refused' }],
    ['+1234567890123456', undefined, { kind: 'refused' }],
    ['call me', 'nanp', { kind: 'refused' }],
    ['', 'nanp', { kind: 'none' }],
    ['   ', undefined, { kind: 'none' }],
    ['# National DNC, 2026-11-30', 'nanp', { kind: 'none' }],
  ]
  for (const [line, plan, expected] of table) test(`${JSON.stringify(line)}${plan === undefined ? '' : ` (${plan})`}`, () => assert.deepEqual(registryLine(line, plan), expected))
})

describe('a loaded registry, through the dispatcher', () => {
  let service: TestService
  let now = Date.parse('2026-01-05T18:00:00Z')
  let ops: RegistryOperations
  let org: Awaited<ReturnType<typeof seedOrganization>>
  before(async () => {
    service = await startService({ now: () => now })
    ops = { db: service.db, now: () => now, phoneHashKey: Buffer.from(PHONE_HASH_KEY), law: new CallingLaw({ now: () => now }) }
    org = await seedOrganization(service.app)
  })
  after(() => service.close())

  const trigger = async (routingKey: string, phone: string) => {
    const response = await service.app.inject({
      method: 'POST',
      url: '/api/v2/triggers',
      headers: { ...bearer(org.key), 'content-type': 'application/json' },
      payload: { campaign: routingKey, ids: [{ source: 'crm', type: 'lead', value: `${routingKey}-${phone}-${Math.random()}` }], contact: { phone } },
    })
    assert.equal(response.statusCode, 201, response.body)
    return json(response).data as { task_id: string }
  }
  const run = async () => {
    now += 60_000
    await service.app.workers!.dispatcher.runOnce()
  }
  /** Loaded as the command line loads it, in a process of its own: the service sees it within a second. */
  const load = async (numbers: string[]) => {
    const report = await loadRegistry(ops, COMMAND_LINE, { orgId: null, name: 'US National DNC', purposes: ['marketing'], overriddenBy: ['express_written'], listDate: '2026-01-04', plan: 'nanp', lines: numbers })
    now += 1_000
    return report
  }

  test('blocks a marketing call to a listed number, calls an informational one, yields to written consent; a reload replaces it whole', async () => {
    // Seattle numbers: inside Washington's hours at 10:00 local.
    const listed = '+12062221001'
    const other = '+12062221002'
    const report = await load(['# the registry', '206,2221001', '2062221001', '1 206 222 1003', 'not a number'])
    assert.equal(report.registry.numbers, 2, 'each number once')
    assert.equal(report.numbersRead, 3)
    assert.equal(report.refused, 1)
    assert.deepEqual(report.refusedSamples, [{ line: 5, text: 'not a number' }])

    const marketing = await createCampaign(service.app, org.orgId, { routing_key: 'renewals', channel: 'voice', schedule: ALWAYS_OPEN, provider_config: SIMULATED, compliance: { purpose: 'marketing', consent: { voice: [] } } })
    const informational = await createCampaign(service.app, org.orgId, { routing_key: 'reminders', channel: 'voice', schedule: ALWAYS_OPEN, provider_config: SIMULATED, compliance: { purpose: 'informational' } })
    const blocked = await trigger(marketing.routing_key, listed)
    const called = await trigger(informational.routing_key, listed)
    const unlisted = await trigger(marketing.routing_key, other)
    await run()
    const blockedTask = await taskOf(service.app, org.key, blocked.task_id)
    assert.equal(blockedTask.outcome, 'not_permitted')
    assert.deepEqual(blockedTask.decision.reasons, [{ code: 'registry_listed', rule: null, source: 'US National DNC', registry_id: report.registry.id }])
    assert.equal((await taskOf(service.app, org.key, called.task_id)).attempts, 1)
    assert.equal((await taskOf(service.app, org.key, unlisted.task_id)).attempts, 1)

    // The dry run says the same.
    const dry = json(await service.app.inject({ method: 'POST', url: '/api/v2/contactability', headers: bearer(org.key), payload: { phone: listed, channel: 'voice', campaign: 'renewals' } })).data
    assert.equal(dry.decision, 'blocked')

    // Written consent on file overrides the registry.
    const consent = await service.app.inject({
      method: 'POST',
      url: `/admin/v1/organizations/${org.orgId}/consents`,
      headers: admin,
      payload: { phone: listed, channel: 'voice', purpose: 'marketing', kind: 'express_written', source: 'web_form', captured_at: '2025-12-01T00:00:00Z' },
    })
    assert.equal(consent.statusCode, 201, consent.body)
    const overridden = await trigger(marketing.routing_key, listed)
    await run()
    const overriddenTask = await taskOf(service.app, org.key, overridden.task_id)
    assert.equal(overriddenTask.attempts, 1)
    assert.ok(overriddenTask.interactions[0].decision.reasons.some((reason: { code: string }) => reason.code === 'registry_overridden'))

    // A reload without the number: the next marketing task to it is called; the old generation's numbers are gone.
    const reloaded = await load(['2062229999'])
    assert.equal(reloaded.registry.id, report.registry.id)
    assert.equal(reloaded.replacedGeneration, report.registry.generation)
    const generations = await service.db.query<{ generation: string }>('SELECT DISTINCT generation FROM registry_numbers')
    assert.deepEqual(generations.map((row) => Number(row.generation)), [reloaded.registry.generation])
    const after = await trigger(marketing.routing_key, '+12062221003')
    await run()
    assert.equal((await taskOf(service.app, org.key, after.task_id)).attempts, 1)

    const listedNow = json(await service.app.inject({ method: 'GET', url: '/admin/v1/registries', headers: admin })).data
    assert.deepEqual(listedNow.map((registry: { name: string; numbers: number }) => [registry.name, registry.numbers]), [['US National DNC', 1]])
    await removeRegistry(ops, COMMAND_LINE, report.registry.id)
    assert.equal((await service.db.query<{ n: number }>('SELECT count(*)::int AS n FROM registry_numbers'))[0]!.n, 0)
    const log = json(await service.app.inject({ method: 'GET', url: '/admin/v1/audit-log', headers: admin })).data
    assert.deepEqual(
      log.filter((entry: { target: string }) => entry.target === report.registry.id).map((entry: { action: string }) => entry.action),
      ['registry.deleted', 'registry.loaded', 'registry.loaded'],
    )
  })

  test('keeps no number in the clear: only the first 8 bytes of its keyed digest', async () => {
    const report = await load(['2062221111'])
    const [row] = await service.db.query<{ digest: string }>('SELECT digest FROM registry_numbers WHERE generation = $1', [report.registry.generation])
    assert.equal(BigInt(row!.digest), registryDigest(Buffer.from(PHONE_HASH_KEY), '+12062221111'))
  })

  test("a load cut short leaves its numbers a day at most: the sweep deletes them, and at once those of a replaced list whose deletion was cut short", async () => {
    const inForce = await load(['2062223001'])
    // A load whose process was killed while copying: its generation recorded as loading, some numbers in.
    const killed = await beginGenerationLoad(service.db, now)
    await copyGenerationNumbers(service.db, killed, new BigInt64Array([1n, 2n, 3n]))
    // A replaced list whose process was killed while deleting it: numbers no registry names and no load holds.
    const cutShort = await beginGenerationLoad(service.db, now)
    await copyGenerationNumbers(service.db, cutShort, new BigInt64Array([4n, 5n]))
    await endGenerationLoad(service.db, cutShort)
    const generations = async () =>
      (await service.db.query<{ generation: string | number }>('SELECT DISTINCT generation FROM registry_numbers')).map((row) => Number(row.generation)).sort((a, b) => a - b)
    await run()
    assert.deepEqual(await generations(), [inForce.registry.generation, killed].sort((a, b) => a - b), 'a load may still be copying: kept for a day')
    now += 24 * 3_600_000
    await run()
    assert.deepEqual(await generations(), [inForce.registry.generation])
    assert.deepEqual(await service.db.query('SELECT generation FROM registry_loads'), [])
    assert.equal((await service.db.query<{ n: number }>('SELECT count(*)::int AS n FROM registry_numbers'))[0]!.n, 1, 'the list in force is whole')
  })
})

test('registry load from the command line: a file of the US registry\'s numbers', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'registry-'))
  try {
    const file = path.join(dir, 'dnc.txt')
    await writeFile(file, ['2062221001', '206,2221002', 'oops', ''].join('\n'))
    const env = { PATH: process.env.PATH, DATA_DIR: path.join(dir, 'data'), LOG_LEVEL: 'warn' }
    const loaded = await runCli(['registry', 'load', '--name', 'US DNC', '--file', file, '--purposes', 'marketing', '--overridden-by', 'express_written', '--plan', 'nanp', '--list-date', '2026-11-30'], env)
    assert.equal(loaded.code, 0, loaded.stderr)
    const report = JSON.parse(loaded.stdout)
    assert.equal(report.numbers, 2)
    assert.equal(report.refused, 1)
    assert.deepEqual(report.refused_samples, [{ line: 3, text: 'oops' }])
    const refused = await runCli(['registry', 'load', '--name', 'US DNC', '--file', file, '--purposes', 'sales'], env)
    assert.equal(refused.code, 1)
    assert.match(refused.stderr, /--purposes: "sales" is not one of informational, transactional, healthcare, marketing/)
    const listed = JSON.parse((await runCli(['registry', 'list'], env)).stdout)
    assert.deepEqual(listed.map((registry: { name: string; list_date: string }) => [registry.name, registry.list_date]), [['US DNC', '2026-11-30']])
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
})
