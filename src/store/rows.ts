/** Conversions shared by the store modules; both database drivers return these shapes. */

/** `timestamptz` arrives as a Date from both drivers. */
export function iso(value: Date): string {
  return value.toISOString()
}

export function isoOrNull(value: Date | null): string | null {
  return value === null ? null : value.toISOString()
}

/**
 * SQLSTATE of an error the database server reported, from either driver
 * (both give it a severity); undefined for any other error, such as a lost
 * connection, whose Node.js code (EPIPE) could pass for a SQLSTATE.
 */
export function sqlState(error: unknown): string | undefined {
  const { code, severity } = (error ?? {}) as { code?: unknown; severity?: unknown }
  return typeof severity === 'string' && typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined
}

/**
 * Whether a failed statement or transaction is known to have been rolled
 * back: the server reported an error. Without a SQLSTATE, or with a
 * connection exception (class 08), the outcome is unknown.
 */
export function rolledBack(error: unknown): boolean {
  const state = sqlState(error)
  return state !== undefined && !state.startsWith('08')
}
