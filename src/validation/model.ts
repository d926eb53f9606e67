/**
 * Request validation with pydantic v2's semantics (lax mode, unknown keys
 * ignored), reading the same TypeBox schemas that the OpenAPI document is
 * generated from. It reports every problem at once, in field order, as the
 * `detail` entries FastAPI returns, and yields the normalized value.
 *
 * The schemas use a small subset of JSON Schema: objects with `properties`
 * (models), objects with only `patternProperties` (dictionaries), arrays,
 * strings, booleans, unions of literals, and `{}` for any JSON value. What a
 * schema cannot say (trimming, lowercasing, checking a phone number) is
 * attached with {@link refine}, under a symbol so it stays out of the document.
 */
import type { TSchema } from '@sinclair/typebox'
import { type ErrorDetail, type Refusal, valueError } from '../domain/errors.ts'

/** A field's normalization: the value to keep, or why it is refused. */
export type Refinement = (value: string) => string | Refusal

const REFINE = Symbol('refine')
const TRANSFORM = Symbol('transform')

/**
 * Attaches a normalization to a string schema. `transform` runs before the
 * length limits (like pydantic's strip_whitespace/to_lower); `check` after them
 * and refuses with a `value_error`.
 */
export function refine<S extends TSchema>(schema: S, hooks: { transform?: (value: string) => string; check?: Refinement }): S {
  return Object.assign(schema, { [TRANSFORM]: hooks.transform, [REFINE]: hooks.check })
}

export interface ValidationResult<T> {
  value: T | undefined
  errors: ErrorDetail[]
}

type Loc = ErrorDetail['loc']
type SchemaNode = TSchema & {
  [REFINE]?: Refinement
  [TRANSFORM]?: (value: string) => string
}

/** Validates `input` (a parsed body, or `undefined` when none was sent) against `schema`. */
export function validate<T>(schema: TSchema, input: unknown, loc: Loc = ['body']): ValidationResult<T> {
  const errors: ErrorDetail[] = []
  if (input === undefined || input === null) {
    errors.push({ type: 'missing', loc, msg: 'Field required', input: null })
    return { value: undefined, errors }
  }
  const value = check(schema as SchemaNode, input, loc, errors)
  return { value: errors.length === 0 ? (value as T) : undefined, errors }
}

/**
 * Sorts 422 entries by the model's field order, as pydantic reports them,
 * when entries found by later checks are added to the schema's own.
 */
export function inFieldOrder(schema: TSchema, errors: ErrorDetail[]): ErrorDetail[] {
  const fields = Object.keys((schema as SchemaNode).properties ?? {})
  const rank = (error: ErrorDetail) => {
    const index = fields.indexOf(String(error.loc[1]))
    return index === -1 ? fields.length : index
  }
  return errors.map((error, index) => ({ error, index })).sort((a, b) => rank(a.error) - rank(b.error) || a.index - b.index).map(({ error }) => error)
}

function check(schema: SchemaNode, input: unknown, loc: Loc, errors: ErrorDetail[]): unknown {
  if (schema.anyOf) return checkLiteral(schema, input, loc, errors)
  switch (schema.type) {
    case 'object':
      return schema.properties ? checkModel(schema, input, loc, errors) : checkDict(schema, input, loc, errors)
    case 'array':
      return checkList(schema, input, loc, errors)
    case 'string':
      return checkString(schema, input, loc, errors)
    case 'boolean':
      return checkBool(input, loc, errors)
    case undefined:
      return checkJsonValue(input, loc, errors)
    default:
      throw new Error(`validation does not support schemas of type ${String(schema.type)}`)
  }
}

function isPlainObject(input: unknown): input is Record<string, unknown> {
  return typeof input === 'object' && input !== null && !Array.isArray(input)
}

