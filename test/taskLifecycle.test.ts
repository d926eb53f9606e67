/**
 * The task lifecycle end to end on the simulator, with an injected clock:
 * schedules in the contact's local time, attempts and retries, expiry,
 * cancellation, max_concurrent, lookups and the events each step writes.
 */
import { CallingLaw } from '../src/services/callingLaw.ts'
import { LearnedTiming } from '../src/services/learnedTiming.ts'
import assert from 'node:assert/strict'
import { after, before, beforeEach, describe, test } from 'node:test'
import type { ProviderReport } from '../src/channels/channel.ts'
import { ChannelRegistry } from '../src/channels/registry.ts'
import { SimulatorChannel } from '../src/channels/simulator/simulatorChannel.ts'
import { recordedDecision } from '../src/domain/contactability.ts'
import { newId } from '../src/domain/ids.ts'
import { ServiceMetrics } from '../src/services/metrics.ts'
import { Settlement } from '../src/services/settlement.ts'
import { TaskLifecycle } from '../src/services/taskLifecycle.ts'
import { Wake } from '../src/services/wake.ts'
import { findInteractionWithConfig } from '../src/store/interactions.ts'
import { providerResult } from '../src/validation/conversationResult.ts'
import { beginAttempts, completeTasks, lockDueTasks, scheduleNextAttempts } from '../src/store/tasks.ts'
import { acceptedTrigger, bearer, createCampaign, json, OPERATOR_TOKEN, PHONE_HASH_KEY, seedOrganization, startService, taskOf, type TestService } from './support/service.ts'
import { eventsOfTask } from './support/events.ts'

const HOUR = 3_600_000
const ALWAYS_OPEN = { timezone: 'contact', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '00:00', end: '24:00' }] }

let service: TestService
let org: Awaited<ReturnType<typeof seedOrganization>>
let now = Date.parse('2026-06-01T10:00:00Z')
/** What a dispatcher records with an attempt nothing but its window held. */
const ALLOWED = recordedDecision({ decision: 'allowed', notBefore: null, reasons: [], profiles: [] }, now)
let routingKeys = 0

before(async () => {
  service = await startService({ now: () => now })
  org = await seedOrganization(service.app)
})
after(() => service.close())
beforeEach(() => {
  now = Date.parse('2026-06-01T10:00:00Z')
})

function campaign(settings: Record<string, unknown>, channel = 'voice'): Promise<{ id: string; routing_key: string }> {
  return createCampaign(service.app, org.orgId, { routing_key: `lifecycle-${++routingKeys}`, channel, ...settings })
}

function trigger(routingKey: string, body: Record<string, unknown> = {}): Promise<{ id: string; task_id: string }> {
  return acceptedTrigger(service.app, org.key, {
    campaign: routingKey,
    ids: [{ source: 'ATS', type: 'Candidate', value: `c-${Math.random()}` }],
    contact: { phone: '+442079460958' },
    ...body,
  })
}

const task = (id: string) => taskOf(service.app, org.key, id)

/** Moves the clock and lets the dispatcher do everything that is due. */
async function at(instant: string | number) {
  now = typeof instant === 'string' ? Date.parse(instant) : instant
  await service.app.workers!.dispatcher.runOnce()
}

async function eventsOf(taskId: string): Promise<any[]> {
  return eventsOfTask(service.db, taskId)
}

describe('a test-mode trigger on an always-open simulator campaign', () => {
  test('is called at once and completes as reached, with both events carrying the ids', async () => {
    const { routing_key } = await campaign({ schedule: ALWAYS_OPEN, provider_config: { outcomes: ['completed'], duration_ms: 200 } })
    const created = await trigger(routing_key, { test_mode: true, ids: [{ source: ' ATS ', type: 'Candidate_ID', value: 'AbC-1' }] })
    await at(now)
    const running = await task(created.task_id)
    assert.equal(running.status, 'in_progress')
    assert.equal(running.attempts, 1)
    assert.equal(running.interactions[0].status, 'active')

    await at(now + 200)
    const done = await task(created.task_id)
    assert.equal(done.status, 'completed')
    assert.equal(done.outcome, 'reached')
    assert.equal(done.interactions[0].outcome, 'completed')
    assert.equal(done.interactions[0].test_mode, true)
    assert.equal(done.test_mode, true)
    assert.equal(done.next_attempt_at, null)

    const [finalized, completed] = await eventsOf(created.task_id)
    assert.equal(finalized.type, 'interaction.finalized')
    assert.equal(done.interactions[0].duration_s, finalized.data.duration_s, 'the API and the webhook report one duration')
    assert.deepEqual(finalized.data, {
      interaction_id: done.interactions[0].id,
      task_id: created.task_id,
      trigger_id: created.id,
      campaign: routing_key,
      channel: 'voice',
      direction: 'outbound',
      attempt: 1,
      outcome: 'completed',
      started_at: '2026-06-01T10:00:00.000Z',
      // The person's local time, in the zone their schedule was read in (a London number).
      timezone: 'Europe/London',
      started_at_local: '2026-06-01T11:00:00.000+01:00',
      ended_at: '2026-06-01T10:00:00.200Z',
      duration_s: 0,
      test_mode: true,
      ids: [{ source: 'ats', type: 'candidate_id', value: 'AbC-1' }],
      // No conversation app reported a result.
      result: null,
    })
    assert.equal(completed.type, 'task.completed')
    assert.match(completed.id, /^evt_/)
    assert.equal(completed.timestamp, '2026-06-01T10:00:00.200Z')
    assert.deepEqual(completed.data, {
      task_id: created.task_id,
      trigger_id: created.id,
      campaign: routing_key,
      channel: 'voice',
      status: 'completed',
      outcome: 'reached',
      attempts: 1,
      test_mode: true,
      ids: [{ source: 'ats', type: 'candidate_id', value: 'AbC-1' }],
      completed_at: '2026-06-01T10:00:00.200Z',
      result: null,
      // Why the call was placed: the decision that allowed it, as its interaction keeps it.
      decision: done.interactions[0].decision,
    })
    assert.equal(completed.data.decision.decision, 'allowed')
  })
})

