/** The retention and audit rules, as pure functions (domain/retention.ts, domain/audit.ts). */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { auditedUrl } from '../src/domain/audit.ts'
import { DEFAULT_RETENTION_DAYS, dueForErasure, retentionCutoff, type SweepEvent } from '../src/domain/retention.ts'

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

test('due for erasure: the completions read before the first event at or after the cutoff', () => {
  const at = (hoursBeforeCutoff: number, completedTaskId: string | null = null, tasklessInteractionId: string | null = null): SweepEvent => ({
    createdAt: 1_000_000_000 - hoursBeforeCutoff * 3_600_000,
    completedTaskId,
    tasklessInteractionId,
  })
  const cutoff = 1_000_000_000
  const cases: { name: string; events: SweepEvent[]; taskIds: string[]; interactionIds?: string[]; through: number | undefined; reachedCutoff: boolean }[] = [
    { name: 'no events', events: [], taskIds: [], through: undefined, reachedCutoff: false },
    {
      name: 'a message that answered no task is due as a completion is',
      events: [at(5, null, 'int_a'), at(4, 'tsk_a'), at(0, null, 'int_b')],
      taskIds: ['tsk_a'],
      interactionIds: ['int_a'],
      through: 1,
      reachedCutoff: true,
    },
    {
      name: 'all due: completions only, every event read',
      events: [at(5, 'tsk_a'), at(4), at(3, 'tsk_b')],
      taskIds: ['tsk_a', 'tsk_b'],
      through: 2,
      reachedCutoff: false,
    },
    { name: 'the first not due stops the reading', events: [at(2, 'tsk_a'), at(0, 'tsk_b'), at(1, 'tsk_c')], taskIds: ['tsk_a'], through: 0, reachedCutoff: true },
    { name: 'nothing due yet', events: [at(-1, 'tsk_a')], taskIds: [], through: undefined, reachedCutoff: true },
  ]
  for (const { name, events, taskIds, interactionIds = [], through, reachedCutoff } of cases) {
    const due = dueForErasure(events, cutoff)
    assert.deepEqual(due.taskIds, taskIds, name)
    assert.deepEqual(due.tasklessInteractionIds, interactionIds, name)
    assert.equal(due.through, through === undefined ? undefined : events[through], name)
    assert.equal(due.reachedCutoff, reachedCutoff, name)
  }
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
