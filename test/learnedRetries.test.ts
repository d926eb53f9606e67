/**
 * Learned retry timing through the service (attempts.timing "learned"):
 * after an unanswered call, the next attempt goes to the local hour where
 * the campaign has reached people most often, inside its schedule, with the
 * reason on the task as it waits and on the attempt's decision once placed;
 * a fixed campaign's retry keeps its delay. And the simulator's reach model,
 * which answers by the person's local hour.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { SimulatorChannel } from '../src/channels/simulator/simulatorChannel.ts'
import { HOURS_OF_WEEK, hourOfWeek, LEARNED_HORIZON_H } from '../src/domain/learnedTiming.ts'
import { createCampaign, json, OPERATOR_TOKEN, postTrigger, seedOrganization, startService, taskOf, type TestService } from './support/service.ts'

let service: TestService
let org: Awaited<ReturnType<typeof seedOrganization>>
let now = Date.parse('2026-06-01T14:00:00Z') // Monday 10:00 in New York
const NEW_YORK = 'America/New_York'
const PHONE = '+1 212 736 3100'
const nineToNine = { timezone: 'contact', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '09:00', end: '21:00' }] }

before(async () => {
  service = await startService({ now: () => now })
  org = await seedOrganization(service.app)
  for (const [routingKey, timing] of [
    ['learned', 'learned'],
    ['fixed', 'fixed'],
  ]) {
    await createCampaign(service.app, org.orgId, {
      routing_key: routingKey,
      channel: 'voice',
      schedule: nineToNine,
      attempts: { max: 3, retry_delays_s: { no_answer: 3_600 }, timing },
      provider_config: { outcomes: ['no_answer', 'no_answer', 'completed'] },
    })
  }
  // What the campaign learned: 18:00-18:59 local reaches 41 % of people, every other hour 5 %.
  const hours = Array.from({ length: HOURS_OF_WEEK }, (_, hour) => (hour % 24 === 18 ? [hour, 1_200, 492] : [hour, 1_000, 50]))
  await service.db.query(
    `INSERT INTO reach_hours (org_id, campaign, channel, hour_of_week, attempts, reached)
     SELECT $1, 'learned', 'voice', h, a, r FROM unnest($2::int[], $3::int[], $4::int[]) AS v(h, a, r)`,
    [org.orgId, hours.map((row) => row[0]), hours.map((row) => row[1]), hours.map((row) => row[2])],
  )
})
after(() => service.close())

/** A trigger to the campaign now, its first attempt made and ended unanswered; answers its task then. */
async function firstAttemptUnanswered(campaign: string): Promise<any> {
  const response = await postTrigger(service.app, org.key, { campaign, contact: { phone: PHONE } })
  assert.equal(response.statusCode, 201, response.body)
  await service.app.workers!.dispatcher.runOnce()
  now += 200
  await service.app.workers!.dispatcher.runOnce()
  return taskOf(service.app, org.key, json(response).data.task_id)
}

describe('a campaign of learned timing', () => {
  let waiting: any
  before(async () => {
    waiting = await firstAttemptUnanswered('learned')
  })

  test('goes on at 18:00 local, its best hour, within three days, and says why', () => {
    assert.equal(waiting.status, 'pending')
    const due = Date.parse(waiting.next_attempt_at)
    assert.equal(hourOfWeek(due, NEW_YORK) % 24, 18, waiting.next_attempt_at)
    assert.ok(due > now + 3_600_000 && due < now + LEARNED_HORIZON_H * 3_600_000, waiting.next_attempt_at)
    assert.equal(waiting.decision.decision, 'deferred')
    assert.equal(waiting.decision.not_before, waiting.next_attempt_at)
    const [reason] = waiting.decision.reasons
    assert.equal(reason.code, 'learned_hour')
    assert.equal(reason.rule, 'campaign.attempts.timing')
    assert.match(reason.source, /^attempt 2 at 18:00 local \((Mon|Tue|Wed|Thu)\): reach rate 41 % over 1,200 attempts in that hour of the week$/)
  })

  test('the attempt placed then keeps the reason on the decision that allowed it', async () => {
    now = Date.parse(waiting.next_attempt_at)
    await service.app.workers!.dispatcher.runOnce()
    const task = await taskOf(service.app, org.key, waiting.id)
    assert.equal(task.attempts, 2)
    assert.equal(task.decision, null)
    const placed = task.interactions.at(-1)
    assert.equal(placed.decision.decision, 'allowed')
    assert.deepEqual(placed.decision.reasons[0], waiting.decision.reasons[0])
    now += 200
    await service.app.workers!.dispatcher.runOnce()
  })

  test('the third attempt, with 18:00 tried for the person, goes to another hour', async () => {
    const task = await taskOf(service.app, org.key, waiting.id)
    assert.equal(task.status, 'pending')
    const due = Date.parse(task.next_attempt_at)
    assert.notEqual(hourOfWeek(due, NEW_YORK) % 24, 18, task.next_attempt_at)
    const local = hourOfWeek(due, NEW_YORK) % 24
    assert.ok(local >= 9 && local < 21, `${local}:00 is inside the schedule`)
    assert.match(task.decision.reasons[0].source, /^attempt 3 at \d\d:\d\d local/)
  })
})