describe('an attempt due to be settled as soon as it starts', () => {
  test('is settled in the round that starts it, with its provider reference, the clock standing still', async () => {
    const { routing_key } = await campaign({ schedule: ALWAYS_OPEN, provider_config: { outcomes: ['no_answer', 'completed'], duration_ms: 0 } })
    const created = await trigger(routing_key)
    await at(now)
    const retrying = await task(created.task_id)
    assert.equal(retrying.status, 'pending')
    assert.equal(retrying.interactions.length, 1)
    assert.equal(retrying.interactions[0].status, 'finalized')
    assert.equal(retrying.interactions[0].outcome, 'no_answer')
    const [row] = await service.db.query<{ provider_ref: string | null; settle_at: Date | null }>(
      'SELECT provider_ref, settle_at FROM interactions WHERE id = $1',
      [retrying.interactions[0].id],
    )
    assert.equal(row!.provider_ref, `sim_${retrying.interactions[0].id}`)
    assert.equal(row!.settle_at, null)
    const finalized = (await eventsOf(created.task_id)).filter((event) => event.type === 'interaction.finalized')
    assert.equal(finalized.length, 1)
    assert.equal(finalized[0].data.outcome, 'no_answer')
  })
})

describe("schedules in the contact's local time", () => {
  test('a trigger at night waits for the next morning in the contact zone', async () => {
    const { routing_key } = await campaign({})
    // 02:00 in New York (EDT) is 06:00Z; the default window opens at 09:00 local, 13:00Z.
    now = Date.parse('2026-06-01T06:00:00Z')
    const created = await trigger(routing_key, { contact: { phone: '+1 212 555 0100' } })
    await at(now)
    const waiting = await task(created.task_id)
    assert.equal(waiting.status, 'pending')
    assert.equal(waiting.timezone, 'America/New_York')
    assert.equal(waiting.next_attempt_at, '2026-06-01T13:00:00.000Z')
    assert.equal(waiting.interactions.length, 0)

    await at('2026-06-01T12:59:59.999Z')
    assert.equal((await task(created.task_id)).interactions.length, 0)
    await at('2026-06-01T13:00:00Z')
    assert.equal((await task(created.task_id)).interactions.length, 1)
  })

  test('a contact in Kathmandu (+05:45) is called from 09:00 there', async () => {
    const { routing_key } = await campaign({})
    now = Date.parse('2026-06-01T01:00:00Z')
    const created = await trigger(routing_key, { contact: { phone: '+977 1 4411 000' } })
    await at(now)
    const waiting = await task(created.task_id)
    assert.equal(waiting.timezone, 'Asia/Kathmandu')
    assert.equal(waiting.next_attempt_at, '2026-06-01T03:15:00.000Z')
  })

  test('contact.timezone wins over the phone number', async () => {
    const { routing_key } = await campaign({})
    now = Date.parse('2026-06-01T06:00:00Z')
    const created = await trigger(routing_key, { contact: { phone: '+1 212 555 0100', timezone: 'America/Los_Angeles' } })
    await at(now)
    const waiting = await task(created.task_id)
    assert.equal(waiting.timezone, 'America/Los_Angeles')
    assert.equal(waiting.next_attempt_at, '2026-06-01T16:00:00.000Z')
  })

  test('area codes of the United States tell the zone', async () => {
    const { routing_key } = await campaign({})
    const cases: [string, string][] = [
      ['+1 415 555 2671', 'America/Los_Angeles'],
      ['+1 212 555 0100', 'America/New_York'],
      ['+1 312 555 0100', 'America/Chicago'],
      ['+1 303 555 0100', 'America/Denver'],
    ]
    for (const [phone, zone] of cases) {
      const created = await trigger(routing_key, { contact: { phone } })
      assert.equal((await task(created.task_id)).timezone, zone, phone)
    }
  })

  test('a blackout date is skipped, to the next open day', async () => {
    const { routing_key } = await campaign({
      schedule: { timezone: 'Europe/London', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri'], start: '09:00', end: '17:00' }], blackout_dates: ['2026-12-25'] },
    })
    // Thursday 24 December 2026, 18:00 in London: the next weekday is the 25th, blacked out; then the weekend.
    now = Date.parse('2026-12-24T18:00:00Z')
    const created = await trigger(routing_key)
    await at(now)
    assert.equal((await task(created.task_id)).next_attempt_at, '2026-12-28T09:00:00.000Z')
  })

  test('a campaign in a fixed zone ignores the contact zone', async () => {
    const { routing_key } = await campaign({ schedule: { timezone: 'Asia/Tokyo', windows: [{ days: ['mon'], start: '10:00', end: '11:00' }] } })
    now = Date.parse('2026-06-01T03:00:00Z') // Monday 12:00 in Tokyo: the window has closed.
    const created = await trigger(routing_key, { contact: { phone: '+1 212 555 0100' } })
    await at(now)
    assert.equal((await task(created.task_id)).next_attempt_at, '2026-06-08T01:00:00.000Z')
  })
})

describe('attempts', () => {
  test('a retry waits its delay and then the next window', async () => {
    const { routing_key } = await campaign({
      schedule: { timezone: 'Europe/London', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '09:00', end: '20:00' }] },
      provider_config: { outcomes: ['no_answer', 'busy', 'completed'], duration_ms: 60_000 },
      attempts: { max: 3, retry_delays_s: { no_answer: 7200, busy: 900 } },
    })
    // 18:30 in London (BST): the first call at once, ending 18:31.
    now = Date.parse('2026-06-01T17:30:00Z')
    const created = await trigger(routing_key)
    await at(now)
    await at(now + 60_000)
    let state = await task(created.task_id)
    assert.equal(state.status, 'pending')
    assert.equal(state.interactions[0].outcome, 'no_answer')
    // 18:31 + 2 h = 20:31, after the window: the next morning at 09:00 BST.
    assert.equal(state.next_attempt_at, '2026-06-02T08:00:00.000Z')

    await at('2026-06-02T08:00:00Z')
    await at(Date.parse('2026-06-02T08:01:00Z'))
    state = await task(created.task_id)
    assert.equal(state.interactions[1].outcome, 'busy')
    // busy: 15 minutes, inside the window.
    assert.equal(state.next_attempt_at, '2026-06-02T08:16:00.000Z')

    await at('2026-06-02T08:16:00Z')
    await at('2026-06-02T08:17:00Z')
    state = await task(created.task_id)
    assert.equal(state.status, 'completed')
    assert.equal(state.outcome, 'reached')
    assert.deepEqual(
      state.interactions.map((interaction: any) => [interaction.attempt, interaction.outcome]),
      [
        [1, 'no_answer'],
        [2, 'busy'],
        [3, 'completed'],
      ],
    )
    const finalized = (await eventsOf(created.task_id)).filter((event) => event.type === 'interaction.finalized')
    assert.deepEqual(
      finalized.map((event) => event.data.attempt),
      [1, 2, 3],
    )
  })

  test('a retry across a daylight saving change lands on the local opening hour, in both directions', async () => {
    const { routing_key } = await campaign({
      provider_config: { outcomes: ['no_answer'], duration_ms: 60_000 },
      attempts: { retry_delays_s: { no_answer: 7200 } },
    })
    const cases = [
      // Saturday 31 October 2026, 19:00 EDT; New York falls back that night: 09:00 EST is 14:00Z.
      { at: '2026-10-31T23:00:00Z', next: '2026-11-01T14:00:00.000Z' },
      // Saturday 7 March 2026, 19:00 EST; New York springs forward that night: 09:00 EDT is 13:00Z.
      { at: '2026-03-08T00:00:00Z', next: '2026-03-08T13:00:00.000Z' },
    ]
    for (const { at: start, next } of cases) {
      now = Date.parse(start)
      const created = await trigger(routing_key, { contact: { phone: '+1 212 555 0100' } })
      await at(now)
      await at(now + 60_000)
      const state = await task(created.task_id)
      assert.equal(state.interactions[0].outcome, 'no_answer')
      assert.equal(state.next_attempt_at, next, start)
    }
  })

  test('the task is unreachable when attempts run out', async () => {
    const { routing_key } = await campaign({
      schedule: ALWAYS_OPEN,
      provider_config: { outcomes: ['no_answer'], duration_ms: 1000 },
      attempts: { max: 2, retry_delays_s: { no_answer: 60 } },
    })
    const created = await trigger(routing_key)
    await at(now)
    await at(now + 1000)
    await at(now + 60_000)
    await at(now + 1000)
    const state = await task(created.task_id)
    assert.equal(state.status, 'completed')
    assert.equal(state.outcome, 'unreachable')
    assert.equal(state.attempts, 2)
    const completed = (await eventsOf(created.task_id)).find((event) => event.type === 'task.completed')
    assert.equal(completed.data.outcome, 'unreachable')
    assert.equal(completed.data.attempts, 2)
  })

  test('a task expires when no attempt can start before expire_after_s', async () => {
    const { routing_key } = await campaign({
      schedule: { timezone: 'UTC', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '09:00', end: '10:00' }] },
      attempts: { expire_after_s: 3600 },
    })
    now = Date.parse('2026-06-01T12:00:00Z')
    const created = await trigger(routing_key)
    await at(now)
    const waiting = await task(created.task_id)
    assert.equal(waiting.expires_at, '2026-06-01T13:00:00.000Z')
    // The next window (tomorrow 09:00) is past the expiry: due at the expiry instead.
    assert.equal(waiting.next_attempt_at, '2026-06-01T13:00:00.000Z')
    await at('2026-06-01T13:00:00Z')
    const expired = await task(created.task_id)
    assert.equal(expired.status, 'completed')
    assert.equal(expired.outcome, 'expired')
    assert.equal(expired.interactions.length, 0)
  })

  test('max_concurrent bounds the interactions running at once', async () => {
    const { routing_key } = await campaign({ schedule: ALWAYS_OPEN, max_concurrent: 2, provider_config: { duration_ms: 5000 } })
    const tasks: { task_id: string }[] = []
    for (let i = 0; i < 5; i++) tasks.push(await trigger(routing_key))
    await at(now)
    const running = async () => (await Promise.all(tasks.map((t) => task(t.task_id)))).filter((t) => t.status === 'in_progress').length
    assert.equal(await running(), 2)
    await at(now + 1000)
    assert.equal(await running(), 2)
    await at(now + 4000) // the first two end at +5 s
    const states = await Promise.all(tasks.map((t) => task(t.task_id)))
    assert.equal(states.filter((t) => t.status === 'completed').length, 2)
    assert.equal(states.filter((t) => t.status === 'in_progress').length, 2)
  })
})

