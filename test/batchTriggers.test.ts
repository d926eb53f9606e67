/** POST /api/v2/triggers/batch: each trigger accepted or refused on its own, the accepted ones committed together. */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { bearer, json, OPERATOR_TOKEN, seedOrganization, startService, type TestService } from './support/service.ts'

let service: TestService
let org: Awaited<ReturnType<typeof seedOrganization>>

before(async () => {
  service = await startService()
  org = await seedOrganization(service.app)
})
after(() => service.close())

const trigger = (n: number, extra: Record<string, unknown> = {}) => ({
  campaign: org.routingKey,
  ids: [{ source: 'ATS', type: 'Candidate', value: `batch-${n}` }],
  contact: { first_name: 'Ada', phone: '+44 20 7946 0958' },
  context: { row: n },
  ...extra,
})

function postBatch(payload: unknown, key = org.key) {
  return service.app.inject({
    method: 'POST',
    url: '/api/v2/triggers/batch',
    headers: { ...bearer(key), 'content-type': 'application/json' },
    payload: typeof payload === 'string' ? payload : JSON.stringify(payload),
  })
}

async function countTriggers(where = ''): Promise<number> {
  const [row] = await service.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM triggers WHERE org_id = $1 ${where}`, [org.orgId])
  return row!.n
}

describe('a batch of 1,000 with 3 invalid triggers', () => {
  const INVALID = new Map<number, unknown>([
    [0, { contact: { phone: '020 7946 0958' } }],
    [517, { campaign: 'no-such-campaign' }],
    [999, { not_before: 'tomorrow morning', expires_at: '2026-01-01T00:00:00Z' }],
  ])
  const batch = () =>
    Array.from({ length: 1000 }, (_, n) => ({ ...trigger(n, INVALID.get(n) as Record<string, unknown>), idempotency_key: `row-${n}` }))

  test('answers 997 201s and 3 422s in request order, and records exactly 997 triggers with their tasks', async () => {
    const before = await countTriggers()
    const response = await postBatch({ triggers: batch() })
    assert.equal(response.statusCode, 200, response.body)
    const { data, metadata } = json(response)
    assert.equal(typeof metadata.request_id, 'string')
    assert.equal(data.length, 1000)
    data.forEach((result: any, n: number) => {
      assert.equal(result.index, n)
      assert.equal(result.status, INVALID.has(n) ? 422 : 201, JSON.stringify(result))
    })
    assert.deepEqual(data[0].detail.map((entry: any) => entry.loc), [['body', 'contact', 'phone']])
    assert.equal(data[0].detail[0].type, 'value_error')
    assert.deepEqual(data[517].detail.map((entry: any) => entry.loc), [['body', 'campaign']])
    // Every problem of one trigger at once, in field order, as the single endpoint reports them.
    assert.deepEqual(data[999].detail.map((entry: any) => entry.loc), [['body', 'not_before'], ['body', 'expires_at']])
    const accepted = data.filter((result: any) => result.status === 201)
    for (const result of accepted) {
      assert.deepEqual(Object.keys(result.data).sort(), ['created_at', 'id', 'status', 'task_id'])
      assert.equal(result.replayed, undefined)
    }
    assert.equal(new Set(accepted.map((result: any) => result.data.id)).size, 997)
    assert.equal((await countTriggers()) - before, 997)
    const [tasks] = await service.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM tasks WHERE id = ANY($1::text[]) AND status = 'pending'`,
      [accepted.map((result: any) => result.data.task_id)],
    )
    assert.equal(tasks!.n, 997)
    // Each trigger as the single endpoint would record it: here, item 42.
    const one = json(await service.app.inject({ method: 'GET', url: `/api/v2/triggers/${data[42].data.id}`, headers: bearer(org.key) })).data
    assert.deepEqual(one.ids, [{ source: 'ats', type: 'candidate', value: 'batch-42' }])
    assert.equal(one.contact.phone, '+442079460958')
    assert.deepEqual(one.context, { row: 42 })
  })

  test('sent again with the same keys, records nothing new and answers each first result, marked replayed', async () => {
    const first = json(await service.app.inject({ method: 'GET', url: `/api/v2/tasks?source=ats&type=candidate&value=batch-7`, headers: bearer(org.key) })).data
    const before = await countTriggers()
    const response = await postBatch({ triggers: batch() })
    assert.equal(response.statusCode, 200, response.body)
    const { data } = json(response)
    assert.equal(await countTriggers(), before)
    assert.equal(data.filter((result: any) => result.replayed === true).length, 997)
    assert.equal(data[7].data.task_id, first[0].id)
    assert.deepEqual(
      [0, 517, 999].map((n) => data[n].status),
      [422, 422, 422],
    )
  })
})

