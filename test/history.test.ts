/**
 * History ends (services/history.ts): a task completed longer ago than its
 * organization's retention_days leaves no row in any table, its contact on
 * file goes with the last task that named it, what it counted survives in
 * the daily counts, nothing held back by a delivery still to be made is
 * lost, old suppressions keep only their digests, endpoint health and the
 * audit log keep to their own bounds, and the sweep reaches every one of
 * many organizations.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { newId } from '../src/domain/ids.ts'
import { insertEvents } from '../src/store/events.ts'
import { type Receiver, startReceiver } from './support/receiver.ts'
import { bearer, json, OPERATOR_TOKEN, scrapeMetrics, startService, tablesHolding, type TestService } from './support/service.ts'

const ALWAYS_OPEN = { timezone: 'contact', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '00:00', end: '24:00' }] }
const DAY_MS = 86_400_000
const HOUR_MS = 3_600_000
const admin = bearer(OPERATOR_TOKEN)
const BOUNDS = { endpointHealthDays: 10, auditLogDays: 20 }

let service: TestService
let receiver: Receiver
let orgId: string
let key: string
const START = Date.parse('2026-03-02T10:00:00Z')
let now = START

before(async () => {
  service = await startService({ now: () => now, allowPrivateWebhookUrls: true, historyBounds: BOUNDS })
  receiver = await startReceiver()
  orgId = json(await service.app.inject({ method: 'POST', url: '/admin/v1/organizations', headers: admin, payload: { name: 'Clinic' } })).data.id
  key = json(
    await service.app.inject({
      method: 'POST',
      url: `/admin/v1/organizations/${orgId}/api-keys`,
      headers: admin,
      payload: { name: 'scheduler', scopes: ['triggers:write', 'triggers:read', 'suppressions:manage', 'webhooks:manage'] },
    }),
  ).data.key
  const campaign = await service.app.inject({
    method: 'POST',
    url: `/admin/v1/organizations/${orgId}/campaigns`,
    headers: admin,
    payload: {
      routing_key: 'reminder',
      channel: 'voice',
      schedule: ALWAYS_OPEN,
      provider_config: { outcomes: ['completed'], duration_ms: 1000, result: { disposition: 'confirmed', summary: 'Confirmed the visit on Friday.' } },
    },
  })
  assert.equal(campaign.statusCode, 201, campaign.body)
  const source = await service.app.inject({
    method: 'POST',
    url: `/admin/v1/organizations/${orgId}/sources`,
    headers: admin,
    payload: { name: 'ehr', id_types: ['patient'], contact: 'optional' },
  })
  assert.equal(source.statusCode, 201, source.body)
  await service.app.inject({ method: 'POST', url: `/admin/v1/organizations/${orgId}/webhook-endpoints`, headers: admin, payload: { url: receiver.url } })
  const retention = await service.app.inject({ method: 'PATCH', url: `/admin/v1/organizations/${orgId}`, headers: admin, payload: { retention_days: 2 } })
  assert.equal(retention.statusCode, 200, retention.body)
})
after(async () => {
  await service.close()
  await receiver.close()
})

interface Person {
  patient: string
  firstName: string
  email: string
  phone: string
}

const cleo: Person = { patient: 'PT-CLEO-9953', firstName: 'Cleopatrina', email: 'cleopatrina@mailbox.example', phone: '+442079460973' }
const ana: Person = { patient: 'PT-ANA-7731', firstName: 'Anabellota', email: 'anabellota@mailbox.example', phone: '+442079460971' }
const ben: Person = { patient: 'PT-BEN-8842', firstName: 'Benedictus', email: 'benedictus@mailbox.example', phone: '+442079460972' }

async function trigger(person: Person) {
  const response = await service.app.inject({
    method: 'POST',
    url: '/api/v2/triggers',
    headers: { ...bearer(key), 'content-type': 'application/json' },
    payload: {
      campaign: 'reminder',
      ids: [{ source: 'EHR', type: 'Patient', value: person.patient }],
      contact: { first_name: person.firstName, last_name: 'Testperson', phone: person.phone, email: person.email },
      context: { visit: `visit-of-${person.firstName}` },
    },
  })
  assert.equal(response.statusCode, 201, response.body)
  return json(response).data as { id: string; task_id: string }
}

/** A trigger whose call completes and whose webhooks fail their first attempt (the receiver answers 503 from now on). */
async function triggerWithWebhooksFailing(person: Person) {
  receiver.answerAll({ status: 503 })
  const created = await trigger(person)
  await service.app.workers!.dispatcher.runOnce()
  now += 2_000
  await service.app.workers!.dispatcher.runOnce()
  await service.app.workers!.deliverer.runOnce()
  return created
}