function checkModel(schema: SchemaNode, input: unknown, loc: Loc, errors: ErrorDetail[]): unknown {
  if (!isPlainObject(input)) {
    errors.push({
      type: 'model_attributes_type',
      loc,
      msg: 'Input should be a valid dictionary or object to extract fields from',
      input,
    })
    return undefined
  }
  const required: string[] = schema.required ?? []
  const output: Record<string, unknown> = {}
  for (const [name, fieldSchema] of Object.entries(schema.properties as Record<string, SchemaNode>)) {
    const fieldInput = Object.hasOwn(input, name) ? input[name] : undefined
    // An optional field sent as null is treated as not sent (pydantic's `X | None = None`).
    if (fieldInput === undefined || (fieldInput === null && !required.includes(name))) {
      if (required.includes(name)) errors.push({ type: 'missing', loc: [...loc, name], msg: 'Field required', input })
      continue
    }
    output[name] = check(fieldSchema, fieldInput, [...loc, name], errors)
  }
  return output
}

function checkDict(schema: SchemaNode, input: unknown, loc: Loc, errors: ErrorDetail[]): unknown {
  if (!isPlainObject(input)) {
    errors.push({ type: 'dict_type', loc, msg: 'Input should be a valid dictionary', input })
    return undefined
  }
  const valueSchema = Object.values((schema.patternProperties ?? {}) as Record<string, SchemaNode>)[0] ?? ({} as SchemaNode)
  const errorsBefore = errors.length
  const output: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(input)) output[key] = check(valueSchema, value, [...loc, key], errors)
  // Unlike a list's, a dictionary's length is checked only when its values are valid.
  const size = Object.keys(input).length
  if (errors.length === errorsBefore && schema.maxProperties !== undefined && size > schema.maxProperties) {
    errors.push(tooLong('Dictionary', schema.maxProperties, size, loc, input))
  }
  return output
}

function checkList(schema: SchemaNode, input: unknown, loc: Loc, errors: ErrorDetail[]): unknown {
  if (!Array.isArray(input)) {
    errors.push({ type: 'list_type', loc, msg: 'Input should be a valid list', input })
    return undefined
  }
  // pydantic stops at the limit and reports only the length, not the items' errors.
  if (schema.maxItems !== undefined && input.length > schema.maxItems) {
    errors.push(tooLong('List', schema.maxItems, input.length, loc, input))
    return undefined
  }
  return input.map((item, index) => check(schema.items as SchemaNode, item, [...loc, index], errors))
}

function tooLong(fieldType: string, max: number, actual: number, loc: Loc, input: unknown): ErrorDetail {
  return {
    type: 'too_long',
    loc,
    msg: `${fieldType} should have at most ${max} item${max === 1 ? '' : 's'} after validation, not ${actual}`,
    input,
    ctx: { field_type: fieldType, max_length: max, actual_length: actual },
  }
}

function checkString(schema: SchemaNode, input: unknown, loc: Loc, errors: ErrorDetail[]): unknown {
  if (typeof input !== 'string') {
    errors.push({ type: 'string_type', loc, msg: 'Input should be a valid string', input })
    return undefined
  }
  const value = schema[TRANSFORM]?.(input) ?? input
  const length = characterCount(value)
  if (schema.minLength !== undefined && length < schema.minLength) {
    errors.push({
      type: 'string_too_short',
      loc,
      msg: `String should have at least ${schema.minLength} character${schema.minLength === 1 ? '' : 's'}`,
      input,
      ctx: { min_length: schema.minLength },
    })
    return undefined
  }
  if (schema.maxLength !== undefined && length > schema.maxLength) {
    errors.push({
      type: 'string_too_long',
      loc,
      msg: `String should have at most ${schema.maxLength} character${schema.maxLength === 1 ? '' : 's'}`,
      input,
      ctx: { max_length: schema.maxLength },
    })
    return undefined
  }
  if (schema.pattern !== undefined && !new RegExp(schema.pattern, 'u').test(value)) {
    errors.push({
      type: 'string_pattern_mismatch',
      loc,
      msg: `String should match pattern '${schema.pattern}'`,
      input,
      ctx: { pattern: schema.pattern },
    })
    return undefined
  }
  const unstorable = textProblem(value)
  if (unstorable !== undefined) {
    errors.push(valueError(loc, input, unstorable))
    return undefined
  }
  const refined = schema[REFINE]?.(value) ?? value
  if (typeof refined !== 'string') {
    errors.push({ type: 'value_error', loc, msg: refined.msg, input, ctx: refined.ctx })
    return undefined
  }
  return refined
}

