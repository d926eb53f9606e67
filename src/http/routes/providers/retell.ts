/**
 * Retell's webhooks: POST /providers/retell/webhook, the URL set as the
 * agent's webhook (or the account's), receives `{"event", "call"}` for every
 * call of the agent, signed in `x-retell-signature` with the API key over the
 * raw body (channels/retell/calls.ts).
 *
 * A webhook is believed only when it names a call of a Retell campaign (by
 * its call_id, or, before the call's creation was answered, by the
 * interaction its metadata names) and verifies with that campaign's API key;
 * anything else is refused with 403 and changes nothing. Retell retries a
 * webhook not answered 2xx within 10 s, up to three times, and may deliver
 * one twice: every report applies idempotently (an interaction's end and its
 * result are recorded once), and the answer, 204, comes as soon as the report
 * is recorded. Bodies are bounded by the service's body limit (1 MiB: an
 * hour's transcript, with its words' timings, is about half that), 413
 * beyond. Nothing of the body is logged but the ids
 * (services/providerCallbacks.ts applies it; channels/retell/retellChannel.ts reads it).
 */
import type { FastifyInstance } from 'fastify'
import type { RetellChannel } from '../../../channels/retell/retellChannel.ts'
import { ApiError } from '../../../domain/errors.ts'
import type { ProviderCallbacks } from '../../../services/providerCallbacks.ts'
import { MAX_BODY_BYTES } from '../../limits.ts'
import { keepRawBodies, signedRequest } from './signedBodies.ts'

export async function retellRoutes(app: FastifyInstance, deps: { retell: RetellChannel; callbacks: ProviderCallbacks }) {
  const { retell, callbacks } = deps
  keepRawBodies(app)

  app.post(
    '/providers/retell/webhook',
    // Called by Retell: in neither OpenAPI document.
    { bodyLimit: MAX_BODY_BYTES, schema: { hide: true, summary: 'Retell call webhook' } },
    async (request, reply) => {
      const received = await callbacks.receive(retell.webhook, signedRequest(request))
      if (received.kind !== 'applied') throw new ApiError('forbidden', 'The request is not a verified Retell webhook for a call of this service.')
      request.log.info({ interaction: received.interactionId, call: received.ref }, 'Retell webhook')
      return reply.code(204).send()
    },
  )
}