const sweep = async () => {
  now += 1_000
  await service.app.workers!.dispatcher.runOnce()
}

/** Runs the workers until every task is completed and every webhook delivered, the clock moving on as they wait. */
async function settleEverything() {
  for (let round = 0; round < 30; round++) {
    await service.app.workers!.dispatcher.runOnce()
    await service.app.workers!.deliverer.runOnce()
    const [open] = await service.db.query<{ n: number }>(
      `SELECT (SELECT count(*) FROM tasks WHERE status <> 'completed') + (SELECT count(*) FROM deliveries WHERE status = 'pending') AS n`,
    )
    if (Number(open!.n) === 0) return
    now += 10_000
  }
  assert.fail('the pipeline did not settle')
}

/** Every id a task's history is known by: its trigger's, its own, its calls' and its events'. */
async function idsOfTask(created: { id: string; task_id: string }): Promise<string[]> {
  const task = json(await service.app.inject({ method: 'GET', url: `/api/v2/tasks/${created.task_id}`, headers: bearer(key) })).data
  const events = json(await service.app.inject({ method: 'GET', url: `/api/v2/tasks/${created.task_id}/events`, headers: bearer(key) })).data
  assert.ok(events.length >= 2)
  return [created.id, created.task_id, ...task.interactions.map((interaction: { id: string }) => interaction.id), ...events.map((event: { id: string }) => event.id)]
}

async function deliveryIdsOf(eventIds: readonly string[]): Promise<string[]> {
  const rows = await service.db.query<{ id: string }>('SELECT unnest(delivery_ids)::text AS id FROM events WHERE id = ANY($1::text[])', [eventIds])
  return rows.map((row) => row.id)
}

async function rowsNamingDeliveries(ids: readonly string[]): Promise<number> {
  const [row] = await service.db.query<{ n: number }>(
    `SELECT (SELECT count(*) FROM deliveries WHERE id = ANY($1::bigint[])) + (SELECT count(*) FROM delivery_attempts WHERE delivery_id = ANY($1::bigint[])) AS n`,
    [ids],
  )
  return Number(row!.n)
}

