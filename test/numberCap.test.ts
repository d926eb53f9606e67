/**
 * An organization's cap on attempts to one number across its campaigns,
 * through the whole service with an injected clock: set by the operator, a
 * task held by it waits (and says so) until the cap allows, and still
 * expires on time; off, it changes nothing and writes nothing; two workers on
 * one database never both take a number's last place; a start the provider
 * deferred does not count; erasure and the history sweep leave nothing of
 * the number behind.
 */
import assert from 'node:assert/strict'
import { after, before, beforeEach, describe, test } from 'node:test'
import {
  acceptedTrigger,
  bearer,
  createCampaign,
  json,
  onPostgres,
  OPERATOR_TOKEN,
  PHONE_HASH_KEY,
  seedOrganization,
  startCalledBackService,
  startService,
  tablesHolding,
  taskOf,
  type TestService,
} from './support/service.ts'
import { lockNumberAttempts, saveNumberAttempts } from '../src/store/numberAttempts.ts'
import { type FakeVapi, startFakeVapi } from './fakes/vapi.ts'

const HOUR = 3_600_000
const ALWAYS_OPEN = { timezone: 'contact', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '00:00', end: '24:00' }] }
const admin = bearer(OPERATOR_TOKEN)

let service: TestService
let now = Date.parse('2026-06-01T10:00:00Z')
let organizations = 0
let numbers = 0

before(async () => {
  service = await startService({ now: () => now })
})
after(() => service.close())
beforeEach(() => {
  now = Date.parse('2026-06-01T10:00:00Z')
})

/** An organization with three always-open campaigns whose calls end at once, reached, and the cap given (none if null). */
async function organization(cap: { per_24h?: number | null; per_local_day?: number | null } | null, expireAfterS = 3 * 24 * 3600) {
  const org = await seedOrganization(service.app, { routingKey: `first-${++organizations}`, schedule: ALWAYS_OPEN })
  const settings = { channel: 'voice', schedule: ALWAYS_OPEN, provider_config: { outcomes: ['completed'], duration_ms: 0 }, attempts: { expire_after_s: expireAfterS } }
  const campaigns = [
    await createCampaign(service.app, org.orgId, { routing_key: `reminder-${organizations}`, ...settings }),
    await createCampaign(service.app, org.orgId, { routing_key: `survey-${organizations}`, ...settings }),
    await createCampaign(service.app, org.orgId, { routing_key: `offer-${organizations}`, ...settings }),
  ]
  if (cap !== null) {
    const patched = await service.app.inject({ method: 'PATCH', url: `/admin/v1/organizations/${org.orgId}`, headers: admin, payload: { contact_cap: cap } })
    assert.equal(patched.statusCode, 200, patched.body)
  }
  const trigger = (campaign: number, phone: string) =>
    acceptedTrigger(service.app, org.key, {
      campaign: campaigns[campaign]!.routing_key,
      ids: [{ source: 'crm', type: 'lead', value: `lead-${Math.random()}` }],
      contact: { phone, first_name: 'Capperine' },
    })
  return { ...org, trigger, task: (id: string) => taskOf(service.app, org.key, id) }
}

/** A London number of its own for each test, so that none counts another's calls. */
const newNumber = () => `+4420794${String(70000 + ++numbers).padStart(5, '0')}`

/** Moves the clock and lets the workers do what is due. */
async function at(instant: string | number) {
  now = typeof instant === 'string' ? Date.parse(instant) : instant
  await service.app.workers!.dispatcher.runOnce()
}

const numberRows = async (orgId: string) =>
  (await service.db.query<{ n: number }>('SELECT count(*)::int AS n FROM number_attempts WHERE org_id = $1', [orgId]))[0]!.n