describe('a campaign at its max_concurrent with a long queue', () => {
  test("neither holds back another campaign's task nor is claimed again and again", async () => {
    const capped = await campaign({ schedule: ALWAYS_OPEN, max_concurrent: 1, provider_config: { duration_ms: 3_600_000 } })
    const other = await campaign({ schedule: ALWAYS_OPEN })
    // More than any batch of the dispatcher: a claim in due order alone would read through all of them first.
    const QUEUED = 600
    await Promise.all(Array.from({ length: QUEUED }, () => trigger(capped.routing_key)))
    now += 1
    const later = await trigger(other.routing_key)
    const handled = async () => {
      const [row] = await service.db.query<{ running: number; given_back: number; untouched: number }>(
        `SELECT count(*) FILTER (WHERE status = 'in_progress')::int AS running,
                count(*) FILTER (WHERE status = 'pending' AND due_at > $2)::int AS given_back,
                count(*) FILTER (WHERE status = 'pending' AND due_at <= $2)::int AS untouched
         FROM tasks WHERE campaign_id = $1`,
        [capped.id, new Date(now)],
      )
      return row!
    }

    await at(now)
    assert.equal((await task(later.task_id)).attempts, 1, 'the other campaign was called at once')
    const first = await handled()
    assert.equal(first.running, 1)
    // One batch was claimed and given back until there is a place; the rest was not read.
    assert.ok(first.given_back > 0 && first.given_back <= 256, `${first.given_back} given back`)
    assert.equal(first.untouched, QUEUED - 1 - first.given_back)

    // Half a second on, with no place freed: the campaign is left out of the claims altogether.
    const again = await trigger(other.routing_key)
    await at(now + 500)
    assert.equal((await task(again.task_id)).attempts, 1)
    const second = await handled()
    assert.equal(second.running, 1)
    assert.equal(second.untouched + second.given_back, QUEUED - 1)
    assert.ok(second.untouched >= first.untouched, 'nothing more of the full campaign was claimed')
  })
})

