/** Concurrent triggers share commits, and each is answered for its own rows. */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { GroupCommitter } from '../src/services/groupCommitter.ts'
import { bearer, json, seedOrganization, startService, type TestService } from './support/service.ts'

let service: TestService

before(async () => {
  service = await startService()
})
after(() => service.close())

test('300 concurrent triggers: 300 distinct triggers and tasks, each answered with its own ids', async () => {
  const org = await seedOrganization(service.app)
  const responses = await Promise.all(
    Array.from({ length: 300 }, (_, i) =>
      service.app.inject({
        method: 'POST',
        url: '/api/v2/triggers',
        headers: { ...bearer(org.key), 'content-type': 'application/json', 'x-request-id': `burst-${i}` },
        payload: { campaign: 'screening', ids: [{ source: 'ats', type: 'n', value: String(i) }], contact: { phone: '+14155552671' } },
      }),
    ),
  )
  assert.ok(responses.every((response) => response.statusCode === 201))
  const accepted = responses.map((response) => json(response))
  assert.equal(new Set(accepted.map((body) => body.data.id)).size, 300)
  const rows = await service.db.query<{ id: string; request_id: string; value: string; task_id: string }>(
    `SELECT t.id, t.request_id, t.ids->0->>'value' AS value, k.id AS task_id
     FROM triggers t JOIN tasks k ON k.trigger_id = t.id WHERE t.org_id = $1`,
    [org.orgId],
  )
  assert.equal(rows.length, 300)
  const byId = new Map(rows.map((row) => [row.id, row]))
  accepted.forEach((body, i) => {
    const row = byId.get(body.data.id)
    assert.equal(row?.request_id, `burst-${i}`)
    assert.equal(row?.value, String(i))
    assert.equal(row?.task_id, body.data.task_id)
  })
})

test('items that arrive during a commit share the next one; a poisoned batch is retried item by item', async () => {
  const commits: number[][] = []
  const committer = new GroupCommitter<number, number>(
    async (items) => {
      commits.push(items)
      await new Promise((resolve) => setImmediate(resolve))
      if (items.includes(13)) throw Object.assign(new Error('rejected'), { code: '22P02' })
      return items.map((item) => item * 2)
    },
    { maxBatch: 100, maxBatchWeight: 1000, weigh: () => 1, maxInFlight: 1, flushAtLength: Infinity, retryAlone: (error) => (error as { code?: string }).code === '22P02' },
  )
  const first = committer.submit(0)
  await new Promise((resolve) => setImmediate(resolve))
  const results = await Promise.allSettled([first, ...Array.from({ length: 19 }, (_, i) => committer.submit(i + 1))])
  assert.deepEqual(commits[0], [0], 'an item submitted alone is committed alone, without waiting')
  assert.equal(commits[1]?.length, 19, 'the items submitted during that commit went together')
  results.forEach((result, i) => {
    if (i === 13) assert.equal(result.status, 'rejected')
    else assert.deepEqual(result, { status: 'fulfilled', value: i * 2 })
  })
  await committer.drained()
})

test('a batch holds at most maxBatch items and maxBatchWeight of weight, but always one item', async () => {
  const commits: number[][] = []
  const committer = new GroupCommitter<number, number>(
    async (items) => {
      commits.push(items)
      return items
    },
    { maxBatch: 3, maxBatchWeight: 10, weigh: (item) => item, maxInFlight: 1, flushAtLength: Infinity, retryAlone: () => false },
  )
  await Promise.all([1, 1, 1, 1, 4, 5, 20, 2].map((item) => committer.submit(item)))
  assert.deepEqual(commits, [[1, 1, 1], [1, 4, 5], [20], [2]])
})

test('a failure that leaves the outcome unknown fails the whole batch, without retrying', async () => {
  let calls = 0
  const committer = new GroupCommitter<number, number>(
    async () => {
      calls++
      throw Object.assign(new Error('connection lost'), { code: 'ECONNRESET' })
    },
    { maxBatch: 100, maxBatchWeight: 1000, weigh: () => 1, maxInFlight: 1, flushAtLength: Infinity, retryAlone: () => false },
  )
  const results = await Promise.allSettled([1, 2, 3].map((item) => committer.submit(item)))
  assert.ok(results.every((result) => result.status === 'rejected'))
  assert.equal(calls, 1, 'the three items submitted together were one commit, not retried')
})

test('a queue that reaches flushAtLength starts its commit at once, while further items are still arriving', async () => {
  const commits: number[][] = []
  const committer = new GroupCommitter<number, number>(
    async (items) => {
      commits.push(items)
      return items
    },
    { maxBatch: 100, maxBatchWeight: 1000, weigh: () => 1, maxInFlight: 1, flushAtLength: 3, retryAlone: () => false },
  )
  const pending = [1, 2, 3, 4, 5].map((item) => committer.submit(item))
  assert.deepEqual(commits, [[1, 2, 3]], 'the third item started a commit before the others were submitted')
  await Promise.all(pending)
  assert.deepEqual(commits, [[1, 2, 3], [4, 5]])
})