/** Until a session of the test's database waits for a row lock (on PostgreSQL). */
async function untilSomeoneWaitsForALock() {
  for (let tries = 0; tries < 500; tries++) {
    const [row] = await service.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`,
    )
    if (row!.n > 0) return
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  assert.fail('no session came to wait for a lock')
}

const everywhere = async (needles: readonly string[]) => Object.fromEntries(await Promise.all(needles.map(async (needle) => [needle, await tablesHolding(service.db, needle)])))
const nowhere = (needles: readonly string[]) => Object.fromEntries(needles.map((needle) => [needle, []]))

describe('a task past the retention period', () => {
  test('leaves no row in any table but the daily counts; a younger one is untouched; its contact on file goes with the last task that named it', async () => {
    // The first webhook fails once, so that an attempt is logged and a delivery retried.
    receiver.answer({ status: 500 })
    const ana1 = await trigger(ana)
    const ben1 = await trigger(ben)
    await settleEverything()
    const firstDay = new Date(now).toISOString().slice(0, 10)
    const ana1Ids = await idsOfTask(ana1)
    const ben1Ids = await idsOfTask(ben1)
    const deliveries = await deliveryIdsOf([...ana1Ids, ...ben1Ids])
    assert.equal(deliveries.length, 4)
    assert.ok((await rowsNamingDeliveries(deliveries)) > deliveries.length, 'an attempt was logged')

    now += DAY_MS
    const ana2 = await trigger(ana)
    await settleEverything()
    const ana2Ids = await idsOfTask(ana2)

    // Two days and an hour after the first two completed, a day and an hour after the third.
    now = START + 2 * DAY_MS + HOUR_MS
    await sweep()
    assert.deepEqual(await everywhere([...ana1Ids, ...ben1Ids]), nowhere([...ana1Ids, ...ben1Ids]))
    assert.equal(await rowsNamingDeliveries(deliveries), 0)
    // Ben had no other task: nothing of him is left, his contact on file included.
    const benTraces = [ben.firstName, ben.patient, ben.email, ben.phone, `visit-of-${ben.firstName}`]
    assert.deepEqual(await everywhere(benTraces), nowhere(benTraces))
    // Ana's second task is untouched, and so is her contact, which it names.
    for (const id of ana2Ids) assert.ok((await tablesHolding(service.db, id)).includes('events'), id)
    const kept = json(await service.app.inject({ method: 'GET', url: `/api/v2/tasks/${ana2.task_id}`, headers: bearer(key) })).data
    assert.equal(kept.contact.first_name, ana.firstName)
    assert.equal(kept.interactions[0].result.summary, 'Confirmed the visit on Friday.')
    assert.ok((await tablesHolding(service.db, ana.firstName)).includes('contacts'))

    now = START + 3 * DAY_MS + HOUR_MS
    await sweep()
    const anaTraces = [...ana2Ids, ana.firstName, ana.patient, ana.email, ana.phone, `visit-of-${ana.firstName}`]
    assert.deepEqual(await everywhere(anaTraces), nowhere(anaTraces))
    // With her contact gone, a trigger that names her by id alone finds no one on file.
    const byIdAlone = await service.app.inject({
      method: 'POST',
      url: '/api/v2/triggers',
      headers: { ...bearer(key), 'content-type': 'application/json' },
      payload: { campaign: 'reminder', ids: [{ source: 'ehr', type: 'patient', value: ana.patient }] },
    })
    assert.equal(byIdAlone.statusCode, 422, byIdAlone.body)

    // What they came to survives, by day.
    const counted = await service.app.inject({
      method: 'GET',
      url: `/api/v2/daily-counts?from=${firstDay}&to=${new Date(START + DAY_MS).toISOString().slice(0, 10)}`,
      headers: bearer(key),
    })
    assert.equal(counted.statusCode, 200, counted.body)
    const days = json(counted).data
    assert.deepEqual(
      days.map((day: any) => [day.day, day.campaign, day.channel, day.test_mode, day.tasks.total, day.tasks.reached, day.task_attempts, day.attempts.completed]),
      [
        [firstDay, 'reminder', 'voice', false, 2, 2, 2, 2],
        [new Date(START + DAY_MS).toISOString().slice(0, 10), 'reminder', 'voice', false, 1, 1, 1, 1],
      ],
    )
    assert.equal(days[0].tasks.cancelled, 0)
    assert.ok(days[0].attempt_seconds > 0)
  })

  test('waits for a delivery still to be made, and so does everything after it', async () => {
    const startedAt = now
    // The first task's webhooks fail once, and are due again 5 s later.
    const held = await triggerWithWebhooksFailing(ana)
    // The second's are delivered before then.
    receiver.answerAll({ status: 200 })
    const later = await trigger(ben)
    await service.app.workers!.dispatcher.runOnce()
    now += 2_000
    await service.app.workers!.dispatcher.runOnce()
    await service.app.workers!.deliverer.runOnce()
    const heldIds = await idsOfTask(held)
    const laterIds = await idsOfTask(later)

    // Due, but the first task's webhooks are still to be delivered: neither goes.
    now = startedAt + 2 * DAY_MS + 2 * HOUR_MS
    const [pending] = await service.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM deliveries WHERE status = 'pending'`)
    assert.ok(pending!.n > 0, 'a delivery is still to be made')
    await sweep()
    assert.ok((await tablesHolding(service.db, held.task_id)).includes('tasks'))
    assert.ok((await tablesHolding(service.db, later.task_id)).includes('tasks'))
    const backlog = (await scrapeMetrics(service.app)).get('conversation_trigger_retention_backlog_age_seconds')!
    assert.ok(backlog.samples[0]!.value > 0, 'the sweep says history waits')

    // Delivered at last: both go, once the sweep looks again, a minute after it found them held.
    const heldAt = now
    await settleEverything()
    assert.ok(now - heldAt < 59_000)
    await sweep()
    assert.ok((await tablesHolding(service.db, held.task_id)).includes('tasks'), 'not looked at again within the minute')
    now = heldAt + 60_000
    await sweep()
    assert.deepEqual(await everywhere([...heldIds, ...laterIds]), nowhere([...heldIds, ...laterIds]))
    assert.equal((await scrapeMetrics(service.app)).get('conversation_trigger_retention_backlog_age_seconds')!.samples[0]!.value, 0)
  })

  test(
    'waits for a late result that commits while it runs: its webhook is not lost',
    { skip: process.env.DATABASE_URL === undefined ? 'needs PostgreSQL (DATABASE_URL): on PGlite one transaction runs at a time' : false },
    async () => {
      const startedAt = now
      const late = await trigger(cleo)
      await settleEverything()
      const ids = await idsOfTask(late)
      const [call] = ids.filter((id) => id.startsWith('int_'))
      now = startedAt + 2 * DAY_MS + 2 * HOUR_MS
      let sweeping: Promise<void> | undefined
      const lateEventId = newId('event', now)
      await service.db.transaction(async (tx) => {
        // As a late result does: its call locked first, its event and its delivery written, committed a moment later.
        await tx.query('SELECT id FROM interactions WHERE id = $1 FOR UPDATE', [call])
        sweeping = sweep()
        await untilSomeoneWaitsForALock()
        const event = { id: lateEventId, type: 'interaction.result_added' as const, timestamp: new Date(now).toISOString(), data: { interaction_id: call, task_id: late.task_id, result: { summary: 'late' } } }
        await insertEvents(tx, [{ orgId, event }])
      })
      await sweeping
      assert.ok((await tablesHolding(service.db, late.task_id)).includes('tasks'), 'held while its webhook is to be delivered')
      assert.deepEqual(await tablesHolding(service.db, lateEventId), ['deliveries', 'events'])
      const heldAt = now
      await settleEverything()
      now = Math.max(now, heldAt + 60_000)
      await sweep()
      assert.deepEqual(await everywhere([...ids, lateEventId]), nowhere([...ids, lateEventId]))
    },
  )

  test('is not held back by a delivery left pending to an endpoint that no longer receives; its provider messages are known a week', async () => {
    const startedAt = now
    const held = await triggerWithWebhooksFailing(ana)
    const heldIds = await idsOfTask(held)
    // A settlement that read the endpoint as receiving committed its deliveries just after a disable gave up what was
    // pending: as if the endpoint were disabled with them still pending.
    await service.db.query(`UPDATE webhook_endpoints SET enabled = false WHERE org_id = $1`, [orgId])
    const [pending] = await service.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM deliveries WHERE status = 'pending'`)
    assert.ok(pending!.n > 0, 'a delivery is left pending')
    // Messages its provider delivered for the call, one of them six days before the sweep, one eight.
    const sweptAt = startedAt + 2 * DAY_MS + 2 * HOUR_MS
    const [call] = heldIds.filter((id) => id.startsWith('int_'))
    await service.db.query(
      `INSERT INTO provider_messages (provider, message_id, received_at, interaction_id) VALUES ('whatsapp', 'wamid.recent', $1, $3), ('whatsapp', 'wamid.old', $2, $3)`,
      [new Date(sweptAt - 6 * DAY_MS), new Date(sweptAt - 8 * DAY_MS), call],
    )
    const messages = async () =>
      service.db.query<{ message_id: string; interaction_id: string | null }>(`SELECT message_id, interaction_id FROM provider_messages WHERE message_id LIKE 'wamid.%' ORDER BY message_id`)
    try {
      now = sweptAt
      await sweep()
      assert.deepEqual(await everywhere(heldIds), nowhere(heldIds))
      const [left] = await service.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM deliveries WHERE status = 'pending'`)
      assert.equal(left!.n, 0)
      // The one not a week old is still known (against its being delivered again), named by nothing; then it goes too.
      assert.deepEqual(await messages(), [{ message_id: 'wamid.recent', interaction_id: null }])
      now = sweptAt + DAY_MS + 1_000
      await sweep()
      assert.deepEqual(await messages(), [])
    } finally {
      await service.db.query(`UPDATE webhook_endpoints SET enabled = true WHERE org_id = $1`, [orgId])
      receiver.answerAll({ status: 200 })
    }
  })
})

