import assert from 'node:assert/strict'
import { test } from 'node:test'
import { decodeEventBody, encodeEventBody } from '../src/store/eventBodies.ts'

const EVENTS = [
  '{"id":"evt_01","type":"task.completed","timestamp":"2026-06-01T10:00:00.000Z","data":{"task_id":"tsk_01","ids":[],"result":null}}',
  JSON.stringify({ id: 'evt_02', type: 'interaction.finalized', data: { result: { summary: 'Jürgen a dit «oui» 👍', transcript: [{ role: 'contact', text: '陽翔' }] } } }),
  JSON.stringify({ id: 'evt_03', data: { transcript: 'x'.repeat(300_000) } }),
  '{}',
]

test('a body is the event JSON it was made from, deflated well below it', () => {
  for (const json of EVENTS) {
    const body = encodeEventBody(json)
    assert.equal(body[0], 1)
    assert.equal(decodeEventBody(body), json)
    // As PGlite returns a bytea: a Uint8Array over a larger buffer.
    const copy = new Uint8Array(body.length + 8)
    copy.set(body, 4)
    assert.equal(decodeEventBody(copy.subarray(4, 4 + body.length)), json)
  }
  const typical = EVENTS[0]!
  assert.ok(encodeEventBody(typical).length < typical.length / 2, `${encodeEventBody(typical).length} bytes of ${typical.length}`)
})

test('a body of format 0 (written before bodies were deflated) is its JSON; an unknown format is refused', () => {
  assert.equal(decodeEventBody(Buffer.concat([Buffer.from([0]), Buffer.from(EVENTS[1]!)])), EVENTS[1])
  assert.throws(() => decodeEventBody(Buffer.from([7, 1, 2])), /unknown format 7/)
})
