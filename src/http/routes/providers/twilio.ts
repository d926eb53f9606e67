/**
 * Twilio's call status callbacks: POST /providers/twilio/calls/{interaction_id}/status,
 * form-encoded and signed with X-Twilio-Signature. A callback is believed only
 * when its signature verifies with the auth token of the campaign's account
 * over the exact URL Twilio was given, and it names that account and call.
 */
import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { reportFromStatusCallback, type TwilioChannel, verifyTwilioSignature } from '../../../channels/twilio/twilioChannel.ts'
import { ApiError } from '../../../domain/errors.ts'
import { isId } from '../../../domain/ids.ts'
import type { TaskLifecycle } from '../../../services/taskLifecycle.ts'
import type { Database } from '../../../store/database.ts'
import { findInteractionWithConfig } from '../../../store/interactions.ts'

export function twilioRoutes(app: FastifyInstance, deps: { db: Database; twilio: TwilioChannel; lifecycle: TaskLifecycle; now: () => number }) {
  const { db, twilio, lifecycle, now } = deps
  const refused = () => new ApiError('forbidden', 'The request is not a verified Twilio callback for this call.')

  app.post(
    '/providers/twilio/calls/:interaction_id/status',
    {
      schema: {
        summary: 'Twilio call status callback',
        description: 'Called by Twilio, signed with X-Twilio-Signature; not for clients.',
        tags: ['providers'],
        params: Type.Object({ interaction_id: Type.String() }),
      },
    },
    async (request, reply) => {
      const { interaction_id: interactionId } = request.params as { interaction_id: string }
      const interaction = isId('interaction', interactionId) ? await findInteractionWithConfig(db, interactionId) : undefined
      if (interaction === undefined || interaction.provider !== 'twilio') throw refused()
      const params = typeof request.body === 'string' ? Object.fromEntries(new URLSearchParams(request.body)) : {}
      const token = twilio.authTokenFor(interaction.providerConfig)
      const signature = request.headers['x-twilio-signature']
      if (token === undefined || !verifyTwilioSignature(token, twilio.statusCallbackUrl(interactionId), params, typeof signature === 'string' ? signature : undefined)) {
        throw refused()
      }
      if (params.AccountSid !== interaction.providerConfig.account_sid) throw refused()
      if (interaction.providerRef !== null && params.CallSid !== interaction.providerRef) throw refused()
      const report = reportFromStatusCallback(params, now())
      if (report !== undefined) await lifecycle.report(interaction, report)
      return reply.code(204).send()
    },
  )
}
