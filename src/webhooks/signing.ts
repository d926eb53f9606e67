/**
 * Standard Webhooks signing (https://www.standardwebhooks.com): a secret is
 * `whsec_` and the base64 of its key bytes; a signature is `v1,` and the
 * base64 HMAC-SHA256, keyed by those bytes, of `{id}.{timestamp}.{body}`.
 * Several signatures (a rotation) go in one header, separated by spaces.
 */
import { createHmac, randomBytes } from 'node:crypto'

const PREFIX = 'whsec_'
const KEY_BYTES = 32

export function newWebhookSecret(): string {
  return PREFIX + randomBytes(KEY_BYTES).toString('base64')
}

/** Whether a text is a secret as newWebhookSecret makes them: whsec_ and the base64 of 24 to 64 key bytes. */
export function isWebhookSecret(text: string): boolean {
  if (!text.startsWith(PREFIX) || !/^[A-Za-z0-9+/]+={0,2}$/.test(text.slice(PREFIX.length))) return false
  const bytes = Buffer.from(text.slice(PREFIX.length), 'base64').length
  return bytes >= 24 && bytes <= 64
}

export function signature(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.slice(PREFIX.length), 'base64')
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`
}

/** The `webhook-signature` header: one signature per secret that signs now. */
export function signatureHeader(secrets: readonly string[], id: string, timestamp: number, body: string): string {
  return secrets.map((secret) => signature(secret, id, timestamp, body)).join(' ')
}
