/**
 * What the providers' webhook routes share. A provider signs a body's exact
 * bytes, so each route's scope keeps them (no JSON parser of its own), reads
 * the JSON from those bytes itself, and checks the signature over the very
 * bytes it parsed. Their routes declare no body schema: the validator would
 * take the Buffer for a JSON object and check it key by key, a byte a key
 * (9 % of the API process's CPU end to end through Vapi, in a profile).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { SignedRequest } from '../../../channels/callbacks.ts'

/** Bodies of every content type reach this scope's routes as the bytes sent. */
export function keepRawBodies(app: FastifyInstance, bodyLimit?: number): void {
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('*', { parseAs: 'buffer', ...(bodyLimit === undefined ? {} : { bodyLimit }) }, (_request, body, done) => done(null, body))
}

/** The body's bytes and its JSON: undefined when it is not JSON, which no provider sends. */
function signedBody(request: FastifyRequest): { raw: Buffer; json: unknown } {
  const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0)
  try {
    return { raw, json: JSON.parse(raw.toString('utf8')) as unknown }
  } catch {
    return { raw, json: undefined }
  }
}

/** A header sent once; undefined when absent or repeated. */
function headerOf(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name]
  return typeof value === 'string' ? value : undefined
}

/** The request as a provider's callback reads it (channels/callbacks.ts): its bytes, their JSON, its headers. */
export function signedRequest(request: FastifyRequest): SignedRequest {
  return { ...signedBody(request), header: (name) => headerOf(request, name) }
}