describe('among many campaigns, a few with work', () => {
  test('the dispatcher finds each one with tasks due, whatever lies between them, and leaves a paused one alone; it settles their calls', async () => {
    const campaigns = []
    for (let i = 0; i < 12; i++) campaigns.push(await campaign({ schedule: ALWAYS_OPEN, provider_config: { duration_ms: 60_000 } }))
    // Created in order, so their ids sort so: work at the start, the middle and the end, with campaigns without any between.
    const [first, paused, last] = [campaigns[0]!, campaigns[6]!, campaigns[11]!]
    const triggers = await Promise.all([first, first, paused, last].map((each) => trigger(each.routing_key)))
    const response = await service.app.inject({
      method: 'POST',
      url: `/admin/v1/organizations/${org.orgId}/campaigns/${paused.id}/pause`,
      headers: bearer(OPERATOR_TOKEN),
    })
    assert.equal(response.statusCode, 200, response.body)

    await at(now)
    const started = await Promise.all(triggers.map((each) => task(each.task_id)))
    assert.deepEqual(started.map((each) => [each.status, each.attempts]), [['in_progress', 1], ['in_progress', 1], ['pending', 0], ['in_progress', 1]])

    // Their calls end a minute on, and are settled in the round at that instant.
    await at(now + 60_000)
    const ended = await Promise.all(triggers.map((each) => task(each.task_id)))
    assert.deepEqual(ended.map((each) => [each.status, each.outcome]), [['completed', 'reached'], ['completed', 'reached'], ['pending', null], ['completed', 'reached']])
  })
})

