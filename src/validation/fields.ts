/**
 * Field schemas shared by the client API and by the provider settings that
 * take the same values (a simulated conversation's result): each refines a
 * TypeBox schema with what JSON Schema cannot say.
 */
import { Type } from '@sinclair/typebox'
import { refuse } from '../domain/errors.ts'
import { isIsoInstant } from '../domain/isoInstants.ts'
import { parseInstant } from '../domain/triggerTiming.ts'
import { DAY_MS } from '../domain/retention.ts'
import { normalizeLanguage } from '../domain/contact.ts'
import { ANY_LANGUAGE } from '../domain/messageText.ts'
import { refine, refineKeys } from './model.ts'

/** One of a closed list of strings: pydantic's Literal[...]. */
export const OneOf = <T extends string>(values: readonly T[]) => Type.Union(values.map((value) => Type.Literal(value)))

/**
 * An RFC 3339 date-time with its offset, kept as the UTC instant it names.
 * In a query string a `+` left unencoded arrives as a space: there, a space
 * before the offset is read as the `+` it was.
 */
export function instant(field: string, description: string, { inQuery = false } = {}) {
  return refine(Type.String({ maxLength: 64, format: 'date-time', description, examples: ['2026-12-01T09:00:00+01:00'] }), {
    transform: inQuery ? (text) => text.replace(/ (?=[0-9]{2}:[0-9]{2}$)/, '+') : undefined,
    check: (text) => {
      // Already in the form kept (as an agent platform's transcript times are made): kept as it is.
      if (isIsoInstant(text)) return text
      const at = parseInstant(text)
      return at === undefined ? refuse(`${field} must be an RFC 3339 date-time with an offset, such as 2026-12-01T09:00:00+01:00 or 2026-12-01T08:00:00Z`) : new Date(at).toISOString()
    },
  })
}

/** A calendar date, YYYY-MM-DD, one that exists (no 2026-02-30). */
export function calendarDate(field: string, description: string) {
  return refine(Type.String({ maxLength: 10, format: 'date', description, examples: ['2026-11-27'] }), {
    check: (text) => {
      const day = /^\d{4}-\d{2}-\d{2}$/.test(text) ? Date.parse(`${text}T00:00:00Z`) : Number.NaN
      // Date.parse rolls 2026-02-30 over into March: the date read back must be the one written.
      return !Number.isNaN(day) && new Date(day).toISOString().startsWith(text) ? text : refuse(`${field} must be a calendar date written YYYY-MM-DD, such as 2026-11-27`)
    },
  })
}

/** The longest range of dates a read of counts takes: a year, a leap year's included. */
export const MAX_RANGE_DAYS = 366

/**
 * What is wrong with a range of calendar dates `from` to `to`, both included
 * (for refineModel, once both have passed): backwards, or over MAX_RANGE_DAYS.
 */
export function dateRangeProblems({ from, to }: { from?: string; to?: string }): { path: string[]; message: string }[] {
  if (from === undefined || to === undefined) return []
  const days = (Date.parse(to) - Date.parse(from)) / DAY_MS + 1
  if (days < 1) return [{ path: ['to'], message: 'to must be on or after from' }]
  if (days > MAX_RANGE_DAYS) return [{ path: ['to'], message: `from and to may be at most ${MAX_RANGE_DAYS} days apart, both included` }]
  return []
}

/**
 * A string that `valid` accepts, kept as sent; otherwise a `value_error`
 * saying `message` (what the field must be, for the integrator to read).
 */
export function checkedString(valid: (text: string) => boolean, message: string, options: { maxLength?: number; description?: string } = {}) {
  return refine(Type.String(options), { check: (text) => (valid(text) ? text : refuse(message)) })
}

/**
 * An https URL, kept as sent. The URL parser drops tabs and newlines
 * silently, so a URL that holds any (or another control character) is
 * refused rather than stored in a form its reader would not see.
 */
export function httpsUrl(field: string, maxLength: number, description: string) {
  return refine(Type.String({ maxLength, format: 'uri', description }), {
    check: (text) => (isHttpsUrl(text) ? text : refuse(`${field} must be an https URL`)),
  })
}

export function isHttpsUrl(value: string): boolean {
  return hasScheme(value, 'https:')
}

/** Whether `value` is an absolute URL of this scheme with a host, free of control characters and spaces. */
export function hasScheme(value: string, scheme: string): boolean {
  if (/[\x00-\x20\x7f]/.test(value)) return false
  try {
    const url = new URL(value)
    return url.protocol === scheme && url.hostname !== ''
  } catch {
    return false
  }
}

/**
 * A campaign's own text to a person (domain/messageText.ts): one text of 1
 * to `maxLength` characters, not blank, or texts by BCP 47 tag ("*" for any
 * other language), at most 20 of them.
 */
export function messageTextSchema(maxLength: number, description: string) {
  const text = refine(Type.String({ maxLength }), { check: (value) => (value.trim() === '' ? refuse('a message text must not be blank') : value) })
  const byLanguage = refineKeys(
    Type.Record(Type.String(), text, { minProperties: 1, maxProperties: MAX_TEXT_LANGUAGES }),
    (tag) => (tag === ANY_LANGUAGE || normalizeLanguage(tag) !== null ? undefined : 'each key of text must be a BCP 47 language tag, such as en or de-AT, or * for any other language'),
  )
  return Type.Union([text, byLanguage], { description })
}
const MAX_TEXT_LANGUAGES = 20
