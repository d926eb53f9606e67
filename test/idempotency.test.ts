/**
 * Idempotency-Key on POST /api/v2/triggers: a retry gets the first answer and
 * records nothing; a reused key with another body, or one still in flight, is
 * 409; a storm of retries across two API processes records one trigger.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { after, before, test } from 'node:test'
import { newId } from '../src/domain/ids.ts'
import { requestHash, type TriggerRequest } from '../src/services/triggerIntake.ts'
import { reserveKeys } from '../src/store/idempotency.ts'
import { insertTriggersWithTasks } from '../src/store/triggers.ts'
import { cliArguments, ROOT } from './support/cli.ts'
import { bearer, freePort, json, onPostgres, OPERATOR_TOKEN, PHONE_HASH_KEY, seedOrganization, startService, type TestService } from './support/service.ts'

let service: TestService
let org: Awaited<ReturnType<typeof seedOrganization>>
let now = Date.parse('2026-06-01T10:00:00Z')

before(async () => {
  service = await startService({ now: () => now })
  org = await seedOrganization(service.app)
})
after(() => service.close())

const body = (phone = '+442079460958') => ({ campaign: 'screening', ids: [{ source: 'ats', type: 'candidate', value: 'c-9' }], contact: { phone } })

const post = (key: string | undefined, payload: object, apiKey = org.key) =>
  service.app.inject({
    method: 'POST',
    url: '/api/v2/triggers',
    headers: { ...bearer(apiKey), 'content-type': 'application/json', ...(key === undefined ? {} : { 'idempotency-key': key }) },
    payload,
  })

async function countTriggers(requestIdPrefix?: string): Promise<number> {
  const [row] = await service.db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM triggers t JOIN tasks k ON k.trigger_id = t.id WHERE t.org_id = $1 ${requestIdPrefix ? 'AND t.request_id LIKE $2' : ''}`,
    requestIdPrefix ? [org.orgId, `${requestIdPrefix}%`] : [org.orgId],
  )
  return row!.n
}

test('a retry with the same key and body gets the first answer, byte for byte, and records nothing', async () => {
  const before = await countTriggers()
  const first = await post('order-1', body())
  assert.equal(first.statusCode, 201)
  assert.equal(first.headers['idempotent-replayed'], undefined)
  // The same request, written differently: spacing and field order do not matter.
  const retry = await service.app.inject({
    method: 'POST',
    url: '/api/v2/triggers',
    headers: { ...bearer(org.key), 'content-type': 'application/json', 'idempotency-key': 'order-1' },
    payload: `{ "contact": {"phone": "+442079460958"},  "ids": [{"source": "ats", "type": "candidate", "value": "c-9"}], "campaign": "screening" }`,
  })
  assert.equal(retry.statusCode, 201)
  assert.equal(retry.headers['idempotent-replayed'], 'true')
  assert.equal(JSON.stringify(json(retry).data), JSON.stringify(json(first).data))
  assert.equal(await countTriggers(), before + 1)
})

test('the same key with another body is 409 idempotency_key_reused; keys are per organization', async () => {
  assert.equal((await post('order-2', body())).statusCode, 201)
  const reused = await post('order-2', body('+14155552671'))
  assert.equal(reused.statusCode, 409)
  assert.equal(json(reused).error.code, 'idempotency_key_reused')
  const other = await seedOrganization(service.app)
  assert.equal((await post('order-2', body('+14155552671'), other.key)).statusCode, 201)
})

test('a key still in flight is 409 idempotency_key_in_use; a refused request does not use its key up', async () => {
  // The same request, reserved by another process that is still recording it.
  const hash = requestHash(body() as TriggerRequest)
  assert.equal((await reserveKeys(service.db, org.orgId, [{ key: 'order-3', hash, token: 'trg_other' }], now, 60_000, 86_400_000))[0]!.kind, 'reserved')
  const inUse = await post('order-3', body())
  assert.equal(inUse.statusCode, 409)
  assert.equal(json(inUse).error.code, 'idempotency_key_in_use')
  assert.equal(inUse.headers['idempotent-replayed'], undefined)
  // A reservation left by a process that died is taken over once its lease is over.
  now += 60_000
  assert.equal((await post('order-3', body())).statusCode, 201)

  const refused = await post('order-4', { ...body(), campaign: 'nope' })
  assert.equal(refused.statusCode, 422)
  assert.equal((await post('order-4', body())).statusCode, 201)
})

test('a request whose reservation was taken over (it stalled past the lease) records nothing', async () => {
  const hash = createHash('sha256').update('stalled').digest()
  const stalled = newId('trigger', now)
  assert.equal((await reserveKeys(service.db, org.orgId, [{ key: 'order-6', hash, token: stalled }], now, 60_000, 86_400_000))[0]!.kind, 'reserved')
  now += 60_000
  const takenOver = await post('order-6', body())
  assert.equal(takenOver.statusCode, 201)
  // The stalled request's commit comes at last: its trigger is not recorded, and the key keeps the answer given.
  const [ids] = await service.db.query<{ key_id: string; campaign_id: string }>(
    `SELECT k.id AS key_id, c.id AS campaign_id FROM api_keys k JOIN campaigns c ON c.org_id = k.org_id WHERE k.org_id = $1 LIMIT 1`,
    [org.orgId],
  )
  const recorded = await insertTriggersWithTasks(service.db, [
    {
      id: stalled,
      taskId: newId('task', now),
      orgId: org.orgId,
      apiKeyId: ids!.key_id,
      campaignId: ids!.campaign_id,
      contactId: null,
      numberZones: { zones: ['Europe/London'], source: 'country' },
      requestId: 'stalled',
      ids: [],
      contact: { phone: '+442079460958' },
      context: {},
      testMode: false,
      createdAt: new Date(now).toISOString(),
      notBefore: null,
      expiresAt: null,
      dueAt: new Date(now).toISOString(),
      idempotency: { key: 'order-6', response: { id: stalled } },
    },
  ])
  assert.deepEqual(recorded, [{ kind: 'not recorded' }])
  const replay = await post('order-6', body())
  assert.equal(json(replay).data.id, json(takenOver).data.id)
})

test('the same body in another key order or with its defaults written out is the same request', async () => {
  const first = await post('order-7', { ...body(), context: { a: 1, b: { c: 2, d: 3 } } })
  assert.equal(first.statusCode, 201)
  const again = await post('order-7', { ...body(), test_mode: false, context: { b: { d: 3, c: 2 }, a: 1 } })
  assert.equal(again.statusCode, 201)
  assert.equal(again.headers['idempotent-replayed'], 'true')
})

test('a retry gets its first answer even when the organization has changed since (here, new sources)', async () => {
  const changing = await seedOrganization(service.app)
  const first = await post('order-8', body(), changing.key)
  assert.equal(first.statusCode, 201)
  await service.app.inject({
    method: 'POST',
    url: `/admin/v1/organizations/${changing.orgId}/sources`,
    headers: bearer(OPERATOR_TOKEN),
    payload: { name: 'hris', id_types: ['employee'] },
  })
  const retry = await post('order-8', body(), changing.key)
  assert.equal(retry.statusCode, 201)
  assert.equal(json(retry).data.id, json(first).data.id)
})

test('a key is kept 24 hours', async () => {
  const first = json(await post('order-5', body())).data
  now += 24 * 3_600_000 - 1
  assert.equal(json(await post('order-5', body())).data.id, first.id)
  now += 1
  const later = await post('order-5', body())
  assert.equal(later.statusCode, 201)
  assert.notEqual(json(later).data.id, first.id)
  assert.equal(later.headers['idempotent-replayed'], undefined)
})

test('an unusable key is a 422 at the header', async () => {
  for (const key of ['x'.repeat(256), 'with space', 'naïve']) {
    const response = await post(key, body())
    assert.equal(response.statusCode, 422, key)
    assert.deepEqual(json(response).detail[0].loc, ['header', 'idempotency-key'])
  }
  // Reported with the body's problems, first, as FastAPI checks headers first.
  const both = await post('with space', { ...body(), campaign: 5 })
  assert.deepEqual(
    json(both).detail.map((entry: any) => entry.loc),
    [
      ['header', 'idempotency-key'],
      ['body', 'campaign'],
    ],
  )
})

test('a storm of 20 concurrent retries, across two API processes on PostgreSQL, records one trigger and one task', { skip: !onPostgres && 'needs PostgreSQL' }, async () => {
  // A real second API process on the same database, beside this one, on the real clock as this one now is.
  now = Date.now()
  const port = await freePort()
  const child = spawn(process.execPath, cliArguments('serve', '--no-workers'), {
    cwd: ROOT,
    env: { PATH: process.env.PATH, ...service.environment, OPERATOR_TOKEN, PHONE_HASH_KEY, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn' },
    stdio: 'ignore',
  })
  try {
    const base = `http://127.0.0.1:${port}`
    for (let waited = 0; ; waited += 100) {
      if ((await fetch(`${base}/healthz`).catch(() => undefined))?.ok) break
      if (waited > 30_000) throw new Error('the second API process did not start')
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    const storm = body('+12125550100')
    const headers = { ...bearer(org.key), 'content-type': 'application/json', 'idempotency-key': 'storm-1' }
    const answers = await Promise.all(
      Array.from({ length: 20 }, async (_, index) => {
        if (index % 2 === 0) {
          const response = await post('storm-1', storm)
          return { status: response.statusCode, body: json(response) }
        }
        const response = await fetch(`${base}/api/v2/triggers`, { method: 'POST', headers, body: JSON.stringify(storm) })
        return { status: response.status, body: (await response.json()) as any }
      }),
    )
    const accepted = answers.filter((answer) => answer.status === 201)
    assert.ok(accepted.length >= 1)
    assert.ok(answers.every((answer) => answer.status === 201 || answer.body.error?.code === 'idempotency_key_in_use'), JSON.stringify(answers.map((a) => a.status)))
    assert.equal(new Set(accepted.map((answer) => answer.body.data.id)).size, 1)
    const [row] = await service.db.query<{ triggers: number; tasks: number }>(
      `SELECT count(DISTINCT t.id)::int AS triggers, count(k.id)::int AS tasks
       FROM triggers t JOIN tasks k ON k.trigger_id = t.id WHERE t.org_id = $1 AND t.contact->>'phone' = '+12125550100'`,
      [org.orgId],
    )
    assert.deepEqual(row, { triggers: 1, tasks: 1 })
  } finally {
    child.kill('SIGTERM')
  }
})
