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
import {
  type ElevenLabsChannel,
  readElevenLabsConfig,
  reportFromWebhook,
  verifyElevenLabsSignature,
  type WebhookEvent,
  webhookEvent,
} from '../../../channels/elevenlabs/elevenlabsChannel.ts'
import { ApiError } from '../../../domain/errors.ts'
import { isId } from '../../../domain/ids.ts'
import type { TaskLifecycle } from '../../../services/taskLifecycle.ts'
import type { Database } from '../../../store/database.ts'
import { findInteractionByProviderRef, findInteractionWithConfig, type InteractionWithConfig } from '../../../store/interactions.ts'
import { headerOf, keepRawBodies, signedBody } from './signedBodies.ts'

/**
 * 4 MiB: a result keeps at most 256 KiB of transcript (RESULT_LIMITS), but
 * ElevenLabs sends each turn with its tool calls, timings and LLM usage,
 * several times the words themselves.
 */
export const WEBHOOK_BODY_LIMIT = 4 * 1024 * 1024

export async function elevenlabsRoutes(
  app: FastifyInstance,
  deps: { db: Database; elevenlabs: ElevenLabsChannel; lifecycle: TaskLifecycle; now: () => number },
) {
  const { db, elevenlabs, lifecycle, now } = deps
  const refused = () => new ApiError('forbidden', 'The webhook is not signed by ElevenLabs for a conversation of this service.')

  keepRawBodies(app, WEBHOOK_BODY_LIMIT)

  app.post(
    '/providers/elevenlabs/webhook',
    // Called by ElevenLabs: in neither OpenAPI document.
    { bodyLimit: WEBHOOK_BODY_LIMIT, schema: { hide: true, summary: 'ElevenLabs post-call webhook' } },
    async (request, reply) => {
      const { raw, json } = signedBody(request)
      const event = webhookEvent(json)
      const interaction = event === undefined ? undefined : await interactionOf(event)
      if (event === undefined || interaction === undefined) return reply.code(200).send()
      const secret = elevenlabs.webhookSecretFor(interaction.providerConfig)
      if (secret === undefined || !verifyElevenLabsSignature(secret, raw, headerOf(request, 'elevenlabs-signature'), now())) throw refused()
      const config = readElevenLabsConfig(interaction.providerConfig)
      if (event.agentId !== undefined && event.agentId !== config.agentId) throw refused()
      await lifecycle.report(interaction, reportFromWebhook(event, config, now()))
      return reply.code(200).send()
    },
  )

  /** The interaction a webhook is about: by its conversation, else (a start whose answer was lost) by the interaction id the agent was given. */
  async function interactionOf(event: WebhookEvent): Promise<InteractionWithConfig | undefined> {
    const started = await findInteractionByProviderRef(db, 'elevenlabs', event.conversationId)
    if (started !== undefined) return started
    const id = event.interactionId
    const unconfirmed = id !== undefined && isId('interaction', id) ? await findInteractionWithConfig(db, id) : undefined
    return unconfirmed?.provider === 'elevenlabs' && unconfirmed.providerRef === null ? unconfirmed : undefined
  }
}
