/**
 * Readers of what a provider sends into values the service can keep. A
 * provider's body is read before it is believed (its signature is checked
 * with the secret of the interaction it names), so whatever it holds must be
 * safe to look up and to store: PostgreSQL refuses text with a NUL (even in
 * jsonb) and instants outside its timestamptz, a JavaScript Date throws on
 * instants outside its own range, and an integer column refuses what is
 * past 2^31 - 1. What none of them can hold is read as absent, never
 * thrown: an id that cannot be stored names nothing, an instant that cannot
 * be stored is unknown. (A result's texts are held to the result's own
 * schema, validation/conversationResult.ts, which leaves a NUL out.)
 */

/** Longer than any provider's ids (UUIDs, Twilio's 34-character SIDs, WhatsApp's wamids of about 60): the bound only keeps lookups small. */
export const MAX_ID_LENGTH = 256

/**
 * Instants are kept between the Unix epoch (exclusive: no provider reports a
 * time before it, and 0 is what an unset number often becomes) and the end
 * of year 9999, the last that RFC 3339's four-digit years, a Date's ISO
 * string and PostgreSQL's timestamptz all write alike.
 */
export const LATEST_INSTANT_MS = Date.parse('9999-12-31T23:59:59.999Z')

/** PostgreSQL's integer: the largest duration_s a row holds. */
export const MAX_DURATION_S = 2_147_483_647

/** `value` when it is text PostgreSQL can store (no NUL, no lone surrogate, which no UTF-8 encodes) of at most `maxLength` characters. */
export function storableText(value: unknown, maxLength: number): string | undefined {
  return typeof value === 'string' && value.length <= maxLength && !value.includes('\u0000') && value.isWellFormed() ? value : undefined
}

/** A provider's id of something (a call, a conversation, a number, a message): non-empty storable text, else undefined. */
export function storableId(value: unknown): string | undefined {
  const id = storableText(value, MAX_ID_LENGTH)
  return id === '' ? undefined : id
}

/** `text` without its NULs and with lone surrogates made U+FFFD: what a person wrote, kept rather than dropped for a stray character. */
export function storableString(text: string): string {
  return text.replaceAll('\u0000', '').toWellFormed()
}

/** An instant given as Unix milliseconds, rounded to the millisecond; undefined when not a number in the kept range. */
export function instantOfMs(value: unknown): number | undefined {
  if (typeof value !== 'number' || !Number.isFinite(value)) return undefined
  const at = Math.round(value)
  return at > 0 && at <= LATEST_INSTANT_MS ? at : undefined
}

/** An instant given as Unix seconds, as milliseconds; undefined when not a number in the kept range. */
export function instantOfSeconds(value: unknown): number | undefined {
  return typeof value === 'number' ? instantOfMs(value * 1000) : undefined
}

/** An instant given as text Date.parse reads (ISO 8601, RFC 2822); undefined when unreadable or out of the kept range. */
export function instantOfText(value: unknown): number | undefined {
  return typeof value === 'string' ? instantOfMs(Date.parse(value)) : undefined
}

/** The instant `offsetS` seconds after `start`; undefined when either is unknown or the sum is out of the kept range. */
export function instantAfter(start: number | undefined, offsetS: unknown): number | undefined {
  if (start === undefined || typeof offsetS !== 'number') return undefined
  return instantOfMs(start + Math.round(offsetS * 1000))
}

/** A duration given as a number of `unitMs` milliseconds, in whole seconds; undefined when not a non-negative number a row can hold. */
export function durationSeconds(value: unknown, unitMs: number): number | undefined {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) return undefined
  const seconds = Math.round((value * unitMs) / 1000)
  return seconds <= MAX_DURATION_S ? seconds : undefined
}
