/**
 * What the one validator (src/validation/model.ts) says of the shapes the
 * provider configs need beyond a request body's: a union of a text and texts
 * by language, a dictionary's keys checked, its least size, and relations
 * between a model's fields that make one required.
 */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { Type } from '@sinclair/typebox'
import { refineKeys, refineModel, validate } from '../src/validation/model.ts'

const Text = Type.String({ maxLength: 5 })
const TextOrTexts = Type.Union([Text, refineKeys(Type.Record(Type.String(), Text, { minProperties: 1 }), (key) => (key === key.toLowerCase() ? undefined : 'keys are lowercase'))])
const kinds = (input: unknown) => validate(TextOrTexts, input, ['text']).errors.map((error) => [error.loc.join('.'), error.type])

describe('a union of schemas of different JSON types', () => {
  const table: [string, unknown, (string | undefined)[][], unknown][] = [
    ['a text is checked as a text', 'hi', [], 'hi'],
    ['a text too long, as a text', 'toolong', [['text', 'string_too_long']], undefined],
    ['texts by key, as a dictionary', { en: 'hi', de: 'hallo' }, [], { en: 'hi', de: 'hallo' }],
    ['a key refused, under the key then [key]', { EN: 'hi' }, [['text.EN.[key]', 'value_error']], undefined],
    ['a dictionary with too few entries', {}, [['text', 'too_short']], undefined],
    ['a value of neither type: an entry for each, by its name', 5, [['text.str', 'string_type'], ['text.dict[str,str]', 'dict_type']], undefined],
    ['a list is neither either', ['hi'], [['text.str', 'string_type'], ['text.dict[str,str]', 'dict_type']], undefined],
  ]
  for (const [name, input, expected, value] of table) {
    test(name, () => {
      assert.deepEqual(kinds(input), expected)
      assert.deepEqual(validate(TextOrTexts, input, ['text']).value, value)
    })
  }
})

describe('a union of an integer and a dictionary: lax values are taken by the option that takes them', () => {
  const IntOrMap = Type.Union([Type.Integer({ minimum: 1 }), Type.Record(Type.String(), Type.Integer())])
  test('"30" is 30, as an integer is read', () => assert.deepEqual(validate(IntOrMap, '30', ['n']), { value: 30, errors: [] }))
  test('"x" is neither: an entry for each', () =>
    assert.deepEqual(
      validate(IntOrMap, 'x', ['n']).errors.map((error) => [error.loc.join('.'), error.type]),
      [
        ['n.int', 'int_parsing'],
        ['n.dict[str,int]', 'dict_type'],
      ],
    ))
  test('a union it cannot tell apart is a fault of the schema, not a 422', () => {
    assert.throws(() => validate(Type.Union([Type.Literal('auto'), Type.Integer()]), 'abc', ['n']), /unions of literals/)
    assert.throws(() => validate(Type.Union([Type.String(), Type.String({ maxLength: 2 })]), 5, ['n']), /unions of literals/)
  })
})

describe('a number, as pydantic reads a float', () => {
  const Rate = Type.Number({ minimum: 0, maximum: 1 })
  const table: [string, unknown, string[], unknown][] = [
    ['a fraction', 0.25, [], 0.25],
    ['a whole number', 1, [], 1],
    ['a string that is one', ' 0.5 ', [], 0.5],
    ['in exponent form', '5e-1', [], 0.5],
    ['a string that is not', 'half', ['float_parsing'], undefined],
    ['above the maximum', 1.5, ['less_than_equal'], undefined],
    ['below the minimum', -0.1, ['greater_than_equal'], undefined],
    ['a list', [0.5], ['float_type'], undefined],
  ]
  for (const [name, input, expected, value] of table) {
    test(name, () => {
      const checked = validate(Rate, input, ['rate'])
      assert.deepEqual(checked.errors.map((error) => error.type), expected)
      assert.equal(checked.value, value)
    })
  }
})

describe('relations between fields', () => {
  const Handoff = refineModel(
    Type.Object({ mode: Type.Optional(Type.Union([Type.Literal('a'), Type.Literal('b')])), url: Type.Optional(Type.String({ minLength: 3 })) }, { additionalProperties: false }),
    (value, input) => (value.mode === 'b' && input.url == null ? [{ path: ['url'], missing: true as const }] : []),
  )
  test('a field the others make required is missing, with the model as its input', () => {
    const input = { mode: 'b' }
    assert.deepEqual(validate(Handoff, input, ['c']).errors, [{ type: 'missing', loc: ['c', 'url'], msg: 'Field required', input }])
  })
  test('one refused on its own is reported once: the relation sees it was sent', () => {
    assert.deepEqual(
      validate(Handoff, { mode: 'b', url: 'x' }, ['c']).errors.map((error) => error.type),
      ['string_too_short'],
    )
  })
  test('none when the relation holds', () => assert.deepEqual(validate(Handoff, { mode: 'a' }, ['c']).errors, []))
})
