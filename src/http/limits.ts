/** Largest request body accepted (413 beyond). */
export const MAX_BODY_BYTES = 1024 * 1024