test('a campaign of fixed timing goes on after its delay, with no decision of its own', async () => {
  now = Date.parse('2026-06-08T14:00:00Z')
  const task = await firstAttemptUnanswered('fixed')
  assert.equal(task.next_attempt_at, new Date(now + 3_600_000).toISOString())
  assert.equal(task.decision, null)
})

describe("the simulator's reach model", () => {
  const channel = new SimulatorChannel('voice')
  // Nobody answers but at 18:00-18:59; on Sundays nobody at all.
  const reach = { answer_rates: Array.from({ length: 24 }, (_, hour) => (hour === 18 ? 1 : 0)), weekday_factors: [1, 1, 1, 1, 1, 1, 0] }
  const settle = (startedAt: string, to = '+12127363100') =>
    channel.settle({ providerRef: 'sim_1', providerStatus: null, attempt: 1, config: { reach }, startedAt: Date.parse(startedAt), to })

  test('a campaign sets it through the admin API; rates of the wrong length or above 1 are 422s', async () => {
    const campaign = (routingKey: string, model: object) =>
      service.app.inject({
        method: 'POST',
        url: `/admin/v1/organizations/${org.orgId}/campaigns`,
        headers: { authorization: `Bearer ${OPERATOR_TOKEN}` },
        payload: { routing_key: routingKey, channel: 'voice', provider_config: { reach: model } },
      })
    const made = await campaign('modelled', reach)
    assert.equal(made.statusCode, 201, made.body)
    assert.deepEqual(json(made).data.provider_config.reach, reach)
    for (const [name, model] of [
      ['short', { answer_rates: [0.5] }],
      ['above', { answer_rates: Array.from({ length: 24 }, () => 1.5) }],
      ['weekdays', { answer_rates: reach.answer_rates, weekday_factors: [1, 1] }],
    ] as const) {
      const refused = await campaign(name, model)
      assert.equal(refused.statusCode, 422, `${name}: ${refused.body}`)
    }
  })

  test("answers by the person's local hour and weekday, in the zone of their number", async () => {
    assert.equal((await settle('2026-06-01T22:30:00Z')).outcome, 'completed') // Monday 18:30 in New York
    assert.equal((await settle('2026-06-01T14:30:00Z')).outcome, 'no_answer') // 10:30
    assert.equal((await settle('2026-06-07T22:30:00Z')).outcome, 'no_answer') // Sunday 18:30
    // 18:30 in Berlin is 16:30 UTC.
    assert.equal((await settle('2026-06-01T16:30:00Z', '+49309018200')).outcome, 'completed')
  })

  test('one person at one hour answers alike, whatever the attempt', async () => {
    const half = { answer_rates: Array.from({ length: 24 }, () => 0.5) }
    const outcomes = async (attempt: number) =>
      Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          channel.settle({ providerRef: 'sim_1', providerStatus: null, attempt, config: { reach: half }, startedAt: Date.parse('2026-06-01T14:00:00Z') + i * 3_600_000, to: '+12127363100' }),
        ),
      )
    const first = (await outcomes(1)).map((settled) => settled.outcome)
    assert.deepEqual((await outcomes(2)).map((settled) => settled.outcome), first)
    const answered = first.filter((outcome) => outcome === 'completed').length
    assert.ok(answered > 8 && answered < 32, `${answered} of 40 answered at a rate of 0.5`)
  })
})
