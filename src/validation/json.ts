/**
 * JSON request bodies, decoded as FastAPI decodes them (Python's `json`
 * module), so that a malformed body yields the same `json_invalid` entry:
 * `loc` `["body", <character offset>]` and Python's own message in `ctx`.
 *
 * V8 is used to parse; only when it refuses does a small scanner walk the text
 * the way CPython's decoder does, to find where and why it fails.
 */
import { ApiError, type ErrorDetail, ValidationFailed } from '../domain/errors.ts'

/**
 * Python's decoder gives up (RecursionError, a 400 from FastAPI) at about this
 * depth; refusing deeper bodies also keeps them out of 422 echoes, which are
 * serialized recursively.
 */
const MAX_NESTING = 1000

/** Parses a JSON body; a leading byte order mark is ignored, as Python ignores it. */
export function parseJsonBody(body: string): unknown {
  const text = body.charCodeAt(0) === 0xfeff ? body.slice(1) : body
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    const { position, message } = locateJsonError(text)
    throw new ValidationFailed([jsonInvalid(codePointOffset(text, position), message)])
  }
  if (text.length > MAX_NESTING && nestedTooDeep(value, 1)) throw new ApiError('bad_request', `The JSON body is nested more than ${MAX_NESTING} levels deep.`)
  return value
}

/**
 * Whether `value`, at nesting `depth` (1 for the body itself), is or holds a
 * container more than MAX_NESTING levels deep.
 * Walked on the parsed value, which a batch of 500 triggers makes some 15,000
 * nodes, rather than on its 250,000 characters: that scan was 3 % of the
 * server's CPU through batches.
 */
function nestedTooDeep(value: unknown, depth: number): boolean {
  if (typeof value !== 'object' || value === null) return false
  if (depth > MAX_NESTING) return true
  if (Array.isArray(value)) return value.some((item) => nestedTooDeep(item, depth + 1))
  for (const key in value) if (nestedTooDeep((value as Record<string, unknown>)[key], depth + 1)) return true
  return false
}

function jsonInvalid(position: number, message: string): ErrorDetail {
  return { type: 'json_invalid', loc: ['body', position], msg: 'JSON decode error', input: {}, ctx: { error: message } }
}

/** Python counts characters in code points, JavaScript in UTF-16 units. */
function codePointOffset(text: string, utf16Offset: number): number {
  let offset = utf16Offset
  for (let i = 0; i < utf16Offset; i++) {
    const unit = text.charCodeAt(i)
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < utf16Offset) offset--
  }
  return offset
}

class DecodeError {
  constructor(
    readonly message: string,
    readonly position: number,
  ) {}
}

const WHITESPACE = new Set([' ', '\t', '\n', '\r'])
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?/y

/** Where and why CPython's `json.loads` rejects `text`. */
export function locateJsonError(text: string): { position: number; message: string } {
  const skip = (index: number): number => {
    while (index < text.length && WHITESPACE.has(text[index]!)) index++
    return index
  }

  const value = (index: number): number => {
    const char = text[index]
    if (char === '"') return string(index + 1)
    if (char === '{') return object(index + 1)
    if (char === '[') return array(index + 1)
    for (const literal of ['null', 'true', 'false']) {
      if (text.startsWith(literal, index)) return index + literal.length
    }
    NUMBER.lastIndex = index
    if (NUMBER.test(text)) return NUMBER.lastIndex
    throw new DecodeError('Expecting value', index)
  }

  const string = (index: number): number => {
    const start = index - 1
    for (;;) {
      if (index >= text.length) throw new DecodeError('Unterminated string starting at', start)
      const char = text[index]!
      if (char === '"') return index + 1
      if (char < ' ') throw new DecodeError('Invalid control character at', index)
      if (char === '\\') {
        const escape = text[index + 1]
        if (escape === undefined) throw new DecodeError('Unterminated string starting at', start)
        if (escape === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(index + 2, index + 6))) {
            throw new DecodeError('Invalid \\uXXXX escape', index + 1)
          }
          index += 6
          continue
        }
        if (!'"\\/bfnrt'.includes(escape)) throw new DecodeError('Invalid \\escape', index)
        index += 2
        continue
      }
      index++
    }
  }

  const object = (index: number): number => {
    index = skip(index)
    if (text[index] === '}') return index + 1
    for (;;) {
      if (text[index] !== '"') throw new DecodeError('Expecting property name enclosed in double quotes', index)
      index = skip(string(index + 1))
      if (text[index] !== ':') throw new DecodeError("Expecting ':' delimiter", index)
      index = skip(value(skip(index + 1)))
      if (text[index] === '}') return index + 1
      if (text[index] !== ',') throw new DecodeError("Expecting ',' delimiter", index)
      const comma = index
      index = skip(index + 1)
      if (text[index] === '}') throw new DecodeError('Illegal trailing comma before end of object', comma)
    }
  }

  const array = (index: number): number => {
    index = skip(index)
    if (text[index] === ']') return index + 1
    for (;;) {
      index = skip(value(index))
      if (text[index] === ']') return index + 1
      if (text[index] !== ',') throw new DecodeError("Expecting ',' delimiter", index)
      const comma = index
      index = skip(index + 1)
      if (text[index] === ']') throw new DecodeError('Illegal trailing comma before end of array', comma)
    }
  }

  try {
    const end = skip(value(skip(0)))
    if (end !== text.length) return { position: end, message: 'Extra data' }
  } catch (error) {
    if (error instanceof DecodeError) return { position: error.position, message: error.message }
    // Only a stack overflow gets here: the scanner recurses once per nesting level.
    return { position: 0, message: 'Document nested too deeply' }
  }
  // Unreachable while the scanner and V8 agree on what JSON is.
  return { position: 0, message: 'Expecting value' }
}
