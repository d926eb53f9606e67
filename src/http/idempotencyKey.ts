/** The Idempotency-Key a request may carry (as a header, or as a batch item's field), as every route that takes one reads it. */
import { Type } from '@sinclair/typebox'
import { type ErrorDetail, refuse } from '../domain/errors.ts'
import { refine, validate } from '../validation/model.ts'

const MAX_IDEMPOTENCY_KEY_LENGTH = 255

/** An Idempotency-Key, as the header or a batch item's field (named `name` in its refusal). */
export const idempotencyKey = (name: string, description?: string) =>
  refine(Type.String({ minLength: 1, maxLength: MAX_IDEMPOTENCY_KEY_LENGTH, description }), {
    check: (key) => (/^[\x21-\x7e]+$/.test(key) ? key : refuse(`${name} must be 1 to 255 printable ASCII characters without spaces`)),
  })

const IdempotencyKeyHeader = idempotencyKey('Idempotency-Key')

/**
 * The Idempotency-Key header; when it is not one we can keep, its 422 entries
 * (at the header, as FastAPI reports a header) are added with the body's.
 */
export function idempotencyKeyOf(header: string | string[] | undefined, errors: ErrorDetail[]): string | undefined {
  if (header === undefined) return undefined
  const checked = validate<string>(IdempotencyKeyHeader, header, ['header', 'idempotency-key'])
  errors.unshift(...checked.errors)
  return checked.value
}
