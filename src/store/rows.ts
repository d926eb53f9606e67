/** Conversions shared by the store modules; both database drivers return these shapes. */

/** `timestamptz` arrives as a Date from both drivers. */
export function iso(value: Date): string {
  return value.toISOString()
}

export function isoOrNull(value: Date | null): string | null {
  return value === null ? null : value.toISOString()
}

/** SQLSTATE of a database error, from either driver; undefined for any other error. */
export function sqlState(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined
}

export const UNIQUE_VIOLATION = '23505'
