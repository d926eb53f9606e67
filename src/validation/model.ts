/**
 * Request validation with pydantic v2's semantics (lax mode, unknown keys
 * ignored), reading the same TypeBox schemas that the OpenAPI document is
 * generated from. It reports every problem at once, in field order, as the
 * `detail` entries FastAPI returns, and yields the normalized value.
 *
 * The schemas use a small subset of JSON Schema: objects with `properties`
 * (models, closed to unknown keys by `additionalProperties: false`), objects
 * with only `patternProperties` (dictionaries), arrays, strings, integers,
 * booleans, unions of literals, of models told apart by a tag, or of schemas
 * of different JSON types (a text, or texts by language), and `{}` for any JSON value. What a
 * schema cannot say (trimming, lowercasing, checking a phone number) is
 * attached with {@link refine}, and what relates a model's fields (an end
 * after its start) with {@link refineModel}, under symbols so they stay out
 * of the document.
 */
import type { Static, TObject, TSchema } from '@sinclair/typebox'
import { type ErrorDetail, type Refusal, refuse } from '../domain/errors.ts'

/** A field's normalization: the value to keep, or why it is refused. */
export type Refinement = (value: string) => string | Refusal

const REFINE = Symbol('refine')
const TRANSFORM = Symbol('transform')
const REFINE_MODEL = Symbol('refineModel')
const REFINE_KEYS = Symbol('refineKeys')

/** A relation between a model's fields that its value breaks: where (from the model) and why. */
export type ModelProblem =
  | { path: (string | number)[]; message: string }
  /** A field that the others make required and that is not there: pydantic's `missing`, with the model as its input. */
  | { path: (string | number)[]; missing: true }

/**
 * Attaches a normalization to a string schema. `transform` runs before the
 * length limits (like pydantic's strip_whitespace/to_lower); `check` after them
 * and refuses with a `value_error`.
 */
export function refine<S extends TSchema>(schema: S, hooks: { transform?: (value: string) => string; check?: Refinement }): S {
  return Object.assign(schema, { [TRANSFORM]: hooks.transform, [REFINE]: hooks.check })
}

/**
 * Attaches a check of the relations between a model's fields (an end after
 * its start). It runs on the model's normalized value, in which a field that
 * was refused is undefined, and checks each relation whose fields are there:
 * so that one answer lists every problem, where pydantic's after-validators
 * would wait for the whole model to be valid. Each problem is a `value_error`
 * at the field it names. The input as sent is passed too: a field refused
 * on its own is there, so that a relation need not report it again as absent.
 */
export function refineModel<S extends TObject>(schema: S, check: (value: Partial<Static<S>>, input: Record<string, unknown>) => ModelProblem[]): S {
  return Object.assign(schema, { [REFINE_MODEL]: check })
}

/**
 * Attaches a check of a dictionary's keys (a language tag), answering
 * what is wrong with a key, if anything: a `value_error` under the key,
 * then '[key]', as pydantic reports a refused key of a dict[Key, V].
 */
export function refineKeys<S extends TSchema>(schema: S, problem: (key: string) => string | undefined): S {
  return Object.assign(schema, { [REFINE_KEYS]: problem })
}

export interface ValidationResult<T> {
  value: T | undefined
  errors: ErrorDetail[]
}

type Loc = ErrorDetail['loc']
type SchemaNode = TSchema & {
  [REFINE]?: Refinement
  [TRANSFORM]?: (value: string) => string
  [REFINE_MODEL]?: (value: Record<string, unknown>, input: Record<string, unknown>) => ModelProblem[]
  [REFINE_KEYS]?: (key: string) => string | undefined
}

/** Validates `input` (a parsed body, or `undefined` when none was sent) against `schema`. */
export function validate<T>(schema: TSchema, input: unknown, loc: Loc = ['body']): ValidationResult<T> {
  const walk = new Walk(loc)
  if (input === undefined || input === null) {
    walk.fail('missing', 'Field required', null)
    return { value: undefined, errors: walk.errors }
  }
  const value = walk.check(schema as SchemaNode, input)
  return { value: walk.errors.length === 0 ? (value as T) : undefined, errors: walk.errors }
}

