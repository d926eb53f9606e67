/**
 * ElevenLabs' post-call webhooks: POST /providers/elevenlabs/webhook, the URL
 * set on the workspace's webhook (Settings > Webhooks) that the agent's
 * post-call webhook uses, signed in `ElevenLabs-Signature` with that
 * webhook's HMAC secret over the exact body bytes.
 *
 * A `post_call_transcription` ends its interaction with its transcript and
 * analysis as the result; a `call_initiation_failure` ends it as busy, not
 * answered or failed; other events (`post_call_audio`) are not read. The
 * interaction is the one whose provider_ref is the `conversation_id`, or,
 * when the start's answer was lost, the one the `interaction_id` dynamic
 * variable names. A webhook is believed only when it verifies with the
 * secret of that interaction's campaign and names its agent: otherwise 403,
 * and nothing changes.
 *
 * ElevenLabs expects a 200 and disables a webhook that keeps failing, so a
 * webhook about no conversation of this service (a call from the dashboard,
 * an inbound call) is answered 200 and ignored. Its retries, once enabled,
 * send the same report again: a finalized interaction ignores it. A
 * transcript with its per-turn details can exceed the API's 1 MiB bodies:
 * this route takes up to WEBHOOK_BODY_LIMIT and answers 413 beyond. Nothing
 * of a body is logged.
 */
import type { FastifyInstance } from 'fastify'
import type { ElevenLabsChannel } from '../../../channels/elevenlabs/elevenlabsChannel.ts'
import { ApiError } from '../../../domain/errors.ts'
import type { ProviderCallbacks } from '../../../services/providerCallbacks.ts'
import { keepRawBodies, signedRequest } from './signedBodies.ts'

/**
 * 4 MiB: a result keeps at most 256 KiB of transcript (RESULT_LIMITS), but
 * ElevenLabs sends each turn with its tool calls, timings and LLM usage,
 * several times the words themselves.
 */
export const WEBHOOK_BODY_LIMIT = 4 * 1024 * 1024

export async function elevenlabsRoutes(app: FastifyInstance, deps: { elevenlabs: ElevenLabsChannel; callbacks: ProviderCallbacks }) {
  const { elevenlabs, callbacks } = deps
  keepRawBodies(app, WEBHOOK_BODY_LIMIT)

  app.post(
    '/providers/elevenlabs/webhook',
    // Called by ElevenLabs: in neither OpenAPI document.
    { bodyLimit: WEBHOOK_BODY_LIMIT, schema: { hide: true, summary: 'ElevenLabs post-call webhook' } },
    async (request, reply) => {
      const received = await callbacks.receive(elevenlabs.postCallWebhook, signedRequest(request))
      // About no conversation of this service (or an event not read): 200 and ignored, as ElevenLabs wants.
      if (received.kind === 'refused') throw new ApiError('forbidden', 'The webhook is not signed by ElevenLabs for a conversation of this service.')
      return reply.code(200).send()
    },
  )
}
