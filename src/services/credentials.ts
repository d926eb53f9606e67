/**
 * Credentials: organization API keys and the operator token.
 *
 * An API key reads `ctk_<12 characters>_<43 characters>`. The first part is
 * its prefix: public, stored in clear, shown in listings and used to find the
 * key's row. The whole key is stored only as its SHA-256 hash, and a presented
 * key is compared with that hash in constant time. A SHA-256 is enough (no
 * slow hash) because the secret part carries 256 random bits.
 */
import { hash, randomBytes, timingSafeEqual } from 'node:crypto'

export const KEY_PREFIX_LENGTH = 'ctk_'.length + 12
const KEY_SHAPE = /^ctk_[0-9a-z]{12}_[A-Za-z0-9_-]{43}$/
const PREFIX_ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz'

export interface GeneratedKey {
  key: string
  prefix: string
  hash: Buffer
}

export function generateApiKey(): GeneratedKey {
  const prefix = 'ctk_' + Array.from(randomBytes(12), (byte) => PREFIX_ALPHABET[byte % 36]).join('')
  const key = `${prefix}_${randomBytes(32).toString('base64url')}`
  return { key, prefix, hash: hashSecret(key) }
}

/** The prefix of a string shaped like an API key, or undefined for anything else. */
export function apiKeyPrefix(candidate: string): string | undefined {
  return KEY_SHAPE.test(candidate) ? candidate.slice(0, KEY_PREFIX_LENGTH) : undefined
}

export function hashSecret(secret: string): Buffer {
  return hash('sha256', secret, 'buffer')
}

/** Constant-time comparison of two SHA-256 digests. */
export function sameHash(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b)
}

export function generateOperatorToken(): string {
  return `cto_${randomBytes(32).toString('base64url')}`
}

/** 256 random bits, as 43 base64url characters. */
export function generatePhoneHashKey(): string {
  return randomBytes(32).toString('base64url')
}
