/**
 * When to try again a start a provider turned away for now (its own
 * throttling, a moment's outage): what its Retry-After header says, in
 * either form RFC 9110 §10.2.3 allows (delay-seconds, or an HTTP-date), and
 * otherwise a few seconds with jitter, so that the attempts a burst had
 * turned away do not all come back in the same instant. The dispatcher
 * bounds whatever this says (src/services/dispatch.ts).
 */

/** Without a usable Retry-After: 2 s, plus up to 3 s of jitter. */
const DEFAULT_MS = 2_000
const JITTER_MS = 3_000

/** How long to wait, in ms, from a Retry-After header value (null or undefined when absent) received at `now`. */
export function retryAfterMs(header: string | null | undefined, now: number, random: () => number = Math.random): number {
  const value = header?.trim() ?? ''
  if (/^\d+$/.test(value)) return Number(value) * 1000
  if (value !== '') {
    const date = Date.parse(value)
    if (Number.isFinite(date)) return Math.max(0, date - now)
  }
  return DEFAULT_MS + Math.floor(random() * JITTER_MS)
}