/**
 * Limits on free-form JSON (a context value): text must be storable in
 * PostgreSQL, and size and depth are bounded so that no value can be a burden.
 */
const MAX_JSON_DEPTH = 16
const MAX_FREE_TEXT = 10_000

function checkJsonValue(input: unknown, loc: Loc, errors: ErrorDetail[]): unknown {
  const problem = jsonValueProblem(input, 0)
  if (problem !== undefined) errors.push(valueError(loc, input, problem))
  return input
}

function jsonValueProblem(input: unknown, depth: number): string | undefined {
  if (typeof input === 'string') {
    if (characterCount(input) > MAX_FREE_TEXT) return `text must be at most ${MAX_FREE_TEXT} characters long`
    return textProblem(input)
  }
  if (typeof input !== 'object' || input === null) return undefined
  if (depth >= MAX_JSON_DEPTH) return `value must not be nested more than ${MAX_JSON_DEPTH} levels deep`
  const entries = Array.isArray(input) ? input.map((item) => ['', item] as const) : Object.entries(input)
  for (const [key, value] of entries) {
    const problem = jsonValueProblem(key, depth) ?? jsonValueProblem(value, depth + 1)
    if (problem !== undefined) return problem
  }
  return undefined
}

/** PostgreSQL text cannot hold NUL, and UTF-8 cannot encode an unpaired surrogate. */
function textProblem(value: string): string | undefined {
  if (value.includes('\0') || !value.isWellFormed()) {
    return 'text must not contain NUL characters or unpaired surrogates'
  }
  return undefined
}

/** Length in code points, as Python counts it, not in UTF-16 units. */
function characterCount(value: string): number {
  let count = value.length
  for (let i = 0; i < value.length; i++) {
    const unit = value.charCodeAt(i)
    if (unit >= 0xd800 && unit <= 0xdbff) count--
  }
  return count
}

const TRUE_WORDS = new Set(['t', 'y', 'on', 'yes', 'true'])
const FALSE_WORDS = new Set(['f', 'n', 'no', 'off', 'false'])
const I64_LIMIT = 2 ** 63

/**
 * pydantic's lax boolean: JSON booleans; the numbers 0 and 1; "0", "1" and
 * the yes/no words in any case, untrimmed. Other words and whole numbers are
 * `bool_parsing`; fractions, huge numbers and other types are `bool_type`.
 */
function checkBool(input: unknown, loc: Loc, errors: ErrorDetail[]): unknown {
  if (typeof input === 'boolean') return input
  const unparsable = () => {
    errors.push({ type: 'bool_parsing', loc, msg: 'Input should be a valid boolean, unable to interpret input', input })
    return undefined
  }
  if (typeof input === 'string') {
    const word = input.toLowerCase()
    if (input === '1' || TRUE_WORDS.has(word)) return true
    if (input === '0' || FALSE_WORDS.has(word)) return false
    return unparsable()
  }
  if (typeof input === 'number' && Number.isInteger(input) && Math.abs(input) < I64_LIMIT) {
    if (input === 1) return true
    if (input === 0) return false
    return unparsable()
  }
  errors.push({ type: 'bool_type', loc, msg: 'Input should be a valid boolean', input })
  return undefined
}

function checkLiteral(schema: SchemaNode, input: unknown, loc: Loc, errors: ErrorDetail[]): unknown {
  const allowed = (schema.anyOf as SchemaNode[]).map((option) => option.const as string)
  if (allowed.includes(input as string)) return input
  const quoted = allowed.map((value) => `'${value}'`)
  const expected = quoted.length > 1 ? `${quoted.slice(0, -1).join(', ')} or ${quoted.at(-1)}` : quoted[0]
  errors.push({ type: 'literal_error', loc, msg: `Input should be ${expected}`, input, ctx: { expected } })
  return undefined
}
