/**
 * Reach statistics through the service (GET /api/v2/reach-statistics): a
 * known history made by triggers to a simulator campaign on an injected
 * clock, read back exactly by the person's local hour and weekday, attempt
 * number and time to reach, across a change of the clocks and for a number
 * of two zones; the same before and after the sweep moves the counts.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { ROOT } from './support/cli.ts'
import { bearer, createCampaign, json, postTrigger, seedOrganization, startService, taskOf, type TestService } from './support/service.ts'

let service: TestService
let org: Awaited<ReturnType<typeof seedOrganization>>
let now = Date.parse('2026-03-01T00:00:00Z')
const ROUTING_KEY = 'reach'

before(async () => {
  service = await startService({ now: () => now })
  org = await seedOrganization(service.app)
  await createCampaign(service.app, org.orgId, {
    routing_key: ROUTING_KEY,
    channel: 'voice',
    // Open at every hour, so that each attempt goes an hour after the one before.
    schedule: { timezone: 'contact', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '00:00', end: '24:00' }] },
    attempts: { max: 3, retry_delays_s: { no_answer: 3_600 } },
    // Each call lasts 2 s, which the simulator reports as no duration of its own: its end less its start.
    provider_config: { outcomes: ['no_answer', 'no_answer', 'completed'], duration_ms: 2_000 },
  })
})
after(() => service.close())

/** A trigger at `instant`, and each of its three attempts made as it comes due; answers its task. */
async function calledThrice(instant: string, phone: string): Promise<any> {
  now = Date.parse(instant)
  const response = await postTrigger(service.app, org.key, { campaign: ROUTING_KEY, contact: { phone } })
  assert.equal(response.statusCode, 201, response.body)
  const taskId = json(response).data.task_id
  for (let attempt = 1; attempt <= 3; attempt++) {
    await service.app.workers!.dispatcher.runOnce()
    now += 2_000
    await service.app.workers!.dispatcher.runOnce()
    const task = await taskOf(service.app, org.key, taskId)
    if (task.next_attempt_at !== null) now = Date.parse(task.next_attempt_at)
  }
  const task = await taskOf(service.app, org.key, taskId)
  assert.equal(task.outcome, 'reached', JSON.stringify(task))
  return task
}

const statistics = async (query: string) => {
  const response = await service.app.inject({ method: 'GET', url: `/api/v2/reach-statistics?${query}`, headers: bearer(org.key) })
  assert.equal(response.statusCode, 200, response.body)
  return json(response).data
}

