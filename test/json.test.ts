/** Malformed JSON is located and described as CPython's json module (3.13) does, so 422s match FastAPI's; bodies nested too deep are refused. */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { ApiError, ValidationFailed } from '../src/domain/errors.ts'
import { locateJsonError, parseJsonBody } from '../src/validation/json.ts'

const CASES: [text: string, message: string, position: number][] = [
  ['', 'Expecting value', 0],
  [' ', 'Expecting value', 1],
  ['{', 'Expecting property name enclosed in double quotes', 1],
  ['{"a"', "Expecting ':' delimiter", 4],
  ['{"a":', 'Expecting value', 5],
  ['{"a": 1', "Expecting ',' delimiter", 7],
  ['{"a": 1,}', 'Illegal trailing comma before end of object', 7],
  ['{"a" 1}', "Expecting ':' delimiter", 5],
  ['[1,]', 'Illegal trailing comma before end of array', 2],
  ['{"a": 1} x', 'Extra data', 9],
  ["{'a': 1}", 'Expecting property name enclosed in double quotes', 1],
  ['{"a": tru}', 'Expecting value', 6],
  ['{"a": "abc', 'Unterminated string starting at', 6],
  ['{"a": "a\nb"}', 'Invalid control character at', 8],
  ['{"a": "\t"}', 'Invalid control character at', 7],
  ['{"a": "\\x"}', 'Invalid \\escape', 7],
  ['{"a": "\\u12"}', 'Invalid \\uXXXX escape', 8],
  ['{"a": 1 , }', 'Illegal trailing comma before end of object', 8],
  ['[1 , ]', 'Illegal trailing comma before end of array', 3],
  ['{"a": [1,]}', 'Illegal trailing comma before end of array', 8],
  ['[1,,]', 'Expecting value', 3],
  ['{"a":1,,}', 'Expecting property name enclosed in double quotes', 7],
  ['{"a": 01}', "Expecting ',' delimiter", 7],
  ['{"a": 1.}', "Expecting ',' delimiter", 7],
  ['{"a": .5}', 'Expecting value', 6],
  ['{"a": +1}', 'Expecting value', 6],
  ['[1 2]', "Expecting ',' delimiter", 3],
  ['{"a": [1, 2}', "Expecting ',' delimiter", 11],
  ['{"a": 1}}', 'Extra data', 8],
  ['nul', 'Expecting value', 0],
  ['{"a":"\\', 'Unterminated string starting at', 5],
  ['{"a": 1, "b"}', "Expecting ':' delimiter", 12],
]

for (const [text, message, position] of CASES) {
  test(`${JSON.stringify(text)} → ${message} at ${position}`, () => {
    assert.deepEqual(locateJsonError(text), { message, position })
  })
}

test('positions count code points, as Python does', () => {
  try {
    parseJsonBody('{"😀": x}')
    assert.fail('parsed')
  } catch (error) {
    assert.ok(error instanceof ValidationFailed)
    assert.deepEqual(error.detail[0]?.loc, ['body', 6])
  }
})

test('a byte order mark is ignored', () => {
  assert.deepEqual(parseJsonBody('\ufeff{"a": 1}'), { a: 1 })
})

test('deep nesting is reported, not a crash', () => {
  assert.equal(locateJsonError('['.repeat(200_000)).position, 0)
})

describe('nesting', () => {
  const nested = (levels: number, open = '[', close = ']') => `${open.repeat(levels)}${close.repeat(levels)}`
  const cases: { name: string; text: string; refused: boolean }[] = [
    { name: '1,000 levels of arrays are read', text: nested(1000), refused: false },
    { name: '1,001 levels of arrays are refused', text: nested(1001), refused: true },
    { name: 'objects count as arrays do', text: `${'{"a":'.repeat(1001)}1${'}'.repeat(1001)}`, refused: true },
    { name: 'a deep branch beside shallow ones is found', text: `{"shallow":[1,2,3],"deep":${nested(1000)}}`, refused: true },
    { name: 'brackets inside strings are text, not nesting', text: JSON.stringify({ note: '['.repeat(5000) }), refused: false },
  ]
  for (const { name, text, refused } of cases) {
    test(name, () => {
      if (refused) assert.throws(() => parseJsonBody(text), (error: unknown) => error instanceof ApiError && /nested more than 1000 levels/.test(error.message))
      else assert.doesNotThrow(() => parseJsonBody(text))
    })
  }
})
