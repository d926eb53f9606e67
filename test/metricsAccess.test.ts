/**
 * Who may scrape /metrics: the metrics token (METRICS_TOKEN), which reads
 * /metrics and nothing else, or the operator token; never an organization's
 * key or nobody. Without a metrics token, only the operator token scrapes.
 * And the old unprefixed names, served beside the new ones for one release
 * (METRICS_LEGACY_NAMES), as exact copies marked deprecated.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { type Family, parsePrometheusText } from './support/prometheus.ts'
import { bearer, json, METRICS_TOKEN, OPERATOR_TOKEN, seedOrganization, startService, type TestService } from './support/service.ts'

let service: TestService
let org: Awaited<ReturnType<typeof seedOrganization>>

before(async () => {
  service = await startService({ metricsToken: METRICS_TOKEN })
  org = await seedOrganization(service.app)
})
after(() => service.close())

const scrape = (headers: Record<string, string>, app = service.app) => app.inject({ method: 'GET', url: '/metrics', headers })

function assertRefused(response: { statusCode: number; body: string }, status: 401 | 403) {
  assert.equal(response.statusCode, status, response.body)
  assert.equal(json(response as never).error.code, status === 401 ? 'unauthorized' : 'forbidden')
}

describe('GET /metrics', () => {
  test('answers the metrics token and the operator token', async () => {
    for (const token of [METRICS_TOKEN, OPERATOR_TOKEN]) {
      const response = await scrape(bearer(token))
      assert.equal(response.statusCode, 200, response.body)
      assert.match(response.headers['content-type'] as string, /^text\/plain; version=0\.0\.4/)
      assert.ok(parsePrometheusText(response.body).has('conversation_trigger_http_request_duration_seconds'))
    }
  })

  test("refuses an organization's key (403), and nobody or an unknown token (401)", async () => {
    const refused = await scrape(bearer(org.key))
    assertRefused(refused, 403)
    assert.match(json(refused).error.message, /METRICS_TOKEN/)
    assertRefused(await scrape({}), 401)
    assertRefused(await scrape(bearer(`${METRICS_TOKEN}x`)), 401)
  })
})

describe('the metrics token grants nothing else', () => {
  test('refused on the admin API, reading or changing, with nothing changed', async () => {
    const reading = await service.app.inject({ method: 'GET', url: '/admin/v1/queues', headers: bearer(METRICS_TOKEN) })
    assertRefused(reading, 403)
    assert.match(json(reading).error.message, /GET \/metrics only/)
    const organizations = async () => (await service.db.query<{ count: number }>('SELECT count(*)::int AS count FROM organizations'))[0]!.count
    const before = await organizations()
    const creating = await service.app.inject({ method: 'POST', url: '/admin/v1/organizations', headers: bearer(METRICS_TOKEN), payload: { name: 'Scraper Inc' } })
    assertRefused(creating, 403)
    assert.equal(await organizations(), before)
  })

  test('refused on the client API', async () => {
    assertRefused(await service.app.inject({ method: 'GET', url: '/api/v2/key', headers: bearer(METRICS_TOKEN) }), 403)
    const trigger = await service.app.inject({
      method: 'POST',
      url: '/api/v2/triggers',
      headers: { ...bearer(METRICS_TOKEN), 'content-type': 'application/json' },
      payload: { campaign: 'screening', contact: { phone: '+14155552671' } },
    })
    assertRefused(trigger, 403)
  })
})

test('without METRICS_TOKEN, only the operator token scrapes: any other token is unknown', async () => {
  const plain = await startService()
  try {
    assertRefused(await scrape(bearer(METRICS_TOKEN), plain.app), 401)
    assert.equal((await scrape(bearer(OPERATOR_TOKEN), plain.app)).statusCode, 200)
  } finally {
    await plain.close()
  }
})

describe('the old names, for one release', () => {
  const familiesOf = async (app = service.app) => parsePrometheusText((await scrape(bearer(OPERATOR_TOKEN), app)).body)
  /** Samples as comparable lines: the sample's name without the prefix, its labels and value. */
  const samplesOf = (family: Family, prefix: string) =>
    family.samples.map((sample) => `${sample.name.slice(prefix.length)}${JSON.stringify(sample.labels)} ${sample.value}`).sort()

  test('not served unless asked for', async () => {
    const names = [...(await familiesOf()).keys()]
    assert.deepEqual(
      names.filter((name) => !/^(conversation_trigger_|process_|nodejs_)/.test(name)),
      [],
    )
  })

  test('served as copies of the prefixed families, marked deprecated; the families added since and the process metrics are not copied', async () => {
    const legacy = await startService({ metricsLegacyNames: true })
    try {
      // Counted things to copy: a request of each answer, a trigger refused.
      await legacy.app.inject({ method: 'GET', url: '/metrics' })
      const families = await familiesOf(legacy.app)
      // The same scrape holds both names, so their values are of one instant.
      const prefixed = [...families.keys()].filter((name) => name.startsWith('conversation_trigger_'))
      const copied = prefixed.filter((name) => families.has(name.slice('conversation_trigger_'.length)))
      assert.deepEqual(
        prefixed.filter((name) => !copied.includes(name)),
        ['conversation_trigger_tasks_oldest_dispatchable_age_seconds'],
        'every family but the one added with the prefix has its old name',
      )
      for (const name of copied) {
        const now = families.get(name)!
        const old = families.get(name.slice('conversation_trigger_'.length))!
        assert.equal(old.type, now.type, name)
        assert.equal(old.help, `Deprecated: renamed ${name}; this name is gone in the next release. ${now.help}`)
        assert.deepEqual(samplesOf(old, ''), samplesOf(now, 'conversation_trigger_'), name)
      }
      assert.ok(copied.length >= 20)
      assert.ok(families.get('http_request_duration_seconds')!.samples.some((sample) => sample.labels.status_code === '401'))
      assert.deepEqual(
        [...families.keys()].filter((name) => /process_|nodejs_/.test(name) && !/^(process_|nodejs_)/.test(name)),
        [],
        'the process metrics keep their one name',
      )
    } finally {
      await legacy.close()
    }
  })
})