describe('the setting', () => {
  test('is off by default, set and shown by the admin API, and refused per field when invalid', async () => {
    const org = await organization(null)
    const url = `/admin/v1/organizations/${org.orgId}`
    assert.deepEqual(json(await service.app.inject({ method: 'GET', url, headers: admin })).data.contact_cap, { per_24h: null, per_local_day: null })

    const set = await service.app.inject({ method: 'PATCH', url, headers: admin, payload: { contact_cap: { per_24h: 3 } } })
    assert.equal(set.statusCode, 200, set.body)
    assert.deepEqual(json(set).data.contact_cap, { per_24h: 3, per_local_day: null }, 'a figure left out is no such rule')
    assert.deepEqual(json(await service.app.inject({ method: 'GET', url, headers: admin })).data.contact_cap, { per_24h: 3, per_local_day: null })
    const renamed = await service.app.inject({ method: 'PATCH', url, headers: admin, payload: { name: 'Renamed' } })
    assert.deepEqual(json(renamed).data.contact_cap, { per_24h: 3, per_local_day: null }, 'a change of something else keeps it')

    for (const [cap, field] of [
      [{ per_24h: 0 }, 'body.contact_cap.per_24h'],
      [{ per_local_day: 1001 }, 'body.contact_cap.per_local_day'],
      [{ per_24h: 'three' }, 'body.contact_cap.per_24h'],
      [{ per_24h: 2, per_week: 5 }, 'body.contact_cap'],
    ] as const) {
      const refused = await service.app.inject({ method: 'PATCH', url, headers: admin, payload: { contact_cap: cap } })
      assert.equal(refused.statusCode, 422, refused.body)
      assert.ok(json(refused).detail.some((detail: { loc: string[] }) => detail.loc.join('.').startsWith(field)), `${JSON.stringify(cap)}: ${refused.body}`)
    }

    const off = await service.app.inject({ method: 'PATCH', url, headers: admin, payload: { contact_cap: { per_24h: null, per_local_day: null } } })
    assert.deepEqual(json(off).data.contact_cap, { per_24h: null, per_local_day: null })
  })
})

describe('a third campaign\'s task for a number called twice today (at most 2 in 24 hours)', () => {
  test('waits, saying why, until the first call is a day old, then starts', async () => {
    const org = await organization({ per_24h: 2 })
    const phone = newNumber()
    const first = await org.trigger(0, phone)
    await at('2026-06-01T10:00:00Z')
    const second = await org.trigger(1, phone)
    await at('2026-06-01T11:00:00Z')
    for (const { task_id } of [first, second]) assert.equal((await org.task(task_id)).attempts, 1)

    const third = await org.trigger(2, phone)
    await at('2026-06-01T12:00:00Z')
    const held = await org.task(third.task_id)
    assert.equal(held.status, 'pending')
    assert.equal(held.attempts, 0)
    assert.deepEqual(held.waiting, { for: 'contact_cap', until: '2026-06-02T10:00:00.000Z' })
    assert.equal(held.next_attempt_at, '2026-06-02T10:00:00.000Z')

    await at('2026-06-02T09:59:59.999Z')
    assert.equal((await org.task(third.task_id)).attempts, 0)
    await at('2026-06-02T10:00:00Z')
    const started = await org.task(third.task_id)
    assert.equal(started.attempts, 1)
    assert.equal(started.waiting, undefined, 'no longer held')
    assert.equal(started.interactions.length, 1)
  })

  test('another number of the organization is not held by it', async () => {
    const org = await organization({ per_24h: 1 })
    const phone = newNumber()
    await org.trigger(0, phone)
    await at(now)
    const other = await org.trigger(1, newNumber())
    await at(now + 1_000)
    assert.equal((await org.task(other.task_id)).attempts, 1)
  })

  test('a cap per local day holds it until midnight where the contact is', async () => {
    const org = await organization({ per_local_day: 1 })
    const phone = newNumber()
    await org.trigger(0, phone)
    // 23:00 in London (BST).
    await at('2026-06-01T22:00:00Z')
    const next = await org.trigger(1, phone)
    await at('2026-06-01T22:30:00Z')
    assert.deepEqual((await org.task(next.task_id)).waiting, { for: 'contact_cap', until: '2026-06-01T23:00:00.000Z' })
    await at('2026-06-01T23:00:00Z')
    assert.equal((await org.task(next.task_id)).attempts, 1)
  })

  test('tasks of one batch count each other: only the cap\'s worth start', async () => {
    const org = await organization({ per_24h: 2 })
    const phone = newNumber()
    const created = [await org.trigger(0, phone), await org.trigger(1, phone), await org.trigger(2, phone)]
    await at(now)
    const attempts = await Promise.all(created.map(async ({ task_id }) => (await org.task(task_id)).attempts))
    assert.deepEqual(attempts, [1, 1, 0])
  })
})