describe('idempotency keys per trigger', () => {
  test('a key given twice in one request refuses the second; a key reused with another trigger is 409 for that trigger only', async () => {
    const first = await postBatch({ triggers: [{ ...trigger(2000), idempotency_key: 'once' }] })
    assert.equal(json(first).data[0].status, 201)
    const response = await postBatch({
      triggers: [
        { ...trigger(2001), idempotency_key: 'twice' },
        { ...trigger(2002), idempotency_key: 'twice' },
        { ...trigger(2003), idempotency_key: 'once' },
        trigger(2004),
      ],
    })
    const { data } = json(response)
    assert.deepEqual(
      data.map((result: any) => result.status),
      [201, 422, 409, 201],
    )
    assert.deepEqual(data[1].detail[0].loc, ['body', 'idempotency_key'])
    assert.match(data[1].detail[0].msg, /item 0/)
    assert.equal(data[2].error.code, 'idempotency_key_reused')
  })

  test('a key of a single request answers the same trigger sent in a batch, and the other way round', async () => {
    const single = await service.app.inject({
      method: 'POST',
      url: '/api/v2/triggers',
      headers: { ...bearer(org.key), 'content-type': 'application/json', 'idempotency-key': 'shared-1' },
      payload: trigger(3000),
    })
    assert.equal(single.statusCode, 201)
    const batched = json(await postBatch({ triggers: [{ ...trigger(3000), idempotency_key: 'shared-1' }] })).data[0]
    assert.equal(batched.replayed, true)
    assert.deepEqual(batched.data, json(single).data)
  })

  test('an invalid idempotency_key is a 422 at the field', async () => {
    const { data } = json(await postBatch({ triggers: [{ ...trigger(4000), idempotency_key: 'has spaces' }] }))
    assert.equal(data[0].status, 422)
    assert.deepEqual(data[0].detail[0].loc, ['body', 'idempotency_key'])
  })
})

describe('the request as a whole', () => {
  test('a body that is not a list of 1 to 1,000 objects is one 422', async () => {
    for (const [payload, loc] of [
      [{ triggers: [1, 'two'] }, ['body', 'triggers', 0]],
      [{ triggers: [] }, ['body', 'triggers']],
      [{ triggers: { campaign: 'x' } }, ['body', 'triggers']],
      [[trigger(1)], ['body']],
      [{}, ['body', 'triggers']],
      [{ triggers: Array.from({ length: 1001 }, (_, n) => trigger(n)) }, ['body', 'triggers']],
    ] as const) {
      const response = await postBatch(payload)
      assert.equal(response.statusCode, 422, JSON.stringify(payload).slice(0, 80))
      assert.deepEqual(json(response).detail[0].loc, loc)
    }
  })

  test('a body over 16 MiB is 413; one over the single endpoint\'s 1 MiB is accepted', async () => {
    const large = { triggers: Array.from({ length: 300 }, (_, n) => trigger(5000 + n, { context: { note: 'x'.repeat(4000) } })) }
    const accepted = await postBatch(large)
    assert.equal(accepted.statusCode, 200)
    assert.ok(json(accepted).data.every((result: any) => result.status === 201))
    const tooLarge = await postBatch({ triggers: [trigger(1, { context: { note: 'x'.repeat(17 * 1024 * 1024) } })] })
    assert.equal(tooLarge.statusCode, 413)
    assert.equal(json(tooLarge).error.code, 'payload_too_large')
    assert.match(json(tooLarge).error.message, /16 MiB/)
  })

  test('needs triggers:write; a revoked key is 401 and records nothing, even when every trigger is invalid', async () => {
    const admin = bearer(OPERATOR_TOKEN)
    const readOnly = json(
      await service.app.inject({
        method: 'POST',
        url: `/admin/v1/organizations/${org.orgId}/api-keys`,
        headers: admin,
        payload: { name: 'reader', scopes: ['triggers:read'] },
      }),
    ).data
    assert.equal((await postBatch({ triggers: [trigger(1)] }, readOnly.key)).statusCode, 403)

    const doomed = json(
      await service.app.inject({ method: 'POST', url: `/admin/v1/organizations/${org.orgId}/api-keys`, headers: admin, payload: { name: 'doomed' } }),
    ).data
    assert.equal(json(await postBatch({ triggers: [trigger(6000)] }, doomed.key)).data[0].status, 201)
    await service.db.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [doomed.id])
    const before = await countTriggers()
    assert.equal((await postBatch({ triggers: [trigger(6001), trigger(6002)] }, doomed.key)).statusCode, 401)
    assert.equal((await postBatch({ triggers: [{ campaign: 'no-such-campaign' }] }, doomed.key)).statusCode, 401)
    assert.equal(await countTriggers(), before)
  })
})