describe('client endpoints', () => {
  test('cancel completes a pending task as cancelled, once; other organizations cannot see it', async () => {
    const { routing_key } = await campaign({ schedule: { timezone: 'UTC', windows: [{ days: ['sun'], start: '09:00', end: '10:00' }] } })
    const created = await trigger(routing_key)
    const cancel = (key = org.key) =>
      service.app.inject({ method: 'POST', url: `/api/v2/tasks/${created.task_id}/cancel`, headers: bearer(key) })
    const other = await seedOrganization(service.app)
    assert.equal((await cancel(other.key)).statusCode, 404)

    const response = await cancel()
    assert.equal(response.statusCode, 200)
    assert.equal(json(response).data.outcome, 'cancelled')
    const again = await cancel()
    assert.equal(again.statusCode, 409)
    assert.equal(json(again).error.code, 'conflict')

    await at(now + 7 * 24 * HOUR)
    assert.equal((await task(created.task_id)).interactions.length, 0)
    const [completed] = await eventsOf(created.task_id)
    assert.equal(completed.data.outcome, 'cancelled')
  })

  test('a task cancelled while its call runs is not retried; the call is still reported', async () => {
    const { routing_key } = await campaign({ schedule: ALWAYS_OPEN, provider_config: { outcomes: ['no_answer'], duration_ms: 1000 } })
    const created = await trigger(routing_key)
    await at(now)
    assert.equal((await service.app.inject({ method: 'POST', url: `/api/v2/tasks/${created.task_id}/cancel`, headers: bearer(org.key) })).statusCode, 200)
    await at(now + 1000)
    const state = await task(created.task_id)
    assert.equal(state.outcome, 'cancelled')
    assert.equal(state.interactions[0].outcome, 'no_answer')
    assert.equal(state.next_attempt_at, null)
    assert.deepEqual(
      (await eventsOf(created.task_id)).map((event) => event.type),
      ['task.completed', 'interaction.finalized'],
    )
  })

  test('a cancellation that commits after a settlement read its task still wins: neither retried nor completed twice', async () => {
    const { routing_key } = await campaign({ schedule: ALWAYS_OPEN, provider_config: { outcomes: ['no_answer'], duration_ms: 1000 } })
    const created = await trigger(routing_key)
    await at(now)
    assert.equal((await service.app.inject({ method: 'POST', url: `/api/v2/tasks/${created.task_id}/cancel`, headers: bearer(org.key) })).statusCode, 200)
    // What a settlement that read the task as in progress, before the cancellation, then writes.
    await scheduleNextAttempts(service.db, [{ taskId: created.task_id, dueAt: now + HOUR }], now)
    assert.equal((await completeTasks(service.db, [{ taskId: created.task_id, outcome: 'unreachable' }], now)).size, 0)
    const state = await task(created.task_id)
    assert.equal(state.status, 'completed')
    assert.equal(state.outcome, 'cancelled')
    assert.equal(state.next_attempt_at, null)
  })

  test('tasks are found by one external id, source and type in any case', async () => {
    const { routing_key } = await campaign({})
    const first = await trigger(routing_key, { ids: [{ source: 'Greenhouse', type: 'Application', value: 'A-77' }] })
    const second = await trigger(routing_key, { ids: [{ source: 'greenhouse', type: 'application', value: 'A-77' }, { source: 'crm', type: 'lead', value: 'x' }] })
    await trigger(routing_key, { ids: [{ source: 'greenhouse', type: 'application', value: 'a-77' }] })
    const response = await service.app.inject({
      method: 'GET',
      url: '/api/v2/tasks?source=GREENHOUSE&type=application&value=A-77',
      headers: bearer(org.key),
    })
    assert.equal(response.statusCode, 200)
    assert.deepEqual(
      json(response).data.map((t: any) => t.id),
      [second.task_id, first.task_id],
    )
    const other = await seedOrganization(service.app)
    const theirs = await service.app.inject({ method: 'GET', url: '/api/v2/tasks?source=greenhouse&type=application&value=A-77', headers: bearer(other.key) })
    assert.deepEqual(json(theirs).data, [])
    const partial = await service.app.inject({ method: 'GET', url: '/api/v2/tasks?source=greenhouse&value=A-77', headers: bearer(org.key) })
    assert.equal(partial.statusCode, 422)
    assert.deepEqual(
      json(partial).detail.map((entry: any) => entry.loc),
      [
        ['query', 'source'],
        ['query', 'value'],
      ],
    )
  })

  test('a lookup finds a trigger\'s ids however Unicode whitespace edges them, as the trigger normalized them', async () => {
    const { routing_key } = await campaign({})
    const edged = await trigger(routing_key, { ids: [{ source: '\u0085ATS\u00a0', type: '\ufeffCandidate', value: 'U-1' }] })
    const find = async (source: string, type: string) => {
      const query = new URLSearchParams({ source, type, value: 'U-1' })
      const response = await service.app.inject({ method: 'GET', url: `/api/v2/tasks?${query}`, headers: bearer(org.key) })
      assert.equal(response.statusCode, 200, response.body)
      return json(response).data.map((t: any) => t.id)
    }
    assert.deepEqual(await find('ats', '\ufeffcandidate'), [edged.task_id])
    assert.deepEqual(await find('\u2003ATS\u0085', '\ufeffCANDIDATE '), [edged.task_id])
    assert.deepEqual(await find('ats', 'candidate'), [])
  })

  test("another organization's task is 404, and so is a malformed id", async () => {
    const { routing_key } = await campaign({})
    const created = await trigger(routing_key)
    const other = await seedOrganization(service.app)
    for (const [id, key] of [
      [created.task_id, other.key],
      ['tsk_nope', org.key],
    ] as const) {
      const response = await service.app.inject({ method: 'GET', url: `/api/v2/tasks/${id}`, headers: bearer(key) })
      assert.equal(response.statusCode, 404)
      assert.equal(json(response).error.code, 'not_found')
    }
  })
})