/**
 * Sorts 422 entries by the model's field order, as pydantic reports them,
 * when entries found by later checks are added to the schema's own. Entries
 * about other parts of the request (a header) come first, as FastAPI checks
 * them before the body.
 */
export function inFieldOrder(schema: TSchema, errors: ErrorDetail[]): ErrorDetail[] {
  const fields = Object.keys((schema as SchemaNode).properties ?? {})
  const rank = (error: ErrorDetail) => {
    if (error.loc[0] !== 'body') return -1
    const index = fields.indexOf(String(error.loc[1]))
    return index === -1 ? fields.length : index
  }
  return errors.map((error, index) => ({ error, index })).sort((a, b) => rank(a.error) - rank(b.error) || a.index - b.index).map(({ error }) => error)
}

const isLiteralUnion = (schema: SchemaNode) => (schema.anyOf as SchemaNode[]).every((option) => option.const !== undefined)

/** A union's options, each of a JSON type of its own and none a literal: what #ofType can tell apart; any other union is a fault of the schema. */
const unionOfTypes = perSchema((schema): SchemaNode[] => {
  const options = schema.anyOf as SchemaNode[]
  const types = options.map((option) => option.type)
  if (options.some((option) => option.const !== undefined || option.type === undefined) || new Set(types).size !== types.length) {
    throw new Error('validation supports unions of literals, of models told apart by a tag, or of schemas of different JSON types')
  }
  return options
})

/** Whether the input is of the JSON type the schema checks (a number for an integer; an object for a model or a dictionary). */
function jsonTypeMatches(schema: SchemaNode, input: unknown): boolean {
  switch (schema.type) {
    case 'object':
      return isPlainObject(input)
    case 'array':
      return Array.isArray(input)
    case 'integer':
      return typeof input === 'number'
    default:
      return typeof input === schema.type
  }
}

/** A schema's name as pydantic writes a union member's in an error's loc. */
function typeName(schema: SchemaNode): string {
  switch (schema.type) {
    case 'string':
      return 'str'
    case 'integer':
      return 'int'
    case 'number':
      return 'float'
    case 'boolean':
      return 'bool'
    case 'array':
      return `list[${typeName(schema.items as SchemaNode)}]`
    case 'object':
      return schema.properties ? (schema.title ?? 'model') : `dict[str,${typeName(valueSchemaOf(schema))}]`
    default:
      return 'any'
  }
}

/** The field that tells a union's models apart: one every option, each an object, requires as a constant of its own. */
function tagOf(schema: SchemaNode): string | undefined {
  const options = schema.anyOf as SchemaNode[]
  if (!options.every((option) => option.type === 'object' && option.properties !== undefined)) return undefined
  return Object.keys(options[0]!.properties!).find((key) => {
    const tags = options.map((option) => (option.required?.includes(key) ? (option.properties![key] as SchemaNode | undefined)?.const : undefined))
    return tags.every((tag) => tag !== undefined) && new Set(tags).size === tags.length
  })
}

/**
 * One validation: the errors found so far and the path to the value being
 * checked, kept as one stack (pushed and popped) so that a valid body costs no
 * path allocations; an error takes a copy.
 */
class Walk {
  readonly errors: ErrorDetail[] = []
  readonly #path: Loc

  constructor(root: Loc) {
    this.#path = [...root]
  }