test('with the cap off, a third call the same day starts at once and nothing is written for the cap', async () => {
  const org = await organization(null)
  const phone = newNumber()
  for (const campaign of [0, 1, 2]) {
    const created = await org.trigger(campaign, phone)
    await at(now + HOUR)
    const task = await org.task(created.task_id)
    assert.equal(task.attempts, 1)
    assert.equal(task.waiting, undefined)
  }
  assert.equal(await numberRows(org.orgId), 0)
  const [held] = await service.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM tasks WHERE org_id = $1 AND held_by IS NOT NULL`, [org.orgId])
  assert.equal(held!.n, 0)
})

test('a held task still expires on time', async () => {
  const org = await organization({ per_24h: 1 }, 2 * 3600)
  const phone = newNumber()
  await org.trigger(0, phone)
  await at('2026-06-01T10:00:00Z')
  const held = await org.trigger(1, phone)
  await at('2026-06-01T10:30:00Z')
  const waiting = await org.task(held.task_id)
  assert.equal(waiting.expires_at, '2026-06-01T12:00:00.000Z')
  assert.deepEqual(waiting.waiting, { for: 'contact_cap', until: '2026-06-01T12:00:00.000Z' }, 'due again no later than its expiry')
  await at('2026-06-01T12:00:00Z')
  const expired = await org.task(held.task_id)
  assert.equal(expired.status, 'completed')
  assert.equal(expired.outcome, 'expired')
  assert.equal(expired.completed_at, '2026-06-01T12:00:00.000Z')
  assert.equal(expired.attempts, 0)
  assert.equal(expired.waiting, undefined)
})

test('two workers dispatching one organization\'s tasks at once never exceed the cap', async () => {
  const peer = await service.peer()
  const org = await organization({ per_24h: 2 })
  const phones = Array.from({ length: 10 }, newNumber)
  // More tasks than a worker takes in a batch (256 on PostgreSQL), every number in every batch.
  const TASKS = 900
  for (let first = 0; first < TASKS; first += 300) {
    const triggers = Array.from({ length: 300 }, (_, n) => ({
      campaign: `${['reminder', 'survey', 'offer'][(first + n) % 3]}-${organizations}`,
      ids: [{ source: 'crm', type: 'lead', value: `race-${first + n}` }],
      contact: { phone: phones[(first + n) % phones.length] },
    }))
    const accepted = await service.app.inject({ method: 'POST', url: '/api/v2/triggers/batch', headers: bearer(org.key), payload: { triggers } })
    assert.equal(accepted.statusCode, 200, accepted.body.slice(0, 500))
  }
  for (let round = 0; round < 3; round++) {
    now += 1_000
    await Promise.all([service.app.workers!.dispatcher.runOnce(), peer.workers!.dispatcher.runOnce()])
  }
  const rows = await service.db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM interactions WHERE org_id = $1 GROUP BY to_phone ORDER BY to_phone`,
    [org.orgId],
  )
  assert.deepEqual(
    rows.map((row) => row.n),
    phones.map(() => 2),
  )
  const [held] = await service.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM tasks WHERE org_id = $1 AND held_by = 'contact_cap' AND status = 'pending'`, [
    org.orgId,
  ])
  assert.equal(held!.n, TASKS - 2 * phones.length)
})

test(
  "a number's row, once a dispatcher has it, waits for its attempts to be recorded before another reads it",
  { skip: onPostgres ? false : 'needs PostgreSQL (DATABASE_URL): PGlite is one session, where no two transactions ever wait for each other' },
  async () => {
    // Two dispatch batches of one number meeting: the first has read its row and not committed yet.
    const number = { orgId: 'org_race', phone: newNumber() }
    const key = Buffer.from(PHONE_HASH_KEY)
    const startedAt = Date.parse('2026-06-01T10:00:00Z')
    let releaseFirst!: () => void
    const firstHolds = new Promise<void>((resolve) => (releaseFirst = resolve))
    let firstHas!: () => void
    const firstLocked = new Promise<void>((resolve) => (firstHas = resolve))
    const first = service.db.transaction(async (tx) => {
      assert.deepEqual([...(await lockNumberAttempts(tx, key, [number], startedAt)).values()], [[]])
      firstHas()
      await firstHolds
      await saveNumberAttempts(tx, key, [{ ...number, startedAt: [startedAt] }], startedAt)
    })
    await firstLocked
    let secondRead = false
    const second = service.db.transaction(async (tx) => {
      const read = await lockNumberAttempts(tx, key, [number], startedAt + 1)
      secondRead = true
      return [...read.values()]
    })
    await waitingForALock()
    assert.equal(secondRead, false, 'the second waits for the first')
    releaseFirst()
    await first
    assert.deepEqual(await second, [[startedAt]], 'and then reads the attempt the first recorded')
  },
)

/** Until a session of the database waits for a lock another holds (PostgreSQL). */
async function waitingForALock(): Promise<void> {
  for (let polls = 0; ; polls++) {
    const [row] = await service.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`)
    if (row!.n > 0) return
    assert.ok(polls < 1_000, 'no session waits for a lock')
    await new Promise((resolve) => setImmediate(resolve))
  }
}

