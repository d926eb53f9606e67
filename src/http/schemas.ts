/** Schemas shared by several routes: the success envelope, the two error shapes, and the common resources. */
import { type Static, type TSchema, Type } from '@sinclair/typebox'
import { refuse } from '../domain/errors.ts'
import { parseInstant } from '../domain/triggerTiming.ts'
import { CHANNELS, type Contact } from '../domain/types.ts'
import { refine } from '../validation/model.ts'

export const Timestamp = Type.String({ format: 'date-time', description: 'UTC, ISO 8601 with Z' })

/**
 * An RFC 3339 date-time with its offset, kept as the UTC instant it names.
 * In a query string a `+` left unencoded arrives as a space: there, a space
 * before the offset is read as the `+` it was.
 */
export function instant(field: string, description: string, { inQuery = false } = {}) {
  return refine(Type.String({ maxLength: 64, format: 'date-time', description, examples: ['2026-12-01T09:00:00+01:00'] }), {
    transform: inQuery ? (text) => text.replace(/ (?=[0-9]{2}:[0-9]{2}$)/, '+') : undefined,
    check: (text) => {
      const at = parseInstant(text)
      return at === undefined ? refuse(`${field} must be an RFC 3339 date-time with an offset, such as 2026-12-01T09:00:00+01:00 or 2026-12-01T08:00:00Z`) : new Date(at).toISOString()
    },
  })
}

/** One of a closed list of strings: pydantic's Literal[...]. */
export const OneOf = <T extends string>(values: readonly T[]) => Type.Union(values.map((value) => Type.Literal(value)))

export const ChannelSchema = OneOf(CHANNELS)

/** A contact as the service recorded it: phone in E.164, language canonical. */
export const ContactSchema = Type.Object({
  first_name: Type.Optional(Type.String()),
  last_name: Type.Optional(Type.String()),
  phone: Type.String(),
  email: Type.Optional(Type.String()),
  language: Type.Optional(Type.String()),
  timezone: Type.Optional(Type.String()),
})

/** Only the fields the API names, whatever a stored document holds. */
export function presentContact({ first_name, last_name, phone, email, language, timezone }: Contact): Static<typeof ContactSchema> {
  return { first_name, last_name, phone, email, language, timezone }
}

export const Envelope = <T extends TSchema>(data: T) =>
  Type.Object({
    data,
    metadata: Type.Object({ request_id: Type.String() }),
  })

/** The `error` member of every error other than 422. */
export const ErrorBody = Type.Object({
  code: Type.String({ description: 'Stable snake_case code; branch on this, not on the message.' }),
  message: Type.String(),
})

/** One entry of a 422's `detail`. */
export const ValidationErrorEntry = Type.Object({
  type: Type.String({ description: 'Kind of error, e.g. missing, string_type, value_error' }),
  loc: Type.Array(Type.Union([Type.String(), Type.Integer()]), { description: 'Path to the faulty field, starting with "body"' }),
  msg: Type.String(),
  input: Type.Unknown(),
  ctx: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
})

export const ErrorResponse = Type.Object(
  {
    error: ErrorBody,
    metadata: Type.Object({ request_id: Type.String() }),
  },
  { $id: 'ErrorResponse', description: 'Every error other than 422.' },
)

export const ValidationErrorResponse = Type.Object(
  {
    detail: Type.Array(ValidationErrorEntry),
  },
  { $id: 'ValidationErrorResponse', description: 'Request validation failed (pydantic v2 / FastAPI shape). All problems are listed.' },
)

const ref = (schema: { $id?: string }) => Type.Ref(schema.$id!)

/** Error responses any authenticated route may give. */
export const authErrors = {
  401: ref(ErrorResponse),
  403: ref(ErrorResponse),
}

export const validationErrors = {
  422: ref(ValidationErrorResponse),
}

export const notFound = {
  404: ref(ErrorResponse),
}

export const conflict = {
  409: ref(ErrorResponse),
}

export const rateLimited = {
  429: { ...ref(ErrorResponse), description: "The organization's rate limit: send it again after Retry-After seconds." },
}
