/** What the events count by day, and how the counts read by campaign and day (domain/dailyCounts.ts), as pure functions. */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { campaignDays, countEvents, type DailyCount } from '../src/domain/dailyCounts.ts'
import type { OutboxEvent } from '../src/domain/events.ts'

const event = (type: OutboxEvent['type'], data: Record<string, unknown>, timestamp = '2026-03-02T23:59:59.000Z'): OutboxEvent => ({ id: 'evt_x', type, timestamp, data })
const completed = (outcome: string, attempts: number, at: string, extra: Record<string, unknown> = {}) =>
  event('task.completed', { campaign: 'screening', channel: 'voice', outcome, attempts, test_mode: false, completed_at: at, ...extra })
const ended = (outcome: string, seconds: number, at: string, extra: Record<string, unknown> = {}) =>
  event('interaction.finalized', { campaign: 'screening', channel: 'voice', outcome, direction: 'outbound', duration_s: seconds, test_mode: false, ended_at: at, ...extra })

test('each completion counts once under its UTC day, campaign, test mode and outcome; each interaction as an attempt or an inbound message', () => {
  const cases: { name: string; events: OutboxEvent[]; counts: Partial<DailyCount>[] }[] = [
    { name: 'nothing', events: [], counts: [] },
    {
      name: 'tasks of one key add up, with their attempts',
      events: [completed('reached', 1, '2026-03-02T09:00:00.000Z'), completed('reached', 3, '2026-03-02T23:59:59.999Z')],
      counts: [{ day: '2026-03-02', kind: 'task', outcome: 'reached', count: 2, attempts: 4, seconds: 0 }],
    },
    {
      name: 'the day is the completion\'s in UTC; test mode and outcome part the keys',
      events: [
        completed('reached', 1, '2026-03-03T00:00:00.000Z'),
        completed('reached', 1, '2026-03-02T10:00:00.000Z', { test_mode: true }),
        completed('expired', 0, '2026-03-02T10:00:00.000Z'),
      ],
      counts: [
        { day: '2026-03-03', testMode: false, outcome: 'reached', count: 1 },
        { day: '2026-03-02', testMode: true, outcome: 'reached', count: 1 },
        { day: '2026-03-02', testMode: false, outcome: 'expired', count: 1, attempts: 0 },
      ],
    },
    {
      name: 'interactions: by the day they ended, their seconds summed; an inbound message apart',
      events: [ended('no_answer', 0, '2026-03-02T10:00:00.000Z'), ended('completed', 95, '2026-03-02T11:00:00.000Z'), ended('completed', 5, '2026-03-02T12:00:00.000Z', { direction: 'inbound', channel: 'whatsapp', outcome: 'replied' })],
      counts: [
        { kind: 'outbound', outcome: 'no_answer', count: 1, seconds: 0 },
        { kind: 'outbound', outcome: 'completed', count: 1, seconds: 95 },
        { kind: 'inbound', channel: 'whatsapp', outcome: 'replied', count: 1, seconds: 5 },
      ],
    },
    {
      name: 'a result added later, a test event, and an event that does not say what it reports count nothing',
      events: [
        event('interaction.result_added', { campaign: 'screening', channel: 'voice', outcome: 'completed' }),
        event('webhook.test', { endpoint_id: 'whe_x' }),
        event('task.completed', { outcome: 'reached' }),
      ],
      counts: [],
    },
    {
      name: 'an event without its own instant counts under its timestamp',
      events: [event('task.completed', { campaign: 'screening', channel: 'voice', outcome: 'cancelled', attempts: 0, test_mode: false })],
      counts: [{ day: '2026-03-02', outcome: 'cancelled', count: 1 }],
    },
  ]
  for (const { name, events, counts } of cases) {
    const got = countEvents(events)
    assert.equal(got.length, counts.length, name)
    counts.forEach((expected, index) => assert.deepEqual({ ...got[index], ...expected }, got[index], `${name}: ${JSON.stringify(got[index])}`))
  }
})

test('counts read by day and campaign: every outcome of the channel named, oldest day first, a key read twice (moved and not yet) added up', () => {
  const count = (day: string, kind: DailyCount['kind'], outcome: string, n: number, extra: Partial<DailyCount> = {}): DailyCount => ({
    day,
    campaign: 'screening',
    channel: 'voice',
    testMode: false,
    kind,
    outcome,
    count: n,
    attempts: kind === 'task' ? 2 * n : 0,
    seconds: kind === 'outbound' ? 60 * n : 0,
    ...extra,
  })
  const days = campaignDays([
    count('2026-03-03', 'task', 'reached', 2),
    count('2026-03-02', 'outbound', 'no_answer', 3),
    count('2026-03-02', 'task', 'unreachable', 1),
    count('2026-03-02', 'inbound', 'replied', 4),
    count('2026-03-02', 'task', 'reached', 1, { channel: 'whatsapp' }),
    count('2026-03-02', 'outbound', 'no_answer', 2),
    count('2026-03-02', 'task', 'unreachable', 1),
    count('2026-03-01', 'task', 'reached', 1, { campaign: 'screening-b' }),
    count('2026-03-01', 'task', 'reached', 1, { campaign: 'screening.a' }),
    count('2026-03-01', 'task', 'reached', 1, { campaign: 'Screening' }),
  ])
  assert.deepEqual(
    days.map((day) => [day.day, day.campaign, day.channel, day.tasks.total, day.taskAttempts, day.outbound.total, day.outboundSeconds, day.inbound]),
    [
      // Campaigns in code-unit order: capitals, then '-', '.'.
      ['2026-03-01', 'Screening', 'voice', 1, 2, 0, 0, 0],
      ['2026-03-01', 'screening-b', 'voice', 1, 2, 0, 0, 0],
      ['2026-03-01', 'screening.a', 'voice', 1, 2, 0, 0, 0],
      ['2026-03-02', 'screening', 'voice', 2, 4, 5, 300, 4],
      ['2026-03-02', 'screening', 'whatsapp', 1, 2, 0, 0, 0],
      ['2026-03-03', 'screening', 'voice', 2, 4, 0, 0, 0],
    ],
  )
  assert.deepEqual(days[3]!.tasks, { total: 2, reached: 0, unreachable: 2, failed: 0, cancelled: 0, expired: 0, opted_out: 0, not_permitted: 0 })
  assert.deepEqual(days[3]!.outbound, { total: 5, completed: 0, no_answer: 5, busy: 0, voicemail: 0, voicemail_left: 0, failed: 0 })
  assert.deepEqual(Object.keys(days[4]!.outbound), ['total', 'replied', 'read', 'delivered', 'undelivered', 'failed'])
  // Each day its own counts: the zeros a day begins with are copies.
  assert.equal(days[0]!.tasks.unreachable, 0)
})