  fail(type: string, msg: string, input: unknown, ctx?: Record<string, unknown>): undefined {
    const entry: ErrorDetail = { type, loc: [...this.#path], msg, input }
    if (ctx !== undefined) entry.ctx = ctx
    this.errors.push(entry)
    return undefined
  }

  check(schema: SchemaNode, input: unknown): unknown {
    if (schema.anyOf) {
      const union = unionKindOf(schema)
      if (union.tag !== undefined) return this.#tagged(schema, union.tag, input)
      return union.literals ? this.#literal(schema, input) : this.#ofType(schema, input)
    }
    switch (schema.type) {
      case 'object':
        return schema.properties ? this.#model(schema, input) : this.#dict(schema, input)
      case 'array':
        return this.#list(schema, input)
      case 'string':
        return this.#string(schema, input)
      case 'boolean':
        return this.#bool(input)
      case 'integer':
        return this.#int(schema, input)
      case 'number':
        return this.#float(schema, input)
      case undefined:
        return this.#jsonValue(input)
      default:
        throw new Error(`validation does not support schemas of type ${String(schema.type)}`)
    }
  }

  #at(key: string | number, schema: SchemaNode, input: unknown): unknown {
    this.#path.push(key)
    const value = this.check(schema, input)
    this.#path.pop()
    return value
  }

  #model(schema: SchemaNode, input: unknown): unknown {
    if (!isPlainObject(input)) {
      return this.fail('model_attributes_type', 'Input should be a valid dictionary or object to extract fields from', input)
    }
    const output: Record<string, unknown> = {}
    for (const field of fieldsOf(schema)) {
      const fieldInput = Object.hasOwn(input, field.name) ? input[field.name] : undefined
      // An optional field sent as null is treated as not sent (pydantic's `X | None = None`).
      if (fieldInput === undefined || (fieldInput === null && !field.required)) {
        if (field.required) {
          this.#path.push(field.name)
          this.fail('missing', 'Field required', input)
          this.#path.pop()
        }
        continue
      }
      output[field.name] = this.#at(field.name, field.schema, fieldInput)
    }
    if (schema.additionalProperties === false) {
      for (const key in input) {
        if (Object.hasOwn(schema.properties, key)) continue
        this.#path.push(key)
        this.fail('extra_forbidden', 'Extra inputs are not permitted', input[key])
        this.#path.pop()
      }
    }
    const relations = schema[REFINE_MODEL]
    if (relations !== undefined) {
      for (const problem of relations(output, input)) {
        const { path } = problem
        this.#path.push(...path)
        if ('missing' in problem) this.fail('missing', 'Field required', valueAt(input, path.slice(0, -1)))
        else this.#valueError(valueAt(input, path), problem.message)
        this.#path.length -= path.length
      }
    }
    return output
  }

