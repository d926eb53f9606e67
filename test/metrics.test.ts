/**
 * What /metrics counts of a task's end and its interactions', with an
 * injected clock on the simulator: each task completed once by its outcome,
 * whichever way it ends (its attempts, a cancel, either cancel by the
 * client's ids, an expiry at dispatch or while its campaign is paused), each
 * interaction finalized once by provider and outcome, and the tasks in
 * progress as the database holds them. Provider replies and opt-outs are
 * counted in providers/throughTheService.test.ts, the other families in webhooks.test.ts.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { sampleValue } from './support/prometheus.ts'
import { acceptedTrigger, bearer, createCampaign, json, scrapeMetrics, seedOrganization, startService, taskOf, type TestService } from './support/service.ts'

const ALWAYS_OPEN = { timezone: 'contact', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '00:00', end: '24:00' }] }
const HOUR = 3_600_000

let service: TestService
let org: Awaited<ReturnType<typeof seedOrganization>>
let now = Date.parse('2026-06-01T10:00:00Z')
let routingKeys = 0

before(async () => {
  service = await startService({ now: () => now })
  org = await seedOrganization(service.app, { scopes: ['triggers:write', 'triggers:read', 'campaigns:manage'] })
})
after(() => service.close())

async function campaign(settings: Record<string, unknown>): Promise<string> {
  return (await createCampaign(service.app, org.orgId, { routing_key: `metrics-${++routingKeys}`, channel: 'voice', ...settings })).routing_key
}

function trigger(routingKey: string, candidate = `c-${Math.random()}`) {
  return acceptedTrigger(service.app, org.key, {
    campaign: routingKey,
    ids: [{ source: 'ats', type: 'candidate', value: candidate }],
    contact: { phone: '+442079460958' },
  })
}

async function at(instant: number) {
  now = instant
  await service.app.workers!.dispatcher.runOnce()
}

/** The counters and gauges of this file's concern, as /metrics answers them now. */
async function figures() {
  const families = await scrapeMetrics(service.app)
  return {
    completed: (outcome: string) => sampleValue(families, 'conversation_trigger_tasks_completed_total', 'conversation_trigger_tasks_completed_total', { channel: 'voice', outcome }) ?? 0,
    finalized: (outcome: string) =>
      sampleValue(families, 'conversation_trigger_interactions_finalized_total', 'conversation_trigger_interactions_finalized_total', { provider: 'simulator', channel: 'voice', outcome }) ?? 0,
    inProgress: sampleValue(families, 'conversation_trigger_tasks_in_progress', 'conversation_trigger_tasks_in_progress'),
    running: sampleValue(families, 'conversation_trigger_interactions_running', 'conversation_trigger_interactions_running'),
    completedAll: sampleValue(families, 'conversation_trigger_tasks_completed_total', 'conversation_trigger_tasks_completed_total') ?? 0,
    types: Object.fromEntries([...families].map(([name, family]) => [name, family.type])),
  }
}

