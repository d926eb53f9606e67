/**
 * Verifying a webhook as Standard Webhooks defines it
 * (https://www.standardwebhooks.com): the signature is `v1,` and the base64
 * HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}`, keyed by the
 * base64-decoded part of the secret after `whsec_`. During a secret rotation
 * the header holds several signatures, separated by spaces; one match is
 * enough.
 */
import { createHmac, timingSafeEqual } from 'node:crypto'
import { WebhookVerificationError } from './errors.js'
import type { WebhookEvent } from './types.js'

const SECRET_PREFIX = 'whsec_'
const SIGNATURE_VERSION = 'v1,'

/** Request headers as Node's http module, Express, Fastify or fetch's Headers give them. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>

export interface VerifyOptions {
  /**
   * How far the webhook's timestamp may be from now, either way, in seconds
   * (default 300): a webhook captured and replayed later is refused.
   */
  toleranceSeconds?: number
  /** The time to check the timestamp against (default: the system clock). */
  now?: Date | number
}

/**
 * The event a webhook carries, once its signature and timestamp are checked;
 * throws WebhookVerificationError otherwise. `rawBody` must be the body's
 * bytes (or text) exactly as received: JSON parsed and serialized again no
 * longer matches its signature.
 */
export function verifyWebhook(rawBody: string | Uint8Array, headers: WebhookHeaders, secret: string, options: VerifyOptions = {}): WebhookEvent {
  const id = header(headers, 'webhook-id')
  const timestamp = header(headers, 'webhook-timestamp')
  const signatures = header(headers, 'webhook-signature')
  if (id === undefined || timestamp === undefined || signatures === undefined) {
    throw new WebhookVerificationError('The webhook-id, webhook-timestamp and webhook-signature headers are required.')
  }
  if (!/^\d+$/.test(timestamp)) throw new WebhookVerificationError('webhook-timestamp is not a whole number of seconds.')
  const toleranceSeconds = options.toleranceSeconds ?? 300
  const nowSeconds = Math.floor(Number(options.now ?? Date.now()) / 1000)
  if (Math.abs(nowSeconds - Number(timestamp)) > toleranceSeconds) {
    throw new WebhookVerificationError(`webhook-timestamp is more than ${toleranceSeconds} seconds from now.`)
  }
  const body = typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : Buffer.from(rawBody.buffer, rawBody.byteOffset, rawBody.byteLength)
  const expected = createHmac('sha256', secretKey(secret)).update(`${id}.${timestamp}.`).update(body).digest()
  const matches = signatures
    .split(' ')
    .filter((signature) => signature.startsWith(SIGNATURE_VERSION))
    .some((signature) => {
      const given = Buffer.from(signature.slice(SIGNATURE_VERSION.length), 'base64')
      return given.length === expected.length && timingSafeEqual(given, expected)
    })
  if (!matches) throw new WebhookVerificationError('No signature in webhook-signature matches the body with this secret.')
  try {
    return JSON.parse(body.toString('utf8')) as WebhookEvent
  } catch {
    throw new WebhookVerificationError('The signed body is not JSON.')
  }
}

function secretKey(secret: string): Buffer {
  const key = Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64')
  // An empty key is one anyone can sign with.
  if (key.length === 0) throw new WebhookVerificationError('The webhook secret is empty: pass the endpoint\'s whsec_... secret.')
  return key
}

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (headers instanceof Headers) return headers.get(name) ?? undefined
  const value = headers[name] ?? Object.entries(headers).find(([key]) => key.toLowerCase() === name)?.[1]
  return Array.isArray(value) ? value[0] : value
}