test('a suppression older than the retention period keeps only its digest, and still meets its number', async () => {
  const added = await service.app.inject({ method: 'POST', url: '/api/v2/suppressions', headers: bearer(key), payload: { phone: '+44 20 7946 0979' } })
  assert.equal(added.statusCode, 201, added.body)
  now += 2 * DAY_MS + HOUR_MS
  await sweep()
  assert.deepEqual(await tablesHolding(service.db, '+442079460979'), [])
  const found = await service.app.inject({ method: 'GET', url: '/api/v2/suppressions/%2B442079460979', headers: bearer(key) })
  assert.equal(found.statusCode, 200, found.body)
  assert.match(json(found).data.phone, /^sha256:/)
  const refused = await trigger({ patient: 'PT-SUP-1', firstName: 'Suppressa', email: 'sup@mailbox.example', phone: '+442079460979' })
  await settleEverything()
  const task = json(await service.app.inject({ method: 'GET', url: `/api/v2/tasks/${refused.task_id}`, headers: bearer(key) })).data
  assert.equal(task.outcome, 'opted_out')
})

test("a suppression made after an organization's last look is digested once past the retention period, not a period later", async () => {
  const quiet = json(await service.app.inject({ method: 'POST', url: '/admin/v1/organizations', headers: admin, payload: { name: 'Quiet practice' } })).data.id
  const patched = await service.app.inject({ method: 'PATCH', url: `/admin/v1/organizations/${quiet}`, headers: admin, payload: { retention_days: 2 } })
  assert.equal(patched.statusCode, 200, patched.body)
  const lookedAt = now
  await sweep()
  now = lookedAt + DAY_MS
  const added = await service.app.inject({ method: 'POST', url: `/admin/v1/organizations/${quiet}/suppressions`, headers: admin, payload: { phone: '+44 20 7946 0988' } })
  assert.equal(added.statusCode, 201, added.body)
  // Looked at again with nothing to do (no history, the suppression a day old), then once it is past two days.
  now = lookedAt + 2 * DAY_MS + 60_000
  await sweep()
  assert.ok((await tablesHolding(service.db, '+442079460988')).includes('suppressions'))
  now = lookedAt + 3 * DAY_MS + HOUR_MS
  await sweep()
  assert.deepEqual(await tablesHolding(service.db, '+442079460988'), [])
})