  #dict(schema: SchemaNode, input: unknown): unknown {
    if (!isPlainObject(input)) return this.fail('dict_type', 'Input should be a valid dictionary', input)
    const valueSchema = valueSchemaOf(schema)
    const errorsBefore = this.errors.length
    const output: Record<string, unknown> = {}
    let length = 0
    for (const key in input) {
      this.#path.push(key)
      const problem = keyProblem(key) ?? schema[REFINE_KEYS]?.(key)
      if (problem !== undefined) {
        // pydantic reports a dictionary key's error under the key, then '[key]'.
        this.#path.push('[key]')
        this.#valueError(key, problem)
        this.#path.pop()
      }
      const value = this.check(valueSchema, input[key])
      // A "__proto__" key is defined as data, as JSON.parse defines it, rather than assigned (which would set the prototype).
      if (key === '__proto__') Object.defineProperty(output, key, { value, enumerable: true, writable: true, configurable: true })
      else output[key] = value
      length++
      this.#path.pop()
    }
    // Unlike a list's, a dictionary's length is checked only when its entries are valid.
    if (this.errors.length === errorsBefore && schema.maxProperties !== undefined && length > schema.maxProperties) {
      return this.#tooLong('Dictionary', schema.maxProperties, length, input)
    }
    if (this.errors.length === errorsBefore && schema.minProperties !== undefined && length < schema.minProperties) {
      const min = schema.minProperties
      return this.fail('too_short', `Dictionary should have at least ${min} item${min === 1 ? '' : 's'} after validation, not ${length}`, input, {
        field_type: 'Dictionary',
        min_length: min,
        actual_length: length,
      })
    }
    return output
  }

  #list(schema: SchemaNode, input: unknown): unknown {
    if (!Array.isArray(input)) return this.fail('list_type', 'Input should be a valid list', input)
    // pydantic stops at the limit and reports only the length, not the items' errors.
    if (schema.maxItems !== undefined && input.length > schema.maxItems) {
      return this.#tooLong('List', schema.maxItems, input.length, input)
    }
    const output = new Array<unknown>(input.length)
    for (let index = 0; index < input.length; index++) output[index] = this.#at(index, schema.items as SchemaNode, input[index])
    // pydantic checks the least length after the items, and reports it with their errors.
    if (schema.minItems !== undefined && input.length < schema.minItems) {
      const min = schema.minItems
      this.fail('too_short', `List should have at least ${min} item${min === 1 ? '' : 's'} after validation, not ${input.length}`, input, {
        field_type: 'List',
        min_length: min,
        actual_length: input.length,
      })
    }
    return output
  }

  #tooLong(fieldType: string, max: number, actual: number, input: unknown): undefined {
    return this.fail(
      'too_long',
      `${fieldType} should have at most ${max} item${max === 1 ? '' : 's'} after validation, not ${actual}`,
      input,
      { field_type: fieldType, max_length: max, actual_length: actual },
    )
  }

  #string(schema: SchemaNode, input: unknown): unknown {
    if (typeof input !== 'string') return this.fail('string_type', 'Input should be a valid string', input)
    const value = schema[TRANSFORM]?.(input) ?? input
    if (schema.minLength !== undefined && tooFewCharacters(value, schema.minLength)) {
      const min = schema.minLength
      return this.fail('string_too_short', `String should have at least ${min} character${min === 1 ? '' : 's'}`, input, {
        min_length: min,
      })
    }
    if (schema.maxLength !== undefined && tooManyCharacters(value, schema.maxLength)) {
      const max = schema.maxLength
      return this.fail('string_too_long', `String should have at most ${max} character${max === 1 ? '' : 's'}`, input, {
        max_length: max,
      })
    }
    if (schema.pattern !== undefined && !patternOf(schema).test(value)) {
      return this.fail('string_pattern_mismatch', `String should match pattern '${schema.pattern}'`, input, {
        pattern: schema.pattern,
      })
    }
    const unstorable = textProblem(value)
    if (unstorable !== undefined) return this.#valueError(input, unstorable)
    const refined = schema[REFINE]?.(value) ?? value
    if (typeof refined !== 'string') return this.fail('value_error', refined.msg, input, refined.ctx)
    return refined
  }

  #valueError(input: unknown, message: string): undefined {
    const { msg, ctx } = refuse(message)
    return this.fail('value_error', msg, input, ctx)
  }

  /**
   * pydantic's lax boolean: JSON booleans; the numbers 0 and 1; "0", "1" and
   * the yes/no words in any case, untrimmed. Other words and whole numbers are
   * `bool_parsing`; fractions, huge numbers and other types are `bool_type`.
   */
  #bool(input: unknown): unknown {
    if (typeof input === 'boolean') return input
    const unparsable = () => this.fail('bool_parsing', 'Input should be a valid boolean, unable to interpret input', input)
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
    return this.fail('bool_type', 'Input should be a valid boolean', input)
  }

  /**
   * pydantic's lax integer: whole JSON numbers (3.0 too), booleans, and
   * strings that spell a whole number; then the schema's bounds.
   */
  #int(schema: SchemaNode, input: unknown): unknown {
    let value: number
    if (typeof input === 'boolean') value = input ? 1 : 0
    else if (typeof input === 'number') {
      if (!Number.isFinite(input)) return this.fail('finite_number', 'Input should be a finite number', input)
      if (!Number.isInteger(input)) {
        return this.fail('int_from_float', 'Input should be a valid integer, got a number with a fractional part', input)
      }
      value = input
    } else if (typeof input === 'string') {
      const trimmed = input.trim().replaceAll('_', '')
      if (!/^[-+]?\d+(\.0*)?$/.test(trimmed)) {
        return this.fail('int_parsing', 'Input should be a valid integer, unable to parse string as an integer', input)
      }
      value = Number.parseInt(trimmed, 10)
    } else return this.fail('int_type', 'Input should be a valid integer', input)
    if (!Number.isSafeInteger(value)) return this.fail('int_parsing_size', 'Unable to parse input string as an integer, exceeded maximum size', input)
    return this.#bounded(schema, value, input)
  }

  /** A number, as pydantic's lax float reads one: a finite JSON number, a boolean, or a string that is a number. */
  #float(schema: SchemaNode, input: unknown): unknown {
    let value: number
    if (typeof input === 'boolean') value = input ? 1 : 0
    else if (typeof input === 'number') value = input
    else if (typeof input === 'string') {
      const trimmed = input.trim().replaceAll('_', '')
      value = /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(trimmed) ? Number(trimmed) : Number.NaN
      if (Number.isNaN(value)) return this.fail('float_parsing', 'Input should be a valid number, unable to parse string as a number', input)
    } else return this.fail('float_type', 'Input should be a valid number', input)
    if (!Number.isFinite(value)) return this.fail('finite_number', 'Input should be a finite number', input)
    return this.#bounded(schema, value, input)
  }

  #bounded(schema: SchemaNode, value: number, input: unknown): unknown {
    if (schema.minimum !== undefined && value < schema.minimum) {
      return this.fail('greater_than_equal', `Input should be greater than or equal to ${schema.minimum}`, input, { ge: schema.minimum })
    }
    if (schema.maximum !== undefined && value > schema.maximum) {
      return this.fail('less_than_equal', `Input should be less than or equal to ${schema.maximum}`, input, { le: schema.maximum })
    }
    return value
  }

  /**
   * One of several models told apart by a field every one holds as a
   * constant (pydantic's discriminated union): the model the input's tag
   * names checks it, at the same place; a missing or unknown tag is
   * refused as pydantic refuses it.
   */
  #tagged(schema: SchemaNode, tag: string, input: unknown): unknown {
    const options = schema.anyOf as SchemaNode[]
    const tags = options.map((option) => (option.properties![tag] as SchemaNode).const as string)
    if (!isPlainObject(input)) return this.fail('model_attributes_type', 'Input should be a valid dictionary or object to extract fields from', input)
    const given = input[tag]
    const chosen = options[tags.indexOf(given as string)]
    if (chosen !== undefined) return this.check(chosen, input)
    const expected = tags.map((value) => `'${value}'`).join(', ')
    if (given === undefined) return this.fail('union_tag_not_found', `Unable to extract tag using discriminator '${tag}'`, input, { discriminator: `'${tag}'` })
    return this.fail('union_tag_invalid', `Input tag '${String(given)}' found using '${tag}' does not match any of the expected tags: ${expected}`, input, {
      discriminator: `'${tag}'`,
      tag: String(given),
      expected_tags: expected,
    })
  }

  /**
   * A union of schemas of different JSON types (a text, or texts by
   * language): the one of the input's type checks it, at the same place,
   * as pydantic's smart union does; an input of none of their types gets an
   * entry for each, under its name ('str', 'dict[str,str]').
   */
  #ofType(schema: SchemaNode, input: unknown): unknown {
    const options = unionOfTypes(schema)
    const chosen = options.find((option) => jsonTypeMatches(option, input))
    if (chosen !== undefined) return this.check(chosen, input)
    // None of the input's type: the first that takes it in lax mode ("30" for an integer), else an entry for each.
    const tries = options.map((option) => {
      const walk = new Walk([...this.#path, typeName(option)])
      return { value: walk.check(option, input), errors: walk.errors }
    })
    const taken = tries.find((attempt) => attempt.errors.length === 0)
    if (taken !== undefined) return taken.value
    for (const attempt of tries) this.errors.push(...attempt.errors)
    return undefined
  }

  #literal(schema: SchemaNode, input: unknown): unknown {
    const allowed = (schema.anyOf as SchemaNode[]).map((option) => option.const as string)
    if (allowed.includes(input as string)) return input
    const quoted = allowed.map((value) => `'${value}'`)
    const expected = quoted.length > 1 ? `${quoted.slice(0, -1).join(', ')} or ${quoted.at(-1)}` : quoted[0]
    return this.fail('literal_error', `Input should be ${expected}`, input, { expected })
  }

  #jsonValue(input: unknown): unknown {
    const problem = jsonValueProblem(input, 0)
    if (problem !== undefined) this.#valueError(input, problem)
    return input
  }
}

