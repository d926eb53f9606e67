/**
 * Every agent platform's callbacks about its calls, each at the path its
 * adapter names (channels/callbacks.ts CallbackRoute), in a scope of its own
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
  }
}