describe('what the cap keeps of a number', () => {
  test('is its digest only, and goes with the person on erasure', async () => {
    const org = await organization({ per_24h: 2 })
    const phone = newNumber()
    await org.trigger(0, phone)
    await at(now)
    assert.equal(await numberRows(org.orgId), 1)
    assert.ok(!(await tablesHolding(service.db, phone)).includes('number_attempts'), 'never the number in the clear')
    const key = json(
      await service.app.inject({ method: 'POST', url: `/admin/v1/organizations/${org.orgId}/api-keys`, headers: admin, payload: { name: 'dpo', scopes: ['contacts:erase'] } }),
    ).data.key
    const erased = await service.app.inject({ method: 'POST', url: '/api/v2/contacts/erase', headers: bearer(key), payload: { phone } })
    assert.equal(erased.statusCode, 200, erased.body)
    assert.equal(await numberRows(org.orgId), 0)
  })

  test('goes by the history sweep once none of its calls matters to the cap', async () => {
    const org = await organization({ per_24h: 2, per_local_day: 2 })
    const phone = newNumber()
    await org.trigger(0, phone)
    await at(now)
    // The sweep's service-wide bounds are looked at a minute apart.
    await at(now + 25 * HOUR)
    assert.equal(await numberRows(org.orgId), 1, 'a call of 25 hours ago may still count on the local day')
    await at(now + 2 * HOUR)
    assert.equal(await numberRows(org.orgId), 0)
  })
})

describe('a start the provider deferred (Vapi, 429)', () => {
  const API_KEY = 'vapi-private-key-for-tests'
  const WEBHOOK_SECRET = 'vapi-hmac-secret-for-tests'
  const ASSISTANT_ID = '5b0a4a08-133c-4146-9315-0984f8c6be80'
  const PHONE_NUMBER_ID = '0a9d2a1c-8d3e-4e8f-9b1d-2f1e7c3a4b5c'
  let vapi: FakeVapi
  let withVapi: TestService
  let org: Awaited<ReturnType<typeof seedOrganization>>

  before(async () => {
    vapi = await startFakeVapi({ apiKey: API_KEY, webhookSecret: WEBHOOK_SECRET, assistantIds: [ASSISTANT_ID], phoneNumberIds: [PHONE_NUMBER_ID], now: () => now })
    const started = await startCalledBackService({
      now: () => now,
      apiBaseUrls: { vapiApiBaseUrl: vapi.url },
      secrets: { VAPI_API_KEY: API_KEY, VAPI_WEBHOOK_SECRET: WEBHOOK_SECRET },
    })
    withVapi = started.service
    org = started.org
    vapi.setServerUrl(`${started.baseUrl}/providers/vapi/webhook`)
  })
  after(async () => {
    await withVapi.close()
    await vapi.close()
  })

  test('does not count against the cap: the attempt made again starts, and only then is the number at its cap', async () => {
    const patched = await withVapi.app.inject({ method: 'PATCH', url: `/admin/v1/organizations/${org.orgId}`, headers: admin, payload: { contact_cap: { per_24h: 1 } } })
    assert.equal(patched.statusCode, 200, patched.body)
    const campaigns: { routing_key: string }[] = []
    for (const routingKey of ['vapi-first', 'vapi-second']) {
      campaigns.push(
        await createCampaign(withVapi.app, org.orgId, {
          routing_key: routingKey,
          channel: 'voice',
          schedule: ALWAYS_OPEN,
          provider: 'vapi',
          provider_config: { assistant_id: ASSISTANT_ID, phone_number_id: PHONE_NUMBER_ID },
        }),
      )
    }
    const phone = newNumber()
    const trigger = (campaign: number) =>
      acceptedTrigger(withVapi.app, org.key, { campaign: campaigns[campaign]!.routing_key, ids: [{ source: 'crm', type: 'lead', value: `v-${campaign}` }], contact: { phone } })
    const first = await trigger(0)
    vapi.failNext({ status: 429, retryAfter: '20' })
    await withVapi.app.workers!.dispatcher.runOnce()
    const deferred = await taskOf(withVapi.app, org.key, first.task_id)
    assert.equal(deferred.attempts, 0)
    assert.equal(deferred.next_attempt_at, new Date(now + 20_000).toISOString())
    const [record] = await withVapi.db.query<{ started_at: Date[] }>('SELECT started_at FROM number_attempts WHERE org_id = $1', [org.orgId])
    assert.deepEqual(record!.started_at, [], 'the withdrawn attempt is forgotten')

    now += 20_000
    await withVapi.app.workers!.dispatcher.runOnce()
    assert.equal((await taskOf(withVapi.app, org.key, first.task_id)).attempts, 1, 'made again, not held by its own deferred attempt')
    const second = await trigger(1)
    await withVapi.app.workers!.dispatcher.runOnce()
    assert.equal((await taskOf(withVapi.app, org.key, second.task_id)).waiting?.for, 'contact_cap')
  })
})
