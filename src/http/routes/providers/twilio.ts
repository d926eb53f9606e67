/**
 * Twilio's requests about a call, form-encoded and signed with
 * X-Twilio-Signature:
 * - POST /providers/twilio/calls/{interaction_id}/answer, the call's `Url`,
 *   when it is answered: answered with the TwiML that hands the call to the
 *   campaign's conversation (channels/twilio/twiml.ts);
 * - POST /providers/twilio/calls/{interaction_id}/status, its status callbacks;
 * - POST /providers/twilio/calls/{interaction_id}/amd, its asynchronous
 *   answering-machine detection's verdict (campaigns whose voicemail policy
 *   is `leave_message`): when a machine's greeting has ended, the live call
 *   is given the TwiML that leaves the campaign's message, once.
 * A request is believed only when its signature verifies with the auth token
 * of the campaign's account over the exact URL Twilio was given, and it names
 * that account and call.
 */
import { Type } from '@sinclair/typebox'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import {
  greetingEnded,
  HANG_UP_TWIML,
  MESSAGE_LEFT_STATUS,
  reportFromStatusCallback,
  type TwilioChannel,
  verifyTwilioSignature,
  withMessageLeft,
} from '../../../channels/twilio/twilioChannel.ts'
import { ApiError } from '../../../domain/errors.ts'
import { isId } from '../../../domain/ids.ts'
import type { Conversations } from '../../../services/conversations.ts'
import type { TaskLifecycle } from '../../../services/taskLifecycle.ts'
import type { Database } from '../../../store/database.ts'
import { claimVoicemailHandoff, findInteractionWithConfig, type InteractionWithConfig, releaseVoicemailHandoff } from '../../../store/interactions.ts'

export function twilioRoutes(
  app: FastifyInstance,
  deps: { db: Database; twilio: TwilioChannel; lifecycle: TaskLifecycle; conversations: Conversations; now: () => number },
) {
  const { db, twilio, lifecycle, conversations, now } = deps
  const refused = () => new ApiError('forbidden', 'The request is not a verified Twilio request for this call.')
  // Called by Twilio, signed with X-Twilio-Signature: in neither OpenAPI document.
  const schema = (summary: string) => ({
    summary,
    hide: true,
    params: Type.Object({ interaction_id: Type.String() }),
  })

  /** The interaction a request names, with the request's parameters, when Twilio signed it for the URL it was given for the call. */
  async function verified(request: FastifyRequest, urlOf: (interactionId: string) => string): Promise<{ interaction: InteractionWithConfig; params: Record<string, string> }> {
    const { interaction_id: interactionId } = request.params as { interaction_id: string }
    const interaction = isId('interaction', interactionId) ? await findInteractionWithConfig(db, interactionId) : undefined
    if (interaction === undefined || interaction.provider !== 'twilio') throw refused()
    const params = typeof request.body === 'string' ? Object.fromEntries(new URLSearchParams(request.body)) : {}
    const token = twilio.authTokenFor(interaction.providerConfig)
    const signature = request.headers['x-twilio-signature']
    if (token === undefined || !verifyTwilioSignature(token, urlOf(interactionId), params, typeof signature === 'string' ? signature : undefined)) {
      throw refused()
    }
    if (params.AccountSid !== interaction.providerConfig.account_sid) throw refused()
    if (interaction.providerRef !== null && params.CallSid !== interaction.providerRef) throw refused()
    return { interaction, params }
  }

  app.post('/providers/twilio/calls/:interaction_id/answer', { schema: schema('Twilio answered call') }, async (request, reply) => {
    const { interaction, params } = await verified(request, (id) => twilio.answerUrl(id))
    // Twilio has the call, though its answer to the start may have been lost: this confirms it.
    const report = reportFromStatusCallback(params, now())
    if (interaction.status === 'starting' && report?.kind === 'progress') await lifecycle.report(interaction, report)
    const context = interaction.status === 'finalized' ? undefined : await conversations.contextForProvider(interaction.id)
    // Settled meanwhile (a start taken for failed): no conversation waits for the call.
    if (context === undefined) return reply.type('text/xml; charset=utf-8').send(HANG_UP_TWIML)
    const { mode, twiml, leftOut } = twilio.handoff(interaction.providerConfig, {
      interactionId: interaction.id,
      taskId: interaction.taskId,
      attempt: interaction.attempt,
      language: context.contact?.language,
      firstName: context.contact?.first_name,
      context: context.context,
    })
    await conversations.recordHandoff(interaction.id, { mode, at: new Date(now()).toISOString(), left_out: leftOut })
    return reply.type('text/xml; charset=utf-8').send(twiml)
  })

  app.post('/providers/twilio/calls/:interaction_id/status', { schema: schema('Twilio call status callback') }, async (request, reply) => {
    const { interaction, params } = await verified(request, (id) => twilio.statusCallbackUrl(id))
    const report = reportFromStatusCallback(params, now())
    if (report !== undefined) await lifecycle.report(interaction, withMessageLeft(report, interaction.handoffMode === 'voicemail'))
    return reply.code(204).send()
  })

  // Only calls of leave_message campaigns are placed with an AMD callback: a campaign without it costs nothing here.
  // With it, a machine whose greeting ended costs one small transaction (the claim) and one request to Twilio.
  app.post('/providers/twilio/calls/:interaction_id/amd', { schema: schema('Twilio answering machine detection callback') }, async (request, reply) => {
    const { interaction, params } = await verified(request, (id) => twilio.amdCallbackUrl(id))
    const callSid = params.CallSid
    // A person (or a fax, or no verdict) goes on as any answered call: the conversation has it already.
    if (!greetingEnded(params.AnsweredBy) || callSid === undefined || !twilio.leavesMessage(interaction.providerConfig)) return reply.code(204).send()
    if (interaction.status === 'finalized' || interaction.handoffMode === 'voicemail') return reply.code(204).send()
    const context = await conversations.contextForProvider(interaction.id)
    if (context === undefined) return reply.code(204).send()
    // Claimed before Twilio is asked, so that a repeated callback leaves no second message.
    const claimed = await claimVoicemailHandoff(db, interaction.id, { mode: 'voicemail', at: new Date(now()).toISOString(), left_out: [] }, MESSAGE_LEFT_STATUS)
    if (claimed === undefined) return reply.code(204).send()
    const values = {
      firstName: context.contact?.first_name,
      lastName: context.contact?.last_name,
      language: context.contact?.language,
      context: context.context,
    }
    let left: boolean
    try {
      left = await twilio.leaveMessage(interaction.providerConfig, callSid, values)
    } catch (error) {
      await releaseVoicemailHandoff(db, interaction.id, claimed)
      throw error
    }
    // The call ended before the message could be left (Twilio refused the update): it ends as a machine's call.
    if (!left) await releaseVoicemailHandoff(db, interaction.id, claimed)
    return reply.code(204).send()
  })
}
