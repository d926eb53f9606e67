import { createHash, timingSafeEqual } from 'node:crypto'

/** Whether `given` is the secret: compared by digests, so that neither the content nor the length of the secret shows in the timing. */
export function sameSecret(given: string, expected: string): boolean {
  const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest()
  return timingSafeEqual(digest(given), digest(expected))
}
