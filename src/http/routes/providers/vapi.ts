/**
 * Vapi's server URL: POST /providers/vapi/webhook receives the server
 * messages of the service's calls (channels/vapi/serverMessages.ts), set as
 * the assistant's (or its phone number's) server URL in Vapi.
 *
 * A message is believed only when it names a call of a Vapi interaction of
 * the service (the interaction id the call carries in its metadata, else
 * the call's id), verifies with the HMAC secret of that interaction's
 * campaign, and names the call the interaction started: otherwise 403, and
 * nothing changes. It is answered as soon as it is applied (Vapi waits 20 s
 * by default, server.timeoutSeconds), and applying the same message twice
 * changes nothing more (a finalized interaction stays as it is), so a retry
 * Vapi's backoffPlan makes is harmless. Nothing of a body is logged.
 */
import type { FastifyInstance } from 'fastify'
import {
  readVapiConfig,
  reportOfMessage,
  serverMessageOf,
  SIGNATURE_HEADER,
  TIMESTAMP_HEADER,
  type VapiChannel,
  verifyVapiSignature,
} from '../../../channels/vapi/vapiChannel.ts'
import { ApiError } from '../../../domain/errors.ts'
import { isId } from '../../../domain/ids.ts'
import type { TaskLifecycle } from '../../../services/taskLifecycle.ts'
import type { Database } from '../../../store/database.ts'
import { findInteractionByProviderRef, findInteractionWithConfig } from '../../../store/interactions.ts'
import { headerOf, keepRawBodies, signedBody } from './signedBodies.ts'

/**
 * An end-of-call-report carries the transcript three times (the text,
 * `messages`, `messagesOpenAIFormatted`) beside the whole Call and its
 * assistant: an hour's call (about 60 kB of transcript) makes some 300 kB.
 * This leaves room for calls of several hours; a larger body is refused with 413.
 */
export const VAPI_MAX_BODY_BYTES = 2 * 1024 * 1024

export async function vapiRoutes(app: FastifyInstance, deps: { db: Database; vapi: VapiChannel; lifecycle: TaskLifecycle; now: () => number }) {
  const { db, vapi, lifecycle, now } = deps
  const refused = () => new ApiError('forbidden', 'The request is not a verified Vapi server message for a call of this service.')

  keepRawBodies(app)

  app.post(
    '/providers/vapi/webhook',
    // Called by Vapi, signed with its HMAC credential: in neither OpenAPI document.
    { bodyLimit: VAPI_MAX_BODY_BYTES, schema: { hide: true, summary: 'Vapi server messages' } },
    async (request, reply) => {
      const { raw, json } = signedBody(request)
      const message = serverMessageOf(json)
      if (message === undefined) throw refused()
      const { interactionId, callId } = message
      const interaction =
        interactionId !== undefined && isId('interaction', interactionId)
          ? await findInteractionWithConfig(db, interactionId)
          : await findInteractionByProviderRef(db, 'vapi', callId)
      if (interaction === undefined || interaction.provider !== 'vapi') throw refused()
      const secret = vapi.webhookSecretFor(interaction.providerConfig)
      if (secret === undefined || !verifyVapiSignature(secret, raw, headerOf(request, SIGNATURE_HEADER), headerOf(request, TIMESTAMP_HEADER), now())) {
        throw refused()
      }
      // The call this interaction started, or (its start's answer lost) one that names it in its metadata.
      if (interaction.providerRef !== null ? interaction.providerRef !== callId : interactionId !== interaction.id) throw refused()
      const report = reportOfMessage(message, readVapiConfig(interaction.providerConfig), now())
      if (report !== undefined) await lifecycle.report(interaction, report)
      return reply.code(204).send()
    },
  )
}