describe('a known history', () => {
  before(async () => {
    // Monday 1 June 2026, 18:00 in Berlin.
    await calledThrice('2026-06-01T16:00:00Z', '+49 30 901820')
    // Sunday 8 March 2026, 01:30 in New York: the clocks go forward at 02:00, so the second attempt,
    // an hour later, starts at 03:30 EDT.
    await calledThrice('2026-03-08T06:30:00Z', '+1 212 736 3100')
    // An Idaho number, in Los Angeles' zone or Boise's: counted in the first, 09:00 PDT (10:00 in Boise).
    await calledThrice('2026-06-01T16:00:00Z', '+1 208 244 5000')
  })

  test('by local weekday and hour, attempt number, outcome, date and time to reach', async () => {
    const read = await statistics(`from=2026-03-01&to=2026-06-30&campaign=${ROUTING_KEY}`)
    assert.deepEqual(
      read.by_hour.map((cell: any) => [cell.weekday, cell.hour, cell.attempts, cell.reached]),
      [
        ['mon', 9, 1, 0],
        ['mon', 10, 1, 0],
        ['mon', 11, 1, 1],
        ['mon', 18, 1, 0],
        ['mon', 19, 1, 0],
        ['mon', 20, 1, 1],
        ['sun', 1, 1, 0],
        ['sun', 3, 1, 0],
        ['sun', 4, 1, 1],
      ],
    )
    assert.deepEqual(read.by_attempt, [
      { attempt: 1, attempts: 3, reached: 0 },
      { attempt: 2, attempts: 3, reached: 0 },
      { attempt: 3, attempts: 3, reached: 3 },
    ])
    assert.deepEqual(read.outcomes, { no_answer: 6, completed: 3 })
    assert.equal(read.attempts, 9)
    assert.equal(read.attempt_seconds, 9 * 2)
    assert.equal(read.reached, 3)
    assert.deepEqual(read.rates, { reach: 3 / 9, voicemail: 0, no_answer: 6 / 9 })
    assert.deepEqual(
      read.by_day.map((day: any) => [day.date, day.attempts, day.reached]),
      [
        ['2026-03-08', 3, 1],
        ['2026-06-01', 6, 2],
      ],
    )
    // Each person was reached two hours and 4 s (the two 2-second calls before) after their trigger: between 1 and 4 hours.
    assert.deepEqual(
      read.time_to_reach.buckets.map((bucket: any) => [bucket.up_to_s, bucket.reached]),
      [
        [300, 0],
        [3_600, 0],
        [14_400, 3],
        [86_400, 0],
        [259_200, 0],
        [604_800, 0],
        [null, 0],
      ],
    )
    assert.equal(read.time_to_reach.mean_s, 7_204)
  })

  test('the period is of local dates; a campaign, a channel and test mode narrow it', async () => {
    // 23:30 UTC on 7 March would be the 8th in Berlin, but New York's attempts were on its 8th, local.
    assert.equal((await statistics('from=2026-03-08&to=2026-03-08')).attempts, 3)
    assert.equal((await statistics('from=2026-03-09&to=2026-05-31')).attempts, 0)
    const empty = await statistics('from=2026-03-09&to=2026-05-31')
    assert.deepEqual(
      { by_hour: empty.by_hour, by_attempt: empty.by_attempt, rates: empty.rates, mean_s: empty.time_to_reach.mean_s },
      { by_hour: [], by_attempt: [], rates: { reach: null, voicemail: null, no_answer: null }, mean_s: null },
    )
    assert.equal((await statistics('from=2026-03-01&to=2026-06-30&campaign=screening')).attempts, 0)
    assert.equal((await statistics('from=2026-03-01&to=2026-06-30&channel=whatsapp')).attempts, 0)
    assert.equal((await statistics('from=2026-03-01&to=2026-06-30&test_mode=true')).attempts, 0)
    assert.equal((await statistics('from=2026-03-01&to=2026-06-30&channel=voice')).attempts, 9)
  })

  test("migration 051's count of the interactions kept before it comes to the same as the counts written since", async () => {
    const counted = await statistics('from=2026-03-01&to=2026-06-30')
    const migration = readFileSync(path.join(ROOT, 'src/store/migrations/051_reach_counts.sql'), 'utf8')
    const backfill = migration.slice(migration.indexOf('INSERT INTO reach_counts'))
    // The live counts put aside, the backfill's read, then the live counts back (as changes, which the sweep test moves).
    await service.db.exec('CREATE TABLE reach_counted_live AS SELECT * FROM reach_counts UNION ALL SELECT * FROM reach_count_changes')
    await service.db.exec('DELETE FROM reach_counts; DELETE FROM reach_count_changes')
    await service.db.exec(backfill)
    const backfilled = await statistics('from=2026-03-01&to=2026-06-30')
    // All of them changes again: reach_hours, which the sweep adds them to as it moves them, starts again from none.
    await service.db.exec('DELETE FROM reach_counts; DELETE FROM reach_hours; INSERT INTO reach_count_changes SELECT * FROM reach_counted_live; DROP TABLE reach_counted_live')
    // The backfill measures the delay from the trigger's row (created_at), the live count from its id: the same millisecond.
    assert.deepEqual(backfilled, counted)
  })

  test('the same once the sweep has moved the counts, and after the history itself is gone', async () => {
    const before = await statistics('from=2026-03-01&to=2026-06-30')
    const [pending] = await service.db.query<{ n: number }>('SELECT count(*)::int AS n FROM reach_count_changes')
    assert.ok(pending!.n > 0, 'changes wait to be moved')
    now += 2_000
    await service.app.workers!.dispatcher.runOnce()
    const [left] = await service.db.query<{ n: number }>('SELECT count(*)::int AS n FROM reach_count_changes')
    assert.equal(left!.n, 0)
    assert.deepEqual(await statistics('from=2026-03-01&to=2026-06-30'), { ...before })
    // And by the hour of the week, as learned timing reads them (migration 052): Monday 18:00 is hour 18, Sunday 04:00 hour 148.
    const hours = await service.db.query<{ hour_of_week: number; attempts: number; reached: number }>(
      'SELECT hour_of_week, attempts::int, reached::int FROM reach_hours WHERE org_id = $1 ORDER BY hour_of_week',
      [org.orgId],
    )
    assert.deepEqual(
      hours.map((row) => [row.hour_of_week, row.attempts, row.reached]),
      before.by_hour.map((cell: any) => [['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'].indexOf(cell.weekday) * 24 + cell.hour, cell.attempts, cell.reached]),
    )
    await service.db.exec('DELETE FROM delivery_attempts; DELETE FROM deliveries; DELETE FROM events; DELETE FROM interactions')
    assert.deepEqual((await statistics('from=2026-03-01&to=2026-06-30')).by_attempt, before.by_attempt)
  })

  test('a range the wrong way round or over a year, and a bad date, are 422s', async () => {
    for (const query of ['from=2026-06-02&to=2026-06-01', 'from=2025-01-01&to=2026-06-01', 'from=2026-02-30&to=2026-03-01', 'to=2026-03-01']) {
      const response = await service.app.inject({ method: 'GET', url: `/api/v2/reach-statistics?${query}`, headers: bearer(org.key) })
      assert.equal(response.statusCode, 422, `${query}: ${response.body}`)
    }
  })
})