test('endpoint health and the audit log keep to their own bounds', async () => {
  const [endpoint] = await service.db.query<{ id: string }>('SELECT id FROM webhook_endpoints WHERE org_id = $1', [orgId])
  const hour = (daysAgo: number) => new Date(Math.floor((now - daysAgo * DAY_MS) / HOUR_MS) * HOUR_MS)
  for (const daysAgo of [BOUNDS.endpointHealthDays + 1, BOUNDS.endpointHealthDays - 1]) {
    await service.db.query(
      `INSERT INTO endpoint_hours (endpoint_id, hour, attempts, succeeded, latency_ms_sum, latency_ms_max, latency_buckets)
       VALUES ($1, $2, 1, 1, 5, 5, '{1}') ON CONFLICT DO NOTHING`,
      [endpoint!.id, hour(daysAgo)],
    )
  }
  for (const daysAgo of [BOUNDS.auditLogDays + 1, BOUNDS.auditLogDays - 1]) {
    await service.db.query(`INSERT INTO audit_log (at, org_id, actor, action, target, details) VALUES ($1, $2, 'operator', 'organization.changed', $2, '{}')`, [
      new Date(now - daysAgo * DAY_MS),
      orgId,
    ])
  }
  // The bounded rows are looked at once a minute.
  now += 60_000
  await sweep()
  const [left] = await service.db.query<{ hours_old: number; hours_new: number; audit_old: number; audit_new: number }>(
    `SELECT (SELECT count(*)::int FROM endpoint_hours WHERE hour < $1) AS hours_old, (SELECT count(*)::int FROM endpoint_hours WHERE hour >= $1) AS hours_new,
            (SELECT count(*)::int FROM audit_log WHERE at < $2) AS audit_old, (SELECT count(*)::int FROM audit_log WHERE at >= $2) AS audit_new`,
    [new Date(now - BOUNDS.endpointHealthDays * DAY_MS), new Date(now - BOUNDS.auditLogDays * DAY_MS)],
  )
  assert.deepEqual(left, { hours_old: 0, hours_new: left!.hours_new, audit_old: 0, audit_new: left!.audit_new })
  assert.ok(left!.hours_new >= 1 && left!.audit_new >= 1)
})

test('daily counts: a range of at most a year, from a day on or before the last', async () => {
  const cases: [string, string[]][] = [
    ['from=2026-03-02', ['query', 'to']],
    ['from=2026-02-30&to=2026-03-02', ['query', 'from']],
    ['from=2026-03-02&to=2026-03-01', ['query', 'to']],
    ['from=2025-03-01&to=2026-03-02', ['query', 'to']],
    ['from=2026-3-2&to=2026-03-02', ['query', 'from']],
  ]
  for (const [query, loc] of cases) {
    const response = await service.app.inject({ method: 'GET', url: `/api/v2/daily-counts?${query}`, headers: bearer(key) })
    assert.equal(response.statusCode, 422, `${query}: ${response.body}`)
    assert.deepEqual(json(response).detail[0].loc, loc, query)
  }
  const aYear = await service.app.inject({ method: 'GET', url: '/api/v2/daily-counts?from=2025-03-02&to=2026-03-02&campaign=none', headers: bearer(key) })
  assert.equal(aYear.statusCode, 200, aYear.body)
  assert.deepEqual(json(aYear).data, [])
  const operator = await service.app.inject({ method: 'GET', url: `/admin/v1/organizations/${orgId}/daily-counts?from=2026-03-02&to=2026-03-03`, headers: admin })
  assert.equal(operator.statusCode, 200, operator.body)
  assert.equal((await service.app.inject({ method: 'GET', url: '/api/v2/daily-counts?from=2026-03-02&to=2026-03-03' })).statusCode, 401)
})

