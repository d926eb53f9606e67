/**
 * Every agent platform's callbacks about its calls, each at the path its
 * adapter names (channels/callbacks.ts CallbackRoute), and its asks of how to
 * answer a call to a campaign's number where it makes them at a URL of its
 * own, in a scope of its own
 * that keeps the exact bytes signed: the request is passed as it came to
 * services/providerCallbacks.ts, and answered as the adapter says (403 for
 * one not verified, and nothing changes). Called by the platforms: in
 * neither OpenAPI document. Nothing of a body is logged.
 */
import type { FastifyInstance } from 'fastify'
import type { CallCallback } from '../../../channels/callbacks.ts'
import { ApiError } from '../../../domain/errors.ts'
import type { ProviderCallbacks } from '../../../services/providerCallbacks.ts'
import { keepRawBodies, signedRequest } from './signedBodies.ts'

export async function callCallbackRoutes(app: FastifyInstance, deps: { callbacks: ProviderCallbacks; served: readonly CallCallback<unknown>[] }) {
  for (const callback of deps.served) {
    const { path, summary, bodyLimit, answer, ignoresUnknown, refusal } = callback.route
    await app.register(async (scope) => {
      keepRawBodies(scope, bodyLimit)
      scope.post(path, { bodyLimit, schema: { hide: true, summary } }, async (request, reply) => {
        const received = await deps.callbacks.receive(callback, signedRequest(request))
        if (received.kind === 'answered') return reply.code(200).send(received.body)
        if (received.kind === 'applied' || (ignoresUnknown && received.kind !== 'refused')) return reply.code(answer).send()
        throw new ApiError('forbidden', refusal)
      })
    })
    const inbound = callback.inbound
    if (inbound?.route === undefined) continue
    // A platform that asks how to answer a call to a campaign's number at a URL of its own (docs/callbacks.md).
    const own = inbound.route
    await app.register(async (scope) => {
      keepRawBodies(scope, own.bodyLimit)
      scope.post(own.path, { bodyLimit: own.bodyLimit, schema: { hide: true, summary: own.summary } }, async (request, reply) => {
        const received = await deps.callbacks.answerInbound(callback.provider, inbound, signedRequest(request))
        if (received.kind === 'answered') return reply.code(200).send(received.body)
        throw new ApiError('forbidden', own.refusal)
      })
    })
  }
}
