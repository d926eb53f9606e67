import assert from 'node:assert/strict'
import { test } from 'node:test'
import { type SessionMessageContent, sessionMessageProblems } from '../src/channels/sessionMessages.ts'
import { sessionMessagePayload } from '../src/channels/whatsappCloud/sessionMessages.ts'

const rows = (count: number, prefix = 'r') => Array.from({ length: count }, (_, index) => ({ id: `${prefix}${index}`, title: `Row ${index}` }))

test("what WhatsApp refuses of a message within the schema's bounds, each at its field", () => {
  const cases: [string, SessionMessageContent, (string | number)[][]][] = [
    ['a text', { text: 'Hello' }, []],
    ['nothing', {}, [[]]],
    ['two kinds at once', { text: 'Hello', buttons: { body: 'Pick', options: [{ id: 'a', title: 'A' }] } }, [[]]],
    ['buttons told apart', { buttons: { body: 'Pick', options: [{ id: 'a', title: 'A' }, { id: 'b', title: 'B' }] } }, []],
    ['a button id twice', { buttons: { body: 'Pick', options: [{ id: 'a', title: 'A' }, { id: 'a', title: 'B' }] } }, [['buttons', 'options', 1, 'id']]],
    ['a button title twice', { buttons: { body: 'Pick', options: [{ id: 'a', title: 'A' }, { id: 'b', title: 'A' }] } }, [['buttons', 'options', 1, 'title']]],
    ['ten rows in two sections', { list: { body: 'Pick', button: 'Open', sections: [{ title: 'Mornings', rows: rows(5, 'm') }, { title: 'Afternoons', rows: rows(5, 'a') }] } }, []],
    ['eleven rows', { list: { body: 'Pick', button: 'Open', sections: [{ title: 'Mornings', rows: rows(6, 'm') }, { title: 'Afternoons', rows: rows(5, 'a') }] } }, [['list', 'sections']]],
    ['a row id twice across sections', { list: { body: 'Pick', button: 'Open', sections: [{ title: 'A', rows: rows(1) }, { title: 'B', rows: rows(1) }] } }, [['list', 'sections', 1, 'rows', 0, 'id']]],
    ['one section needs no title', { list: { body: 'Pick', button: 'Open', sections: [{ rows: rows(2) }] } }, []],
    ['several sections each need one', { list: { body: 'Pick', button: 'Open', sections: [{ title: 'A', rows: rows(1, 'a') }, { rows: rows(1, 'b') }] } }, [['list', 'sections', 1, 'title']]],
  ]
  for (const [name, content, locs] of cases) assert.deepEqual(sessionMessageProblems(content).map((problem) => problem.loc), locs, name)
})

test("each kind as the Cloud API takes it, to the person's WhatsApp number", () => {
  const envelope = { messaging_product: 'whatsapp', recipient_type: 'individual', to: '442079460958' }
  assert.deepEqual(sessionMessagePayload('+442079460958', { text: 'See https://example.com' }), { ...envelope, type: 'text', text: { body: 'See https://example.com', preview_url: false } })
  assert.deepEqual(sessionMessagePayload('+442079460958', { buttons: { body: 'Pick', options: [{ id: 'a', title: 'A' }] } }), {
    ...envelope,
    type: 'interactive',
    interactive: { type: 'button', body: { text: 'Pick' }, action: { buttons: [{ type: 'reply', reply: { id: 'a', title: 'A' } }] } },
  })
  const sections = [{ title: 'Mornings', rows: [{ id: 'm1', title: '9:00', description: 'Front desk' }] }]
  assert.deepEqual(sessionMessagePayload('+442079460958', { list: { body: 'Pick a time', button: 'Times', sections } }), {
    ...envelope,
    type: 'interactive',
    interactive: { type: 'list', body: { text: 'Pick a time' }, action: { button: 'Times', sections } },
  })
})
