/**
 * Prefixed, time-ordered identifiers: `trg_` + 26 characters of Crockford
 * base32 (48 bits of milliseconds, then 80 random bits), ULID-style. Sorting
 * ids of one kind as strings sorts them by creation time, which keeps index
 * inserts local and makes ids usable as pagination cursors. Within one
 * millisecond a process counts up from the previous id of the same kind
 * (ULID's monotonic mode), so events written in one transaction sort in the
 * order they were written.
 */
import { randomFillSync } from 'node:crypto'

export const ID_PREFIXES = {
  organization: 'org',
  apiKey: 'key',
  campaign: 'cmp',
  trigger: 'trg',
  task: 'tsk',
  contact: 'ctc',
  interaction: 'int',
  event: 'evt',
  webhookEndpoint: 'whe',
  consent: 'cns',
  registry: 'reg',
  request: 'req',
  worker: 'wrk',
  sessionMessage: 'msg',
} as const

export type IdKind = keyof typeof ID_PREFIXES

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz'
const RANDOM_CHARS = 16
const randomPool = new Uint8Array(RANDOM_CHARS * 256)
let randomOffset = randomPool.length
/** The previous id of each kind: its millisecond and random digits. */
const previous = new Map<IdKind, { time: number; random: Uint8Array }>()

export function newId(kind: IdKind, now: number = Date.now()): string {
  let last = previous.get(kind)
  if (last === undefined) previous.set(kind, (last = { time: -1, random: new Uint8Array(RANDOM_CHARS) }))
  if (now !== last.time || !increment(last.random)) {
    if (randomOffset === randomPool.length) {
      randomFillSync(randomPool)
      randomOffset = 0
    }
    for (let i = 0; i < RANDOM_CHARS; i++) last.random[i] = randomPool[randomOffset++]! & 31
    last.time = now
  }
  return `${ID_PREFIXES[kind]}_${encodeTime(now)}${encodeRandom(last.random)}`
}

function encodeTime(now: number): string {
  let time = ''
  for (let i = 0, t = now; i < 10; i++, t = Math.floor(t / 32)) time = ALPHABET[t % 32] + time
  return time
}

function encodeRandom(digits: Uint8Array): string {
  let random = ''
  for (const digit of digits) random += ALPHABET[digit]
  return random
}

/** Adds one to a base-32 number; false when it overflows (then a fresh random part is drawn). */
function increment(digits: Uint8Array): boolean {
  for (let i = digits.length - 1; i >= 0; i--) {
    if (digits[i]! < 31) {
      digits[i]!++
      return true
    }
    digits[i] = 0
  }
  return false
}

const ID_BODY = /^[0-9a-hjkmnp-tv-z]{26}$/

/** True when `value` has the shape of an id of `kind`; says nothing of whether it exists. */
export function isId(kind: IdKind, value: string): boolean {
  const prefix = `${ID_PREFIXES[kind]}_`
  return value.startsWith(prefix) && ID_BODY.test(value.slice(prefix.length))
}

/** The millisecond an id of a well-formed shape (isId) was made in: its first 10 characters after the prefix. */
export function timeOfId(id: string): number {
  const body = id.slice(id.indexOf('_') + 1, id.indexOf('_') + 11)
  let time = 0
  for (const character of body) time = time * 32 + ALPHABET.indexOf(character)
  return time
}