describe('/metrics', () => {
  test('counts each task completed by its outcome and each interaction finalized by provider and outcome, once, after its commit', async () => {
    const before = await figures()
    assert.equal(before.types.conversation_trigger_tasks_completed_total, 'counter')
    assert.equal(before.types.conversation_trigger_interactions_finalized_total, 'counter')
    assert.equal(before.types.conversation_trigger_tasks_in_progress, 'gauge')

    // One call that is not answered, then one that is: two interactions, one task reached.
    const retried = await campaign({ schedule: ALWAYS_OPEN, provider_config: { outcomes: ['no_answer', 'completed'], duration_ms: 1000 }, attempts: { retry_delays_s: { no_answer: 60 } } })
    const reached = await trigger(retried)
    await at(now)
    const running = await figures()
    assert.equal(running.inProgress, 1)
    assert.equal(running.running, 1)
    await at(now + 1000)
    assert.equal((await taskOf(service.app, org.key, reached.task_id)).status, 'pending')
    const between = await figures()
    assert.equal(between.inProgress, 0)
    assert.equal(between.finalized('no_answer') - before.finalized('no_answer'), 1)
    assert.equal(between.completed('reached') - before.completed('reached'), 0)
    await at(now + 60_000)
    await at(now + 1000)
    assert.equal((await taskOf(service.app, org.key, reached.task_id)).outcome, 'reached')
    // Settling again finds nothing to settle, and counts nothing more.
    await at(now + HOUR)

    // A cancel while the call runs: the task is cancelled, and its call is finalized when it ends, the task untouched.
    const long = await campaign({ schedule: ALWAYS_OPEN, provider_config: { outcomes: ['completed'], duration_ms: 5000 } })
    const cancelled = await trigger(long)
    await at(now)
    const cancel = await service.app.inject({ method: 'POST', url: `/api/v2/tasks/${cancelled.task_id}/cancel`, headers: bearer(org.key) })
    assert.equal(cancel.statusCode, 200, cancel.body)
    const again = await service.app.inject({ method: 'POST', url: `/api/v2/tasks/${cancelled.task_id}/cancel`, headers: bearer(org.key) })
    assert.equal(again.statusCode, 409)
    assert.equal((await figures()).inProgress, 0, 'a cancelled task is no longer in progress, though its call runs')
    await at(now + 5000)

    // Two tasks of one person, cancelled by the client's ids in one request.
    const waiting = await campaign({ schedule: { timezone: 'UTC', windows: [{ days: ['sun'], start: '09:00', end: '10:00' }] } })
    await trigger(waiting, 'withdrawn')
    await trigger(waiting, 'withdrawn')
    const byIds = await service.app.inject({
      method: 'POST',
      url: '/api/v2/tasks/cancel',
      headers: { ...bearer(org.key), 'content-type': 'application/json' },
      payload: { ids: [{ source: 'ats', type: 'candidate', value: 'withdrawn' }] },
    })
    assert.equal(byIds.statusCode, 200, byIds.body)
    assert.equal(json(byIds).data.length, 2)

    // Expired at dispatch: no window opens before the task's expiry.
    const closed = await campaign({ schedule: { timezone: 'UTC', windows: [{ days: ['sun'], start: '09:00', end: '10:00' }] }, attempts: { expire_after_s: 3600 } })
    await trigger(closed)
    await at(now)
    await at(now + HOUR)

    // Expired while its campaign is paused: the dispatcher never takes it, and its expiry sweep completes it.
    const paused = await campaign({ schedule: ALWAYS_OPEN, attempts: { expire_after_s: 3600 } })
    await trigger(paused)
    const pause = await service.app.inject({ method: 'POST', url: `/api/v2/campaigns/${paused}/pause`, headers: bearer(org.key) })
    assert.equal(pause.statusCode, 200, pause.body)
    await at(now + 2 * HOUR)

    const after = await figures()
    const completedSince = (outcome: string) => after.completed(outcome) - before.completed(outcome)
    const finalizedSince = (outcome: string) => after.finalized(outcome) - before.finalized(outcome)
    assert.deepEqual(
      { reached: completedSince('reached'), cancelled: completedSince('cancelled'), expired: completedSince('expired') },
      { reached: 1, cancelled: 3, expired: 2 },
    )
    assert.deepEqual({ no_answer: finalizedSince('no_answer'), completed: finalizedSince('completed') }, { no_answer: 1, completed: 2 })
    assert.equal(after.inProgress, 0)
    // Every task this service completed, counted once (the file's service is its own).
    const [completedTasks] = await service.db.query<{ count: number }>(`SELECT count(*)::int AS count FROM tasks WHERE status = 'completed'`)
    assert.equal(after.completedAll, completedTasks!.count)
  })

  test("the oldest due task's age: of every campaign, and of those the dispatchers take (not paused)", async () => {
    const ages = async () => {
      const families = await scrapeMetrics(service.app)
      return {
        due: sampleValue(families, 'conversation_trigger_tasks_oldest_due_age_seconds', 'conversation_trigger_tasks_oldest_due_age_seconds'),
        dispatchable: sampleValue(families, 'conversation_trigger_tasks_oldest_dispatchable_age_seconds', 'conversation_trigger_tasks_oldest_dispatchable_age_seconds'),
      }
    }
    assert.deepEqual(await ages(), { due: 0, dispatchable: 0 })
    const paused = await campaign({ schedule: ALWAYS_OPEN })
    await trigger(paused)
    const pause = await service.app.inject({ method: 'POST', url: `/api/v2/campaigns/${paused}/pause`, headers: bearer(org.key) })
    assert.equal(pause.statusCode, 200, pause.body)
    now += 600_000
    const running = await campaign({ schedule: ALWAYS_OPEN })
    await trigger(running)
    now += 60_000
    // The paused campaign's task has been due 11 minutes, the running one's 1.
    assert.deepEqual(await ages(), { due: 660, dispatchable: 60 })
    await at(now)
    assert.deepEqual(await ages(), { due: 660, dispatchable: 0 })
    const resume = await service.app.inject({ method: 'POST', url: `/api/v2/campaigns/${paused}/resume`, headers: bearer(org.key) })
    assert.equal(resume.statusCode, 200, resume.body)
    assert.deepEqual(await ages(), { due: 660, dispatchable: 660 })
  })
})
