/**
 * Prefixed, time-ordered identifiers: `trg_` + 26 characters of Crockford
 * base32 (48 bits of milliseconds, then 80 random bits), ULID-style. Sorting
 * ids of one kind as strings sorts them by creation time, which keeps index
 * inserts local and makes ids usable as pagination cursors.
 */
import { randomFillSync } from 'node:crypto'

export const ID_PREFIXES = {
  organization: 'org',
  apiKey: 'key',
  campaign: 'cmp',
  trigger: 'trg',
  task: 'tsk',
  interaction: 'int',
  event: 'evt',
  webhookEndpoint: 'whe',
  request: 'req',
} as const

export type IdKind = keyof typeof ID_PREFIXES

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz'
const RANDOM_CHARS = 16
const randomPool = new Uint8Array(RANDOM_CHARS * 256)
let randomOffset = randomPool.length

export function newId(kind: IdKind, now: number = Date.now()): string {
  let time = ''
  for (let i = 0, t = now; i < 10; i++, t = Math.floor(t / 32)) time = ALPHABET[t % 32] + time
  if (randomOffset === randomPool.length) {
    randomFillSync(randomPool)
    randomOffset = 0
  }
  let random = ''
  for (let i = 0; i < RANDOM_CHARS; i++) random += ALPHABET[randomPool[randomOffset++]! & 31]
  return `${ID_PREFIXES[kind]}_${time}${random}`
}

const ID_BODY = /^[0-9a-hjkmnp-tv-z]{26}$/

/** True when `value` has the shape of an id of `kind`; says nothing of whether it exists. */
export function isId(kind: IdKind, value: string): boolean {
  const prefix = `${ID_PREFIXES[kind]}_`
  return value.startsWith(prefix) && ID_BODY.test(value.slice(prefix.length))
}
