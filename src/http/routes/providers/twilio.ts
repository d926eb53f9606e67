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
 * And a campaign's number's webhooks, about a call the person made
 * (docs/callbacks.md):
 * - POST /providers/twilio/voice/inbound, its voice webhook: answered with
 *   the TwiML that hands the call, landed on the person's task, to the
 *   campaign's conversation;
 * - POST /providers/twilio/voice/inbound/status, its status callback.
 * Texts (services/twilioMessages.ts, docs/messaging.md):
 * - POST /providers/twilio/messages/{interaction_id}/status, an attempt's
 *   status callbacks;
 * - POST /providers/twilio/messages/status, those of the texts sent in
 *   conversations;
 * - POST /providers/twilio/messages/inbound, a campaign's number's
 *   messaging webhook ("A message comes in"): answered with TwiML (the
 *   campaign's help text to a HELP, else nothing to send).
 * A request is believed only when its signature verifies with the auth token
 * of the campaign's account over the exact URL Twilio was given, and it names
 * that account and call (services/twilioCalls.ts): otherwise 403.
 */
import { Type } from '@sinclair/typebox'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { ApiError } from '../../../domain/errors.ts'
import type { TwilioCallRequest, TwilioCalls, TwilioInboundRequest } from '../../../services/twilioCalls.ts'
import type { TwilioMessages } from '../../../services/twilioMessages.ts'

export function twilioRoutes(app: FastifyInstance, deps: { twilioCalls: TwilioCalls; twilioMessages: TwilioMessages }) {
  const { twilioCalls, twilioMessages } = deps
  const refused = () => new ApiError('forbidden', 'The request is not a verified Twilio request for this call.')
  // Called by Twilio, signed with X-Twilio-Signature: in neither OpenAPI document.
  const schema = (summary: string) => ({
    summary,
    hide: true,
    params: Type.Object({ interaction_id: Type.String() }),
  })
  const callRequest = (request: FastifyRequest): TwilioCallRequest => {
    const signature = request.headers['x-twilio-signature']
    return {
      interactionId: (request.params as { interaction_id: string }).interaction_id,
      form: typeof request.body === 'string' ? request.body : '',
      signature: typeof signature === 'string' ? signature : undefined,
    }
  }

  const inboundRequest = (request: FastifyRequest): TwilioInboundRequest => {
    const signature = request.headers['x-twilio-signature']
    return { form: typeof request.body === 'string' ? request.body : '', signature: typeof signature === 'string' ? signature : undefined }
  }

  app.post('/providers/twilio/voice/inbound', { schema: { summary: 'Twilio incoming call to a campaign number', hide: true } }, async (request, reply) => {
    const twiml = await twilioCalls.inbound(inboundRequest(request))
    if (twiml === undefined) throw new ApiError('forbidden', 'The request is not a verified Twilio request for a campaign number.')
    return reply.type('text/xml; charset=utf-8').send(twiml)
  })

  app.post('/providers/twilio/voice/inbound/status', { schema: { summary: 'Twilio status callback of an incoming call', hide: true } }, async (request, reply) => {
    if (!(await twilioCalls.inboundStatusReported(inboundRequest(request)))) throw refused()
    return reply.code(204).send()
  })

  app.post('/providers/twilio/calls/:interaction_id/answer', { schema: schema('Twilio answered call') }, async (request, reply) => {
    const twiml = await twilioCalls.answered(callRequest(request))
    if (twiml === undefined) throw refused()
    return reply.type('text/xml; charset=utf-8').send(twiml)
  })

  app.post('/providers/twilio/calls/:interaction_id/status', { schema: schema('Twilio call status callback') }, async (request, reply) => {
    if (!(await twilioCalls.statusReported(callRequest(request)))) throw refused()
    return reply.code(204).send()
  })

  app.post('/providers/twilio/calls/:interaction_id/amd', { schema: schema('Twilio answering machine detection callback') }, async (request, reply) => {
    if (!(await twilioCalls.machineDetected(callRequest(request)))) throw refused()
    return reply.code(204).send()
  })

  app.post('/providers/twilio/messages/inbound', { schema: { summary: 'Twilio incoming text to a campaign number', hide: true } }, async (request, reply) => {
    const twiml = await twilioMessages.inbound(inboundRequest(request))
    if (twiml === undefined) throw new ApiError('forbidden', 'The request is not a verified Twilio request for a campaign number.')
    return reply.type('text/xml; charset=utf-8').send(twiml)
  })

  app.post('/providers/twilio/messages/status', { schema: { summary: 'Twilio status callback of a text sent in a conversation', hide: true } }, async (request, reply) => {
    const outcome = await twilioMessages.sessionStatusReported(inboundRequest(request))
    if (outcome === 'refused') throw new ApiError('forbidden', 'The request is not a verified Twilio request for a text of a campaign.')
    // A status that came before Twilio's answer to the send: asked for again (Twilio retries a 5xx where the callback URL asks it to).
    return reply.code(outcome === 'again' ? 503 : 204).send()
  })

  app.post('/providers/twilio/messages/:interaction_id/status', { schema: schema('Twilio text status callback') }, async (request, reply) => {
    const { interaction_id: interactionId } = request.params as { interaction_id: string }
    if (!(await twilioMessages.statusReported(interactionId, inboundRequest(request)))) throw new ApiError('forbidden', 'The request is not a verified Twilio request for this text.')
    return reply.code(204).send()
  })
}