interface Field {
  name: string
  schema: SchemaNode
  required: boolean
}

/** What `derive` reads from a schema, worked out once per schema rather than once per request. */
function perSchema<T extends object>(derive: (schema: SchemaNode) => T): (schema: SchemaNode) => T {
  const derived = new WeakMap<SchemaNode, T>()
  return (schema) => {
    let value = derived.get(schema)
    if (value === undefined) derived.set(schema, (value = derive(schema)))
    return value
  }
}

/** How a union is checked: by its models' tag, as literals, or by JSON type (each transcript turn's role is one: derived once). */
const unionKindOf = perSchema((schema): { tag: string | undefined; literals: boolean } => ({ tag: tagOf(schema), literals: isLiteralUnion(schema) }))

/** A string schema's pattern, compiled once. */
const patternOf = perSchema((schema): RegExp => new RegExp(schema.pattern as string, 'u'))

/** A model's fields, in declaration order. */
const fieldsOf = perSchema((schema): readonly Field[] => {
  const required: string[] = schema.required ?? []
  return Object.entries(schema.properties as Record<string, SchemaNode>).map(([name, field]) => ({
    name,
    schema: field,
    required: required.includes(name),
  }))
})

/** A dictionary's value schema (`{}`, any JSON value, when it has none). */
const valueSchemaOf = perSchema(
  (schema) => Object.values((schema.patternProperties ?? {}) as Record<string, SchemaNode>)[0] ?? ({} as SchemaNode),
)

