/**
 * Each organization's rate limit on /api/v2: the token bucket's rules (table
 * tests), and the limit as clients meet it, with an injected clock: one
 * process, two processes on one database, batches, the operator's settings.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { type Bucket, lease, leaseChunk, rateLimitField, rateLimitPolicyField, refill } from '../src/domain/rateLimit.ts'
import { parsePrometheusText, sampleValue } from './support/prometheus.ts'
import { bearer, json, OPERATOR_TOKEN, seedOrganization, startService, type TestService } from './support/service.ts'

const POLICY = { perSecond: 100, burst: 200 }
const T0 = Date.parse('2026-06-01T10:00:00Z')

describe('the token bucket', () => {
  test('refills at its rate up to its burst, and never for a clock that went back', () => {
    const cases: [string, Bucket, number, number][] = [
      ['half a second: 50 more', { tokens: 10, at: T0 }, T0 + 500, 60],
      ['long idle: the burst, no more', { tokens: 10, at: T0 }, T0 + 60_000, 200],
      ['a debt is paid back first', { tokens: -300, at: T0 }, T0 + 1_000, -200],
      ['a clock behind the bucket adds nothing', { tokens: 10, at: T0 }, T0 - 5_000, 10],
      ['a new bucket (infinitely many) is full', { tokens: Number.POSITIVE_INFINITY, at: T0 }, T0, 200],
    ]
    for (const [name, bucket, now, tokens] of cases) assert.equal(refill(bucket, POLICY, now).tokens, tokens, name)
  })

  test('a lease takes what is needed and up to `extra` more, or nothing and says how long to wait', () => {
    const full = { tokens: 200, at: T0 }
    const cases: [string, Bucket, number, number, { granted: number; tokens: number; waitMs: number }][] = [
      ['one and a chunk from a full bucket', full, 1, 10, { granted: 11, tokens: 189, waitMs: 0 }],
      ['the chunk is cut to what is there', { tokens: 5.5, at: T0 }, 1, 10, { granted: 5, tokens: 0.5, waitMs: 0 }],
      ['a prefetch takes whole tokens only', { tokens: 3.5, at: T0 }, 0, 10, { granted: 3, tokens: 0.5, waitMs: 0 }],
      ['not enough: nothing, and the wait for the missing tokens', { tokens: 0.5, at: T0 }, 1, 10, { granted: 0, tokens: 0.5, waitMs: 5 }],
      ['a batch of 50 with 20 there waits 300 ms', { tokens: 20, at: T0 }, 50, 10, { granted: 0, tokens: 20, waitMs: 300 }],
      ['a batch beyond the burst, from a full bucket: taken, in debt', full, 1_000, 10, { granted: 1_000, tokens: -800, waitMs: 0 }],
      ['a batch beyond the burst waits for a full bucket', { tokens: 150, at: T0 }, 1_000, 10, { granted: 0, tokens: 150, waitMs: 500 }],
      ['in debt: the wait covers the debt', { tokens: -800, at: T0 }, 1, 10, { granted: 0, tokens: -800, waitMs: 8_010 }],
    ]
    for (const [name, bucket, need, extra, expected] of cases) {
      const taken = lease(bucket, POLICY, T0, need, extra)
      assert.deepEqual({ granted: taken.granted, tokens: taken.bucket.tokens, waitMs: Math.round(taken.waitMs) }, expected, name)
    }
  })

  test('a tenth of a second is leased at a time; the fields say the policy and what is left', () => {
    assert.equal(leaseChunk(POLICY), 10)
    assert.equal(leaseChunk({ perSecond: 3, burst: 5 }), 1)
    assert.equal(rateLimitPolicyField(POLICY), '"org";q=100;w=1;cts-burst=200')
    assert.equal(rateLimitField(POLICY, 57.8), '"org";r=57;t=0')
    assert.equal(rateLimitField(POLICY, 0.5), '"org";r=0;t=1')
    assert.equal(rateLimitField(POLICY, -800), '"org";r=0;t=9')
  })
})

describe('the limit on /api/v2', () => {
  let service: TestService
  let now = T0

  before(async () => {
    service = await startService({ now: () => now, rateLimit: POLICY })
  })
  after(() => service.close())

  const get = (app: FastifyInstance, key: string) => app.inject({ method: 'GET', url: '/api/v2/key', headers: bearer(key) })

  test('the 201st request of a burst is 429 rate_limited, with Retry-After and the RateLimit fields; a second later 100 more pass', async () => {
    const org = await seedOrganization(service.app)
    now += 60_000
    for (let n = 1; n <= 200; n++) {
      const response = await get(service.app, org.key)
      assert.equal(response.statusCode, 200, `request ${n}`)
      assert.equal(response.headers['ratelimit-policy'], '"org";q=100;w=1;cts-burst=200')
    }
    const refused = await get(service.app, org.key)
    assert.equal(refused.statusCode, 429)
    assert.equal(json(refused).error.code, 'rate_limited')
    assert.match(json(refused).error.message, /100 requests a second \(bursts of 200\)/)
    assert.equal(refused.headers['retry-after'], '1')
    assert.equal(refused.headers['ratelimit'], '"org";r=0;t=1')
    assert.equal(refused.headers['ratelimit-policy'], '"org";q=100;w=1;cts-burst=200')
    const metrics = parsePrometheusText((await service.app.inject({ method: 'GET', url: '/metrics', headers: bearer(OPERATOR_TOKEN) })).body)
    assert.equal(sampleValue(metrics, 'conversation_trigger_rate_limited_requests_total', 'conversation_trigger_rate_limited_requests_total'), 1)
    // Another organization is not held back by this one.
    const other = await seedOrganization(service.app)
    assert.equal((await get(service.app, other.key)).statusCode, 200)
    now += 1_000
    let passed = 0
    while ((await get(service.app, org.key)).statusCode === 200) passed++
    assert.equal(passed, 100)
  })

  test('a batch takes a token per trigger, and one refused takes none', async () => {
    const org = await seedOrganization(service.app)
    now += 60_000
    const batch = (size: number) =>
      service.app.inject({
        method: 'POST',
        url: '/api/v2/triggers/batch',
        headers: { ...bearer(org.key), 'content-type': 'application/json' },
        payload: { triggers: Array.from({ length: size }, () => ({ campaign: org.routingKey, contact: { phone: '+442079460958' }, test_mode: true })) },
      })
    assert.equal((await batch(150)).statusCode, 200)
    const tooMany = await batch(60)
    assert.equal(tooMany.statusCode, 429)
    assert.equal(json(tooMany).error.code, 'rate_limited')
    // 50 were left: they are there for a batch of 50.
    assert.equal((await batch(50)).statusCode, 200)
    assert.equal((await batch(1)).statusCode, 429)
  })

  test('an answer refused before the limit is checked (a scope the key lacks, a body too large) carries the fields and counts; an unknown key learns nothing', async () => {
    const org = await seedOrganization(service.app, { scopes: ['triggers:read', 'suppressions:manage'] })
    now += 60_000
    const forbidden = await service.app.inject({
      method: 'POST',
      url: '/api/v2/triggers',
      headers: { ...bearer(org.key), 'content-type': 'application/json' },
      payload: { campaign: org.routingKey, contact: { phone: '+442079460958' } },
    })
    assert.equal(forbidden.statusCode, 403)
    assert.equal(forbidden.headers['ratelimit-policy'], '"org";q=100;w=1;cts-burst=200')
    assert.equal(forbidden.headers['ratelimit'], '"org";r=199;t=0')
    const tooLarge = await service.app.inject({
      method: 'POST',
      url: '/api/v2/suppressions',
      headers: { ...bearer(org.key), 'content-type': 'application/json' },
      payload: JSON.stringify({ phone: 'x'.repeat(2 * 1024 * 1024) }),
    })
    assert.equal(tooLarge.statusCode, 413)
    assert.equal(tooLarge.headers['ratelimit'], '"org";r=198;t=0')
    const unknown = await get(service.app, 'ctk_live_' + 'x'.repeat(40))
    assert.equal(unknown.statusCode, 401)
    assert.equal(unknown.headers['ratelimit'], undefined)
  })

  test("the operator sets an organization's own limit, shown on the organization and applied from the next lease", async () => {
    const org = await seedOrganization(service.app)
    now += 60_000
    const changed = await service.app.inject({
      method: 'PATCH',
      url: `/admin/v1/organizations/${org.orgId}`,
      headers: bearer(OPERATOR_TOKEN),
      payload: { rate_limit: { per_second: 5, burst: 10 } },
    })
    assert.equal(changed.statusCode, 200, changed.body)
    assert.deepEqual(json(changed).data.rate_limit, { per_second: 5, burst: 10 })
    let passed = 0
    while ((await get(service.app, org.key)).statusCode === 200) passed++
    assert.equal(passed, 10)
    const refused = await get(service.app, org.key)
    assert.equal(refused.headers['ratelimit-policy'], '"org";q=5;w=1;cts-burst=10')
    // Back to the default.
    const reset = await service.app.inject({ method: 'DELETE', url: `/admin/v1/organizations/${org.orgId}/rate-limit`, headers: bearer(OPERATOR_TOKEN) })
    assert.deepEqual(json(reset).data.rate_limit, { per_second: null, burst: null })
    const invalid = await service.app.inject({
      method: 'PATCH',
      url: `/admin/v1/organizations/${org.orgId}`,
      headers: bearer(OPERATOR_TOKEN),
      payload: { rate_limit: { per_second: 0, burst: 10 } },
    })
    assert.equal(invalid.statusCode, 422)
  })

  test('two API processes on one database together let through the limit, within 10 %', async () => {
    const org = await seedOrganization(service.app)
    const peer = await service.peer()
    now += 60_000
    // Three seconds of requests every 2 ms, each process taking every other one: the bucket allows its burst and 100 a second.
    const start = now
    let passed = 0
    for (let n = 0; now < start + 3_000; n++, now += 2) {
      if ((await get(n % 2 === 0 ? service.app : peer, org.key)).statusCode === 200) passed++
    }
    const allowed = POLICY.burst + POLICY.perSecond * 3
    assert.ok(Math.abs(passed - allowed) <= allowed / 10, `${passed} let through, against ${allowed}`)
  })
})
