/**
 * The web console at /console: static files (src/console, copied beside the
 * compiled code) and the one ES module of the UI library it imports, Preact
 * with htm as the htm package ships them bundled: no build step. The console
 * calls the public API like any client; these routes serve files only.
 *
 * Every console response forbids inline script and style, framing and
 * content sniffing: client data is rendered as text, and the policy makes
 * sure a slip could not run it either.
 */
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import fastifyStatic from '@fastify/static'
import type { FastifyInstance } from 'fastify'
import { EVENT_TYPES } from '../../domain/types.ts'

const CONSOLE_FILES = fileURLToPath(new URL('../../console/', import.meta.url))

const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ')

/** Preact, its hooks and htm in one module with no imports of its own (the htm package's standalone build). */
const UI_LIBRARY = readFileSync(fileURLToPath(import.meta.resolve('htm/preact/standalone')))

/**
 * The event types an endpoint may subscribe to, as the service's own list
 * (domain/types.ts) makes them: a module the console imports, so that a type
 * added to the service is offered by the endpoint form without a copy to keep.
 */
const EVENT_TYPES_MODULE = `export const EVENT_TYPES = ${JSON.stringify(EVENT_TYPES)}\n`

export async function consoleRoutes(app: FastifyInstance) {
  await app.register(async (scope) => {
    scope.addHook('onSend', async (_request, reply) => {
      reply.header('content-security-policy', CONTENT_SECURITY_POLICY)
      reply.header('x-frame-options', 'DENY')
      reply.header('x-content-type-options', 'nosniff')
      reply.header('referrer-policy', 'no-referrer')
    })
    scope.get('/console', { schema: { hide: true } }, (_request, reply) => reply.redirect('/console/'))
    scope.get('/console/vendor/preact-htm.js', { schema: { hide: true } }, (_request, reply) =>
      reply.type('text/javascript; charset=utf-8').header('cache-control', 'public, max-age=3600').send(UI_LIBRARY),
    )
    scope.get('/console/event-types.js', { schema: { hide: true } }, (_request, reply) =>
      reply.type('text/javascript; charset=utf-8').header('cache-control', 'no-cache').send(EVENT_TYPES_MODULE),
    )
    await scope.register(fastifyStatic, { root: CONSOLE_FILES, prefix: '/console/', decorateReply: false, index: 'index.html' })
  })
}
