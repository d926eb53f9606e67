/**
 * A client's own ids for a person (`{source, type, value}`). The service
 * compares `source` and `type` trimmed and lowercased wherever they appear (a
 * trigger's ids, a lookup by id, an organization's sources), so that what one
 * stored the others find; `value` is the client's, kept byte for byte.
 */

/**
 * Unicode White_Space at either end: what pydantic's str_strip_whitespace
 * (Rust's str::trim) removes. Not String.prototype.trim, which also removes
 * U+FEFF and keeps U+0085.
 */
const EDGE_WHITESPACE = /^\p{White_Space}+|\p{White_Space}+$/gu

/** An external id's `source` or `type`, or a source's name or id type, as the service keeps and compares it. */
export function normalizeIdPart(value: string): string {
  return value.replace(EDGE_WHITESPACE, '').toLowerCase()
}