test('the sweep reaches the last of 1,000 organizations with history due at once within ten seconds of its runs', async (t) => {
  const many = await startService({ now: () => now })
  try {
    const organizations = 1_000
    // One completed task an organization, made as the service writes them, a year and more ago.
    const completedAt = new Date(now - 400 * DAY_MS)
    const ids = Array.from({ length: organizations }, (_, n) => ({
      org: newId('organization', completedAt.getTime() + n),
      campaign: newId('campaign', completedAt.getTime() + n),
      trigger: newId('trigger', completedAt.getTime() + n),
      task: newId('task', completedAt.getTime() + n),
      event: newId('event', completedAt.getTime() + n),
    }))
    const column = (name: keyof (typeof ids)[number]) => ids.map((row) => row[name])
    await many.db.query(
      `WITH o AS (
         INSERT INTO organizations (id, name, created_at, retention_days)
         SELECT org, 'Org ' || org, $6, 30 FROM unnest($1::text[]) AS u(org) RETURNING id
       ), c AS (
         INSERT INTO campaigns (id, org_id, routing_key, channel, name, context, created_at, schedule, attempts, updated_at)
         SELECT campaign, org, 'reminder', 'voice', 'reminder', '{}', $6, '{}', '{}', $6 FROM unnest($1::text[], $2::text[]) AS u(org, campaign)
       ), tr AS (
         INSERT INTO triggers (id, org_id, api_key_id, campaign_id, request_id, ids, contact, context, test_mode, created_at, task_id, phone)
         SELECT trg, org, 'key_x', campaign, 'req', '[]', '{"phone": "+442079460900"}', '{}', false, $6, tsk, '+442079460900'
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS u(org, campaign, trg, tsk)
       ), t AS (
         INSERT INTO tasks (id, org_id, trigger_id, campaign_id, status, outcome, context, test_mode, due_at, created_at, updated_at, expires_at,
                            completed_at, contact, timezones)
         SELECT tsk, org, trg, campaign, 'completed', 'expired', '{}', false, $6, $6, $6, $6, $6, '{"phone": "+442079460900"}', '{}'
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS u(org, campaign, trg, tsk)
       )
       INSERT INTO events (id, org_id, type, task_id, body, created_at)
       SELECT evt, org, 'task.completed', tsk,
              decode('00', 'hex') || convert_to(jsonb_build_object('id', evt, 'type', 'task.completed', 'data', jsonb_build_object('task_id', tsk))::text, 'UTF8'), $6
       FROM unnest($1::text[], $4::text[], $5::text[]) AS u(org, tsk, evt)`,
      [column('org'), column('campaign'), column('trigger'), column('task'), column('event'), completedAt],
    )
    let runs = 0
    const started = performance.now()
    for (; runs < 10; runs++) {
      now += 1_000
      await many.app.workers!.dispatcher.runOnce()
      const [left] = await many.db.query<{ n: number }>('SELECT count(*)::int AS n FROM tasks')
      if (left!.n === 0) break
    }
    t.diagnostic(`1,000 organizations swept in ${runs + 1} runs, ${(performance.now() - started).toFixed(0)} ms`)
    const [left] = await many.db.query<{ tasks: number; triggers: number; events: number; waiting: number }>(
      `SELECT (SELECT count(*)::int FROM tasks) AS tasks, (SELECT count(*)::int FROM triggers) AS triggers, (SELECT count(*)::int FROM events) AS events,
              (SELECT count(*)::int FROM organizations WHERE history_due_at IS NULL OR history_due_at <= $1) AS waiting`,
      [new Date(now)],
    )
    assert.deepEqual(left, { tasks: 0, triggers: 0, events: 0, waiting: 0 }, `after ${runs} runs`)
  } finally {
    await many.close()
  }
})