describe('time zones the service cannot tell', () => {
  test('a number of no country is refused with 422 at contact.phone, unless the campaign has a fallback', async () => {
    const { routing_key } = await campaign({})
    // International freephone (+800) belongs to no country.
    const response = await service.app.inject({
      method: 'POST',
      url: '/api/v2/triggers',
      headers: { ...bearer(org.key), 'content-type': 'application/json' },
      payload: { campaign: routing_key, contact: { phone: '+800 1234 5678' } },
    })
    assert.equal(response.statusCode, 422, response.body)
    const [entry] = json(response).detail
    assert.deepEqual(entry.loc, ['body', 'contact', 'phone'])
    assert.equal(entry.type, 'value_error')
    assert.match(entry.msg, /^Value error, the contact's time zone cannot be told/)

    const withFallback = await campaign({ schedule: { ...ALWAYS_OPEN, fallback_timezone: 'Europe/Moscow' } })
    const created = await trigger(withFallback.routing_key, { contact: { phone: '+800 1234 5678' } })
    const waiting = await task(created.task_id)
    assert.deepEqual([waiting.timezone, waiting.candidate_timezones, waiting.timezone_source], ['Europe/Moscow', ['Europe/Moscow'], 'fallback'])
    await at(now)
    assert.equal((await task(created.task_id)).status, 'in_progress')
  })

  test('an invalid contact.timezone is a 422', async () => {
    const { routing_key } = await campaign({})
    const response = await service.app.inject({
      method: 'POST',
      url: '/api/v2/triggers',
      headers: { ...bearer(org.key), 'content-type': 'application/json' },
      payload: { campaign: routing_key, contact: { phone: '+442079460958', timezone: 'Mars/Olympus' } },
    })
    assert.equal(response.statusCode, 422)
    assert.deepEqual(json(response).detail[0].loc, ['body', 'contact', 'timezone'])
  })
})

describe('a worker that dies', () => {
  test('before it commits: its tasks are due as before, and each is started once', async () => {
    const { routing_key } = await campaign({ schedule: ALWAYS_OPEN, provider_config: { duration_ms: 1000 } })
    const created = await trigger(routing_key)
    // Another worker takes every due task and dies before its transaction commits.
    const died = new Error('the worker died')
    await assert.rejects(
      service.db.transaction(async (tx) => {
        const taken = (await lockDueTasks(tx, Buffer.from(PHONE_HASH_KEY), now, 10_000)).find((due) => due.id === created.task_id)
        assert.ok(taken)
        const attempt = { taskId: created.task_id, interactionId: newId('interaction', now), phone: taken.contact.phone, decision: ALLOWED }
        await beginAttempts(tx, Buffer.from(PHONE_HASH_KEY), 'wrk_gone', [attempt], now, now + 120_000)
        throw died
      }),
      died,
    )
    await at(now)
    const started = await task(created.task_id)
    assert.equal(started.interactions.length, 1)
    assert.equal(started.attempts, 1)
  })

  test('after recording an attempt but before asking the provider: the attempt is settled as failed, not started again', async () => {
    const { routing_key } = await campaign({ schedule: ALWAYS_OPEN, attempts: { retry_delays_s: { failed: 600 } } })
    const created = await trigger(routing_key)
    // What the dying worker committed: the attempt, recorded as starting, never confirmed.
    await service.db.transaction(async (tx) => {
      const taken = (await lockDueTasks(tx, Buffer.from(PHONE_HASH_KEY), now, 10_000)).find((due) => due.id === created.task_id)
      assert.ok(taken)
      const attempt = { taskId: created.task_id, interactionId: newId('interaction', now), phone: taken.contact.phone, decision: ALLOWED }
      await beginAttempts(tx, Buffer.from(PHONE_HASH_KEY), 'wrk_gone', [attempt], now, now + 120_000)
    })
    await at(now + 119_999)
    assert.equal((await task(created.task_id)).interactions[0].status, 'starting')
    await at(now + 1)
    const settled = await task(created.task_id)
    assert.equal(settled.interactions.length, 1)
    assert.equal(settled.interactions[0].outcome, 'failed')
    assert.equal(settled.next_attempt_at, new Date(now + 600_000).toISOString())
  })
})

describe('a result a provider reports', () => {
  // The lifecycle as the provider routes use it, on the service's database and clock.
  let lifecycle: TaskLifecycle
  before(() => {
    const wake = new Wake()
    const shared = new ServiceMetrics(service.db, () => now)
    const settlement = new Settlement({ db: service.db, now: () => now, wake, metrics: shared, timing: new LearnedTiming({ now: () => now, law: new CallingLaw({ now: () => now }) }) })
    lifecycle = new TaskLifecycle({ db: service.db, channels: new ChannelRegistry([new SimulatorChannel('voice')]), settlement, wake, now: () => now, metrics: shared })
  })

  /** A simulated call that runs until a report ends it, of a campaign that waits `waitS` for results. */
  async function runningCall(waitS: number) {
    const { routing_key } = await campaign({ schedule: ALWAYS_OPEN, provider_config: { duration_ms: 3_600_000 }, results: { wait_s: waitS } })
    const created = await trigger(routing_key)
    await at(now)
    const interactionId: string = (await task(created.task_id)).interactions[0].id
    const report = async (report: ProviderReport) => lifecycle.report((await findInteractionWithConfig(service.db, interactionId))!, report)
    return { taskId: created.task_id, interactionId, providerRef: `sim_${interactionId}`, report }
  }
  const ANALYSIS = providerResult({ disposition: 'interested', summary: 'Wants the night shift.', data: { shift: 'night' } })!

  test('with the end: recorded on the interaction and the task, the wait not needed', async () => {
    const call = await runningCall(300)
    await call.report({ kind: 'final', providerRef: call.providerRef, outcome: 'completed', at: now, durationS: 61, result: ANALYSIS })
    const done = await task(call.taskId)
    assert.equal(done.outcome, 'reached')
    assert.equal(done.interactions[0].status, 'finalized')
    assert.equal(done.interactions[0].duration_s, 61)
    assert.equal(done.interactions[0].result.disposition, 'interested')
    assert.equal(done.interactions[0].result.summary, 'Wants the night shift.')
    assert.equal(done.interactions[0].result.received_at, new Date(now).toISOString())
  })

  test('with an end where no conversation took place: left out', async () => {
    const call = await runningCall(300)
    await call.report({ kind: 'final', providerRef: call.providerRef, outcome: 'no_answer', at: now, result: ANALYSIS })
    assert.equal((await task(call.taskId)).interactions[0].result, null)
  })

  test('after the end: it ends the wait; the same report again changes nothing', async () => {
    const call = await runningCall(300)
    await call.report({ kind: 'final', providerRef: call.providerRef, outcome: 'completed', at: now, durationS: 30 })
    assert.equal((await task(call.taskId)).interactions[0].status, 'ended')
    now += 5_000
    await call.report({ kind: 'result', providerRef: call.providerRef, result: ANALYSIS, at: now })
    const done = await task(call.taskId)
    assert.equal(done.interactions[0].status, 'finalized')
    assert.equal(done.outcome, 'reached')
    assert.equal(done.interactions[0].result.data.shift, 'night')
    const events = await eventsOf(call.taskId)
    assert.deepEqual(events.map((event) => event.type), ['interaction.finalized', 'task.completed'])
    assert.equal(events[0].data.result.disposition, 'interested')

    now += 5_000
    await call.report({ kind: 'result', providerRef: call.providerRef, result: { ...ANALYSIS, disposition: 'other' }, at: now })
    assert.deepEqual(await task(call.taskId), done)
    assert.equal((await eventsOf(call.taskId)).length, 2)
  })

  test('after its wait is over: the interaction is finalized without it, and it changes nothing', async () => {
    const call = await runningCall(60)
    await call.report({ kind: 'final', providerRef: call.providerRef, outcome: 'completed', at: now })
    await at(now + 60_000)
    const settled = await task(call.taskId)
    assert.equal(settled.interactions[0].status, 'finalized')
    assert.equal(settled.interactions[0].result, null)
    await call.report({ kind: 'result', providerRef: call.providerRef, result: ANALYSIS, at: now })
    assert.deepEqual(await task(call.taskId), settled)
  })

  test('before the end: kept, and the end carries it without waiting', async () => {
    const call = await runningCall(300)
    await call.report({ kind: 'result', providerRef: call.providerRef, result: ANALYSIS, at: now })
    assert.equal((await task(call.taskId)).interactions[0].status, 'active')
    await call.report({ kind: 'final', providerRef: call.providerRef, outcome: 'completed', at: now, durationS: 12 })
    const done = await task(call.taskId)
    assert.equal(done.interactions[0].status, 'finalized')
    assert.equal(done.interactions[0].result.disposition, 'interested')
  })
})

describe('providerResult: a provider’s result made valid rather than lost', () => {
  const CASES: [name: string, reported: unknown, kept: unknown][] = [
    ['a valid one, instants in UTC', { summary: 'Hi', callback_at: '2026-06-02T09:00:00+02:00' }, { summary: 'Hi', callback_at: '2026-06-02T07:00:00.000Z' }],
    ['fields it does not have, and nulls, ignored', { summary: 'Hi', sentiment: 'positive', disposition: null }, { summary: 'Hi' }],
    ['a summary too long, cut', { summary: 'é'.repeat(10_005) }, { summary: 'é'.repeat(10_000) }],
    ['a disposition outside its pattern, left out', { disposition: 'not interested', summary: 'No' }, { summary: 'No' }],
    ['a URL not https, left out', { recording_url: 'http://example.com/r.mp3', opt_out: true }, { opt_out: true }],
    [
      'an invalid turn left out, the others kept',
      { transcript: [{ role: 'agent', text: 'Hello' }, { role: 'user', text: 'Hi' }, { role: 'contact', text: '' }, { role: 'contact', text: 'Yes', at: 'never' }, { role: 'contact', text: 'Bye' }] },
      { transcript: [{ role: 'agent', text: 'Hello' }, { role: 'contact', text: 'Bye' }] },
    ],
    ['data of too many keys keeps its first', { data: Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`k${i}`, i])) }, { data: Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, i])) }],
    ['nothing valid left', { disposition: '??', transcript: [] }, undefined],
    ['not an object', 'great call', undefined],
  ]
  for (const [name, reported, kept] of CASES) test(name, () => assert.deepEqual(providerResult(reported), kept))

  test('a transcript over its bytes keeps the first turns that fit, each cut to its length', () => {
    const turns = Array.from({ length: 60 }, () => ({ role: 'contact', text: 'x'.repeat(12_000) }))
    const kept = providerResult({ transcript: turns })!.transcript!
    assert.ok(kept.length > 10 && kept.length < 60)
    assert.ok(kept.every((turn) => turn.text.length === 10_000))
    assert.ok(Buffer.byteLength(JSON.stringify(kept)) <= 256 * 1024)
    // The longest prefix that fits: one turn more would not.
    assert.ok(Buffer.byteLength(JSON.stringify(turns.slice(0, kept.length + 1).map((turn) => ({ ...turn, text: turn.text.slice(0, 10_000) })))) > 256 * 1024)
  })

  test('sizes are JSON’s own, escapes counted: data of exactly 64 KiB is kept whole, a byte more loses its last key', () => {
    // Each quote is written \" in JSON: four keys of 8,000 make 64,033 bytes, and the last key's value the rest.
    const data = (filler: number) => ({ ...Object.fromEntries([0, 1, 2, 3].map((i) => [`k${i}`, '"'.repeat(8_000)])), k4: 'a'.repeat(filler) })
    assert.equal(Buffer.byteLength(JSON.stringify(data(1_495))), 64 * 1024)
    assert.deepEqual(Object.keys(providerResult({ data: data(1_495) })!.data!), ['k0', 'k1', 'k2', 'k3', 'k4'])
    assert.deepEqual(Object.keys(providerResult({ data: data(1_496) })!.data!), ['k0', 'k1', 'k2', 'k3'])
  })

  test('data over its bytes keeps the first keys that fit, to the byte', () => {
    const data = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`key ${i}`, 'é'.repeat(1_000 + i)]))
    const kept = providerResult({ data })!.data!
    const keys = Object.keys(kept)
    assert.ok(keys.length > 5 && keys.length < 40)
    assert.deepEqual(keys, Object.keys(data).slice(0, keys.length))
    assert.ok(Buffer.byteLength(JSON.stringify(kept)) <= 64 * 1024)
    assert.ok(Buffer.byteLength(JSON.stringify(Object.fromEntries(Object.entries(data).slice(0, keys.length + 1)))) > 64 * 1024)
  })
})