describe('a key revoked while a batch is being recorded', () => {
  test('the triggers committed before answer 201, the others 401 each; the next request is 401', async () => {
    const issued = json(
      await service.app.inject({ method: 'POST', url: `/admin/v1/organizations/${org.orgId}/api-keys`, headers: bearer(OPERATOR_TOKEN), payload: { name: 'revoked-midway' } }),
    ).data
    // The batch's second commit waits for its first, after which the key is revoked.
    const db = service.db as { query: (sql: string, params?: readonly unknown[]) => Promise<unknown[]> }
    const query = db.query
    let firstCommit: Promise<unknown[]> | undefined
    db.query = async (sql, params) => {
      if (!sql.includes('INSERT INTO triggers')) return query.call(service.db, sql, params)
      if (firstCommit === undefined) {
        firstCommit = query.call(service.db, sql, params).then(async (rows) => {
          await query.call(service.db, 'UPDATE api_keys SET revoked_at = now() WHERE id = $1', [issued.id])
          return rows
        })
        return firstCommit
      }
      await firstCommit.catch(() => {})
      return query.call(service.db, sql, params)
    }
    try {
      // Large enough triggers (36 KB) that 300 of them take two commits (of 8 MiB at most) on either database.
      const note = 'x'.repeat(9_000)
      const large = (n: number) => trigger(7000 + n, { context: { a: note, b: note, c: note, d: note } })
      const response = await postBatch({ triggers: Array.from({ length: 300 }, (_, n) => large(n)) }, issued.key)
      assert.equal(response.statusCode, 200, response.body)
      const statuses = json(response).data.map((result: any) => result.status)
      const recorded = statuses.filter((status: number) => status === 201).length
      assert.ok(recorded > 0 && recorded < 300, `${recorded} recorded`)
      assert.deepEqual(statuses, [...Array(recorded).fill(201), ...Array(300 - recorded).fill(401)])
      assert.equal(json(response).data[299].error.code, 'unauthorized')
      const [row] = await service.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM triggers WHERE api_key_id = $1`, [issued.id])
      assert.equal(row!.n, recorded)
    } finally {
      db.query = query
    }
    assert.equal((await postBatch({ triggers: [trigger(7999)] }, issued.key)).statusCode, 401)
  })
})

describe('the directories a batch reads', () => {
  test('a batch that finds the campaign and source caches cold reads each once, not once per trigger', async () => {
    const { CampaignDirectory } = await import('../src/services/campaignDirectory.ts')
    const { SourceDirectory } = await import('../src/services/sourceDirectory.ts')
    const reads: string[] = []
    const counting = Object.create(service.db, {
      query: {
        value: (sql: string, params?: readonly unknown[]) => {
          reads.push(sql)
          return service.db.query(sql, params)
        },
      },
    })
    const campaigns = new CampaignDirectory(counting, Date.now)
    const sources = new SourceDirectory(counting, Date.now)
    const chosen = await Promise.all(Array.from({ length: 50 }, () => campaigns.choose(org.orgId, org.routingKey, undefined)))
    await Promise.all(Array.from({ length: 50 }, () => sources.sourcesOf(org.orgId)))
    assert.ok(chosen.every((choice) => 'campaign' in choice))
    assert.equal(reads.length, 2)
    // A change in this process is not answered by a read begun before it.
    const cold = new CampaignDirectory(counting, Date.now)
    const before = cold.choose(org.orgId, org.routingKey, undefined)
    cold.forget(org.orgId, org.routingKey)
    await Promise.all([before, cold.choose(org.orgId, org.routingKey, undefined)])
    assert.equal(reads.length, 4)
  })
})
