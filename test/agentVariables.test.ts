/** The variables an agent platform receives for an attempt: the rules of src/domain/agentVariables.ts, case by case. */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { type AgentAttempt, type AgentVariableOptions, type AgentVariables, agentVariables } from '../src/domain/agentVariables.ts'

const BASE: AgentAttempt = { interactionId: 'int_1', taskId: 'tsk_1', attempt: 2, firstName: undefined, language: undefined, ids: [], context: {} }
const OWN = { interaction_id: 'int_1', task_id: 'tsk_1', attempt: 2 }

const CASES: [name: string, attempt: Partial<AgentAttempt>, options: AgentVariableOptions, expected: AgentVariables][] = [
  ['the service’s own alone', {}, {}, { variables: OWN, leftOut: [] }],
  [
    'first name and language when known, then each id by its type',
    { firstName: 'Ana', language: 'es-ES', ids: [{ source: 'ats', type: 'candidate_id', value: 'C-17' }, { source: 'ats', type: 'application', value: 'A-9' }] },
    {},
    { variables: { ...OWN, first_name: 'Ana', language: 'es-ES', candidate_id: 'C-17', application: 'A-9' }, leftOut: [] },
  ],
  [
    'two ids of one type: the first wins',
    { ids: [{ source: 'ats', type: 'candidate_id', value: 'C-17' }, { source: 'crm', type: 'candidate_id', value: 'X-1' }] },
    {},
    { variables: { ...OWN, candidate_id: 'C-17' }, leftOut: [{ key: 'candidate_id', reason: 'another external id of the same type came first' }] },
  ],
  [
    'an id named as one of the service’s own is left out',
    { ids: [{ source: 'ats', type: 'task_id', value: 'T-1' }] },
    {},
    { variables: OWN, leftOut: [{ key: 'task_id', reason: 'the name of an earlier variable' }] },
  ],
  [
    'context: scalars as they are, nested objects flattened with "_", arrays as JSON text, null and empty objects left out',
    { context: { role: 'Nurse', hours: 38.5, remote: false, job: { title: 'Nurse', site: { city: 'Leeds' } }, shifts: ['night', 'day'], note: null, extra: {} } },
    {},
    {
      variables: { ...OWN, role: 'Nurse', hours: 38.5, remote: false, job_title: 'Nurse', job_site_city: 'Leeds', shifts: '["night","day"]' },
      leftOut: [
        { key: 'note', reason: 'null' },
        { key: 'extra', reason: 'an empty object' },
      ],
    },
  ],
  [
    'a key that collides with an earlier one is left out: what comes first wins',
    { firstName: 'Ana', context: { job_title: 'Nurse', job: { title: 'Doctor' }, first_name: 'Eve', attempt: 9 } },
    {},
    {
      variables: { ...OWN, first_name: 'Ana', job_title: 'Nurse' },
      leftOut: [
        { key: 'job_title', reason: 'the name of an earlier variable' },
        { key: 'first_name', reason: 'the name of an earlier variable' },
        { key: 'attempt', reason: 'the name of an earlier variable' },
      ],
    },
  ],
  [
    'stringsOnly: every value as text',
    { context: { hours: 38.5, remote: false, tags: [1, 2] } },
    { stringsOnly: true },
    { variables: { interaction_id: 'int_1', task_id: 'tsk_1', attempt: '2', hours: '38.5', remote: 'false', tags: '[1,2]' }, leftOut: [] },
  ],
  [
    'a value longer than maxValueLength is left out, not cut (characters, not bytes)',
    { context: { short: 'ééééé', long: 'éééééé' } },
    { maxValueLength: 5 },
    { variables: { ...OWN, short: 'ééééé' }, leftOut: [{ key: 'long', reason: 'longer than 5 characters' }] },
  ],
  [
    'past maxVariables the rest are left out',
    { context: { a: 1, b: 2 } },
    { maxVariables: 4 },
    { variables: { ...OWN, a: 1 }, leftOut: [{ key: 'b', reason: 'more than 4 variables' }] },
  ],
  [
    // {"interaction_id":"int_1","task_id":"tsk_1","attempt":2} is 56 bytes; ,"a":"xxxxxx" 13 more; ,"b":1 6 more.
    'one that would pass maxTotalBytes is left out; a later, smaller one may still fit',
    { context: { a: 'xxxxxx', b: 1 } },
    { maxTotalBytes: 62 },
    { variables: { ...OWN, b: 1 }, leftOut: [{ key: 'a', reason: 'the variables would pass 62 bytes' }] },
  ],
]

for (const [name, attempt, options, expected] of CASES) {
  test(name, () => {
    const got = agentVariables({ ...BASE, ...attempt }, options)
    assert.deepEqual(got, expected)
    // Insertion order is what the platform receives.
    assert.deepEqual(Object.keys(got.variables), Object.keys(expected.variables))
  })
}

test('maxTotalBytes bounds the variables exactly as JSON in UTF-8', () => {
  const context = Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`k${i}`, 'ü'.repeat(i % 17)]))
  for (const maxTotalBytes of [56, 200, 1000, 1500]) {
    const { variables, leftOut } = agentVariables({ ...BASE, context }, { maxTotalBytes })
    assert.ok(Buffer.byteLength(JSON.stringify(variables)) <= maxTotalBytes, String(maxTotalBytes))
    assert.equal(Object.keys(variables).length + leftOut.length, 203)
  }
})
