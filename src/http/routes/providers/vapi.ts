/**
 * Vapi's server URL: POST /providers/vapi/webhook receives the server
 * messages of the service's calls (channels/vapi/serverMessages.ts), set as
 * the assistant's (or its phone number's) server URL in Vapi.
 *
 * A message is believed only when it names a call of a Vapi interaction of
 * the service (by the call's id, else, while the start's answer is not
 * recorded, by the interaction id the call carries in its metadata:
 * services/providerCallbacks.ts) and verifies with the HMAC secret of that
 * interaction's campaign: otherwise 403, and nothing changes. It is answered as soon as it is applied (Vapi waits 20 s
 * by default, server.timeoutSeconds), and applying the same message twice
 * changes nothing more (a finalized interaction stays as it is), so a retry
 * Vapi's backoffPlan makes is harmless. Nothing of a body is logged.
 */
import type { FastifyInstance } from 'fastify'
import type { VapiChannel } from '../../../channels/vapi/vapiChannel.ts'
import { ApiError } from '../../../domain/errors.ts'
import type { ProviderCallbacks } from '../../../services/providerCallbacks.ts'
import { keepRawBodies, signedRequest } from './signedBodies.ts'

/**
 * An end-of-call-report carries the transcript three times (the text,
 * `messages`, `messagesOpenAIFormatted`) beside the whole Call and its
 * assistant: an hour's call (about 60 kB of transcript) makes some 300 kB.
 * This leaves room for calls of several hours; a larger body is refused with 413.
 */
export const VAPI_MAX_BODY_BYTES = 2 * 1024 * 1024

export async function vapiRoutes(app: FastifyInstance, deps: { vapi: VapiChannel; callbacks: ProviderCallbacks }) {
  const { vapi, callbacks } = deps
  keepRawBodies(app)

  app.post(
    '/providers/vapi/webhook',
    // Called by Vapi, signed with its HMAC credential: in neither OpenAPI document.
    { bodyLimit: VAPI_MAX_BODY_BYTES, schema: { hide: true, summary: 'Vapi server messages' } },
    async (request, reply) => {
      const received = await callbacks.receive(vapi.serverMessages, signedRequest(request))
      if (received.kind !== 'applied') throw new ApiError('forbidden', 'The request is not a verified Vapi server message for a call of this service.')
      return reply.code(204).send()
    },
  )
}
