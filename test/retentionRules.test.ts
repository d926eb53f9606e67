/** The retention and audit rules, as pure functions (domain/retention.ts, domain/audit.ts). */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { auditedUrl } from '../src/domain/audit.ts'
import { DEFAULT_RETENTION_DAYS, dueHistory, historyDueAt, retentionCutoff, type SweptEvent } from '../src/domain/retention.ts'

const DAY_MS = 86_400_000
const NOW = Date.parse('2026-11-25T12:00:00Z')

test('the cutoff is retention_days before now, the default when unset', () => {
  const cases: [number | null, number][] = [
    [null, NOW - DEFAULT_RETENTION_DAYS * DAY_MS],
    [1, NOW - DAY_MS],
    [30, NOW - 30 * DAY_MS],
  ]
  for (const [days, cutoff] of cases) assert.equal(retentionCutoff(NOW, days), cutoff, `retention_days ${days}`)
  assert.equal(DEFAULT_RETENTION_DAYS, 365)
})

test('due history: what each event removes, read up to the first not due or the first held', () => {
  const cutoff = 1_000_000_000
  const at = (hoursBeforeCutoff: number, removes: SweptEvent['removes'] = null): SweptEvent => ({ createdAt: cutoff - hoursBeforeCutoff * 3_600_000, removes })
  const cases: {
    name: string
    events: SweptEvent[]
    held?: string[]
    taskIds?: string[]
    interactionIds?: string[]
    eventIds?: string[]
    through: number | undefined
    stoppedAt: 'cutoff' | 'held' | 'end'
    next?: number
  }[] = [
    { name: 'no events', events: [], through: undefined, stoppedAt: 'end' },
    {
      name: 'a completion removes its task, a message that answered no task its interaction, a test event itself; other events nothing',
      events: [at(5, { interaction: 'int_a' }), at(4), at(4, { task: 'tsk_a' }), at(3, { event: 'evt_t' }), at(0, { task: 'tsk_b' })],
      taskIds: ['tsk_a'],
      interactionIds: ['int_a'],
      eventIds: ['evt_t'],
      through: 3,
      stoppedAt: 'cutoff',
      next: 4,
    },
    { name: 'all due: every event read', events: [at(5, { task: 'tsk_a' }), at(4), at(3, { task: 'tsk_b' })], taskIds: ['tsk_a', 'tsk_b'], through: 2, stoppedAt: 'end' },
    {
      name: 'the first not due stops the reading, even before older ones (commit order is not time order)',
      events: [at(2, { task: 'tsk_a' }), at(0, { task: 'tsk_b' }), at(1, { task: 'tsk_c' })],
      taskIds: ['tsk_a'],
      through: 0,
      stoppedAt: 'cutoff',
      next: 1,
    },
    { name: 'nothing due yet', events: [at(-1, { task: 'tsk_a' })], through: undefined, stoppedAt: 'cutoff', next: 0 },
    {
      name: 'a held task stops the reading before it: nothing after it is passed over',
      events: [at(5, { task: 'tsk_a' }), at(4, { task: 'tsk_b' }), at(3, { task: 'tsk_c' })],
      held: ['tsk_b'],
      taskIds: ['tsk_a'],
      through: 0,
      stoppedAt: 'held',
      next: 1,
    },
    { name: 'a held message, the same', events: [at(5, { interaction: 'int_a' }), at(4, { task: 'tsk_b' })], held: ['int_a'], through: undefined, stoppedAt: 'held', next: 0 },
  ]
  for (const { name, events, held = [], taskIds = [], interactionIds = [], eventIds = [], through, stoppedAt, next } of cases) {
    const due = dueHistory(events, cutoff, new Set(held))
    assert.deepEqual(due.taskIds, taskIds, name)
    assert.deepEqual(due.interactionIds, interactionIds, name)
    assert.deepEqual(due.eventIds, eventIds, name)
    assert.equal(due.through, through === undefined ? undefined : events[through], name)
    assert.equal(due.stoppedAt, stoppedAt, name)
    assert.equal(due.next, next === undefined ? undefined : events[next], name)
  }
})

test('history is next due when the first event not read past is, or a retention from now when every one was', () => {
  const cases: [string, { createdAt: number } | undefined, number | null, number][] = [
    ['an event waits: its time plus the retention', { createdAt: NOW - 3 * DAY_MS }, 30, NOW + 27 * DAY_MS],
    ['one overdue (held): already due', { createdAt: NOW - 40 * DAY_MS }, 30, NOW - 10 * DAY_MS],
    ['none: what comes from now on', undefined, 30, NOW + 30 * DAY_MS],
    ['the default retention', undefined, null, NOW + DEFAULT_RETENTION_DAYS * DAY_MS],
  ]
  for (const [name, next, days, due] of cases) assert.equal(historyDueAt(next, NOW, days), due, name)
})

test('an audited webhook URL keeps its origin only: paths and queries carry receivers\' tokens', () => {
  const cases: [string, string][] = [
    ['https://hooks.example.com/services/T000/B000/XXXX', 'https://hooks.example.com'],
    ['https://example.com:8443/hook?token=abc', 'https://example.com:8443'],
    ['https://user:pass@example.com/hook', 'https://example.com'],
    ['http://127.0.0.1:9/hooks', 'http://127.0.0.1:9'],
  ]
  for (const [url, audited] of cases) assert.equal(auditedUrl(url), audited, url)
})