/** The value at `path` inside `root`, or undefined where the path leads nowhere. */
export function valueAt(root: unknown, path: readonly (string | number)[]): unknown {
  return path.reduce<unknown>((value, key) => (value as Record<string | number, unknown> | undefined)?.[key], root)
}

function isPlainObject(input: unknown): input is Record<string, unknown> {
  return typeof input === 'object' && input !== null && !Array.isArray(input)
}

const TRUE_WORDS = new Set(['t', 'y', 'on', 'yes', 'true'])
const FALSE_WORDS = new Set(['f', 'n', 'no', 'off', 'false'])
const I64_LIMIT = 2 ** 63

/**
 * Limits on free-form JSON (a context value): text must be storable in
 * PostgreSQL, and size and depth are bounded so that no value can be a burden.
 */
const MAX_JSON_DEPTH = 16
const MAX_FREE_TEXT = 10_000
const MAX_KEY_LENGTH = 100

function jsonValueProblem(input: unknown, depth: number): string | undefined {
  if (typeof input === 'string') {
    if (tooManyCharacters(input, MAX_FREE_TEXT)) return `text must be at most ${MAX_FREE_TEXT} characters long`
    return textProblem(input)
  }
  if (typeof input === 'number') {
    // JSON.parse has already rounded such a number: refuse it rather than store another one.
    return Number.isFinite(input) && (!Number.isInteger(input) || Number.isSafeInteger(input))
      ? undefined
      : 'numbers must be finite, and whole numbers at most 2^53 - 1 in size; send larger ones as strings'
  }
  if (typeof input !== 'object' || input === null) return undefined
  if (depth >= MAX_JSON_DEPTH) return `value must not be nested more than ${MAX_JSON_DEPTH} levels deep`
  if (Array.isArray(input)) {
    for (const item of input) {
      const problem = jsonValueProblem(item, depth + 1)
      if (problem !== undefined) return problem
    }
    return undefined
  }
  for (const key in input) {
    const problem = keyProblem(key) ?? jsonValueProblem((input as Record<string, unknown>)[key], depth + 1)
    if (problem !== undefined) return problem
  }
  return undefined
}

function keyProblem(key: string): string | undefined {
  return tooManyCharacters(key, MAX_KEY_LENGTH) ? `keys must be at most ${MAX_KEY_LENGTH} characters long` : textProblem(key)
}

/** PostgreSQL text cannot hold NUL, and UTF-8 cannot encode an unpaired surrogate. */
function textProblem(value: string): string | undefined {
  if (value.includes('\0') || !value.isWellFormed()) {
    return 'text must not contain NUL characters or unpaired surrogates'
  }
  return undefined
}

/**
 * Length in code points, as Python counts it, not in UTF-16 units: a
 * surrogate pair is one character, a lone surrogate one too.
 */
function characterCount(value: string): number {
  let count = value.length
  for (let i = 0; i < value.length - 1; i++) {
    const unit = value.charCodeAt(i)
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = value.charCodeAt(i + 1)
      if (next >= 0xdc00 && next <= 0xdfff) {
        count--
        i++
      }
    }
  }
  return count
}

/**
 * A string has between half its UTF-16 length and all of it in code points,
 * so most strings are settled without counting them.
 */
function tooManyCharacters(value: string, max: number): boolean {
  return value.length > max && characterCount(value) > max
}

function tooFewCharacters(value: string, min: number): boolean {
  return value.length < 2 * min && characterCount(value) < min
}
